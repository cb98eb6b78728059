/*
 * ini.c: the INI reader (see ini.h).
 *
 * Lines are read byte by byte into a fixed buffer, so a file of any size, or one that is not
 * text at all, is read safely: an overlong line, a NUL byte or invalid UTF-8 stops the reader
 * with an error at that line instead of being truncated or misread. The reader keeps no
 * state between calls and allocates nothing.
 */
#include "train/ini.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "base/utf8.h"

typedef enum {
    LINE_READ,        /* a line is in the buffer */
    LINE_END_OF_FILE, /* nothing left */
    LINE_TOO_LONG,    /* more than INI_MAX_LINE bytes before the line end */
    LINE_HAS_NUL,     /* a NUL byte: binary data, which would silently cut strings short */
    LINE_READ_FAILED, /* the stream reported an error (errno says which) */
} LineResult;

/* Reads one line without its "\n" or "\r\n" into buf (INI_MAX_LINE + 2 bytes: the content, a
 * possible '\r' that is only known to be part of the line end once "\n" arrives, and the
 * terminating NUL). The length is stored in *length. */
static LineResult read_line(FILE *in, char *buf, size_t *length) {
    size_t n = 0;
    int c;
    while ((c = getc(in)) != EOF && c != '\n') {
        if (c == '\0') return LINE_HAS_NUL;
        if (n == INI_MAX_LINE + 1) return LINE_TOO_LONG;
        buf[n++] = (char)c;
    }
    if (c == EOF && ferror(in)) return LINE_READ_FAILED;
    if (c == EOF && n == 0) return LINE_END_OF_FILE;
    if (n > 0 && buf[n - 1] == '\r') n--;
    if (n > INI_MAX_LINE) return LINE_TOO_LONG;
    buf[n] = '\0';
    *length = n;
    return LINE_READ;
}

/* Removes leading and trailing whitespace in place; returns the first kept character. */
static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1])) end--;
    *end = '\0';
    return s;
}

/* Cuts an inline comment: a '#' preceded by whitespace. A '#' glued to the text before it
 * (as in "a#b") is kept, so values that need one can still have it. */
static void cut_inline_comment(char *s) {
    for (char *p = s; *p; p++) {
        if (*p == '#' && p > s && isspace((unsigned char)p[-1])) {
            *p = '\0';
            return;
        }
    }
}

/* Parses "[name]" (already trimmed, starting with '[') into section. Returns 0, or -1 with err
 * saying what is wrong (without location). */
static int parse_section_header(char *text, char *section, size_t section_size, Error *err) {
    char quoted[96];
    cut_inline_comment(text);
    text = trim(text);
    char *close = strchr(text, ']');
    if (!close)
        return error_set(err, "bad section header '%s': no closing ']'",
                         text_for_message(quoted, sizeof quoted, text, 60));
    if (close[1] != '\0')
        return error_set(err, "bad section header '%s': text after ']'",
                         text_for_message(quoted, sizeof quoted, text, 60));
    *close = '\0';
    char *name = trim(text + 1);
    if (*name == '\0') return error_set(err, "bad section header '[]': the name is empty");
    if (strchr(name, '['))
        return error_set(err, "bad section header '[%s]': '[' inside the name",
                         text_for_message(quoted, sizeof quoted, name, 60));
    if (strlen(name) >= section_size) /* cannot happen: a name is shorter than its line */
        return error_set(err, "bad section header: the name is too long");
    memcpy(section, name, strlen(name) + 1);
    return 0;
}

int ini_parse_stream(FILE *in, const char *name, IniHandler handler, void *user, Error *err) {
    char line[INI_MAX_LINE + 2];
    char section[INI_MAX_LINE + 1] = "";
    bool have_section = false;
    for (int line_no = 1;; line_no++) {
        size_t length = 0;
        switch (read_line(in, line, &length)) {
        case LINE_READ:
            break;
        case LINE_END_OF_FILE:
            return 0;
        case LINE_TOO_LONG:
            return error_set(err, "%s:%d: line is longer than %d bytes", name, line_no,
                             INI_MAX_LINE);
        case LINE_HAS_NUL:
            return error_set(err, "%s:%d: NUL byte: this is a binary file, not INI text", name,
                             line_no);
        case LINE_READ_FAILED:
            return error_set(err, "%s:%d: read error: %s", name, line_no, strerror(errno));
        }
        if (line_no == INT_MAX) return error_set(err, "%s: more than %d lines", name, INT_MAX);

        char *text = line;
        /* A byte-order mark, which some Windows editors write, is not part of the first line. */
        if (line_no == 1 && length >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
            text += 3;
            length -= 3;
        }
        if (utf8_find_error(text, length, NULL))
            return error_set(err, "%s:%d: invalid UTF-8: this is a binary file, not INI text", name,
                             line_no);

        text = trim(text);
        if (*text == '\0' || *text == '#' || *text == ';') continue;

        IniEntry entry = {.section = section, .key = NULL, .value = NULL, .line = line_no};
        if (*text == '[') {
            if (parse_section_header(text, section, sizeof section, err) != 0)
                return error_prefix(err, "%s:%d: ", name, line_no);
            have_section = true;
        } else {
            char *equals = strchr(text, '=');
            char quoted[96];
            if (!equals)
                return error_set(err, "%s:%d: '%s' has no '=' (expected key = value)", name,
                                 line_no, text_for_message(quoted, sizeof quoted, text, 60));
            *equals = '\0';
            char *key = trim(text);
            char *value = equals + 1;
            cut_inline_comment(value);
            value = trim(value);
            if (*key == '\0') return error_set(err, "%s:%d: empty key before '='", name, line_no);
            if (!have_section)
                return error_set(err, "%s:%d: key '%s' comes before any [section]", name, line_no,
                                 text_for_message(quoted, sizeof quoted, key, 60));
            entry.key = key;
            entry.value = value;
        }
        if (handler(user, &entry, err) != 0) return error_prefix(err, "%s:%d: ", name, line_no);
    }
}

int ini_parse_file(const char *path, IniHandler handler, void *user, Error *err) {
    FILE *in = fopen(path, "r");
    if (!in) return error_set(err, "%s: cannot open: %s", path, strerror(errno));
    /* fopen succeeds on a directory on POSIX systems; only the first read would fail. */
    struct stat info;
    if (fstat(fileno(in), &info) == 0 && S_ISDIR(info.st_mode)) {
        fclose(in);
        return error_set(err, "%s: cannot read: %s", path, strerror(EISDIR));
    }
    int status = ini_parse_stream(in, path, handler, user, err);
    fclose(in);
    return status;
}

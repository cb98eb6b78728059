/*
 * markup.c: text made safe for JSON and XML, and labels cut to a display width (see
 * markup.h).
 */
#include "nmt/pictures/markup.h"

#include <errno.h>
#include <string.h>

#include "base/utf8.h"

void json_write_string(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        case '\b':
            fputs("\\b", out);
            break;
        case '\f':
            fputs("\\f", out);
            break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

void json_write_string_list(FILE *out, char *const *items, int n, const char *separator) {
    fputc('[', out);
    for (int i = 0; i < n; i++) {
        if (i) fputs(separator, out);
        json_write_string(out, items[i]);
    }
    fputc(']', out);
}

void xml_write_text(FILE *out, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        case '\'':
            fputs("&apos;", out);
            break;
        default:
            if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r') {
                fputs("\uFFFD", out);
            } else if (p[0] == 0xEF && p[1] == 0xBF && (p[2] == 0xBE || p[2] == 0xBF)) {
                fputs("\uFFFD", out); /* U+FFFE and U+FFFF are valid UTF-8 but not XML */
                p += 2;
            } else {
                fputc(*p, out);
            }
        }
    }
}

/* Columns a code point takes in a terminal: 2 for the wide East Asian blocks, else 1. */
static int cell_width(uint32_t cp) {
    return (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
                   (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
                   (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
                   (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x20000 && cp <= 0x3FFFD)
               ? 2
               : 1;
}

/* Decodes the code point at s and returns its length; a byte that is not UTF-8 (tokens are
 * checked when read, but a run's label is a path) is U+FFFD of length 1. */
static size_t next_code_point(const unsigned char *s, uint32_t *cp) {
    size_t len = utf8_decode(s, strlen((const char *)s), cp, NULL);
    if (len == 0) *cp = 0xFFFD, len = 1;
    return len;
}

int label_fit(char *buf, size_t size, const char *s, int max_width) {
    int width = 0, total = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        uint32_t cp;
        p += next_code_point(p, &cp);
        total += cell_width(cp);
    }
    int budget = total <= max_width ? max_width : max_width - 1; /* room for the ellipsis */
    size_t used = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        uint32_t cp;
        size_t len = next_code_point(p, &cp);
        /* a byte that is not UTF-8 (a label may be a path, which can hold any byte) is shown
         * as U+FFFD, so that the label is always valid UTF-8, as XML must be */
        const char *shown = len == 1 && cp == 0xFFFD ? "\uFFFD" : (const char *)p;
        size_t shown_len = shown == (const char *)p ? len : 3;
        if (width + cell_width(cp) > budget || used + shown_len + 4 > size) break;
        memcpy(buf + used, shown, shown_len);
        used += shown_len, p += len, width += cell_width(cp);
    }
    if (total > width && used + 4 <= size) {
        memcpy(buf + used, "\u2026", 3);
        used += 3, width++;
    }
    buf[used] = '\0';
    return width;
}

int stream_status(FILE *out, Error *err) {
    if (ferror(out)) return error_set(err, "cannot write the output: %s", strerror(errno));
    return 0;
}

/*
 * usage.c: command-line mistakes, in one form for every program (see usage.h).
 */
#include "base/usage.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/files.h"
#include "base/utf8.h"

int usage_error(const char *program, const char *format, ...) {
    char problem[512];
    va_list ap;
    va_start(ap, format);
    vsnprintf(problem, sizeof problem, format, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s (see %s --help)\n", program, problem, program);
    return USAGE_ERROR_STATUS;
}

enum { NAME_MAX_LENGTH = 64 };

/* The edit distance of a[0..n) and b[0..m) (both at most NAME_MAX_LENGTH), swaps of
 * neighbours counting as one edit (the optimal string alignment distance). */
static size_t edits(const char *a, size_t n, const char *b, size_t m) {
    size_t d[NAME_MAX_LENGTH + 1][NAME_MAX_LENGTH + 1];
    for (size_t i = 0; i <= n; i++) d[i][0] = i;
    for (size_t j = 0; j <= m; j++) d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

/* The edits from typed[0..length) to text[0..m), or SIZE_MAX when more than a slip of that
 * length allows (1 edit up to 4 bytes, 2 up to 8, 3 beyond). */
static size_t slip(const char *typed, size_t length, const char *text, size_t m) {
    if (m > NAME_MAX_LENGTH) return SIZE_MAX;
    size_t allowed = m <= 4 ? 1 : m <= 8 ? 2 : 3, e = edits(typed, length, text, m);
    return e <= allowed ? e : SIZE_MAX;
}

/* The fewest edits from typed to the whole name or to one of its words between underscores
 * ("hiden" is one edit from enc_hidden's "hidden"); SIZE_MAX when none is a slip. */
static size_t slip_distance(const char *typed, size_t length, const char *name) {
    size_t best = slip(typed, length, name, strlen(name));
    if (!strchr(name, '_')) return best;
    for (const char *word = name;; word++) {
        size_t m = strcspn(word, "_"), e = slip(typed, length, word, m);
        if (e < best) best = e;
        word += m;
        if (!*word) break;
    }
    return best;
}

size_t near_names(const char *typed, size_t length, const char *const *names, size_t count,
                  const char *before, const char *after, char *buf, size_t size) {
    enum { LISTED = 3 };
    const char *near[LISTED];
    size_t found = 0, fewest = SIZE_MAX;
    buf[0] = '\0';
    for (size_t k = 0; k < count && length <= NAME_MAX_LENGTH; k++) {
        if (strlen(names[k]) == length && memcmp(names[k], typed, length) == 0)
            return 0; /* an exact match is no slip */
        size_t e = slip_distance(typed, length, names[k]);
        if (e == SIZE_MAX || e > fewest) continue;
        if (e < fewest) fewest = e, found = 0;
        if (found < LISTED) near[found++] = names[k];
    }
    for (size_t i = 0, used = 0; i < found && used < size; i++) {
        const char *joint = i == 0 ? "" : i + 1 == found ? " or " : ", ";
        int n = snprintf(buf + used, size - used, "%s%s%s%s", joint, before, near[i], after);
        if (n < 0) break;
        used += (size_t)n;
    }
    return found;
}

int usage_getopt_error(const char *program, char *const *argv, int returned,
                       const struct option *longs) {
    /* getopt has moved past what it complained about, except for an unknown letter inside a
     * cluster such as -xv, which optopt names */
    const char *typed = optind > 0 ? argv[optind - 1] : "";
    char quoted[96], option[128];
    text_for_message(quoted, sizeof quoted, typed, 60);
    bool is_long = strncmp(typed, "--", 2) == 0;
    if (is_long) { /* "--name=value": the name is what was wrong */
        size_t name_length = strcspn(quoted, "=");
        snprintf(option, sizeof option, "%.*s", (int)name_length, quoted);
    } else if (optopt > 0 && optopt < 128) {
        snprintf(option, sizeof option, "-%c", optopt);
    } else {
        snprintf(option, sizeof option, "%s", quoted);
    }
    if (returned == ':') return usage_error(program, "option '%s' needs a value", option);
    if (is_long && optopt != 0 && strchr(typed, '='))
        return usage_error(program, "option '%s' takes no value", option);
    const char *names[64];
    size_t count = 0;
    for (; longs && longs[count].name && count < 64; count++) names[count] = longs[count].name;
    char near[256];
    if (is_long &&
        near_names(option + 2, strlen(option + 2), names, count, "'--", "'", near, sizeof near))
        return usage_error(program, "unknown option '%s'; did you mean %s?", option, near);
    return usage_error(program, "unknown option '%s'", option);
}

int usage_print(const char *program, void (*usage)(FILE *)) {
    Error err;
    usage(stdout);
    if (flush_standard_output(&err) == 0) return 0;
    fprintf(stderr, "%s: %s\n", program, err.msg);
    return 1;
}

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

const char *nearest_name(const char *typed, size_t length, const char *const *names, size_t count) {
    const char *nearest = NULL;
    size_t fewest = SIZE_MAX;
    for (size_t k = 0; k < count && length <= NAME_MAX_LENGTH; k++) {
        size_t m = strlen(names[k]);
        if (m > NAME_MAX_LENGTH) continue;
        size_t allowed = m <= 4 ? 1 : m <= 8 ? 2 : 3, e = edits(typed, length, names[k], m);
        if (e <= allowed && e < fewest) nearest = names[k], fewest = e;
    }
    return fewest == 0 ? NULL : nearest; /* an exact match is no slip */
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
    const char *near = is_long ? nearest_name(option + 2, strlen(option + 2), names, count) : NULL;
    if (near)
        return usage_error(program, "unknown option '%s'; did you mean '--%s'?", option, near);
    return usage_error(program, "unknown option '%s'", option);
}

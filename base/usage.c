/*
 * usage.c: command-line mistakes, in one form for every program (see usage.h).
 */
#include "base/usage.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
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

int usage_getopt_error(const char *program, char *const *argv, int returned) {
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
    return usage_error(program, "unknown option '%s'", option);
}

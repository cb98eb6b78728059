/*
 * cli.c: the command-line tools' options, parsed strictly by a table (see cli.h).
 */
#include "tools/cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/usage.h"
#include "base/utf8.h"

long read_sentence_line(FILE *in, bool first, char **line, size_t *cap, Error *refusal) {
    refusal->msg[0] = '\0';
    long len = read_line(in, line, cap);
    if (first && len >= 3 && memcmp(*line, "\xEF\xBB\xBF", 3) == 0) {
        memmove(*line, *line + 3, (size_t)len - 2); /* its NUL too */
        len -= 3;
    }
    if (len == -3) { /* refused like a line of too many tokens: the next lines go on */
        error_set(refusal, "%s", LINE_TOO_LONG);
        (*line)[0] = '\0';
        return skip_line(in) ? -2 : 0;
    }
    const char *nul = len > 0 ? memchr(*line, '\0', (size_t)len) : NULL;
    const char *cr = len > 0 ? memchr(*line, '\r', (size_t)len) : NULL;
    if (nul) {
        error_set(refusal, "control character U+0000 (NUL) at byte %ld", (long)(nul - *line));
        (*line)[0] = '\0';
    } else if (cr) { /* a space to the tokenizer: the sentences would be translated as one */
        error_set(refusal,
                  "carriage return at byte %ld inside the line (are its lines ended by \\r "
                  "alone? end them with \\n)",
                  (long)(cr - *line));
        (*line)[0] = '\0';
    }
    return len;
}

int parse_int_option(const char *option, const char *text, long lo, long hi, long *out,
                     Error *err) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    char quoted[96];
    /* strtol skips leading spaces: ' 3' would pass where '3 ' does not */
    if (errno || end == text || *end || isspace((unsigned char)text[0]) || v < lo || v > hi)
        return error_set(err, "invalid %s '%s' (expected a whole number from %ld to %ld)", option,
                         text_for_message(quoted, sizeof quoted, text, 60), lo, hi);
    *out = v;
    return 0;
}

int parse_double_option(const char *option, const char *text, double lo, double hi, double *out,
                        Error *err) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    char quoted[96];
    if (errno || end == text || *end || isspace((unsigned char)text[0]) || !(v >= lo && v <= hi))
        return error_set(err, "invalid %s '%s' (expected a number from %g to %g)", option,
                         text_for_message(quoted, sizeof quoted, text, 60), lo, hi);
    *out = v;
    return 0;
}

/* The option's argument into its value; an error names the option. */
static int take_value(const CliOption *o, const char *arg, Error *err) {
    char option[64];
    snprintf(option, sizeof option, "--%s", o->name);
    switch (o->kind) {
    case CLI_FLAG:
        *(bool *)o->value = true;
        return 0;
    case CLI_TEXT:
        *(const char **)o->value = arg;
        return 0;
    case CLI_INT:
        return parse_int_option(option, arg, (long)o->lo, (long)o->hi, (long *)o->value, err);
    case CLI_REAL:
        return parse_double_option(option, arg, o->lo, o->hi, (double *)o->value, err);
    }
    return error_set(err, "%s: unknown option kind", option);
}

int cli_parse(const char *program, int argc, char **argv, const CliOption *table,
              void (*usage)(FILE *)) {
    enum { MAX_OPTIONS = 32, HELP = 256 };
    struct option longs[MAX_OPTIONS + 2] = {{0}};
    /* the leading ':' makes getopt report a missing value as ':' and print nothing itself */
    char shorts[3 * MAX_OPTIONS + 3] = ":h";
    size_t n = 0, used = 2;
    for (; table[n].name && n < MAX_OPTIONS; n++) {
        bool arg = table[n].kind != CLI_FLAG;
        longs[n] = (struct option){table[n].name, arg ? required_argument : no_argument, 0,
                                   table[n].short_name ? table[n].short_name : 512 + (int)n};
        if (table[n].short_name) {
            shorts[used++] = table[n].short_name;
            if (arg) shorts[used++] = ':';
        }
    }
    longs[n] = (struct option){"help", no_argument, 0, HELP};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        if (c == 'h' || c == HELP) return usage_print(program, usage);
        if (c == '?' || c == ':') return usage_getopt_error(program, argv, c, longs);
        size_t k = 0;
        while (k < n && longs[k].val != c) k++;
        Error err;
        if (k == n) return usage_error(program, "unexpected option '%c'", c);
        if (take_value(&table[k], optarg, &err)) return usage_error(program, "%s", err.msg);
    }
    return CLI_GO_ON;
}

/*
 * cli.h: what the command-line tools share: their options described by a table and parsed
 * strictly. Finding and loading the model is load_model.h's, so that a tool without one
 * (bin/plot, bin/attend) links no translator.
 */
#ifndef NMT_CLI_H
#define NMT_CLI_H

#include <stdbool.h>
#include <stdio.h>
#include <unistd.h> /* optind */

#include "base/files.h"
#include "base/usage.h"

typedef enum { CLI_FLAG, CLI_TEXT, CLI_INT, CLI_REAL } CliKind;

/* One option of a program: --name (and -c when short_name is c). `value` points to a bool
 * (FLAG, set to true), a const char * (TEXT: the argument; NULL when the option is absent), a
 * long (INT) or a double (REAL), whose argument must lie in [lo, hi]. A table ends with an
 * entry whose name is NULL. */
typedef struct {
    const char *name;
    char short_name;
    CliKind kind;
    void *value;
    double lo, hi;
} CliOption;

/* Table entries, by kind; OPT_END closes a table. */
#define OPT_FLAG(name, short_name, var)                                                            \
    { name, short_name, CLI_FLAG, var, 0, 0 }
#define OPT_TEXT(name, short_name, var)                                                            \
    { name, short_name, CLI_TEXT, var, 0, 0 }
#define OPT_INT(name, var, lo, hi)                                                                 \
    { name, 0, CLI_INT, var, lo, hi }
#define OPT_REAL(name, var, lo, hi)                                                                \
    { name, 0, CLI_REAL, var, lo, hi }
#define OPT_END                                                                                    \
    { 0, 0, CLI_FLAG, 0, 0, 0 }

enum { CLI_GO_ON = -1 };

/* Parses argv's options by the table (at most 32 entries); -h and --help print usage to
 * stdout. Returns CLI_GO_ON with optind at the first operand, or the status the program
 * exits with: 0 after --help, 2 after a usage error (base/usage.h's one line on stderr,
 * naming the option and value, then "(see PROGRAM --help)"). */
int cli_parse(const char *program, int argc, char **argv, const CliOption *table,
              void (*usage)(FILE *));

/* Reads one line of sentences from `in` (as read_line does, with its return values); of the
 * first line of the stream, a byte-order mark is dropped, as corpora drop it (an editor's
 * mark, not text: glued to the first word it became an unknown token). A C string ends at a
 * NUL byte, so a line holding one would reach the translator cut short: such a line is
 * emptied and *refusal says why (the one-line error a control character gets); so is a line
 * longer than LINE_MOST_BYTES, whose rest is skipped; for any other line refusal->msg is "". */
long read_sentence_line(FILE *in, bool first, char **line, size_t *cap, Error *refusal);

/* Parses a whole decimal integer in [lo, hi]; errors name the option and value. */
int parse_int_option(const char *option, const char *text, long lo, long hi, long *out, Error *err);
int parse_double_option(const char *option, const char *text, double lo, double hi, double *out,
                        Error *err);

#endif

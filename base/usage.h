/*
 * usage.h: the one form every program gives a mistake on its command line:
 *
 *     PROGRAM: PROBLEM (see PROGRAM --help)
 *
 * a single line on stderr and exit status 2, so the error stays on screen instead of
 * scrolling away under the whole usage text. PROGRAM is the program's short name ("train",
 * "translate"), the same word that starts every other message of the program.
 */
#ifndef NMT_BASE_USAGE_H
#define NMT_BASE_USAGE_H

enum { USAGE_ERROR_STATUS = 2 };

/* Prints "PROGRAM: PROBLEM (see PROGRAM --help)" to stderr; returns USAGE_ERROR_STATUS. */
int usage_error(const char *program, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* After getopt_long returned '?' or ':' (called with opterr = 0 and an option string that
 * starts with ':'): says which option was wrong in usage_error's form, quoting it as typed;
 * returns USAGE_ERROR_STATUS. */
int usage_getopt_error(const char *program, char *const *argv, int returned);

#endif

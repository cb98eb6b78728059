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

#include <stddef.h>
#include <stdio.h>

enum { USAGE_ERROR_STATUS = 2 };

/* Prints "PROGRAM: PROBLEM (see PROGRAM --help)" to stderr; returns USAGE_ERROR_STATUS. */
int usage_error(const char *program, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* Prints a program's --help text to stdout; returns the exit status: 0, or 1 after one line
 * on stderr when stdout cannot take it (a full disk, a closed stdout). */
int usage_print(const char *program, void (*usage)(FILE *));

struct option;

/* After getopt_long returned '?' or ':' (called with opterr = 0 and an option string that
 * starts with ':'): says which option was wrong in usage_error's form, quoting it as typed
 * and naming the long option of `longs` (getopt_long's table) it is a slip of, if any;
 * returns USAGE_ERROR_STATUS. */
int usage_getopt_error(const char *program, char *const *argv, int returned,
                       const struct option *longs);

/* Of names[0..count), those typed[0..length) is most likely a slip of, written into buf as
 * "a", "a or b" or "a, b or c" (each between `before` and `after`, e.g. "'--" and "'"); returns
 * how many (0, with buf "", when none is near enough or typed is a name). Near: the fewest edits
 * (a byte inserted, deleted or replaced, or two neighbours swapped) to the whole name or to one
 * of its words between underscores, at most 1 for up to 4 bytes, 2 up to 8 and 3 beyond. Every
 * "did you mean" (options, config sections and keys) asks this. */
size_t near_names(const char *typed, size_t length, const char *const *names, size_t count,
                  const char *before, const char *after, char *buf, size_t size);

#endif

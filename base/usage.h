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

enum { USAGE_ERROR_STATUS = 2 };

/* Prints "PROGRAM: PROBLEM (see PROGRAM --help)" to stderr; returns USAGE_ERROR_STATUS. */
int usage_error(const char *program, const char *format, ...) __attribute__((format(printf, 2, 3)));

struct option;

/* After getopt_long returned '?' or ':' (called with opterr = 0 and an option string that
 * starts with ':'): says which option was wrong in usage_error's form, quoting it as typed
 * and naming the long option of `longs` (getopt_long's table) it is a slip of, if any;
 * returns USAGE_ERROR_STATUS. */
int usage_getopt_error(const char *program, char *const *argv, int returned,
                       const struct option *longs);

/* Of names[0..count), the one typed[0..length) is most likely a slip of, or NULL when none is
 * near enough: the fewest edits (a byte inserted, deleted or replaced, or two neighbours
 * swapped), at most 1 for names of up to 4 bytes, 2 up to 8 and 3 beyond. Every "did you
 * mean" (options, config sections and keys) asks this. */
const char *nearest_name(const char *typed, size_t length, const char *const *names, size_t count);

#endif

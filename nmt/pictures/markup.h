/*
 * markup.h: what the writers of alignments (text, JSON, SVG, HTML) share: escaping text for
 * JSON and XML, cutting labels to a display width, and the stream check at the end.
 */
#ifndef NMT_MARKUP_H
#define NMT_MARKUP_H

#include <stdio.h>

#include "base/base.h"

/* A JSON string: quotes, backslashes and control characters escaped, UTF-8 as it is. */
void json_write_string(FILE *out, const char *s);
/* A JSON array of n strings written as json_write_string does, `separator` between them. */
void json_write_string_list(FILE *out, char *const *items, int n, const char *separator);

/* XML text: markup characters escaped; the C0 controls and the noncharacters U+FFFE and
 * U+FFFF, which XML 1.0 forbids, become U+FFFD. */
void xml_write_text(FILE *out, const char *s);

/* Room for a label cut by label_fit. */
enum { LABEL_BYTES = 128 };

/* Copies the longest prefix of s that fits max_width terminal columns (CJK takes two) into
 * buf, ending it with "…" when s was cut; a byte that is not UTF-8 becomes U+FFFD, so the
 * label is valid UTF-8 whatever s holds. Returns the columns used. */
int label_fit(char *buf, size_t size, const char *s, int max_width);

/* The error of a stream that failed somewhere during a writer's prints. */
int stream_status(FILE *out, Error *err);

/* Digits that make a printed real read back as the same value. */
enum { REAL_DIGITS = sizeof(real) == 8 ? 17 : 9 };

#endif

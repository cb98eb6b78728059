/*
 * corpus.h: reads a parallel corpus, one sentence pair per line: source<TAB>target, any
 * further tab-separated columns ignored (the Tatoeba/manythings.org format).
 *
 * Accepts LF or CRLF line ends, a UTF-8 byte-order mark at the start and lines of any length;
 * skips empty lines. Everything else unexpected is an error naming the input and line.
 * Deliberately not here: tokenization (see tokenizer.h), filtering or deduplication of pairs.
 */
#ifndef NMT_DATA_CORPUS_H
#define NMT_DATA_CORPUS_H

#include <stddef.h>
#include <stdio.h>

#include "base/base.h"

/* Sentence pairs exactly as written (untokenized UTF-8 without the line end). */
typedef struct {
    size_t count;       /* number of pairs */
    char **src;         /* [count] source sentences, NUL-terminated */
    char **tgt;         /* [count] target sentences, NUL-terminated */
    size_t *line;       /* [count] 1-based line number each pair came from */
    size_t empty_lines; /* empty lines skipped */
    size_t capacity;    /* allocated length of src, tgt and line (internal) */
} Corpus;

/* Reads the file at path into *out (overwritten). Returns 0, or -1 with *out empty and err
 * set to one line naming the file: "cannot open x.tsv: No such file or directory",
 * "x.tsv:12: no tab between source and target", "x.tsv:3: invalid UTF-8 at column 7: ...".
 * Errors: unreadable file or directory, a line without a tab, an empty (or blank) source or
 * target, invalid UTF-8, a NUL byte or another control character (tab and the other
 * whitespace controls excepted: see utf8_find_control), and an input without any pair. */
int corpus_read_file(const char *path, Corpus *out, Error *err);

/* The same from an open stream (read to its end, not closed); name is used in messages. */
int corpus_read_stream(FILE *in, const char *name, Corpus *out, Error *err);

/* The same from text[0..len) in memory (it need not be NUL-terminated). */
int corpus_read_string(const char *text, size_t len, const char *name, Corpus *out, Error *err);

/* Frees all pairs, leaving an empty corpus; accepts an empty or half-built one. */
void corpus_free(Corpus *corpus);

#endif

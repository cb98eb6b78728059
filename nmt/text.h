/*
 * text.h: between text and a model's ids: reading and tokenizing a corpus, encoding it with
 * the model's vocabularies, and turning one sentence into source ids or target ids back into
 * text.
 */
#ifndef NMT_TEXT_H
#define NMT_TEXT_H

#include "data/dataset.h"
#include "nmt/checkpoint.h"

/* The most tokens a sentence (either side, </s> not counted) may have when it is translated,
 * aligned or scored: the memory of a search or a forced decoding grows with the lengths. */
enum { NMT_MAX_TOKENS = 250 };

/* Reads a TSV corpus and tokenizes both sides; errors name the file and line. */
int corpus_load(const char *path, bool lowercase, Corpus *corpus, TokenizedCorpus *tokens,
                Error *err);

/* Encodes a dataset of tc with the model's vocabularies. */
int nmt_dataset(Dataset *ds, const NmtModel *nm, const TokenizedCorpus *tc, const Corpus *corpus,
                int max_len, Error *err);

/* The source ids of one sentence, ending in </s>: *ids is malloc'd, *n its length (>= 1),
 * *unknown the number of <unk> tokens. Refuses invalid UTF-8 and control characters (see
 * utf8_find_control), naming the byte offset. */
int encode_source(const NmtModel *nm, const char *text, int **ids, int *n, int *unknown,
                  Error *err);

/* Joins target ids (without <s> / </s>) into text; the returned string is malloc'd. */
char *decode_target(const NmtModel *nm, const int *ids, int n, Error *err);

#endif

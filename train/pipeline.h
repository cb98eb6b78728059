/*
 * pipeline.h: the steps every program shares between text and the model: reading and
 * tokenizing a corpus, building a fresh model (vocabularies and sizes) from a config, and
 * turning one sentence into source ids or target ids back into text.
 */
#ifndef NMT_PIPELINE_H
#define NMT_PIPELINE_H

#include "data/dataset.h"
#include "train/checkpoint.h"
#include "train/config.h"

/* Reads a TSV corpus and tokenizes both sides; errors name the file and line. */
int corpus_load(const char *path, bool lowercase, Corpus *corpus, TokenizedCorpus *tokens,
                Error *err);

/* A new model for cfg: vocabularies built from the tokenized training corpus (sizes and
 * min_count from [data]), sizes from [model], parameters initialised with seed. Sizes whose
 * parameters and gradients would not fit in memory are refused before anything is allocated
 * (see memory_check). */
int nmt_model_from_config(NmtModel *nm, const Config *cfg, const TokenizedCorpus *train,
                          uint64_t seed, Error *err);

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

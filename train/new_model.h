/*
 * new_model.h: a fresh model for a training config: its vocabularies, sizes and initial
 * parameters.
 */
#ifndef NMT_TRAIN_NEW_MODEL_H
#define NMT_TRAIN_NEW_MODEL_H

#include "nmt/text.h"
#include "train/config.h"

/* A new model for cfg: with [data] subwords = bpe, BPE merges learned per side from the
 * tokenized training corpus (lossless: from its sentences as written, data/lossless.h);
 * vocabularies built from its tokens, or their pieces (sizes and
 * min_count from [data]), sizes from [model], parameters initialised with seed. Sizes whose
 * parameters and gradients would not fit in memory are refused before anything is allocated
 * (see memory_check). */
int nmt_model_from_config(NmtModel *nm, const Config *cfg, const TokenizedCorpus *train,
                          uint64_t seed, Error *err);

#endif

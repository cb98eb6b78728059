/*
 * lengths.h: sentence pairs of realistic lengths for `make bench`: a Dataset of random token
 * ids whose source and target lengths follow the shared gettext en-de corpus (a histogram kept
 * here), or another corpus read at run time.
 *
 * Only lengths matter to the speed of a training step, so the ids are random; nothing of any
 * corpus's text is kept.
 */
#ifndef NMT_BENCH_LENGTHS_H
#define NMT_BENCH_LENGTHS_H

#include <stdint.h>

#include "data/dataset.h"
#include "model/seq2seq.h"

/* n pairs with random ids in the vocabularies of dims. Lengths are drawn with seed from the
 * built-in histogram, or, when corpus is not NULL, from the pairs of that TSV file (tokenized
 * as training would, lowercased, pairs over 50 tokens a side left out, as max_len does). */
int lengths_dataset(Dataset *ds, size_t n, const ModelDims *dims, const char *corpus, uint64_t seed,
                    Error *err);

#endif

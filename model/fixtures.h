/*
 * fixtures.h: made-up inputs and parameters for what checks the model: random padded batches
 * and spread layer-norm gains, shared by bin/gradcheck, the tests and the benchmark. Nothing
 * here serves training or translation.
 */
#ifndef NMT_FIXTURES_H
#define NMT_FIXTURES_H

#include <stdint.h>

#include "model/seq2seq.h"

/* A random padded batch of B sentences with lengths spread over 1..S and 1..T (the first
 * sentence is always full length). Owns its arrays. */
typedef struct {
    Batch batch;
    int *ids; /* one block behind the batch's arrays */
} RandomBatch;

/* Spreads the layer-normalised GRUs' gains (params_init sets them to 1) over U(0.5, 1.5), from
 * its own stream of the seed: a check of gains that are all 1 could not see a gain applied to
 * the wrong rows or part. Nothing to do without layer_norm. */
void params_spread_gains(real *params, const ParamTable *table, uint64_t seed);

int random_batch_make(RandomBatch *rb, const ModelDims *dims, int B, int S, int T, uint64_t seed,
                      Error *err);
void random_batch_free(RandomBatch *rb);

#endif

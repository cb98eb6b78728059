/*
 * fixtures.c: random batches and spread gains for the model's checks (see fixtures.h).
 */
#include "model/fixtures.h"

#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

void params_spread_gains(real *params, const ParamTable *table, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed, 11);
    for (int p = 0; p < PARAM_COUNT; p++) {
        const ParamInfo *info = &table->info[p];
        if (!param_is_gain((ParamId)p)) continue;
        for (size_t i = 0; i < info->size; i++)
            params[info->offset + i] = (real)(0.5 + rng_uniform(&rng));
    }
}

int random_batch_make(RandomBatch *rb, const ModelDims *dims, int B, int S, int T, uint64_t seed,
                      Error *err) {
    memset(rb, 0, sizeof *rb);
    rb->ids = checked_calloc(batch_block_ints(B, S, T), sizeof(int), "random batch", err);
    if (!rb->ids) return -1;
    BatchArrays arr = batch_arrays(rb->ids, B, S, T);
    int *src = arr.src, *tgt_in = arr.tgt_in, *tgt_out = arr.tgt_out;
    int *src_len = arr.src_len, *tgt_len = arr.tgt_len;
    Rng rng;
    rng_seed(&rng, seed, 3);
    for (int b = 0; b < B; b++) {
        src_len[b] = b == 0 ? S : 1 + (int)rng_below(&rng, (uint64_t)S);
        tgt_len[b] = b == 0 ? T : 1 + (int)rng_below(&rng, (uint64_t)T);
        for (int i = 0; i < src_len[b]; i++)
            src[b * S + i] =
                i == src_len[b] - 1 ? TOK_EOS : 4 + (int)rng_below(&rng, dims->src_vocab - 4);
        int prev = TOK_BOS;
        for (int t = 0; t < tgt_len[b]; t++) {
            int y = t == tgt_len[b] - 1 ? TOK_EOS : 4 + (int)rng_below(&rng, dims->tgt_vocab - 4);
            tgt_in[b * T + t] = prev;
            tgt_out[b * T + t] = y;
            prev = y;
        }
    }
    rb->batch = arr.batch;
    return 0;
}

void random_batch_free(RandomBatch *rb) {
    free(rb->ids);
    memset(rb, 0, sizeof *rb);
}

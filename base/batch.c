/*
 * batch.c: the layout of a batch's id arrays in one block (see batch.h).
 */
#include "base/batch.h"

size_t batch_block_ints(int B, int S, int T) {
    return (size_t)B * S + 2 * (size_t)B * T + 2 * (size_t)B;
}

BatchArrays batch_arrays(int *block, int B, int S, int T) {
    BatchArrays a;
    a.src = block;
    a.tgt_in = a.src + (size_t)B * S;
    a.tgt_out = a.tgt_in + (size_t)B * T;
    a.src_len = a.tgt_out + (size_t)B * T;
    a.tgt_len = a.src_len + B;
    a.batch = (Batch){.B = B,
                      .S = S,
                      .T = T,
                      .src = a.src,
                      .src_len = a.src_len,
                      .tgt_in = a.tgt_in,
                      .tgt_out = a.tgt_out,
                      .tgt_len = a.tgt_len};
    return a;
}

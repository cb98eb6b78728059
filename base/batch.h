/*
 * batch.h: what the data and the model agree on: the reserved token ids and the padded batch
 * of id arrays that the batcher fills and the model reads.
 */
#ifndef NMT_BASE_BATCH_H
#define NMT_BASE_BATCH_H

#include <stddef.h>

/* Ids 0..3 of every vocabulary; the model reads </s> and <s>, the data writes all four. */
enum { TOK_PAD = 0, TOK_UNK = 1, TOK_BOS = 2, TOK_EOS = 3, TOK_SPECIALS = 4 };

/* A padded batch as the spec lays it out (sentence-major, padded with 0 on the right). */
typedef struct {
    int B, S, T;
    const int *src;     /* [B, S] source ids, each sentence ending in </s> */
    const int *src_len; /* [B] lengths including </s>, 1..S */
    const int *tgt_in;  /* [B, T] <s> y_1 .. y_m */
    const int *tgt_out; /* [B, T] y_1 .. y_m </s> */
    const int *tgt_len; /* [B] m + 1, 1..T */
} Batch;

/* A batch's five arrays carved out of one block of batch_block_ints(B, S, T) ints, writable
 * for whoever fills them; .batch is the read-only view the model takes. */
typedef struct {
    int *src, *tgt_in, *tgt_out, *src_len, *tgt_len;
    Batch batch;
} BatchArrays;

size_t batch_block_ints(int B, int S, int T);
BatchArrays batch_arrays(int *block, int B, int S, int T);

#endif

/*
 * dataset.h: sentence pairs as token ids, and their padded batches.
 *
 * text -> tokens (tokenizer) -> ids (vocab) -> Dataset -> batches (this file) -> model.
 * A Dataset holds every pair's ids back to back, without <s> or </s>; batches add them as the
 * spec lays out (source + </s>; decoder input <s> + target; decoder output target + </s>).
 * Batches group pairs of similar length (buckets) in an order that depends only on the seed
 * and the epoch, so a run can be resumed at any batch and reproduces the same order.
 */
#ifndef NMT_DATA_DATASET_H
#define NMT_DATA_DATASET_H

#include <stdbool.h>
#include <stdint.h>

#include "data/corpus.h"
#include "data/tokenizer.h"
#include "data/vocab.h"
#include "base/batch.h"

/* Both sides of a corpus, tokenized. */
typedef struct {
    size_t count;
    TokenList *src; /* [count] */
    TokenList *tgt; /* [count] */
    /* the sentences as written, borrowed from the corpus tokenized (NULL when made otherwise):
     * a model whose units are pieces of the text itself (data/lossless.h) starts from them */
    const char *const *src_text, *const *tgt_text; /* [count] */
} TokenizedCorpus;

/* Tokenizes every pair (and keeps pointers to the corpus's sentences: the corpus must outlive
 * *out); errors name the corpus and line. */
int tokenized_corpus_make(TokenizedCorpus *out, const Corpus *corpus, const char *name,
                          bool lowercase, Error *err);
void tokenized_corpus_free(TokenizedCorpus *tc);

typedef struct {
    size_t count;         /* pairs kept */
    size_t skipped;       /* pairs over max_len, left out */
    int max_src, max_tgt; /* longest sides kept, in tokens (without </s>) */
    int *ids;             /* every kept pair's source then target ids, back to back */
    size_t *src_off;      /* [count] start of each source in ids */
    int *src_n;           /* [count] source lengths */
    size_t *tgt_off;      /* [count] */
    int *tgt_n;           /* [count] */
    size_t *line;         /* [count] line of each pair in its file */
} Dataset;

/* Encodes pairs with the vocabularies; pairs with a side longer than max_len tokens (0: no
 * limit) or an empty side are skipped and counted. */
int dataset_make(Dataset *ds, const TokenizedCorpus *tc, const Corpus *corpus, const Vocab *src,
                 const Vocab *tgt, int max_len, Error *err);
void dataset_free(Dataset *ds);

/* Room for one padded batch of up to max_B pairs with sides up to max_len tokens. */
typedef struct {
    int max_B, max_S, max_T;
    int *block;
    Batch batch;
} BatchBuffer;

int batch_buffer_init(BatchBuffer *bb, int max_B, int max_src, int max_tgt, Error *err);
void batch_buffer_free(BatchBuffer *bb);
/* Fills bb->batch with the pairs idx[0..n) of ds (n <= max_B); returns the batch. */
const Batch *batch_fill(BatchBuffer *bb, const Dataset *ds, const size_t *idx, int n);

/* Copies the indices from[0..count) to to[0..count) ordered by len[index], longest first
 * (ties in their order; count < 2^32). keys has room for count. */
void sort_longest_first(size_t *to, const size_t *from, size_t count, const int *len,
                        uint64_t *keys);

/* The batches of one epoch: pair indices in batch order, batch i is
 * order[start[i] .. start[i+1]). */
typedef struct {
    size_t *order; /* [ds->count] */
    size_t *start; /* [n_batches + 1] */
    size_t n_batches;
} EpochPlan;

/* Shuffles the pairs with (seed, epoch), sorts windows of 64 batches by length so each batch
 * holds similar lengths, cuts batches of batch_size and shuffles their order. */
int epoch_plan_make(EpochPlan *plan, const Dataset *ds, int batch_size, uint64_t seed,
                    uint64_t epoch, Error *err);
/* The same, but each batch holds about batch_tokens target tokens (with </s>) instead of a
 * fixed number of pairs, as Marian and fairseq batch: within each window (about 64 batches
 * wide), sorted by source length first as with batch_size, pairs join a batch while it stays
 * within the budget, so a batch exceeds it only when one pair alone does. (Marian sorts by
 * target length first; here the decoder and the output layer skip the padding of ended
 * targets, while the encoder computes every source position, so the source side is where
 * padding costs.) The number of pairs per batch varies; the plan is still a function of
 * (seed, epoch) alone. */
int epoch_plan_make_tokens(EpochPlan *plan, const Dataset *ds, int batch_tokens, uint64_t seed,
                           uint64_t epoch, Error *err);
/* The most pairs a batch of epoch_plan_make_tokens can hold in any epoch: as many of the
 * shortest targets as fit in batch_tokens (at least 1). Activations are planned for this
 * rather than for batch_tokens pairs of max_len. */
int batch_tokens_max_pairs(const Dataset *ds, int batch_tokens);
/* The most pairs in one batch of this plan. */
int epoch_plan_max_pairs(const EpochPlan *plan);
/* A 64-bit hash (FNV-1a, never 0) of the plan's batches by their content: each batch's size
 * and its pairs' ids, in order. Plans that feed the model the same batches agree; others
 * differ, but for a chance collision. */
uint64_t epoch_plan_fingerprint(const EpochPlan *plan, const Dataset *ds);
void epoch_plan_free(EpochPlan *plan);

/* Real tokens and all positions (tokens + padding) of the batches seen, per side. */
typedef struct {
    size_t src_tokens, src_positions; /* sum of src_len; sum of B*S */
    size_t tgt_tokens, tgt_positions; /* sum of tgt_len; sum of B*T */
} PaddingCount;

void padding_add(PaddingCount *pc, const Batch *batch);
/* Padded positions / all positions, both sides together; 0 before any batch. */
double padding_share(const PaddingCount *pc);

#endif

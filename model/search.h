/*
 * search.h: translation by beam search over the trained model (greedy search is beam 1).
 *
 * Sentences are decoded together: row n*beam + k holds hypothesis k of sentence n. Each step
 * runs the decoder step and readout for all rows, then keeps, per sentence, the beam best
 * continuations; a hypothesis ends when it emits </s>. The step computes the spec's equations
 * in another order than training does, which changes results only by round-off: the context
 * c_t enters the GRU input and the readout through products only, so W c_t = sum_i alpha_ti
 * (W h_i) is formed from each sentence's source states projected once, and the threads share
 * out every product by its output features, attention by its features and the GRU by its units
 * (decoding is matrix-vector products, bound by how fast the weights stream from cache: each
 * core streams its part, even for one sentence). Finished hypotheses are ranked
 * by log-probability / length^len_norm (length normalisation; 0 ranks by log-probability).
 * Every hypothesis comes back with its alignment matrix (alpha, one row per output token
 * including </s>), the scores e_ti and each chosen token's probability, for inspection.
 * Rows of sentences that are done take no more part in the products (the output layer's only
 * the rows of open hypotheses), in ways that leave every sum as it was.
 * An int8 model (Model.quant) runs every product that meets a weight matrix through the int8
 * kernels (qgemm.h), each thread quantizing the rows its products read.
 * search_init plans the arrays that grow with the model, the batch and the length; a call
 * allocates only its bookkeeping, each thread's part (sized by the call's threads and rows)
 * and the returned results, never inside the step loop.
 */
#ifndef NMT_SEARCH_H
#define NMT_SEARCH_H

#include "model/seq2seq.h"

typedef struct {
    int beam;        /* hypotheses kept per sentence (1 = greedy) */
    int nbest;       /* hypotheses returned per sentence (<= beam) */
    int max_len;     /* most target tokens per hypothesis, </s> included */
    double len_norm; /* length-normalisation exponent */
} SearchOptions;

typedef struct {
    int *tokens; /* [len] target ids, </s> not included */
    int len;
    int complete;   /* 1 when it ended with </s> (then the matrices have len + 1 rows) */
    int rows;       /* rows of the matrices below: len + complete */
    int src_len;    /* columns: source positions, </s> included */
    double logprob; /* sum of log p of its tokens (and </s>) */
    double score;   /* logprob / rows^len_norm */
    real *alpha;    /* [rows, src_len] alignment weights */
    real *energy;   /* [rows, src_len] scores e_ti */
    real *prob;     /* [rows] probability of each chosen token */
} Hypothesis;

typedef struct {
    Hypothesis *hyps; /* [count], best first */
    int count;
} Translation;

void translation_free(Translation *t);

/* The most blocks a search's sums across threads are made of (search.c, block_count). */
enum { SEARCH_ENERGY_BLOCKS = 2, SEARCH_VOCAB_BLOCKS = 12 };

typedef struct {
    int max_sentences, max_src, beam, max_len;
    Acts enc;    /* encoder activations */
    real *block; /* every real array below, 64-byte aligned */
    void *block_alloc;
    int *int_block;
    /* per sentence: the source states projected by the context's columns of W_ih and W_o */
    real *ctx_gi, *ctx_ro;
    /* per row (max_sentences * beam) */
    int *src_len, *y_prev;
    real *u, *s, *s_next, *gi, *gh, *cache, *query;
    /* the blocks of the sums that threads share (search.c): block b of the attention features
     * is [energy_start[b], energy_start[b + 1]), of the words [vocab_start[b], ...) */
    int energy_blocks, vocab_blocks;
    int energy_start[SEARCH_ENERGY_BLOCKS + 1], vocab_start[SEARCH_VOCAB_BLOCKS + 1];
    real *energy_sums; /* [energy_blocks][rows][max_src]: e_ti summed by blocks of the features */
    real *readout, *logits;
    real *vocab_lse; /* [vocab_blocks][rows]: the logits' log-sum-exp by blocks of the words */
    double *score;   /* cumulative log-probability of each row's hypothesis */
    /* history, [max_len][rows] */
    int *sel_parent, *sel_token;
    real *hist_alpha, *hist_energy, *sel_prob;
} Searcher;

int search_init(Searcher *s, const ModelDims *dims, int max_sentences, int max_src, int beam,
                int max_len, Error *err);
void search_free(Searcher *s);

/* Translates n sentences (src[i] has src_len[i] ids ending in </s>, each at most max_src)
 * into out[0..n). */
int search_translate(Searcher *s, const Model *m, const int *const *src, const int *src_len, int n,
                     const SearchOptions *opt, Translation *out, Error *err);

#endif

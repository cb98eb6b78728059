/*
 * reference.h: the plain reference of docs/MODEL-SPEC.md: the whole model, its backward pass,
 * Adam and greedy decoding in plain loops (reference.c says how to read it).
 *
 * It shares with the engine only what describes the data: the parameter table and block
 * (model/params.h) and the padded batch (base/batch.h). Its own arithmetic is in double; the
 * parameters it reads and updates are the engine's `real` block, so checkpoints and dumps are
 * the same files. Activations are sentence-major ([B, S, ...], [B, T, ...]).
 */
#ifndef NMT_REFERENCE_H
#define NMT_REFERENCE_H

#include <stdint.h>

#include "base/base.h"
#include "base/batch.h"
#include "base/rng.h"
#include "model/params.h"

/* Backward's vectors of one sentence and one step (reference.c), laid out once in the block. */
struct RefScratch;

/* Forward options, as the engine's ForwardOptions: inverted dropout on x_i, u_t and o_t (0:
 * off; rng then unused), the label-smoothing eps (0: plain cross-entropy) and word dropout
 * on whole x_i and u_t (0: off). */
typedef struct {
    real dropout;
    real label_smoothing;
    Rng *rng;
    real word_dropout;
} RefOptions;

/* Everything one forward pass keeps for the backward pass, planned once for batches of up to
 * max_B x max_S x max_T. Shapes are [B, ...] with the plan's sizes as strides. */
typedef struct {
    ModelDims dims;
    ParamTable table;
    int max_B, max_S, max_T;
    int B, S, T, n_tokens; /* the last forward pass's batch; N of the loss */
    double dropout, label_smoothing, word_dropout;
    int embedding_drop; /* x_keep and u_keep hold scales (either dropout is on) */
    int *src_ids, *src_len, *tgt_in, *tgt_out, *tgt_len; /* copies of the batch */
    double *x, *x_keep;         /* [B, S, E] source embeddings (after dropout), dropout scales */
    double *enc_cache[2];       /* [B, S, 4H] GRU gates r, z, n and W_hn h + b_hn, per direction
                                   (layer_norm: then the normalisations, [B, S, 10H + 2]) */
    double *enc_state[2];       /* [B, S, H] f_i and g_i */
    double *enc_h;              /* [B, S, K] h_i, zero at padding */
    double *keys;               /* [B, S, F] W_k h_i + b, W_a h_i or W_k h_i (not for dot) */
    double *h_last;             /* [B, K] */
    double *s;                  /* [B, T+1, D] s_0 .. s_T */
    double *dec_cache;          /* [B, T, 4D] (layer_norm: [B, T, 10D + 2]) */
    double *query;              /* [B, T, A] W_q s_{t-1} (additive, scaled_dot) */
    double *alpha, *energy;     /* [B, T, S] alignment weights (0 at padding), scores */
    double *context;            /* [B, T, K] c_t */
    double *u_keep, *o_keep;    /* [B, T, E], [B, T, O] dropout scales */
    double *gru_in;             /* [B, T, E+K] [u_t ; c_t], u_t after dropout */
    double *readout_in;         /* [B, T, D+K+E] [s_t ; c_t ; u_t] */
    double *readout;            /* [B, T, O] o_t before dropout */
    double *logits;             /* [B, T, Vt] z_t (zero at padding) */
    double *lse;                /* [B, T] log sum_j exp z_tj */
    double *grads;              /* [table.total] the gradients of the last backward pass */
    struct RefScratch *scratch; /* backward's per-sentence and per-step vectors, in block */
    double *block;              /* the allocation behind every array above and the scratch */
    int *int_block;
} RefActs;

int ref_acts_init(RefActs *a, const ModelDims *dims, int max_B, int max_S, int max_T, Error *err);
void ref_acts_free(RefActs *a);

/* The mean loss of a batch (checked against the plan and the vocabularies) into *loss. */
int ref_forward(RefActs *a, const real *params, const Batch *batch, const RefOptions *opt,
                double *loss, Error *err);
/* d loss / d parameter of the last forward pass, ADDED to grads [table.total] (also left,
 * alone, in a->grads). */
void ref_backward(RefActs *a, const real *params, real *grads);

/* Adam with bias correction; its moments mirror the parameter block. */
typedef struct {
    size_t n;
    uint64_t t;
    double beta1, beta2, eps;
    double *m, *v; /* [n] */
} RefAdam;

int ref_adam_init(RefAdam *adam, size_t n, double beta1, double beta2, double eps, Error *err);
void ref_adam_free(RefAdam *adam);
/* The L2 norm of the gradients. */
double ref_grad_norm(const real *grads, size_t n);
/* One update with the gradients clipped to a global norm of clip_norm (0: no clipping), at
 * learning rate lr; the gradients are left as they are. Returns -1 when a parameter comes out
 * non-finite. */
int ref_adam_step(RefAdam *adam, real *params, const real *grads, double clip_norm, double lr);

/* Greedy decoding of one source sentence (ids ending in </s>, src_len <= a->max_S): at each
 * step the most probable word, until </s> or max_len words (<= a->max_T); out gets the words
 * without </s>, *out_len their number. */
int ref_greedy(RefActs *a, const real *params, const int *src, int src_len, int max_len, int *out,
               int *out_len, Error *err);

#endif

/*
 * params.h: the model's sizes and its parameter table.
 *
 * The table is the spec's list of parameters (name and shape, in the spec's order). It is the
 * single description that allocation, initialisation, gradients, Adam moments, checkpoints
 * and .npy dumps iterate over: parameters, gradients and each Adam moment are one contiguous
 * block of `total` reals laid out in table order. A unidirectional model has no `enc.bwd.*`
 * tensors: their entries stay in the table with size 0 and are skipped everywhere; so do the
 * att.* tensors that the chosen attention score does not use, and the GRUs' gains without
 * layer_norm.
 *
 * Letters as in the spec: Vs, Vt vocabularies, E embedding, H encoder hidden per direction,
 * K = 2H (bidirectional) or H encoder state, D decoder hidden, A attention, O readout.
 */
#ifndef NMT_PARAMS_H
#define NMT_PARAMS_H

#include <stdint.h>

#include "base/base.h"

/* The attention score e_ti (the spec's "Other attention scores"); the query is s_{t-1}:
 *   additive    v^T tanh(W_q s_{t-1} + W_k h_i + b)    att.w_k, att.w_q, att.b, att.v
 *   dot         s_{t-1} . h_i  (needs D = K)           no parameters
 *   general     s_{t-1} . (W_a h_i)                    att.w_a
 *   scaled_dot  (W_q s_{t-1}) . (W_k h_i) / sqrt(A)    att.w_q, att.w_k
 * The values are stored in checkpoints: never renumber them. */
typedef enum {
    SCORE_ADDITIVE = 0,
    SCORE_DOT = 1,
    SCORE_GENERAL = 2,
    SCORE_SCALED_DOT = 3,
    SCORE_COUNT
} AttentionScore;

/* "additive", "dot", "general", "scaled_dot"; "?" for a value out of range. */
const char *score_name(AttentionScore score);
/* The score of that name; an error listing the names for any other text. */
int score_from_name(const char *name, AttentionScore *score, Error *err);

typedef struct {
    int src_vocab;        /* Vs */
    int tgt_vocab;        /* Vt */
    int emb;              /* E */
    int enc_hidden;       /* H */
    int bidirectional;    /* 1: K = 2H, 0: K = H */
    int dec_hidden;       /* D */
    int att;              /* A */
    int readout;          /* O */
    AttentionScore score; /* e_ti; 0 (additive) when left out of an initialiser */
    int tie_embeddings;   /* 1: the output layer's W_out is tgt_emb (needs O = E), out.w
                             absent (the spec's extension); 0 when left out */
    int layer_norm;       /* 1: every GRU normalises its input and recurrent pre-activations
                             (the spec's extension), with the gains g_ih, g_hh; 0 when left
                             out */
} ModelDims;

/* K, the size of one encoder state h_i. */
int dims_enc_state(const ModelDims *d);
/* F, the size of the two vectors a score compares at each step: W_q s_{t-1} and the key k_i
 * (A for additive and scaled_dot), or s_{t-1} and h_i or W_a h_i (D for dot and general). */
int dims_att_features(const ModelDims *d);
/* Rejects sizes that are non-positive or too large to index (each tensor < 2^31 elements), an
 * unknown score, dot with D != K, tied embeddings with O != E, and flags other than 0 and 1. */
int dims_validate(const ModelDims *d, Error *err);

typedef enum {
    P_SRC_EMB,
    P_TGT_EMB,
    P_ENC_FWD_W_IH,
    P_ENC_FWD_W_HH,
    P_ENC_FWD_B_IH,
    P_ENC_FWD_B_HH,
    P_ENC_FWD_G_IH,
    P_ENC_FWD_G_HH,
    P_ENC_BWD_W_IH,
    P_ENC_BWD_W_HH,
    P_ENC_BWD_B_IH,
    P_ENC_BWD_B_HH,
    P_ENC_BWD_G_IH,
    P_ENC_BWD_G_HH,
    P_DEC_INIT_W,
    P_DEC_INIT_B,
    P_ATT_W_K,
    P_ATT_W_Q,
    P_ATT_B,
    P_ATT_V,
    P_ATT_W_A,
    P_DEC_GRU_W_IH,
    P_DEC_GRU_W_HH,
    P_DEC_GRU_B_IH,
    P_DEC_GRU_B_HH,
    P_DEC_GRU_G_IH,
    P_DEC_GRU_G_HH,
    P_OUT_W_O,
    P_OUT_B_O,
    P_OUT_W,
    P_OUT_B,
    PARAM_COUNT
} ParamId;

typedef struct {
    const char *name; /* the spec's name, e.g. "enc.fwd.w_ih" */
    int ndim;         /* 1 or 2; 0 for a tensor this model does not have */
    int shape[2];     /* [rows, cols] or [n, 1] */
    size_t offset;    /* into the block, in reals */
    size_t size;      /* number of reals (0 when absent) */
} ParamInfo;

typedef struct {
    ParamInfo info[PARAM_COUNT];
    ParamId order[PARAM_COUNT]; /* the ids in the order of their offsets: the spec's order,
                                   which for scaled_dot puts att.w_q before att.w_k */
    size_t total;               /* reals in the whole block */
    int tied;                   /* out.w is absent and W_out is tgt_emb (weights_view) */
    int layer_norm;             /* the GRUs' gains g_ih, g_hh are present */
} ParamTable;

void param_table_build(ParamTable *table, const ModelDims *d);
/* Whether p is one of the layer-normalised GRUs' gains (g_ih, g_hh of any GRU). */
int param_is_gain(ParamId p);

/* A run [begin, end) of the flat parameter block (and of the gradients, which mirror it). */
typedef struct {
    size_t begin, end;
} ParamSpan;

typedef struct {
    real *w_ih; /* [3N, in] */
    real *w_hh; /* [3N, N] */
    real *b_ih; /* [3N] */
    real *b_hh; /* [3N] */
    real *g_ih; /* [3N] the gains of the normalised W_ih x (layer_norm only) */
    real *g_hh; /* [3N] and of the normalised W_hh h */
} GruWeights;

/* Named views into a block laid out by the table: the same struct serves the parameters and
 * their gradients. Absent tensors are NULL. */
typedef struct {
    real *src_emb;               /* [Vs, E] */
    real *tgt_emb;               /* [Vt, E] */
    GruWeights enc_fwd, enc_bwd; /* in = E, N = H */
    real *init_w;                /* [D, K] */
    real *init_b;                /* [D] */
    real *att_w_k;               /* [A, K] (additive, scaled_dot) */
    real *att_w_q;               /* [A, D] (additive, scaled_dot) */
    real *att_b;                 /* [A] (additive) */
    real *att_v;                 /* [A] (additive) */
    real *att_w_a;               /* [D, K] (general only) */
    GruWeights dec_gru;          /* in = E + K, N = D */
    real *out_w_o;               /* [O, D + K + E] */
    real *out_b_o;               /* [O] */
    real *out_w;                 /* [Vt, O]; tgt_emb itself when the table is tied */
    real *out_b;                 /* [Vt] */
} Weights;

void weights_view(Weights *w, const ParamTable *table, real *block);

/* Seeded initialisation, the same as PyTorch's default modules would give the same shapes
 * (so a user can mirror it): embeddings ~ N(0, 1); GRU weights and biases ~ U(-1/sqrt(N),
 * 1/sqrt(N)) with N the GRU's hidden size; every other matrix and its bias ~ U(-1/sqrt(in),
 * 1/sqrt(in)) with `in` the matrix's number of columns (att.b and att.v use those of att.w_k
 * and of a [1, A] matrix); the layer-normalised GRUs' gains are 1 and draw nothing, so every
 * other tensor is drawn as without them. Tensors are drawn in table order (table->order) from one
 * stream, so the same seed gives bit-identical parameters. */
void params_init(real *block, const ParamTable *table, uint64_t seed);

#endif

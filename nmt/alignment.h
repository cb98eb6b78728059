/*
 * alignment.h: the attention (alignment) matrices of translations, for inspection, made from
 * a search result or by force-decoding a given target. words.h merges their tokens into words
 * and scores word links; align_write.h writes them in every format of bin/align.
 *
 * A matrix has one row per output token (</s> included when the output ended) and one column
 * per source token (</s> included); row t holds alpha_ti, which sums to 1 over the columns.
 * Nothing here prints to stderr: failures come back as an Error for the program to report.
 */
#ifndef NMT_ALIGNMENT_H
#define NMT_ALIGNMENT_H

#include <stdbool.h>
#include <stdio.h>

#include "model/search.h"
#include "nmt/formats/checkpoint.h"
#include "nmt/text.h"

/* ---- one sentence's alignment ---- */

typedef struct {
    int rows, cols;       /* output tokens T, source tokens S (both with their </s>) */
    int complete;         /* 1 when the last row is the </s> step */
    real *alpha;          /* [rows, cols] alignment weights alpha_ti */
    real *energy;         /* [rows, cols] scores e_ti */
    real *prob;           /* [rows] probability the model gave each output token */
    char **src_tokens;    /* [cols] source tokens as the model splits them (pieces), then "</s>" */
    char **tgt_tokens;    /* [rows] output tokens (a reference's own spelling for <unk>) */
    char *source;         /* the input sentence as given */
    char *reference;      /* the forced target as given; NULL for a searched translation */
    char *translation;    /* the output tokens joined into text */
    bool lowercase;       /* the model's setting, needed to re-split the source into words */
    bool subwords;        /* the tokens are BPE pieces (the model has subwords) */
    bool lossless;        /* ... of the text as written: a piece with the marker starts a word */
    AttentionScore score; /* how the model scored e_ti */
    int number;           /* the input's number (its line or argument, from 1) for a page of
                             several, which skips refused inputs; 0: its place in the list */
} Alignment;

void alignment_free(Alignment *a);

/* The alignment of a search result h for the sentence source (as the translator encoded it). */
int alignment_from_hypothesis(Alignment *a, const NmtModel *nm, const SourceText *source,
                              const Hypothesis *h, Error *err);

/* The vectors behind each step of a force-decoded sentence, for --explain (one allocation,
 * `block`, behind every array). F is the size of the vectors the score compares: A for
 * additive and scaled_dot, D for dot and general (see dims_att_features). */
typedef struct {
    int rows, cols, D, K, A, F;
    AttentionScore score;
    int int8;        /* 1: the model has 8-bit weights (model/quant.h) */
    real *query;     /* [rows, D] row t-1 is s_{t-1}, the query of step t */
    real *projected; /* [rows, F] what the score takes of the query: W_q s_{t-1} (additive,
                        scaled_dot) or s_{t-1} itself (dot, general) */
    real *keys;      /* [cols, F] W_k h_i + b (additive), h_i (dot), W_a h_i (general),
                        W_k h_i (scaled_dot) */
    real *hidden;    /* [rows, cols, A] tanh(W_q s_{t-1} + W_k h_i + b); additive only */
    real *v;         /* [A] the additive attention's output vector; additive only */
    real *context;   /* [rows, K] row t-1 is c_t = sum_i alpha_ti h_i */
    real *enc_h;     /* [cols, K] the encoder states h_i */
    real *block;
} StepTrace;

void step_trace_free(StepTrace *trace);

/* Force-decoding: the model is run with teacher forcing (model_forward on a batch of one
 * pair), so row t is the attention of step t when the decoder was fed the given target. The
 * activation plan grows to the longest pair seen; a side longer than NMT_MAX_TOKENS tokens
 * is refused (the plan grows with source length times target length). */

typedef struct {
    const NmtModel *nm;
    Acts acts;
    int planned_src, planned_tgt; /* 0 before the first pair */
} ForcedDecoder;

void forced_decoder_init(ForcedDecoder *fd, const NmtModel *nm);
void forced_decoder_free(ForcedDecoder *fd);

/* Aligns source with the target text (tokenized like the training data). trace may be NULL. */
int force_align(ForcedDecoder *fd, const char *source, const char *target, Alignment *out,
                StepTrace *trace, Error *err);

/* The same for target ids (without </s>), e.g. a hypothesis of the search; complete says
 * whether the </s> step belongs to the result. The translation text replaces <unk> as
 * decode_hypothesis does (unless nm->keep_unk or the model has subwords). */
int force_align_ids(ForcedDecoder *fd, const SourceText *source, const int *target, int n,
                    int complete, Alignment *out, StepTrace *trace, Error *err);

#endif

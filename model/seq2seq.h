/*
 * seq2seq.h: the whole model (encoder, decoder initial state, attention, decoder, readout,
 * loss) over a padded batch, forward and backward.
 *
 * Data flows one way: a Batch of token ids comes in, the mean loss and (after backward) the
 * gradients of every parameter come out. The model knows nothing of files, text or options
 * beyond the few numbers in ForwardOptions.
 *
 * Memory: Acts is planned once for the largest batch shape (B, S, T) the caller will use;
 * smaller batches reuse the same memory, and nothing is allocated during forward or backward.
 * Internally the recurrences run time-major (row = position * B + sentence), so each step's
 * rows are contiguous and the input projections of all steps are each one matrix product;
 * attention tensors are sentence-major ([B, S, ...]).
 *
 * The two largest activations are not kept whole by default (ActsPlan):
 *   - the output layer's logits [T*B, Vt] are computed a chunk of rows at a time into one
 *     chunk-sized buffer. A forward pass that a backward pass will follow (the default) also
 *     turns each chunk at once into its gradients (d loss / d o_t and the out.w, out.b
 *     gradients, kept in Acts until model_backward adds them to the model's), so the logits
 *     are computed once per step and never stored. When every row fits one chunk (a batch of
 *     short sentences), its d loss / d z_t stay in the buffer and model_backward forms the
 *     out.w gradient from them, straight into the model's;
 *   - attention's hidden layer tanh(W_q s_{t-1} + k_i) [T, B, S, A], when it is large, is kept
 *     for one step only; the backward pass recomputes it step by step.
 * Tools that read those activations after a forward pass (the gradient reference dump, the
 * alignment trace) plan with logit_rows = ACTS_ALL_ROWS and attention = ACTS_KEEP and run
 * forward_only forward passes.
 */
#ifndef NMT_SEQ2SEQ_H
#define NMT_SEQ2SEQ_H

#include <stdbool.h>

#include "base/base.h"
#include "base/batch.h"
#include "model/gemm.h"
#include "model/params.h"
#include "model/quant.h"
#include "base/rng.h"

typedef struct {
    ModelDims dims;
    ParamTable table;
    real *params;                   /* [table.total], in table order, 64-byte aligned */
    real *grads;                    /* [table.total], mirrors params */
    void *param_block, *grad_block; /* the allocations behind them */
    Weights w;                      /* named views of params */
    Weights g;                      /* named views of grads */
    /* int8 weights (quant.h) for decoding, NULL for a float model. When set, params holds
     * their dequantized values, so every float product computes with the same weights. */
    QuantWeights *quant;
    bool grads_zero; /* every gradient is known to be 0 (see model_zero_grad) */
} Model;

/* Allocates parameters and gradients (zeroed; call params_init to initialise). */
int model_init(Model *m, const ModelDims *dims, Error *err);
void model_free(Model *m);
/* Makes m an int8 model: quantizes its quantized tensors (quant.h) and writes their
 * dequantized values over the float ones. Idempotent on a model that already is. */
int model_quantize(Model *m, Error *err);
/* Makes m an int8 model with the given int8 weights (taken over: freed with m, or at once
 * when this fails), packing them for the decoding kernels and writing their dequantized
 * values over the float ones. */
int model_set_quant(Model *m, QuantWeights *qw, Error *err);

/* Zeroes the gradients, for a backward pass to accumulate into. Nothing to do when they are
 * known to be zero already (grads_zero): after model_init, or after Adam's pass, which zeroes
 * each gradient as it reads it (adam_step; train_step then sets grads_zero) instead of a pass
 * of its own here. model_backward clears grads_zero. */
void model_zero_grad(Model *m);

/* Checks a batch's ids, lengths and padding against the model's vocabularies. */
int batch_validate(const Batch *batch, const ModelDims *dims, Error *err);

typedef struct {
    real dropout;         /* inverted dropout on x_i, u_t and o_t; 0 turns it off */
    real label_smoothing; /* eps of the loss; 0 for the plain cross-entropy */
    Rng *rng;             /* dropout masks; may be NULL when dropout is 0 */
    int forward_only;     /* 1: the loss only (evaluation), no gradient work for a backward
                             pass; 0 (training): the output layer's gradients are formed with
                             its forward pass. model_backward works after either; after a
                             forward_only pass it recomputes the logits first (slower). */
    real word_dropout;    /* whole x_i and u_t zeroed with this probability, the kept ones
                             scaled by 1/(1-p) (spec: word dropout); 0 turns it off */
} ForwardOptions;

/* The memory plan of Acts beyond the batch shape; {0} is the default (ACTS_AUTO). */
enum { ACTS_AUTO = 0, ACTS_KEEP = 1, ACTS_RECOMPUTE = 2, ACTS_ALL_ROWS = 0x7fffffff };
typedef struct {
    int logit_rows; /* rows of the output layer computed at a time, the height of
                       Acts.logits: ACTS_AUTO picks about 64 MB of logits (at least 256 rows,
                       all of them when fewer). Only the rows of real target tokens are
                       computed, except with ACTS_ALL_ROWS: every row, padding included, all
                       in one chunk, so that a forward_only pass keeps every z_t */
    int attention;  /* attention's hidden layer tanh(W_q s_{t-1} + k_i) [T, B, S, A]:
                       ACTS_KEEP keeps every step's (backward reads it), ACTS_RECOMPUTE only
                       the current step's (backward recomputes it, one more tanh per element),
                       ACTS_AUTO keeps it when it takes at most 8 MB */
    int huge_pages; /* 1: 2 MB pages asked for behind the activations (advise_huge_pages), for
                       training, whose steps pass over them in full (fewer TLB misses in the
                       softmax pass); 0 for a search's, which planned for the longest input
                       are touched only in part */
    int int8;       /* 1: also the buffers of an int8 model's encoder (quant_encoder.h), which
                       model_encode and a forward pass without dropout of a model with
                       m->quant need (they fail without); training's activations have none */
} ActsPlan;

/* The phases of a training step, timed by model_forward and model_backward into
 * Acts.phase_seconds (a clock read between phases: nothing measurable) so that a benchmark can
 * show where a step's time goes; then those of a search (search_translate, into its Searcher's
 * enc.phase_seconds, by its first thread), timed only when Acts.time_search is set: a search
 * step of a few sentences takes microseconds, a clock read tens of nanoseconds. */
typedef enum {
    PHASE_ENCODER,             /* embeddings, both directions, keys, s_0 */
    PHASE_DECODER,             /* the decoder's steps: attention and GRU */
    PHASE_READOUT,             /* o_t for every step */
    PHASE_LOGITS,              /* the output layer's product W_out o_t */
    PHASE_SOFTMAX,             /* bias, log-sum-exp, loss and d loss / d z */
    PHASE_LOGITS_GRAD,         /* d loss / d o_t and d loss / d W_out: two products */
    PHASE_READOUT_GRAD,        /* back through the readout */
    PHASE_DECODER_GRAD,        /* back through the decoder's steps */
    PHASE_DECODER_WEIGHTS,     /* the decoder's weight gradients, all steps at once */
    PHASE_ENCODER_GRAD,        /* back through the encoder */
    PHASE_SEARCH_ENCODER,      /* a search's: model_encode */
    PHASE_SEARCH_SOURCE,       /* the source states' products by W_ih's and W_o's context columns */
    PHASE_SEARCH_QUANTIZE,     /* an int8 model's activations quantized for the products */
    PHASE_SEARCH_GRU_PRODUCTS, /* W_hh s_{t-1} and W_ih u_t (int8: with the dequantization) */
    PHASE_SEARCH_ATT_PRODUCTS, /* W_q s_{t-1} */
    PHASE_SEARCH_RO_PRODUCTS,  /* the readout's W_o s_t and W_o u_t */
    PHASE_SEARCH_OUT_PRODUCTS, /* the output layer's W_out o_t + b_out */
    PHASE_SEARCH_ATTENTION,    /* energies, alpha_t, the context's parts sum_i alpha_ti (W h_i) */
    PHASE_SEARCH_LAYER_NORM,   /* the layer-normalised GRU's normalisations */
    PHASE_SEARCH_NONLINEAR,    /* the GRU's gates and the readout's tanh */
    PHASE_SEARCH_SOFTMAX,      /* the log-sum-exp over the vocabulary, each row */
    PHASE_SEARCH_TOP_K,        /* each row's 2 x beam best tokens */
    PHASE_SEARCH_BEAM,         /* per sentence: choosing the next rows, their states and tokens */
    PHASE_SEARCH_WAIT,         /* waiting for the other threads at a step's barriers */
    PHASE_COUNT
} Phase;
enum { PHASE_TRAINING_COUNT = PHASE_SEARCH_ENCODER }; /* the phases of a training step */
const char *phase_name(Phase phase);

/* A layer-normalised GRU's normalisations (the spec's extension `model.layer_norm`) for the
 * rows of its gi, kept for the backward pass: empty arrays without the option. */
typedef struct {
    real *xhat_i, *xhat_h; /* [rows, 3N] LN(W_ih x) and LN(W_hh h) */
    real *rstd_i, *rstd_h; /* [rows] their 1 / sqrt(var + eps) */
} GruNormCache;

/* The weights the recurrences' steps multiply by, as gemm_packed reads them: each GRU's
 * W_hh, the decoder's W_ih columns of c_t, attention's W_q (additive and scaled_dot), and the
 * decoder's W_ih columns of u_t (forward only). */
typedef struct {
    GemmPanels enc_w_hh[2], dec_w_hh, dec_w_ih_context, att_w_q, dec_w_ih_input;
} StepWeights;

/* Activations of one forward pass, kept for the backward pass, plus backward scratch.
 * Shapes are given for the current batch (B, S, T <= the planned maximum). */
typedef struct {
    int max_B, max_S, max_T; /* the plan */
    int logit_rows;          /* the plan's chunk of output rows (<= max_T * max_B) */
    int every_row;           /* the output layer computes padding rows too (ACTS_ALL_ROWS) */
    int keep_attention;      /* att_hidden holds every step's (the plan's attention, resolved) */
    int out_grads_ready;     /* the last forward pass formed d_readout, d_out_w and d_out_b */
    int B, S, T;             /* the shape of the last forward pass */
    int n_tokens;            /* N, the non-padding target tokens of the last forward pass */
    real dropout, label_smoothing;
    real word_dropout; /* of the last forward pass: x_keep and u_keep hold its scales too */
    double phase_seconds[PHASE_COUNT]; /* time spent in each phase, summed over calls */
    double phase_mark;                 /* when the current phase began (monotonic_seconds) */
    int time_search;                   /* 1: a search on these activations times its phases */
    /* ids, time-major */
    int *src_ids; /* [S*B] */
    int *tgt_in;  /* [T*B] */
    int *tgt_out; /* [T*B] */
    int *src_len; /* [B] */
    int *out_row; /* [T*B] the rows the output layer computes, in order (n_out of them) */
    int *out_tgt; /* [T*B] their targets */
    int n_out;
    int *running; /* [T] rows of step t (1..T) at running[t-1]: every row from it on has
                     ended (its target is padding from there), so the decoder steps skip
                     them; batches with the longest targets first skip the most */
    /* encoder */
    real *x;                  /* [S*B, E] source embeddings (after dropout) */
    real *x_keep;             /* [S*B, E] dropout scales (element-wise times word) */
    real *enc_gi[2];          /* [S*B, 3H] W_ih x + b_ih per direction (layer_norm: g_ih *
                                 LN(W_ih x) + b_ih); dgi in backward, then d (W_ih x) */
    GruNormCache enc_norm[2]; /* rows [S*B] per direction (layer_norm only) */
    real *enc_cache[2];       /* [S*B, 4H] GRU gates per direction */
    real *enc_state[2];       /* [(S+1)*B, H] states; see encoder_forward for the slot order */
    real *enc_h;              /* [B*S, K] h_i = [f_i ; g_i], zero at padding */
    real *keys;               /* [B*S, F] W_k h_i + b (additive), W_a h_i (general), W_k h_i
                                 (scaled_dot); unused by dot, whose keys are enc_h. F is
                                 dims_att_features: A, or D for dot and general */
    real *h_last;             /* [B, K] */
    /* decoder; step t = 1..T uses row block t-1 */
    real *dec_state;       /* [(T+1)*B, D] s_0 .. s_T */
    real *dec_gi;          /* [T*B, 3D] W_ih [u_t ; c_t] + b_ih (layer_norm: g_ih * LN(W_ih
                              [u_t ; c_t]) + b_ih); dgi in backward, then d (W_ih [u_t ; c_t]) */
    GruNormCache dec_norm; /* rows [T*B] (layer_norm only) */
    real *dec_cache;       /* [T*B, 4D] */
    real *query;           /* [T*B, F] W_q s_{t-1} (additive, scaled_dot); dquery in backward
                              (for dot and general: d loss / d s_{t-1} through attention) */
    real *att_hidden;      /* [B, S, A] tanh(W_q s_{t-1} + k_i) of the step being computed;
                              [T, B, S, A], every step's, with keep_attention; additive only
                              (the other scores have no hidden layer: empty) */
    real *alpha;           /* [T, B, S] alignment weights */
    real *energy;          /* [T, B, S] scores e_ti (-inf at padding); d e_ti in backward */
    real *context;         /* [T*B, K] c_t */
    real *readout_in;      /* [T*B, D+K+E] [s_t ; c_t ; u_t]; after the decoder steps, the rows of
                              out_row packed at the top (the readout computes only those) */
    real *u_keep;          /* [T*B, E] dropout scales of u_t (element-wise times word) */
    real *readout;         /* [n_out, O] o_t (before dropout) of the rows of out_row, packed */
    real *readout_drop;    /* [n_out, O] o_t after dropout (unused when off), packed */
    real *o_keep;          /* [T*B, O] dropout scales of o_t, packed like readout after it */
    real *lse;             /* [T*B] log-sum-exp of each packed row */
    real *d_readout;       /* [n_out, O] d loss / d o_t (after dropout), packed, formed with the
                              logits */
    /* the output layer's chunk buffers: they share their memory with the backward scratch
     * below, so they hold their values from the forward pass until model_backward starts */
    real *logits;     /* [logit_rows, Vt] z_t of a chunk of packed rows, then its d loss / d z_t;
                         after a forward_only pass, z_t of the last chunk (of every row, in row
                         order, with ACTS_ALL_ROWS) */
    real *xent_parts; /* [ceil(logit_rows / XENT_GROUP), Vt] and [logit_rows] doubles: */
    real *xent_nll;   /* xent_train's scratch */
    real *d_out_w;    /* [Vt, O] d loss / d out.w of the last forward pass (unless
                         forward_only, or its rows were one chunk), added to the model's
                         gradients by backward */
    real *d_out_b;    /* [Vt] likewise d loss / d out.b */
    /* backward scratch */
    real *d_readout_in; /* [T*B, D+K+E] */
    real *d_enc_h;      /* [B*S, K] */
    real *d_keys;       /* [B*S, F] */
    real *d_att_v;      /* [B, A] d loss / d v of each sentence, summed in order at the end */
    real *d_x;          /* [S*B, E] */
    real *d_gh;         /* [T*B, 3D] d (W_hh s + b_hh) of every decoder step; layer_norm:
                           d (g_hh * LN(W_hh s) + b_hh), then d (W_hh s) */
    real *enc_d_gh;     /* [2, S*B, 3H] likewise for each encoder direction: a slab of its
                           own, so that a direction's thread writes lines only it has read */
    real *d_h_last;     /* [B, K] */
    real *carry;        /* [2, B, max(H,D)] gradient flowing to the previous state (one
                           per encoder direction; the decoder uses the first) */
    real *d_state;      /* [2, B, max(H,D)] gradient of the current state, likewise */
    real *d_context;    /* [B, K] */
    real *scratch;      /* [2, B, 3*max(H,D)] the recurrences' GRU scratch, one per encoder
                           direction (not shared); the layer-normalised GRUs' backward
                           steps use it too */
    int8_t *enc_xq;     /* [max(S*B, 2*B), enc_xq_room] an int8 model's encoder inputs,
                           quantized by rows; NULL unless planned (ActsPlan.int8) */
    float *enc_xs;      /* [max(S*B, 2*B)] their scales */
    int enc_xq_room;
    /* The recurrences' weights packed for gemm_packed (model/gemm.h), for the pass under way,
     * so that a step's products copy no weight: each thread of a time loop packs, as the loop
     * starts, the ones it multiplies by (op(B) = W^T going forward, W going back) into a copy
     * of its own, which no other core then hands it line by line: the encoder's always, the
     * decoder's backward ones when they fit a core's cache; the others are the team's copy,
     * packed together (seq2seq.c, own_decoder_weights). A pass that starts on more threads
     * than there are copies makes more (model_forward, model_encode). */
    StepWeights *step_weights; /* [1 + weight_copies]: the team's, then each thread's */
    real *panels;              /* their panels (each matrix's room fits either orientation) */
    void *panels_block;        /* the allocation behind them */
    int weight_copies;         /* the threads that have a copy */
    real *block;               /* the single allocation behind every real array above */
    int *int_block;
    /* The spans of the gradients that the last model_backward added nothing to: the embedding
     * rows of the words its batch does not hold, sorted (with a large vocabulary and a batch
     * of short sentences, nearly all of those rows, over half of all parameters). */
    ParamSpan *untouched;
    size_t n_untouched;
    unsigned char *row_used; /* [max(Vs, Vt)] scratch: whether the batch holds each word */
} Acts;

/* Starts the clock of the phases of a (phase_end: the time since goes to the next phase). */
void phase_start(Acts *a);
/* Ends phase p: the time since the last phase_start or phase_end goes to it. */
void phase_end(Acts *a, Phase p);

/* Plans and allocates activations for batches of up to max_B sentences with up to max_S
 * source and max_T target positions: acts_init with the default plan (a float model's
 * training and evaluation), acts_init_plan with another (an int8 model's: ActsPlan.int8). */
int acts_init(Acts *a, const ModelDims *dims, int max_B, int max_S, int max_T, Error *err);
int acts_init_plan(Acts *a, const ModelDims *dims, int max_B, int max_S, int max_T,
                   const ActsPlan *plan, Error *err);
/* The bytes acts_init_plan allocates for that plan (plan may be NULL for the default). */
double acts_bytes(const ModelDims *dims, int max_B, int max_S, int max_T, const ActsPlan *plan);
void acts_free(Acts *a);

/* Runs the whole model on a batch and stores the mean loss in *loss. Unless
 * opt->forward_only, it also forms the output layer's gradients for model_backward (they do
 * not touch m->grads, so the caller may zero the gradients in between). forward_only does not
 * change the loss (bit for bit); logit_rows may, by round-off. Fails (without computing) when
 * the batch does not fit the plan or has no target token. */
int model_forward(const Model *m, Acts *a, const Batch *batch, const ForwardOptions *opt,
                  double *loss, Error *err);

/* Backpropagates the last forward pass: ACCUMULATES d loss / d parameter into m->grads.
 * It consumes some of the forward caches (gi, query, the decoder states and inputs, which it
 * packs to the real tokens' rows, and the output layer's gradients), so each backward needs
 * its own forward. After a forward_only pass it first recomputes the output
 * layer chunk by chunk (the gradients are the same, bit for bit). */
void model_backward(Model *m, Acts *a);

/* Runs only the encoder and the decoder's initial state on a batch's sources, filling
 * a->enc_h, a->keys and s_0 (row block 0 of a->dec_state). Used by the decoders in search.
 * An int8 model's (m->quant) input projections, recurrences and keys are int8 products. */
int model_encode(const Model *m, Acts *a, const int *src, const int *src_len, int B, int S,
                 Error *err);

#endif

/*
 * seq2seq.c: the whole model's forward and backward passes and its activation plan
 * (see seq2seq.h; the equations are the spec's, quoted above each part).
 */
#include "model/seq2seq.h"
#include "model/parallel.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "model/attention.h"
#include "model/gemm.h"
#include "model/gru.h"
#include "model/layernorm.h"
#include "model/layers.h"
#include "model/loss.h"
#include "model/qgemm.h"
#include "model/quant_encoder.h"

int model_init(Model *m, const ModelDims *dims, Error *err) {
    memset(m, 0, sizeof *m);
    if (dims_validate(dims, err)) return -1;
    m->dims = *dims;
    param_table_build(&m->table, dims);
    /* whoever made the model writes every parameter next (an initialiser, a checkpoint) */
    m->params = m->param_block =
        checked_calloc_pages(sizeof(real) * m->table.total, "parameters", err);
    m->grads = checked_calloc_aligned(m->table.total, &m->grad_block, "gradients", err);
    if (!m->params || !m->grads) {
        model_free(m);
        return -1;
    }
    advise_huge_pages(m->grads, sizeof(real) * m->table.total);
    weights_view(&m->w, &m->table, m->params);
    weights_view(&m->g, &m->table, m->grads);
    m->grads_zero = true; /* calloc's */
    return 0;
}

void model_free(Model *m) {
    quant_weights_free(m->quant);
    free(m->quant);
    free(m->param_block);
    free(m->grad_block);
    memset(m, 0, sizeof *m);
}

int model_set_quant(Model *m, QuantWeights *qw, Error *err) {
    qw->packs = checked_calloc(QP_COUNT, sizeof *qw->packs, "int8 weights", err);
    if (!qw->packs || decode_packs_build(qw->packs, qw, &m->dims, err)) {
        quant_weights_free(qw);
        free(qw);
        return -1;
    }
    if (m->quant) {
        quant_weights_free(m->quant);
        free(m->quant);
    }
    m->quant = qw;
    quant_weights_dequantize(qw, &m->table, m->params);
    return 0;
}

int model_quantize(Model *m, Error *err) {
    if (m->quant) return 0;
    QuantWeights *qw = checked_calloc(1, sizeof *qw, "int8 weights", err);
    if (!qw) return -1;
    if (quant_weights_build(qw, &m->table, m->params, err)) {
        free(qw);
        return -1;
    }
    return model_set_quant(m, qw, err);
}

void model_zero_grad(Model *m) {
    if (!m->grads_zero) memset(m->grads, 0, sizeof(real) * m->table.total);
    m->grads_zero = true;
}

int batch_validate(const Batch *b, const ModelDims *d, Error *err) {
    if (b->B < 1 || b->S < 1 || b->T < 1)
        return error_set(err, "empty batch (B=%d, S=%d, T=%d)", b->B, b->S, b->T);
    for (int s = 0; s < b->B; s++) {
        int ls = b->src_len[s], lt = b->tgt_len[s];
        if (ls < 1 || ls > b->S || lt < 1 || lt > b->T)
            return error_set(err, "sentence %d: lengths %d/%d outside 1..%d/1..%d", s, ls, lt, b->S,
                             b->T);
        for (int i = 0; i < b->S; i++) {
            int id = b->src[s * b->S + i];
            if (i < ls ? id < 0 || id >= d->src_vocab : id != TOK_PAD)
                return error_set(err, "sentence %d: source id %d at %d is invalid", s, id, i);
        }
        for (int t = 0; t < b->T; t++) {
            int in = b->tgt_in[s * b->T + t], out = b->tgt_out[s * b->T + t];
            int ok = t < lt ? in >= 0 && in < d->tgt_vocab && out > 0 && out < d->tgt_vocab
                            : in == TOK_PAD && out == TOK_PAD;
            if (!ok)
                return error_set(err, "sentence %d: target ids %d/%d at %d are invalid", s, in, out,
                                 t);
        }
    }
    return 0;
}

/* The scales of x_i or u_t (x_keep, u_keep), NULL when neither dropout is on. */
static const real *embedding_keep(const Acts *a, const real *keep) {
    return a->dropout > 0 || a->word_dropout > 0 ? keep : NULL;
}

/* ---- phase timers ------------------------------------------------------------------- */

const char *phase_name(Phase phase) {
    static const char *const names[PHASE_COUNT] = {
        "encoder",
        "decoder steps",
        "readout",
        "W_out o",
        "softmax and loss",
        "output gradients",
        "readout backward",
        "decoder steps back",
        "decoder weight grads",
        "encoder backward",
        "encode",
        "source projections",
        "quantize",
        "GRU products",
        "attention products",
        "readout products",
        "output products",
        "attention",
        "layer norm",
        "gates and tanh",
        "softmax",
        "top-k",
        "beam",
        "waiting",
    };
    return phase >= 0 && phase < PHASE_COUNT ? names[phase] : "?";
}

/* monotonic_seconds, not omp_get_wtime: a phase as short as a thread's share of a small
 * product would get no time at all from a clock of microsecond steps. */
void phase_start(Acts *a) {
    a->phase_mark = monotonic_seconds();
}

void phase_end(Acts *a, Phase p) {
    double now = monotonic_seconds();
    a->phase_seconds[p] += now - a->phase_mark;
    a->phase_mark = now;
}

/* ---- activation plan ---------------------------------------------------------------- */

typedef struct {
    real **slot;
    size_t count;
} Slab;

/* Lays slabs out from offset on (base == NULL only counts); returns the offset after them. */
static size_t lay_out(const Slab *slabs, size_t n, real *base, size_t offset) {
    for (size_t i = 0; i < n; i++) {
        if (base) *slabs[i].slot = base + offset;
        offset += (slabs[i].count + 15) / 16 * 16; /* keep every array 64-byte aligned */
    }
    return offset;
}

/* ---- the step weights, packed once a pass (StepWeights) --------------------------------- */

/* StepWeights in order: the encoder's (0, 1), then the decoder's, which its backward pass
 * multiplies by too (2 .. DECODER_BACK_WEIGHTS - 1), then W_ih's u_t columns, which only its
 * forward pass does. */
enum { ENCODER_WEIGHTS = 2, DECODER_BACK_WEIGHTS = 5, STEP_WEIGHTS = 6 };

/* A matrix of StepWeights as stored: W [rows, cols] with row stride ld (rows 0: the model has
 * none), and where its panels go. */
typedef struct {
    const real *w;
    int rows, cols, ld;
    GemmPanels *panels;
} StepWeight;

/* The matrices of StepWeights in its order (w NULL: the shapes only). */
static void step_weight_list(const ModelDims *d, const Weights *w, StepWeights *sw,
                             StepWeight list[STEP_WEIGHTS]) {
    int E = d->emb, H = d->enc_hidden, K = dims_enc_state(d), D = d->dec_hidden, A = d->att;
    int query = d->score == SCORE_ADDITIVE || d->score == SCORE_SCALED_DOT;
    list[0] = (StepWeight){w ? w->enc_fwd.w_hh : NULL, 3 * H, H, H, &sw->enc_w_hh[0]};
    list[1] = (StepWeight){w ? w->enc_bwd.w_hh : NULL, d->bidirectional ? 3 * H : 0, H, H,
                           &sw->enc_w_hh[1]};
    list[2] = (StepWeight){w ? w->dec_gru.w_hh : NULL, 3 * D, D, D, &sw->dec_w_hh};
    list[3] = (StepWeight){w ? w->dec_gru.w_ih + E : NULL, 3 * D, K, E + K, &sw->dec_w_ih_context};
    list[4] = (StepWeight){w ? w->att_w_q : NULL, query ? A : 0, D, D, &sw->att_w_q};
    list[5] = (StepWeight){w ? w->dec_gru.w_ih : NULL, 3 * D, E, E + K, &sw->dec_w_ih_input};
}

/* The reals of one matrix's panels in either orientation, 64-byte aligned. */
static size_t step_slot(const StepWeight *sw) {
    if (sw->rows == 0) return 0;
    size_t forward = gemm_panels_size(sw->cols, sw->rows),
           back = gemm_panels_size(sw->rows, sw->cols);
    return ((forward > back ? forward : back) + 15) / 16 * 16;
}

/* The reals of the panels of step weights [first, last). */
static size_t step_panels_size(const ModelDims *d, int first, int last) {
    StepWeights unused;
    StepWeight list[STEP_WEIGHTS];
    step_weight_list(d, NULL, &unused, list);
    size_t total = 0;
    for (int i = first; i < last; i++) total += step_slot(&list[i]);
    return total;
}

/* The decoder's backward step weights (ENCODER_WEIGHTS .. DECODER_BACK_WEIGHTS - 1) get a copy
 * a thread up to this size: such a copy stays in the cache of the core that reads it (a core's
 * L2 holds it). Larger ones are read from the shared last-level cache at every step wherever
 * they were packed, and a copy a core would double what the steps stream from there. So they,
 * and the forward pass's, are one copy (copy 0) that the team packs together: the forward
 * pass's packing transposes (W^T), which costs a thread about as much as the hand-over of
 * another core's lines would. The encoder's weights always go a copy a thread: a thread
 * multiplies by its directions' only. */
static const size_t OWN_DECODER_WEIGHTS_BYTES = (size_t)1 << 20;
static bool own_decoder_weights(const ModelDims *d) {
    return sizeof(real) * step_panels_size(d, ENCODER_WEIGHTS, DECODER_BACK_WEIGHTS) <=
           OWN_DECODER_WEIGHTS_BYTES;
}

/* Where copy `copy` of the step weights' panels starts: copy 0, the team's, has room for all
 * of them; copy t + 1, thread t's own, for the encoder's and, when the threads own theirs, the
 * decoder's backward ones. (Thread 0's own copy is not the team's: its packing would then write
 * lines that the other threads read in the forward pass.) */
static size_t step_copy_offset(const ModelDims *d, int copy) {
    size_t all = step_panels_size(d, 0, STEP_WEIGHTS);
    size_t own =
        step_panels_size(d, 0, own_decoder_weights(d) ? DECODER_BACK_WEIGHTS : ENCODER_WEIGHTS);
    return copy == 0 ? 0 : all + (size_t)(copy - 1) * own;
}

/* Room for the copies of the step weights of `threads` threads at least, and the team's (see
 * Acts.step_weights). */
static int step_weight_copies(Acts *a, const ModelDims *d, int threads, Error *err) {
    if (threads <= a->weight_copies) return 0;
    void *block;
    real *panels =
        checked_calloc_aligned(step_copy_offset(d, threads + 1), &block, "step weight panels", err);
    StepWeights *copies =
        checked_calloc((size_t)threads + 1, sizeof(StepWeights), "step weights", err);
    if (!panels || !copies) {
        free(block);
        free(copies);
        return -1;
    }
    free(a->panels_block);
    free(a->step_weights);
    a->panels_block = block, a->panels = panels, a->step_weights = copies;
    a->weight_copies = threads;
    return 0;
}

/* The threads of a time loop's region: no more than the copies of the step weights (inline:
 * a build without OpenMP ignores the pragmas that call it). */
static inline int step_team(const Acts *a) {
    int threads = omp_get_max_threads();
    return threads < a->weight_copies ? threads : a->weight_copies;
}

/* Packs step weights [first, last) (the encoder's, 0 and 1, or the decoder's, the others), for
 * the forward pass (op(B) = W^T) or the backward pass (op(B) = W), for products of at most a
 * batch's rows, and returns the copy the calling thread is to read. Called by every thread of
 * a step_team region as its time loop starts, with the same [first, last) for the decoder's.
 * A copy the thread packed itself is in its own cache, where one packed by another thread
 * would be handed over between the cores, line by line, at the first step that reads it; the
 * decoder's are one copy the threads pack together but where own_decoder_weights says. */
static const StepWeights *pack_step_weights(const Model *m, Acts *a, int first, int last,
                                            GemmOp pass) {
    int t = omp_get_thread_num(), threads = omp_get_num_threads();
    bool shared = first >= ENCODER_WEIGHTS && (pass == TRANSPOSE || !own_decoder_weights(&m->dims));
    int copy = shared ? 0 : t + 1;
    StepWeights *sw = &a->step_weights[copy];
    real *panels = a->panels + step_copy_offset(&m->dims, copy);
    StepWeight list[STEP_WEIGHTS];
    step_weight_list(&m->dims, &m->w, sw, list);
    for (int i = 0; i < last; i++) {
        const StepWeight *w = &list[i];
        if (i >= first && w->rows > 0 && (!shared || (i - first) % threads == t)) {
            if (pass == TRANSPOSE)
                gemm_pack(w->panels, TRANSPOSE, w->cols, w->rows, w->w, w->ld, a->B, panels);
            else
                gemm_pack(w->panels, AS_STORED, w->rows, w->cols, w->w, w->ld, a->B, panels);
        }
        panels += step_slot(w);
    }
    if (shared) {
#pragma omp barrier
    }
    return sw;
}

/* Lays every array out in one block (base == NULL only counts) and returns its size. */
static size_t acts_layout(Acts *a, const ModelDims *d, real *base) {
    size_t B = a->max_B, S = a->max_S, T = a->max_T;
    size_t E = d->emb, H = d->enc_hidden, K = dims_enc_state(d), D = d->dec_hidden, A = d->att,
           O = d->readout, V = d->tgt_vocab;
    size_t R = D + K + E, N = H > D ? H : D, F = dims_att_features(d);
    /* only the additive score has a hidden layer */
    size_t hidden_steps = d->score != SCORE_ADDITIVE ? 0 : a->keep_attention ? T : 1;
    size_t L = a->logit_rows;
    /* the layer-normalised GRUs' caches: none without the option */
    size_t ln = d->layer_norm ? 1 : 0, ln_enc = ln * S * B, ln_dec = ln * T * B;
    size_t ln_bwd = d->bidirectional ? ln_enc : 0;
    const Slab kept[] = {
        {&a->x, S * B * E},
        {&a->x_keep, S * B * E},
        {&a->enc_gi[0], S * B * 3 * H},
        {&a->enc_gi[1], S * B * 3 * H},
        {&a->enc_cache[0], S * B * 4 * H},
        {&a->enc_cache[1], S * B * 4 * H},
        {&a->enc_state[0], (S + 1) * B * H},
        {&a->enc_state[1], (S + 1) * B * H},
        {&a->enc_h, B * S * K},
        {&a->keys, B * S * F},
        {&a->h_last, B * K},
        {&a->dec_state, (T + 1) * B * D},
        {&a->dec_gi, T * B * 3 * D},
        {&a->dec_cache, T * B * 4 * D},
        {&a->query, T * B * F},
        {&a->att_hidden, hidden_steps * B * S * A},
        {&a->alpha, T * B * S},
        {&a->energy, T * B * S},
        {&a->context, T * B * K},
        {&a->readout_in, T * B * R},
        {&a->u_keep, T * B * E},
        {&a->readout, T * B * O},
        {&a->readout_drop, T * B * O},
        {&a->o_keep, T * B * O},
        {&a->lse, T * B},
        {&a->d_readout, T * B * O},
        {&a->scratch, 2 * B * 3 * N}, /* one half per encoder direction */
        {&a->enc_norm[0].xhat_i, ln_enc * 3 * H},
        {&a->enc_norm[0].xhat_h, ln_enc * 3 * H},
        {&a->enc_norm[0].rstd_i, ln_enc},
        {&a->enc_norm[0].rstd_h, ln_enc},
        {&a->enc_norm[1].xhat_i, ln_bwd * 3 * H},
        {&a->enc_norm[1].xhat_h, ln_bwd * 3 * H},
        {&a->enc_norm[1].rstd_i, ln_bwd},
        {&a->enc_norm[1].rstd_h, ln_bwd},
        {&a->dec_norm.xhat_i, ln_dec * 3 * D},
        {&a->dec_norm.xhat_h, ln_dec * 3 * D},
        {&a->dec_norm.rstd_i, ln_dec},
        {&a->dec_norm.rstd_h, ln_dec},
    };
    /* Two groups that are never live at the same time share one region: the output layer's
     * chunk buffers, used by the output layer (in model_forward, or at the start of
     * model_backward after a forward_only pass) until model_backward has added d_out_w (or
     * formed it from the logits' gradients) and d_out_b to the gradients, and the backward
     * pass's scratch, used only after that. */
    const Slab output[] = {
        {&a->logits, L * V},
        {&a->xent_parts, (L + XENT_GROUP - 1) / XENT_GROUP * V},
        {&a->xent_nll, L * sizeof(double) / sizeof(real)},
        {&a->d_out_w, V * O},
        {&a->d_out_b, V},
    };
    const Slab backward[] = {
        {&a->d_readout_in, T * B * R},
        {&a->d_enc_h, B * S * K},
        {&a->d_keys, B * S * F},
        {&a->d_att_v, B * A},
        {&a->d_x, S * B * E},
        {&a->d_gh, T * B * 3 * D},
        {&a->d_h_last, B * K},
        {&a->carry, 2 * B * N},
        {&a->d_state, 2 * B * N},
        {&a->d_context, B * K},
        {&a->enc_d_gh, 2 * S * B * 3 * H},
    };
    size_t shared = lay_out(kept, sizeof kept / sizeof kept[0], base, 0);
    size_t end_output = lay_out(output, sizeof output / sizeof output[0], base, shared);
    size_t end_backward = lay_out(backward, sizeof backward / sizeof backward[0], base, shared);
    return end_output > end_backward ? end_output : end_backward;
}

/* What ACTS_AUTO picks. Logits per chunk: about 64 MB of them, in whole blocks of 256 rows
 * (the fewer the chunks, the fewer times the products read out.w and its gradient: a batch
 * of 64 short pairs, about 600 rows with Vt = 16,004, then takes one chunk, a step faster than
 * in three smaller ones: docs/performance.md). Attention's hidden layer is kept up to
 * 8 MB: recomputing it costs a tanh per element, which shows in a small model's step, while a
 * large model's step saves as much by not streaming the array through memory. */
enum { LOGIT_BYTES = 64 << 20, LOGIT_ROW_BLOCK = 256, KEEP_ATTENTION_BYTES = 8 << 20 };

/* The plan's sizes without allocating anything. */
static void acts_plan(Acts *a, const ModelDims *dims, int max_B, int max_S, int max_T,
                      const ActsPlan *plan) {
    long rows = (long)max_B * max_T, chunk = plan ? plan->logit_rows : 0;
    if (chunk <= 0) {
        chunk = LOGIT_BYTES / ((long)dims->tgt_vocab * (long)sizeof(real));
        chunk = chunk / LOGIT_ROW_BLOCK * LOGIT_ROW_BLOCK;
        if (chunk < LOGIT_ROW_BLOCK) chunk = LOGIT_ROW_BLOCK;
    }
    a->max_B = max_B, a->max_S = max_S, a->max_T = max_T;
    a->every_row = plan && plan->logit_rows == ACTS_ALL_ROWS;
    a->logit_rows = (int)(chunk < rows ? chunk : rows);
    int attention = plan ? plan->attention : ACTS_AUTO;
    double hidden_bytes = (double)sizeof(real) * max_T * max_B * max_S * dims->att;
    a->keep_attention =
        attention == ACTS_KEEP || (attention == ACTS_AUTO && hidden_bytes <= KEEP_ATTENTION_BYTES);
}

/* Untouched rows of a vocabulary of V come in at most (V + 1) / 2 runs. */
static size_t max_untouched_spans(const ModelDims *d) {
    return (size_t)(d->src_vocab + 1) / 2 + (size_t)(d->tgt_vocab + 1) / 2;
}

/* The larger vocabulary: the rows of Acts.row_used. */
static size_t largest_vocab(const ModelDims *d) {
    return (size_t)(d->src_vocab > d->tgt_vocab ? d->src_vocab : d->tgt_vocab);
}

double acts_bytes(const ModelDims *dims, int max_B, int max_S, int max_T, const ActsPlan *plan) {
    Acts a = {0};
    acts_plan(&a, dims, max_B, max_S, max_T, plan);
    size_t ints = (size_t)max_S * max_B + 4 * (size_t)max_T * max_B + (size_t)max_B + max_T;
    return (double)sizeof(real) * (double)(acts_layout(&a, dims, NULL) + 16) +
           (double)sizeof(int) * (double)ints +
           (double)sizeof(ParamSpan) * (double)max_untouched_spans(dims) +
           (double)largest_vocab(dims) +
           (double)sizeof(real) * (step_copy_offset(dims, omp_get_max_threads() + 1) + 16) +
           (double)sizeof(StepWeights) * (omp_get_max_threads() + 1) +
           (plan && plan->int8 ? int8_encoder_bytes(dims, max_B, max_S) : 0);
}

int acts_init(Acts *a, const ModelDims *dims, int max_B, int max_S, int max_T, Error *err) {
    return acts_init_plan(a, dims, max_B, max_S, max_T, NULL, err);
}

int acts_init_plan(Acts *a, const ModelDims *dims, int max_B, int max_S, int max_T,
                   const ActsPlan *plan, Error *err) {
    memset(a, 0, sizeof *a);
    if (max_B < 1 || max_S < 1 || max_T < 1)
        return error_set(err, "invalid batch plan %d x %d x %d", max_B, max_S, max_T);
    acts_plan(a, dims, max_B, max_S, max_T, plan);
    size_t total = acts_layout(a, dims, NULL);
    size_t ints = (size_t)max_S * max_B + 4 * (size_t)max_T * max_B + (size_t)max_B + max_T;
    a->block = checked_calloc(total + 16, sizeof(real), "activations", err);
    if (a->block && plan && plan->huge_pages)
        advise_huge_pages(a->block, sizeof(real) * (total + 16));
    a->int_block = checked_calloc(ints, sizeof(int), "activation ids", err);
    a->untouched = checked_calloc(max_untouched_spans(dims), sizeof(ParamSpan), "spans", err);
    a->row_used = checked_calloc(largest_vocab(dims), 1, "word flags", err);
    if (!a->block || !a->int_block || !a->untouched || !a->row_used ||
        step_weight_copies(a, dims, omp_get_max_threads(), err) ||
        (plan && plan->int8 && int8_encoder_plan(a, dims, max_B, max_S, err))) {
        acts_free(a);
        return -1;
    }
    /* calloc aligns to 16 bytes; start the layout on a 64-byte boundary */
    real *base = a->block + ((64 - ((uintptr_t)a->block & 63)) & 63) / sizeof(real);
    acts_layout(a, dims, base);
    a->src_ids = a->int_block;
    a->tgt_in = a->src_ids + (size_t)max_S * max_B;
    a->tgt_out = a->tgt_in + (size_t)max_T * max_B;
    a->src_len = a->tgt_out + (size_t)max_T * max_B;
    a->out_row = a->src_len + max_B;
    a->out_tgt = a->out_row + (size_t)max_T * max_B;
    a->running = a->out_tgt + (size_t)max_T * max_B;
    return 0;
}

void acts_free(Acts *a) {
    free(a->block);
    free(a->int_block);
    free(a->untouched);
    free(a->row_used);
    free(a->step_weights);
    free(a->panels_block);
    free(a->enc_xq);
    free(a->enc_xs);
    memset(a, 0, sizeof *a);
}

/* Part `part` of `parts` of B batch rows: [*first, *first + *count). The parallel regions of a
 * pass give each thread one part. Sentences are independent, so the decoder's time loop shares
 * out each step's running rows (Acts.running) and the threads meet once a step, as sentences
 * end and the parts shrink; products over all rows and steps (input projections, weight
 * gradients) stay outside, parallel over their own tiles. The step products sum a row alike in
 * a part of any size (gemm_packed), so the bits do not depend on the number of threads. */
void share_rows(int B, int part, int parts, int *first, int *count) {
    int end;
    share_range(B, 1, part, parts, first, &end);
    *count = end - *first;
}

/* ---- encoder ------------------------------------------------------------------------ */

/* The calling thread's share of the encoder's recurrences: directions [*dir0, *dir1), and its
 * place *part among the *parts threads that run them. With two directions and an even team,
 * each half of the team runs one direction: a thread then streams one W_hh only, multiplies
 * twice the rows at a time, and a single sentence keeps two cores busy. Otherwise each thread
 * runs every direction. The threads of a direction share its rows in the recurrence and the
 * columns of its input projection. */
void encoder_share(int dirs, int *dir0, int *dir1, int *part, int *parts) {
    int t = omp_get_thread_num(), threads = omp_get_num_threads();
    int halves = dirs == 2 && threads % 2 == 0 ? 2 : 1, per_half = threads / halves;
    *dir0 = halves == 2 ? t / per_half : 0;
    *dir1 = halves == 2 ? *dir0 + 1 : dirs;
    *part = t % per_half, *parts = per_half;
}

/* Slot order of a direction's states [(S+1)*B, H]: the forward GRU starts from slot 0 and
 * writes position i's state into slot i+1; the backward GRU starts from slot S and writes
 * position i's state into slot i. So f_i = slot i+1, g_i = slot i, and the state a step
 * starts from is slot i (forward) or slot i+1 (backward). */
real *state_slot(real *states, int slot, int B, int N) {
    return states + (size_t)slot * B * N;
}

/* x_i = src_emb[src_i]; forward GRU over i = 0..L-1 -> f_i; backward GRU over i = L-1..0
 * -> g_i; h_i = [f_i ; g_i] (zero at padding); h_last = [f_{L-1} ; g_0];
 * the keys k_i = W_k h_i + b (additive), W_a h_i (general) or W_k h_i (scaled_dot; dot uses
 * h_i itself); s_0 = tanh(W_init h_last + b_init). One parallel region for all of it:
 * for one sentence, entering a region costs as much as some of its products. */
/* h_i (zero at padding) and h_last: direction dir's half of rows b0 .. b0+nb-1 of the
 * encoder states, from that direction's state slots. */
void encoder_states_out(Acts *a, real *states, int dir, int b0, int nb, int S, int B, int H,
                        int K) {
    for (int b = b0; b < b0 + nb; b++) {
        for (int i = 0; i < S; i++) {
            real *h = a->enc_h + ((size_t)b * S + i) * K + dir * H;
            const real *st = state_slot(states, dir == 0 ? i + 1 : i, B, H) + (size_t)b * H;
            for (int j = 0; j < H; j++) h[j] = i < a->src_len[b] ? st[j] : 0;
        }
        memcpy(a->h_last + (size_t)b * K + dir * H,
               state_slot(states, dir == 0 ? S : 0, B, H) + (size_t)b * H,
               sizeof(real) * (size_t)H);
    }
}

/* The layer-normalised GRU's input part (spec: extensions), in place on `rows` rows of gi
 * [.., 3N] from row `row` on: W_ih x becomes g_ih * LN(W_ih x) + b_ih, its normalisation kept
 * in the cache's rows. */
void normalise_input(real *gi, GruNormCache *nc, const GruWeights *gw, size_t row, int rows,
                     int N) {
    real *g = gi + row * 3 * N;
    layernorm_forward(g, 3 * N, nc->xhat_i + row * 3 * N, nc->rstd_i + row, g, 3 * N, gw->g_ih,
                      gw->b_ih, rows, 3 * N);
}

/* Direction dir's recurrence over rows b0 .. b0+nb-1, then their h_i and h_last. */
static void encoder_direction_forward(const Model *m, Acts *a, const GemmPanels *w_hh, int dir,
                                      int b0, int nb) {
    const ModelDims *d = &m->dims;
    const Weights *w = &m->w;
    int B = a->B, S = a->S, H = d->enc_hidden, K = dims_enc_state(d);
    const GruWeights *gw = dir == 0 ? &w->enc_fwd : &w->enc_bwd;
    real *states = a->enc_state[dir], *scratch = a->scratch + (size_t)dir * B * 3 * H;
    for (int step = 0; step < S; step++) {
        int i = dir == 0 ? step : S - 1 - step;
        int from = dir == 0 ? i : i + 1, to = dir == 0 ? i + 1 : i;
        size_t row = (size_t)i * B + b0; /* row (i, b0) of [S*B, ...] */
        real *h_out = state_slot(states, to, B, H) + (size_t)b0 * H;
        const real *h_prev = state_slot(states, from, B, H) + (size_t)b0 * H;
        if (d->layer_norm) {
            GruNormCache *nc = &a->enc_norm[dir];
            normalise_input(a->enc_gi[dir], nc, gw, row, nb, H);
            gru_step_forward_ln(h_out, a->enc_cache[dir] + row * 4 * H, nc->xhat_h + row * 3 * H,
                                nc->rstd_h + row, scratch + (size_t)b0 * 3 * H,
                                a->enc_gi[dir] + row * 3 * H, h_prev, w_hh, gw->g_hh, gw->b_hh,
                                a->src_len + b0, i, nb, H);
        } else
            gru_step_forward(h_out, a->enc_cache[dir] + row * 4 * H, scratch + (size_t)b0 * 3 * H,
                             a->enc_gi[dir] + row * 3 * H, h_prev, w_hh, gw->b_hh, a->src_len + b0,
                             i, nb, H);
    }
    encoder_states_out(a, states, dir, b0, nb, S, B, H, K);
}

static void encoder_forward(const Model *m, Acts *a, int B, int S) {
    const ModelDims *d = &m->dims;
    const Weights *w = &m->w;
    int E = d->emb, H = d->enc_hidden, K = dims_enc_state(d), D = d->dec_hidden;
    int F = dims_att_features(d), dirs = d->bidirectional ? 2 : 1;
    const real *key_w = d->score == SCORE_GENERAL ? w->att_w_a : w->att_w_k;
    embedding_forward(a->x, E, a->src_ids, embedding_keep(a, a->x_keep), w->src_emb, S * B, E);
    for (int dir = 0; dir < dirs; dir++)
        memset(state_slot(a->enc_state[dir], dir == 0 ? 0 : S, B, H), 0,
               sizeof(real) * (size_t)B * H);
#pragma omp parallel num_threads(step_team(a))
    {
        int dir0, dir1, part, parts, lo, n, b0, nb;
        encoder_share(dirs, &dir0, &dir1, &part, &parts);
        const StepWeights *sw = pack_step_weights(m, a, dir0, dir1, TRANSPOSE);
        for (int dir = dir0; dir < dir1; dir++) { /* gi = W_ih x_i + b_ih, all positions */
            const GruWeights *gw = dir == 0 ? &w->enc_fwd : &w->enc_bwd;
            share_rows(3 * H, part, parts, &lo, &n);
            linear_columns(a->enc_gi[dir], 3 * H, a->x, E, gw->w_ih, E,
                           d->layer_norm ? NULL : gw->b_ih, S * B, E, lo, lo + n, 0);
        }
#pragma omp barrier
        share_rows(B, part, parts, &b0, &nb);
        for (int dir = dir0; dir < dir1 && nb > 0; dir++)
            encoder_direction_forward(m, a, &sw->enc_w_hh[dir], dir, b0, nb);
#pragma omp barrier
        /* keys and s_0: every thread takes some of the columns */
        int me = omp_get_thread_num(), threads = omp_get_num_threads();
        share_rows(F, me, threads, &lo, &n);
        if (d->score != SCORE_DOT)
            linear_columns(a->keys, F, a->enc_h, K, key_w, K, w->att_b, B * S, K, lo, lo + n, 0);
        share_rows(D, me, threads, &lo, &n);
        linear_columns(a->dec_state, D, a->h_last, K, w->init_w, K, w->init_b, B, K, lo, lo + n, 0);
        for (int b = 0; b < B && n > 0; b++) tanh_forward(a->dec_state + (size_t)b * D + lo, n);
    }
}

/* One normalisation's backward over all rows of a layer-normalised GRU: dg += sum dy xhat and
 * db += sum dy, the threads sharing out the columns (each column's rows in order: the same
 * bits for any thread count), then dy becomes d (the raw product) in place, the threads
 * sharing out the rows. */
static void norm_backward_rows(real *dy, real *dg, real *db, const real *xhat, const real *rstd,
                               const real *g, int rows, int n) {
#pragma omp parallel if (worth_parallel((double)rows * n, 65536))
    {
        int lo, hi, r0, nr;
        share_range(n, 16, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        layernorm_param_grads(dg, db, dy, xhat, rows, n, lo, hi);
#pragma omp barrier
        share_rows(rows, omp_get_thread_num(), omp_get_num_threads(), &r0, &nr);
        layernorm_backward(dy + (size_t)r0 * n, NULL, NULL, dy + (size_t)r0 * n,
                           xhat + (size_t)r0 * n, rstd + r0, g, nr, n);
    }
}

/* The layer-normalised GRU's normalisations after its time loop (spec: extensions): given
 * dgi = d loss / d (g_ih * LN(W_ih x) + b_ih) and dgh = d loss / d (g_hh * LN(W_hh h) + b_hh)
 * of `rows` rows, adds the gains' and biases' gradients into gg and turns dgi and dgh in place
 * into d (W_ih x) and d (W_hh h), the inputs of the weight gradients' products. */
static void gru_norm_backward(real *dgi, real *dgh, GruWeights *gg, const GruNormCache *nc,
                              const GruWeights *gw, int rows, int N) {
    norm_backward_rows(dgi, gg->g_ih, gg->b_ih, nc->xhat_i, nc->rstd_i, gw->g_ih, rows, 3 * N);
    norm_backward_rows(dgh, gg->g_hh, gg->b_hh, nc->xhat_h, nc->rstd_h, gw->g_hh, rows, 3 * N);
}

/* Direction dir's weight gradients, of all positions at once (after its layer normalisation's
 * backward, which leaves its dgi and dgh as d (W_ih x) and d (W_hh h)): position i started
 * from slot i (forward) or slot i+1 (backward), so the inputs of W_hh are rows of one slab. */
static void encoder_weight_grads(Model *m, Acts *a, int dir) {
    const ModelDims *d = &m->dims;
    int B = a->B, S = a->S, E = d->emb, H = d->enc_hidden, ln = d->layer_norm;
    const GruWeights *gw = dir == 0 ? &m->w.enc_fwd : &m->w.enc_bwd;
    GruWeights *gg = dir == 0 ? &m->g.enc_fwd : &m->g.enc_bwd;
    real *dgi = a->enc_gi[dir], *dgh = a->enc_d_gh + (size_t)dir * S * B * 3 * H;
    if (ln) gru_norm_backward(dgi, dgh, gg, &a->enc_norm[dir], gw, S * B, H);
    linear_backward(NULL, gg->w_ih, ln ? NULL : gg->b_ih, dgi, a->x, E, gw->w_ih, E, S * B, E,
                    3 * H);
    linear_backward(NULL, gg->w_hh, ln ? NULL : gg->b_hh, dgh,
                    state_slot(a->enc_state[dir], dir, B, H), H, gw->w_hh, H, S * B, H, 3 * H);
}

static void encoder_backward(Model *m, Acts *a) {
    const ModelDims *d = &m->dims;
    const Weights *w = &m->w;
    Weights *g = &m->g;
    int B = a->B, S = a->S;
    int E = d->emb, H = d->enc_hidden, K = dims_enc_state(d), D = d->dec_hidden;
    int F = dims_att_features(d), dirs = d->bidirectional ? 2 : 1;
    /* s_0 = tanh(W_init h_last + b_init); the carry holds d s_0 */
    real *ds0 = a->carry;
    tanh_backward(ds0, a->dec_state, (size_t)B * D);
    memset(a->d_h_last, 0, sizeof(real) * (size_t)B * K);
    linear_backward(a->d_h_last, g->init_w, g->init_b, ds0, a->h_last, K, w->init_w, K, B, K, D);
    /* k_i = W_k h_i + b (additive), W_a h_i (general), W_k h_i (scaled_dot); dot's keys are
     * the h_i, whose gradient attention added to d_enc_h itself */
    if (d->score == SCORE_GENERAL)
        linear_backward(a->d_enc_h, g->att_w_a, NULL, a->d_keys, a->enc_h, K, w->att_w_a, K, B * S,
                        K, F);
    else if (d->score != SCORE_DOT)
        linear_backward(a->d_enc_h, g->att_w_k, g->att_b, a->d_keys, a->enc_h, K, w->att_w_k, K,
                        B * S, K, F);
    memset(a->d_x, 0, sizeof(real) * (size_t)S * B * E);
    /* each direction's carry starts from its part of d h_last: f_{L-1} (carried to slot S)
     * or g_0; both directions run at once (see encoder_share), each with its own carry,
     * d_state and dgh */
    for (int dir = 0; dir < dirs; dir++)
        for (int b = 0; b < B; b++)
            memcpy(a->carry + ((size_t)dir * B + b) * H, a->d_h_last + (size_t)b * K + dir * H,
                   sizeof(real) * (size_t)H);
    int weights_done = 0;
#pragma omp parallel num_threads(step_team(a))
    {
        int dir0, dir1, part, parts, b0, nb;
        encoder_share(dirs, &dir0, &dir1, &part, &parts);
        const StepWeights *sw = pack_step_weights(m, a, dir0, dir1, AS_STORED);
        share_rows(B, part, parts, &b0, &nb);
        for (int dir = dir0; dir < dir1 && nb > 0; dir++) {
            const GruWeights *gw = dir == 0 ? &w->enc_fwd : &w->enc_bwd;
            const GemmPanels *w_hh = &sw->enc_w_hh[dir];
            real *states = a->enc_state[dir], *dgi = a->enc_gi[dir];
            real *dgh = a->enc_d_gh + (size_t)dir * S * B * 3 * H;
            real *carry = a->carry + ((size_t)dir * B + b0) * H,
                 *d_state = a->d_state + ((size_t)dir * B + b0) * H;
            for (int step = S - 1; step >= 0; step--) {
                int i = dir == 0 ? step : S - 1 - step;
                int from = dir == 0 ? i : i + 1;
                size_t row = (size_t)i * B + b0;
                /* the state is both the output h_i (through attention and keys) and the next
                 * step's input (the carry) */
                for (int b = 0; b < nb; b++)
                    for (int j = 0; j < H; j++)
                        d_state[(size_t)b * H + j] =
                            carry[(size_t)b * H + j] +
                            a->d_enc_h[((size_t)(b0 + b) * S + i) * K + dir * H + j];
                const real *h_prev = state_slot(states, from, B, H) + (size_t)b0 * H;
                const GruNormCache *nc = &a->enc_norm[dir];
                if (d->layer_norm)
                    gru_step_backward_ln(carry, dgi + row * 3 * H, dgh + row * 3 * H,
                                         a->scratch + ((size_t)dir * B + b0) * 3 * H, d_state,
                                         a->enc_cache[dir] + row * 4 * H, nc->xhat_h + row * 3 * H,
                                         nc->rstd_h + row, h_prev, w_hh, gw->g_hh, a->src_len + b0,
                                         i, nb, H);
                else
                    gru_step_backward(carry, dgi + row * 3 * H, dgh + row * 3 * H, d_state,
                                      a->enc_cache[dir] + row * 4 * H, h_prev, w_hh,
                                      a->src_len + b0, i, nb, H);
            }
        }
        /* a direction that one thread ran (each of two threads one direction, or one thread
         * both) gets its weight gradients from that thread: its dgi and dgh are in that
         * core's cache, and a product shared with the other core would read them from there */
        if (parts == 1) {
            for (int dir = dir0; dir < dir1; dir++) encoder_weight_grads(m, a, dir);
            if (omp_get_thread_num() == 0) weights_done = 1;
        }
    }
    for (int dir = 0; dir < dirs && !weights_done; dir++) encoder_weight_grads(m, a, dir);
    /* d x_i = sum over the directions of dgi W_ih, added in order */
    for (int dir = 0; dir < dirs; dir++)
        gemm(AS_STORED, AS_STORED, S * B, E, 3 * H, a->enc_gi[dir], 3 * H,
             (dir == 0 ? &w->enc_fwd : &w->enc_bwd)->w_ih, E, 1, a->d_x, E);
    embedding_backward(g->src_emb, a->d_x, E, a->src_ids, embedding_keep(a, a->x_keep), S * B, E);
}

/* ---- decoder ------------------------------------------------------------------------ */

/* The arrays of one decoder step for B rows. */
typedef struct {
    real *s_prev, *s;     /* [B, D] s_{t-1} and s_t */
    real *gi, *cache;     /* [B, 3D] W_ih [u_t ; c_t] + b_ih (holding the u_t part on entry;
                             layer-normalised: g_ih * LN(W_ih [u_t ; c_t]) + b_ih),
                             [B, 4D] GRU gates */
    real *query;          /* [B, F] W_q s_{t-1} (additive, scaled_dot); d loss / d query in
                             backward, which dot and general use for d loss / d s_{t-1} */
    real *hidden;         /* [B, S, A] tanh(W_q s_{t-1} + k_i) (additive only); one step's
                             scratch in training */
    real *alpha, *energy; /* [B, S] alignment weights and scores */
    real *context;        /* [B, K] c_t */
    GruNormCache norm;    /* the layer-normalised GRU's rows (layer_norm only, else NULLs) */
} DecoderStep;

/* The arrays of decoder step t (1..T) from batch row b0 on: the one accessor both passes use
 * (each thread passes the first of its rows). */
static DecoderStep decoder_step(const Acts *a, const ModelDims *d, int t, int b0) {
    size_t B = a->B, S = a->S, r = (size_t)(t - 1) * B + b0;
    size_t D = d->dec_hidden, A = d->att, K = dims_enc_state(d), F = dims_att_features(d);
    GruNormCache norm = {0};
    if (d->layer_norm)
        norm = (GruNormCache){.xhat_i = a->dec_norm.xhat_i + r * 3 * D,
                              .xhat_h = a->dec_norm.xhat_h + r * 3 * D,
                              .rstd_i = a->dec_norm.rstd_i + r,
                              .rstd_h = a->dec_norm.rstd_h + r};
    return (DecoderStep){
        .s_prev = a->dec_state + r * D,
        .s = a->dec_state + (r + B) * D,
        .gi = a->dec_gi + r * 3 * D,
        .cache = a->dec_cache + r * 4 * D,
        .query = a->query + r * F,
        .hidden = a->att_hidden + (a->keep_attention ? r : (size_t)b0) * S * A,
        .alpha = a->alpha + r * S,
        .energy = a->energy + r * S,
        .context = a->context + r * K,
        .norm = norm,
    };
}

/* Fills a keep mask with 0 (dropped, probability p) or 1/(1-p). */
static void dropout_mask(real *keep, size_t n, real p, Rng *rng) {
    real scale = 1 / (1 - p);
    for (size_t i = 0; i < n; i++) keep[i] = rng_uniform(rng) < p ? 0 : scale;
}

/* Word dropout: scales each of the n rows of keep (width dim, filled with the element-wise
 * scales or with 1) by 0 (the whole token dropped, probability p) or 1/(1-p), one draw a row. */
static void word_dropout_mask(real *keep, size_t n, int dim, real p, Rng *rng) {
    real scale = 1 / (1 - p);
    for (size_t r = 0; r < n; r++) {
        real word = rng_uniform(rng) < p ? 0 : scale;
        for (int j = 0; j < dim; j++) keep[r * dim + j] *= word;
    }
}

/* Copies the batch's ids into time-major order. */
static void load_ids(Acts *a, const int *src, const int *src_len, int B, int S) {
    a->B = B, a->S = S;
    for (int b = 0; b < B; b++) {
        a->src_len[b] = src_len[b];
        for (int i = 0; i < S; i++) a->src_ids[(size_t)i * B + b] = src[(size_t)b * S + i];
    }
}

int model_encode(const Model *m, Acts *a, const int *src, const int *src_len, int B, int S,
                 Error *err) {
    if (B > a->max_B || S > a->max_S)
        return error_set(err, "batch %d x %d exceeds the planned %d x %d", B, S, a->max_B,
                         a->max_S);
    a->dropout = 0, a->word_dropout = 0;
    load_ids(a, src, src_len, B, S);
    if (m->quant && !a->enc_xq)
        return error_set(err, "an int8 model's activations need ActsPlan.int8");
    if (step_weight_copies(a, &m->dims, omp_get_max_threads(), err)) return -1;
    if (m->quant)
        encoder_forward_int8(m, a, B, S);
    else
        encoder_forward(m, a, B, S);
    return 0;
}

/* s_t from s_{t-1} for B rows: query, attention, the c_t part of the GRU input, GRU. st->gi
 * must hold W_ih[:, :E] u_t + b_ih on entry (layer-normalised: W_ih[:, :E] u_t, b_ih coming
 * after the normalisation). keys [B,S,F], enc_h [B,S,K], src_len [B];
 * scratch [B, 3D]. (Search computes the same step in another order: see search.h.) */
static void decoder_step_forward(const Model *m, const StepWeights *sw, const DecoderStep *st,
                                 const real *keys, const real *enc_h, const int *src_len,
                                 real *scratch, int B, int S) {
    const ModelDims *d = &m->dims;
    const Weights *w = &m->w;
    int K = dims_enc_state(d), D = d->dec_hidden, A = d->att;
    /* the query is the previous state */
    switch (d->score) {
    case SCORE_DOT: /* e_ti = s_{t-1} . h_i */
        attention_dot_forward(st->context, st->alpha, st->energy, st->s_prev, enc_h, src_len, B, S,
                              K);
        break;
    case SCORE_GENERAL: /* e_ti = s_{t-1} . k_i, k_i = W_a h_i */
        attention_general_forward(st->context, st->alpha, st->energy, st->s_prev, keys, enc_h,
                                  src_len, B, S, D, K);
        break;
    case SCORE_SCALED_DOT: /* e_ti = (W_q s_{t-1}) . k_i / sqrt(A), k_i = W_k h_i */
        gemm_packed(AS_STORED, B, st->s_prev, D, &sw->att_w_q, 0, st->query, A);
        attention_scaled_dot_forward(st->context, st->alpha, st->energy, st->query, keys, enc_h,
                                     src_len, B, S, A, K);
        break;
    default: /* additive: e_ti = v^T tanh(W_q s_{t-1} + k_i) */
        gemm_packed(AS_STORED, B, st->s_prev, D, &sw->att_w_q, 0, st->query, A);
        attention_forward(st->context, st->alpha, st->energy, st->hidden, st->query, keys, enc_h,
                          src_len, w->att_v, B, S, A, K);
    }
    /* s_t = GRU([u_t ; c_t], s_{t-1}): add the c_t part of the input projection */
    gemm_packed(AS_STORED, B, st->context, K, &sw->dec_w_ih_context, 1, st->gi, 3 * D);
    if (!d->layer_norm) {
        gru_step_forward(st->s, st->cache, scratch, st->gi, st->s_prev, &sw->dec_w_hh,
                         w->dec_gru.b_hh, NULL, 0, B, D);
        return;
    }
    /* layer-normalised: the whole W_ih [u_t ; c_t] is in gi now, so it can be normalised */
    GruNormCache norm = st->norm;
    normalise_input(st->gi, &norm, &w->dec_gru, 0, B, D);
    gru_step_forward_ln(st->s, st->cache, norm.xhat_h, norm.rstd_h, scratch, st->gi, st->s_prev,
                        &sw->dec_w_hh, w->dec_gru.g_hh, w->dec_gru.b_hh, NULL, 0, B, D);
}

/* Rows [running, B) have ended before step t (see Acts.running). Their step-t arrays are
 * set so that every later product over all T*B rows reads defined values: in the forward
 * pass zero s_t and c_t; in the backward pass zero dgi, dgh and dquery, so that the weight
 * gradients get nothing from them. */
static void ended_rows_forward(Acts *a, const ModelDims *d, int t, int running) {
    int ended = a->B - running;
    if (ended == 0) return;
    DecoderStep st = decoder_step(a, d, t, running);
    memset(st.s, 0, sizeof(real) * (size_t)ended * d->dec_hidden);
    memset(st.context, 0, sizeof(real) * (size_t)ended * dims_enc_state(d));
    memset(st.alpha, 0, sizeof(real) * (size_t)ended * a->S);
}

static void ended_rows_backward(Acts *a, const ModelDims *d, int t, int running) {
    int ended = a->B - running, D = d->dec_hidden;
    if (ended == 0) return;
    DecoderStep st = decoder_step(a, d, t, running);
    size_t row = (size_t)(t - 1) * a->B + running;
    memset(st.gi, 0, sizeof(real) * (size_t)ended * 3 * D);
    memset(a->d_gh + row * 3 * D, 0, sizeof(real) * (size_t)ended * 3 * D);
    memset(st.query, 0, sizeof(real) * (size_t)ended * dims_att_features(d));
}

/* ---- output layer and loss, a chunk of rows at a time ----------------------------------- */

/* Moves rows[0..n) of x (row stride ld, width values each) to rows 0..n-1, in order. rows[]
 * rises, so every row moves down or stays, and none is overwritten before it has moved. */
static void pack_rows(real *x, int ld, int width, const int *rows, int n) {
    for (int i = 0; i < n; i++)
        if (rows[i] != i)
            memmove(x + (size_t)i * ld, x + (size_t)rows[i] * ld, sizeof(real) * (size_t)width);
}

/* The inverse for whole rows: row i of x (n packed rows of width values) goes back to row
 * rows[i], from the last down, and the rows of [0, total) not in rows[] become zero. */
static void unpack_rows(real *x, int width, const int *rows, int n, int total) {
    int next = total; /* rows from here on are done */
    for (int i = n - 1; i >= 0; i--) {
        int r = rows[i];
        memset(x + (size_t)(r + 1) * width, 0, sizeof(real) * (size_t)(next - r - 1) * width);
        if (r != i) memmove(x + (size_t)r * width, x + (size_t)i * width, sizeof(real) * width);
        next = r;
    }
    memset(x, 0, sizeof(real) * (size_t)next * width);
}

/* The rows the readout and output layer compute, in out_row, and their targets. Padding rows
 * have no loss, so their o_t and z_t would only be computed to be zeroed (a quarter of the rows
 * of a batch of short sentences, and the output layer is most of a step's work). */
static void output_rows(Acts *a) {
    a->n_out = 0;
    for (int r = 0; r < a->T * a->B; r++)
        if (a->every_row || a->tgt_out[r] != TOK_PAD) {
            a->out_row[a->n_out] = r, a->out_tgt[a->n_out] = a->tgt_out[r];
            a->n_out++;
        }
}

/* The output layer's input, o_t after dropout, packed like out_row. */
static const real *output_input(const Acts *a) {
    return a->dropout > 0 ? a->readout_drop : a->readout;
}

/* W_out o_t for packed rows [r0, r0 + n), into the chunk buffer a->logits; the loss's pass
 * over them (xent_forward or xent_train) adds b_out to complete z_t. */
static void logits_forward(const Model *m, Acts *a, int r0, int n) {
    int O = m->dims.readout, V = m->dims.tgt_vocab;
    gemm(AS_STORED, TRANSPOSE, n, V, O, output_input(a) + (size_t)r0 * O, O, m->w.out_w, O, 0,
         a->logits, V);
}

/* Whether all packed rows are one chunk: their d loss / d z then stay in a->logits until
 * model_backward, which forms dW_out = dz^T o straight into the gradient (one pass over it,
 * where d_out_w took three more: written, read, added to the gradient). */
static int one_chunk(const Acts *a) {
    return a->n_out <= a->logit_rows;
}

/* dW_out (+)= dz^T o over packed rows [r0, r0 + n), their d loss / d z in a->logits, into
 * dw [Vt, O]: added when add, else stored. */
static void out_w_grad(const Model *m, const Acts *a, int r0, int n, int add, real *dw) {
    int O = m->dims.readout, V = m->dims.tgt_vocab;
    gemm(TRANSPOSE, AS_STORED, V, O, n, a->logits, V, output_input(a) + (size_t)r0 * O, O, add, dw,
         O);
}

/* The loss and gradients of packed rows [r0, r0 + n), whose z_t are in a->logits. loss = mean
 * cross-entropy: the logits become d loss / d z (and d_out_b += their sum). z = W_out o +
 * b_out: the rows' d loss / d o go to the same rows of d_readout (packed alike), and, unless
 * one_chunk, dW_out = dz^T o goes to d_out_w, added from the second chunk on. */
static void logits_backward(const Model *m, Acts *a, int r0, int n, double *loss_sum) {
    int O = m->dims.readout, V = m->dims.tgt_vocab;
    double unused = 0;
    xent_train(a->logits, m->w.out_b, a->lse + r0, a->out_tgt + r0, n, V, a->label_smoothing,
               (real)1 / a->n_tokens, loss_sum ? loss_sum : &unused, a->d_out_b, a->xent_parts,
               (double *)a->xent_nll);
    phase_end(a, PHASE_SOFTMAX);
    gemm(AS_STORED, AS_STORED, n, O, V, a->logits, V, m->w.out_w, O, 0,
         a->d_readout + (size_t)r0 * O, O);
    if (!one_chunk(a)) out_w_grad(m, a, r0, n, r0 > 0, a->d_out_w);
    phase_end(a, PHASE_LOGITS_GRAD);
}

/* Every chunk of the packed rows: z_t, then the loss added to *loss_sum (unless NULL), then
 * the gradients (when grads). Chunks go in row order, so the loss is summed in row order. */
static void output_layer(const Model *m, Acts *a, double *loss_sum, int grads) {
    int rows = a->n_out, V = m->dims.tgt_vocab;
    if (grads) memset(a->d_out_b, 0, sizeof(real) * (size_t)V);
    for (int r0 = 0; r0 < rows; r0 += a->logit_rows) {
        int n = rows - r0 < a->logit_rows ? rows - r0 : a->logit_rows;
        logits_forward(m, a, r0, n);
        phase_end(a, PHASE_LOGITS);
        if (grads)
            logits_backward(m, a, r0, n, loss_sum);
        else if (loss_sum)
            xent_forward(a->lse + r0, a->logits, m->w.out_b, a->out_tgt + r0, n, V,
                         a->label_smoothing, loss_sum);
        phase_end(a, PHASE_SOFTMAX);
    }
    a->out_grads_ready = grads;
}

/* y += x over n values */
static void add_into(real *y, const real *x, size_t n) {
#pragma omp parallel for if (worth_parallel((double)n, 65536)) schedule(static)
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

/* Appends to a->untouched the runs of rows of an embedding table (V rows of E at `offset` in
 * the gradient block) that none of the n ids is. */
static void add_untouched_rows(Acts *a, size_t offset, int V, int E, const int *ids, int n) {
    memset(a->row_used, 0, (size_t)V);
    for (int i = 0; i < n; i++) a->row_used[ids[i]] = 1;
    for (int r = 0; r < V;) {
        if (a->row_used[r]) {
            r++;
            continue;
        }
        int first = r;
        while (r < V && !a->row_used[r]) r++;
        a->untouched[a->n_untouched++] =
            (ParamSpan){offset + (size_t)first * E, offset + (size_t)r * E};
    }
}

/* a->untouched after a backward pass: the rows embedding_backward added nothing to, those of
 * the source ids (every position's, padding included) and of the n packed target inputs.
 * The table puts src_emb before tgt_emb (the spec's order), so the spans come out sorted. */
static void find_untouched_rows(const Model *m, Acts *a, int n) {
    const ModelDims *d = &m->dims;
    a->n_untouched = 0;
    add_untouched_rows(a, m->table.info[P_SRC_EMB].offset, d->src_vocab, d->emb, a->src_ids,
                       a->S * a->B);
    /* tied, the output layer's gradient reaches every row of tgt_emb */
    if (!m->table.tied)
        add_untouched_rows(a, m->table.info[P_TGT_EMB].offset, d->tgt_vocab, d->emb, a->tgt_in, n);
}

int model_forward(const Model *m, Acts *a, const Batch *batch, const ForwardOptions *opt,
                  double *loss, Error *err) {
    const ModelDims *d = &m->dims;
    const Weights *w = &m->w;
    int B = batch->B, S = batch->S, T = batch->T;
    int E = d->emb, K = dims_enc_state(d), D = d->dec_hidden, O = d->readout,
        F = dims_att_features(d), R = D + K + E;
    if (B > a->max_B || S > a->max_S || T > a->max_T)
        return error_set(err, "batch %d x %d x %d exceeds the planned %d x %d x %d", B, S, T,
                         a->max_B, a->max_S, a->max_T);
    if ((opt->dropout > 0 || opt->word_dropout > 0) && !opt->rng)
        return error_set(err, "dropout needs a random stream");
    if (!(opt->word_dropout >= 0 && opt->word_dropout < 1))
        return error_set(err, "word dropout %g is not in [0, 1)", (double)opt->word_dropout);
    if (m->quant && opt->dropout == 0 && opt->word_dropout == 0 && !a->enc_xq)
        return error_set(err, "an int8 model's activations need ActsPlan.int8");
    if (step_weight_copies(a, &m->dims, omp_get_max_threads(), err)) return -1;
    a->dropout = opt->dropout;
    a->word_dropout = opt->word_dropout;
    a->label_smoothing = opt->label_smoothing;
    load_ids(a, batch->src, batch->src_len, B, S);
    a->T = T;
    a->n_tokens = 0;
    memset(a->running, 0, sizeof(int) * (size_t)T);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int out = batch->tgt_out[(size_t)b * T + t];
            a->tgt_in[(size_t)t * B + b] = batch->tgt_in[(size_t)b * T + t];
            a->tgt_out[(size_t)t * B + b] = out;
            if (out != TOK_PAD) a->n_tokens++, a->running[t] = b + 1;
        }
    a->out_grads_ready = 0;
    if (a->n_tokens == 0) return error_set(err, "batch has no target tokens");
    if (a->dropout > 0) {
        dropout_mask(a->x_keep, (size_t)S * B * E, a->dropout, opt->rng);
        dropout_mask(a->u_keep, (size_t)T * B * E, a->dropout, opt->rng);
        dropout_mask(a->o_keep, (size_t)T * B * O, a->dropout, opt->rng);
    }
    /* word dropout draws after the element-wise masks, so that with it off the stream and
     * the masks are what they were without it */
    if (a->word_dropout > 0) {
        if (a->dropout == 0) {
            for (size_t i = 0; i < (size_t)S * B * E; i++) a->x_keep[i] = 1;
            for (size_t i = 0; i < (size_t)T * B * E; i++) a->u_keep[i] = 1;
        }
        word_dropout_mask(a->x_keep, (size_t)S * B, E, a->word_dropout, opt->rng);
        word_dropout_mask(a->u_keep, (size_t)T * B, E, a->word_dropout, opt->rng);
    }

    phase_start(a);
    /* an int8 model (force-decoding, --explain) encodes as its search does, so the h_i shown
     * are the ones the search attended to */
    if (m->quant && a->dropout == 0 && a->word_dropout == 0)
        encoder_forward_int8(m, a, B, S);
    else
        encoder_forward(m, a, B, S);
    phase_end(a, PHASE_ENCODER);

    /* u_t = tgt_emb[y_{t-1}], written straight into its place in [s_t ; c_t ; u_t]; its part
     * of the decoder input projection, W_ih[:, :E] u_t + b_ih, for each step's running rows
     * (the rows of ended sentences are never read): in the time loop, each thread for its own
     * rows, which then never leave its core; here for a step of fewer rows than
     * gemm_rows_summed_alike(), whose product may sum them otherwise. */
    const GruWeights *dg = &w->dec_gru;
    const real *b_ih = d->layer_norm ? NULL : dg->b_ih;
    real *u = a->readout_in + D + K;
    int alike = gemm_rows_summed_alike();
    embedding_forward(u, R, a->tgt_in, embedding_keep(a, a->u_keep), w->tgt_emb, T * B, E);
    for (int t = 0; t < T; t++)
        if (a->running[t] > 0 && a->running[t] < alike)
            linear_forward(a->dec_gi + (size_t)t * B * 3 * D, u + (size_t)t * B * R, R, dg->w_ih,
                           E + K, b_ih, a->running[t], E, 3 * D);
#pragma omp parallel num_threads(step_team(a))
    {
        const StepWeights *sw = pack_step_weights(m, a, ENCODER_WEIGHTS, STEP_WEIGHTS, TRANSPOSE);
        for (int t = 1; t <= T; t++) {
            int running = a->running[t - 1], b0, nb;
            share_rows(running, omp_get_thread_num(), omp_get_num_threads(), &b0, &nb);
            if (nb > 0) {
                DecoderStep st = decoder_step(a, d, t, b0);
                if (running >= alike) /* gi = W_ih[:, :E] u_t + b_ih */
                    linear_packed(st.gi, 3 * D, u + ((size_t)(t - 1) * B + b0) * R, R,
                                  &sw->dec_w_ih_input, b_ih, nb);
                decoder_step_forward(m, sw, &st, a->keys + (size_t)b0 * S * F,
                                     a->enc_h + (size_t)b0 * S * K, a->src_len + b0,
                                     a->scratch + (size_t)b0 * 3 * D, nb, S);
            }
            /* then the threads meet: the next step shares out fewer rows, so a row may change
             * threads */
            if (omp_get_thread_num() == 0) ended_rows_forward(a, d, t, running);
#pragma omp barrier
        }
    }

    phase_end(a, PHASE_DECODER);

    /* o_t = tanh(W_o [s_t ; c_t ; u_t] + b_o), all steps at once, for the output rows only
     * (padding has no loss): row i of readout_in becomes out_row[i]'s, and readout, its
     * dropout scales and the output layer are packed alike */
    output_rows(a);
    int n = a->n_out;
    pack_rows(u, R, E, a->out_row, n);
    if (a->dropout > 0) pack_rows(a->o_keep, O, O, a->out_row, n);
#pragma omp parallel for if (worth_parallel((double)n * (D + K), 65536)) schedule(static)
    for (int i = 0; i < n; i++) {
        real *row = a->readout_in + (size_t)i * R;
        int r = a->out_row[i];
        memcpy(row, a->dec_state + (size_t)(r + B) * D, sizeof(real) * (size_t)D);
        memcpy(row + D, a->context + (size_t)r * K, sizeof(real) * (size_t)K);
    }
    linear_forward(a->readout, a->readout_in, R, w->out_w_o, R, w->out_b_o, n, R, O);
    tanh_forward(a->readout, (size_t)n * O);
    if (a->dropout > 0) {
        memcpy(a->readout_drop, a->readout, sizeof(real) * (size_t)n * O);
        dropout_apply(a->readout_drop, a->o_keep, (size_t)n * O);
    }

    /* z_t = W_out o_t + b_out and the loss, a chunk of rows at a time; for training each
     * chunk's gradients at once, while its logits are at hand (see output_layer) */
    double sum = 0;
    phase_end(a, PHASE_READOUT);
    output_layer(m, a, &sum, !opt->forward_only);
    *loss = sum / a->n_tokens;
    return 0;
}

/* Step st's attention backward for the dot-product scores, for the nb rows from b0: given
 * d loss / d c_t, adds d loss / d s_{t-1} into carry, and the keys' and h_i's gradients into
 * d_keys and d_enc_h; for scaled_dot, st->query is left holding d loss / d (W_q s_{t-1}) for
 * W_q's gradient. (The additive score's is in model_backward.) */
static void attention_step_backward(const Model *m, Acts *a, const StepWeights *sw,
                                    const DecoderStep *st, real *carry, const real *d_context,
                                    int b0, int nb) {
    const ModelDims *d = &m->dims;
    int S = a->S, K = dims_enc_state(d), D = d->dec_hidden, A = d->att, F = dims_att_features(d);
    const real *keys = a->keys + (size_t)b0 * S * F, *enc_h = a->enc_h + (size_t)b0 * S * K;
    real *d_keys = a->d_keys + (size_t)b0 * S * F, *d_enc_h = a->d_enc_h + (size_t)b0 * S * K;
    const int *src_len = a->src_len + b0;
    switch (d->score) {
    case SCORE_DOT: /* e_ti = s_{t-1} . h_i */
        attention_dot_backward(st->query, st->energy, d_enc_h, d_context, st->alpha, st->s_prev,
                               enc_h, src_len, nb, S, K);
        break;
    case SCORE_GENERAL: /* e_ti = s_{t-1} . k_i */
        attention_general_backward(st->query, st->energy, d_keys, d_enc_h, d_context, st->alpha,
                                   st->s_prev, keys, enc_h, src_len, nb, S, D, K);
        break;
    default: /* scaled_dot: e_ti = q_t . k_i / sqrt(A), q_t = W_q s_{t-1} */
        attention_scaled_dot_backward(st->query, st->energy, d_keys, d_enc_h, d_context, st->alpha,
                                      st->query, keys, enc_h, src_len, nb, S, A, K);
        gemm_packed(AS_STORED, nb, st->query, A, &sw->att_w_q, 1, carry, D);
        return;
    }
    /* dot and general: the query is s_{t-1} itself */
    for (size_t j = 0; j < (size_t)nb * D; j++) carry[j] += st->query[j];
}

/* Step t's backward for rows [b0, b0 + nb), the mirror of decoder_step_forward: given the
 * carry d loss / d s_t from step t+1 and d_readout_in, leaves d loss / d s_{t-1} in the carry,
 * dgi in place of gi, dgh in d_gh, dquery in query, and adds attention's gradients into
 * d_keys, d_enc_h and d_att_v. */
static void decoder_step_backward(Model *m, Acts *a, const StepWeights *sw, int t, int b0, int nb) {
    const ModelDims *d = &m->dims;
    const Weights *w = &m->w;
    const GruWeights *dg = &w->dec_gru;
    int B = a->B, S = a->S, E = d->emb, K = dims_enc_state(d), D = d->dec_hidden, A = d->att,
        R = D + K + E;
    real *carry = a->carry + (size_t)b0 * D, *d_state = a->d_state + (size_t)b0 * D;
    real *d_context = a->d_context + (size_t)b0 * K;
    DecoderStep st = decoder_step(a, d, t, b0);
    size_t row = (size_t)(t - 1) * B + b0;
    const real *d_row = a->d_readout_in + row * R;
    real *dgi = st.gi, *dgh = a->d_gh + row * 3 * D;
    for (int b = 0; b < nb; b++)
        for (int j = 0; j < D; j++)
            d_state[(size_t)b * D + j] = carry[(size_t)b * D + j] + d_row[(size_t)b * R + j];
    const real *d_input = dgi; /* d loss / d (W_ih [u_t ; c_t]) */
    if (d->layer_norm) {
        /* the normalisations' input gradients into scratch; dgi and dgh stay the normalised
         * gi's and gh's for the gains' gradients after the time loop */
        real *scratch = a->scratch + (size_t)b0 * 3 * D;
        gru_step_backward_ln(carry, dgi, dgh, scratch, d_state, st.cache, st.norm.xhat_h,
                             st.norm.rstd_h, st.s_prev, &sw->dec_w_hh, dg->g_hh, NULL, 0, nb, D);
        /* forward was gi = g_ih * LN(W_ih [u_t ; c_t]) + b_ih */
        layernorm_backward(scratch, NULL, NULL, dgi, st.norm.xhat_i, st.norm.rstd_i, dg->g_ih, nb,
                           3 * D);
        d_input = scratch;
    } else
        gru_step_backward(carry, dgi, dgh, d_state, st.cache, st.s_prev, &sw->dec_w_hh, NULL, 0, nb,
                          D);
    /* c_t feeds the readout and the GRU input: dc = d_readout[c] + d_input W_ih[:, E:] */
    for (int b = 0; b < nb; b++)
        memcpy(d_context + (size_t)b * K, d_row + (size_t)b * R + D, sizeof(real) * (size_t)K);
    gemm_packed(AS_STORED, nb, d_input, 3 * D, &sw->dec_w_ih_context, 1, d_context, K);
    if (d->score != SCORE_ADDITIVE) {
        attention_step_backward(m, a, sw, &st, carry, d_context, b0, nb);
        return;
    }
    /* attention's hidden layer tanh(W_q s_{t-1} + k_i), unless kept: again (query still holds
     * W_q s_{t-1}; backward overwrites it with dquery), then its backward, which also adds each
     * sentence's de_ti hidden_ti to its row of d_att_v */
    if (!a->keep_attention)
        attention_hidden(st.hidden, st.query, a->keys + (size_t)b0 * S * A, a->src_len + b0, nb, S,
                         A);
    attention_backward(st.query, st.energy, a->d_keys + (size_t)b0 * S * A,
                       a->d_enc_h + (size_t)b0 * S * K, a->d_att_v + (size_t)b0 * A, d_context,
                       st.alpha, st.hidden, a->enc_h + (size_t)b0 * S * K, a->src_len + b0,
                       w->att_v, nb, S, A, K);
    /* query = W_q s_{t-1} */
    gemm_packed(AS_STORED, nb, st.query, A, &sw->att_w_q, 1, carry, D);
}

void model_backward(Model *m, Acts *a) {
    const ModelDims *d = &m->dims;
    const Weights *w = &m->w;
    Weights *g = &m->g;
    int B = a->B, S = a->S, T = a->T;
    int E = d->emb, K = dims_enc_state(d), D = d->dec_hidden, A = d->att, O = d->readout,
        V = d->tgt_vocab, R = D + K + E, F = dims_att_features(d);
    const GruWeights *dg = &w->dec_gru;
    GruWeights *gg = &g->dec_gru;
    m->grads_zero = false;

    /* loss and z = W_out o + b_out: the forward pass formed d loss / d o in d_readout and the
     * out.w, out.b gradients (unless it was forward_only: then they are formed now) */
    phase_start(a);
    if (!a->out_grads_ready) output_layer(m, a, NULL, 1);
    a->out_grads_ready = 0;
    if (one_chunk(a)) {
        out_w_grad(m, a, 0, a->n_out, 1, g->out_w);
        phase_end(a, PHASE_LOGITS_GRAD);
    } else
        add_into(g->out_w, a->d_out_w, (size_t)V * O);
    add_into(g->out_b, a->d_out_b, (size_t)V);
    /* o = dropout(tanh(W_o [s; c; u] + b_o)), on the packed output rows; then d_readout_in
     * goes back to the rows of the steps, which the time loop reads */
    int n = a->n_out;
    if (a->dropout > 0) dropout_apply(a->d_readout, a->o_keep, (size_t)n * O);
    tanh_backward(a->d_readout, a->readout, (size_t)n * O);
    /* d [s; c; u] = d_readout W_o, written by the product itself: zeroing it first is one
     * more pass, on one thread, over lines the other threads hold from the last step */
    gemm(AS_STORED, AS_STORED, n, R, O, a->d_readout, O, w->out_w_o, R, 0, a->d_readout_in, R);
    linear_backward(NULL, g->out_w_o, g->out_b_o, a->d_readout, a->readout_in, R, w->out_w_o, R, n,
                    R, O);
    unpack_rows(a->d_readout_in, R, a->out_row, n, T * B);

    phase_end(a, PHASE_READOUT_GRAD);

    /* back through time; the carry is d loss / d s_t flowing from step t+1 */
#pragma omp parallel num_threads(step_team(a))
    {
        const StepWeights *sw =
            pack_step_weights(m, a, ENCODER_WEIGHTS, DECODER_BACK_WEIGHTS, AS_STORED);
        /* the sums the steps add into start from zero, each thread zeroing the rows it will
         * write first when every sentence runs to the last step (zeroed by one thread, the
         * other threads' rows would be lines to hand over between the cores twice) */
        int z0, nz;
        share_rows(B, omp_get_thread_num(), omp_get_num_threads(), &z0, &nz);
        memset(a->d_enc_h + (size_t)z0 * S * K, 0, sizeof(real) * (size_t)nz * S * K);
        memset(a->d_keys + (size_t)z0 * S * F, 0, sizeof(real) * (size_t)nz * S * F);
        memset(a->d_att_v + (size_t)z0 * A, 0, sizeof(real) * (size_t)nz * A);
        memset(a->carry + (size_t)z0 * D, 0, sizeof(real) * (size_t)nz * D);
#pragma omp barrier
        for (int t = T; t >= 1; t--) {
            int running = a->running[t - 1], b0, nb;
            share_rows(running, omp_get_thread_num(), omp_get_num_threads(), &b0, &nb);
            if (nb > 0) decoder_step_backward(m, a, sw, t, b0, nb);
            /* then the threads meet: the previous step shares out more rows, so a row may
             * change threads */
            if (omp_get_thread_num() == 0) ended_rows_backward(a, d, t, running);
#pragma omp barrier
        }
    }

    phase_end(a, PHASE_DECODER_GRAD);

    /* weight gradients of all decoder steps at once (dgi, dgh, dquery and de are stored per
     * step; s_{t-1} of every step is the slab s_0 .. s_{T-1}), over the real tokens' rows
     * only: the rows of ended sentences have zero gradients, and in a batch of short
     * sentences they are a quarter of all. Packing them moves the forward values too, which
     * nothing reads after this. (readout_in's rows were packed by the forward pass.) */
    pack_rows(a->dec_gi, 3 * D, 3 * D, a->out_row, n);
    pack_rows(a->d_gh, 3 * D, 3 * D, a->out_row, n);
    int ln = d->layer_norm;
    if (ln) {
        GruNormCache *nc = &a->dec_norm;
        pack_rows(nc->xhat_i, 3 * D, 3 * D, a->out_row, n);
        pack_rows(nc->xhat_h, 3 * D, 3 * D, a->out_row, n);
        pack_rows(nc->rstd_i, 1, 1, a->out_row, n);
        pack_rows(nc->rstd_h, 1, 1, a->out_row, n);
        gru_norm_backward(a->dec_gi, a->d_gh, gg, nc, dg, n, D);
    }
    pack_rows(a->d_readout_in + D + K, R, E, a->out_row, n);
    pack_rows(a->dec_state, D, D, a->out_row, n);
    if (embedding_keep(a, a->u_keep)) pack_rows(a->u_keep, E, E, a->out_row, n);
    for (int i = 0; i < n; i++) a->tgt_in[i] = a->tgt_in[a->out_row[i]];
    real *du = a->d_readout_in + D + K;
    const real *u = a->readout_in + D + K;
    linear_backward(du, gg->w_ih, ln ? NULL : gg->b_ih, a->dec_gi, u, R, dg->w_ih, E + K, n, E,
                    3 * D);
    linear_backward(NULL, gg->w_ih + E, NULL, a->dec_gi, a->readout_in + D, R, dg->w_ih + E, E + K,
                    n, K, 3 * D);
    linear_backward(NULL, gg->w_hh, ln ? NULL : gg->b_hh, a->d_gh, a->dec_state, D, dg->w_hh, D, n,
                    D, 3 * D);
    if (d->score == SCORE_ADDITIVE || d->score == SCORE_SCALED_DOT) {
        pack_rows(a->query, F, A, a->out_row, n);
        linear_backward(NULL, g->att_w_q, NULL, a->query, a->dec_state, D, w->att_w_q, D, n, D, A);
    }
    /* e_ti = v . hidden_ti: dv = sum over t, b, i of de_ti hidden_ti, each sentence's sum (over
     * t and i) formed in the time loop; the sentences are added in order */
    if (d->score == SCORE_ADDITIVE)
        for (int b = 0; b < B; b++)
            for (int j = 0; j < A; j++) g->att_v[j] += a->d_att_v[(size_t)b * A + j];
    embedding_backward(g->tgt_emb, du, R, a->tgt_in, embedding_keep(a, a->u_keep), n, E);

    phase_end(a, PHASE_DECODER_WEIGHTS);
    encoder_backward(m, a);
    find_untouched_rows(m, a, n);
    phase_end(a, PHASE_ENCODER_GRAD);
}

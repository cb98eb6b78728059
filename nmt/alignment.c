/*
 * alignment.c: the alignment matrices of translations (see alignment.h).
 *
 * Matrices come from the model in two ways: copied from a search hypothesis, or read from
 * the activations of a teacher-forced model_forward on a batch of one pair (the same numbers
 * the gradient reference dump writes to acts/alpha.npy).
 */
#include "nmt/alignment.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer.h"
#include "nmt/text.h"

static const char END_TOKEN[] = "</s>";

/* ---- small helpers ---------------------------------------------------------------------- */

static int set_label(char **slot, const char *text, Error *err) {
    *slot = checked_strndup(text, strlen(text), "text", err);
    return *slot ? 0 : -1;
}

static void free_labels(char **labels, int n) {
    if (!labels) return;
    for (int i = 0; i < n; i++) free(labels[i]);
    free(labels);
}

/* ---- one sentence's alignment ----------------------------------------------------------- */

void alignment_free(Alignment *a) {
    free(a->alpha);
    free(a->energy);
    free(a->prob);
    free_labels(a->src_tokens, a->cols);
    free_labels(a->tgt_tokens, a->rows);
    free(a->source);
    free(a->reference);
    free(a->translation);
    memset(a, 0, sizeof *a);
}

/* Allocates a for rows output tokens and fills its source side from the source's tokens. */
static int alignment_alloc(Alignment *a, const NmtModel *nm, const char *source,
                           const TokenList *src, int rows, Error *err) {
    int cols = (int)src->count + 1;
    size_t cells = (size_t)rows * cols;
    memset(a, 0, sizeof *a);
    a->rows = rows, a->cols = cols, a->lowercase = nm->lowercase, a->subwords = nm->subwords;
    a->lossless = nm->lossless;
    a->score = nm->model.dims.score;
    a->alpha = checked_calloc(cells + 1, sizeof(real), "alignment", err);
    a->energy = checked_calloc(cells + 1, sizeof(real), "alignment", err);
    a->prob = checked_calloc((size_t)rows + 1, sizeof(real), "alignment", err);
    a->src_tokens = checked_calloc((size_t)cols, sizeof(char *), "labels", err);
    a->tgt_tokens = checked_calloc((size_t)rows + 1, sizeof(char *), "labels", err);
    a->source = checked_strndup(source, strlen(source), "text", err);
    int bad = !a->alpha || !a->energy || !a->prob || !a->src_tokens || !a->tgt_tokens || !a->source;
    for (int i = 0; i + 1 < cols && !bad; i++)
        bad = set_label(&a->src_tokens[i], src->tokens[i], err);
    if (!bad) bad = set_label(&a->src_tokens[cols - 1], END_TOKEN, err);
    if (bad) {
        alignment_free(a);
        return -1;
    }
    return 0;
}

int alignment_from_hypothesis(Alignment *a, const NmtModel *nm, const SourceText *source,
                              const Hypothesis *h, Error *err) {
    memset(a, 0, sizeof *a);
    if (source->n != h->src_len)
        return error_set(err, "the translation has %d source positions, the sentence %d",
                         h->src_len, source->n);
    int bad = alignment_alloc(a, nm, source->text, &source->units, h->rows, err);
    if (bad) return -1;
    a->complete = h->complete;
    size_t cells = (size_t)h->rows * h->src_len;
    memcpy(a->alpha, h->alpha, sizeof(real) * cells);
    memcpy(a->energy, h->energy, sizeof(real) * cells);
    memcpy(a->prob, h->prob, sizeof(real) * (size_t)h->rows);
    for (int t = 0; t < h->len && !bad; t++) {
        const char *token = vocab_token(&nm->tgt_vocab, h->tokens[t]);
        bad = set_label(&a->tgt_tokens[t], token ? token : "<unk>", err);
    }
    if (!bad && h->complete) bad = set_label(&a->tgt_tokens[h->len], END_TOKEN, err);
    if (!bad) a->translation = decode_hypothesis(nm, source, h, err);
    if (bad || !a->translation) {
        alignment_free(a);
        return -1;
    }
    return 0;
}

void step_trace_free(StepTrace *trace) {
    free(trace->block);
    memset(trace, 0, sizeof *trace);
}

/* ---- force-decoding --------------------------------------------------------------------- */

void forced_decoder_init(ForcedDecoder *fd, const NmtModel *nm) {
    memset(fd, 0, sizeof *fd);
    fd->nm = nm;
}

void forced_decoder_free(ForcedDecoder *fd) {
    if (fd->planned_src) acts_free(&fd->acts);
    memset(fd, 0, sizeof *fd);
}

/* Runs the model on one pair with teacher forcing, leaving the activations in fd->acts.
 * src has S ids ending in </s>; tgt has n ids without </s>. */
static int forced_run(ForcedDecoder *fd, const int *src, int S, const int *tgt, int n, Error *err) {
    const Model *m = &fd->nm->model;
    int T = n + 1;
    if (S > fd->planned_src || T > fd->planned_tgt) { /* grow the plan to this pair */
        int plan_src = S > fd->planned_src ? S : fd->planned_src;
        int plan_tgt = T > fd->planned_tgt ? T : fd->planned_tgt;
        if (fd->planned_src) acts_free(&fd->acts);
        fd->planned_src = fd->planned_tgt = 0;
        /* every step's logits and attention hidden layer stay for the trace */
        ActsPlan plan = {
            .logit_rows = ACTS_ALL_ROWS, .attention = ACTS_KEEP, .int8 = m->quant != NULL};
        if (acts_init_plan(&fd->acts, &m->dims, 1, plan_src, plan_tgt, &plan, err)) return -1;
        fd->planned_src = plan_src, fd->planned_tgt = plan_tgt;
    }
    int *tgt_in = checked_calloc(2 * (size_t)T, sizeof(int), "target ids", err);
    if (!tgt_in) return -1;
    int *tgt_out = tgt_in + T;
    tgt_in[0] = TOK_BOS;
    for (int t = 0; t < n; t++) tgt_in[t + 1] = tgt_out[t] = tgt[t];
    tgt_out[n] = TOK_EOS;
    Batch batch = {.B = 1,
                   .S = S,
                   .T = T,
                   .src = src,
                   .src_len = &S,
                   .tgt_in = tgt_in,
                   .tgt_out = tgt_out,
                   .tgt_len = &T};
    double loss;
    int rc = batch_validate(&batch, &m->dims, err) ||
                     model_forward(m, &fd->acts, &batch, &(ForwardOptions){.forward_only = 1},
                                   &loss, err)
                 ? -1
                 : 0;
    free(tgt_in);
    return rc;
}

static int trace_fill(StepTrace *trace, const Acts *acts, const Model *m, int rows, int cols,
                      Error *err) {
    const ModelDims *d = &m->dims;
    size_t D = d->dec_hidden, K = dims_enc_state(d), A = d->att, R = rows, S = cols;
    size_t F = dims_att_features(d);
    int additive = d->score == SCORE_ADDITIVE;
    size_t HA = additive ? A : 0; /* the hidden layer and v: additive only */
    *trace = (StepTrace){.rows = rows,
                         .cols = cols,
                         .D = (int)D,
                         .K = (int)K,
                         .A = (int)A,
                         .F = (int)F,
                         .score = d->score,
                         .int8 = m->quant != NULL};
    size_t total = R * D + R * F + S * F + R * S * HA + HA + R * K + S * K;
    trace->block = checked_calloc(total, sizeof(real), "step trace", err);
    if (!trace->block) return -1;
    trace->query = trace->block;
    trace->projected = trace->query + R * D;
    trace->keys = trace->projected + R * F;
    trace->hidden = additive ? trace->keys + S * F : NULL;
    trace->v = additive ? trace->hidden + R * S * A : NULL;
    trace->context = trace->keys + S * F + R * S * HA + HA;
    trace->enc_h = trace->context + R * K;
    /* a batch of one: row t of every time-major array is step t's; dec_state starts at s_0.
     * dot and general compare s_{t-1} itself; dot's keys are the h_i themselves */
    int plain_query = d->score == SCORE_DOT || d->score == SCORE_GENERAL;
    memcpy(trace->query, acts->dec_state, sizeof(real) * R * D);
    memcpy(trace->projected, plain_query ? acts->dec_state : acts->query, sizeof(real) * R * F);
    memcpy(trace->keys, d->score == SCORE_DOT ? acts->enc_h : acts->keys, sizeof(real) * S * F);
    if (additive) {
        memcpy(trace->hidden, acts->att_hidden, sizeof(real) * R * S * A);
        memcpy(trace->v, m->w.att_v, sizeof(real) * A);
    }
    memcpy(trace->context, acts->context, sizeof(real) * R * K);
    memcpy(trace->enc_h, acts->enc_h, sizeof(real) * S * K);
    return 0;
}

/* The shared part of force_align and force_align_ids; labels are the n target tokens. */
static int forced_alignment(ForcedDecoder *fd, const SourceText *source, const int *tgt, int n,
                            int complete, const char *const *labels, Alignment *out,
                            StepTrace *trace, Error *err) {
    const NmtModel *nm = fd->nm;
    const int *ids = source->ids;
    int S = source->n;
    memset(out, 0, sizeof *out);
    if (trace) memset(trace, 0, sizeof *trace);
    int rc = -1;
    if (S == 1) {
        error_set(err, "empty sentence, nothing to align");
        goto done;
    }
    if (S - 1 > NMT_MAX_TOKENS || n > NMT_MAX_TOKENS) {
        error_set(err, "the %s has %d tokens, more than the %d force-decoding takes",
                  S - 1 > NMT_MAX_TOKENS ? "source" : "target", S - 1 > NMT_MAX_TOKENS ? S - 1 : n,
                  NMT_MAX_TOKENS);
        goto done;
    }
    if (forced_run(fd, ids, S, tgt, n, err) ||
        alignment_alloc(out, nm, source->text, &source->units, n + complete, err))
        goto done;
    const Acts *acts = &fd->acts;
    int V = nm->model.dims.tgt_vocab, rows = n + complete;
    out->complete = complete;
    memcpy(out->alpha, acts->alpha, sizeof(real) * (size_t)rows * S);
    memcpy(out->energy, acts->energy, sizeof(real) * (size_t)rows * S);
    for (int t = 0; t < rows; t++) {
        int y = t < n ? tgt[t] : TOK_EOS;
        out->prob[t] = (real)exp((double)acts->logits[(size_t)t * V + y] - acts->lse[t]);
    }
    int bad = 0;
    for (int t = 0; t < n && !bad; t++) bad = set_label(&out->tgt_tokens[t], labels[t], err);
    if (!bad && complete) bad = set_label(&out->tgt_tokens[n], END_TOKEN, err);
    if (!bad) out->translation = nmt_join_target(nm, labels, n, err);
    if (bad || !out->translation || (trace && trace_fill(trace, acts, &nm->model, rows, S, err)))
        goto done;
    rc = 0;
done:
    if (rc) alignment_free(out);
    return rc;
}

int force_align(ForcedDecoder *fd, const char *source, const char *target, Alignment *out,
                StepTrace *trace, Error *err) {
    TokenList tgt = {0};
    memset(out, 0, sizeof *out);
    size_t offset;
    uint32_t control;
    if (nmt_units(fd->nm, target, true, &tgt, err)) return error_prefix(err, "target: ");
    if (utf8_find_control(target, strlen(target), &offset, &control)) {
        token_list_free(&tgt);
        return error_set(err, "target: control character U+%04X at byte %zu", (unsigned)control,
                         offset);
    }
    if (tgt.count == 0) return error_set(err, "empty target, nothing to force-decode");
    if (tgt.count > NMT_MAX_TOKENS) {
        size_t count = tgt.count;
        token_list_free(&tgt);
        return error_set(err, "the target has %zu tokens, more than the %d force-decoding takes",
                         count, NMT_MAX_TOKENS);
    }
    int *ids = checked_calloc(tgt.count, sizeof(int), "target ids", err);
    SourceText src;
    int rc = -1;
    if (ids && source_encode(fd->nm, source, &src, err) == 0) {
        vocab_encode(&fd->nm->tgt_vocab, &tgt, ids);
        rc = forced_alignment(fd, &src, ids, (int)tgt.count, 1, (const char *const *)tgt.tokens,
                              out, trace, err);
        source_free(&src);
    }
    if (rc == 0 && !(out->reference = checked_strndup(target, strlen(target), "text", err))) {
        alignment_free(out);
        if (trace) step_trace_free(trace);
        rc = -1;
    }
    free(ids);
    token_list_free(&tgt);
    return rc;
}

int force_align_ids(ForcedDecoder *fd, const SourceText *source, const int *target, int n,
                    int complete, Alignment *out, StepTrace *trace, Error *err) {
    memset(out, 0, sizeof *out);
    const char **labels = checked_calloc((size_t)n + 1, sizeof(char *), "labels", err);
    if (!labels) return -1;
    for (int t = 0; t < n; t++) {
        labels[t] = vocab_token(&fd->nm->tgt_vocab, target[t]);
        if (!labels[t]) {
            free(labels);
            return error_set(err, "target id %d is not in the vocabulary", target[t]);
        }
    }
    int rc = forced_alignment(fd, source, target, n, complete, labels, out, trace, err);
    const NmtModel *nm = fd->nm;
    if (rc == 0 && !nm->subwords && !nm->keep_unk) {
        /* ids are the model's own output: its text replaces <unk> as decode_hypothesis does
         * (the token labels keep <unk>, which is what the model produced) */
        unk_replace(labels, target, n, out->alpha, out->cols, (const char *const *)out->src_tokens);
        char *text = nmt_join_target(nm, labels, n, err);
        if (!text) {
            alignment_free(out);
            if (trace) step_trace_free(trace);
            rc = -1;
        } else {
            free(out->translation);
            out->translation = text;
        }
    }
    free(labels);
    return rc;
}

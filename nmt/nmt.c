/*
 * nmt.c: the public API (see nmt.h) over the library's translator, alignments and forced
 * decoder. It converts between the library's types and the plain ones of the header.
 */
#include "nmt/nmt.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nmt/alignment.h"
#include "nmt/translator.h"

enum { CHUNK = 32 }; /* sentences searched together */

struct nmt_model {
    NmtModel nm;
    Translator translator; /* planned for the options of the last call */
    SearchOptions planned; /* those options; beam 0 before the first translation */
    ForcedDecoder forced;
};

static void copy_error(nmt_error *out, const Error *e) {
    if (out) snprintf(out->message, sizeof out->message, "%s", e->msg);
}

static int fail(nmt_error *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(nmt_error *out, const char *fmt, ...) {
    if (out) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(out->message, sizeof out->message, fmt, ap);
        va_end(ap);
    }
    return -1;
}

nmt_model *nmt_open(const char *path, nmt_error *err) {
    return nmt_open_with(path, NULL, err);
}

nmt_model *nmt_open_with(const char *path, const nmt_open_options *options, nmt_error *err) {
    if (!path) return fail(err, "nmt_open: no path"), NULL;
    nmt_compute_type compute = options ? options->compute : NMT_COMPUTE_AS_STORED;
    if (compute != NMT_COMPUTE_AS_STORED && compute != NMT_COMPUTE_FLOAT &&
        compute != NMT_COMPUTE_INT8)
        return fail(err, "nmt_open: unknown compute type %d", (int)compute), NULL;
    nmt_model *m = calloc(1, sizeof *m);
    if (!m) return fail(err, "nmt_open: out of memory"), NULL;
    Error e;
    ComputeType type = compute == NMT_COMPUTE_INT8    ? COMPUTE_INT8
                       : compute == NMT_COMPUTE_FLOAT ? COMPUTE_FLOAT
                                                      : COMPUTE_AS_STORED;
    if (checkpoint_load(path, &m->nm, NULL, NULL, &e) || nmt_model_set_compute(&m->nm, type, &e) ||
        translator_probe(&m->nm, path, &e)) {
        copy_error(err, &e);
        nmt_model_free(&m->nm);
        free(m);
        return NULL;
    }
    forced_decoder_init(&m->forced, &m->nm);
    return m;
}

void nmt_close(nmt_model *m) {
    if (!m) return;
    translator_free(&m->translator);
    forced_decoder_free(&m->forced);
    nmt_model_free(&m->nm);
    free(m);
}

/* ---- conversions ---- */

static char *copy_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy) memcpy(copy, s, n);
    return copy;
}

static char **copy_strings(char *const *items, int n) {
    char **copy = calloc((size_t)n + 1, sizeof *copy);
    for (int i = 0; copy && i < n; i++)
        if (!(copy[i] = copy_string(items[i]))) {
            for (int k = 0; k < i; k++) free(copy[k]);
            free(copy);
            return NULL;
        }
    return copy;
}

static void hypothesis_free(nmt_hypothesis *h) {
    free(h->text);
    for (int i = 0; h->tgt_tokens && i < h->rows; i++) free(h->tgt_tokens[i]);
    for (int i = 0; h->src_tokens && i < h->cols; i++) free(h->src_tokens[i]);
    free(h->tgt_tokens), free(h->src_tokens), free(h->alignment), free(h->token_prob);
    memset(h, 0, sizeof *h);
}

/* The public form of an alignment (its text, tokens, weights and probabilities). */
static int hypothesis_from_alignment(nmt_hypothesis *h, const Alignment *a, const char *text) {
    memset(h, 0, sizeof *h);
    size_t cells = (size_t)a->rows * a->cols;
    h->rows = a->rows, h->cols = a->cols;
    h->text = copy_string(text);
    h->tgt_tokens = copy_strings(a->tgt_tokens, a->rows);
    h->src_tokens = copy_strings(a->src_tokens, a->cols);
    h->alignment = calloc(cells + 1, sizeof *h->alignment);
    h->token_prob = calloc((size_t)a->rows + 1, sizeof *h->token_prob);
    if (!h->text || !h->tgt_tokens || !h->src_tokens || !h->alignment || !h->token_prob) {
        if (!h->tgt_tokens) h->rows = 0;
        if (!h->src_tokens) h->cols = 0;
        hypothesis_free(h);
        return -1;
    }
    for (size_t i = 0; i < cells; i++) h->alignment[i] = a->alpha[i];
    for (int t = 0; t < a->rows; t++) h->token_prob[t] = a->prob[t];
    return 0;
}

/* ---- translation ---- */

static SearchOptions search_options(const nmt_options *o) {
    SearchOptions s = {.beam = NMT_DEFAULT_BEAM, .nbest = 1, .len_norm = 1.0};
    if (!o) return s;
    if (o->beam > 0) s.beam = o->beam;
    if (o->nbest > 1) s.nbest = o->nbest;
    if (o->max_len > 0) s.max_len = o->max_len;
    /* 0 must mean the default, 1: a zeroed struct is the defaults, and a beam search without
     * length normalisation prefers short hypotheses */
    if (o->len_norm > 0) s.len_norm = o->len_norm;
    if (o->len_norm < 0) s.len_norm = 0;
    return s;
}

/* The translator for these options: the last one when they are the same. */
static int use_options(nmt_model *m, const SearchOptions *opt, Error *e) {
    if (m->planned.beam && memcmp(&m->planned, opt, sizeof *opt) == 0) return 0;
    translator_free(&m->translator);
    m->planned.beam = 0;
    if (translator_init(&m->translator, &m->nm, CHUNK, opt, e)) return -1;
    m->planned = *opt;
    return 0;
}

/* One input's result from the translator's. */
static int fill_translation(nmt_model *m, const TranslatedText *x, nmt_translation *out, Error *e) {
    memset(out, 0, sizeof *out);
    if (x->refused) {
        out->refused = 1;
        snprintf(out->reason, sizeof out->reason, "%s", x->error.msg);
        return 0;
    }
    out->unfamiliar = x->unfamiliar;
    out->hyps = calloc((size_t)x->best.count + 1, sizeof *out->hyps);
    if (!out->hyps) return error_set(e, "out of memory");
    for (int k = 0; k < x->best.count; k++) {
        const Hypothesis *h = &x->best.hyps[k];
        Alignment a;
        if (alignment_from_hypothesis(&a, &m->nm, &x->source, h, e)) return -1;
        int bad = hypothesis_from_alignment(&out->hyps[k], &a, a.translation);
        alignment_free(&a);
        if (bad) return error_set(e, "out of memory");
        out->hyps[k].logprob = h->logprob, out->hyps[k].score = h->score;
        out->count = k + 1;
    }
    return 0;
}

int nmt_translate(nmt_model *m, const char *const *sources, int n, const nmt_options *options,
                  nmt_translation *out, nmt_error *err) {
    if (!m || (n > 0 && (!sources || !out))) return fail(err, "nmt_translate: NULL argument");
    if (n < 0) return fail(err, "nmt_translate: %d sentences", n);
    for (int i = 0; i < n; i++)
        if (!sources[i]) return fail(err, "nmt_translate: source %d is NULL", i);
    if (options && (options->beam < 0 || options->beam > NMT_MAX_BEAM))
        return fail(err, "nmt_translate: beam %d is outside 0..%d", options->beam, NMT_MAX_BEAM);
    if (options && (options->nbest < 0 || options->nbest > NMT_MAX_BEAM))
        return fail(err, "nmt_translate: nbest %d is outside 0..%d", options->nbest, NMT_MAX_BEAM);
    if (options && (options->max_len < 0 || options->max_len > NMT_MAX_OUTPUT_LEN))
        return fail(err, "nmt_translate: max_len %d is outside 0..%d", options->max_len,
                    NMT_MAX_OUTPUT_LEN);
    if (options && !(isfinite(options->len_norm) && options->len_norm <= NMT_MAX_LEN_NORM))
        return fail(err, "nmt_translate: len_norm %g is not a number of at most %d",
                    options->len_norm, NMT_MAX_LEN_NORM);
    if (n > 0) memset(out, 0, sizeof *out * (size_t)n); /* out may be NULL when n = 0 */
    SearchOptions opt = search_options(options);
    m->nm.keep_unk = options && options->keep_unk;
    Error e;
    if (use_options(m, &opt, &e)) {
        error_prefix(&e, "nmt_translate: ");
        return copy_error(err, &e), -1;
    }
    TranslatedText found[CHUNK];
    for (int first = 0; first < n; first += CHUNK) {
        int count = n - first < CHUNK ? n - first : CHUNK;
        int rc = translator_run(&m->translator, sources + first, count, found, &e);
        if (rc == 0) {
            for (int i = 0; i < count && rc == 0; i++)
                rc = fill_translation(m, &found[i], &out[first + i], &e);
            translated_free(found, count);
        }
        if (rc) {
            nmt_translation_free(out, n);
            return copy_error(err, &e), -1;
        }
    }
    return 0;
}

void nmt_translation_free(nmt_translation *out, int n) {
    for (int i = 0; out && i < n; i++) {
        for (int k = 0; k < out[i].count; k++) hypothesis_free(&out[i].hyps[k]);
        free(out[i].hyps);
        memset(&out[i], 0, sizeof out[i]);
    }
}

/* ---- scoring ---- */

int nmt_score(nmt_model *m, const char *const *sources, const char *const *targets, int n,
              nmt_score_result *out, nmt_error *err) {
    if (!m || (n > 0 && (!sources || !targets || !out)))
        return fail(err, "nmt_score: NULL argument");
    if (n < 0) return fail(err, "nmt_score: %d pairs", n);
    for (int i = 0; i < n; i++)
        if (!sources[i] || !targets[i]) return fail(err, "nmt_score: pair %d has a NULL side", i);
    if (n > 0) memset(out, 0, sizeof *out * (size_t)n); /* out may be NULL when n = 0 */
    for (int i = 0; i < n; i++) {
        Alignment a;
        Error e;
        if (force_align(&m->forced, sources[i], targets[i], &a, NULL, &e)) {
            out[i].refused = 1;
            snprintf(out[i].reason, sizeof out[i].reason, "%s", e.msg);
            continue;
        }
        int bad = hypothesis_from_alignment(&out[i].forced, &a, targets[i]);
        double logprob = 0;
        for (int t = 0; !bad && t < a.rows; t++) logprob += log((double)a.prob[t]);
        alignment_free(&a);
        if (bad) {
            nmt_score_free(out, n);
            return fail(err, "nmt_score: out of memory");
        }
        out[i].logprob = out[i].forced.logprob = out[i].forced.score = logprob;
    }
    return 0;
}

void nmt_score_free(nmt_score_result *out, int n) {
    for (int i = 0; out && i < n; i++) {
        hypothesis_free(&out[i].forced);
        memset(&out[i], 0, sizeof out[i]);
    }
}

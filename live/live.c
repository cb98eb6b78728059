/*
 * live.c: the translation library as seen from the live attention page (make wasm compiles
 * it with the library into one WebAssembly module; make live puts that module and a model
 * into live.html). The page passes a checkpoint's bytes and texts in, and reads back JSON:
 * each hypothesis of the search with its tokens, its alignment and each token's probability
 * (the numbers bin/align prints for the same model and sentence), and the vectors behind
 * every step (nmt/alignment.h, StepTrace), from which the page works a cell out as the notes
 * do. Nothing here computes a model's number: the search, the forced decoder and the trace
 * are the library's, and this file only writes what they return. A quantized checkpoint
 * (bin/quantize, format 4) opens as an int8 model: the search multiplies with its 8-bit
 * weights as bin/align does, and the forced decoder, as for --explain, computes the decoder's
 * vectors in float from the weights' values.
 *
 * Every function takes the handle from live_open; a result string belongs to the handle and
 * stays valid until its next call. Errors are JSON too ({"error": "..."}), never a crash.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nmt/alignment.h"
#include "nmt/pictures/markup.h"
#include "nmt/translator.h"

typedef struct {
    NmtModel nm;
    bool loaded;
    Translator translator; /* planned for `planned` (beam 0: none yet) */
    SearchOptions planned;
    ForcedDecoder forced;
    char *result; /* the last answer, JSON */
    size_t result_size;
} LiveModel;

enum { LIVE_MAX_BEAM = 16 }; /* the page offers up to this many hypotheses */

/* ---- answers ---------------------------------------------------------------------------- */

static void numbers(FILE *out, const real *v, size_t n) {
    fputc('[', out);
    for (size_t i = 0; i < n; i++) {
        if (i) fputc(',', out);
        if (isfinite(v[i]))
            fprintf(out, "%.*g", REAL_DIGITS, (double)v[i]);
        else
            fputs("null", out); /* JSON has no infinity: padding, or a weight of exactly 0 */
    }
    fputc(']', out);
}

/* The vectors of every step (alignment.h, StepTrace), and the forced decoder's own scores,
 * weights and probabilities, so that the worked steps use one set of numbers throughout. */
static void write_trace(FILE *out, const Alignment *forced, const StepTrace *tr) {
    size_t rows = (size_t)tr->rows, cols = (size_t)tr->cols;
    fprintf(out, "{\"D\":%d,\"K\":%d,\"A\":%d,\"F\":%d,\"query\":", tr->D, tr->K, tr->A, tr->F);
    numbers(out, tr->query, rows * tr->D);
    fputs(",\"projected\":", out);
    numbers(out, tr->projected, rows * tr->F);
    fputs(",\"keys\":", out);
    numbers(out, tr->keys, cols * tr->F);
    fputs(",\"hidden\":", out);
    if (tr->hidden)
        numbers(out, tr->hidden, rows * cols * tr->A);
    else
        fputs("null", out);
    fputs(",\"v\":", out);
    if (tr->v)
        numbers(out, tr->v, (size_t)tr->A);
    else
        fputs("null", out);
    fputs(",\"context\":", out);
    numbers(out, tr->context, rows * tr->K);
    fputs(",\"enc_h\":", out);
    numbers(out, tr->enc_h, cols * tr->K);
    fputs(",\"energy\":", out);
    numbers(out, forced->energy, rows * cols);
    fputs(",\"alpha\":", out);
    numbers(out, forced->alpha, rows * cols);
    fputs(",\"prob\":", out);
    numbers(out, forced->prob, rows);
    fputc('}', out);
}

/* One hypothesis: a's tokens and matrices (search or forced), then the trace. */
static void write_hypothesis(FILE *out, const Alignment *a, double logprob, double score,
                             const Alignment *forced, const StepTrace *tr) {
    fputs("{\"text\":", out);
    json_write_string(out, a->translation);
    fprintf(out, ",\"logprob\":%.17g,\"score\":%.17g,\"complete\":%d,\"rows\":%d,\"cols\":%d",
            logprob, score, a->complete ? 1 : 0, a->rows, a->cols);
    fputs(",\"src\":", out);
    json_write_string_list(out, a->src_tokens, a->cols, ",");
    fputs(",\"tgt\":", out);
    json_write_string_list(out, a->tgt_tokens, a->rows, ",");
    fputs(",\"alpha\":", out);
    numbers(out, a->alpha, (size_t)a->rows * a->cols);
    fputs(",\"energy\":", out);
    numbers(out, a->energy, (size_t)a->rows * a->cols);
    fputs(",\"prob\":", out);
    numbers(out, a->prob, (size_t)a->rows);
    fputs(",\"trace\":", out);
    write_trace(out, forced, tr);
    fputc('}', out);
}

/* Starts an answer in the handle's buffer (the previous one is freed). */
static FILE *answer_open(LiveModel *lm) {
    free(lm->result);
    lm->result = NULL, lm->result_size = 0;
    return open_memstream(&lm->result, &lm->result_size);
}

/* Ends the answer; when writing it failed, the answer is an error (a static string). */
static const char *answer_close(LiveModel *lm, FILE *out) {
    bool bad = !out || ferror(out);
    if (out && fclose(out)) bad = true;
    if (bad) {
        free(lm->result);
        lm->result = NULL;
        return "{\"error\":\"out of memory while writing the answer\"}";
    }
    return lm->result;
}

static const char *answer_error(LiveModel *lm, const char *message) {
    FILE *out = answer_open(lm);
    if (out) {
        fputs("{\"error\":", out);
        json_write_string(out, message);
        fputc('}', out);
    }
    return answer_close(lm, out);
}

static const char *answer_refused(LiveModel *lm, const char *reason) {
    FILE *out = answer_open(lm);
    if (out) {
        fputs("{\"refused\":", out);
        json_write_string(out, reason);
        fputs(",\"hyps\":[]}", out);
    }
    return answer_close(lm, out);
}

/* ---- the page's calls ------------------------------------------------------------------- */

/* A handle for the checkpoint in bytes[0..size); NULL only when out of memory. When the bytes
 * are not a model, live_info says why. */
LiveModel *live_open(const unsigned char *bytes, int size) {
    LiveModel *lm = calloc(1, sizeof *lm);
    if (!lm) return NULL;
    Error e;
    if (size <= 0 ||
        checkpoint_load_memory(bytes, (size_t)size, "the page's model", &lm->nm, NULL, NULL, &e)) {
        answer_error(lm, size <= 0 ? "the page holds no model" : e.msg);
        return lm;
    }
    lm->loaded = true;
    forced_decoder_init(&lm->forced, &lm->nm);
    return lm;
}

void live_close(LiveModel *lm) {
    if (!lm) return;
    if (lm->loaded) {
        if (lm->planned.beam) translator_free(&lm->translator);
        forced_decoder_free(&lm->forced);
        nmt_model_free(&lm->nm);
    }
    free(lm->result);
    free(lm);
}

/* The model's sizes and score, and whether its weights are 8-bit (a checkpoint bin/quantize
 * wrote opens as an int8 model, which the search runs with int8 products), or why it could
 * not be opened. */
const char *live_info(LiveModel *lm) {
    if (!lm->loaded) return lm->result ? lm->result : "{\"error\":\"no model\"}";
    const ModelDims *d = &lm->nm.model.dims;
    FILE *out = answer_open(lm);
    if (out)
        fprintf(out,
                "{\"score\":\"%s\",\"src_vocab\":%d,\"tgt_vocab\":%d,\"E\":%d,\"K\":%d,"
                "\"D\":%d,\"A\":%d,\"O\":%d,\"lowercase\":%d,\"subwords\":%d,"
                "\"max_tokens\":%d,\"max_beam\":%d,\"int8\":%d}",
                score_name(d->score), d->src_vocab, d->tgt_vocab, d->emb,
                d->enc_hidden * (d->bidirectional ? 2 : 1), d->dec_hidden, d->att, d->readout,
                lm->nm.lowercase ? 1 : 0, lm->nm.subwords ? 1 : 0, NMT_MAX_TOKENS, LIVE_MAX_BEAM,
                lm->nm.model.quant ? 1 : 0);
    return answer_close(lm, out);
}

/* The translator for these options: the last one when they are the same. */
static int use_options(LiveModel *lm, const SearchOptions *opt, Error *e) {
    if (lm->planned.beam && memcmp(&lm->planned, opt, sizeof *opt) == 0) return 0;
    if (lm->planned.beam) translator_free(&lm->translator);
    lm->planned.beam = 0;
    if (translator_init(&lm->translator, &lm->nm, 1, opt, e)) return -1;
    lm->planned = *opt;
    return 0;
}

/* Writes hypothesis h of source: the search's alignment, and the trace of the same tokens
 * fed back in (as bin/align --explain does). */
static int write_searched(LiveModel *lm, FILE *out, const SourceText *source, const Hypothesis *h,
                          Error *e) {
    Alignment a, forced;
    StepTrace trace;
    if (alignment_from_hypothesis(&a, &lm->nm, source, h, e)) return -1;
    if (force_align_ids(&lm->forced, source, h->tokens, h->len, h->complete, &forced, &trace, e)) {
        alignment_free(&a);
        return -1;
    }
    write_hypothesis(out, &a, h->logprob, h->score, &forced, &trace);
    alignment_free(&a);
    alignment_free(&forced);
    step_trace_free(&trace);
    return 0;
}

/* Translates text with a beam of `beam` (1: greedy), returning the nbest best. */
const char *live_translate(LiveModel *lm, const char *text, int beam, int nbest) {
    if (!lm->loaded) return live_info(lm);
    if (beam < 1 || beam > LIVE_MAX_BEAM || nbest < 1 || nbest > beam)
        return answer_error(lm, "beam must be 1 to 16 and n-best 1 to the beam");
    SearchOptions opt = {.beam = beam, .nbest = nbest, .len_norm = 1.0};
    Error e;
    TranslatedText found;
    if (use_options(lm, &opt, &e) || translator_run(&lm->translator, &text, 1, &found, &e))
        return answer_error(lm, e.msg);
    if (found.refused) {
        const char *answer = answer_refused(lm, found.error.msg);
        translated_free(&found, 1);
        return answer;
    }
    FILE *out = answer_open(lm);
    int rc = out ? 0 : error_set(&e, "out of memory");
    if (rc == 0) fprintf(out, "{\"refused\":null,\"unknown\":%d,\"hyps\":[", found.unknown);
    for (int k = 0; k < found.best.count && rc == 0; k++) {
        if (k) fputc(',', out);
        rc = write_searched(lm, out, &found.source, &found.best.hyps[k], &e);
    }
    translated_free(&found, 1);
    if (rc) {
        if (out) fclose(out);
        return answer_error(lm, e.msg);
    }
    fputs("]}", out);
    return answer_close(lm, out);
}

/* Force-decodes target (tokenized like the training data) as the translation of text. */
const char *live_force(LiveModel *lm, const char *text, const char *target) {
    if (!lm->loaded) return live_info(lm);
    Alignment a;
    StepTrace trace;
    Error e;
    if (force_align(&lm->forced, text, target, &a, &trace, &e)) return answer_refused(lm, e.msg);
    double logprob = 0;
    for (int t = 0; t < a.rows; t++) logprob += log((double)a.prob[t]);
    FILE *out = answer_open(lm);
    if (out) {
        fputs("{\"refused\":null,\"hyps\":[", out);
        write_hypothesis(out, &a, logprob, logprob, &a, &trace);
        fputs("]}", out);
    }
    alignment_free(&a);
    step_trace_free(&trace);
    return answer_close(lm, out);
}

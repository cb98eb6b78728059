/*
 * translator.c: checking, encoding and searching a chunk of sentences (see translator.h).
 */
#include "nmt/translator.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "nmt/text.h"

int nmt_max_output_len(int src_len) {
    return 2 * src_len + 10;
}

int translator_init(Translator *t, const NmtModel *nm, int max_sentences, const SearchOptions *opt,
                    Error *err) {
    memset(t, 0, sizeof *t);
    if (max_sentences < 1) return error_set(err, "a translator needs room for one sentence");
    if (opt->nbest > opt->beam)
        return error_set(err, "%d best translations need a beam of at least %d", opt->nbest,
                         opt->nbest);
    t->nm = nm, t->max_sentences = max_sentences, t->opt = *opt;
    /* with one thread there is nothing to choose, nor to measure (nor a /proc/stat to read, in
     * the WebAssembly build) */
    LoadSample now = {0};
    int most = omp_get_max_threads();
    if (most > 1) load_sample(&now);
    thread_choice_init(&t->threads, most, &now);
    return 0;
}

void translator_free(Translator *t) {
    search_free(&t->searcher);
    memset(t, 0, sizeof *t);
}

/* Makes the searcher hold sources of src_len ids (and the outputs they may need). */
static int plan_search(Translator *t, int src_len, Error *err) {
    if (src_len <= t->planned_src) return 0;
    /* grow in steps, so a rising series of lengths does not re-plan every call */
    int plan = src_len < 32 ? 32 : src_len;
    if (plan > NMT_MAX_TOKENS + 1) plan = NMT_MAX_TOKENS + 1;
    int max_len = t->opt.max_len ? t->opt.max_len : nmt_max_output_len(plan);
    search_free(&t->searcher);
    t->planned_src = 0;
    if (search_init(&t->searcher, &t->nm->model.dims, t->max_sentences, plan, t->opt.beam, max_len,
                    err))
        return -1;
    t->planned_src = plan;
    return 0;
}

/* search_translate on the threads that t->threads chooses, the caller's count restored after;
 * the search's pace in source tokens a second chooses the next one's. */
static int search_on_chosen_threads(Translator *t, const int *const *src, const int *lens, int n,
                                    const SearchOptions *opt, Translation *found, Error *err) {
    if (t->threads.most <= 1)
        return search_translate(&t->searcher, &t->nm->model, src, lens, n, opt, found, err);
    LoadSample start, end;
    load_sample(&start);
    int callers = omp_get_max_threads();
    if (!t->next_threads) t->next_threads = thread_choice_start(&t->threads, &start);
    omp_set_num_threads(t->next_threads);
    int rc = search_translate(&t->searcher, &t->nm->model, src, lens, n, opt, found, err);
    omp_set_num_threads(callers);
    load_sample(&end);
    double tokens = 0;
    for (int i = 0; i < n; i++) tokens += lens[i];
    t->next_threads = thread_choice_step(&t->threads, tokens, end.wall - start.wall, &end);
    return rc;
}

/* Finite weights can still overflow in the arithmetic (huge embeddings or output weights):
 * the probabilities turn NaN, no hypothesis survives the search, and the output would be a
 * silent blank. */
static const char NON_FINITE[] = "the model's probabilities are not finite numbers (its weights "
                                 "overflow), so there is no translation";

/* Whether a search found hypotheses and every score, probability and attention weight of them
 * is a number. */
static bool translation_is_finite(const Translation *x) {
    if (x->count == 0) return false; /* even out of steps a search ends its open hypotheses */
    for (int h = 0; h < x->count; h++) {
        const Hypothesis *y = &x->hyps[h];
        if (!isfinite(y->score)) return false;
        for (int t = 0; t < y->rows; t++)
            if (!isfinite(y->prob[t])) return false;
        for (size_t k = 0; k < (size_t)y->rows * y->src_len; k++)
            if (!isfinite(y->alpha[k])) return false;
    }
    return true;
}

/* Encodes one text into out->source, or says in out why it is refused. */
static void encode_one(const NmtModel *nm, const char *text, TranslatedText *out) {
    if (source_encode(nm, text, &out->source, &out->error)) {
        out->refused = 1;
        return;
    }
    out->unknown = out->source.unknown;
    out->unfamiliar = source_unfamiliar(&out->source);
    out->tokens = out->source.n - 1;
    if (out->tokens == 0)
        out->refused = 1, error_set(&out->error, "empty sentence, nothing to translate");
    else if (out->tokens > NMT_MAX_TOKENS)
        out->refused = 1, error_set(&out->error, "%d tokens, more than the %d a sentence may have",
                                    out->tokens, NMT_MAX_TOKENS);
}

int translator_run(Translator *t, const char *const *texts, int n, TranslatedText *out,
                   Error *err) {
    if (n > t->max_sentences)
        return error_set(err, "%d sentences, more than the %d planned", n, t->max_sentences);
    for (int i = 0; i < n; i++) memset(&out[i], 0, sizeof out[i]);
    int *lens = checked_calloc((size_t)n + 1, sizeof *lens, "source lengths", err);
    const int **src = checked_calloc((size_t)n + 1, sizeof *src, "sources", err);
    Translation *found = checked_calloc((size_t)n + 1, sizeof *found, "translations", err);
    int rc = lens && src && found ? 0 : -1, good = 0, longest = 1;
    for (int i = 0; i < n && rc == 0; i++) {
        encode_one(t->nm, texts[i], &out[i]);
        if (out[i].refused) continue;
        int len = out[i].source.n;
        src[good] = out[i].source.ids, lens[good++] = len;
        if (len > longest) longest = len;
    }
    if (rc == 0 && good > 0) {
        SearchOptions opt = t->opt;
        if (!opt.max_len) opt.max_len = nmt_max_output_len(longest);
        rc = plan_search(t, longest, err);
        if (rc == 0) rc = search_on_chosen_threads(t, src, lens, good, &opt, found, err);
    }
    for (int i = 0, g = 0; i < n && rc == 0; i++) {
        if (out[i].refused) continue;
        out[i].best = found[g++];
        if (!translation_is_finite(&out[i].best))
            out[i].refused = 1, error_set(&out[i].error, "%s", NON_FINITE);
    }
    free(lens), free(src), free(found);
    if (rc) translated_free(out, n);
    return rc;
}

void translated_free(TranslatedText *out, int n) {
    for (int i = 0; i < n; i++) {
        translation_free(&out[i].best);
        source_free(&out[i].source);
    }
}

int translator_probe(const NmtModel *nm, const char *path, Error *err) {
    enum { WORDS = 8 };
    char text[WORDS * 64 + 1] = "";
    size_t used = 0;
    for (size_t id = TOK_SPECIALS; id < TOK_SPECIALS + WORDS && id < nm->src_vocab.size; id++) {
        const char *word = vocab_token(&nm->src_vocab, (int)id);
        if (word && strlen(word) < 64)
            used +=
                (size_t)snprintf(text + used, sizeof text - used, "%s%s", used ? " " : "", word);
    }
    Translator t;
    SearchOptions opt = {.beam = 1, .nbest = 1, .len_norm = 1.0, .max_len = WORDS};
    if (translator_init(&t, nm, 1, &opt, err)) return -1;
    const char *texts[1] = {text};
    TranslatedText out;
    if (translator_run(&t, texts, 1, &out, err)) {
        translator_free(&t);
        return -1;
    }
    translated_free(&out, 1);
    translator_free(&t);
    /* a probe of a few known words is refused only for what the model computes */
    if (out.refused && out.tokens > 0)
        return error_set(err,
                         "%s: the model overflows on a probe sentence (its probabilities are not "
                         "finite numbers): its weights are too large to translate with",
                         path);
    return 0;
}

/*
 * scoring.c: loss, perplexity, BLEU and chrF of a model on held-out pairs (see scoring.h).
 */
#include "nmt/metrics/scoring.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nmt/text.h"
#include "nmt/translator.h"

/* The BPE pieces of tokens, counted only when there may be too many: a token is at least one
 * piece and at most one per byte, so a side of at most NMT_MAX_TOKENS bytes needs no count. */
static int count_pieces(const Bpe *bpe, const TokenList *tokens, size_t *count, Error *err) {
    size_t bytes = 0;
    for (size_t k = 0; k < tokens->count; k++) bytes += strlen(tokens->tokens[k]);
    *count = tokens->count;
    if (bytes <= NMT_MAX_TOKENS) return 0;
    TokenList pieces = {0};
    if (bpe_apply_list(bpe, tokens, &pieces, err)) return -1;
    *count = pieces.count;
    token_list_free(&pieces);
    return 0;
}

int score_check_lengths(const NmtModel *nm, const Corpus *corpus, const TokenizedCorpus *tc,
                        const char *name, Error *err) {
    bool pieces = nm && nm->subwords;
    for (size_t i = 0; i < tc->count; i++) {
        size_t line = corpus ? corpus->line[i] : i + 1,
               sides[2] = {tc->src[i].count, tc->tgt[i].count};
        if (pieces && nm->lossless && tc->src_text && tc->tgt_text) {
            if (nmt_unit_count(nm, tc->src_text[i], false, &sides[0], err) ||
                nmt_unit_count(nm, tc->tgt_text[i], true, &sides[1], err))
                return error_prefix(err, "%s:%zu: ", name, line);
        } else if (pieces && (count_pieces(&nm->src_bpe, &tc->src[i], &sides[0], err) ||
                              count_pieces(&nm->tgt_bpe, &tc->tgt[i], &sides[1], err))) {
            return error_prefix(err, "%s:%zu: ", name, line);
        }
        for (int side = 0; side < 2; side++)
            if (sides[side] > NMT_MAX_TOKENS)
                return error_set(err,
                                 "%s:%zu: the %s has %zu %s, more than the %d a pair to score "
                                 "may have",
                                 name, line, side ? "target" : "source", sides[side],
                                 pieces ? "subword pieces" : "tokens", NMT_MAX_TOKENS);
    }
    return 0;
}

/* The indices 0..count-1 ordered by len[], longest first (ties in index order), or NULL
 * (err set) when out of memory: batches cut from them hold similar lengths, so little padding. */
static size_t *longest_first(const int *len, size_t count, Error *err) {
    size_t *order = checked_calloc(count + 1, sizeof(size_t), "batch order", err);
    size_t *indices = checked_calloc(count + 1, sizeof(size_t), "batch order", err);
    uint64_t *keys = checked_calloc(count + 1, sizeof(uint64_t), "batch order", err);
    if (order && indices && keys) {
        for (size_t i = 0; i < count; i++) indices[i] = i;
        sort_longest_first(order, indices, count, len, keys);
    } else {
        free(order), order = NULL;
    }
    free(indices), free(keys);
    return order;
}

static int corpus_loss(const NmtModel *nm, const TokenizedCorpus *tc, const Corpus *corpus,
                       int batch_size, Scores *out, Error *err) {
    Dataset ds;
    if (nmt_dataset(&ds, nm, tc, corpus, 0, err)) return -1;
    BatchBuffer bb = {0};
    Acts acts = {0};
    /* batches of similar target lengths */
    size_t *idx = longest_first(ds.tgt_n, ds.count, err);
    int rc = -1;
    ActsPlan plan = {.int8 = nm->model.quant != NULL};
    double bytes = acts_bytes(&nm->model.dims, batch_size, ds.max_src + 1, ds.max_tgt + 1, &plan);
    if (!idx || memory_check(bytes, "the activations of the scoring batches", err) ||
        batch_buffer_init(&bb, batch_size, ds.max_src, ds.max_tgt, err) ||
        acts_init_plan(&acts, &nm->model.dims, batch_size, ds.max_src + 1, ds.max_tgt + 1, &plan,
                       err))
        goto done;
    double total = 0;
    size_t tokens = 0;
    for (size_t first = 0; first < ds.count; first += (size_t)batch_size) {
        int n =
            (int)(ds.count - first < (size_t)batch_size ? ds.count - first : (size_t)batch_size);
        const Batch *batch = batch_fill(&bb, &ds, idx + first, n);
        double loss;
        if (model_forward(&nm->model, &acts, batch, &(ForwardOptions){.forward_only = 1}, &loss,
                          err))
            goto done;
        total += loss * acts.n_tokens;
        tokens += (size_t)acts.n_tokens;
    }
    out->tokens = tokens;
    out->loss = tokens ? total / (double)tokens : 0;
    out->perplexity = exp(out->loss);
    rc = 0;
done:
    free(idx);
    acts_free(&acts);
    batch_buffer_free(&bb);
    dataset_free(&ds);
    return rc;
}

int score_corpus(const NmtModel *nm, const Corpus *corpus, const TokenizedCorpus *tc,
                 const char *name, int batch_size, int beam, const ScoreOptions *options,
                 Scores *out, TranslationSink sink, void *user, Error *err) {
    memset(out, 0, sizeof *out);
    if (score_check_lengths(nm, corpus, tc, name, err) ||
        corpus_loss(nm, tc, corpus, batch_size, out, err))
        return -1;
    Translator translator;
    SearchOptions opt = {.beam = beam, .nbest = 1, .len_norm = 1.0};
    if (translator_init(&translator, nm, batch_size, &opt, err)) return -1;
    BleuStats bleu;
    ChrfStats chrf;
    bleu_stats_init(&bleu, options);
    chrf_stats_init(&chrf, options);
    /* Sentences go to the translator in batches of similar source lengths (fewer padded
     * positions, and a batch ends when its last translation does); the scores and the sink
     * then take them in corpus order. */
    size_t count = tc->count;
    TranslatedText *tr =
        checked_calloc((size_t)batch_size, sizeof(TranslatedText), "translations", err);
    char **hyps = checked_calloc(count + 1, sizeof(char *), "translations", err);
    const char **texts = checked_calloc((size_t)batch_size, sizeof(char *), "sources", err);
    int *src_len = checked_calloc(count + 1, sizeof(int), "sentence lengths", err);
    for (size_t i = 0; src_len && i < count; i++) src_len[i] = (int)tc->src[i].count;
    size_t *order = src_len ? longest_first(src_len, count, err) : NULL;
    int rc = tr && hyps && texts && order ? 0 : -1;
    for (size_t first = 0; rc == 0 && first < count; first += (size_t)batch_size) {
        int n = (int)(count - first < (size_t)batch_size ? count - first : (size_t)batch_size);
        for (int b = 0; b < n; b++) texts[b] = corpus->src[order[first + b]];
        if (translator_run(&translator, texts, n, tr, err)) {
            rc = -1;
            break;
        }
        for (int b = 0; b < n && rc == 0; b++) {
            size_t i = order[first + (size_t)b];
            /* score_check_lengths let every pair through: a refusal here is the text's own */
            if (tr[b].refused) {
                rc = error_set(err, "%s:%zu: %s", name, corpus->line[i], tr[b].error.msg);
                break;
            }
            const Hypothesis *h = tr[b].best.count ? &tr[b].best.hyps[0] : NULL;
            hyps[i] =
                h ? decode_hypothesis(nm, &tr[b].source, h, err) : decode_target(nm, NULL, 0, err);
            if (!hyps[i]) rc = -1;
        }
        translated_free(tr, n);
    }
    for (size_t i = 0; rc == 0 && i < count; i++) {
        const char *ref = corpus->tgt[i]; /* as the file has it, never the tokenizer's */
        if (bleu_add(&bleu, hyps[i], ref, err) || chrf_add(&chrf, hyps[i], ref, err))
            rc = error_prefix(err, "%s:%zu: ", name, corpus->line[i]);
        else if (sink)
            sink(user, i, corpus->src[i], hyps[i], ref);
    }
    if (rc == 0) {
        out->bleu = bleu_score(&bleu);
        out->chrf = chrf_score(&chrf);
        out->sentences = tc->count;
    }
    for (size_t i = 0; hyps && i < count; i++) free(hyps[i]);
    free(tr), free(hyps), free(texts), free(order), free(src_len);
    translator_free(&translator);
    return rc;
}

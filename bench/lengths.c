/*
 * lengths.c: pairs of realistic lengths (see lengths.h).
 */
#include "bench/lengths.h"

#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "nmt/text.h"

/* The shared corpus /work/shared/corpora/gettext-en-de/train.tsv as this project's tokenizer
 * cuts it (60,959 pairs of at most 50 tokens a side; 6.28 source and 6.11 target tokens on
 * average, punctuation included; the corpus's own statistics count 5.6 and 5.3 words). Only
 * these counts are kept, no text. The two sides' lengths are strongly correlated (0.93), so
 * rather than two independent histograms the target is drawn as the source length plus a
 * difference from its own histogram, which keeps that correlation (about 0.93 again). */
static const int SOURCE_LENGTHS[41] = {
    /* pairs with a source of 0, 1, 2, ... 40 tokens */
    0,   0,   11331, 9392, 6925, 5798, 5250, 4465, 3721, 2722, 2189, 1698, 1372, 1152,
    920, 795, 621,   479,  503,  393,  375,  287,  246,  139,  67,   31,   21,   10,
    28,  7,   6,     6,    3,    1,    1,    0,    0,    2,    1,    0,    2};
enum { DIFF_MIN = -15 };
static const int LENGTH_DIFFERENCES[33] = {
    /* pairs whose target is -15, -14, ... +17 tokens longer than its source */
    1,    1,    3,   2,   6,   3,   5,  23, 60, 105, 272, 774, 1888, 5968, 16714, 20017, 7692,
    3863, 1851, 876, 407, 212, 105, 51, 23, 9,  12,  2,   6,   2,    1,    1,     2};

/* An index drawn with probability proportional to counts[i]. */
static int draw(const int *counts, int n, Rng *rng) {
    long total = 0;
    for (int i = 0; i < n; i++) total += counts[i];
    long pick = (long)rng_below(rng, (uint64_t)total);
    for (int i = 0; i < n; i++) {
        if (pick < counts[i]) return i;
        pick -= counts[i];
    }
    return n - 1;
}

/* Lengths of n pairs drawn from a corpus file's pairs (with replacement). */
static int corpus_lengths(int *src, int *tgt, size_t n, const char *path, Rng *rng, Error *err) {
    Corpus corpus;
    TokenizedCorpus tokens;
    if (corpus_load(path, true, &corpus, &tokens, err)) return -1;
    size_t *usable = checked_calloc(tokens.count, sizeof(size_t), "bench lengths", err), kept = 0;
    int rc = usable ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < tokens.count; i++) {
        size_t s = tokens.src[i].count, t = tokens.tgt[i].count;
        if (s >= 1 && t >= 1 && s <= 50 && t <= 50) usable[kept++] = i;
    }
    if (rc == 0 && kept == 0) rc = error_set(err, "%s: no pair with 1 to 50 tokens a side", path);
    for (size_t k = 0; rc == 0 && k < n; k++) {
        size_t i = usable[rng_below(rng, kept)];
        src[k] = (int)tokens.src[i].count, tgt[k] = (int)tokens.tgt[i].count;
    }
    free(usable);
    tokenized_corpus_free(&tokens);
    corpus_free(&corpus);
    return rc;
}

int lengths_dataset(Dataset *ds, size_t n, const ModelDims *dims, const char *corpus, uint64_t seed,
                    Error *err) {
    memset(ds, 0, sizeof *ds);
    Rng rng;
    rng_seed(&rng, seed, 31);
    ds->src_n = checked_calloc(n, sizeof(int), "bench lengths", err);
    ds->tgt_n = checked_calloc(n, sizeof(int), "bench lengths", err);
    ds->src_off = checked_calloc(n, sizeof(size_t), "bench pairs", err);
    ds->tgt_off = checked_calloc(n, sizeof(size_t), "bench pairs", err);
    ds->line = checked_calloc(n, sizeof(size_t), "bench pairs", err);
    if (!ds->src_n || !ds->tgt_n || !ds->src_off || !ds->tgt_off || !ds->line) {
        dataset_free(ds);
        return -1;
    }
    if (corpus) {
        if (corpus_lengths(ds->src_n, ds->tgt_n, n, corpus, &rng, err)) {
            dataset_free(ds);
            return -1;
        }
    } else {
        for (size_t k = 0; k < n; k++) {
            int s = draw(SOURCE_LENGTHS, 41, &rng);
            int t = s + DIFF_MIN + draw(LENGTH_DIFFERENCES, 33, &rng);
            ds->src_n[k] = s, ds->tgt_n[k] = t < 1 ? 1 : t > 50 ? 50 : t;
        }
    }
    size_t total = 0;
    for (size_t k = 0; k < n; k++) total += (size_t)ds->src_n[k] + (size_t)ds->tgt_n[k];
    ds->ids = checked_calloc(total, sizeof(int), "bench token ids", err);
    if (!ds->ids) {
        dataset_free(ds);
        return -1;
    }
    size_t used = 0;
    for (size_t k = 0; k < n; k++) {
        ds->src_off[k] = used;
        for (int i = 0; i < ds->src_n[k]; i++)
            ds->ids[used++] = TOK_SPECIALS + (int)rng_below(&rng, dims->src_vocab - TOK_SPECIALS);
        ds->tgt_off[k] = used;
        for (int i = 0; i < ds->tgt_n[k]; i++)
            ds->ids[used++] = TOK_SPECIALS + (int)rng_below(&rng, dims->tgt_vocab - TOK_SPECIALS);
        ds->line[k] = k + 1;
        if (ds->src_n[k] > ds->max_src) ds->max_src = ds->src_n[k];
        if (ds->tgt_n[k] > ds->max_tgt) ds->max_tgt = ds->tgt_n[k];
    }
    ds->count = n;
    return 0;
}

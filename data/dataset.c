/*
 * dataset.c: encoding pairs to ids, padded batches and length-bucketed epochs (see dataset.h).
 */
#include "data/dataset.h"

#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

int tokenized_corpus_make(TokenizedCorpus *out, const Corpus *corpus, const char *name,
                          bool lowercase, Error *err) {
    memset(out, 0, sizeof *out);
    out->src = checked_calloc(corpus->count, sizeof(TokenList), "tokenized sources", err);
    out->tgt = checked_calloc(corpus->count, sizeof(TokenList), "tokenized targets", err);
    if (!out->src || !out->tgt) {
        tokenized_corpus_free(out);
        return -1;
    }
    for (size_t i = 0; i < corpus->count; i++) {
        out->count = i + 1; /* so a failure frees what was made */
        if (tokenize(corpus->src[i], lowercase, &out->src[i], err) ||
            tokenize(corpus->tgt[i], lowercase, &out->tgt[i], err)) {
            error_prefix(err, "%s:%zu: ", name, corpus->line[i]);
            tokenized_corpus_free(out);
            return -1;
        }
    }
    out->count = corpus->count;
    out->src_text = (const char *const *)corpus->src;
    out->tgt_text = (const char *const *)corpus->tgt;
    return 0;
}

void tokenized_corpus_free(TokenizedCorpus *tc) {
    for (size_t i = 0; i < tc->count; i++) {
        if (tc->src) token_list_free(&tc->src[i]);
        if (tc->tgt) token_list_free(&tc->tgt[i]);
    }
    free(tc->src);
    free(tc->tgt);
    memset(tc, 0, sizeof *tc);
}

int dataset_make(Dataset *ds, const TokenizedCorpus *tc, const Corpus *corpus, const Vocab *src,
                 const Vocab *tgt, int max_len, Error *err) {
    memset(ds, 0, sizeof *ds);
    size_t total = 0;
    for (size_t i = 0; i < tc->count; i++) total += tc->src[i].count + tc->tgt[i].count;
    ds->ids = checked_calloc(total, sizeof(int), "token ids", err);
    ds->src_off = checked_calloc(tc->count, sizeof(size_t), "dataset", err);
    ds->tgt_off = checked_calloc(tc->count, sizeof(size_t), "dataset", err);
    ds->src_n = checked_calloc(tc->count, sizeof(int), "dataset", err);
    ds->tgt_n = checked_calloc(tc->count, sizeof(int), "dataset", err);
    ds->line = checked_calloc(tc->count, sizeof(size_t), "dataset", err);
    if (!ds->ids || !ds->src_off || !ds->tgt_off || !ds->src_n || !ds->tgt_n || !ds->line) {
        dataset_free(ds);
        return -1;
    }
    size_t used = 0;
    for (size_t i = 0; i < tc->count; i++) {
        const TokenList *s = &tc->src[i], *t = &tc->tgt[i];
        if (s->count == 0 || t->count == 0 ||
            (max_len > 0 && (s->count > (size_t)max_len || t->count > (size_t)max_len))) {
            ds->skipped++;
            continue;
        }
        size_t k = ds->count++;
        ds->src_off[k] = used;
        ds->src_n[k] = (int)s->count;
        vocab_encode(src, s, ds->ids + used);
        used += s->count;
        ds->tgt_off[k] = used;
        ds->tgt_n[k] = (int)t->count;
        vocab_encode(tgt, t, ds->ids + used);
        used += t->count;
        ds->line[k] = corpus ? corpus->line[i] : i + 1;
        if (ds->src_n[k] > ds->max_src) ds->max_src = ds->src_n[k];
        if (ds->tgt_n[k] > ds->max_tgt) ds->max_tgt = ds->tgt_n[k];
    }
    return 0;
}

void dataset_free(Dataset *ds) {
    free(ds->ids);
    free(ds->src_off);
    free(ds->tgt_off);
    free(ds->src_n);
    free(ds->tgt_n);
    free(ds->line);
    memset(ds, 0, sizeof *ds);
}

int batch_buffer_init(BatchBuffer *bb, int max_B, int max_src, int max_tgt, Error *err) {
    memset(bb, 0, sizeof *bb);
    bb->max_B = max_B, bb->max_S = max_src + 1, bb->max_T = max_tgt + 1;
    size_t n = batch_block_ints(max_B, bb->max_S, bb->max_T);
    bb->block = checked_calloc(n, sizeof(int), "batch", err);
    return bb->block ? 0 : -1;
}

void batch_buffer_free(BatchBuffer *bb) {
    free(bb->block);
    memset(bb, 0, sizeof *bb);
}

const Batch *batch_fill(BatchBuffer *bb, const Dataset *ds, const size_t *idx, int n) {
    int S = 0, T = 0;
    for (int b = 0; b < n; b++) {
        if (ds->src_n[idx[b]] + 1 > S) S = ds->src_n[idx[b]] + 1;
        if (ds->tgt_n[idx[b]] + 1 > T) T = ds->tgt_n[idx[b]] + 1;
    }
    BatchArrays arr = batch_arrays(bb->block, n, S, T);
    memset(bb->block, 0, sizeof(int) * batch_block_ints(n, S, T));
    for (int b = 0; b < n; b++) {
        size_t k = idx[b];
        const int *s = ds->ids + ds->src_off[k], *t = ds->ids + ds->tgt_off[k];
        int ls = ds->src_n[k], lt = ds->tgt_n[k];
        /* source + </s>; decoder input <s> y_1..y_m; decoder output y_1..y_m </s> */
        memcpy(arr.src + (size_t)b * S, s, sizeof(int) * (size_t)ls);
        arr.src[(size_t)b * S + ls] = TOK_EOS;
        arr.tgt_in[(size_t)b * T] = TOK_BOS;
        memcpy(arr.tgt_in + (size_t)b * T + 1, t, sizeof(int) * (size_t)lt);
        memcpy(arr.tgt_out + (size_t)b * T, t, sizeof(int) * (size_t)lt);
        arr.tgt_out[(size_t)b * T + lt] = TOK_EOS;
        arr.src_len[b] = ls + 1;
        arr.tgt_len[b] = lt + 1;
    }
    bb->batch = arr.batch;
    return &bb->batch;
}

static void shuffle(size_t *x, size_t n, Rng *rng) {
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)rng_below(rng, i);
        size_t t = x[i - 1];
        x[i - 1] = x[j], x[j] = t;
    }
}

/* qsort has no context argument, so the sort keys pack everything they need (see below). */
static int compare_keys(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts each window of `window` pairs of sorted[0..n) by (source length, target length,
 * shuffled position) into order[0..n): the key packs all three so the sort is total and
 * deterministic. keys has room for one window. */
static void sort_windows(size_t *order, const size_t *sorted, uint64_t *keys, const Dataset *ds,
                         size_t n, size_t window) {
    for (size_t w = 0; w < n; w += window) {
        size_t m = n - w < window ? n - w : window;
        for (size_t i = 0; i < m; i++) {
            size_t k = sorted[w + i];
            uint64_t s = (uint64_t)ds->src_n[k], t = (uint64_t)ds->tgt_n[k];
            keys[i] = s << 48 | t << 32 | (uint64_t)i;
        }
        qsort(keys, m, sizeof *keys, compare_keys);
        for (size_t i = 0; i < m; i++) order[w + i] = sorted[w + (keys[i] & 0xffffffffu)];
    }
}

void sort_longest_first(size_t *to, const size_t *from, size_t count, const int *len,
                        uint64_t *keys) {
    for (size_t i = 0; i < count; i++)
        keys[i] = (uint64_t)(0xffffffffu - (uint32_t)len[from[i]]) << 32 | (uint64_t)i;
    qsort(keys, count, sizeof *keys, compare_keys);
    for (size_t i = 0; i < count; i++) to[i] = from[keys[i] & 0xffffffffu];
}

/* A pair's share of a token budget: its target with </s>, the positions the loss is taken
 * over (what Acts.n_tokens and the tok/s figures count). */
static size_t target_tokens(const Dataset *ds, size_t k) {
    return (size_t)ds->tgt_n[k] + 1;
}

/* What both kinds of plan share: the pairs shuffled with (seed, epoch); windows of `window`
 * pairs sorted by length, sources first (see epoch_plan_make_tokens); each window cut into
 * batches, of batch_size pairs, or (batch_size 0) greedily within `budget` target tokens, a
 * pair over the budget alone; then the batches in shuffled order. */
static int plan_epoch(EpochPlan *plan, const Dataset *ds, size_t window, size_t batch_size,
                      size_t budget, uint64_t seed, uint64_t epoch, Error *err) {
    memset(plan, 0, sizeof *plan);
    size_t n = ds->count;
    /* every pair may end up alone in its batch: n batches at most */
    plan->order = checked_calloc(n, sizeof(size_t), "epoch order", err);
    plan->start = checked_calloc(n + 1, sizeof(size_t), "epoch batches", err);
    uint64_t *keys = checked_calloc(n, sizeof(uint64_t), "epoch sort keys", err);
    size_t *first = checked_calloc(n, sizeof(size_t), "epoch batches", err);
    size_t *batch_ids = checked_calloc(n, sizeof(size_t), "epoch batches", err);
    size_t *sorted = checked_calloc(n, sizeof(size_t), "epoch order", err);
    if (!plan->order || !plan->start || !keys || !first || !batch_ids || !sorted) {
        free(keys), free(first), free(batch_ids), free(sorted);
        epoch_plan_free(plan);
        return -1;
    }
    Rng rng;
    rng_seed(&rng, seed, 1000 + epoch);
    for (size_t i = 0; i < n; i++) sorted[i] = i;
    shuffle(sorted, n, &rng);
    sort_windows(plan->order, sorted, keys, ds, n, window);
    /* batches do not cross windows, so each holds lengths sorted together */
    size_t n_batches = 0;
    for (size_t w = 0; w < n; w += window) {
        size_t end = n - w < window ? n : w + window, used = 0;
        for (size_t i = w; i < end; i++) {
            size_t cost = target_tokens(ds, plan->order[i]);
            bool full = batch_size ? (i - w) % batch_size == 0 : used + cost > budget;
            if (i == w || full) first[n_batches++] = i, used = 0;
            used += cost;
        }
    }
    for (size_t b = 0; b < n_batches; b++) batch_ids[b] = b;
    shuffle(batch_ids, n_batches, &rng);
    size_t pos = 0;
    for (size_t b = 0; b < n_batches; b++) {
        size_t id = batch_ids[b], from = first[id];
        size_t count = (id + 1 < n_batches ? first[id + 1] : n) - from;
        plan->start[b] = pos;
        /* longest target first: the decoder's steps then skip the sentences that have ended,
         * a tail of rows (see Acts.running in model/seq2seq.h) */
        sort_longest_first(sorted + pos, plan->order + from, count, ds->tgt_n, keys);
        pos += count;
    }
    plan->start[n_batches] = pos;
    memcpy(plan->order, sorted, sizeof(size_t) * n);
    plan->n_batches = n_batches;
    free(keys), free(first), free(batch_ids), free(sorted);
    return 0;
}

int epoch_plan_make(EpochPlan *plan, const Dataset *ds, int batch_size, uint64_t seed,
                    uint64_t epoch, Error *err) {
    /* windows of 64 batches: wide enough to find similar lengths, narrow enough that the
     * order stays random */
    return plan_epoch(plan, ds, (size_t)batch_size * 64, (size_t)batch_size, 0, seed, epoch, err);
}

int epoch_plan_make_tokens(EpochPlan *plan, const Dataset *ds, int batch_tokens, uint64_t seed,
                           uint64_t epoch, Error *err) {
    size_t n = ds->count, budget = (size_t)batch_tokens, total = 0;
    for (size_t k = 0; k < n; k++) total += target_tokens(ds, k);
    /* windows of about 64 batches, as with batch_size; below 2^32 pairs for the sort key */
    uint64_t window = total ? (64 * (uint64_t)budget * n + total - 1) / total : 1;
    if (window < 1) window = 1;
    if (window > 0xffffffffu) window = 0xffffffffu;
    return plan_epoch(plan, ds, (size_t)window, 0, budget, seed, epoch, err);
}

int batch_tokens_max_pairs(const Dataset *ds, int batch_tokens) {
    /* the shortest targets first: counts per length, then as many as fit */
    int max_len = ds->max_tgt + 1;
    size_t budget = (size_t)batch_tokens, used = 0, pairs = 0;
    size_t *count = calloc((size_t)max_len + 1, sizeof(size_t));
    if (!count) /* the bound is an upper bound whatever it is: fall back to the loosest */
        return batch_tokens < (int)ds->count ? batch_tokens : (int)ds->count;
    for (size_t k = 0; k < ds->count; k++) count[target_tokens(ds, k)]++;
    for (int len = 1; len <= max_len && used < budget; len++) {
        size_t fit = (budget - used) / (size_t)len;
        size_t take = count[len] < fit ? count[len] : fit;
        pairs += take, used += take * (size_t)len;
        if (take < count[len]) break;
    }
    free(count);
    return pairs > 0 ? (int)pairs : 1;
}

int epoch_plan_max_pairs(const EpochPlan *plan) {
    size_t most = 0;
    for (size_t b = 0; b < plan->n_batches; b++)
        if (plan->start[b + 1] - plan->start[b] > most) most = plan->start[b + 1] - plan->start[b];
    return (int)most;
}

void padding_add(PaddingCount *pc, const Batch *batch) {
    for (int b = 0; b < batch->B; b++) {
        pc->src_tokens += (size_t)batch->src_len[b];
        pc->tgt_tokens += (size_t)batch->tgt_len[b];
    }
    pc->src_positions += (size_t)batch->B * (size_t)batch->S;
    pc->tgt_positions += (size_t)batch->B * (size_t)batch->T;
}

double padding_share(const PaddingCount *pc) {
    size_t all = pc->src_positions + pc->tgt_positions;
    return all ? (double)(all - pc->src_tokens - pc->tgt_tokens) / (double)all : 0;
}

uint64_t epoch_plan_fingerprint(const EpochPlan *plan, const Dataset *ds) {
    uint64_t h = FNV1A_START;
    for (size_t b = 0; b < plan->n_batches; b++) {
        uint64_t pairs = plan->start[b + 1] - plan->start[b];
        h = fnv1a(h, &pairs, sizeof pairs);
        for (size_t k = plan->start[b]; k < plan->start[b + 1]; k++) {
            size_t i = plan->order[k];
            int sides[2] = {ds->src_n[i], ds->tgt_n[i]};
            h = fnv1a(h, sides, sizeof sides);
            h = fnv1a(h, ds->ids + ds->src_off[i], sizeof(int) * (size_t)sides[0]);
            h = fnv1a(h, ds->ids + ds->tgt_off[i], sizeof(int) * (size_t)sides[1]);
        }
    }
    return h ? h : 1; /* 0 stands for "unknown" in a checkpoint */
}

void epoch_plan_free(EpochPlan *plan) {
    free(plan->order);
    free(plan->start);
    memset(plan, 0, sizeof *plan);
}

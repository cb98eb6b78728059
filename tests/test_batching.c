/*
 * test_batching.c: batches by target tokens ([train] batch_tokens) and the padding share
 * training reports. Plans are checked on a synthetic dataset (lengths from a fixed stream),
 * so every invariant is tested over a thousand pairs and several epochs; that batch_tokens =
 * 0 leaves the batches as they were is checked against digests of plans made before it
 * existed. Resuming mid-epoch with token batches is tested end to end in test_ema.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/suites.h"
#include "base/rng.h"
#include "data/dataset.h"
#include "train/batching.h"

/* n pairs with lengths from a fixed stream: sources 1..30 tokens, targets within a few tokens
 * of their source (some longer than any small budget), ids all 5. */
static void synthetic_dataset(Dataset *ds, size_t n, uint64_t seed) {
    memset(ds, 0, sizeof *ds);
    Rng rng;
    rng_seed(&rng, seed, 77);
    ds->count = n;
    ds->src_n = calloc(n, sizeof(int)), ds->tgt_n = calloc(n, sizeof(int));
    ds->src_off = calloc(n, sizeof(size_t)), ds->tgt_off = calloc(n, sizeof(size_t));
    ds->line = calloc(n, sizeof(size_t));
    ds->ids = calloc(n * 80, sizeof(int));
    for (size_t k = 0; k < n; k++) {
        int s = 1 + (int)rng_below(&rng, 30), t = s + (int)rng_below(&rng, 9) - 4;
        if (t < 1) t = 1;
        if (k % 97 == 5) t = 45; /* a few long targets */
        ds->src_n[k] = s, ds->tgt_n[k] = t;
        ds->src_off[k] = k * 80, ds->tgt_off[k] = k * 80 + 40;
        ds->line[k] = k + 1;
        for (int i = 0; i < 80; i++) ds->ids[k * 80 + i] = 5;
        if (s > ds->max_src) ds->max_src = s;
        if (t > ds->max_tgt) ds->max_tgt = t;
    }
}

static int compare_ids(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* FNV-1a over a plan's batches: each one's pair ids in increasing order, then the batch
 * starts. (What a batch holds and the batch order; the order within a batch is checked on its
 * own, longest target first.) */
static uint64_t plan_digest(const EpochPlan *plan, size_t n) {
    size_t *ids = malloc(sizeof(size_t) * n);
    ck_assert_ptr_nonnull(ids);
    memcpy(ids, plan->order, sizeof(size_t) * n);
    for (size_t b = 0; b < plan->n_batches; b++)
        qsort(ids + plan->start[b], plan->start[b + 1] - plan->start[b], sizeof(size_t),
              compare_ids);
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *p = (const unsigned char *)ids;
    for (size_t i = 0; i < n * sizeof(size_t); i++) h = (h ^ p[i]) * 0x100000001b3ull;
    p = (const unsigned char *)plan->start;
    for (size_t i = 0; i < (plan->n_batches + 1) * sizeof(size_t); i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    free(ids);
    return h;
}

static void synthetic_free(Dataset *ds) {
    dataset_free(ds);
}

/* Target tokens (with </s>) of batch b of a plan. */
static size_t batch_target_tokens(const EpochPlan *plan, const Dataset *ds, size_t b) {
    size_t sum = 0;
    for (size_t i = plan->start[b]; i < plan->start[b + 1]; i++)
        sum += (size_t)ds->tgt_n[plan->order[i]] + 1;
    return sum;
}

START_TEST(batch_size_plans_are_unchanged) {
    /* digests of epoch_plan_make's plans (batch_size 7, seed 3) as they were before
     * batch_tokens (taken at b7e65fb, whose plans still matched the digests of order and
     * starts taken before batch_tokens existed) */
    static const uint64_t before[3] = {0x5146054dcf5f55ddull, 0x758d2d1f63c38082ull,
                                       0x2b8d4e4f83090d9dull};
    Dataset ds;
    synthetic_dataset(&ds, 1000, 11);
    ConfigTrain ct = {.batch_size = 7, .batch_tokens = 0, .seed = 3};
    Error err;
    for (int e = 0; e < 3; e++) {
        EpochPlan plan;
        ck_assert(training_plan(&plan, &ds, &ct, (uint64_t)e, &err) == 0);
        ck_assert_msg(plan_digest(&plan, ds.count) == before[e], "epoch %d's plan changed", e);
        for (size_t b = 0; b < plan.n_batches; b++)
            for (size_t i = plan.start[b] + 1; i < plan.start[b + 1]; i++)
                ck_assert_int_ge(ds.tgt_n[plan.order[i - 1]], ds.tgt_n[plan.order[i]]);
        epoch_plan_free(&plan);
    }
    ck_assert_int_eq(training_max_pairs(&ds, &ct), 7);
    synthetic_free(&ds);
}
END_TEST

START_TEST(token_batches_cover_every_pair_within_the_budget) {
    Dataset ds;
    synthetic_dataset(&ds, 1000, 11);
    const int budgets[] = {40, 200, 700, 100000};
    Error err;
    for (size_t k = 0; k < sizeof budgets / sizeof budgets[0]; k++) {
        int budget = budgets[k], bound = batch_tokens_max_pairs(&ds, budget);
        for (uint64_t epoch = 0; epoch < 3; epoch++) {
            EpochPlan plan;
            ck_assert(epoch_plan_make_tokens(&plan, &ds, budget, 9, epoch, &err) == 0);
            /* every pair exactly once */
            char *seen = calloc(ds.count, 1);
            ck_assert(seen);
            ck_assert_uint_eq(plan.start[0], 0);
            ck_assert_uint_eq(plan.start[plan.n_batches], ds.count);
            for (size_t i = 0; i < ds.count; i++) {
                ck_assert(plan.order[i] < ds.count && !seen[plan.order[i]]);
                seen[plan.order[i]] = 1;
            }
            free(seen);
            size_t full = 0, source_tokens = 0, source_positions = 0;
            for (size_t b = 0; b < plan.n_batches; b++) {
                size_t pairs = plan.start[b + 1] - plan.start[b];
                size_t tokens = batch_target_tokens(&plan, &ds, b);
                ck_assert_uint_ge(pairs, 1);
                /* within the budget, unless one pair alone is over it */
                ck_assert_msg(tokens <= (size_t)budget || pairs == 1,
                              "budget %d: batch %zu has %zu tokens in %zu pairs", budget, b, tokens,
                              pairs);
                /* longest target first; the batch's source positions */
                int longest_source = 0;
                for (size_t i = plan.start[b]; i < plan.start[b + 1]; i++) {
                    int s = ds.src_n[plan.order[i]];
                    longest_source = s > longest_source ? s : longest_source;
                    source_tokens += (size_t)s;
                    if (i > plan.start[b])
                        ck_assert_int_ge(ds.tgt_n[plan.order[i - 1]], ds.tgt_n[plan.order[i]]);
                }
                source_positions += (size_t)longest_source * pairs;
                if (tokens > (size_t)budget / 2) full++;
            }
            /* greedy cutting leaves batches at least half full, but for the last of each
             * window (about 64 batches wide); and sorted by source length first, the source
             * side is hardly padded (1.3-4.7% here; sorted by target length first it was
             * 7-21%). The largest budget takes a window per batch. */
            double source_padding = 1 - (double)source_tokens / (double)source_positions;
            if (budget <= 700) {
                ck_assert_uint_ge(full * 10, plan.n_batches * 8);
                ck_assert_msg(source_padding < 0.05, "budget %d: source padding %.3f", budget,
                              source_padding);
            }
            ck_assert_int_le(epoch_plan_max_pairs(&plan), bound);
            epoch_plan_free(&plan);
        }
    }
    /* the bound: the shortest targets that fit; 1 when even the shortest does not */
    ck_assert_int_eq(batch_tokens_max_pairs(&ds, 1), 1);
    ck_assert_int_eq(batch_tokens_max_pairs(&ds, 100000), 1000);
    synthetic_free(&ds);
}
END_TEST

START_TEST(token_batches_are_deterministic_and_resumable) {
    Dataset ds;
    synthetic_dataset(&ds, 1000, 11);
    Error err;
    EpochPlan a, b, c;
    ck_assert(epoch_plan_make_tokens(&a, &ds, 300, 5, 2, &err) == 0);
    ck_assert(epoch_plan_make_tokens(&b, &ds, 300, 5, 2, &err) == 0);
    /* a resumed run makes the plan again from (seed, epoch) and starts at its batch: the same
     * plan means the same batches from there on */
    ck_assert_uint_eq(a.n_batches, b.n_batches);
    ck_assert(memcmp(a.order, b.order, sizeof(size_t) * ds.count) == 0);
    ck_assert(memcmp(a.start, b.start, sizeof(size_t) * (a.n_batches + 1)) == 0);
    /* another epoch, another order */
    ck_assert(epoch_plan_make_tokens(&c, &ds, 300, 5, 3, &err) == 0);
    ck_assert(memcmp(a.order, c.order, sizeof(size_t) * ds.count) != 0);
    epoch_plan_free(&a), epoch_plan_free(&b), epoch_plan_free(&c);
    synthetic_free(&ds);
}
END_TEST

START_TEST(plan_fingerprints_tell_batches_apart) {
    /* the same plan made twice agrees; another batch size, seed, epoch or budget does not, nor
     * a pair's changed token; a permutation of the same pairs is another plan */
    Dataset ds;
    synthetic_dataset(&ds, 1000, 11);
    /* every pair unlike the others (the plans depend on the lengths only) */
    for (size_t k = 0; k < ds.count; k++) ds.ids[ds.src_off[k]] = 5 + (int)k;
    Error err;
    EpochPlan a, b;
    ck_assert(epoch_plan_make(&a, &ds, 32, 5, 2, &err) == 0);
    ck_assert(epoch_plan_make(&b, &ds, 32, 5, 2, &err) == 0);
    uint64_t fa = epoch_plan_fingerprint(&a, &ds);
    ck_assert(fa != 0);
    ck_assert(fa == epoch_plan_fingerprint(&b, &ds));
    epoch_plan_free(&b);
    const struct {
        int batch_size, batch_tokens;
        uint64_t seed, epoch;
    } others[] = {{16, 0, 5, 2}, {32, 0, 6, 2}, {32, 0, 5, 3}, {0, 300, 5, 2}, {0, 301, 5, 2}};
    for (size_t k = 0; k < sizeof others / sizeof others[0]; k++) {
        ck_assert(others[k].batch_tokens
                      ? epoch_plan_make_tokens(&b, &ds, others[k].batch_tokens, others[k].seed,
                                               others[k].epoch, &err) == 0
                      : epoch_plan_make(&b, &ds, others[k].batch_size, others[k].seed,
                                        others[k].epoch, &err) == 0);
        ck_assert_msg(epoch_plan_fingerprint(&b, &ds) != fa, "other plan %zu", k);
        epoch_plan_free(&b);
    }
    /* two pairs of the first batch swapped: the same pairs, in another order */
    size_t first = a.order[a.start[0]];
    a.order[a.start[0]] = a.order[a.start[0] + 1], a.order[a.start[0] + 1] = first;
    ck_assert(epoch_plan_fingerprint(&a, &ds) != fa);
    a.order[a.start[0] + 1] = a.order[a.start[0]], a.order[a.start[0]] = first;
    ck_assert(epoch_plan_fingerprint(&a, &ds) == fa);
    /* one token of the data changed */
    ds.ids[ds.tgt_off[first]] ^= 1;
    ck_assert(epoch_plan_fingerprint(&a, &ds) != fa);
    epoch_plan_free(&a);
    synthetic_free(&ds);
}
END_TEST

START_TEST(token_batches_fit_the_planned_buffers) {
    /* every batch of several epochs fills a buffer planned with training_max_pairs */
    Dataset ds;
    synthetic_dataset(&ds, 1000, 11);
    ConfigTrain ct = {.batch_size = 32, .batch_tokens = 250, .seed = 1};
    int most = training_max_pairs(&ds, &ct);
    Error err;
    BatchBuffer bb;
    ck_assert(batch_buffer_init(&bb, most, ds.max_src, ds.max_tgt, &err) == 0);
    for (uint64_t epoch = 0; epoch < 4; epoch++) {
        EpochPlan plan;
        ck_assert(training_plan(&plan, &ds, &ct, epoch, &err) == 0);
        for (size_t b = 0; b < plan.n_batches; b++) {
            int n = (int)(plan.start[b + 1] - plan.start[b]);
            ck_assert_int_le(n, most);
            const Batch *batch = batch_fill(&bb, &ds, plan.order + plan.start[b], n);
            ck_assert_int_eq(batch->B, n);
        }
        epoch_plan_free(&plan);
    }
    batch_buffer_free(&bb);
    synthetic_free(&ds);
}
END_TEST

START_TEST(padding_share_by_hand) {
    /* two pairs: sources of 3 and 1 tokens (+ </s>: 4 and 2, S = 4), targets of 2 and 0
     * tokens (+ </s>: 3 and 1, T = 3). Positions: 2*4 + 2*3 = 14; tokens 4+2 + 3+1 = 10;
     * padded 4, a share of 4/14. */
    int src[8] = {5, 6, 7, 3, 5, 3, 0, 0}, tgt[6] = {5, 6, 3, 3, 0, 0};
    int src_len[2] = {4, 2}, tgt_len[2] = {3, 1};
    Batch batch = {.B = 2,
                   .S = 4,
                   .T = 3,
                   .src = src,
                   .src_len = src_len,
                   .tgt_in = tgt,
                   .tgt_out = tgt,
                   .tgt_len = tgt_len};
    PaddingCount pc = {0};
    ck_assert(padding_share(&pc) == 0);
    padding_add(&pc, &batch);
    ck_assert_uint_eq(pc.src_tokens, 6);
    ck_assert_uint_eq(pc.src_positions, 8);
    ck_assert_uint_eq(pc.tgt_tokens, 4);
    ck_assert_uint_eq(pc.tgt_positions, 6);
    ck_assert_double_eq_tol(padding_share(&pc), 4.0 / 14.0, 1e-12);
    /* the same batch again: the share is over every batch seen */
    padding_add(&pc, &batch);
    ck_assert_double_eq_tol(padding_share(&pc), 8.0 / 28.0, 1e-12);
}
END_TEST

Suite *batching_suite(void) {
    Suite *s = suite_create("batching");
    TCase *tc = tcase_create("batching");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, batch_size_plans_are_unchanged);
    tcase_add_test(tc, token_batches_cover_every_pair_within_the_budget);
    tcase_add_test(tc, token_batches_are_deterministic_and_resumable);
    tcase_add_test(tc, plan_fingerprints_tell_batches_apart);
    tcase_add_test(tc, token_batches_fit_the_planned_buffers);
    tcase_add_test(tc, padding_share_by_hand);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * test_data.c: the pieces below the model tested directly: the random number generator, the
 * work-sharing helpers (share_range, the spinning barrier), files written whole, the
 * dataset's batches and epoch plans, and the library's text <-> ids steps.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/files.h"
#include "base/rng.h"
#include "tests/harness.h"
#include "model/parallel.h"
#include "nmt/text.h"
#include "tests/suites.h"
#include "train/new_model.h"

/* ---- rng ---- */

START_TEST(rng_is_seeded_and_streams_are_independent) {
    Rng a, b, c;
    rng_seed(&a, 42, 0);
    rng_seed(&b, 42, 0);
    rng_seed(&c, 42, 1);
    int same_stream = 1, other_stream_differs = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = rng_next(&a), y = rng_next(&b), z = rng_next(&c);
        same_stream &= x == y;
        other_stream_differs |= x != z;
    }
    ck_assert(same_stream);
    ck_assert(other_stream_differs);
    /* rng_below stays in range and hits every value; rng_uniform stays in [0, 1) */
    int seen[7] = {0};
    double sum = 0;
    for (int i = 0; i < 70000; i++) {
        uint64_t k = rng_below(&a, 7);
        ck_assert_uint_lt(k, 7);
        seen[k]++;
        double u = rng_uniform(&a);
        ck_assert(u >= 0 && u < 1);
        sum += u;
    }
    for (int k = 0; k < 7; k++) ck_assert_msg(seen[k] > 9000 && seen[k] < 11000, "%d", seen[k]);
    ck_assert_double_eq_tol(sum / 70000, 0.5, 0.01);
    double m = 0, sq = 0;
    for (int i = 0; i < 20000; i++) {
        double g = rng_normal(&a);
        m += g, sq += g * g;
    }
    ck_assert_double_eq_tol(m / 20000, 0, 0.03);
    ck_assert_double_eq_tol(sq / 20000, 1, 0.05);
}
END_TEST

/* ---- work sharing ---- */

START_TEST(share_range_covers_the_range_in_units) {
    const int cases[][3] = {{100, 16, 3}, {7, 1, 2}, {5, 16, 4}, {0, 8, 2}, {1000, 64, 7}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int n = cases[c][0], unit = cases[c][1], parts = cases[c][2], next = 0;
        for (int p = 0; p < parts; p++) {
            int lo, hi;
            share_range(n, unit, p, parts, &lo, &hi);
            ck_assert_int_eq(lo, next); /* contiguous, in order */
            ck_assert_int_le(lo, hi);
            ck_assert(lo % unit == 0 || lo == n); /* cut at units */
            /* balanced: no part holds more than one unit above an even share */
            ck_assert_int_le(hi - lo, ((n + unit - 1) / unit + parts - 1) / parts * unit);
            next = hi;
        }
        ck_assert_int_eq(next, n);
    }
}
END_TEST

/* Three threads pass 200 phases: in each, every thread writes its slot, waits, then reads
 * every other thread's slot of that phase; a barrier that let one through early fails it. */
START_TEST(spin_barrier_orders_phases) {
    enum { THREADS = 3, PHASES = 200 };
    SpinBarrier barrier;
    spin_barrier_init(&barrier, THREADS);
    int slot[THREADS] = {0}, wrong = 0;
#pragma omp parallel num_threads(THREADS) reduction(+ : wrong)
    {
        int me = omp_get_thread_num();
        if (omp_get_num_threads() != THREADS) wrong++;
        for (int phase = 1; phase <= PHASES; phase++) {
            __atomic_store_n(&slot[me], phase, __ATOMIC_RELAXED);
            spin_barrier_wait(&barrier);
            for (int t = 0; t < THREADS; t++)
                wrong += __atomic_load_n(&slot[t], __ATOMIC_RELAXED) != phase;
            spin_barrier_wait(&barrier); /* nobody starts the next phase before all have read */
        }
    }
    ck_assert_int_eq(wrong, 0);
}
END_TEST

/* ---- files ---- */

START_TEST(output_files_are_whole_or_absent) {
    char dir[64] = "/tmp/nmt-data-XXXXXX", path[128], nested[128];
    ck_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/out.txt", dir);
    Error err;
    OutputFile f;
    ck_assert(output_file_open(&f, path, true, &err) == 0);
    fputs("first\r\nsecond\n", f.file);
    ck_assert(access(path, F_OK) != 0); /* nothing at PATH until the commit */
    ck_assert(output_file_commit(&f, &err) == 0);
    /* an aborted rewrite leaves the committed file and no .tmp */
    ck_assert(output_file_open(&f, path, false, &err) == 0);
    ck_assert(temporary_file_beside(path));
    fputs("half", f.file);
    output_file_abort(&f);
    ck_assert(!temporary_file_beside(path));
    /* two writers of one path write their own temporary files (issue #36: two trainings in
     * one folder truncated each other's last.ckpt.tmp): each commit renames a whole file */
    OutputFile first, second;
    ck_assert(output_file_open(&first, path, false, &err) == 0);
    ck_assert(output_file_open(&second, path, false, &err) == 0);
    ck_assert_str_ne(first.tmp, second.tmp);
    fputs("one whole file\n", first.file);
    fputs("the other whole file\n", second.file);
    ck_assert(output_file_commit(&second, &err) == 0);
    ck_assert(output_file_commit(&first, &err) == 0);
    ck_assert(!temporary_file_beside(path));
    size_t len;
    unsigned char *whole = slurp_file(path, &len);
    ck_assert_str_eq((char *)whole, "one whole file\n");
    free(whole);
    ck_assert(output_file_open(&f, path, true, &err) == 0);
    fputs("first\r\nsecond\n", f.file);
    ck_assert(output_file_commit(&f, &err) == 0);
    FILE *in = fopen(path, "r");
    ck_assert(in);
    char *line = NULL;
    size_t cap = 0;
    ck_assert_int_eq(read_line(in, &line, &cap), 5); /* \r\n taken off */
    ck_assert_str_eq(line, "first");
    ck_assert_int_eq(read_line(in, &line, &cap), 6);
    ck_assert_str_eq(line, "second");
    ck_assert_int_eq(read_line(in, &line, &cap), -1);
    free(line);
    fclose(in);
    /* make_dirs: parents created, an existing folder is fine, a file in the way is an error */
    snprintf(nested, sizeof nested, "%s/a/b/c", dir);
    ck_assert(make_dirs(nested, &err) == 0);
    ck_assert(make_dirs(nested, &err) == 0);
    snprintf(nested, sizeof nested, "%s/out.txt/d", dir);
    ck_assert(make_dirs(nested, &err) == -1);
    ck_assert_msg(strstr(err.msg, "out.txt"), "%s", err.msg);
    ck_assert(output_file_open(&f, "/nonexistent-dir/x", false, &err) == -1);
    ck_assert_msg(strstr(err.msg, "/nonexistent-dir/x.tmp"), "%s", err.msg);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
}
END_TEST

/* ---- dataset and text ---- */

static const char *PAIRS = "I love cats\tj'aime les chats\n"
                           "I have a cat\tj'ai un chat\n"
                           "the black cat\tle chat noir\n"
                           "a very long sentence about the black cat and the dog\tune longue\n"
                           "we see the dog\tnous voyons le chien\n"
                           "the dog sees a cat\tle chien voit un chat\n"
                           "cats\tles chats\n";
enum { N_PAIRS = 7 };

typedef struct {
    Corpus corpus;
    TokenizedCorpus tokens;
    NmtModel nm;
    Dataset ds;
} Setup;

static void setup_make(Setup *s) {
    Error err;
    ck_assert(corpus_read_string(PAIRS, strlen(PAIRS), "pairs", &s->corpus, &err) == 0);
    ck_assert(tokenized_corpus_make(&s->tokens, &s->corpus, "pairs", true, &err) == 0);
    Config cfg;
    config_defaults(&cfg);
    cfg.model = (ConfigModel){.emb_size = 4,
                              .enc_hidden = 4,
                              .bidirectional = 1,
                              .dec_hidden = 4,
                              .att_size = 4,
                              .readout_size = 4};
    ck_assert_msg(nmt_model_from_config(&s->nm, &cfg, &s->tokens, 1, &err) == 0, "%s", err.msg);
    ck_assert(nmt_dataset(&s->ds, &s->nm, &s->tokens, &s->corpus, 8, &err) == 0);
}

static void setup_free(Setup *s) {
    dataset_free(&s->ds);
    nmt_model_free(&s->nm);
    tokenized_corpus_free(&s->tokens);
    corpus_free(&s->corpus);
}

START_TEST(dataset_keeps_short_pairs_and_fills_batches) {
    Setup s;
    setup_make(&s);
    ck_assert_uint_eq(s.ds.count, N_PAIRS - 1); /* the 11-token source is over max_len 8 */
    ck_assert_uint_eq(s.ds.skipped, 1);
    ck_assert_uint_eq(s.ds.line[3], 5); /* line numbers follow the file */
    BatchBuffer bb;
    Error err;
    ck_assert(batch_buffer_init(&bb, 2, s.ds.max_src, s.ds.max_tgt, &err) == 0);
    size_t idx[2] = {0, 5}; /* "i love cats" and "cats" */
    const Batch *b = batch_fill(&bb, &s.ds, idx, 2);
    ck_assert_int_eq(b->B, 2);
    ck_assert_int_eq(b->S, 4); /* the longest source + </s> */
    ck_assert_int_eq(b->src_len[0], 4);
    ck_assert_int_eq(b->src_len[1], 2);
    ck_assert_int_eq(b->src[b->S + 1], TOK_EOS);
    ck_assert_int_eq(b->src[b->S + 2], TOK_PAD); /* padded on the right */
    ck_assert_int_eq(b->tgt_in[0], TOK_BOS);
    ck_assert_int_eq(b->tgt_out[b->tgt_len[0] - 1], TOK_EOS);
    for (int t = 1; t < b->tgt_len[0]; t++)
        ck_assert_int_eq(b->tgt_in[t], b->tgt_out[t - 1]); /* shifted by one */
    batch_buffer_free(&bb);
    setup_free(&s);
}
END_TEST

START_TEST(epoch_plans_are_permutations_fixed_by_seed_and_epoch) {
    Setup s;
    setup_make(&s);
    Error err;
    EpochPlan a, b, c;
    ck_assert(epoch_plan_make(&a, &s.ds, 4, 9, 0, &err) == 0);
    ck_assert(epoch_plan_make(&b, &s.ds, 4, 9, 0, &err) == 0);
    ck_assert(epoch_plan_make(&c, &s.ds, 4, 9, 1, &err) == 0);
    ck_assert_uint_eq(a.n_batches, 2);
    ck_assert_uint_eq(a.start[a.n_batches], s.ds.count);
    int seen[16] = {0};
    for (size_t i = 0; i < s.ds.count; i++) seen[a.order[i]]++;
    for (size_t i = 0; i < s.ds.count; i++) ck_assert_int_eq(seen[i], 1);
    ck_assert(memcmp(a.order, b.order, sizeof(size_t) * s.ds.count) == 0);
    int differs = 0;
    for (uint64_t e = 1; e < 8 && !differs; e++) {
        epoch_plan_free(&c);
        ck_assert(epoch_plan_make(&c, &s.ds, 4, 9, e, &err) == 0);
        differs = memcmp(a.order, c.order, sizeof(size_t) * s.ds.count) != 0;
    }
    ck_assert_msg(differs, "every epoch has the same order");
    /* a batch is cut from pairs sorted by length, then ordered longest target first (the
     * decoder skips the rows that have ended) */
    for (size_t k = 0; k < a.n_batches; k++)
        for (size_t i = a.start[k] + 1; i < a.start[k + 1]; i++)
            ck_assert_int_ge(s.ds.tgt_n[a.order[i - 1]], s.ds.tgt_n[a.order[i]]);
    epoch_plan_free(&a), epoch_plan_free(&b), epoch_plan_free(&c);
    setup_free(&s);
}
END_TEST

START_TEST(sentences_encode_and_decode) {
    Setup s;
    setup_make(&s);
    Error err;
    int *ids, n, unknown;
    ck_assert(encode_source(&s.nm, "The black CAT zebra", &ids, &n, &unknown, &err) == 0);
    ck_assert_int_eq(n, 5); /* 4 tokens + </s> */
    ck_assert_int_eq(ids[4], TOK_EOS);
    ck_assert_int_eq(ids[3], TOK_UNK); /* "zebra" never seen */
    ck_assert_int_eq(unknown, 1);
    ck_assert_str_eq(vocab_token(&s.nm.src_vocab, ids[2]), "cat"); /* lower-cased */
    free(ids);
    ck_assert(encode_source(&s.nm, "bad \x1b[31m", &ids, &n, &unknown, &err) == -1);
    ck_assert_msg(strstr(err.msg, "U+001B"), "%s", err.msg);
    ck_assert(encode_source(&s.nm, "bad \xff", &ids, &n, &unknown, &err) == -1);
    ck_assert_msg(strstr(err.msg, "UTF-8"), "%s", err.msg);
    int tgt[3] = {vocab_id(&s.nm.tgt_vocab, "j'"), vocab_id(&s.nm.tgt_vocab, "aime"),
                  vocab_id(&s.nm.tgt_vocab, "chats")};
    char *text = decode_target(&s.nm, tgt, 3, &err);
    ck_assert_str_eq(text, "j'aime chats"); /* the elision joins its word */
    free(text);
    setup_free(&s);
}
END_TEST

Suite *data_suite(void) {
    Suite *s = suite_create("data");
    TCase *tc = tcase_create("data");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, rng_is_seeded_and_streams_are_independent);
    tcase_add_test(tc, share_range_covers_the_range_in_units);
    tcase_add_test(tc, spin_barrier_orders_phases);
    tcase_add_test(tc, output_files_are_whole_or_absent);
    tcase_add_test(tc, dataset_keeps_short_pairs_and_fills_batches);
    tcase_add_test(tc, epoch_plans_are_permutations_fixed_by_seed_and_epoch);
    tcase_add_test(tc, sentences_encode_and_decode);
    suite_add_tcase(s, tc);
    return s;
}

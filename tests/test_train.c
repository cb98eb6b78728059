/*
 * test_train.c: checkpoints (round trip, and every kind of damage detected), Adam (two steps
 * by hand), clipping, the learning-rate schedules, short training runs (the loss must fall, and
 * the same seed must give the same losses bit for bit), and how data parallelism shares a batch
 * between ranks.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <omp.h>

#include "tests/harness.h"
#include "tests/suites.h"
#include "train/adam.h"
#include "train/dist.h"
#include "nmt/text.h"
#include "train/new_model.h"

static const char *PAIRS = "I love cats\tj'aime les chats\n"
                           "I have a cat\tj'ai un chat\n"
                           "the black cat\tle chat noir\n"
                           "I love machine learning\tj'aime l'apprentissage automatique\n"
                           "we see the dog\tnous voyons le chien\n"
                           "the dog sees a cat\tle chien voit un chat\n";

typedef struct {
    Corpus corpus;
    TokenizedCorpus tokens;
    NmtModel nm;
    Dataset ds;
    char dir[64];
} Setup;

/* score SCORE_COUNT stands for additive with tied embeddings (readout_size = emb_size then),
 * SCORE_COUNT + 1 for additive with layer-normalised GRUs */
static void setup_make_score(Setup *s, int bidirectional, AttentionScore score) {
    bool tied = score == SCORE_COUNT, normalised = score == SCORE_COUNT + 1;
    if (tied || normalised) score = SCORE_ADDITIVE;
    Error err;
    ck_assert(corpus_read_string(PAIRS, strlen(PAIRS), "pairs", &s->corpus, &err) == 0);
    ck_assert(tokenized_corpus_make(&s->tokens, &s->corpus, "pairs", true, &err) == 0);
    Config cfg;
    config_defaults(&cfg);
    cfg.model = (ConfigModel){.emb_size = 8,
                              .enc_hidden = 8,
                              .bidirectional = bidirectional,
                              .dec_hidden = score == SCORE_DOT ? (bidirectional ? 16 : 8) : 10,
                              .att_size = 6,
                              .readout_size = tied ? 8 : 12,
                              .score = score,
                              .tie_embeddings = tied,
                              .layer_norm = normalised};
    ck_assert_msg(nmt_model_from_config(&s->nm, &cfg, &s->tokens, 7, &err) == 0, "%s", err.msg);
    ck_assert(nmt_dataset(&s->ds, &s->nm, &s->tokens, &s->corpus, 0, &err) == 0);
    snprintf(s->dir, sizeof s->dir, "/tmp/nmt-test-XXXXXX");
    ck_assert(mkdtemp(s->dir) != NULL);
}

static void setup_make(Setup *s, int bidirectional) {
    setup_make_score(s, bidirectional, SCORE_ADDITIVE);
}

static void setup_free(Setup *s) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
    ck_assert(system(cmd) == 0);
    dataset_free(&s->ds);
    nmt_model_free(&s->nm);
    tokenized_corpus_free(&s->tokens);
    corpus_free(&s->corpus);
}

/* Trains on all pairs as one batch for `steps` Adam steps; returns the losses. Word dropout
 * too for a tied model (both extensions at once). */
static void train_steps(NmtModel *nm, const Dataset *ds, Adam *adam, int steps, double *losses) {
    Error err;
    BatchBuffer bb;
    Acts acts;
    ck_assert(batch_buffer_init(&bb, (int)ds->count, ds->max_src, ds->max_tgt, &err) == 0);
    ck_assert(acts_init(&acts, &nm->model.dims, (int)ds->count, ds->max_src + 1, ds->max_tgt + 1,
                        &err) == 0);
    size_t idx[16];
    for (size_t i = 0; i < ds->count; i++) idx[i] = i;
    const Batch *batch = batch_fill(&bb, ds, idx, (int)ds->count);
    Rng rng;
    rng_seed(&rng, 3, 2);
    ForwardOptions opt = {.dropout = 0.1f,
                          .label_smoothing = 0.1f,
                          .rng = &rng,
                          .word_dropout = nm->model.dims.tie_embeddings ? 0.1f : 0};
    for (int s = 0; s < steps; s++) {
        ck_assert(model_forward(&nm->model, &acts, batch, &opt, &losses[s], &err) == 0);
        model_zero_grad(&nm->model);
        model_backward(&nm->model, &acts);
        double norm = grad_norm(nm->model.grads, nm->model.table.total, NO_ZERO_GRADS);
        adam_step(adam, nm->model.params, nm->model.grads, NO_ZERO_GRADS, clip_scale(norm, 1.0),
                  0.01);
    }
    acts_free(&acts);
    batch_buffer_free(&bb);
}

START_TEST(training_loss_falls_and_is_reproducible) {
    double first[80], second[80];
    for (int run = 0; run < 2; run++) {
        Setup s;
        setup_make(&s, 1);
        Adam adam;
        Error err;
        ck_assert(adam_init(&adam, s.nm.model.table.total, 0.9, 0.999, 1e-8, &err) == 0);
        train_steps(&s.nm, &s.ds, &adam, 80, run == 0 ? first : second);
        adam_free(&adam);
        setup_free(&s);
    }
    ck_assert_msg(first[79] < 0.3 * first[0], "loss went from %g to %g", first[0], first[79]);
    ck_assert(memcmp(first, second, sizeof first) == 0);
}
END_TEST

static long file_size(const char *path) {
    struct stat st;
    ck_assert(stat(path, &st) == 0);
    return (long)st.st_size;
}

static unsigned char *slurp(const char *path, long *n) {
    *n = file_size(path);
    unsigned char *data = malloc((size_t)*n);
    FILE *f = fopen(path, "rb");
    ck_assert(data && f && fread(data, 1, (size_t)*n, f) == (size_t)*n);
    fclose(f);
    return data;
}

/* Writes a new file, never the old one truncated: ext4 starts writing back a file that was
 * truncated and written again as it is closed, and the damage test's thousands of rewrites
 * would each wait for the disk. */
static void spit(const char *path, const unsigned char *data, long n) {
    ck_assert(unlink(path) == 0 || errno == ENOENT);
    FILE *f = fopen(path, "wb");
    ck_assert(f && fwrite(data, 1, (size_t)n, f) == (size_t)n);
    ck_assert(fclose(f) == 0);
}

/* _i: the encoder (even: unidirectional) and the attention score (_i / 2), which the
 * checkpoint keeps in its formerly reserved field; _i / 2 = SCORE_COUNT: tied embeddings,
 * trained with word dropout, which come back tied with out.w absent; _i / 2 = SCORE_COUNT + 1:
 * layer-normalised GRUs, which come back normalised with their trained gains */
START_TEST(checkpoint_round_trip) {
    Setup s;
    setup_make_score(&s, _i % 2, (AttentionScore)(_i / 2));
    Error err;
    Adam adam;
    ck_assert(adam_init(&adam, s.nm.model.table.total, 0.9, 0.999, 1e-8, &err) == 0);
    double losses[3];
    train_steps(&s.nm, &s.ds, &adam, 3, losses); /* non-trivial moments */
    TrainState state = {.step = 3,
                        .epoch = 1,
                        .batch_in_epoch = 2,
                        .lr_scale = 0.5,
                        .best_bleu = 12.5,
                        .best_dev_loss = 1.25,
                        .bad_validations = 1,
                        .plateau_bad = 2,
                        .dropout_rng = {1, 2, 3, 4},
                        .adam_t = adam.t,
                        .adam_m = adam.m,
                        .adam_v = adam.v};
    char path[128];
    snprintf(path, sizeof path, "%s/model.ckpt", s.dir);
    ck_assert_msg(checkpoint_save(path, &s.nm, &state, &err) == 0, "%s", err.msg);

    NmtModel back;
    TrainState state_back = {0};
    bool has_state;
    ck_assert_msg(checkpoint_load(path, &back, &state_back, &has_state, &err) == 0, "%s", err.msg);
    ck_assert(has_state);
    ck_assert(memcmp(&back.model.dims, &s.nm.model.dims, sizeof back.model.dims) == 0);
    ck_assert_int_eq(back.model.dims.score, _i / 2 >= SCORE_COUNT ? SCORE_ADDITIVE : _i / 2);
    ck_assert_int_eq(back.model.dims.tie_embeddings, _i / 2 == SCORE_COUNT);
    ck_assert_int_eq(back.model.table.info[P_OUT_W].size == 0, _i / 2 == SCORE_COUNT);
    bool normalised = _i / 2 == SCORE_COUNT + 1;
    ck_assert_int_eq(back.model.dims.layer_norm, normalised);
    ck_assert_int_eq(back.model.table.info[P_DEC_GRU_G_HH].size, normalised ? 3 * 10 : 0);
    if (normalised) { /* trained away from their initial 1, and back as they were */
        const ParamInfo *gain = &back.model.table.info[P_ENC_FWD_G_IH];
        ck_assert(back.model.params[gain->offset] != 1);
        ck_assert(back.model.params[gain->offset] == s.nm.model.params[gain->offset]);
    }
    ck_assert(back.lowercase == s.nm.lowercase);
    ck_assert(memcmp(back.model.params, s.nm.model.params, sizeof(real) * s.nm.model.table.total) ==
              0);
    ck_assert(memcmp(state_back.adam_m, adam.m, sizeof(real) * adam.n) == 0);
    ck_assert(memcmp(state_back.adam_v, adam.v, sizeof(real) * adam.n) == 0);
    ck_assert(state_back.adam_t == adam.t);
    /* every field but the moments' addresses */
    TrainState expected = state;
    expected.adam_m = state_back.adam_m, expected.adam_v = state_back.adam_v;
    ck_assert(memcmp(&state_back, &expected, sizeof state) == 0);
    free(state_back.adam_m), free(state_back.adam_v);
    ck_assert_uint_eq(back.tgt_vocab.size, s.nm.tgt_vocab.size);
    for (size_t i = 0; i < back.tgt_vocab.size; i++)
        ck_assert_str_eq(vocab_token(&back.tgt_vocab, (int)i),
                         vocab_token(&s.nm.tgt_vocab, (int)i));
    /* a translation-only checkpoint has no state */
    ck_assert(checkpoint_save(path, &s.nm, NULL, &err) == 0);
    nmt_model_free(&back);
    ck_assert(checkpoint_load(path, &back, &state_back, &has_state, &err) == 0);
    ck_assert(!has_state);
    nmt_model_free(&back);
    adam_free(&adam);
    setup_free(&s);
}
END_TEST

static void expect_load_error(const char *path, const char *fragment) {
    NmtModel nm;
    Error err;
    ck_assert_msg(checkpoint_load(path, &nm, NULL, NULL, &err) == -1, "%s loaded", path);
    ck_assert_msg(strstr(err.msg, fragment) != NULL, "'%s' lacks '%s'", err.msg, fragment);
    ck_assert_msg(strstr(err.msg, path) != NULL, "'%s' does not name the file", err.msg);
}

START_TEST(checkpoint_damage_is_detected) {
    Setup s;
    setup_make(&s, 1);
    Error err;
    char path[128], bad[160];
    snprintf(path, sizeof path, "%s/model.ckpt", s.dir);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", s.dir);
    ck_assert(checkpoint_save(path, &s.nm, NULL, &err) == 0);
    long n;
    unsigned char *data = slurp(path, &n);
    /* truncated at every length */
    for (long len = 0; len < n; len++) {
        spit(bad, data, len);
        NmtModel nm;
        ck_assert_msg(checkpoint_load(bad, &nm, NULL, NULL, &err) == -1,
                      "truncated to %ld of %ld bytes loaded", len, n);
    }
    /* one flipped bit anywhere */
    for (long at = 0; at < n; at += 7) {
        data[at] ^= 0x10;
        spit(bad, data, n);
        NmtModel nm;
        ck_assert_msg(checkpoint_load(bad, &nm, NULL, NULL, &err) == -1, "bit flip at %ld loaded",
                      at);
        data[at] ^= 0x10;
    }
    spit(bad, data, n - 1);
    expect_load_error(bad, "checksum");
    memcpy(data, "NOTACKPT", 8);
    spit(bad, data, n);
    expect_load_error(bad, "bad magic");
    expect_load_error(s.dir, "not a regular file");
    snprintf(bad, sizeof bad, "%s/missing.ckpt", s.dir);
    expect_load_error(bad, "No such file");
    /* a failed save leaves the good checkpoint in place */
    long before = file_size(path);
    ck_assert(access("/dev/full", W_OK) == 0);
    ck_assert(checkpoint_save("/dev/full/x.ckpt", &s.nm, NULL, &err) == -1);
    ck_assert(file_size(path) == before);
    free(data);
    setup_free(&s);
}
END_TEST

/* The checksum as checkpoint.h defines it, against values computed apart (a few lines of
 * Python over the same bytes): the lanes' for version 3, plain FNV-1a for versions 1 and 2. */
START_TEST(checksum_known_answers) {
    unsigned char data[41] = "NMTCKPT1";
    for (int i = 0; i < 29; i++) data[12 + i] = (unsigned char)(7 * i);
    data[8] = 3;
    ck_assert_uint_eq(checkpoint_checksum(data, sizeof data), 0x510c79e268c1cfc3ull);
    data[8] = 1;
    ck_assert_uint_eq(checkpoint_checksum(data, sizeof data), 0x85286c3233cb0668ull);
}
END_TEST

/* Files of versions 1 and 2, with their byte-serial checksum, still load: those that the code
 * of 2026-11-21 wrote (the fuzzer's seeds), and this code's file labelled as version 1. */
START_TEST(checkpoint_versions_1_and_2_still_load) {
    const char *old[] = {"best.ckpt", "last.ckpt", "last-batches.ckpt", "last-double.ckpt",
                         "unidirectional-cased.ckpt"};
    Error err;
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "fuzz/corpus/checkpoint/%s", old[i]);
        NmtModel nm;
        TrainState state = {0};
        bool has_state;
        ck_assert_msg(checkpoint_load(path, &nm, &state, &has_state, &err) == 0, "%s", err.msg);
        ck_assert(has_state == (old[i][0] == 'l'));
        free(state.adam_m), free(state.adam_v), free(state.ema);
        nmt_model_free(&nm);
    }
    Setup s;
    setup_make(&s, 1);
    char path[128];
    snprintf(path, sizeof path, "%s/model.ckpt", s.dir);
    ck_assert(checkpoint_save(path, &s.nm, NULL, &err) == 0);
    long n;
    unsigned char *data = slurp(path, &n);
    ck_assert_int_eq(data[8], 3);
    data[8] = 1;
    uint64_t sum = checkpoint_checksum(data, (size_t)n - 8);
    memcpy(data + n - 8, &sum, 8);
    spit(path, data, n);
    NmtModel back;
    ck_assert_msg(checkpoint_load(path, &back, NULL, NULL, &err) == 0, "%s", err.msg);
    ck_assert(memcmp(back.model.params, s.nm.model.params, sizeof(real) * s.nm.model.table.total) ==
              0);
    nmt_model_free(&back);
    free(data);
    setup_free(&s);
}
END_TEST

START_TEST(clipping_bounds_the_norm) {
    real g[4] = {3, 4, 0, 0};
    double norm = grad_norm(g, 4, NO_ZERO_GRADS);
    ck_assert_double_eq_tol(norm, 5, 1e-9);
    real scale = clip_scale(norm, 1.0), clipped[4];
    for (int i = 0; i < 4; i++) clipped[i] = g[i] * scale;
    ck_assert_double_eq_tol(grad_norm(clipped, 4, NO_ZERO_GRADS), 1, 1e-5);
    ck_assert(clip_scale(grad_norm((real[]){0.3f, 0.4f}, 2, NO_ZERO_GRADS), 1.0) ==
              1);                     /* within the limit */
    ck_assert(clip_scale(5, 0) == 1); /* 0: no clipping */
    /* Adam reads the gradients scaled: the same update as from scaled gradients */
    Adam a, b;
    Error err;
    ck_assert(adam_init(&a, 4, 0.9, 0.999, 1e-8, &err) == 0);
    ck_assert(adam_init(&b, 4, 0.9, 0.999, 1e-8, &err) == 0);
    real p[4] = {1, 2, 3, 4}, q[4] = {1, 2, 3, 4};
    adam_step(&a, p, g, NO_ZERO_GRADS, scale, 0.1);
    adam_step(&b, q, clipped, NO_ZERO_GRADS, 1, 0.1);
    ck_assert(memcmp(p, q, sizeof p) == 0);
    adam_free(&a);
    adam_free(&b);
}
END_TEST

/* Two Adam steps worked out by hand (lr 0.1, beta1 0.9, beta2 0.999, eps 1e-8), the first
 * with its gradient [3, 4] clipped to norm 1:
 *   step 1: g = [0.6, 0.8]; m = 0.1 g = [0.06, 0.08]; v = 0.001 g^2 = [0.00036, 0.00064];
 *           bias-corrected m / sqrt(v) = g / |g| = 1 each: p = [0, 0] - 0.1 = [-0.1, -0.1]
 *   step 2: g = [0.3, -0.4] (norm 0.5, not clipped); m = 0.9 m + 0.1 g = [0.084, 0.032];
 *           v = 0.999 v + 0.001 g^2 = [0.00044964, 0.00079936]; corrections 1 - 0.9^2 = 0.19
 *           and 1 - 0.999^2 = 0.001999: p -= 0.1 (m / 0.19) / sqrt(v / 0.001999)
 *           = [-0.193217960, -0.126633702] */
START_TEST(adam_two_steps_by_hand) {
    Adam adam;
    Error err;
    ck_assert(adam_init(&adam, 2, 0.9, 0.999, 1e-8, &err) == 0);
    real p[2] = {0, 0}, g1[2] = {3, 4}, g2[2] = {0.3f, -0.4f};
    ck_assert(adam_step(&adam, p, g1, NO_ZERO_GRADS,
                        clip_scale(grad_norm(g1, 2, NO_ZERO_GRADS), 1.0), 0.1));
    ck_assert(g1[0] == 0 && g1[1] == 0); /* consumed: ready for the next backward pass */
    ck_assert_double_eq_tol(adam.m[0], 0.06, 1e-7);
    ck_assert_double_eq_tol(adam.m[1], 0.08, 1e-7);
    ck_assert_double_eq_tol(adam.v[0], 0.00036, 1e-8); /* float: 1 - beta2 rounds */
    ck_assert_double_eq_tol(adam.v[1], 0.00064, 1e-8);
    ck_assert_double_eq_tol(p[0], -0.1, 1e-6);
    ck_assert_double_eq_tol(p[1], -0.1, 1e-6);
    ck_assert(adam_step(&adam, p, g2, NO_ZERO_GRADS,
                        clip_scale(grad_norm(g2, 2, NO_ZERO_GRADS), 1.0), 0.1));
    ck_assert_uint_eq(adam.t, 2);
    ck_assert_double_eq_tol(adam.m[0], 0.084, 1e-7);
    ck_assert_double_eq_tol(adam.m[1], 0.032, 1e-7);
    /* float keeps about 7 digits through the corrections */
    double tol = sizeof(real) == 8 ? 1e-9 : 1e-5;
    ck_assert_double_eq_tol(p[0], -0.193217960, tol);
    ck_assert_double_eq_tol(p[1], -0.126633702, tol);
    adam_free(&adam);
}
END_TEST

/* Gradients with runs of zeros that the norm and Adam are told of: the same norm and the same
 * parameters and moments, bit for bit, as when they read the zeros. The runs start and end
 * anywhere (inside a block of the norm's lanes, across the 64 chunks, at either end, next to
 * each other), and the skipped parameters still move by their moments. */
START_TEST(skipping_zero_gradients_changes_no_bit) {
    enum { N = 64 * 101 + 13 };
    static const ParamSpan spans[] = {{0, 5},       {40, 41},     {64, 200},    {200, 231},
                                      {300, 1500},  {1501, 1533}, {2000, 2032}, {4100, 4700},
                                      {5000, 5001}, {6390, N}};
    ZeroGrads zero = {spans, sizeof spans / sizeof spans[0]};
    Adam dense, sparse;
    Error err;
    ck_assert(adam_init(&dense, N, 0.9, 0.999, 1e-8, &err) == 0);
    ck_assert(adam_init(&sparse, N, 0.9, 0.999, 1e-8, &err) == 0);
    static real p[N], q[N], g[N], h[N];
    Rng rng;
    rng_seed(&rng, 5, 0);
    for (int i = 0; i < N; i++) p[i] = q[i] = (real)rng_normal(&rng);
    for (int step = 0; step < 3; step++) {
        /* magnitudes 2^-20 to 2^20, so that a sum in another order rounds otherwise */
        for (int i = 0; i < N; i++)
            g[i] = (real)ldexp(rng_normal(&rng), (int)rng_below(&rng, 41) - 20);
        if (step > 0) /* the first step fills every moment */
            for (size_t k = 0; k < zero.count; k++)
                for (size_t i = spans[k].begin; i < spans[k].end; i++) g[i] = 0;
        memcpy(h, g, sizeof g);
        double norm = grad_norm(g, N, NO_ZERO_GRADS);
        ck_assert(grad_norm(h, N, step > 0 ? zero : NO_ZERO_GRADS) == norm);
        real before = q[spans[4].begin];
        ck_assert(adam_step(&dense, p, g, NO_ZERO_GRADS, clip_scale(norm, 1.0), 0.01));
        ck_assert(
            adam_step(&sparse, q, h, step > 0 ? zero : NO_ZERO_GRADS, clip_scale(norm, 1.0), 0.01));
        ck_assert(memcmp(p, q, sizeof p) == 0);
        ck_assert(memcmp(dense.m, sparse.m, sizeof p) == 0);
        ck_assert(memcmp(dense.v, sparse.v, sizeof p) == 0);
        for (int i = 0; i < N; i++) ck_assert(h[i] == 0);
        ck_assert(q[spans[4].begin] != before);
    }
    adam_free(&dense);
    adam_free(&sparse);
    /* The norm's lanes count from each chunk's start (chunks of 512 here): 2^54 and twelve
     * 1s in lane 0 sum to 2^54 (each 1 rounds away), while in another lane the 1s would add
     * 12 to the total. Skipping zeros must not move them: not a run shorter than a block,
     * and of a longer one, only its whole blocks. */
    enum { M = 64 * 512 };
    static real x[M];
    x[0] = 0x1p27f;
    for (int i = 32; i < 512; i += 32) x[i] = i < 100 || i >= 200;
    ck_assert(grad_norm(x, M, NO_ZERO_GRADS) == 0x1p27);
    ck_assert(grad_norm(x, M, (ZeroGrads){(ParamSpan[]){{1, 5}, {100, 200}}, 2}) == 0x1p27);
}
END_TEST

/* A team of threads writes its new parameters with streaming stores (adam.c), from blocks on
 * the stack: the same parameters, moments and consumed gradients, bit for bit, as one thread
 * writing in place, whatever the alignment of the chunks and of the block (offset by one value
 * here), and through the runs of zero gradients. */
START_TEST(a_team_updates_the_same_bits_as_one_thread) {
    enum { N = 64 * 3001 + 7 }; /* above adam_step's threshold for a team; odd chunks */
    static const ParamSpan spans[] = {{3, 700}, {3000, 9100}, {N - 9, N}};
    ZeroGrads zero = {spans, sizeof spans / sizeof spans[0]};
    Adam alone, team;
    Error err;
    ck_assert(adam_init(&alone, N, 0.9, 0.999, 1e-8, &err) == 0);
    ck_assert(adam_init(&team, N, 0.9, 0.999, 1e-8, &err) == 0);
    static real p_store[N + 1], q_store[N + 1], g[N], h[N];
    real *p = p_store + 1, *q = q_store + 1;
    Rng rng;
    rng_seed(&rng, 11, 0);
    for (int i = 0; i < N; i++) p[i] = q[i] = (real)rng_normal(&rng);
    int saved = omp_get_max_threads();
    for (int step = 0; step < 3; step++) {
        for (int i = 0; i < N; i++) g[i] = (real)rng_normal(&rng);
        if (step > 0)
            for (size_t k = 0; k < zero.count; k++)
                for (size_t i = spans[k].begin; i < spans[k].end; i++) g[i] = 0;
        memcpy(h, g, sizeof g);
        ZeroGrads skip = step > 0 ? zero : NO_ZERO_GRADS;
        omp_set_num_threads(1);
        ck_assert(adam_step(&alone, p, g, skip, 0.5f, 0.01));
        omp_set_num_threads(2);
        ck_assert(adam_step(&team, q, h, skip, 0.5f, 0.01));
        ck_assert(memcmp(p, q, sizeof(real) * N) == 0);
        ck_assert(memcmp(alone.m, team.m, sizeof(real) * N) == 0);
        ck_assert(memcmp(alone.v, team.v, sizeof(real) * N) == 0);
        for (int i = 0; i < N; i++) ck_assert(g[i] == 0 && h[i] == 0);
    }
    omp_set_num_threads(saved);
    ck_assert(p_store[0] == 0 && q_store[0] == 0); /* nothing written before the block */
    adam_free(&alone);
    adam_free(&team);
}
END_TEST

/* An update that overflows a parameter is reported (the trainer stops on it), and the
 * gradients are still consumed. */
START_TEST(adam_reports_an_overflow) {
    Adam adam;
    Error err;
    ck_assert(adam_init(&adam, 2, 0.9, 0.999, 1e-8, &err) == 0);
    /* near the top of the range: big + big / 10 overflows */
    real big = sizeof(real) == 8 ? (real)1.7e308 : (real)3.3e38;
    real p[2] = {big, 0}, g[2] = {-1, 1};
    /* the first update moves each parameter by lr against its gradient's sign (m / sqrt(v)
     * is 1 after bias correction): p[0] = big + lr overflows, p[1] = -lr does not */
    ck_assert(!adam_step(&adam, p, g, NO_ZERO_GRADS, 1, (double)big / 10));
    ck_assert(isinf(p[0]) && isfinite(p[1]));
    ck_assert(g[0] == 0 && g[1] == 0);
    adam_free(&adam);
}
END_TEST

/* Each schedule at the steps where it changes: warm-up, decay, plateau factor, the floor. */
START_TEST(learning_rate_schedules) {
    ConfigOptim o = {.lr = 0.01, .schedule = LR_SCHEDULE_CONSTANT, .min_lr = 0};
    ck_assert_double_eq(schedule_lr(&o, 0, 1, 0), 0.01);
    ck_assert_double_eq(schedule_lr(&o, 100000, 0.5, 0), 0.01); /* lr_scale is plateau's */
    o.warmup_steps = 4;                                         /* (step + 1) / 4 up to 1 */
    ck_assert_double_eq_tol(schedule_lr(&o, 0, 1, 0), 0.0025, 1e-15);
    ck_assert_double_eq_tol(schedule_lr(&o, 2, 1, 0), 0.0075, 1e-15);
    ck_assert_double_eq_tol(schedule_lr(&o, 3, 1, 0), 0.01, 1e-15);
    ck_assert_double_eq_tol(schedule_lr(&o, 50, 1, 0), 0.01, 1e-15);
    o.schedule = LR_SCHEDULE_WARMUP_DECAY, o.decay_rate = 0.5, o.decay_steps = 10;
    ck_assert_double_eq_tol(schedule_lr(&o, 4, 1, 0), 0.01 * pow(0.5, 0.0), 1e-15);
    ck_assert_double_eq_tol(schedule_lr(&o, 14, 1, 0), 0.005, 1e-15);  /* one decay period */
    ck_assert_double_eq_tol(schedule_lr(&o, 24, 1, 0), 0.0025, 1e-15); /* two */
    ck_assert_double_eq_tol(schedule_lr(&o, 9, 1, 0), 0.01 * pow(0.5, 0.5), 1e-15);
    o.min_lr = 0.004; /* the floor */
    ck_assert_double_eq_tol(schedule_lr(&o, 24, 1, 0), 0.004, 1e-15);
    o.schedule = LR_SCHEDULE_PLATEAU, o.min_lr = 0, o.warmup_steps = 0;
    ck_assert_double_eq_tol(schedule_lr(&o, 1000, 0.25, 0), 0.0025, 1e-15);
    o.min_lr = 0.003;
    ck_assert_double_eq_tol(schedule_lr(&o, 1000, 0.25, 0), 0.003, 1e-15);
    /* budget, decaying over its last 40%: full rate up to 60% spent, then linear to 0 */
    o.schedule = LR_SCHEDULE_BUDGET, o.decay_share = 0.4, o.min_lr = 0;
    ck_assert_double_eq_tol(schedule_lr(&o, 7, 0.25, 0.0), 0.01, 1e-15);
    ck_assert_double_eq_tol(schedule_lr(&o, 7, 1, 0.6), 0.01, 1e-15);
    ck_assert_double_eq_tol(schedule_lr(&o, 7, 1, 0.7), 0.0075, 1e-15);
    ck_assert_double_eq_tol(schedule_lr(&o, 7, 1, 0.9), 0.0025, 1e-15);
    ck_assert_double_eq_tol(schedule_lr(&o, 7, 1, 1.0), 0, 1e-15);
    ck_assert_double_eq_tol(schedule_lr(&o, 7, 1, 1.2), 0, 1e-15); /* past the end: no less */
    o.min_lr = 1e-4, o.warmup_steps = 4;
    ck_assert_double_eq_tol(schedule_lr(&o, 1, 1, 0.95), 0.5 * 0.00125, 1e-15);
    ck_assert_double_eq_tol(schedule_lr(&o, 9, 1, 1.0), 1e-4, 1e-15);
}
END_TEST

/* The ranks' shares of a batch interleave: rank r takes pairs r, r + size, ... in order, so
 * together they cover the batch exactly once and differ by at most one pair (an empty share
 * when there are more ranks than pairs); one process takes the whole batch as it is, and its
 * step is left as it is. */
START_TEST(ranks_share_each_batch) {
    size_t pairs[40];
    for (size_t i = 0; i < 40; i++) pairs[i] = 1000 + 7 * i; /* any indices */
    for (int size = 1; size <= 5; size++)
        for (size_t n = 0; n <= 40; n++) {
            int seen[40] = {0};
            size_t least = n, most = 0;
            for (int rank = 0; rank < size; rank++) {
                Dist d = {.rank = rank, .size = size};
                size_t share[41];
                size_t count = dist_share(&d, pairs, n, share);
                for (size_t k = 0; k < count; k++) {
                    size_t i = (size_t)rank + k * (size_t)size; /* the k-th pair of rank */
                    ck_assert_uint_lt(i, n);
                    ck_assert_uint_eq(share[k], pairs[i]);
                    seen[i]++;
                }
                least = count < least ? count : least;
                most = count > most ? count : most;
            }
            for (size_t i = 0; i < n; i++) ck_assert_int_eq(seen[i], 1);
            ck_assert_uint_le(most - least, 1);
        }
    Dist one = {.rank = 0, .size = 1};
    real g[3] = {1, -2, 3};
    double loss = 2.5;
    long tokens = 7;
    int stop[STOP_REASONS] = {[STOP_SIGNAL] = 0, [STOP_TIME] = 1};
    Error err;
    double used = 0.25;
    ck_assert(dist_reduce_step(&one, g, 3, &loss, &tokens, stop, &used, &err) == 0);
    ck_assert(g[0] == 1 && g[1] == -2 && g[2] == 3 && loss == 2.5 && tokens == 7);
    ck_assert(stop[STOP_SIGNAL] == 0 && stop[STOP_TIME] == 1 && used == 0.25);
    Rng shared, local;
    rng_seed(&shared, 1, 2);
    ck_assert(dist_dropout_stream(&one, &shared, &local) == &shared);
}
END_TEST

/* Runs bin/train under a pseudo-terminal (`script`) with the test setup and extra --set
 * overrides; *r gets what the terminal showed. False (and a skip) when `script` is absent. */
static bool train_on_a_terminal(RunResult *r, const Scratch *s, const char *overrides) {
    const char *script = script_program();
    if (!script) return false;
    char config[128], command[512];
    scratch_path(s, "tiny.ini", config, sizeof config);
    snprintf(command, sizeof command, "../bin/train %s --overwrite %s", config, overrides);
    run_program(r, s, (const char *const[]){script, "-q", "-e", "-c", command, "/dev/null", NULL},
                NULL, 60, NULL);
    ck_assert_msg(r->status == 0, "%d: %s", r->status, r->out);
    return true;
}

/* The seconds of the first "ETA m:ss" in text after `from`; -1 when there is none. */
static int first_eta(const char *from) {
    const char *at = strstr(from, "ETA ");
    int minutes, seconds;
    if (!at || sscanf(at, "ETA %d:%d", &minutes, &seconds) != 2) return -1;
    return 60 * minutes + seconds;
}

/* The progress line on a terminal (issue #36): the step total only when one is known, and an
 * ETA by whichever of the time budget, the step limit and the epochs ends the run first. */
START_TEST(progress_line_shows_the_total_and_the_nearest_end) {
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    RunResult r;
    /* a 1.2 s budget ends a run of ten million steps: the ETA is never more than the budget */
    if (!train_on_a_terminal(
            &r, &s,
            "--set train.max_steps=10000000 --set train.epochs=0 --set train.max_minutes=0.02 "
            "--set train.valid_every=1000000")) {
        test_skip("progress_line_shows_the_total_and_the_nearest_end",
                  "`script` (util-linux) is not installed, so no pseudo-terminal");
        scratch_free(&s);
        return;
    }
    assert_contains(r.out, "step 1/10000000 ");
    int lines = 0;
    /* the capture keeps only the start of a long output: its last line may be cut short */
    int full = strlen(r.out) + 1 >= sizeof r.out;
    for (const char *p = strstr(r.out, "ETA "); p; p = strstr(p + 4, "ETA ")) {
        int eta = first_eta(p);
        if (eta < 0 && full && !strpbrk(p, "\r\n")) break;
        ck_assert_msg(eta >= 0 && eta <= 2, "ETA of %d s with a 1.2 s budget: %.100s", eta, p - 60);
        lines++;
    }
    ck_assert_int_gt(lines, 0);
    /* only a time budget: no total to show, and no bare slash */
    train_on_a_terminal(&r, &s,
                        "--set train.max_steps=0 --set train.epochs=0 --set train.max_minutes=0.01 "
                        "--set train.valid_every=1000000");
    assert_contains(r.out, "step 1  loss");
    ck_assert_msg(!strstr(r.out, "/  loss") && !strstr(r.out, "step 1/"), "%.300s", r.out);
    /* the step limit of the setup */
    train_on_a_terminal(&r, &s, "");
    assert_contains(r.out, "step 1/4  loss");
    scratch_free(&s);
}
END_TEST

/* A time budget spent before the first step ([train] max_minutes = 1e-9) ended the run with
 * 0 steps, a note about a resumed run that was none and "cannot open checkpoint
 * run/last.ckpt", exit 1. A new run takes one step at least: a model, validated, saved and
 * scored (a resumed run has its model, and stops at once: budget_schedule_and_resumed_time). */
START_TEST(time_budget_takes_one_step_at_least) {
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    char config[512], best[512], dev[512], test[600];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "run/best.ckpt", best, sizeof best);
    scratch_path(&s, "dev.tsv", dev, sizeof dev);
    snprintf(test, sizeof test, "data.test=%s", dev);
    RunResult r;
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--set", "train.max_minutes=1e-9",
                                      "--set", test, NULL},
                NULL, 60, NULL);
    bool saved = access(best, F_OK) == 0;
    scratch_free(&s);
    ck_assert_msg(r.status == 0, "%s", r.err);
    assert_contains(r.out, "done: 1 steps");
    assert_contains(r.out, "test (");
    ck_assert_msg(saved, "no best.ckpt");
}
END_TEST

/* The validation after the step that completed an epoch logged the next epoch ("step 3 epoch
 * 2" for a run of one epoch of 3 steps): its row now names the epoch of its step. */
START_TEST(validation_row_names_the_epoch_of_its_step) {
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    char config[512], log[512], epochs[256];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "run/train_log.tsv", log, sizeof log);
    RunResult r;
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--set", "train.max_steps=0", "--set",
                                      "train.epochs=1", "--set", "train.valid_every=1000", NULL},
                NULL, 60, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    log_column(log, 1, epochs, sizeof epochs);
    scratch_free(&s);
    ck_assert_str_eq(epochs, "epoch,1,1,1,1,"); /* 6 pairs in batches of 2, then the validation */
    ck_assert_msg(strstr(r.out, "epoch 2") == NULL, "%s", r.out);
}
END_TEST

/* A run killed after its last save had logged steps past last.ckpt's; resumed, it logged
 * them again after them, and the log went back in steps, each twice (bin/plot drew it so).
 * The resumed log drops the rows past the checkpoint's step first. */
START_TEST(resumed_log_goes_on_from_the_checkpoint) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char config[512], log[512], steps[1024];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "run/train_log.tsv", log, sizeof log);
    FILE *f = fopen(log, "a"); /* steps 5 and 6 logged, then the run killed before a save */
    ck_assert_ptr_nonnull(f);
    fputs("5\t2\t1.0\t0.001\t\t\t\t\t100\t1\t0\n6\t2\t1.0\t0.001\t\t\t\t\t100\t1\t0\n", f);
    ck_assert_int_eq(fclose(f), 0);
    RunResult r;
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--resume", "--set",
                                      "train.max_steps=8", NULL},
                NULL, 60, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    log_column(log, 0, steps, sizeof steps);
    scratch_free(&s);
    long previous = 0, rows = 0;
    for (char *p = strchr(steps, ',') + 1; *p; p = strchr(p, ',') + 1, rows++) {
        long step = strtol(p, NULL, 10);
        ck_assert_msg(step >= previous, "the log goes back from step %ld to %ld: %s", previous,
                      step, steps);
        previous = step;
    }
    ck_assert_msg(previous == 8 && rows > 8, "the resumed run did not log to step 8: %s", steps);
}
END_TEST

/* OUT_DIR/config.ini reruns the run it records (issue #36): its paths are absolute, so it
 * does not matter that it lives in another folder than the config it was made from. */
START_TEST(recorded_config_reruns_the_run) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char recorded[128], log[128];
    scratch_path(&s, "run/config.ini", recorded, sizeof recorded);
    scratch_path(&s, "run/train_log.tsv", log, sizeof log);
    size_t len;
    char *text = (char *)slurp_file(recorded, &len);
    char expected[160];
    snprintf(expected, sizeof expected, "train = %s/train.tsv\n", s.dir);
    assert_contains(text, expected);
    snprintf(expected, sizeof expected, "out_dir = %s/run\n", s.dir);
    assert_contains(text, expected);
    free(text);
    remove(log);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/train", recorded, "--overwrite", NULL}, NULL,
                60, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    char steps[256];
    log_column(log, 0, steps, sizeof steps);
    ck_assert_str_eq(steps, "step,1,2,2,3,4,4,");
    scratch_free(&s);
}
END_TEST

Suite *train_suite(void) {
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("train");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, training_loss_falls_and_is_reproducible);
    tcase_add_loop_test(tc, checkpoint_round_trip, 0, 2 * SCORE_COUNT + 4);
    tcase_add_test(tc, checkpoint_damage_is_detected);
    tcase_add_test(tc, checksum_known_answers);
    tcase_add_test(tc, checkpoint_versions_1_and_2_still_load);
    tcase_add_test(tc, clipping_bounds_the_norm);
    tcase_add_test(tc, adam_two_steps_by_hand);
    tcase_add_test(tc, adam_reports_an_overflow);
    tcase_add_test(tc, skipping_zero_gradients_changes_no_bit);
    tcase_add_test(tc, a_team_updates_the_same_bits_as_one_thread);
    tcase_add_test(tc, learning_rate_schedules);
    tcase_add_test(tc, ranks_share_each_batch);
    tcase_add_test(tc, progress_line_shows_the_total_and_the_nearest_end);
    tcase_add_test(tc, recorded_config_reruns_the_run);
    tcase_add_test(tc, resumed_log_goes_on_from_the_checkpoint);
    tcase_add_test(tc, validation_row_names_the_epoch_of_its_step);
    tcase_add_test(tc, time_budget_takes_one_step_at_least);
    suite_add_tcase(s, tc);
    return s;
}

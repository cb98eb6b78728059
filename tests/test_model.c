/*
 * test_model.c: the whole model: gradients against finite differences, padding that does not
 * leak, attention invariants, seeded initialisation, and what the thread count may change.
 */
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/fixtures.h"
#include "reference/fdcheck.h"
#include "model/search.h"
#include "tests/suites.h"

static const ModelDims TINY = {.src_vocab = 11,
                               .tgt_vocab = 13,
                               .emb = 5,
                               .enc_hidden = 4,
                               .bidirectional = 1,
                               .dec_hidden = 6,
                               .att = 3,
                               .readout = 7};

/* Big enough that the parallel loops really split. */
static const ModelDims SPLIT = {.src_vocab = 300,
                                .tgt_vocab = 400,
                                .emb = 32,
                                .enc_hidden = 48,
                                .bidirectional = 1,
                                .dec_hidden = 64,
                                .att = 40,
                                .readout = 56};

/* The toy configuration's sizes (configs/toy.ini on data/toy), where a row's products do
 * take another path with another split of the rows. */
static const ModelDims TOY = {.src_vocab = 244,
                              .tgt_vocab = 452,
                              .emb = 64,
                              .enc_hidden = 128,
                              .bidirectional = 1,
                              .dec_hidden = 128,
                              .att = 128,
                              .readout = 128};

typedef struct {
    Model model;
    Acts acts;
    RandomBatch rb;
} Fixture;

static void fixture_make_plan(Fixture *f, const ModelDims *dims, int B, int S, int T, uint64_t seed,
                              const ActsPlan *plan) {
    Error err;
    ck_assert_msg(model_init(&f->model, dims, &err) == 0, "%s", err.msg);
    ck_assert_msg(acts_init_plan(&f->acts, dims, B, S, T, plan, &err) == 0, "%s", err.msg);
    ck_assert_msg(random_batch_make(&f->rb, dims, B, S, T, seed, &err) == 0, "%s", err.msg);
    params_init(f->model.params, &f->model.table, seed);
}

static void fixture_make(Fixture *f, const ModelDims *dims, int B, int S, int T, uint64_t seed) {
    fixture_make_plan(f, dims, B, S, T, seed, NULL);
}

static void fixture_free(Fixture *f) {
    random_batch_free(&f->rb);
    acts_free(&f->acts);
    model_free(&f->model);
}

static double forward_backward(Fixture *f, const Batch *batch) {
    ForwardOptions opt = {0};
    Error err;
    double loss;
    model_zero_grad(&f->model);
    ck_assert_msg(model_forward(&f->model, &f->acts, batch, &opt, &loss, &err) == 0, "%s", err.msg);
    model_backward(&f->model, &f->acts);
    return loss;
}

/* dims with the attention score `score`; dot needs D = K */
static ModelDims with_score(ModelDims dims, AttentionScore score) {
    dims.score = score;
    if (score == SCORE_DOT) dims.dec_hidden = dims_enc_state(&dims);
    return dims;
}

START_TEST(gradients_match_finite_differences) {
    /* every tensor, sampled (the double build's bin/gradcheck checks every element), with each
     * attention score, then with layer-normalised GRUs (bidirectional, additive; CI's
     * bin/gradcheck --layer-norm checks every score and element) */
    for (int run = 0; run <= 2 * SCORE_COUNT; run++) {
        ModelDims dims = TINY;
        dims.layer_norm = run == 2 * SCORE_COUNT;
        dims.bidirectional = run % 2 || dims.layer_norm;
        dims = with_score(dims, (AttentionScore)(run / 2 % SCORE_COUNT));
        Fixture f;
        /* the output layer in chunks of 5 of the 12 rows; attention recomputed */
        fixture_make_plan(&f, &dims, 3, 5, 4, 1,
                          &(ActsPlan){.logit_rows = 5, .attention = ACTS_RECOMPUTE});
        params_spread_gains(f.model.params, &f.model.table, 1);
        Rng rng;
        ForwardOptions opt = {.dropout = 0.2f, .label_smoothing = 0.1f, .rng = &rng};
        int double_build = sizeof(real) == 8;
        /* in float, a smaller step for the normalised GRUs, whose loss curves more in W_ih
         * (the difference's truncation error, not the gradient, passes 1e-2 otherwise) */
        FdCheckOptions fd = {.per_tensor = 12,
                             .step = double_build      ? 1e-3
                                     : dims.layer_norm ? 2e-2
                                                       : 3e-2,
                             .floor = double_build ? 1e-6 : 1e-3,
                             .dropout_seed = 5};
        TensorCheck result[PARAM_COUNT];
        Error err;
        ck_assert_msg(fd_check_model(&f.model, &f.acts, &f.rb.batch, &opt, &fd, result, &err) == 0,
                      "%s", err.msg);
        for (int p = 0; p < PARAM_COUNT; p++) {
            if (!f.model.table.info[p].size) continue;
            ck_assert_msg(result[p].checked > 0, "%s not checked", f.model.table.info[p].name);
            ck_assert_msg(result[p].max_rel < (double_build ? 1e-6 : 1e-2),
                          "%s (%s): relative error %g at %zu (analytic %g, numeric %g)",
                          f.model.table.info[p].name, score_name(dims.score), result[p].max_rel,
                          result[p].worst, result[p].analytic, result[p].numeric);
        }
        fixture_free(&f);
    }
}
END_TEST

START_TEST(padding_does_not_leak) {
    /* a padded batch gives the same loss and gradients as its sentences run one by one,
     * weighted by their share of the target tokens */
    enum { B = 4, S = 6, T = 5 };
    Fixture f;
    fixture_make(&f, &TINY, B, S, T, 3);
    const Batch *full = &f.rb.batch;
    double loss_full = forward_backward(&f, full);
    size_t P = f.model.table.total;
    real *grads_full = malloc(sizeof(real) * P);
    double *grads_sum = calloc(P, sizeof(double));
    ck_assert(grads_full && grads_sum);
    memcpy(grads_full, f.model.grads, sizeof(real) * P);
    int n_total = 0;
    for (int b = 0; b < B; b++) n_total += full->tgt_len[b];
    double loss_sum = 0;
    for (int b = 0; b < B; b++) {
        /* the sentence alone, cut to its own lengths */
        Batch one = {.B = 1, .S = full->src_len[b], .T = full->tgt_len[b]};
        int src[S], tgt_in[T], tgt_out[T];
        for (int i = 0; i < one.S; i++) src[i] = full->src[b * S + i];
        for (int t = 0; t < one.T; t++) {
            tgt_in[t] = full->tgt_in[b * T + t];
            tgt_out[t] = full->tgt_out[b * T + t];
        }
        one.src = src, one.tgt_in = tgt_in, one.tgt_out = tgt_out;
        one.src_len = &full->src_len[b], one.tgt_len = &full->tgt_len[b];
        double share = (double)one.T / n_total;
        loss_sum += share * forward_backward(&f, &one);
        for (size_t i = 0; i < P; i++) grads_sum[i] += share * f.model.grads[i];
    }
    double tol = sizeof(real) == 8 ? 1e-12 : 1e-5;
    ck_assert_double_eq_tol(loss_full, loss_sum, tol * fabs(loss_full));
    for (int p = 0; p < PARAM_COUNT; p++) {
        const ParamInfo *info = &f.model.table.info[p];
        double max_abs = 0, max_diff = 0;
        for (size_t i = info->offset; i < info->offset + info->size; i++) {
            max_abs = fmax(max_abs, fabs(grads_sum[i]));
            max_diff = fmax(max_diff, fabs(grads_sum[i] - grads_full[i]));
        }
        ck_assert_msg(max_diff <= tol * 10 * fmax(max_abs, 1e-6), "%s differs by %g (scale %g)",
                      info->name, max_diff, max_abs);
    }
    free(grads_full);
    free(grads_sum);
    fixture_free(&f);
}
END_TEST

/* One training step's loss and gradients (dropout masks replayed from seed 9). */
static double step(Fixture *f, ForwardOptions opt, real *grads) {
    Rng rng;
    rng_seed(&rng, 9, 1);
    opt.rng = &rng;
    Error err;
    double loss;
    model_zero_grad(&f->model);
    ck_assert_msg(model_forward(&f->model, &f->acts, &f->rb.batch, &opt, &loss, &err) == 0, "%s",
                  err.msg);
    model_backward(&f->model, &f->acts);
    memcpy(grads, f->model.grads, sizeof(real) * f->model.table.total);
    return loss;
}

/* The output layer goes through its rows in chunks: any chunk size (dividing the rows or not,
 * down to one row) gives the loss and gradients of the whole at once up to round-off; for a
 * given chunk size a forward_only pass gives the same loss bit for bit, and a backward pass
 * after it (which recomputes the output layer) the same gradients. Recomputing attention's
 * hidden layer in backward instead of keeping it changes nothing either, bit for bit. */
START_TEST(output_layer_chunks_change_nothing) {
    ModelDims dims = TINY;
    dims.tgt_vocab = 40;
    enum { B = 5, S = 6, T = 7 }; /* 35 rows, some of them padding */
    const int chunks[] = {ACTS_ALL_ROWS, 35, 8, 5, 3, 1};
    const ForwardOptions options[] = {{0}, {.dropout = 0.2f, .label_smoothing = 0.1f}};
    const double tol = sizeof(real) == 8 ? 1e-12 : 1e-5;
    for (size_t o = 0; o < 2; o++) {
        size_t P = 0;
        real *whole = NULL, *kept = NULL, *grads = NULL, *again = NULL;
        double loss_whole = 0, loss_kept = 0;
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++)
            for (int recompute = 0; recompute < 2; recompute++) {
                Fixture f;
                ActsPlan plan = {.logit_rows = chunks[c],
                                 .attention = recompute ? ACTS_RECOMPUTE : ACTS_KEEP};
                fixture_make_plan(&f, &dims, B, S, T, 6, &plan);
                ck_assert_int_eq(f.acts.logit_rows, chunks[c] < B * T ? chunks[c] : B * T);
                ck_assert_int_eq(f.acts.keep_attention, !recompute);
                P = f.model.table.total;
                if (!whole) {
                    whole = malloc(sizeof(real) * P), kept = malloc(sizeof(real) * P);
                    grads = malloc(sizeof(real) * P), again = malloc(sizeof(real) * P);
                    ck_assert(whole && kept && grads && again);
                }
                ForwardOptions opt = options[o];
                double loss = step(&f, opt, grads);
                opt.forward_only = 1;
                ck_assert(step(&f, opt, again) == loss);
                ck_assert(memcmp(again, grads, sizeof(real) * P) == 0);
                if (recompute) {
                    ck_assert(loss == loss_kept);
                    ck_assert(memcmp(kept, grads, sizeof(real) * P) == 0);
                    fixture_free(&f);
                    continue;
                }
                loss_kept = loss;
                memcpy(kept, grads, sizeof(real) * P);
                if (c == 0) {
                    loss_whole = loss;
                    memcpy(whole, grads, sizeof(real) * P);
                }
                ck_assert_double_eq_tol(loss, loss_whole, tol * loss_whole);
                for (int p = 0; p < PARAM_COUNT; p++) {
                    const ParamInfo *info = &f.model.table.info[p];
                    double max_abs = 0, max_diff = 0;
                    for (size_t i = info->offset; i < info->offset + info->size; i++) {
                        max_abs = fmax(max_abs, fabs(whole[i]));
                        max_diff = fmax(max_diff, fabs(grads[i] - whole[i]));
                    }
                    ck_assert_msg(max_diff <= 10 * tol * fmax(max_abs, 1e-6),
                                  "chunk %d: %s differs by %g (scale %g)", chunks[c], info->name,
                                  max_diff, max_abs);
                }
                if (c == 0 && o == 0) {
                    /* all rows: a forward_only pass leaves every z_t, from which the loss is
                     * the mean of lse - z_y over the real tokens */
                    opt.rng = NULL;
                    double loss_fwd;
                    Error err;
                    ck_assert(
                        model_forward(&f.model, &f.acts, &f.rb.batch, &opt, &loss_fwd, &err) == 0);
                    double sum = 0;
                    int n = 0, V = dims.tgt_vocab;
                    for (int r = 0; r < B * T; r++) {
                        int y = f.acts.tgt_out[r];
                        if (y == TOK_PAD) continue;
                        sum += (double)f.acts.lse[r] - f.acts.logits[(size_t)r * V + y];
                        n++;
                    }
                    ck_assert_double_eq_tol(sum / n, loss_fwd, 1e-6 * loss_fwd);
                }
                fixture_free(&f);
            }
        free(whole), free(kept), free(grads), free(again);
    }
}
END_TEST

/* The default plan keeps neither every logit nor, for a large batch, every step's attention
 * hidden layer. */
START_TEST(default_plan_is_smaller) {
    ModelDims dims = TINY;
    dims.tgt_vocab = 32000, dims.att = 64;
    double lean = acts_bytes(&dims, 64, 30, 30, NULL);
    double keep = acts_bytes(&dims, 64, 30, 30,
                             &(ActsPlan){.logit_rows = ACTS_ALL_ROWS, .attention = ACTS_KEEP});
    double logits = (double)sizeof(real) * 64 * 30 * dims.tgt_vocab;
    double hidden = (double)sizeof(real) * 64 * 30 * 30 * dims.att;
    ck_assert_msg(keep - lean > 0.5 * logits + hidden, "%g vs %g bytes", lean, keep);
    Acts a;
    Error err;
    ck_assert(acts_init(&a, &dims, 64, 30, 30, &err) == 0);
    /* about 64 MB of logits, in whole blocks of 256 rows */
    ck_assert_int_eq(a.logit_rows % 256, 0);
    ck_assert(a.logit_rows >= 256 && a.logit_rows < 64 * 30);
    ck_assert(a.logit_rows * (double)sizeof(real) * dims.tgt_vocab <= 64 << 20);
    ck_assert(!a.keep_attention); /* 15 MB (float) of it */
    acts_free(&a);
    /* a small batch keeps it, and all its logits fit in one chunk */
    ck_assert(acts_init(&a, &dims, 8, 30, 30, &err) == 0);
    ck_assert(a.keep_attention);
    ck_assert_int_eq(a.logit_rows, 8 * 30);
    acts_free(&a);
}
END_TEST

/* The phase timers share out a step's time: each phase's is >= 0, they add up to no more
 * than the wall time of the step, and each has its own name. */
START_TEST(phase_timers_share_out_a_step) {
    Fixture f;
    fixture_make(&f, &TINY, 5, 7, 6, 4);
    double t0 = monotonic_seconds(); /* the phase timers' clock */
    forward_backward(&f, &f.rb.batch);
    double wall = monotonic_seconds() - t0, sum = 0;
    for (int p = 0; p < PHASE_COUNT; p++) {
        ck_assert(f.acts.phase_seconds[p] >= 0);
        sum += f.acts.phase_seconds[p];
        ck_assert_str_ne(phase_name((Phase)p), "?");
        for (int q = 0; q < p; q++) ck_assert_str_ne(phase_name((Phase)p), phase_name((Phase)q));
    }
    ck_assert(sum > 0 && sum <= wall);
    ck_assert_str_eq(phase_name(PHASE_COUNT), "?");
    fixture_free(&f);
}
END_TEST

/* Whether `word` is among the batch's source ids (every position) or its real target inputs. */
static bool batch_holds(const Batch *b, int table, int word) {
    for (int s = 0; s < b->B; s++)
        for (int i = 0; i < (table == P_SRC_EMB ? b->S : b->tgt_len[s]); i++)
            if ((table == P_SRC_EMB ? b->src[s * b->S + i] : b->tgt_in[s * b->T + i]) == word)
                return true;
    return false;
}

/* The spans backward reports untouched are exactly the embedding rows of the words the batch
 * does not hold, in order, and their gradients are zero: the norm and Adam skip them. */
START_TEST(untouched_rows_are_the_words_not_in_the_batch) {
    Fixture f;
    fixture_make(&f, &SPLIT, 3, 5, 4, 8);
    forward_backward(&f, &f.rb.batch);
    const Acts *a = &f.acts;
    const ModelDims *d = &f.model.dims;
    size_t next = 0, covered = 0, E = (size_t)d->emb;
    for (size_t k = 0; k < a->n_untouched; k++) {
        ParamSpan sp = a->untouched[k];
        ck_assert(sp.begin >= next && sp.end > sp.begin); /* sorted, disjoint, not empty */
        next = sp.end;
        covered += sp.end - sp.begin;
        for (size_t i = sp.begin; i < sp.end; i++) ck_assert(f.model.grads[i] == 0);
    }
    int tables[2] = {P_SRC_EMB, P_TGT_EMB}, vocab[2] = {d->src_vocab, d->tgt_vocab};
    size_t held = 0;
    for (int t = 0; t < 2; t++) {
        const ParamInfo *info = &f.model.table.info[tables[t]];
        for (int word = 0; word < vocab[t]; word++) {
            size_t row = info->offset + (size_t)word * E;
            bool in_span = false;
            for (size_t k = 0; k < a->n_untouched && !in_span; k++)
                in_span = a->untouched[k].begin <= row && row + E <= a->untouched[k].end;
            bool holds = batch_holds(&f.rb.batch, tables[t], word);
            ck_assert_msg(in_span == !holds, "table %d word %d", t, word);
            held += holds;
        }
    }
    ck_assert(held > 0 && held < 40); /* a few words of 700: most rows are skipped */
    ck_assert_uint_eq(covered, ((size_t)d->src_vocab + d->tgt_vocab - held) * E);
    fixture_free(&f);
}
END_TEST

START_TEST(attention_rows_sum_to_one_and_skip_padding) {
    enum { B = 5, S = 7, T = 6 };
    Fixture f;
    fixture_make(&f, &TINY, B, S, T, 4);
    forward_backward(&f, &f.rb.batch);
    /* the forward pass's alpha was not touched by backward */
    ck_assert_msg(model_forward(&f.model, &f.acts, &f.rb.batch, &(ForwardOptions){0}, &(double){0},
                                NULL) == 0,
                  "forward failed");
    /* step t + 1 runs the rows before running[t], every row with a target there among them;
     * the rows from running[t] on have ended: their alpha is zero */
    int skipped = 0;
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++) {
            const real *alpha = f.acts.alpha + ((size_t)t * B + b) * S;
            int runs = b < f.acts.running[t];
            if (f.rb.batch.tgt_out[(size_t)b * T + t] != TOK_PAD) ck_assert(runs);
            skipped += !runs;
            double sum = 0;
            for (int i = 0; i < S; i++) {
                if (i >= f.rb.batch.src_len[b]) ck_assert(alpha[i] == 0);
                ck_assert(alpha[i] >= 0);
                sum += alpha[i];
            }
            ck_assert_double_eq_tol(sum, runs, 1e-6);
        }
    ck_assert_int_gt(skipped, 0);
    /* encoder states at padding are exactly zero */
    int K = dims_enc_state(&TINY);
    for (int b = 0; b < B; b++)
        for (int i = f.rb.batch.src_len[b]; i < S; i++)
            for (int j = 0; j < K; j++) ck_assert(f.acts.enc_h[((size_t)b * S + i) * K + j] == 0);
    fixture_free(&f);
}
END_TEST

START_TEST(initialisation_is_seeded) {
    Model a, b;
    Error err;
    ck_assert(model_init(&a, &TINY, &err) == 0 && model_init(&b, &TINY, &err) == 0);
    params_init(a.params, &a.table, 42);
    params_init(b.params, &b.table, 42);
    ck_assert(memcmp(a.params, b.params, sizeof(real) * a.table.total) == 0);
    params_init(b.params, &b.table, 43);
    ck_assert(memcmp(a.params, b.params, sizeof(real) * a.table.total) != 0);
    /* GRU weights within PyTorch's bound 1/sqrt(H) */
    const ParamInfo *w = &a.table.info[P_ENC_FWD_W_HH];
    for (size_t i = 0; i < w->size; i++) ck_assert(fabs(a.params[w->offset + i]) <= 0.5);
    model_free(&a);
    model_free(&b);
}
END_TEST

/* The recurrences give each thread its own batch rows, so a row's products can take another
 * matrix-product path with another thread count: results may differ by round-off across
 * thread counts, but never more, and are bit-identical for the same thread count. */
START_TEST(thread_count_changes_results_only_by_round_off) {
    ModelDims dims = SPLIT;
    dims.layer_norm = _i; /* 1: layer-normalised GRUs, whose gains' gradients sum over rows */
    enum { B = 16, S = 12, T = 10 };
    Fixture f;
    fixture_make(&f, &dims, B, S, T, 8);
    params_spread_gains(f.model.params, &f.model.table, 8);
    size_t P = f.model.table.total;
    int saved = omp_get_max_threads();
    real *grads[3];
    double loss[3];
    const int threads[3] = {1, 4, 4};
    for (int run = 0; run < 3; run++) {
        omp_set_num_threads(threads[run]);
        loss[run] = forward_backward(&f, &f.rb.batch);
        grads[run] = malloc(sizeof(real) * P);
        ck_assert(grads[run]);
        memcpy(grads[run], f.model.grads, sizeof(real) * P);
    }
    omp_set_num_threads(saved);
    ck_assert(loss[1] == loss[2]);
    ck_assert(memcmp(grads[1], grads[2], sizeof(real) * P) == 0);
    double tol = sizeof(real) == 8 ? 1e-12 : 1e-5;
    ck_assert_double_eq_tol(loss[0], loss[1], tol * loss[0]);
    for (int p = 0; p < PARAM_COUNT; p++) {
        const ParamInfo *info = &f.model.table.info[p];
        double max_abs = 0, max_diff = 0;
        for (size_t i = info->offset; i < info->offset + info->size; i++) {
            max_abs = fmax(max_abs, fabs(grads[0][i]));
            max_diff = fmax(max_diff, fabs(grads[0][i] - grads[1][i]));
        }
        ck_assert_msg(max_diff <= 10 * tol * fmax(max_abs, 1e-6), "%s differs by %g (scale %g)",
                      info->name, max_diff, max_abs);
    }
    for (int run = 0; run < 3; run++) free(grads[run]);
    fixture_free(&f);
}
END_TEST

/* A pass gives each thread a share of the rows, and a share's products sum each row as a
 * share of any other size would (gemm_packed): the loss and every gradient are the same bits on
 * any number of threads, so training that moves between 1 thread and all (ThreadChoice) does
 * not change a bit. Layer-normalised GRUs too (their gains' gradients sum over rows), and an
 * unidirectional encoder (which splits its rows instead of its directions). The shares of 32
 * rows: 16 (which gemm() would dot on AVX-512 and AVX2), 32, and 10 or 11. */
START_TEST(the_bits_do_not_depend_on_the_threads) {
    ModelDims dims = TOY;
    dims.layer_norm = _i == 1;
    dims.bidirectional = _i != 2;
    enum { B = 32, S = 4, T = 4, RUNS = 3 };
    Fixture f;
    fixture_make(&f, &dims, B, S, T, 9);
    params_spread_gains(f.model.params, &f.model.table, 9);
    size_t P = f.model.table.total;
    int saved = omp_get_max_threads();
    real *grads[RUNS];
    double loss[RUNS];
    const int threads[RUNS] = {2, 1, 3};
    for (int run = 0; run < RUNS; run++) {
        omp_set_num_threads(threads[run]);
        Error err;
        Rng rng;
        rng_seed(&rng, 3, 0);
        ForwardOptions opt = {.dropout = 0.1f, .label_smoothing = 0.1f, .rng = &rng};
        model_zero_grad(&f.model);
        ck_assert_msg(model_forward(&f.model, &f.acts, &f.rb.batch, &opt, &loss[run], &err) == 0,
                      "%s", err.msg);
        model_backward(&f.model, &f.acts);
        grads[run] = malloc(sizeof(real) * P);
        ck_assert(grads[run]);
        memcpy(grads[run], f.model.grads, sizeof(real) * P);
    }
    omp_set_num_threads(saved);
    for (int run = 1; run < RUNS; run++) {
        ck_assert_msg(loss[run] == loss[0], "loss on %d threads", threads[run]);
        for (int p = 0; p < PARAM_COUNT; p++) {
            const ParamInfo *info = &f.model.table.info[p];
            ck_assert_msg(!memcmp(grads[run] + info->offset, grads[0] + info->offset,
                                  sizeof(real) * info->size),
                          "%s on %d threads differs from %d threads'", info->name, threads[run],
                          threads[0]);
        }
    }
    for (int run = 0; run < RUNS; run++) free(grads[run]);
    fixture_free(&f);
}
END_TEST

/* Decoding shares its work among threads and across sentences differently from training: the
 * hypotheses must not depend on which sentences are decoded together, their bits not on the
 * thread count, and a float model's log-probability must be the one teacher forcing gives its
 * tokens. */
START_TEST(search_agrees_across_threads_batches_and_forcing) {
    /* every score; _i = SCORE_COUNT: additive with layer-normalised GRUs; then an int8 model */
    ModelDims dims = with_score(SPLIT, (AttentionScore)(_i % SCORE_COUNT));
    dims.layer_norm = _i == SCORE_COUNT;
    int int8 = _i == SCORE_COUNT + 1;
    /* attention features and words enough for two of the sums' blocks (search.c) */
    dims.att = 136;
    dims.tgt_vocab = 300;
    enum { N = 4, S = 12, BEAM = 3, L = 15 };
    Model m;
    Searcher searcher;
    Error err;
    ck_assert_msg(model_init(&m, &dims, &err) == 0, "%s", err.msg);
    params_init(m.params, &m.table, 21);
    params_spread_gains(m.params, &m.table, 21);
    if (int8) ck_assert_msg(model_quantize(&m, &err) == 0, "%s", err.msg);
    ck_assert_msg(search_init(&searcher, &dims, N, S, BEAM, L, &err) == 0, "%s", err.msg);
    int ids[N][S], lens[N];
    const int *src[N];
    Rng rng;
    rng_seed(&rng, 5, 0);
    for (int i = 0; i < N; i++) {
        lens[i] = 5 + 2 * i;
        for (int j = 0; j < lens[i]; j++)
            ids[i][j] = j == lens[i] - 1 ? TOK_EOS : 4 + (int)rng_below(&rng, dims.src_vocab - 4);
        src[i] = ids[i];
    }
    SearchOptions opt = {.beam = BEAM, .nbest = BEAM, .max_len = L, .len_norm = 1};
    int saved = omp_get_max_threads();
    /* all the sentences together (attention by sentences) on 1, 2 (twice) and 3 threads (uneven
     * shares), then one sentence at a time (by features) on 1, 2 and 3 */
    enum { RUNS = 7, TOGETHER = 4 };
    Translation runs[RUNS][N];
    const int threads[RUNS] = {1, 2, 2, 3, 1, 2, 3};
    for (int run = 0; run < RUNS; run++) {
        omp_set_num_threads(threads[run]);
        if (run < TOGETHER)
            ck_assert_msg(search_translate(&searcher, &m, src, lens, N, &opt, runs[run], &err) == 0,
                          "%s", err.msg);
        else
            for (int i = 0; i < N; i++)
                ck_assert_msg(search_translate(&searcher, &m, src + i, lens + i, 1, &opt,
                                               &runs[run][i], &err) == 0,
                              "%s", err.msg);
    }
    omp_set_num_threads(saved);
    for (int i = 0; i < N; i++) {
        const Translation *ref = &runs[0][i];
        ck_assert_int_ge(ref->count, 1);
        for (int run = 0; run < RUNS; run++) {
            /* the same sentences together: the same bits on any number of threads */
            const Translation *tr = &runs[run][i], *same = &runs[run < TOGETHER ? 0 : TOGETHER][i];
            ck_assert_int_eq(tr->count, ref->count);
            for (int h = 0; h < ref->count; h++) {
                const Hypothesis *a = &tr->hyps[h], *b = &ref->hyps[h], *c = &same->hyps[h];
                ck_assert_int_eq(a->len, b->len);
                ck_assert_int_eq(a->complete, b->complete);
                ck_assert(memcmp(a->tokens, b->tokens, sizeof(int) * (size_t)a->len) == 0);
                ck_assert_double_eq_tol(a->logprob, b->logprob, 1e-4 * fabs(b->logprob) + 1e-6);
                size_t cells = (size_t)a->rows * a->src_len;
                ck_assert_msg(
                    a->logprob == c->logprob && a->score == c->score &&
                        !memcmp(a->prob, c->prob, sizeof(real) * (size_t)a->rows) &&
                        !memcmp(a->alpha, c->alpha, sizeof(real) * cells) &&
                        !memcmp(a->energy, c->energy, sizeof(real) * cells),
                    "sentence %d, hypothesis %d: %s on %d threads differs from 1 thread's", i, h,
                    run < TOGETHER ? "decoded together" : "decoded alone", threads[run]);
            }
        }
        if (int8) continue; /* its products' inputs are quantized, teacher forcing's are not */
        /* teacher forcing the best hypothesis: loss * tokens = -logprob */
        const Hypothesis *h = &ref->hyps[0];
        int T = h->len + h->complete, block[2 * S + 4 * L];
        ck_assert_int_le(batch_block_ints(1, lens[i], T), sizeof block / sizeof block[0]);
        BatchArrays ba = batch_arrays(block, 1, lens[i], T);
        memcpy(ba.src, ids[i], sizeof(int) * (size_t)lens[i]);
        ba.src_len[0] = lens[i], ba.tgt_len[0] = T;
        for (int t = 0; t < T; t++) {
            ba.tgt_in[t] = t == 0 ? TOK_BOS : h->tokens[t - 1];
            ba.tgt_out[t] = t < h->len ? h->tokens[t] : TOK_EOS;
        }
        Acts acts;
        ck_assert_msg(acts_init(&acts, &dims, 1, lens[i], T, &err) == 0, "%s", err.msg);
        ForwardOptions fo = {0};
        double loss;
        ck_assert_msg(model_forward(&m, &acts, &ba.batch, &fo, &loss, &err) == 0, "%s", err.msg);
        ck_assert_double_eq_tol(-loss * T, h->logprob, 1e-4 * fabs(h->logprob) + 1e-5);
        acts_free(&acts);
    }
    for (int run = 0; run < RUNS; run++)
        for (int i = 0; i < N; i++) translation_free(&runs[run][i]);
    search_free(&searcher);
    model_free(&m);
}
END_TEST

/* Each score has exactly its att.* tensors, in the spec's order; additive's table is the one
 * it always had (so old checkpoints and seeds keep their meaning); a score's parameters are
 * initialised from the same stream as the others'. */
START_TEST(parameter_table_follows_the_score) {
    static const char *const expected[SCORE_COUNT][5] = {
        {"att.w_k", "att.w_q", "att.b", "att.v", NULL},
        {NULL},
        {"att.w_a", NULL},
        {"att.w_q", "att.w_k", NULL},
    };
    ParamTable additive;
    param_table_build(&additive, &TINY);
    for (int score = 0; score < SCORE_COUNT; score++) {
        ModelDims dims = with_score(TINY, (AttentionScore)score);
        Error err;
        ck_assert_msg(dims_validate(&dims, &err) == 0, "%s", err.msg);
        ParamTable table;
        param_table_build(&table, &dims);
        /* the att.* tensors present, by offset */
        int n = 0;
        size_t offset = 0, total = 0;
        for (int k = 0; k < PARAM_COUNT; k++) {
            const ParamInfo *info = &table.info[table.order[k]];
            ck_assert_uint_eq(info->offset, offset);
            offset += info->size;
            if (!info->size || strncmp(info->name, "att.", 4) != 0) continue;
            ck_assert_ptr_nonnull(expected[score][n]);
            ck_assert_str_eq(info->name, expected[score][n]);
            n++;
        }
        ck_assert_ptr_null(expected[score][n]);
        ck_assert_uint_eq(offset, table.total);
        for (int p = 0; p < PARAM_COUNT; p++) total += table.info[p].size;
        ck_assert_uint_eq(total, table.total);
        if (score == SCORE_ADDITIVE)
            for (int p = 0; p < PARAM_COUNT; p++)
                ck_assert_uint_eq(table.info[p].offset, additive.info[p].offset);
        if (score == SCORE_GENERAL) /* att.w_a [D, K] */
            ck_assert(table.info[P_ATT_W_A].shape[0] == dims.dec_hidden &&
                      table.info[P_ATT_W_A].shape[1] == dims_enc_state(&dims));
    }
    /* dot with D != K is refused, naming both */
    ModelDims dot = TINY;
    dot.score = SCORE_DOT;
    Error err;
    ck_assert(dims_validate(&dot, &err) == -1);
    ck_assert_msg(strstr(err.msg, "D = 6") && strstr(err.msg, "K = 8"), "%s", err.msg);
    dot.score = SCORE_COUNT;
    ck_assert(dims_validate(&dot, &err) == -1);
    ck_assert_msg(strstr(err.msg, "unknown attention score"), "%s", err.msg);
}
END_TEST

START_TEST(bad_batches_are_rejected) {
    Fixture f;
    fixture_make(&f, &TINY, 2, 4, 3, 1);
    Error err;
    Batch b = f.rb.batch;
    ck_assert(batch_validate(&b, &TINY, &err) == 0);
    int src[8];
    memcpy(src, b.src, sizeof src);
    src[0] = TINY.src_vocab; /* out of range */
    b.src = src;
    ck_assert(batch_validate(&b, &TINY, &err) == -1);
    ck_assert(strstr(err.msg, "source id") != NULL);
    /* a batch larger than the plan is refused, not overrun */
    Batch big = f.rb.batch;
    big.B = 3;
    double loss;
    ck_assert(model_forward(&f.model, &f.acts, &big, &(ForwardOptions){0}, &loss, &err) == -1);
    ck_assert(strstr(err.msg, "exceeds") != NULL);
    /* word dropout is a probability below 1, and needs a random stream */
    Rng rng;
    rng_seed(&rng, 1, 2);
    ForwardOptions all = {.rng = &rng, .word_dropout = 1};
    ck_assert(model_forward(&f.model, &f.acts, &f.rb.batch, &all, &loss, &err) == -1);
    ck_assert_msg(strstr(err.msg, "word dropout 1 is not in [0, 1)") != NULL, "%s", err.msg);
    ForwardOptions no_stream = {.word_dropout = 0.5f};
    ck_assert(model_forward(&f.model, &f.acts, &f.rb.batch, &no_stream, &loss, &err) == -1);
    ck_assert_msg(strstr(err.msg, "needs a random stream") != NULL, "%s", err.msg);
    fixture_free(&f);
}
END_TEST

/* Tied embeddings (the spec's extension): out.w absent, W_out and its gradient are tgt_emb's,
 * and O != E is refused naming both values. */
START_TEST(tied_table_has_no_out_w) {
    ModelDims d = TINY, tied = TINY;
    tied.readout = tied.emb, tied.tie_embeddings = 1;
    Error err;
    ParamTable plain_table, tied_table;
    d.readout = d.emb;
    param_table_build(&plain_table, &d);
    param_table_build(&tied_table, &tied);
    ck_assert_uint_eq(tied_table.info[P_OUT_W].size, 0);
    ck_assert_uint_eq(plain_table.total - tied_table.total, (size_t)d.tgt_vocab * d.readout);
    Model m;
    ck_assert_msg(model_init(&m, &tied, &err) == 0, "%s", err.msg);
    ck_assert_ptr_eq(m.w.out_w, m.w.tgt_emb);
    ck_assert_ptr_eq(m.g.out_w, m.g.tgt_emb);
    model_free(&m);
    ModelDims wrong = TINY;
    wrong.tie_embeddings = 1, wrong.readout = wrong.emb + 1;
    ck_assert(dims_validate(&wrong, &err) == -1);
    char expected[128];
    snprintf(expected, sizeof expected, "tie_embeddings needs readout_size (%d) = emb_size (%d)",
             wrong.readout, wrong.emb);
    ck_assert_msg(strstr(err.msg, expected) != NULL, "%s", err.msg);
}
END_TEST

/* Layer-normalised GRUs (the spec's extension): without the option the table is the spec's
 * (no gain, the same total); with it each GRU's g_ih, g_hh [3N] follow its b_hh (enc.bwd's only
 * when bidirectional), start at 1, and every other tensor is drawn as without them. */
START_TEST(layer_norm_table_adds_the_gains) {
    for (int bidirectional = 0; bidirectional < 2; bidirectional++) {
        ModelDims plain = TINY, normalised = TINY;
        plain.bidirectional = normalised.bidirectional = bidirectional;
        normalised.layer_norm = 1;
        int H = TINY.enc_hidden, D = TINY.dec_hidden, E = TINY.emb, K = dims_enc_state(&plain);
        ParamTable a, b;
        param_table_build(&a, &plain);
        param_table_build(&b, &normalised);
        /* the spec's table, tensor by tensor */
        size_t enc = (size_t)3 * H * (E + H + 2),
               spec = (size_t)(TINY.src_vocab + TINY.tgt_vocab) * E +
                      enc * (bidirectional ? 2 : 1) + (size_t)D * (K + 1) +
                      (size_t)TINY.att * (K + D + 2) + (size_t)3 * D * (E + K + D + 2) +
                      (size_t)TINY.readout * (D + K + E + 1) +
                      (size_t)TINY.tgt_vocab * (TINY.readout + 1);
        ck_assert_uint_eq(a.total, spec);
        size_t gains = (size_t)2 * 3 * H * (bidirectional ? 2 : 1) + (size_t)2 * 3 * D;
        ck_assert_uint_eq(b.total - a.total, gains);
        const ParamId b_hh[3] = {P_ENC_FWD_B_HH, P_ENC_BWD_B_HH, P_DEC_GRU_B_HH};
        for (int k = 0; k < 3; k++) {
            ParamId p = b_hh[k];
            ck_assert_uint_eq(a.info[p + 1].size, 0);
            ck_assert_uint_eq(a.info[p + 2].size, 0);
            if (!b.info[p].size) continue; /* unidirectional: no enc.bwd.* at all */
            int N = k == 2 ? D : H;
            ck_assert_uint_eq(b.info[p + 1].size, (size_t)3 * N);
            ck_assert_uint_eq(b.info[p + 1].offset, b.info[p].offset + b.info[p].size);
            ck_assert_uint_eq(b.info[p + 2].offset, b.info[p + 1].offset + (size_t)3 * N);
        }
        ck_assert_uint_eq(b.info[P_ENC_BWD_G_IH].size, bidirectional ? (size_t)3 * H : 0);
        ck_assert_str_eq(b.info[P_DEC_GRU_G_HH].name, "dec.gru.g_hh");
        real *pa = malloc(sizeof(real) * a.total), *pb = malloc(sizeof(real) * b.total);
        ck_assert(pa && pb);
        params_init(pa, &a, 17);
        params_init(pb, &b, 17);
        for (int p = 0; p < PARAM_COUNT; p++) {
            const ParamInfo *ia = &a.info[p], *ib = &b.info[p];
            if (param_is_gain((ParamId)p)) {
                for (size_t i = 0; i < ib->size; i++) ck_assert(pb[ib->offset + i] == 1);
                continue;
            }
            ck_assert_uint_eq(ia->size, ib->size);
            ck_assert_msg(!memcmp(pa + ia->offset, pb + ib->offset, sizeof(real) * ia->size),
                          "%s drawn differently", ia->name);
        }
        free(pa);
        free(pb);
    }
    ModelDims bad = TINY;
    bad.layer_norm = 2;
    Error err;
    ck_assert(dims_validate(&bad, &err) == -1);
    ck_assert_msg(strstr(err.msg, "invalid layer_norm flag 2") != NULL, "%s", err.msg);
}
END_TEST

Suite *model_suite(void) {
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, gradients_match_finite_differences);
    tcase_add_test(tc, padding_does_not_leak);
    tcase_add_test(tc, output_layer_chunks_change_nothing);
    tcase_add_test(tc, untouched_rows_are_the_words_not_in_the_batch);
    tcase_add_test(tc, default_plan_is_smaller);
    tcase_add_test(tc, attention_rows_sum_to_one_and_skip_padding);
    tcase_add_test(tc, phase_timers_share_out_a_step);
    tcase_add_test(tc, initialisation_is_seeded);
    tcase_add_loop_test(tc, thread_count_changes_results_only_by_round_off, 0, 2);
    tcase_add_loop_test(tc, the_bits_do_not_depend_on_the_threads, 0, 3);
    tcase_add_loop_test(tc, search_agrees_across_threads_batches_and_forcing, 0, SCORE_COUNT + 2);
    tcase_add_test(tc, parameter_table_follows_the_score);
    tcase_add_test(tc, bad_batches_are_rejected);
    tcase_add_test(tc, tied_table_has_no_out_w);
    tcase_add_test(tc, layer_norm_table_adds_the_gains);
    suite_add_tcase(s, tc);
    return s;
}

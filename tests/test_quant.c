/*
 * test_quant.c: 8-bit weights. The per-row scales of a known matrix and its quantized values;
 * the round trip (dequantized values within half a step of the originals, and quantizing them
 * again gives the same int8 values); every int8 kernel this CPU runs against a plain integer
 * reference, exactly, over shapes around the kernels' widths (16, 64) and the extreme values
 * +-127 (where a kernel with int16 pair sums would saturate); and qlinear_columns against the
 * float product of the dequantized operands; the int8 encoder against the float one on the
 * dequantized weights; decoding with an int8 model (every attention
 * score, greedy and beam with n-best) against force-decoding the same tokens with the
 * dequantized weights; and an int8 checkpoint saved and loaded back (the int8 values, scales
 * and translations bit for bit, the file's size, nmt_open_with).
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cpu.h"
#include "model/qgemm.h"
#include "model/quant.h"
#include "model/search.h"
#include "nmt/alignment.h"
#include "nmt/formats/checkpoint.h"
#include "nmt/nmt.h"
#include "nmt/text.h"
#include "model/fixtures.h"
#include "tests/suites.h"

static const InstructionSet KERNELS[] = {ISA_PORTABLE, ISA_AVX2,    ISA_AVX512_VNNI,
                                         ISA_NEON,     ISA_DOTPROD, ISA_I8MM};

static uint64_t next(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

START_TEST(quant_scales_of_a_known_matrix) {
    /* row 0: max |w| = 2.54, so s = 0.02 (-63.5 rounds to even); row 1: all zero; row 2: the max is
     * negative */
    const real w[3][4] = {{2.54, -1.27, 0.031, 0.0}, {0, 0, 0, 0}, {0.5, -1.0, 0.25, 0.0}};
    int8_t q[3][4];
    float scale[3];
    quantize_rows(&w[0][0], 4, 3, 4, &q[0][0], 4, scale);
    ck_assert_float_eq_tol(scale[0], 0.02f, 1e-7f);
    ck_assert_float_eq(scale[1], 0.0f);
    ck_assert_float_eq_tol(scale[2], 1.0f / 127, 1e-9f);
    const int8_t want[3][4] = {{127, -64, 2, 0}, {0, 0, 0, 0}, {64, -127, 32, 0}};
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 4; k++)
            ck_assert_msg(q[r][k] == want[r][k], "q[%d][%d] = %d, want %d", r, k, q[r][k],
                          want[r][k]);
}
END_TEST

/* Rows that are not ordinary numbers still give values in [-127, 127] (found by
 * fuzz_quantized: a subnormal maximum made the inverse scale infinite, and converting infinity
 * to int is undefined): a subnormal row, a row with a NaN, a row with an infinity. */
START_TEST(quant_odd_rows_stay_in_range) {
    const real x[3][3] = {{1e-45f, -1e-45f, 0}, {NAN, 1, -2}, {INFINITY, 1, -1}};
    int8_t q[3][3];
    float scale[3];
    quantize_rows(&x[0][0], 3, 3, 3, &q[0][0], 3, scale);
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            ck_assert_msg(q[r][k] >= -127 && q[r][k] <= 127, "q[%d][%d] = %d", r, k, q[r][k]);
    ck_assert_int_eq(q[1][2], -127);
    ck_assert_int_eq(q[1][1], 64);
}
END_TEST

START_TEST(quant_round_trip) {
    ModelDims d = {.src_vocab = 13,
                   .tgt_vocab = 11,
                   .emb = 7,
                   .enc_hidden = 5,
                   .bidirectional = 1,
                   .dec_hidden = 6,
                   .att = 9,
                   .readout = 8};
    ParamTable table;
    param_table_build(&table, &d);
    real *params = malloc(sizeof(real) * table.total), *back = malloc(sizeof(real) * table.total);
    ck_assert(params && back);
    params_init(params, &table, 42);
    memcpy(back, params, sizeof(real) * table.total);
    QuantWeights qw, again;
    Error err;
    ck_assert_int_eq(quant_weights_build(&qw, &table, params, &err), 0);
    quant_weights_dequantize(&qw, &table, back);
    for (int p = 0; p < PARAM_COUNT; p++) {
        const ParamInfo *info = &table.info[p];
        const QMatrix *m = &qw.m[p];
        ck_assert_int_eq(m->rows != 0, param_is_quantized((ParamId)p) && info->size > 0);
        for (size_t i = 0; i < info->size; i++) {
            real x = params[info->offset + i], y = back[info->offset + i];
            double step = m->rows ? m->scale[i / m->cols] : 0;
            EXPECT_MSG(fabs((double)x - (double)y) <= step / 2 * (1 + 1e-5),
                       "%s[%zu]: %g came back as %g (step %g)", info->name, i, (double)x, (double)y,
                       step);
        }
    }
    ck_assert_int_eq(quant_weights_build(&again, &table, back, &err), 0);
    ck_assert_uint_eq(again.bytes, qw.bytes);
    for (int p = 0; p < PARAM_COUNT; p++)
        if (qw.m[p].rows)
            ck_assert_msg(!memcmp(qw.m[p].q, again.m[p].q, table.info[p].size),
                          "%s: quantizing the dequantized values changed them", table.info[p].name);
    quant_weights_free(&qw), quant_weights_free(&again);
    free(params), free(back);
}
END_TEST

/* Each kernel the CPU runs gives the plain integer sums, over shapes that cross the blocks'
 * widths (features 8 and 16, rows 8, inputs in groups of 4), for a column part of a wider
 * matrix and feature ranges that start and end inside blocks, with random values and with
 * every value +-127 (where VPMADDUBSW on offset bytes would saturate). */
START_TEST(quant_kernels_exact) {
    uint64_t seed = 0x9e3779b97f4a7c15u;
    int ran = 0;
    Error err;
    for (size_t kern = 0; kern < sizeof KERNELS / sizeof KERNELS[0]; kern++) {
        if (!qgemm_supported(KERNELS[kern])) continue;
        ran++;
        /* rows M, features N, inputs K, first column, feature range [lo, hi) */
        const int shapes[][6] = {
            {1, 1, 1, 0, 0, 1},
            {1, 3, 15, 2, 0, 3},
            {2, 5, 16, 0, 1, 5},
            {3, 17, 17, 1, 0, 17},
            {9, 7, 63, 0, 2, 6},
            {5, 33, 64, 3, 5, 31},
            {8, 16, 65, 0, 0, 16},
            {17, 40, 127, 7, 8, 40},
            {1, 70, 150, 0, 16, 48},
            {13, 3, 257, 0, 0, 3},
            {4, 24, 1000, 11, 3, 21},
            /* the run kernels: every row count of a pass (1-4) and past it, runs of an odd
             * number of blocks, runs cut short by many rows, rows too long to copy */
            {2, 41, 33, 0, 0, 41},
            {3, 57, 36, 1, 3, 57},
            {6, 9, 20, 0, 0, 9},
            {7, 200, 256, 0, 5, 199},
            {200, 120, 256, 2, 0, 120},
            {11, 56, 4100, 0, 1, 50}};
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int extreme = 0; extreme < 2; extreme++) {
                int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], col0 = shapes[s][3];
                int lo = shapes[s][4], hi = shapes[s][5], cols = col0 + K + 2;
                int ldx = qpack_row_room(K) + 4, ldc = hi - lo + 1;
                int8_t *x = calloc((size_t)M * ldx, 1), *w = malloc((size_t)N * cols);
                float *scale = calloc((size_t)N, sizeof(float));
                int32_t *acc = malloc(sizeof(int32_t) * M * ldc);
                ck_assert(x && w && scale && acc);
                for (int r = 0; r < M; r++)
                    for (int k = 0; k < K; k++)
                        x[(size_t)r * ldx + k] = extreme ? (next(&seed) & 1 ? 127 : -127)
                                                         : (int8_t)(next(&seed) % 255 - 127);
                for (size_t i = 0; i < (size_t)N * cols; i++)
                    w[i] = extreme ? (i % 3 ? 127 : -127) : (int8_t)(next(&seed) % 255 - 127);
                QMatrix m = {.q = w, .scale = scale, .rows = N, .cols = cols};
                QPacked p;
                ck_assert_int_eq(qpack(&p, KERNELS[kern], &m, col0, K, &err), 0);
                qgemm_packed(&p, M, x, ldx, lo, hi, acc, ldc);
                for (int r = 0; r < M; r++)
                    for (int j = lo; j < hi; j++) {
                        int64_t want = 0;
                        for (int k = 0; k < K; k++)
                            want +=
                                (int64_t)x[(size_t)r * ldx + k] * w[(size_t)j * cols + col0 + k];
                        int32_t got = acc[(size_t)r * ldc + j - lo];
                        EXPECT_MSG(got == want, "%s %dx%dx%d%s: [%d][%d] = %d, want %lld",
                                   isa_name(KERNELS[kern]), M, N, K, extreme ? " (+-127)" : "", r,
                                   j, got, (long long)want);
                    }
                qpacked_free(&p);
                free(x), free(w), free(scale), free(acc);
            }
    }
    ck_assert_int_ge(ran, 1);
#if defined(__aarch64__)
    ck_assert_int_ge(ran, 2); /* the NEON kernels at least, which every ARM64 CPU runs */
#endif
    QMatrix none = {0};
    QPacked p;
    ck_assert_int_eq(qpack(&p, ISA_AVX512, &none, 0, 1, &err), -1); /* no int8 kernels */
}
END_TEST

/* The chosen kernels are ones the CPU runs, the best NMT_ISA allows, and under make test-cpus
 * the ones its emulated CPU must get. */
START_TEST(quant_kernels_follow_the_cpu) {
    InstructionSet chosen = qgemm_kernels();
    ck_assert(qgemm_supported(chosen) && cpu_allows(chosen));
    if (cpu_allows(ISA_AVX512_VNNI))
        ck_assert_int_eq(chosen, ISA_AVX512_VNNI);
    else if (cpu_allows(ISA_AVX2))
        ck_assert_int_eq(chosen, ISA_AVX2);
#if defined(__aarch64__)
    ck_assert_int_eq(chosen, cpu_best()); /* i8mm, dotprod, neon or portable: NMT_ISA caps */
#endif
    /* make test-cpus, make test-arm64: the emulated CPU must get these */
    const char *expected = getenv("NMT_EXPECT_KERNELS");
    if (expected) ck_assert_str_eq(isa_name(chosen), expected);
}
END_TEST

/* y = xs ws (xq . wq) + b over a column part of w equals the float product of the
 * dequantized operands (up to float round-off), and accumulate adds to y. */
START_TEST(quant_linear_matches_dequantized_product) {
    enum { ROWS = 6, OUT = 10, COLS = 40, COL0 = 7, IN = 25, ROOM = 28 };
    real w[OUT * COLS], x[ROWS * IN], b[OUT], y[ROWS * OUT];
    uint64_t seed = 7;
    for (int i = 0; i < OUT * COLS; i++) w[i] = (real)((double)(next(&seed) % 2001) / 1000 - 1);
    for (int i = 0; i < ROWS * IN; i++) x[i] = (real)((double)(next(&seed) % 2001) / 500 - 2);
    for (int i = 0; i < OUT; i++) b[i] = (real)i / 4;
    int8_t wq[OUT * COLS], xq[ROWS * ROOM] = {0};
    float ws[OUT], xs[ROWS];
    quantize_rows(w, COLS, OUT, COLS, wq, COLS, ws);
    quantize_rows(x, IN, ROWS, IN, xq, ROOM, xs);
    QMatrix m = {.q = wq, .scale = ws, .rows = OUT, .cols = COLS};
    QPacked p;
    Error err;
    ck_assert_int_eq(qpack(&p, qgemm_kernels(), &m, COL0, IN, &err), 0);
    for (int i = 0; i < ROWS * OUT; i++) y[i] = 1;
    qlinear_packed(y, OUT, xq, ROOM, xs, &p, b, ROWS, 2, 9, 1);
    qpacked_free(&p);
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < OUT; j++) {
            double want = 1;
            if (j >= 2 && j < 9) {
                want += b[j];
                for (int k = 0; k < IN; k++)
                    want += (double)xs[r] * xq[r * ROOM + k] * ws[j] * wq[j * COLS + COL0 + k];
            }
            ck_assert_msg(fabs(y[r * OUT + j] - want) <= 1e-4 * (1 + fabs(want)),
                          "y[%d][%d] = %g, want %g", r, j, (double)y[r * OUT + j], want);
        }
}
END_TEST

/* ---- int8 models ---- */

static const char *const SENTENCES[][2] = {
    {"I love machine learning", "j'aime l'apprentissage automatique"},
    {"the cat sleeps on the mat.", "le chat dort sur le tapis."},
    {"where is the dog?", "où est le chien ?"},
};
enum { N_SENTENCES = sizeof SENTENCES / sizeof SENTENCES[0] };

/* A random model over the sentences' words, with sizes of a few dozen; score SCORE_COUNT
 * stands for additive with tied embeddings (the spec's extension: out.w is tgt_emb, O = E),
 * SCORE_COUNT + 1 for additive with layer-normalised GRUs (gains spread around 1). */
static void random_model(NmtModel *nm, AttentionScore score, uint64_t seed) {
    int tied = score == SCORE_COUNT, normalised = score == SCORE_COUNT + 1;
    if (tied || normalised) score = SCORE_ADDITIVE;
    TokenList src[N_SENTENCES], tgt[N_SENTENCES];
    Error err;
    memset(nm, 0, sizeof *nm);
    nm->lowercase = true;
    for (int k = 0; k < N_SENTENCES; k++) {
        ck_assert(tokenize(SENTENCES[k][0], true, &src[k], &err) == 0);
        ck_assert(tokenize(SENTENCES[k][1], true, &tgt[k], &err) == 0);
    }
    ck_assert(vocab_build(src, N_SENTENCES, 1, SIZE_MAX, &nm->src_vocab, &err) == 0);
    ck_assert(vocab_build(tgt, N_SENTENCES, 1, SIZE_MAX, &nm->tgt_vocab, &err) == 0);
    for (int k = 0; k < N_SENTENCES; k++) token_list_free(&src[k]), token_list_free(&tgt[k]);
    ModelDims dims = {.src_vocab = (int)nm->src_vocab.size,
                      .tgt_vocab = (int)nm->tgt_vocab.size,
                      .emb = 24,
                      .enc_hidden = 20,
                      .bidirectional = 1,
                      .dec_hidden = score == SCORE_DOT ? 40 : 36,
                      .att = 28,
                      .readout = tied ? 24 : 33,
                      .score = score,
                      .tie_embeddings = tied,
                      .layer_norm = normalised};
    ck_assert_msg(model_init(&nm->model, &dims, &err) == 0, "%s", err.msg);
    params_init(nm->model.params, &nm->model.table, seed);
    params_spread_gains(nm->model.params, &nm->model.table, seed);
}

/* Searches every sentence with the model (beam, n-best = beam); `phases`, when not NULL, gets
 * the search's phase timers (timed when *phases is 1 on entry). */
static void search_timed(const NmtModel *nm, int beam, Translation *out, double *phases) {
    Searcher s;
    Error err;
    ck_assert_msg(search_init(&s, &nm->model.dims, N_SENTENCES, 32, beam, 20, &err) == 0, "%s",
                  err.msg);
    s.enc.time_search = phases && phases[0] == 1;
    int *ids[N_SENTENCES], lens[N_SENTENCES], unknown;
    for (int k = 0; k < N_SENTENCES; k++)
        ck_assert(encode_source(nm, SENTENCES[k][0], &ids[k], &lens[k], &unknown, &err) == 0);
    SearchOptions opt = {.beam = beam, .nbest = beam, .max_len = 20, .len_norm = 1};
    ck_assert_msg(search_translate(&s, &nm->model, (const int *const *)ids, lens, N_SENTENCES, &opt,
                                   out, &err) == 0,
                  "%s", err.msg);
    for (int k = 0; k < N_SENTENCES; k++) free(ids[k]);
    if (phases) memcpy(phases, s.enc.phase_seconds, sizeof s.enc.phase_seconds);
    search_free(&s);
}

static void search_sentences(const NmtModel *nm, int beam, Translation *out) {
    search_timed(nm, beam, out, NULL);
}

/* A search's phase timers (bin/bench's breakdown of a decoding step): off unless asked for;
 * on, the int8 model's phases each get time (its products, quantizing, the softmax and
 * top-k, the beam), all within the search's wall time, and the translations are the same. */
START_TEST(quant_search_phases_are_timed) {
    NmtModel nm;
    random_model(&nm, SCORE_COUNT + 1, 11);
    Error err;
    ck_assert(model_quantize(&nm.model, &err) == 0);
    Translation plain[N_SENTENCES], timed[N_SENTENCES];
    double off[PHASE_COUNT] = {0}, on[PHASE_COUNT] = {1};
    search_timed(&nm, 3, plain, off);
    for (int p = 0; p < PHASE_COUNT; p++) ck_assert(off[p] == 0);
    double t0 = monotonic_seconds(); /* the phase clocks' clock: omp_get_wtime may be coarser */
    search_timed(&nm, 3, timed, on);
    double wall = monotonic_seconds() - t0, sum = 0;
    const Phase used[] = {PHASE_SEARCH_ENCODER,      PHASE_SEARCH_QUANTIZE,
                          PHASE_SEARCH_GRU_PRODUCTS, PHASE_SEARCH_OUT_PRODUCTS,
                          PHASE_SEARCH_LAYER_NORM,   PHASE_SEARCH_SOFTMAX,
                          PHASE_SEARCH_TOP_K,        PHASE_SEARCH_BEAM};
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
        EXPECT_MSG(on[used[i]] > 0, "phase '%s' got no time", phase_name(used[i]));
    for (int p = 0; p < PHASE_COUNT; p++) {
        ck_assert(on[p] >= 0);
        sum += on[p];
        if (p < PHASE_TRAINING_COUNT) ck_assert(on[p] == 0);
    }
    ck_assert(sum <= wall);
    for (int k = 0; k < N_SENTENCES; k++) {
        ck_assert_int_eq(plain[k].count, timed[k].count);
        ck_assert_int_eq(plain[k].hyps[0].len, timed[k].hyps[0].len);
        ck_assert(memcmp(plain[k].hyps[0].tokens, timed[k].hyps[0].tokens,
                         sizeof(int) * (size_t)plain[k].hyps[0].len) == 0);
        ck_assert(plain[k].hyps[0].score == timed[k].hyps[0].score);
        translation_free(&plain[k]), translation_free(&timed[k]);
    }
    nmt_model_free(&nm);
}
END_TEST

/* The int8 encoder (model_encode of an int8 model) gives nearly the states, keys and s_0 of
 * the float encoder on the dequantized weights (they differ by the rounding of its inputs to
 * 8 bits), for every attention score (and tied, and layer-normalised), bit for bit the same
 * with 1 and 2 threads. */
/* Activations planned by default (training's) hold no int8 buffers, and an int8 model
 * refuses them with an error instead of writing through a NULL buffer. */
START_TEST(quant_encoder_needs_its_plan) {
    NmtModel nm;
    random_model(&nm, SCORE_ADDITIVE, 5);
    Error err;
    ck_assert(model_quantize(&nm.model, &err) == 0);
    int ids[2] = {4, TOK_EOS}, len = 2;
    Acts a;
    ck_assert(acts_init(&a, &nm.model.dims, 1, 2, 1, &err) == 0);
    ck_assert_ptr_null(a.enc_xq);
    ck_assert_int_eq(model_encode(&nm.model, &a, ids, &len, 1, 2, &err), -1);
    ck_assert_msg(strstr(err.msg, "ActsPlan.int8"), "%s", err.msg);
    acts_free(&a);
    ck_assert(acts_init_plan(&a, &nm.model.dims, 1, 2, 1, &(ActsPlan){.int8 = 1}, &err) == 0);
    ck_assert_ptr_nonnull(a.enc_xq);
    ck_assert_msg(model_encode(&nm.model, &a, ids, &len, 1, 2, &err) == 0, "%s", err.msg);
    acts_free(&a);
    nmt_model_free(&nm);
}
END_TEST

START_TEST(quant_encoder_matches_dequantized_float) {
    NmtModel nm;
    random_model(&nm, (AttentionScore)_i, 21 + _i);
    Error err;
    ck_assert(model_quantize(&nm.model, &err) == 0);
    const ModelDims *d = &nm.model.dims;
    int *ids[N_SENTENCES], lens[N_SENTENCES], unknown, S = 0;
    for (int k = 0; k < N_SENTENCES; k++) {
        ck_assert(encode_source(&nm, SENTENCES[k][0], &ids[k], &lens[k], &unknown, &err) == 0);
        S = lens[k] > S ? lens[k] : S;
    }
    int *padded = calloc((size_t)N_SENTENCES * S, sizeof(int));
    ck_assert_ptr_nonnull(padded);
    for (int k = 0; k < N_SENTENCES; k++) memcpy(padded + k * S, ids[k], sizeof(int) * lens[k]);
    int K = dims_enc_state(d), F = dims_att_features(d), D = d->dec_hidden;
    size_t nh = (size_t)N_SENTENCES * S * K, nk = (size_t)N_SENTENCES * S * F,
           ns = (size_t)N_SENTENCES * D;
    real *int8_out[3], *got;
    Acts a;
    int threads_before = omp_get_max_threads();
    for (int threads = 1; threads <= 2; threads++) {
        ck_assert(acts_init_plan(&a, d, N_SENTENCES, S, 1, &(ActsPlan){.int8 = 1}, &err) == 0);
        omp_set_num_threads(threads);
        ck_assert(model_encode(&nm.model, &a, padded, lens, N_SENTENCES, S, &err) == 0);
        const real *outs[3] = {a.enc_h, a.keys, a.dec_state};
        size_t counts[3] = {nh, d->score == SCORE_DOT ? 0 : nk, ns};
        for (int o = 0; o < 3; o++) {
            if (threads == 1) {
                int8_out[o] = malloc(sizeof(real) * (counts[o] + 1));
                ck_assert_ptr_nonnull(int8_out[o]);
                memcpy(int8_out[o], outs[o], sizeof(real) * counts[o]);
            } else {
                ck_assert_msg(!memcmp(int8_out[o], outs[o], sizeof(real) * counts[o]),
                              "output %d differs with 2 threads", o);
            }
        }
        acts_free(&a);
    }
    omp_set_num_threads(threads_before);
    ck_assert(nmt_model_set_compute(&nm, COMPUTE_FLOAT, &err) == 0);
    ck_assert_ptr_null(nm.model.quant);
    ck_assert(acts_init(&a, d, N_SENTENCES, S, 1, &err) == 0);
    ck_assert(model_encode(&nm.model, &a, padded, lens, N_SENTENCES, S, &err) == 0);
    const real *floats[3] = {a.enc_h, a.keys, a.dec_state};
    size_t counts[3] = {nh, d->score == SCORE_DOT ? 0 : nk, ns};
    for (int o = 0; o < 3; o++) {
        got = int8_out[o];
        double worst = 0;
        for (size_t i = 0; i < counts[o]; i++) {
            double diff = fabs((double)got[i] - (double)floats[o][i]);
            worst = diff > worst ? diff : worst;
        }
        /* states and s_0 lie in [-1, 1]; keys are sums of K terms */
        ck_assert_msg(worst < (o == 1 ? 0.1 : 0.05), "score %d output %d: off by %g", _i, o, worst);
        free(int8_out[o]);
    }
    acts_free(&a);
    for (int k = 0; k < N_SENTENCES; k++) free(ids[k]);
    free(padded);
    nmt_model_free(&nm);
}
END_TEST

/* Each hypothesis of an int8 search, force-decoded in float with the dequantized weights,
 * gets nearly the probabilities the search gave its tokens (they differ by the rounding of
 * activations to 8 bits), and its alignment rows sum to 1; for each score, tied, and
 * layer-normalised. */
START_TEST(quant_search_matches_dequantized_forward) {
    NmtModel nm;
    random_model(&nm, (AttentionScore)_i, 5 + _i);
    Error err;
    ck_assert_msg(model_quantize(&nm.model, &err) == 0, "%s", err.msg);
    ck_assert_ptr_nonnull(nm.model.quant);
    ForcedDecoder fd;
    forced_decoder_init(&fd, &nm);
    for (int beam = 1; beam <= 3; beam += 2) {
        Translation tr[N_SENTENCES];
        search_sentences(&nm, beam, tr);
        for (int k = 0; k < N_SENTENCES; k++) {
            ck_assert_int_ge(tr[k].count, 1);
            for (int h = 0; h < tr[k].count; h++) {
                const Hypothesis *hyp = &tr[k].hyps[h];
                Alignment a;
                SourceText src;
                ck_assert_msg(source_encode(&nm, SENTENCES[k][0], &src, &err) == 0, "%s", err.msg);
                ck_assert_msg(force_align_ids(&fd, &src, hyp->tokens, hyp->len, hyp->complete, &a,
                                              NULL, &err) == 0,
                              "%s", err.msg);
                source_free(&src);
                ck_assert_int_eq(a.rows, hyp->rows);
                for (int t = 0; t < a.rows; t++) {
                    double p = hyp->prob[t], q = a.prob[t], sum = 0;
                    ck_assert_msg(fabs(p - q) <= 0.02 + 0.05 * q,
                                  "score %d beam %d sentence %d hyp %d step %d: searched %g, "
                                  "forced %g",
                                  _i, beam, k, h, t, p, q);
                    for (int i = 0; i < hyp->src_len; i++)
                        sum += hyp->alpha[(size_t)t * hyp->src_len + i];
                    ck_assert_msg(fabs(sum - 1) < 1e-5, "alignment row %d sums to %g", t, sum);
                }
                alignment_free(&a);
            }
            translation_free(&tr[k]);
        }
    }
    forced_decoder_free(&fd);
    nmt_model_free(&nm);
}
END_TEST

static void temp_dir(char *dir, size_t size) {
    snprintf(dir, size, "/tmp/nmt-quant-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static long file_size(const char *path) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* An int8 model saved (format 4) and loaded back has the same int8 values, scales and float
 * parameters and translates bit for bit the same; the file holds one byte per quantized
 * weight and 4 per row scale and per float parameter, nothing else grows; a float file
 * opened with compute int8 translates as its quantized file does, and an unknown compute type
 * is refused. _i = 1: the same with tied embeddings, which come back tied, out.w absent;
 * _i = 2: layer-normalised GRUs, whose float gains come back with them. */
START_TEST(quant_checkpoint_round_trip) {
    NmtModel nm, back;
    random_model(&nm, _i ? (AttentionScore)(SCORE_COUNT + _i - 1) : SCORE_ADDITIVE, 3);
    Error err;
    char dir[64], float_path[128], int8_path[128];
    temp_dir(dir, sizeof dir);
    snprintf(float_path, sizeof float_path, "%s/float.ckpt", dir);
    snprintf(int8_path, sizeof int8_path, "%s/int8.ckpt", dir);
    ck_assert_msg(checkpoint_save(float_path, &nm, NULL, &err) == 0, "%s", err.msg);
    ck_assert_msg(model_quantize(&nm.model, &err) == 0, "%s", err.msg);
    ck_assert_msg(checkpoint_save(int8_path, &nm, NULL, &err) == 0, "%s", err.msg);
    ck_assert_msg(checkpoint_load(int8_path, &back, NULL, NULL, &err) == 0, "%s", err.msg);
    ck_assert_ptr_nonnull(back.model.quant);
    ck_assert_int_eq(back.model.dims.tie_embeddings, _i == 1);
    ck_assert_int_eq(back.model.table.info[P_OUT_W].size == 0, _i == 1);
    ck_assert_int_eq(back.model.dims.layer_norm, _i == 2);
    const ParamTable *table = &nm.model.table;
    size_t int8_bytes = 0, float_bytes = 0;
    for (int p = 0; p < PARAM_COUNT; p++) {
        const QMatrix *a = &nm.model.quant->m[p], *b = &back.model.quant->m[p];
        ck_assert_int_eq(a->rows, b->rows);
        if (a->rows) {
            ck_assert(!memcmp(a->q, b->q, table->info[p].size));
            ck_assert(!memcmp(a->scale, b->scale, sizeof(float) * a->rows));
        }
        /* a quantized tensor as its scales (f32) and bytes, any other as the build's reals */
        int8_bytes += a->rows ? table->info[p].size + 4 * (size_t)a->rows
                              : sizeof(real) * table->info[p].size;
        float_bytes += sizeof(real) * table->info[p].size;
    }
    ck_assert(!memcmp(nm.model.params, back.model.params, sizeof(real) * table->total));
    ck_assert_int_eq(file_size(int8_path) - file_size(float_path),
                     (long)int8_bytes - (long)float_bytes);
    Translation one[N_SENTENCES], two[N_SENTENCES];
    search_sentences(&nm, 3, one);
    search_sentences(&back, 3, two);
    for (int k = 0; k < N_SENTENCES; k++) {
        ck_assert_int_eq(one[k].count, two[k].count);
        for (int h = 0; h < one[k].count; h++) {
            ck_assert_int_eq(one[k].hyps[h].len, two[k].hyps[h].len);
            ck_assert(!memcmp(one[k].hyps[h].tokens, two[k].hyps[h].tokens,
                              sizeof(int) * one[k].hyps[h].len));
            ck_assert(one[k].hyps[h].logprob == two[k].hyps[h].logprob);
        }
        translation_free(&one[k]), translation_free(&two[k]);
    }

    /* the API: the float file with compute int8 and the int8 file, as stored */
    nmt_error e;
    nmt_model *from_float = nmt_open_with(float_path, &(nmt_open_options){NMT_COMPUTE_INT8}, &e);
    nmt_model *from_int8 = nmt_open(int8_path, &e);
    ck_assert_msg(from_float && from_int8, "%s", e.message);
    const char *const sources[N_SENTENCES] = {SENTENCES[0][0], SENTENCES[1][0], SENTENCES[2][0]};
    nmt_translation a[N_SENTENCES], b[N_SENTENCES];
    nmt_options opt = {.beam = 2};
    ck_assert(nmt_translate(from_float, sources, N_SENTENCES, &opt, a, &e) == 0);
    ck_assert(nmt_translate(from_int8, sources, N_SENTENCES, &opt, b, &e) == 0);
    for (int k = 0; k < N_SENTENCES; k++) {
        ck_assert_int_ge(a[k].count, 1);
        ck_assert_str_eq(a[k].hyps[0].text, b[k].hyps[0].text);
        ck_assert(a[k].hyps[0].logprob == b[k].hyps[0].logprob);
    }
    nmt_translation_free(a, N_SENTENCES), nmt_translation_free(b, N_SENTENCES);
    nmt_close(from_float), nmt_close(from_int8);
    ck_assert_ptr_null(nmt_open_with(float_path, &(nmt_open_options){(nmt_compute_type)7}, &e));
    ck_assert_ptr_nonnull(strstr(e.message, "unknown compute type 7"));

    nmt_model_free(&nm), nmt_model_free(&back);
    unlink(float_path), unlink(int8_path), rmdir(dir);
}
END_TEST

Suite *quant_suite(void) {
    Suite *s = suite_create("quant");
    TCase *tc = tcase_create("quant");
    tcase_add_test(tc, quant_scales_of_a_known_matrix);
    tcase_add_test(tc, quant_odd_rows_stay_in_range);
    tcase_add_test(tc, quant_round_trip);
    tcase_add_test(tc, quant_kernels_exact);
    tcase_add_test(tc, quant_kernels_follow_the_cpu);
    tcase_add_test(tc, quant_linear_matches_dequantized_product);
    suite_add_tcase(s, tc);
    TCase *models = tcase_create("int8 models");
    tcase_set_timeout(models, 60);
    tcase_add_test(models, quant_encoder_needs_its_plan);
    tcase_add_test(models, quant_search_phases_are_timed);
    tcase_add_loop_test(models, quant_encoder_matches_dequantized_float, 0, SCORE_COUNT + 2);
    tcase_add_loop_test(models, quant_search_matches_dequantized_forward, 0, SCORE_COUNT + 2);
    tcase_add_loop_test(models, quant_checkpoint_round_trip, 0, 3);
    suite_add_tcase(s, models);
    return s;
}

/*
 * test_quant.c: 8-bit weights. The per-row scales of a known matrix and its quantized values;
 * the round trip (dequantized values within half a step of the originals, and quantizing them
 * again gives the same int8 values); every int8 kernel this CPU runs against a plain integer
 * reference, exactly, over shapes around the kernels' widths (16, 64) and the extreme values
 * +-127 (where a kernel with int16 pair sums would saturate); and qlinear_columns against the
 * float product of the dequantized operands.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/qgemm.h"
#include "model/quant.h"
#include "suites.h"

static const char *const KERNELS[] = {"generic", "avx2", "avx512vnni"};

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
            {1, 1, 1, 0, 0, 1},    {1, 3, 15, 2, 0, 3},     {2, 5, 16, 0, 1, 5},
            {3, 17, 17, 1, 0, 17}, {9, 7, 63, 0, 2, 6},     {5, 33, 64, 3, 5, 31},
            {8, 16, 65, 0, 0, 16}, {17, 40, 127, 7, 8, 40}, {1, 70, 150, 0, 16, 48},
            {13, 3, 257, 0, 0, 3}, {4, 24, 1000, 11, 3, 21}};
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
                                   KERNELS[kern], M, N, K, extreme ? " (+-127)" : "", r, j, got,
                                   (long long)want);
                    }
                qpacked_free(&p);
                free(x), free(w), free(scale), free(acc);
            }
    }
    ck_assert_int_ge(ran, 1);
    QMatrix none = {0};
    QPacked p;
    ck_assert_int_eq(qpack(&p, "no-such-isa", &none, 0, 1, &err), -1);
}
END_TEST

/* The chosen kernels are ones the CPU runs, within NMT_GEMM_ISA's cap. */
START_TEST(quant_kernels_follow_the_cpu) {
    const char *chosen = qgemm_kernels(), *cap = getenv("NMT_GEMM_ISA");
    ck_assert(qgemm_supported(chosen));
    if (cap && !strcmp(cap, "generic")) ck_assert_str_eq(chosen, "generic");
    if (cap && !strcmp(cap, "avx2")) ck_assert_str_ne(chosen, "avx512vnni");
    if (!cap && qgemm_supported("avx512vnni")) ck_assert_str_eq(chosen, "avx512vnni");
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
    ck_assert_int_eq(qpack(&p, NULL, &m, COL0, IN, &err), 0);
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

Suite *quant_suite(void) {
    Suite *s = suite_create("quant");
    TCase *tc = tcase_create("quant");
    tcase_add_test(tc, quant_scales_of_a_known_matrix);
    tcase_add_test(tc, quant_round_trip);
    tcase_add_test(tc, quant_kernels_exact);
    tcase_add_test(tc, quant_kernels_follow_the_cpu);
    tcase_add_test(tc, quant_linear_matches_dequantized_product);
    suite_add_tcase(s, tc);
    return s;
}

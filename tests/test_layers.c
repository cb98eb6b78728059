/*
 * test_layers.c: each layer's forward against hand-computed values and its backward against
 * finite differences; the attention (every score) on the course notes' worked example; softmax and
 * the loss on huge logits; the vector exp, tanh and sigmoid against libm, and the fixed-order sums.
 *
 * Backward checks use the scalar f = sum_j w_j * out_j with fixed random w, so d f / d out = w
 * is the gradient fed to the backward pass.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/attention.h"
#include "model/fastmath.h"
#include "model/gru.h"
#include "model/layers.h"
#include "model/loss.h"
#include "model/parallel.h"
#include "base/rng.h"
#include "tests/suites.h"

/* float builds compare to round-off of single precision */
#define CLOSE   (sizeof(real) == 8 ? 1e-9 : 2e-6)
#define FD_STEP (sizeof(real) == 8 ? 1e-5 : 1e-2)
#define FD_TOL  (sizeof(real) == 8 ? 1e-6 : 1e-2)

static void fill_random(real *x, size_t n, Rng *rng, double scale) {
    for (size_t i = 0; i < n; i++) x[i] = (real)(scale * (2 * rng_uniform(rng) - 1));
}

static double weighted_sum(const real *out, const real *w, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)out[i] * w[i];
    return s;
}

/* Compares an analytic gradient with central differences of `f` for every element of x. */
typedef double (*ScalarFn)(void *ctx);
static void check_fd(const char *what, real *x, const real *grad, size_t n, ScalarFn f, void *ctx) {
    for (size_t i = 0; i < n; i++) {
        real saved = x[i];
        x[i] = saved + (real)FD_STEP;
        double plus = f(ctx);
        x[i] = saved - (real)FD_STEP;
        double minus = f(ctx);
        x[i] = saved;
        double numeric = (plus - minus) / (2 * FD_STEP);
        double scale = fmax(fmax(fabs(numeric), fabs((double)grad[i])), 1e-2);
        ck_assert_msg(fabs(numeric - grad[i]) / scale < FD_TOL, "%s[%zu]: analytic %g, numeric %g",
                      what, i, (double)grad[i], numeric);
    }
}

/* ---- attention ---------------------------------------------------------------------- */

START_TEST(attention_worked_example) {
    /* A=2, K=2, D=2, four source positions: the course notes' example, exact values from the
     * model-core issue. keys = W_k h_i + b, query = W_q s. */
    const real w_q[4] = {0.5, 0.2, 0.3, 0.4}, w_k[4] = {0.1, 0.6, 0.5, 0.3};
    const real b[2] = {0.1, 0.2}, v[2] = {0.5, 0.5}, s[2] = {0.6, 0.4};
    const real h[8] = {0.2, 0.3, 0.5, 0.8, 0.7, 0.1, 0.4, 0.6};
    const int len[1] = {4};
    real keys[8], query[2], context[2], alpha[4], energy[4], hidden[8];
    linear_forward(keys, h, 2, w_k, 2, b, 4, 2, 2);
    linear_forward(query, s, 2, w_q, 2, NULL, 1, 2, 2);
    attention_forward(context, alpha, energy, hidden, query, keys, h, len, v, 1, 4, 2, 2);
    const double e_expected[4] = {0.607292, 0.769835, 0.635012, 0.716158};
    const double a_expected[4] = {0.231502, 0.272362, 0.238009, 0.258128};
    const double c_expected[2] = {0.452338, 0.466017};
    for (int i = 0; i < 4; i++) {
        ck_assert_double_eq_tol(energy[i], e_expected[i], 1e-6);
        ck_assert_double_eq_tol(alpha[i], a_expected[i], 1e-6);
    }
    for (int j = 0; j < 2; j++) ck_assert_double_eq_tol(context[j], c_expected[j], 1e-6);
}
END_TEST

typedef struct {
    int B, S, A, K;
    real *query, *keys, *enc_h, *v, *w;
    const int *len;
    real *context, *alpha, *energy, *hidden;
} AttnCase;

static double attention_objective(void *p) {
    AttnCase *c = p;
    attention_forward(c->context, c->alpha, c->energy, c->hidden, c->query, c->keys, c->enc_h,
                      c->len, c->v, c->B, c->S, c->A, c->K);
    return weighted_sum(c->context, c->w, (size_t)c->B * c->K);
}

START_TEST(attention_backward_matches_finite_differences) {
    enum { B = 3, S = 5, A = 4, K = 6 };
    const int len[B] = {5, 2, 1};
    Rng rng;
    rng_seed(&rng, 11, 0);
    real query[B * A], keys[B * S * A], enc_h[B * S * K], v[A], w[B * K];
    real context[B * K], alpha[B * S], energy[B * S], hidden[B * S * A];
    fill_random(query, B * A, &rng, 1);
    fill_random(keys, B * S * A, &rng, 1);
    fill_random(enc_h, B * S * K, &rng, 1);
    fill_random(v, A, &rng, 1);
    fill_random(w, B * K, &rng, 1);
    AttnCase c = {B, S, A, K, query, keys, enc_h, v, w, len, context, alpha, energy, hidden};
    attention_objective(&c);
    /* padding gets exactly zero weight and every row sums to 1 */
    for (int b = 0; b < B; b++) {
        double sum = 0;
        for (int i = 0; i < S; i++) {
            if (i >= len[b]) ck_assert(alpha[b * S + i] == 0);
            if (i >= len[b]) ck_assert(isinf(energy[b * S + i]) && energy[b * S + i] < 0);
            sum += alpha[b * S + i];
        }
        ck_assert_double_eq_tol(sum, 1, 1e-6);
    }
    real dquery[B * A], denergy[B * S], dkeys[B * S * A] = {0}, denc_h[B * S * K] = {0};
    real dv_rows[B * A] = {0};
    attention_backward(dquery, denergy, dkeys, denc_h, dv_rows, w, alpha, hidden, enc_h, len, v, B,
                       S, A, K);
    check_fd("query", query, dquery, B * A, attention_objective, &c);
    check_fd("keys", keys, dkeys, B * S * A, attention_objective, &c);
    check_fd("enc_h", enc_h, denc_h, B * S * K, attention_objective, &c);
    /* dv = sum_{b,i} de_bi hidden_bi, one row per sentence */
    real dv[A] = {0};
    for (int b = 0; b < B; b++)
        for (int j = 0; j < A; j++) dv[j] += dv_rows[b * A + j];
    check_fd("v", v, dv, A, attention_objective, &c);
    /* attention_hidden recomputes the forward's cache exactly (the forward first again at the
     * unperturbed inputs) */
    attention_objective(&c);
    real again[B * S * A];
    attention_hidden(again, query, keys, len, B, S, A);
    ck_assert(memcmp(again, hidden, sizeof again) == 0);
    /* padding positions receive no gradient at all */
    for (int b = 0; b < B; b++)
        for (int i = len[b]; i < S; i++) {
            ck_assert(denergy[b * S + i] == 0);
            for (int j = 0; j < K; j++) ck_assert(denc_h[(b * S + i) * K + j] == 0);
        }
}
END_TEST

/* The dot-product scores on the worked example's numbers (s, h, W_q, and W_k as W_a), values
 * computed by hand: dot e_i = s . h_i, general e_i = s . (W_a h_i), scaled_dot
 * e_i = (W_q s) . (W_k h_i) / sqrt(2), e.g. e_0 = 0.6*0.2 + 0.4*0.3 = 0.24 (dot),
 * W_a h_0 = [0.20, 0.19], e_0 = 0.6*0.20 + 0.4*0.19 = 0.196 (general), W_q s = [0.38, 0.34],
 * e_0 = (0.38*0.20 + 0.34*0.19) / sqrt(2) = 0.099419 (scaled_dot). */
START_TEST(dot_scores_worked_example) {
    const real w_q[4] = {0.5, 0.2, 0.3, 0.4}, w_k[4] = {0.1, 0.6, 0.5, 0.3}, s[2] = {0.6, 0.4};
    const real h[8] = {0.2, 0.3, 0.5, 0.8, 0.7, 0.1, 0.4, 0.6};
    const int len[1] = {4};
    real keys[8], query[2], context[2], alpha[4], energy[4];
    linear_forward(keys, h, 2, w_k, 2, NULL, 4, 2, 2);
    linear_forward(query, s, 2, w_q, 2, NULL, 1, 2, 2);
    const double expected[3][3][4] = {
        {{0.24, 0.62, 0.46, 0.48}, {0.200819, 0.293654, 0.250236, 0.255291}, {0.464272, 0.473367}},
        {{0.196, 0.514, 0.23, 0.392},
         {0.216193, 0.297131, 0.223670, 0.263005},
         {0.453576, 0.482733}},
        {{0.099419, 0.260215, 0.126289, 0.198838},
         {0.232223, 0.272733, 0.238547, 0.256497},
         {0.452393, 0.465606}},
    };
    for (int score = 0; score < 3; score++) {
        if (score == 0) attention_dot_forward(context, alpha, energy, s, h, len, 1, 4, 2);
        if (score == 1)
            attention_general_forward(context, alpha, energy, s, keys, h, len, 1, 4, 2, 2);
        if (score == 2)
            attention_scaled_dot_forward(context, alpha, energy, query, keys, h, len, 1, 4, 2, 2);
        for (int i = 0; i < 4; i++) {
            ck_assert_double_eq_tol(energy[i], expected[score][0][i], 1e-6);
            ck_assert_double_eq_tol(alpha[i], expected[score][1][i], 1e-6);
        }
        for (int j = 0; j < 2; j++)
            ck_assert_double_eq_tol(context[j], expected[score][2][j], 1e-6);
    }
}
END_TEST

/* One dot-product score's layer: which = 0 dot (query [B,K], keys = enc_h), 1 general
 * (query [B,F], keys [B,S,F]), 2 scaled_dot (the same shapes, scaled). */
typedef struct {
    int which, B, S, F, K;
    real *query, *keys, *enc_h, *w;
    const int *len;
    real *context, *alpha, *energy;
} DotCase;

static double dot_objective(void *p) {
    DotCase *c = p;
    if (c->which == 0)
        attention_dot_forward(c->context, c->alpha, c->energy, c->query, c->enc_h, c->len, c->B,
                              c->S, c->K);
    else if (c->which == 1)
        attention_general_forward(c->context, c->alpha, c->energy, c->query, c->keys, c->enc_h,
                                  c->len, c->B, c->S, c->F, c->K);
    else
        attention_scaled_dot_forward(c->context, c->alpha, c->energy, c->query, c->keys, c->enc_h,
                                     c->len, c->B, c->S, c->F, c->K);
    return weighted_sum(c->context, c->w, (size_t)c->B * c->K);
}

START_TEST(dot_scores_backward_match_finite_differences) {
    enum { B = 3, S = 5, K = 6, FMAX = 6 };
    const int len[B] = {5, 2, 1};
    for (int which = 0; which < 3; which++) {
        int F = which == 0 ? K : 4; /* dot compares s_{t-1} with h_i: F = D = K */
        Rng rng;
        rng_seed(&rng, 13 + (uint64_t)which, 0);
        real query[B * FMAX], keys[B * S * FMAX], enc_h[B * S * K], w[B * K];
        real context[B * K], alpha[B * S], energy[B * S];
        fill_random(query, (size_t)B * F, &rng, 1.5);
        fill_random(keys, (size_t)B * S * F, &rng, 1.5);
        fill_random(enc_h, B * S * K, &rng, 1);
        fill_random(w, B * K, &rng, 1);
        DotCase c = {which, B, S, F, K, query, keys, enc_h, w, len, context, alpha, energy};
        dot_objective(&c);
        for (int b = 0; b < B; b++)
            for (int i = len[b]; i < S; i++)
                ck_assert(alpha[b * S + i] == 0 && isinf(energy[b * S + i]));
        real dquery[B * FMAX], denergy[B * S], dkeys[B * S * FMAX] = {0}, denc_h[B * S * K] = {0};
        if (which == 0)
            attention_dot_backward(dquery, denergy, denc_h, w, alpha, query, enc_h, len, B, S, K);
        else if (which == 1)
            attention_general_backward(dquery, denergy, dkeys, denc_h, w, alpha, query, keys, enc_h,
                                       len, B, S, F, K);
        else
            attention_scaled_dot_backward(dquery, denergy, dkeys, denc_h, w, alpha, query, keys,
                                          enc_h, len, B, S, F, K);
        check_fd("query", query, dquery, (size_t)B * F, dot_objective, &c);
        if (which > 0) check_fd("keys", keys, dkeys, (size_t)B * S * F, dot_objective, &c);
        check_fd("enc_h", enc_h, denc_h, B * S * K, dot_objective, &c);
        for (int b = 0; b < B; b++)
            for (int i = len[b]; i < S; i++) {
                ck_assert(denergy[b * S + i] == 0);
                for (int j = 0; j < K; j++) ck_assert(denc_h[(b * S + i) * K + j] == 0);
                for (int j = 0; j < F && which > 0; j++) ck_assert(dkeys[(b * S + i) * F + j] == 0);
            }
        /* the query's gradient may overwrite the query (as training does for scaled_dot) */
        if (which == 2) {
            real again[B * FMAX], dk2[B * S * FMAX] = {0}, dh2[B * S * K] = {0};
            memcpy(again, query, sizeof again);
            dot_objective(&c);
            attention_scaled_dot_backward(again, denergy, dk2, dh2, w, alpha, again, keys, enc_h,
                                          len, B, S, F, K);
            ck_assert(memcmp(again, dquery, sizeof(real) * B * F) == 0);
            ck_assert(memcmp(dk2, dkeys, sizeof(real) * B * S * F) == 0);
        }
    }
}
END_TEST

/* ---- GRU ---------------------------------------------------------------------------- */

START_TEST(gru_forward_hand_computed) {
    /* N = 1, one input: gi = W_ih x + b_ih with W_ih = [0.5, -0.3, 0.8], b_ih = [0.1, 0.2, 0.3],
     * x = 1; W_hh = [0.2, 0.4, -0.6], b_hh = [-0.1, 0.05, 0.2], h = 0.5:
     * r = sigmoid(0.6 + 0.0) = 0.645656, z = sigmoid(-0.1 + 0.25) = 0.537430,
     * n = tanh(1.1 + r * -0.1) = 0.776079, h' = (1 - z) n + z h = 0.627706 */
    const real gi[3] = {0.6, -0.1, 1.1}, w_hh[3] = {0.2, 0.4, -0.6}, b_hh[3] = {-0.1, 0.05, 0.2};
    const real h_prev[1] = {0.5};
    real h[1], cache[4], scratch[3];
    GemmPanels w = {0};
    gemm_pack(&w, TRANSPOSE, 1, 3, w_hh, 1, 1, NULL);
    gru_step_forward(h, cache, scratch, gi, h_prev, &w, b_hh, NULL, 0, 1, 1);
    ck_assert_double_eq_tol(cache[0], 0.6456563062, CLOSE);
    ck_assert_double_eq_tol(cache[1], 0.5374298453, CLOSE);
    ck_assert_double_eq_tol(cache[2], 0.7760787306, CLOSE);
    ck_assert_double_eq_tol(h[0], 0.6277057811, CLOSE);
    /* a row past its length carries its state unchanged */
    const int len[1] = {3};
    gru_step_forward(h, cache, scratch, gi, h_prev, &w, b_hh, len, 3, 1, 1);
    ck_assert(h[0] == h_prev[0]);
}
END_TEST

typedef struct {
    int B, N;
    real *gi, *h_prev, *w_hh, *b_hh, *w;
    const int *len;
    int pos;
    real *h, *cache, *scratch;
} GruCase;

static double gru_objective(void *p) {
    GruCase *c = p;
    GemmPanels w_hh = {0};
    gemm_pack(&w_hh, TRANSPOSE, c->N, 3 * c->N, c->w_hh, c->N, c->B, NULL);
    gru_step_forward(c->h, c->cache, c->scratch, c->gi, c->h_prev, &w_hh, c->b_hh, c->len, c->pos,
                     c->B, c->N);
    return weighted_sum(c->h, c->w, (size_t)c->B * c->N);
}

START_TEST(gru_backward_matches_finite_differences) {
    enum { B = 3, N = 4 };
    const int len[B] = {3, 1, 2}; /* at pos 1, row 1 is past its end */
    Rng rng;
    rng_seed(&rng, 5, 0);
    real gi[B * 3 * N], h_prev[B * N], w_hh[3 * N * N], b_hh[3 * N], w[B * N];
    real h[B * N], cache[B * 4 * N], scratch[B * 3 * N];
    fill_random(gi, B * 3 * N, &rng, 1);
    fill_random(h_prev, B * N, &rng, 1);
    fill_random(w_hh, 3 * N * N, &rng, 0.8);
    fill_random(b_hh, 3 * N, &rng, 0.5);
    fill_random(w, B * N, &rng, 1);
    GruCase c = {B, N, gi, h_prev, w_hh, b_hh, w, len, 1, h, cache, scratch};
    gru_objective(&c);
    real dh_prev[B * N], dgi[B * 3 * N], dgh[B * 3 * N];
    GemmPanels w_hh_back = {0};
    gemm_pack(&w_hh_back, AS_STORED, 3 * N, N, w_hh, N, B, NULL);
    gru_step_backward(dh_prev, dgi, dgh, w, cache, h_prev, &w_hh_back, len, 1, B, N);
    check_fd("gi", gi, dgi, B * 3 * N, gru_objective, &c);
    check_fd("h_prev", h_prev, dh_prev, B * N, gru_objective, &c);
    /* dW_hh = dgh^T h_prev and db_hh = sum dgh, as the callers form them after the loop */
    real dw_hh[3 * N * N] = {0}, db_hh[3 * N] = {0};
    for (int b = 0; b < B; b++)
        for (int o = 0; o < 3 * N; o++) {
            db_hh[o] += dgh[b * 3 * N + o];
            for (int i = 0; i < N; i++) dw_hh[o * N + i] += dgh[b * 3 * N + o] * h_prev[b * N + i];
        }
    check_fd("w_hh", w_hh, dw_hh, 3 * N * N, gru_objective, &c);
    check_fd("b_hh", b_hh, db_hh, 3 * N, gru_objective, &c);
}
END_TEST

/* ---- linear, embedding, tanh -------------------------------------------------------- */

typedef struct {
    real *x, *w, *b, *y, *wsum;
    int rows, in, out;
} LinCase;

static double linear_objective(void *p) {
    LinCase *c = p;
    linear_forward(c->y, c->x, c->in, c->w, c->in, c->b, c->rows, c->in, c->out);
    tanh_forward(c->y, (size_t)c->rows * c->out);
    return weighted_sum(c->y, c->wsum, (size_t)c->rows * c->out);
}

START_TEST(linear_tanh_forward_and_backward) {
    /* hand-computed: W = [[1, 2], [3, 4]], b = [0.5, -1], x = [1, -1] -> W x + b = [-0.5, -2] */
    real x1[2] = {1, -1}, w1[4] = {1, 2, 3, 4}, b1[2] = {0.5, -1}, y1[2];
    linear_forward(y1, x1, 2, w1, 2, b1, 1, 2, 2);
    ck_assert_double_eq_tol(y1[0], -0.5, CLOSE);
    ck_assert_double_eq_tol(y1[1], -2.0, CLOSE);

    enum { R = 3, IN = 4, OUT = 5 };
    Rng rng;
    rng_seed(&rng, 9, 0);
    real x[R * IN], w[OUT * IN], b[OUT], y[R * OUT], wsum[R * OUT];
    fill_random(x, R * IN, &rng, 1);
    fill_random(w, OUT * IN, &rng, 0.7);
    fill_random(b, OUT, &rng, 0.3);
    fill_random(wsum, R * OUT, &rng, 1);
    LinCase c = {x, w, b, y, wsum, R, IN, OUT};
    linear_objective(&c);
    real dy[R * OUT], dx[R * IN] = {0}, dw[OUT * IN] = {0}, db[OUT] = {0};
    memcpy(dy, wsum, sizeof dy);
    tanh_backward(dy, y, R * OUT);
    linear_backward(dx, dw, db, dy, x, IN, w, IN, R, IN, OUT);
    check_fd("x", x, dx, R * IN, linear_objective, &c);
    check_fd("w", w, dw, OUT * IN, linear_objective, &c);
    check_fd("b", b, db, OUT, linear_objective, &c);
}
END_TEST

START_TEST(embedding_gathers_and_scatters) {
    const real emb[6] = {1, 2, 3, 4, 5, 6}; /* V = 3, E = 2 */
    const int ids[3] = {2, 0, 2};
    const real keep[6] = {1, 1, 0, 2, 1, 1};
    real out[6];
    embedding_forward(out, 2, ids, keep, emb, 3, 2);
    const real expected[6] = {5, 6, 0, 4, 5, 6};
    for (int i = 0; i < 6; i++) ck_assert(out[i] == expected[i]);
    real demb[6] = {0};
    const real dout[6] = {1, 1, 1, 1, 1, 1};
    embedding_backward(demb, dout, 2, ids, keep, 3, 2);
    /* id 2 appears twice and both rows add up; id 1 is never used */
    const real dexp[6] = {0, 2, 0, 0, 2, 2};
    for (int i = 0; i < 6; i++) ck_assert(demb[i] == dexp[i]);
}
END_TEST

/* ---- softmax and loss --------------------------------------------------------------- */

START_TEST(softmax_and_loss_stay_finite_for_huge_logits) {
    real x[3] = {1e4, -1e4, 0};
    softmax_inplace(x, 3);
    ck_assert(isfinite(x[0]) && isfinite(x[1]) && isfinite(x[2]));
    ck_assert_double_eq_tol(x[0], 1, 1e-6);
    const real z[3] = {1e4, 1e4, -1e4};
    ck_assert_double_eq_tol(log_sum_exp(z, 3), 1e4 + log(2.0), 1e-2);

    real logits[6] = {1e4, -1e4, 5e3, -3e3, 2e3, 1e4};
    const int targets[2] = {2, 0}; /* second row is padding */
    real lse[2], db[3] = {0}, parts[3];
    double loss = 0, nll[2]; /* the padding row adds nothing */
    real again[6];
    memcpy(again, logits, sizeof logits);
    xent_forward(lse, again, NULL, targets, 2, 3, 0.1f, &loss);
    ck_assert(isfinite(loss));
    /* -log p[2] = 1e4 - 5e3 = 5e3; smoothing: 0.9 * 5e3 + 0.1 * (1e4 - mean(z)) */
    ck_assert_double_eq_tol(loss, 0.9 * 5e3 + 0.1 * (1e4 - (1e4 - 1e4 + 5e3) / 3.0), 1);
    double train_loss = 0;
    xent_train(logits, NULL, lse, targets, 2, 3, 0.1f, 1, &train_loss, db, parts, nll);
    ck_assert(train_loss == loss);
    for (int i = 0; i < 6; i++) ck_assert(isfinite(logits[i]));
    for (int i = 3; i < 6; i++) ck_assert(logits[i] == 0); /* padding row: no gradient */
    for (int j = 0; j < 3; j++) ck_assert(db[j] == logits[j]);
}
END_TEST

typedef struct {
    real *logits, *work, *lse, *bias;
    const int *targets;
    int rows, V;
    real eps;
} LossCase;

/* The mean loss of the logits plus the bias (3 non-padding rows), from a copy: xent_forward
 * adds the bias in place. */
static double loss_objective(void *p) {
    LossCase *c = p;
    double sum = 0;
    memcpy(c->work, c->logits, sizeof(real) * (size_t)c->rows * c->V);
    xent_forward(c->lse, c->work, c->bias, c->targets, c->rows, c->V, c->eps, &sum);
    return sum / 3;
}

/* xent_train against finite differences of xent_forward, with the bias: d loss / d z and
 * d loss / d b (the column sums, over more rows than one group). */
START_TEST(loss_backward_matches_finite_differences) {
    enum { R = XENT_GROUP + 4, V = 6 };
    int targets[R] = {0}; /* 3 non-padding rows, one of them in the second group */
    targets[1] = 3, targets[2] = 5, targets[R - 1] = 1;
    Rng rng;
    rng_seed(&rng, 2, 0);
    for (int smoothing = 0; smoothing < 2; smoothing++) {
        real logits[R * V], work[R * V], grad[R * V], lse[R], bias[V], db[V] = {0};
        real parts[2 * V];
        double nll[R], loss = 0;
        fill_random(logits, R * V, &rng, 2);
        fill_random(bias, V, &rng, 1);
        LossCase c = {logits, work, lse, bias, targets, R, V, smoothing ? 0.1f : 0};
        memcpy(grad, logits, sizeof grad);
        xent_train(grad, bias, lse, targets, R, V, c.eps, (real)1 / 3, &loss, db, parts, nll);
        ck_assert(loss / 3 == loss_objective(&c)); /* the same sum as the forward pass */
        check_fd("logits", logits, grad, R * V, loss_objective, &c);
        check_fd("bias", bias, db, V, loss_objective, &c);
    }
}
END_TEST

/* ---- fastmath -------------------------------------------------------------------------- */

/* The largest relative error of f over x against the long double reference, in units of the
 * build's epsilon. */
static double worst_error(void (*f)(real *, size_t), long double (*ref)(long double), const real *x,
                          size_t n) {
    real *y = malloc(sizeof(real) * n);
    ck_assert_ptr_nonnull(y);
    memcpy(y, x, sizeof(real) * n);
    f(y, n);
    double eps = sizeof(real) == 8 ? DBL_EPSILON : FLT_EPSILON, worst = 0;
    for (size_t i = 0; i < n; i++) {
        long double r = ref(x[i]);
        double e = (double)(fabsl((long double)y[i] - r) / fabsl(r)) / eps;
        if (e > worst) worst = e;
    }
    free(y);
    return worst;
}

static long double tanh_ref(long double x) {
    return tanhl(x);
}

static long double sigmoid_ref(long double x) {
    return 1 / (1 + expl(-x));
}

static void exp_in_place(real *x, size_t n) {
    vec_exp(x, x, n, 0, 1);
}

static long double exp_ref(long double x) {
    return expl(x);
}

/* fastmath.h promises a few units in the last place: every float in a sweep of [-20, 20]
 * (both branches of tanh and its switch at 0.25, sigmoid's tails) and tiny arguments. */
START_TEST(vector_functions_match_libm) {
    enum { N = 400001, TINY = 1000 };
    real *x = malloc(sizeof(real) * (N + TINY));
    ck_assert_ptr_nonnull(x);
    for (int i = 0; i < N; i++) x[i] = (real)(-20.0 + 40.0 * i / (N - 1));
    for (int i = 0; i < TINY; i++) x[N + i] = (real)(i % 2 ? 1e-7 : -1e-5) * (i + 1);
    double tanh_err = worst_error(vec_tanh, tanh_ref, x, N + TINY);
    double sigmoid_err = worst_error(vec_sigmoid, sigmoid_ref, x, N + TINY);
    /* exp within the range it does not saturate in: [-80, 80] */
    for (int i = 0; i < N; i++) x[i] = (real)(-80.0 + 160.0 * i / (N - 1));
    double exp_err = worst_error(exp_in_place, exp_ref, x, N);
    ck_assert_msg(tanh_err <= 2, "tanh: %.2f eps", tanh_err);
    ck_assert_msg(sigmoid_err <= 2, "sigmoid: %.2f eps", sigmoid_err);
    ck_assert_msg(exp_err <= 2, "exp: %.2f eps", exp_err);
    free(x);
}
END_TEST

/* The limits and the NaN behaviour fastmath.h describes. */
START_TEST(vector_functions_limits_and_nan) {
    real t[5] = {(real)-100, (real)100, (real)0, (real)NAN, (real)-0.0};
    vec_tanh(t, 5);
    ck_assert(t[0] == -1 && t[1] == 1 && t[2] == 0 && isnan(t[3]) && t[4] == 0);
    real g[3] = {(real)-100, (real)100, (real)NAN};
    vec_sigmoid(g, 3);
    ck_assert(g[0] >= 0 && g[0] < 1e-30 && g[1] == 1 && isnan(g[2]));
    real e[2] = {(real)-200, (real)NAN};
    vec_exp(e, e, 2, 0, 1);
    ck_assert(e[0] >= 0 && e[0] < 1e-30 && isnan(e[1]));
}
END_TEST

/* The reductions agree with a double-precision sum, and vec_max passes over NaNs after the
 * first value as the scalar loop does. */
START_TEST(vector_reductions) {
    enum { N = 1037 }; /* not a multiple of 16: the tail too */
    real x[N], y[N];
    Rng rng;
    rng_seed(&rng, 4, 0);
    fill_random(x, N, &rng, 3);
    fill_random(y, N, &rng, 3);
    double dot = 0, sum_exp = 0, squares = 0, sum = 0, top = x[0];
    for (int i = 0; i < N; i++) {
        dot += (double)x[i] * y[i];
        sum += x[i];
        squares += (double)x[i] * x[i];
        sum_exp += exp((double)x[i] - 1);
        if (x[i] > top) top = x[i];
    }
    ck_assert_double_eq_tol(vec_dot(x, y, N), dot, 1e-4 * sqrt(N));
    ck_assert_double_eq_tol(vec_sum_exp(x, N, 1), sum_exp, 1e-5 * sum_exp);
    ck_assert_double_eq_tol(vec_sum_squares(x, N), squares, 1e-12 * squares);
    ck_assert(vec_sum_squares(x, 5) == (double)x[0] * x[0] + (double)x[1] * x[1] +
                                           (double)x[2] * x[2] + (double)x[3] * x[3] +
                                           (double)x[4] * x[4]);
    ck_assert_double_eq_tol(vec_sum(x, N), sum, 1e-12 * squares);
    ck_assert(vec_sum(x, 3) == (double)x[0] + x[1] + x[2] && vec_sum(x, 0) == 0);
    ck_assert(vec_max(x, N) == (real)top);
    /* a NaN after the first value is passed over; a NaN first is the answer */
    int largest = 0;
    for (int i = 1; i < N; i++)
        if (x[i] > x[largest]) largest = i;
    x[largest] = (real)NAN;
    double second = x[largest == 0 ? 1 : 0];
    for (int i = 0; i < N; i++)
        if (x[i] > second) second = x[i];
    ck_assert(largest != 0 && vec_max(x, N) == (real)second);
    x[0] = (real)NAN;
    ck_assert(isnan(vec_max(x, N)));
}
END_TEST

/* A simulated 2-processor machine for ThreadChoice: `others` programs that never sleep beside
 * the steps, which run at `rate[n]` tokens a second on n threads; `load_known` 0 is a system
 * that does not say how busy its processors are. The system shares the processors evenly among
 * what runs, so n threads beside `others` get min(1, 2 / (n + others)) of a processor each. */
typedef struct {
    double rate[3];
    int others, load_known;
    LoadSample now;
} Machine;

static void machine_advance(Machine *m, int threads, double seconds) {
    double running = threads + m->others, share = running > 2 ? 2 / running : 1;
    m->now.wall += seconds;
    m->now.own += seconds * threads * share;
    m->now.busy = m->load_known ? m->now.busy + seconds * fmin(running, 2) : NAN;
}

/* The program's start-up, on one thread for `seconds`. */
static void machine_start_for(Machine *m, ThreadChoice *c, double seconds) {
    m->now = (LoadSample){.wall = 100, .own = 1, .busy = m->load_known ? 50 : NAN, .cpus = 2};
    thread_choice_init(c, 2, &m->now);
    machine_advance(m, 1, seconds);
    thread_choice_start(c, &m->now);
}

static void machine_start(Machine *m, ThreadChoice *c) {
    machine_start_for(m, c, 0.3);
}

/* `steps` steps of 250 tokens, each on the count ThreadChoice asks for; returns how many ran on
 * 1 thread. */
static int steps_on_one_thread(ThreadChoice *c, Machine *m, int steps) {
    int threads = c->probing ? c->probe_count : c->threads, on_one = 0;
    for (int s = 0; s < steps; s++) {
        on_one += threads == 1;
        double seconds = 250 / m->rate[threads];
        machine_advance(m, threads, seconds);
        threads = thread_choice_step(c, 250, seconds, &m->now);
        ck_assert(threads == 1 || threads == 2);
    }
    return on_one;
}

/* A quiet machine keeps all the threads, probing one on few steps; a busy one, where a team
 * of two runs slower than one thread, moves to one thread and stays there but for probes;
 * when it becomes quiet again, the threads come back. With the load known or not. */
START_TEST(thread_choice_follows_the_faster_count) {
    for (int known = 0; known <= 1; known++) {
        Machine quiet = {.rate = {0, 10000, 18000}, .load_known = known},
                busy = {.rate = {0, 9000, 3500}, .others = 1, .load_known = known};
        ThreadChoice c;
        machine_start(&quiet, &c);
        ck_assert_int_eq(c.threads, 2);
        ck_assert_int_le(steps_on_one_thread(&c, &quiet, 5000), 5000 / 50);
        ck_assert_int_eq(c.threads, 2);
        busy.now = quiet.now;
        ck_assert_int_ge(steps_on_one_thread(&c, &busy, 5000), 5000 - 5000 / 8);
        ck_assert_int_eq(c.threads, 1);
        quiet.now = busy.now;
        steps_on_one_thread(&c, &quiet, 20000);
        ck_assert_int_eq(c.threads, 2);
        /* one thread asked for: nothing to choose */
        thread_choice_init(&c, 1, &busy.now);
        ck_assert_int_eq(thread_choice_start(&c, &busy.now), 1);
        ck_assert_int_eq(steps_on_one_thread(&c, &busy, 100), 100);
    }
}
END_TEST

/* What the choice costs a short run (the toy's 600 steps at 250 tokens a step): beside a
 * busy process, where a step of two threads runs at a third of one thread's, few steps run on
 * two, and none where the load is known (the start-up shows the busy processor); on a quiet
 * machine where one thread runs at 0.7 of two (the 2-core Zen 3's toy), few run on one. When
 * the busy process ends, the threads come back within a second of steps where the load is
 * known; and where the start-up is too short to show the load, its first step runs on one. A
 * probe of two threads beside the busy process costs one step. */
START_TEST(thread_choice_costs_a_short_run_few_steps) {
    for (int known = 0; known <= 1; known++) {
        Machine quiet = {.rate = {0, 14000, 20000}, .load_known = known},
                busy = {.rate = {0, 14000, 4700}, .others = 1, .load_known = known};
        ThreadChoice c;
        machine_start(&busy, &c);
        ck_assert_int_eq(c.threads, (known ? 1 : 2));
        int on_one = steps_on_one_thread(&c, &busy, 600);
        ck_assert_int_le(600 - on_one, (known ? 0 : 5));
        /* later probes of two threads end after their first step, which runs far slower */
        ck_assert_int_le(5000 - steps_on_one_thread(&c, &busy, 5000), (known ? 3 : 10));
        ck_assert_int_eq(c.threads, 1);
        if (known) {
            quiet.now = busy.now;
            ck_assert_int_le(steps_on_one_thread(&c, &quiet, 60), 20);
            ck_assert_int_eq(c.threads, 2);
            /* a start-up too short to tell (the toy's is about as long as the window): the
             * first step, on one thread, completes the window */
            machine_start_for(&busy, &c, 0.03);
            ck_assert_int_eq(steps_on_one_thread(&c, &busy, 600), 600);
            ck_assert_int_eq(c.threads, 1);
            machine_start_for(&quiet, &c, 0.03);
            ck_assert_int_le(steps_on_one_thread(&c, &quiet, 600), 1 + 12);
            ck_assert_int_eq(c.threads, 2);
        }
        machine_start(&quiet, &c);
        ck_assert_int_le(steps_on_one_thread(&c, &quiet, 600), 12);
        ck_assert_int_eq(c.threads, 2);
    }
}
END_TEST

/* A load that misleads (a processor looks taken, yet two threads run faster, as in a container
 * that sees its host's load) is found out by a probe after 30 s of steps on one thread; then
 * few steps run on one. */
START_TEST(thread_choice_outlives_a_misleading_load) {
    Machine misleading = {.rate = {0, 10000, 18000}, .others = 1, .load_known = 1};
    ThreadChoice c;
    machine_start(&misleading, &c);
    ck_assert_int_eq(c.threads, 1);
    int steps = (int)(30 * 10000 / 250);
    ck_assert_int_ge(steps_on_one_thread(&c, &misleading, steps), steps - 1);
    ck_assert_int_le(steps_on_one_thread(&c, &misleading, 5000), 40);
    ck_assert_int_eq(c.threads, 2);
    ck_assert_int_le(steps_on_one_thread(&c, &misleading, 5000), 5000 / 50);
    ck_assert_int_eq(c.threads, 2);
}
END_TEST

/* Where the load shows every processor free, a probe of fewer threads waits for two seconds and
 * 32 steps: a short quiet run (a file of a few seconds to translate, in steps of 12 ms or of
 * 125 ms) runs none of its steps on one thread after its start-up. A quota the load does not
 * show (two threads run at half the rate of one) is found out after those two seconds, and
 * then few steps run on two. */
START_TEST(thread_choice_trusts_a_quiet_load_for_a_while) {
    Machine quiet = {.rate = {0, 14000, 20000}, .load_known = 1},
            slow_steps = {.rate = {0, 1200, 2000}, .load_known = 1},
            quota = {.rate = {0, 10000, 5000}, .load_known = 1};
    ThreadChoice c;
    machine_start(&quiet, &c);
    ck_assert_int_eq(c.threads, 2);
    ck_assert_int_eq(steps_on_one_thread(&c, &quiet, (int)(1.9 * 20000 / 250)), 0);
    machine_start(&slow_steps, &c);
    ck_assert_int_eq(steps_on_one_thread(&c, &slow_steps, 32), 0);
    machine_start(&quota, &c);
    ck_assert_int_eq(c.threads, 2);
    ck_assert_int_le(steps_on_one_thread(&c, &quota, (int)(2 * 5000 / 250)), 1);
    ck_assert_int_ge(steps_on_one_thread(&c, &quota, 5000), 5000 - 5000 / 50);
    ck_assert_int_eq(c.threads, 1);
}
END_TEST

/* Another program's processors from two samples; NAN where the system does not say. */
START_TEST(load_others_counts_the_processors_others_used) {
    LoadSample from = {.wall = 10, .own = 3, .busy = 40, .cpus = 2};
    LoadSample to = {.wall = 11, .own = 4.5, .busy = 42, .cpus = 2};
    ck_assert_double_eq_tol(load_others(&from, &to), 0.5, 1e-12);
    to.busy = 41; /* a tick's rounding can make ours look larger than the machine's */
    ck_assert_double_eq(load_others(&from, &to), 0);
    to.busy = NAN;
    ck_assert(isnan(load_others(&from, &to)));
    ck_assert(isnan(load_others(&to, &to)));
    LoadSample now;
    load_sample(&now);
    ck_assert(now.cpus >= 1 && now.wall > 0 && now.own >= 0);
}
END_TEST

Suite *layers_suite(void) {
    Suite *s = suite_create("layers");
    TCase *tc = tcase_create("layers");
    tcase_add_test(tc, attention_worked_example);
    tcase_add_test(tc, attention_backward_matches_finite_differences);
    tcase_add_test(tc, dot_scores_worked_example);
    tcase_add_test(tc, dot_scores_backward_match_finite_differences);
    tcase_add_test(tc, gru_forward_hand_computed);
    tcase_add_test(tc, gru_backward_matches_finite_differences);
    tcase_add_test(tc, linear_tanh_forward_and_backward);
    tcase_add_test(tc, embedding_gathers_and_scatters);
    tcase_add_test(tc, softmax_and_loss_stay_finite_for_huge_logits);
    tcase_add_test(tc, loss_backward_matches_finite_differences);
    tcase_add_test(tc, vector_functions_match_libm);
    tcase_add_test(tc, vector_functions_limits_and_nan);
    tcase_add_test(tc, vector_reductions);
    tcase_add_test(tc, thread_choice_follows_the_faster_count);
    tcase_add_test(tc, thread_choice_costs_a_short_run_few_steps);
    tcase_add_test(tc, thread_choice_trusts_a_quiet_load_for_a_while);
    tcase_add_test(tc, thread_choice_outlives_a_misleading_load);
    tcase_add_test(tc, load_others_counts_the_processors_others_used);
    suite_add_tcase(s, tc);
    return s;
}

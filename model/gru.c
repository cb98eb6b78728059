/*
 * gru.c: GRU step forward and backward (see gru.h).
 */
#include "gru.h"
#include "parallel.h"

#include "fastmath.h"
#include "gemm.h"

void gru_step_forward(real *h_out, real *cache, real *scratch, const real *gi, const real *h_prev,
                      const real *w_hh, const real *b_hh, const int *len, int pos, int B, int N) {
    real *gh = scratch; /* [B,3N] = h_prev W_hh^T */
    gemm(AS_STORED, TRANSPOSE, B, 3 * N, N, h_prev, N, w_hh, N, 0, gh, 3 * N);
    gru_gates_forward(h_out, cache, gi, gh, h_prev, b_hh, len, pos, B, N);
}

/* Units [lo, hi) of row b of gru_gates_forward. */
static void gates_row(real *h_out, real *cache, const real *gi, const real *gh, const real *h_prev,
                      const real *b_hh, const int *len, int pos, int b, int N, int lo, int hi) {
    const real *gi_b = gi + (size_t)b * 3 * N, *gh_b = gh + (size_t)b * 3 * N;
    const real *hp = h_prev + (size_t)b * N;
    real *c = cache + (size_t)b * GRU_CACHE_WIDTH * N, *h = h_out + (size_t)b * N;
    int active = !len || pos < len[b], w = hi - lo;
    /* r and z: sigmoid over each gate's pre-activations at once; then n: tanh */
    for (int g = 0; g < 2; g++) {
        for (int j = g * N + lo; j < g * N + hi; j++) c[j] = gi_b[j] + gh_b[j] + b_hh[j];
        vec_sigmoid(c + g * N + lo, (size_t)w);
    }
    for (int j = lo; j < hi; j++) {
        c[3 * N + j] = gh_b[2 * N + j] + b_hh[2 * N + j]; /* hn */
        c[2 * N + j] = gi_b[2 * N + j] + c[j] * c[3 * N + j];
    }
    vec_tanh(c + 2 * N + lo, (size_t)w);
    for (int j = lo; j < hi; j++) {
        real z = c[N + j], n = c[2 * N + j];
        h[j] = active ? (1 - z) * n + z * hp[j] : hp[j];
    }
}

void gru_gates_forward(real *h_out, real *cache, const real *gi, const real *gh, const real *h_prev,
                       const real *b_hh, const int *len, int pos, int B, int N) {
    PARALLEL_FOR(b, B, (double)B * N, 4096,
                 gates_row(h_out, cache, gi, gh, h_prev, b_hh, len, pos, (int)b, N, 0, N));
}

void gru_gates_units(real *h_out, real *cache, const real *gi, const real *gh, const real *h_prev,
                     const real *b_hh, int B, int N, int lo, int hi) {
    for (int b = 0; b < B; b++)
        gates_row(h_out, cache, gi, gh, h_prev, b_hh, NULL, 0, b, N, lo, hi);
}

/* Row b of gru_step_backward's element-wise part. */
static void gates_row_backward(real *dh_prev, real *dgi, real *dgh, const real *dh,
                               const real *cache, const real *h_prev, const int *len, int pos,
                               int b, int N) {
    const real *c = cache + (size_t)b * GRU_CACHE_WIDTH * N, *hp = h_prev + (size_t)b * N;
    const real *dh_b = dh + (size_t)b * N;
    real *dgi_b = dgi + (size_t)b * 3 * N, *dgh_b = dgh + (size_t)b * 3 * N;
    real *dhp = dh_prev + (size_t)b * N;
    int active = !len || pos < len[b];
    for (int j = 0; j < N; j++) {
        real r = c[j], z = c[N + j], n = c[2 * N + j], hn = c[3 * N + j];
        /* forward was h' = (1 - z) * n + z * h for active rows, h' = h otherwise */
        real dcell = active ? dh_b[j] : 0;
        real dn = dcell * (1 - z);
        real dz = dcell * (hp[j] - n);
        /* n = tanh(a_n), a_n = gi_n + r * hn */
        real dan = dn * (1 - n * n);
        real dr = dan * hn;
        /* r = sigmoid(a_r), z = sigmoid(a_z) */
        real dar = dr * r * (1 - r);
        real daz = dz * z * (1 - z);
        dgi_b[j] = dar, dgi_b[N + j] = daz, dgi_b[2 * N + j] = dan;
        dgh_b[j] = dar, dgh_b[N + j] = daz, dgh_b[2 * N + j] = dan * r;
        dhp[j] = active ? dcell * z : dh_b[j];
    }
}

void gru_step_backward(real *dh_prev, real *dgi, real *dgh, const real *dh, const real *cache,
                       const real *h_prev, const real *w_hh, const int *len, int pos, int B,
                       int N) {
    PARALLEL_FOR(b, B, (double)B * N, 4096,
                 gates_row_backward(dh_prev, dgi, dgh, dh, cache, h_prev, len, pos, (int)b, N));
    /* h also entered through W_hh h: dh_prev += dgh W_hh */
    gemm(AS_STORED, AS_STORED, B, N, 3 * N, dgh, 3 * N, w_hh, N, 1, dh_prev, N);
}

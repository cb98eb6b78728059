/*
 * gru.c: GRU step forward and backward (see gru.h).
 */
#include "model/gru.h"

#include "model/fastmath.h"
#include "model/gemm.h"
#include "model/layernorm.h"

void gru_step_forward(real *h_out, real *cache, real *scratch, const real *gi, const real *h_prev,
                      const GemmPanels *w_hh, const real *b_hh, const int *len, int pos, int B,
                      int N) {
    real *gh = scratch; /* [B,3N] = h_prev W_hh^T */
    gemm_packed(AS_STORED, B, h_prev, N, w_hh, 0, gh, 3 * N);
    gru_gates_forward(h_out, cache, gi, gh, h_prev, b_hh, len, pos, B, N);
}

void gru_step_forward_ln(real *h_out, real *cache, real *xhat, real *rstd, real *scratch,
                         const real *gi, const real *h_prev, const GemmPanels *w_hh,
                         const real *g_hh, const real *b_hh, const int *len, int pos, int B,
                         int N) {
    real *gh = scratch; /* [B,3N] = h_prev W_hh^T, then g_hh * LN(it) in place */
    gemm_packed(AS_STORED, B, h_prev, N, w_hh, 0, gh, 3 * N);
    layernorm_forward(gh, 3 * N, xhat, rstd, gh, 3 * N, g_hh, NULL, B, 3 * N);
    gru_gates_forward(h_out, cache, gi, gh, h_prev, b_hh, len, pos, B, N);
}

/* The element-wise part of a step for units [lo, hi) of one row (pointers at the row): the
 * gates into c (r, z, n, hn at c, c + N, c + 2N, c + 3N), then h. In vector clones, as
 * fastmath's loops: GCC left these loops scalar while their pointers could alias and the
 * select between active and passed-through rows was inside them. Each clone computes every
 * value as the scalar code does (no FMA is contracted in ISO C mode). */
static VECTOR_BODY void gates_units_body(real *restrict h, real *restrict c,
                                         const real *restrict gi, const real *restrict gh,
                                         const real *restrict hp, const real *restrict b_hh,
                                         int active, int N, int lo, int hi) {
    /* r and z: sigmoid over each gate's pre-activations at once; then n: tanh */
    for (int g = 0; g < 2; g++) {
        for (int j = g * N + lo; j < g * N + hi; j++) c[j] = gi[j] + gh[j] + b_hh[j];
        vec_sigmoid(c + g * N + lo, (size_t)(hi - lo));
    }
    for (int j = lo; j < hi; j++) {
        c[3 * N + j] = gh[2 * N + j] + b_hh[2 * N + j]; /* hn */
        c[2 * N + j] = gi[2 * N + j] + c[j] * c[3 * N + j];
    }
    vec_tanh(c + 2 * N + lo, (size_t)(hi - lo));
    if (active)
        for (int j = lo; j < hi; j++) h[j] = (1 - c[N + j]) * c[2 * N + j] + c[N + j] * hp[j];
    else
        for (int j = lo; j < hi; j++) h[j] = hp[j];
}
VECTOR_DISPATCH_VOID(VECTOR_SETS, static, gates_units,
                     (real *restrict h, real *restrict c, const real *restrict gi,
                      const real *restrict gh, const real *restrict hp, const real *restrict b_hh,
                      int active, int N, int lo, int hi),
                     (h, c, gi, gh, hp, b_hh, active, N, lo, hi))

/* Units [lo, hi) of row b of gru_gates_forward. */
static void gates_row(real *h_out, real *cache, const real *gi, const real *gh, const real *h_prev,
                      const real *b_hh, const int *len, int pos, int b, int N, int lo, int hi) {
    gates_units(h_out + (size_t)b * N, cache + (size_t)b * GRU_CACHE_WIDTH * N,
                gi + (size_t)b * 3 * N, gh + (size_t)b * 3 * N, h_prev + (size_t)b * N, b_hh,
                !len || pos < len[b], N, lo, hi);
}

void gru_gates_forward(real *h_out, real *cache, const real *gi, const real *gh, const real *h_prev,
                       const real *b_hh, const int *len, int pos, int B, int N) {
    for (int b = 0; b < B; b++) gates_row(h_out, cache, gi, gh, h_prev, b_hh, len, pos, b, N, 0, N);
}

void gru_gates_units(real *h_out, real *cache, const real *gi, const real *gh, const real *h_prev,
                     const real *b_hh, int B, int N, int lo, int hi) {
    for (int b = 0; b < B; b++)
        gates_row(h_out, cache, gi, gh, h_prev, b_hh, NULL, 0, b, N, lo, hi);
}

/* Unit j's gradients, given d loss / d h' = dcell (0 for a row past its sentence's end). */
static inline void unit_backward(real dcell, int j, real *restrict dgi, real *restrict dgh,
                                 const real *restrict c, const real *restrict hp, int N) {
    real r = c[j], z = c[N + j], n = c[2 * N + j], hn = c[3 * N + j];
    /* forward was h' = (1 - z) * n + z * h for active rows, h' = h otherwise */
    real dn = dcell * (1 - z);
    real dz = dcell * (hp[j] - n);
    /* n = tanh(a_n), a_n = gi_n + r * hn */
    real dan = dn * (1 - n * n);
    real dr = dan * hn;
    /* r = sigmoid(a_r), z = sigmoid(a_z) */
    real dar = dr * r * (1 - r);
    real daz = dz * z * (1 - z);
    dgi[j] = dar, dgi[N + j] = daz, dgi[2 * N + j] = dan;
    dgh[j] = dar, dgh[N + j] = daz, dgh[2 * N + j] = dan * r;
}

/* Row b of gru_step_backward's element-wise part (pointers at the row), vectorised as
 * gates_units is: the select between active and passed-through rows is outside the loops. */
static VECTOR_BODY void gates_row_backward_body(real *restrict dhp, real *restrict dgi,
                                                real *restrict dgh, const real *restrict dh,
                                                const real *restrict c, const real *restrict hp,
                                                int active, int N) {
    if (active)
        for (int j = 0; j < N; j++) {
            unit_backward(dh[j], j, dgi, dgh, c, hp, N);
            dhp[j] = dh[j] * c[N + j];
        }
    else
        for (int j = 0; j < N; j++) {
            unit_backward(0, j, dgi, dgh, c, hp, N);
            dhp[j] = dh[j];
        }
}
VECTOR_DISPATCH_VOID(VECTOR_SETS, static, gates_row_backward,
                     (real *restrict dhp, real *restrict dgi, real *restrict dgh,
                      const real *restrict dh, const real *restrict c, const real *restrict hp,
                      int active, int N),
                     (dhp, dgi, dgh, dh, c, hp, active, N))

/* The element-wise part of gru_step_backward: dgi, dgh and dh_prev's part through z * h. */
static void gates_backward(real *dh_prev, real *dgi, real *dgh, const real *dh, const real *cache,
                           const real *h_prev, const int *len, int pos, int B, int N) {
    for (int b = 0; b < B; b++)
        gates_row_backward(dh_prev + (size_t)b * N, dgi + (size_t)b * 3 * N,
                           dgh + (size_t)b * 3 * N, dh + (size_t)b * N,
                           cache + (size_t)b * GRU_CACHE_WIDTH * N, h_prev + (size_t)b * N,
                           !len || pos < len[b], N);
}

void gru_step_backward(real *dh_prev, real *dgi, real *dgh, const real *dh, const real *cache,
                       const real *h_prev, const GemmPanels *w_hh, const int *len, int pos, int B,
                       int N) {
    gates_backward(dh_prev, dgi, dgh, dh, cache, h_prev, len, pos, B, N);
    /* h also entered through W_hh h: dh_prev += dgh W_hh */
    gemm_packed(AS_STORED, B, dgh, 3 * N, w_hh, 1, dh_prev, N);
}

void gru_step_backward_ln(real *dh_prev, real *dgi, real *dgh, real *scratch, const real *dh,
                          const real *cache, const real *xhat, const real *rstd, const real *h_prev,
                          const GemmPanels *w_hh, const real *g_hh, const int *len, int pos, int B,
                          int N) {
    gates_backward(dh_prev, dgi, dgh, dh, cache, h_prev, len, pos, B, N);
    /* forward was gh = g_hh * LN(W_hh h): d (W_hh h) into scratch, then dh_prev += it W_hh */
    layernorm_backward(scratch, NULL, NULL, dgh, xhat, rstd, g_hh, B, 3 * N);
    gemm_packed(AS_STORED, B, scratch, 3 * N, w_hh, 1, dh_prev, N);
}

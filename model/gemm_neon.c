/*
 * gemm_neon.c: gemm's kernels for ARM64 (NEON, which every ARM64 CPU has), in gemm.c's Isa
 * interface (gemm_isa.h), chosen by gemm.c when cpu_allows(ISA_NEON).
 *
 * The micro-kernel keeps an 8 x 12 tile of C in 24 of the 32 vector registers (3 vectors of
 * 4 floats a row); each k loads 3 vectors of op(B) and 2 of op(A) and does 24 fused
 * multiply-adds by lane (fmla v.4s, v.4s, v.s[lane]), which leaves 3 registers spare. The
 * vector-matrix loop runs 8 vectors of 4 columns at a time; the dot products (B transposed,
 * one row) run 2 vectors along k and 4 rows of B at once.
 *
 * The arithmetic is gemm.c's (see its Determinism): every element is, per K block, a sum from
 * zero over k in order with one fused multiply-add a term; columns past a vector's width take
 * fmaf, which is the same operation. The dot products sum lanes k mod 8 and end in a fixed
 * tree, whatever the number of rows of B with them.
 */
#include "model/gemm_isa.h"

#if GEMM_NEON
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#define NEON_MR 8
#define NEON_NR 12

static void kernel_neon(int kc, const float *a, const float *b, ptrdiff_t ldb, float *c,
                        ptrdiff_t ldc, int mr, int nr, int add) {
    float32x4_t acc[NEON_MR][3];
    for (int i = 0; i < NEON_MR; i++) acc[i][0] = acc[i][1] = acc[i][2] = vdupq_n_f32(0);
    for (int k = 0; k < kc; k++, a += NEON_MR, b += ldb) {
        float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
        float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
#define ROW(i, av, lane)                                                                           \
    acc[i][0] = vfmaq_laneq_f32(acc[i][0], b0, av, lane);                                          \
    acc[i][1] = vfmaq_laneq_f32(acc[i][1], b1, av, lane);                                          \
    acc[i][2] = vfmaq_laneq_f32(acc[i][2], b2, av, lane);
        ROW(0, a0, 0) ROW(1, a0, 1) ROW(2, a0, 2) ROW(3, a0, 3);
        ROW(4, a1, 0) ROW(5, a1, 1) ROW(6, a1, 2) ROW(7, a1, 3);
#undef ROW
    }
    for (int i = 0; i < mr; i++) {
        float *ci = c + i * ldc;
        if (nr == NEON_NR) {
            for (int v = 0; v < 3; v++) {
                float32x4_t x = acc[i][v];
                if (add) x = vaddq_f32(vld1q_f32(ci + 4 * v), x);
                vst1q_f32(ci + 4 * v, x);
            }
        } else { /* the right edge: through memory, lanes j < nr only */
            float t[NEON_NR];
            for (int v = 0; v < 3; v++) vst1q_f32(t + 4 * v, acc[i][v]);
            for (int j = 0; j < nr; j++) ci[j] = add ? ci[j] + t[j] : t[j];
        }
    }
}

/* Stores (or adds) the 4 lanes of v to y[j*incy]. */
static inline void store4(float *y, ptrdiff_t incy, float32x4_t v, int add) {
    if (incy == 1) {
        if (add) v = vaddq_f32(vld1q_f32(y), v);
        vst1q_f32(y, v);
        return;
    }
    float t[4];
    vst1q_f32(t, v);
    for (int j = 0; j < 4; j++) y[j * incy] = add ? y[j * incy] + t[j] : t[j];
}

static void gemv_n_neon(int n, int K, const float *x, ptrdiff_t incx, const float *B, ptrdiff_t ldb,
                        int add, float *y, ptrdiff_t incy) {
    int j0 = 0;
    for (; j0 + 32 <= n; j0 += 32) /* 8 accumulators: enough independent chains */
        for (int p = 0; p < K; p += KC) {
            float32x4_t acc[8];
            for (int v = 0; v < 8; v++) acc[v] = vdupq_n_f32(0);
            int end = p + KC < K ? p + KC : K;
            for (int k = p; k < end; k++) {
                float32x4_t xk = vdupq_n_f32(x[k * incx]);
                const float *bk = B + k * ldb + j0;
                for (int v = 0; v < 8; v++) acc[v] = vfmaq_f32(acc[v], xk, vld1q_f32(bk + 4 * v));
            }
            for (int v = 0; v < 8; v++) store4(y + (j0 + 4 * v) * incy, incy, acc[v], add || p > 0);
        }
    for (; j0 + 4 <= n; j0 += 4) /* the same arithmetic, one vector at a time */
        for (int p = 0; p < K; p += KC) {
            float32x4_t acc = vdupq_n_f32(0);
            int end = p + KC < K ? p + KC : K;
            for (int k = p; k < end; k++)
                acc = vfmaq_f32(acc, vdupq_n_f32(x[k * incx]), vld1q_f32(B + k * ldb + j0));
            store4(y + j0 * incy, incy, acc, add || p > 0);
        }
    for (; j0 < n; j0++) /* and one column at a time: fmaf is a lane's fmla */
        for (int p = 0; p < K; p += KC) {
            float acc = 0;
            int end = p + KC < K ? p + KC : K;
            for (int k = p; k < end; k++) acc = fmaf(x[k * incx], B[k * ldb + j0], acc);
            float *yj = y + j0 * incy;
            *yj = add || p > 0 ? *yj + acc : acc;
        }
}

/* The sum of the 8 lanes of s0 (k mod 8 < 4) and s1, in a fixed tree. */
static inline float reduce8(float32x4_t s0, float32x4_t s1) {
    float32x4_t s = vaddq_f32(s0, s1);
    float32x2_t h = vadd_f32(vget_low_f32(s), vget_high_f32(s));
    return vget_lane_f32(h, 0) + vget_lane_f32(h, 1);
}

/* Loads k .. k + 7 of a row that has only `left` < 8 values from k, the rest zero. */
static inline void load_tail(const float *row, int left, float32x4_t *v0, float32x4_t *v1) {
    float t[8] = {0};
    memcpy(t, row, sizeof(float) * (size_t)left);
    *v0 = vld1q_f32(t), *v1 = vld1q_f32(t + 4);
}

static void dot_neon(int m, int n, int kc, const float *a, ptrdiff_t lda, const float *b,
                     ptrdiff_t ldb, int add, float *c, ptrdiff_t rsc, ptrdiff_t csc) {
    int full = kc - kc % 8;
    for (int i = 0; i < m; i++) {
        const float *ai = a + i * lda;
        for (int j = 0; j < n; j += 4) { /* 4 rows of b share each load of a's row */
            int rows = n - j < 4 ? n - j : 4;
            const float *bq[4];
            for (int q = 0; q < 4; q++) bq[q] = b + (j + (q < rows ? q : rows - 1)) * ldb;
            float32x4_t s0[4], s1[4];
            for (int q = 0; q < 4; q++) s0[q] = s1[q] = vdupq_n_f32(0);
            for (int k = 0; k < full; k += 8) {
                float32x4_t x0 = vld1q_f32(ai + k), x1 = vld1q_f32(ai + k + 4);
                for (int q = 0; q < 4; q++) {
                    s0[q] = vfmaq_f32(s0[q], x0, vld1q_f32(bq[q] + k));
                    s1[q] = vfmaq_f32(s1[q], x1, vld1q_f32(bq[q] + k + 4));
                }
            }
            if (full < kc) {
                float32x4_t x0, x1, y0, y1;
                load_tail(ai + full, kc - full, &x0, &x1);
                for (int q = 0; q < 4; q++) {
                    load_tail(bq[q] + full, kc - full, &y0, &y1);
                    s0[q] = vfmaq_f32(s0[q], x0, y0);
                    s1[q] = vfmaq_f32(s1[q], x1, y1);
                }
            }
            for (int q = 0; q < rows; q++) {
                float r = reduce8(s0[q], s1[q]), *cq = c + i * rsc + (j + q) * csc;
                *cq = add ? *cq + r : r;
            }
        }
    }
}

const Isa isa_neon = {.set = ISA_NEON,
                      .mr = NEON_MR,
                      .nr = NEON_NR,
                      .fma = 1,
                      .in_place_m = 16,
                      .kernel = kernel_neon,
                      .gemv_n = gemv_n_neon,
                      .dot = dot_neon,
                      .dot_max_m = 1};
#endif

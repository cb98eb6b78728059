/*
 * fastmath.c: vectorisable exp, tanh and sigmoid (see fastmath.h).
 *
 * exp(x): x = k ln2 + r with |r| <= ln2/2 (ln2 split in two parts so r is exact), exp(r) by
 * its Taylor series to r^7 (truncation error below 5e-9), then scaled by 2^k built directly
 * in the exponent bits. tanh(x): for |x| < 0.25 its odd Taylor series to x^11 (next term
 * below 1e-10 relative); otherwise (1 - t) / (1 + t) with t = exp(-2|x|) <= e^-0.5, which
 * has no cancellation there. Both branches are computed and one is selected, so loops have no
 * branches and vectorise.
 */
#include "fastmath.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <stdatomic.h>

#define FIRST_ALLOWED_(set, suffix, target_, unused)                                               \
    if (cpu_allows(set)) return set;
static InstructionSet vector_select(void) {
    VECTOR_SETS(FIRST_ALLOWED_, 0)
    return ISA_PORTABLE;
}

InstructionSet vector_kernels(void) {
    /* chosen once (racing first calls reach the same answer): every loop of the model asks */
    static atomic_int chosen = -1;
    int set = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (set < 0) {
        set = (int)vector_select();
        atomic_store_explicit(&chosen, set, memory_order_relaxed);
    }
    return (InstructionSet)set;
}

#ifndef REAL_DOUBLE

static VECTOR_BODY float exp_poly(float x) {
    /* clamp to the range where 2^k is a normal float; comparisons keep NaN as NaN */
    float xc = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    /* k = round(x / ln2) without floorf or a float-to-int conversion, which would stop the
     * vectoriser under the default -ftrapping-math: adding 1.5 * 2^23 leaves k in the low
     * mantissa bits */
    const float magic = 12582912.0f;
    float shifted = xc * 1.44269504f + magic;
    float k = shifted - magic;
    uint32_t k_bits;
    memcpy(&k_bits, &shifted, sizeof k_bits);
    float r = xc - k * 0.693359375f + k * 2.12194440e-4f;
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    /* 2^k in the exponent field (unsigned: a NaN's bits may wrap, harmlessly) */
    uint32_t bits = (k_bits - 0x4B400000u + 127u) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

static VECTOR_BODY float tanh_poly(float x) {
    float ax = fabsf(x), x2 = x * x;
    float small = -1382.0f / 155925;
    small = small * x2 + 62.0f / 2835;
    small = small * x2 - 17.0f / 315;
    small = small * x2 + 2.0f / 15;
    small = small * x2 - 1.0f / 3;
    small = x + x * x2 * small;
    float t = exp_poly(-2 * ax);
    float big = copysignf((1 - t) / (1 + t), x);
    return ax < 0.25f ? small : big;
}

static VECTOR_BODY void vec_tanh_body(real *x, size_t n) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) x[i] = tanh_poly(x[i]);
}
VECTOR_DISPATCH_VOID(VECTOR_SETS, extern, vec_tanh, (real * x, size_t n), (x, n))

static VECTOR_BODY void vec_sigmoid_body(real *x, size_t n) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) x[i] = 1 / (1 + exp_poly(-x[i]));
}
VECTOR_DISPATCH_VOID(VECTOR_SETS, extern, vec_sigmoid, (real * x, size_t n), (x, n))

static VECTOR_BODY void vec_exp_body(real *y, const real *x, size_t n, real shift, real scale) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) y[i] = scale * exp_poly(x[i] - shift);
}
VECTOR_DISPATCH_VOID(VECTOR_SETS, extern, vec_exp,
                     (real * y, const real *x, size_t n, real shift, real scale),
                     (y, x, n, shift, scale))

/* The sum of exp(x - shift) as 16 partial sums in a fixed pattern (vectorises, and the order
 * never changes), storing each exp(x - shift) in y unless y is NULL: a constant at each call
 * below, so neither loop tests it. */
static VECTOR_BODY float sum_exp_into(float *y, const float *x, size_t n, float shift) {
    float part[16] = {0};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
#pragma omp simd
        for (int j = 0; j < 16; j++) {
            float e = exp_poly(x[i + j] - shift);
            if (y) y[i + j] = e;
            part[j] += e;
        }
    for (int j = 0; i < n; i++, j++) {
        float e = exp_poly(x[i] - shift);
        if (y) y[i] = e;
        part[j] += e;
    }
    float sum = 0;
    for (int j = 0; j < 16; j++) sum += part[j];
    return sum;
}

static VECTOR_BODY real vec_sum_exp_body(const real *x, size_t n, real shift) {
    return sum_exp_into(NULL, x, n, shift);
}
VECTOR_DISPATCH(VECTOR_SETS, extern, real, vec_sum_exp, (const real *x, size_t n, real shift),
                (x, n, shift))

static VECTOR_BODY real vec_exp_sum_body(real *y, const real *x, size_t n, real shift) {
    return sum_exp_into(y, x, n, shift);
}
VECTOR_DISPATCH(VECTOR_SETS, extern, real, vec_exp_sum,
                (real * y, const real *x, size_t n, real shift), (y, x, n, shift))

static VECTOR_BODY real vec_max_body(const real *x, size_t n) {
    /* 16 running maxima, as vec_sum_exp's sums; x > m keeps a NaN out, as the scalar loop */
    float part[16];
    for (int j = 0; j < 16; j++) part[j] = x[0];
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
#pragma omp simd
        for (int j = 0; j < 16; j++) part[j] = x[i + j] > part[j] ? x[i + j] : part[j];
    for (int j = 0; i < n; i++, j++) part[j] = x[i] > part[j] ? x[i] : part[j];
    float top = part[0];
    for (int j = 1; j < 16; j++) top = part[j] > top ? part[j] : top;
    return top;
}
VECTOR_DISPATCH(VECTOR_SETS, extern, real, vec_max, (const real *x, size_t n), (x, n))

static VECTOR_BODY real vec_add_max_body(real *restrict x, const real *restrict b, size_t n) {
    /* vec_max's running maxima, over the sums as they are formed (the largest value does not
     * depend on which lane saw it) */
    x[0] += b[0];
    float part[16];
    for (int j = 0; j < 16; j++) part[j] = x[0];
    size_t i = 1;
    for (; i + 16 <= n; i += 16)
#pragma omp simd
        for (int j = 0; j < 16; j++) {
            x[i + j] += b[i + j];
            part[j] = x[i + j] > part[j] ? x[i + j] : part[j];
        }
    for (int j = 0; i < n; i++, j++) {
        x[i] += b[i];
        part[j] = x[i] > part[j] ? x[i] : part[j];
    }
    float top = part[0];
    for (int j = 1; j < 16; j++) top = part[j] > top ? part[j] : top;
    return top;
}
VECTOR_DISPATCH(VECTOR_SETS, extern, real, vec_add_max,
                (real *restrict x, const real *restrict b, size_t n), (x, b, n))

static VECTOR_BODY real vec_dot_body(const real *x, const real *y, size_t n) {
    /* 16 partial sums in a fixed pattern, as vec_sum_exp: one chain would wait on the latency
     * of every multiply-add in turn */
    float part[16] = {0};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
#pragma omp simd
        for (int j = 0; j < 16; j++) part[j] += x[i + j] * y[i + j];
    for (int j = 0; i < n; i++, j++) part[j] += x[i] * y[i];
    float sum = 0;
    for (int j = 0; j < 16; j++) sum += part[j];
    return sum;
}
VECTOR_DISPATCH(VECTOR_SETS, extern, real, vec_dot, (const real *x, const real *y, size_t n),
                (x, y, n))

#else /* double build: libm, exactly */

void vec_tanh(real *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = tanh(x[i]);
}

void vec_sigmoid(real *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = 1 / (1 + exp(-x[i]));
}

void vec_exp(real *y, const real *x, size_t n, real shift, real scale) {
    for (size_t i = 0; i < n; i++) y[i] = scale * exp(x[i] - shift);
}

real vec_dot(const real *x, const real *y, size_t n) {
    real sum = 0;
    for (size_t i = 0; i < n; i++) sum += x[i] * y[i];
    return sum;
}

real vec_max(const real *x, size_t n) {
    real top = x[0];
    for (size_t i = 1; i < n; i++)
        if (x[i] > top) top = x[i];
    return top;
}

real vec_add_max(real *x, const real *b, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] += b[i];
    return vec_max(x, n);
}

real vec_sum_exp(const real *x, size_t n, real shift) {
    real sum = 0;
    for (size_t i = 0; i < n; i++) sum += exp(x[i] - shift);
    return sum;
}

real vec_exp_sum(real *y, const real *x, size_t n, real shift) {
    real sum = 0;
    for (size_t i = 0; i < n; i++) {
        y[i] = exp(x[i] - shift);
        sum += y[i];
    }
    return sum;
}

#endif

enum { SUM_SQUARES_AHEAD = 1024 };

static VECTOR_BODY void vec_sum_squares_add_body(double part[SUM_SQUARES_LANES], const real *x,
                                                 size_t n) {
    /* 32 partial sums in a fixed pattern, as vec_dot's 16: four vectors of doubles in flight
     * instead of one chain waiting on each addition; kept in a local array, which the
     * compiler keeps in registers */
    double lane[SUM_SQUARES_LANES];
    memcpy(lane, part, sizeof lane);
    size_t i = 0;
    for (; i + SUM_SQUARES_LANES <= n; i += SUM_SQUARES_LANES) {
        /* 4 KB ahead: the gradient norm reads one stream a thread, which the hardware alone
         * fetched well below the rate Adam reads its four streams at (docs/performance.md) */
        if (i + SUM_SQUARES_AHEAD + SUM_SQUARES_LANES <= n) {
            __builtin_prefetch(x + i + SUM_SQUARES_AHEAD);
            __builtin_prefetch(x + i + SUM_SQUARES_AHEAD + SUM_SQUARES_LANES / 2);
        }
#pragma omp simd
        for (int j = 0; j < SUM_SQUARES_LANES; j++) lane[j] += (double)x[i + j] * x[i + j];
    }
    for (int j = 0; i < n; i++, j++) lane[j] += (double)x[i] * x[i];
    memcpy(part, lane, sizeof lane);
}
VECTOR_DISPATCH_VOID(VECTOR_SETS, extern, vec_sum_squares_add,
                     (double part[SUM_SQUARES_LANES], const real *x, size_t n), (part, x, n))

static VECTOR_BODY double vec_sum_body(const real *x, size_t n) {
    /* vec_sum_squares's pattern of partial sums */
    double lane[SUM_SQUARES_LANES] = {0};
    size_t i = 0;
    for (; i + SUM_SQUARES_LANES <= n; i += SUM_SQUARES_LANES)
#pragma omp simd
        for (int j = 0; j < SUM_SQUARES_LANES; j++) lane[j] += (double)x[i + j];
    for (int j = 0; i < n; i++, j++) lane[j] += (double)x[i];
    return sum_squares_total(lane);
}
VECTOR_DISPATCH(VECTOR_SETS, extern, double, vec_sum, (const real *x, size_t n), (x, n))

static VECTOR_BODY void vec_add_scaled_body(real *restrict y, real a, const real *restrict x,
                                            size_t n) {
    for (size_t i = 0; i < n; i++) y[i] += a * x[i];
}
VECTOR_DISPATCH_VOID(VECTOR_SETS, extern, vec_add_scaled,
                     (real *restrict y, real a, const real *restrict x, size_t n), (y, a, x, n))

double sum_squares_total(const double part[SUM_SQUARES_LANES]) {
    double sum = 0;
    for (int j = 0; j < SUM_SQUARES_LANES; j++) sum += part[j];
    return sum;
}

double vec_sum_squares(const real *x, size_t n) {
    double part[SUM_SQUARES_LANES] = {0};
    vec_sum_squares_add(part, x, n);
    return sum_squares_total(part);
}

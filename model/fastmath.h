/*
 * fastmath.h: exp, tanh and sigmoid over arrays, and the sums and maxima the model reduces
 * arrays with, written so the compiler vectorises them (reductions keep 16 partial results in a
 * fixed pattern, so their order, and so their round-off, never changes).
 *
 * The model spends much of its time in these functions (additive attention alone takes one
 * tanh per decoder step, sentence, source position and attention unit), and libm's scalar
 * versions are much slower than a vector polynomial. In a float build they
 * are accurate to a few units in the last place; a double build (make REAL=double) uses libm
 * itself, so the exact gradient checks see exact functions. A NaN in stays a NaN out; exp
 * saturates at exp(-87) ~ 1.6e-38 and exp(88) ~ 1.7e38 instead of reaching 0 and infinity,
 * which no softmax or sigmoid here can tell apart from the exact values.
 */
#ifndef NMT_FASTMATH_H
#define NMT_FASTMATH_H

#include <stddef.h>

#include "base/base.h"

/* Compiles a function for AVX-512, AVX2 and the baseline, and the loader picks the best the
 * CPU has (GCC function multiversioning): no -march flag, one binary. For the array loops of
 * the float build. Every clone gives the same values (ISO C mode contracts no FMA; only a
 * NaN's payload may differ), and every clone is vectorised: fastmath.c is compiled with
 * -fno-trapping-math for that (see the Makefile). */
#if !defined(REAL_DOUBLE) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
/* The same without AVX-512, for loops bound by square roots and divisions: on some CPUs
 * AVX-512's are slower than AVX2's, and Adam's loop was slowest in its AVX-512 clone
 * (docs/performance.md). */
#define AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VECTOR_CLONES
#define AVX2_CLONES
#endif

/* x = tanh(x), in place, over n values. */
void vec_tanh(real *x, size_t n);
/* x = 1 / (1 + exp(-x)), in place. */
void vec_sigmoid(real *x, size_t n);
/* y = scale * exp(x - shift); y may be x. */
void vec_exp(real *y, const real *x, size_t n, real shift, real scale);
/* sum of exp(x - shift), accumulated in a fixed order. */
real vec_sum_exp(const real *x, size_t n, real shift);
/* y = exp(x - shift), and their sum: vec_sum_exp's, bit for bit; y may be x. */
real vec_exp_sum(real *y, const real *x, size_t n, real shift);
/* sum of x[i] * y[i], accumulated in a fixed order. */
real vec_dot(const real *x, const real *y, size_t n);
/* sum of x[i]^2 in double, accumulated in a fixed order (the gradient norm's): each x[i]^2
 * into partial sum i % SUM_SQUARES_LANES, in order of i, then the partial sums in order. */
double vec_sum_squares(const real *x, size_t n);
/* Its two halves, for a sum that skips runs of zeros: adding 0 leaves a partial sum as it is,
 * so skipping whole blocks of SUM_SQUARES_LANES zeros (counted from x) gives the same bits. */
#define SUM_SQUARES_LANES 32
void vec_sum_squares_add(double part[SUM_SQUARES_LANES], const real *x, size_t n);
double sum_squares_total(const double part[SUM_SQUARES_LANES]);
/* sum of x[i] in double, accumulated in a fixed order (vec_sum_squares's). */
double vec_sum(const real *x, size_t n);
/* The largest of n >= 1 values (NaNs are passed over unless x[0] is one). */
real vec_max(const real *x, size_t n);
/* x += b over n >= 1 values, and then vec_max(x, n), in one pass (x and b do not overlap). */
real vec_add_max(real *x, const real *b, size_t n);
/* y += a * x over n values (x and y do not overlap). */
void vec_add_scaled(real *y, real a, const real *x, size_t n);

#endif

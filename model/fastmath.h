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
#include "base/cpu.h"

/* The array loops of this header, and the model's others (Adam's, the norm's, the gates'),
 * are each written once, as a portable body, and compiled once for each instruction set below
 * and once for none; the first call chooses among them through cpu_allows(), so NMT_ISA caps
 * them as it caps the products (base/cpu.h). Every variant gives the same values: the build
 * contracts no multiply-add into an FMA (ISO C mode; clang is told so below), and a variant
 * only lets the compiler use wider vectors (only a NaN's payload may differ). Each is
 * vectorised (tests/cpus/run.sh checks): fastmath.c is compiled with -fno-trapping-math for
 * that (see the Makefile).
 *
 * VECTOR_SETS(X, ...) names the sets, best first, as X(set, suffix, target attribute, ...);
 * another architecture's sets are a line each here. NARROW_SETS leaves out AVX-512, for loops
 * bound by square roots and divisions: on some CPUs AVX-512's are slower than AVX2's, and
 * Adam's loop was slowest in its AVX-512 clone (docs/performance.md). */
#if !defined(REAL_DOUBLE) && defined(__x86_64__) && defined(__GNUC__)
#define VECTOR_SETS(X, ...)                                                                        \
    X(ISA_AVX512, avx512, "avx512f,avx512bw", __VA_ARGS__) X(ISA_AVX2, avx2, "avx2", __VA_ARGS__)
#define NARROW_SETS(X, ...) X(ISA_AVX2, avx2, "avx2", __VA_ARGS__)
#else
#define VECTOR_SETS(X, ...)
#define NARROW_SETS(X, ...)
#endif

#if defined(__clang__)
/* gcc in ISO C mode contracts nothing; clang would fuse a * b + c in the variants that have FMA
 * and not in the others */
#pragma STDC FP_CONTRACT OFF
#endif

/* Before a loop over a few independent lanes: clang unrolls such a loop before its vectoriser
 * sees it, and can then leave it scalar. */
#if defined(__clang__)
#define LANE_LOOP _Pragma("omp simd") _Pragma("clang loop unroll(disable)")
#else
#define LANE_LOOP _Pragma("omp simd")
#endif

/* The set the vector loops run: the best of VECTOR_SETS that cpu_allows(), chosen on the first
 * call (ISA_PORTABLE when none is). A loop of NARROW_SETS runs the best of its sets at or
 * below it. */
InstructionSet vector_kernels(void);

/* A loop's body, written for no instruction set in particular: `static VECTOR_BODY real
 * name_body(params)`, which VECTOR_DISPATCH compiles once per set. */
#define VECTOR_BODY inline __attribute__((always_inline))

/* Defines `linkage ret name params` (linkage: static or extern) running name_body args in the
 * variant vector_kernels() chose among SETS (VECTOR_SETS or NARROW_SETS); ret is not void. */
#define VECTOR_DISPATCH(SETS, linkage, ret, name, params, args)                                    \
    SETS(VECTOR_VARIANT_, ret, name, params, args)                                                 \
    __attribute__((noinline)) static ret name##_isa_portable params {                              \
        return name##_body args;                                                                   \
    }                                                                                              \
    linkage ret name params {                                                                      \
        InstructionSet chosen_ = vector_kernels();                                                 \
        (void)chosen_;                                                                             \
        SETS(VECTOR_CALL_, ret, name, params, args)                                                \
        return name##_isa_portable args;                                                           \
    }
/* The same for a body that returns nothing. */
#define VECTOR_DISPATCH_VOID(SETS, linkage, name, params, args)                                    \
    SETS(VECTOR_VARIANT_VOID_, void, name, params, args)                                           \
    __attribute__((noinline)) static void name##_isa_portable params {                             \
        name##_body args;                                                                          \
    }                                                                                              \
    linkage void name params {                                                                     \
        InstructionSet chosen_ = vector_kernels();                                                 \
        (void)chosen_;                                                                             \
        SETS(VECTOR_CALL_VOID_, void, name, params, args)                                          \
        name##_isa_portable args;                                                                  \
    }
#define VECTOR_VARIANT_(set, suffix, target_, ret, name, params, args)                             \
    __attribute__((target(target_), noinline)) static ret name##_isa_##suffix params {             \
        return name##_body args;                                                                   \
    }
#define VECTOR_VARIANT_VOID_(set, suffix, target_, ret, name, params, args)                        \
    __attribute__((target(target_), noinline)) static void name##_isa_##suffix params {            \
        name##_body args;                                                                          \
    }
/* the sets are listed best first, so the first at or below the chosen one is the best */
#define VECTOR_CALL_(set, suffix, target_, ret, name, params, args)                                \
    if (set <= chosen_) return name##_isa_##suffix args;
#define VECTOR_CALL_VOID_(set, suffix, target_, ret, name, params, args)                           \
    if (set <= chosen_) {                                                                          \
        name##_isa_##suffix args;                                                                  \
        return;                                                                                    \
    }

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

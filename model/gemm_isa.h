/*
 * gemm_isa.h: what one instruction set's kernels give gemm.c (model/gemm.c's Isa table, whose
 * comment says how the kernels are used), for the kernels that live in files of their own
 * (model/gemm_neon.c). Private to the product: nothing outside model/gemm*.c includes it.
 */
#ifndef NMT_GEMM_ISA_H
#define NMT_GEMM_ISA_H

#include <stddef.h>

#include "base/base.h"
#include "base/cpu.h"

/* K block: the unit of summation (see Determinism) and the depth of every packed panel. */
#define KC 256

/* Computes an mr x nr (<= MR x NR) tile of C from kc steps of a packed A micro-panel
 * (a[k*MR + i]) and of B rows b + k*ldb, each with NR readable values (a zero-padded packed
 * panel with ldb = NR, or whole panels of B itself). `add`: C += tile, else C = tile. */
typedef void (*Kernel)(int kc, const real *a, const real *b, ptrdiff_t ldb, real *c, ptrdiff_t ldc,
                       int mr, int nr, int add);
/* The C^T kernel: tile rows are 8 rows of B stored [N,K] (read in place at b + j*ldb + k),
 * columns a packed panel of op(A)^T (a[k*NR + i]); writes C[i*ldc + j] for i < ni, j < nj. */
typedef void (*KernelT)(int kc, const real *b, ptrdiff_t ldb, const real *a, real *c, ptrdiff_t ldc,
                        int ni, int nj, int add);
/* y[j*incy] (+)= sum_k x[k*incx] B[k*ldb + j] for j < n: vectors along j, K blocks of KC. */
typedef void (*GemvN)(int n, int K, const real *x, ptrdiff_t incx, const real *B, ptrdiff_t ldb,
                      int add, real *y, ptrdiff_t incy);
/* C(i, j) (+)= sum_k a[i*lda + k] b[j*ldb + k] for i < m, j < n, with C(i, j) at
 * c[i*rsc + j*csc]: dot products, vectors along k. Each element gets the same arithmetic
 * whatever m, n and its position (groups of rows repeat their last row to fill up). */
typedef void (*Dot)(int m, int n, int kc, const real *a, ptrdiff_t lda, const real *b,
                    ptrdiff_t ldb, int add, real *c, ptrdiff_t rsc, ptrdiff_t csc);
/* Packs panels exactly as pack_panels does, or returns 0 to leave the job to it. */
typedef int (*Pack)(int trans, int kc, int n, const real *x, ptrdiff_t ldx, int w, real *dst);

typedef struct {
    InstructionSet set;
    int mr, nr;     /* micro-tile */
    int fma;        /* the kernels use fused multiply-add (so must the fallback loop) */
    int in_place_m; /* up to this many rows, a non-transposed B is read in place */
    Kernel kernel;
    KernelT kernel_t; /* NULL: no C^T path */
    GemvN gemv_n;
    Dot dot;
    int dot_max_m; /* the dot-product path is used for B transposed and up to this M */
    Pack pack;     /* NULL: portable packing */
} Isa;

#if !defined(REAL_DOUBLE) && defined(__aarch64__)
#define GEMM_NEON 1
/* model/gemm_neon.c: fmla tiles of 8 x 12, for every ARM64 CPU */
extern const Isa isa_neon;
#else
#define GEMM_NEON 0
#endif

#endif

/*
 * gemm.h: the one matrix product every layer is built on.
 *
 * Row-major. C[M,N] = beta * C + op(A) op(B), where op(A) is A [M,K] as stored (AS_STORED)
 * or the TRANSPOSE of an A stored as [K,M]; likewise op(B) is B [K,N] or B stored [N,K].
 * lda/ldb/ldc are row strides, so sub-blocks of a larger matrix can be used in place.
 * beta is 0 (overwrite; C need not be initialised) or 1 (accumulate).
 *
 * The three uses in this code base, for a layer y = W x with W [out, in] and rows of x:
 *   forward    y  = x W^T          gemm(AS_STORED, TRANSPOSE, ...)
 *   input grad dx += dy W          gemm(AS_STORED, AS_STORED, ...)
 *   weight grad dW += dy^T x       gemm(TRANSPOSE, AS_STORED, ...)
 *
 * Each element of C is computed by one thread in a fixed order, so results do not depend on
 * the number of threads.
 */
#ifndef NMT_GEMM_H
#define NMT_GEMM_H

#include "base/base.h"
#include "base/cpu.h"

/* How a product reads an operand. */
typedef enum { AS_STORED = 0, TRANSPOSE = 1 } GemmOp;

void gemm(GemmOp op_a, GemmOp op_b, int M, int N, int K, const real *A, int lda, const real *B,
          int ldb, real beta, real *C, int ldc);

/* A matrix that is op(B) in many products (a weight, at every time step of a batch), packed
 * once into the panels the kernels read: gemm() copies op(B) into them on every call, and for
 * the few rows of a time step's share that copy is a large part of the product. gemm_packed()
 * gives each row the bits it gets in a product of many rows, whatever M: where gemm() would
 * take the dot products for few rows of a transposed B (see gemm_rows_summed_alike), it reads
 * the panels instead, so a batch's rows can be shared out among any number of threads without
 * changing a bit. Where gemm() would not copy op(B) and sums alike (it reads B in place) it is
 * gemm(). The panels hold B's values when gemm_pack() ran: pack again after B changes. */
typedef struct {
    GemmOp op;     /* op(B) is B [K,N] as stored or B [N,K] transposed */
    int K, N;      /* op(B) is K x N */
    const real *b; /* the matrix, row stride ldb */
    int ldb;
    real *panels; /* gemm_panels_size(K, N) reals, 64-byte aligned; NULL: b read in place, or
                     copied at each product */
} GemmPanels;

/* The reals the panels of a K x N op(B) take (for the kernels this machine runs). */
size_t gemm_panels_size(int K, int N);
/* Describes op(B) = B [K,N] or B^T (B stored [N,K]) in *p and packs it into panels, unless
 * panels is NULL or no product of up to most_rows rows would read them (then p->panels is
 * NULL, and the packing is not wasted on a CPU whose kernels read B in place). */
void gemm_pack(GemmPanels *p, GemmOp op_b, int K, int N, const real *B, int ldb, int most_rows,
               real *panels);
/* gemm(op_a, p->op, M, p->N, p->K, A, lda, p->b, p->ldb, beta, C, ldc), each row summed as
 * in a product of more than gemm_rows_summed_alike() rows: from the panels where it reads them,
 * else by gemm()'s paths that sum so. */
void gemm_packed(GemmOp op_a, int M, const real *A, int lda, const GemmPanels *p, real beta,
                 real *C, int ldc);

/* The kernels gemm runs: ISA_AVX512, ISA_AVX2, ISA_NEON (ARM64) or ISA_PORTABLE, the best
 * cpu_allows() (so capped by NMT_ISA), chosen on the first call. */
InstructionSet gemm_kernels(void);
/* The least M from which each row of a product with B transposed is summed as in any larger
 * one (fewer rows may take dot products along k, summed in vector lanes: see gemm.c's
 * Determinism). A caller that multiplies a varying subset of rows pads it to this count to
 * keep each row's bits. */
int gemm_rows_summed_alike(void);

#endif

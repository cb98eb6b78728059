/*
 * gemm.h: the one matrix product every layer is built on.
 *
 * Row-major. C[M,N] = beta * C + op(A) op(B), where op(A) is A [M,K] or, with trans_a, the
 * transpose of A stored as [K,M]; likewise op(B) is B [K,N] or, with trans_b, B stored [N,K].
 * lda/ldb/ldc are row strides, so sub-blocks of a larger matrix can be used in place.
 * beta is 0 (overwrite; C need not be initialised) or 1 (accumulate).
 *
 * The three uses in this code base, for a layer y = W x with W [out, in] and rows of x:
 *   forward    y  = x W^T          gemm(0, 1, ...)
 *   input grad dx += dy W          gemm(0, 0, ...)
 *   weight grad dW += dy^T x       gemm(1, 0, ...)
 *
 * Each element of C is computed by one thread in a fixed order, so results do not depend on
 * the number of threads.
 */
#ifndef NMT_GEMM_H
#define NMT_GEMM_H

#include "base/base.h"

void gemm(int trans_a, int trans_b, int M, int N, int K, const real *A, int lda, const real *B,
          int ldb, real beta, real *C, int ldc);

#endif

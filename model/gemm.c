/*
 * gemm.c: a straightforward, cache-friendly matrix product (see gemm.h for the contract).
 * Rows of C are split across threads; within a row the k loop order is fixed.
 */
#include "gemm.h"

#include <string.h>

void gemm(int trans_a, int trans_b, int M, int N, int K, const real *A, int lda, const real *B,
          int ldb, real beta, real *C, int ldc) {
    long work = (long)M * N * K;
#pragma omp parallel for schedule(static) if (work > 32768)
    for (int i = 0; i < M; i++) {
        real *c = C + (size_t)i * ldc;
        if (beta == 0) memset(c, 0, sizeof(real) * (size_t)N);
        if (trans_b) {
            /* B stored [N,K]: each c[j] is a dot product of two rows. */
            for (int j = 0; j < N; j++) {
                const real *b = B + (size_t)j * ldb;
                real sum = 0;
                if (trans_a)
                    for (int k = 0; k < K; k++) sum += A[(size_t)k * lda + i] * b[k];
                else
                    for (int k = 0; k < K; k++) sum += A[(size_t)i * lda + k] * b[k];
                c[j] += sum;
            }
        } else {
            for (int k = 0; k < K; k++) {
                real a = trans_a ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                const real *b = B + (size_t)k * ldb;
                for (int j = 0; j < N; j++) c[j] += a * b[j];
            }
        }
    }
}

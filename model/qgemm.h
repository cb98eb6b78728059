/*
 * qgemm.h: the products of 8-bit decoding: int8 x int8 accumulated in int32, exactly.
 *
 * Kernels: "avx512vnni" (VPDPBUSD), "avx2" (bytes widened to int16, VPMADDWD) and "generic"
 * (plain C), the best the CPU has, capped like gemm's by NMT_GEMM_ISA (avx2 or generic),
 * chosen on the first call. Every kernel gives the same int32 sums, bit for bit: integer sums
 * have no rounding, and no kernel's formulation can saturate (values are in [-127, 127]).
 */
#ifndef NMT_QGEMM_H
#define NMT_QGEMM_H

#include <stdint.h>

#include "base/base.h"
#include "model/quant.h"

/* acc[r * ldc + j] = sum_{k < K} x[r * ldx + k] * w[j * ldw + k] for r < M, j < N, with the
 * kernels named isa ("avx512vnni", "avx2", "generic"; NULL: the chosen ones). Returns -1 (and
 * computes nothing) when this CPU cannot run the kernels named. x and w hold values in
 * [-127, 127]. */
int qgemm_s8(const char *isa, int M, int N, int K, const int8_t *x, int ldx, const int8_t *w,
             int ldw, int32_t *acc, int ldc);

/* The chosen kernels' name. */
const char *qgemm_kernels(void);
/* Whether this CPU can run the kernels named isa. */
int qgemm_supported(const char *isa);

/* The output features [lo, hi) of a linear layer on int8 rows: for r < rows,
 *   y[r, j] (+)= xs[r] * w.scale[j] * sum_{k < in} xq[r, k] * w.q[j, col0 + k] + b[j]
 * (accumulate 1: added to y; b may be NULL). xq [rows, in] (stride ldxq) and xs come from
 * quantize_rows; col0 selects the columns of w that this input meets (a part of a
 * concatenated input). */
void qlinear_columns(real *y, int ldy, const int8_t *xq, int ldxq, const float *xs,
                     const QMatrix *w, int col0, const real *b, int rows, int in, int lo, int hi,
                     int accumulate);

#endif

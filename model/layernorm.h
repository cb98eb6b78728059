/*
 * layernorm.h: layer normalisation of rows (Ba et al. 2016), the layer-normalised GRUs'
 * normalisation (the spec's extension `model.layer_norm`), forward and backward.
 *
 * Each row a of n pre-activations is normalised over its own n entries, then scaled and
 * shifted per entry:
 *   LN(a) = (a - mean(a)) / sqrt(var(a) + LAYERNORM_EPS)     biased variance over the n entries
 *   y     = g * LN(a) + b
 * The forward pass keeps xhat = LN(a) [rows, n] and rstd = 1 / sqrt(var + eps) [rows] for the
 * backward pass. A zero row (a padding row's) normalises to zero: rstd stays finite.
 *
 * Rows are independent: the functions work on the rows they are given, on the calling thread,
 * so a caller shares out rows (forward, and the input gradients) or columns (the gain's and
 * the bias's gradients) among its threads. The mean and variance are summed in double.
 */
#ifndef NMT_LAYERNORM_H
#define NMT_LAYERNORM_H

#include "base/base.h"

#define LAYERNORM_EPS 1e-5

/* y = g * LN(a) + b for each row (b may be NULL: y = g * LN(a)).
 * y [rows, n] with row stride ldy (it may be a itself); xhat [rows, n] contiguous and rstd
 * [rows], both NULL when nothing is kept (decoding); a [rows, n] with row stride lda; g, b [n] */
void layernorm_forward(real *y, int ldy, real *xhat, real *rstd, const real *a, int lda,
                       const real *g, const real *b, int rows, int n);

/* Forward was y = g * xhat + b, xhat = (a - mean(a)) * rstd, so with dxhat = dy * g:
 *   da = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))      (written)
 *   dg += sum over rows of dy * xhat,  db += sum over rows of dy        (rows in order)
 * da [rows, n] may be dy itself (in place); dg, db may be NULL (skipped). All arrays are
 * contiguous [rows, n]. */
void layernorm_backward(real *da, real *dg, real *db, const real *dy, const real *xhat,
                        const real *rstd, const real *g, int rows, int n);

/* The columns [lo, hi) of layernorm_backward's dg and db (either may be NULL), every row in
 * order: the same sums, for threads that share out the columns. */
void layernorm_param_grads(real *dg, real *db, const real *dy, const real *xhat, int rows, int n,
                           int lo, int hi);

#endif

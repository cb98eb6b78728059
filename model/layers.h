/*
 * layers.h: the small layers the model is assembled from, each a forward/backward pair.
 *
 * Conventions (shared by gru.h and attention.h):
 *   - rows of a batch are independent; a "row" is one (time step, sentence) pair;
 *   - forward arguments: (outputs, caches, inputs, weights, sizes);
 *     backward arguments: (input grads, weight grads, output grads, caches, inputs, weights,
 *     sizes);
 *   - backward ACCUMULATES (+=) into weight gradients and into input gradients named d...
 *     unless the comment says "written"; gradients are zeroed by the caller;
 *   - `ld` arguments are row strides, so a layer can read or write a column block of a wider
 *     matrix (e.g. the c_t part of the decoder's input [u_t ; c_t]).
 */
#ifndef NMT_LAYERS_H
#define NMT_LAYERS_H

#include "base/base.h"
#include "model/gemm.h"

/* out_r = emb[ids_r] (* keep_r, the inverted-dropout scale, when keep is not NULL)
 * out [R, E] with row stride ld, ids [R], keep [R, E] or NULL, emb [V, E] */
void embedding_forward(real *out, int ld, const int *ids, const real *keep, const real *emb,
                       int rows, int dim);
/* demb[ids_r] += dout_r (* keep_r); dout has row stride ld */
void embedding_backward(real *demb, const real *dout, int ld, const int *ids, const real *keep,
                        int rows, int dim);

/* y_r = W x_r + b   (b may be NULL)
 * y [R, out] contiguous, x [R, in] with row stride ldx, W [out, in] with row stride ldw */
void linear_forward(real *y, const real *x, int ldx, const real *w, int ldw, const real *b,
                    int rows, int in, int out);
/* The output columns [lo, hi) of linear_forward, for threads that share out a product by its
 * outputs: y[r, lo:hi] = x_r W[lo:hi, :]^T + b[lo:hi] (b may be NULL), or += when accumulate.
 * y has row stride ldy. */
void linear_columns(real *y, int ldy, const real *x, int ldx, const real *w, int ldw, const real *b,
                    int rows, int in, int lo, int hi, int accumulate);
/* linear_forward from W^T's panels (gemm_packed), on the calling thread, for the rows a
 * thread takes inside a region: y [rows, out] with row stride ldy, x with row stride ldx,
 * w packed as op(B) = W^T (K = in, N = out); each row gets the bits it gets in linear_forward
 * over many rows. */
void linear_packed(real *y, int ldy, const real *x, int ldx, const GemmPanels *w, const real *b,
                   int rows);
/* sums[j] += the sum of column j of x [rows, cols], over the rows in order (the same bits
 * for any number of threads): a bias gradient, or partial sums put together */
void add_column_sums(real *sums, const real *x, int rows, int cols);
/* dx += dy W (skipped when dx is NULL; dx has the row stride ldx of x),
 * dW += dy^T x, db += sum_r dy_r (skipped when db is NULL) */
void linear_backward(real *dx, real *dw, real *db, const real *dy, const real *x, int ldx,
                     const real *w, int ldw, int rows, int in, int out);

/* y = tanh(y) in place, over n values */
void tanh_forward(real *y, size_t n);
/* forward was y = tanh(a), so da = dy * (1 - y^2); dy becomes da in place */
void tanh_backward(real *dy, const real *y, size_t n);

/* y = y * keep elementwise (inverted dropout: keep is 0 or 1/(1-p)); keep may be NULL */
void dropout_apply(real *y, const real *keep, size_t n);

#endif

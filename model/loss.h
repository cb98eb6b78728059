/*
 * loss.h: softmax and the masked, label-smoothed cross-entropy, fused with its gradient.
 *
 * For each row r (one target position) with target y_r != 0 (<pad>):
 *   l_r = (1 - eps) * (-log p_r[y_r]) + eps * mean_j(-log p_r[j]),   p_r = softmax(z_r)
 *   loss = sum_r l_r / N,  N = number of non-padding rows.
 * Every reduction subtracts the row maximum first, so logits of any finite size stay finite.
 */
#ifndef NMT_LOSS_H
#define NMT_LOSS_H

#include "base/base.h"

/* x = softmax(x) over n values, in place (n > 0). */
void softmax_inplace(real *x, int n);
/* log sum_j exp(x_j), computed stably. */
real log_sum_exp(const real *x, int n);

/* Adds bias [V] (unless NULL) to each row of logits [R,V] in place, then the loss of each
 * non-padding row to *total (double), in row order, so a caller that goes through its rows in
 * chunks gets the same sum as from one call; stores each row's log-sum-exp in lse [R].
 * targets [R]. (The bias is added here rather than after the product that forms the logits:
 * a batch's logits are tens of MB, and each pass over them from memory shows in a step.) */
void xent_forward(real *lse, real *logits, const real *bias, const int *targets, int rows, int V,
                  real eps, double *total);

/* Training's pass: xent_forward, then the logits turned IN PLACE into d loss / d logits,
 *   scale * (p - (1 - eps) onehot(y) - eps / V)   (0 for padding rows; scale 1 / N),
 * a row at a time while the row is in cache. It also adds the bias gradient, the sum of the
 * rows of d loss / d logits, to db [V]: summed in groups of XENT_GROUP rows into parts
 * [ceil(R / XENT_GROUP), V], then the groups in order. nll [R] is scratch. */
enum { XENT_GROUP = 16 };
void xent_train(real *logits, const real *bias, real *lse, const int *targets, int rows, int V,
                real eps, real scale, double *total, real *db, real *parts, double *nll);

#endif

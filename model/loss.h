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

/* Adds the loss of each non-padding row to *total (double), in row order, so a caller that
 * goes through its rows in chunks gets the same sum as from one call; stores each row's
 * log-sum-exp in lse [R] for the backward pass. logits [R,V], targets [R]. */
void xent_forward(real *lse, const real *logits, const int *targets, int rows, int V, real eps,
                  double *total);

/* Turns logits into d loss / d logits IN PLACE: scale * (p - (1 - eps) onehot(y) - eps / V)
 * for non-padding rows, 0 for padding rows. scale is 1 / N for the mean loss. */
void xent_backward(real *logits, const real *lse, const int *targets, int rows, int V, real eps,
                   real scale);

#endif

/*
 * adam.h: the Adam optimiser and global gradient-norm clipping.
 *
 * The moments m and v mirror the parameter block (same table order, same length), so one loop
 * updates every parameter. Bias correction uses the step count t, which is saved with them.
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
 */
#ifndef NMT_ADAM_H
#define NMT_ADAM_H

#include <stdint.h>

#include "model/common.h"

typedef struct {
    size_t n;   /* parameters */
    uint64_t t; /* steps taken */
    double beta1, beta2, eps;
    real *m; /* [n] first moments */
    real *v; /* [n] second moments */
} Adam;

int adam_init(Adam *adam, size_t n, double beta1, double beta2, double eps, Error *err);
void adam_free(Adam *adam);
void adam_step(Adam *adam, real *params, const real *grads, double lr);

/* The L2 norm of all gradients (accumulated in double, in a fixed order). */
double grad_norm(const real *grads, size_t n);
/* Scales gradients so their norm is at most max_norm (0: no clipping); returns the norm
 * before clipping. */
double clip_grad_norm(real *grads, size_t n, double max_norm);

#endif

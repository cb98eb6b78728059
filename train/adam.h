/*
 * adam.h: the Adam optimiser, global gradient-norm clipping and the learning-rate schedules.
 *
 * The moments m and v mirror the parameter block (same table order, same length), so one loop
 * updates every parameter. Bias correction uses the step count t, which is saved with them.
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
 */
#ifndef NMT_ADAM_H
#define NMT_ADAM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "model/params.h"
#include "train/config.h"

typedef struct {
    size_t n;   /* parameters */
    uint64_t t; /* steps taken */
    double beta1, beta2, eps;
    real *m; /* [n] first moments */
    real *v; /* [n] second moments */
} Adam;

int adam_init(Adam *adam, size_t n, double beta1, double beta2, double eps, Error *err);
void adam_free(Adam *adam);
/* The gradients known to be zero: sorted, disjoint spans of the block (model_backward's
 * untouched embedding rows), or none (spans NULL, count 0). The passes over every gradient
 * skip reading them, which gives the same results, bit for bit, as reading their zeros. */
typedef struct {
    const ParamSpan *spans;
    size_t count;
} ZeroGrads;
#define NO_ZERO_GRADS ((ZeroGrads){NULL, 0})

/* Clipping by the global norm: the factor that brings the gradients' L2 norm down to max_norm
 * (1 when it is within it, or max_norm is 0: no clipping), for adam_step to apply; the norm
 * goes to *norm. The gradients are not changed here: scaling them in place would be one more
 * pass over all of them, and adam_step multiplies each by the factor as it reads it. */
real clip_grad_norm(const real *grads, size_t n, ZeroGrads zero, double max_norm, double *norm);

/* One Adam update with the gradients multiplied by grad_scale (clip_grad_norm's factor) as
 * they are read. It consumes the gradients: each is zeroed once read, in the same pass, so
 * they are ready for the next backward pass to accumulate into (see model_zero_grad). Returns
 * false when an updated parameter is not finite (finite gradients can still overflow one, e.g.
 * from damaged moments). */
bool adam_step(Adam *adam, real *params, real *grads, ZeroGrads zero, real grad_scale, double lr);

/* clip_grad_norm's parts: the L2 norm of all gradients (accumulated in double, in a fixed
 * order), and the factor that brings a gradient of this norm down to max_norm. */
double grad_norm(const real *grads, size_t n, ZeroGrads zero);
real clip_scale(double norm, double max_norm);

/* The learning rate of the step after `step` steps: the schedule's factor (lr_scale is the
 * plateau schedule's current one; budget_used, from 0 to 1, the share of the training budget
 * spent, which the budget schedule reads), never below min_lr, times the linear warm-up
 * (step + 1) / warmup_steps while it lasts. */
double schedule_lr(const ConfigOptim *o, uint64_t step, double lr_scale, double budget_used);

#endif

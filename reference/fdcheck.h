/*
 * fdcheck.h: checks the model's hand-written gradients against central finite differences.
 *
 * For every parameter tensor, each checked element x gets the fourth-order central difference
 * (truncation error O(h^4), so h can be large enough that rounding in the loss does not swamp
 * small gradients), with h = FdCheckOptions.step and floor = FdCheckOptions.floor:
 *   numeric  = (loss(x - 2h) - 8 loss(x - h) + 8 loss(x + h) - loss(x + 2h)) / 12h
 *   rel      = |analytic - numeric| / max(|analytic|, |numeric|, floor)
 * Each loss is a forward_only pass with x set to x + (real)(k h), added in `real` (the divisor
 * is the h given, not the step the rounding left); the four are weighted and summed in double,
 * and x gets its exact value back afterwards. The analytic gradient is the model's, from one
 * training forward pass and model_backward on zeroed gradients. The tensor's worst element
 * (largest rel; the first checked one on ties) is reported. Dropout masks are replayed from
 * the same seed for every evaluation, so a model with dropout is checked exactly too. The
 * random batches and gains it is run on are model/fixtures.h's.
 */
#ifndef NMT_FDCHECK_H
#define NMT_FDCHECK_H

#include <stdint.h>

#include "model/seq2seq.h"

typedef struct {
    size_t checked;  /* elements compared */
    double max_rel;  /* worst relative error */
    size_t worst;    /* its flat index within the tensor */
    double analytic; /* the two gradients there */
    double numeric;
} TensorCheck;

typedef struct {
    size_t per_tensor; /* n, the elements checked per tensor of `size` elements: elements
                          k (size - 1) / (n - 1) for k = 0 .. n-1, first and last included
                          (element 0 alone when n is 1); 0 or n >= size: every element */
    double step;       /* h of the differences (offsets -2h, -h, h, 2h) */
    double floor;      /* smallest denominator of the relative error */
    uint64_t dropout_seed;
} FdCheckOptions;

/* Fills result[p] for every present parameter p. The model's gradients are overwritten. The
 * analytic gradients come from a training forward pass and model_backward, the losses of the
 * differences from forward_only passes (opt->forward_only is ignored). */
int fd_check_model(Model *m, Acts *a, const Batch *batch, const ForwardOptions *opt,
                   const FdCheckOptions *fd, TensorCheck result[PARAM_COUNT], Error *err);

#endif

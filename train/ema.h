/*
 * ema.h: an exponential moving average of the parameters ([train] ema), the weights
 * validation, best.ckpt and the test score use.
 *
 * After each optimiser step, with d_t the decay of update t (t = 0, 1, ... updates so far):
 *   avg = d_t avg + (1 - d_t) params,   d_t = min(d, (1 + t) / (10 + t))
 * avg starts as the parameters training starts from. The warm-up d_t is Marian's and
 * TensorFlow's (ExponentialMovingAverage with num_updates): with d = 0.9999 a plain average
 * would stay within 1% of the random initial weights for the first ~100 steps and need ~10^4
 * steps to forget them, so early validations would score noise; with the warm-up the average
 * covers roughly the last t/10 steps until t/10 reaches 1/(1 - d). A bias-corrected average
 * (Adam's 1 / (1 - d^t)) would also forget the start, but weights all steps since it equally
 * early on and needs the correction applied at every read; the warm-up keeps avg usable as is.
 * Training itself never reads avg: the raw parameters go on, and last.ckpt holds both.
 */
#ifndef NMT_TRAIN_EMA_H
#define NMT_TRAIN_EMA_H

#include <stdint.h>

#include "base/base.h"

typedef struct {
    size_t n;         /* parameters */
    double decay;     /* d, the decay once warmed up */
    uint64_t updates; /* t, updates so far (saved with avg, for the warm-up) */
    real *avg;        /* [n] the averaged parameters; NULL when averaging is off */
} Ema;

/* Starts an average at params[0..n) with decay d in (0, 1). */
int ema_init(Ema *ema, size_t n, double decay, const real *params, Error *err);
/* Takes over avg[0..n) (malloc'ed, e.g. by checkpoint_load) after `updates` updates. */
void ema_adopt(Ema *ema, size_t n, double decay, real *avg, uint64_t updates);
void ema_free(Ema *ema);

/* d_t of the next update. */
double ema_rate(const Ema *ema);
/* avg = d_t avg + (1 - d_t) params, then t += 1. Nothing when averaging is off. */
void ema_update(Ema *ema, const real *params);
/* Exchanges params and avg (twice restores both exactly): validation scores the average in
 * the model's own parameter block. Nothing when averaging is off. */
void ema_swap(Ema *ema, real *params);

#endif

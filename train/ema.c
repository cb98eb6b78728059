/*
 * ema.c: the parameters' moving average (see ema.h).
 */
#include "train/ema.h"

#include <stdlib.h>
#include <string.h>

#include "model/parallel.h"

int ema_init(Ema *ema, size_t n, double decay, const real *params, Error *err) {
    memset(ema, 0, sizeof *ema);
    ema->avg = checked_calloc(n, sizeof(real), "the parameters' moving average", err);
    if (!ema->avg) return -1;
    advise_huge_pages(ema->avg, sizeof(real) * n);
    memcpy(ema->avg, params, sizeof(real) * n);
    ema->n = n, ema->decay = decay;
    return 0;
}

void ema_adopt(Ema *ema, size_t n, double decay, real *avg, uint64_t updates) {
    *ema = (Ema){.n = n, .decay = decay, .updates = updates, .avg = avg};
}

void ema_free(Ema *ema) {
    free(ema->avg);
    memset(ema, 0, sizeof *ema);
}

double ema_rate(const Ema *ema) {
    double t = (double)ema->updates, warm = (1 + t) / (10 + t);
    return warm < ema->decay ? warm : ema->decay;
}

void ema_update(Ema *ema, const real *params) {
    if (!ema->avg) return;
    /* avg + (1-d)(params - avg) is d avg + (1-d) params with one rounding less: with d near
     * 1 the step is small next to avg, and float keeps it better this way */
    real keep = (real)(1 - ema_rate(ema));
    real *avg = ema->avg;
#pragma omp parallel for if (worth_parallel((double)ema->n, 100000)) schedule(static)
    for (size_t i = 0; i < ema->n; i++) avg[i] += keep * (params[i] - avg[i]);
    ema->updates++;
}

void ema_swap(Ema *ema, real *params) {
    if (!ema->avg) return;
    real *avg = ema->avg;
#pragma omp parallel for if (worth_parallel((double)ema->n, 100000)) schedule(static)
    for (size_t i = 0; i < ema->n; i++) {
        real t = avg[i];
        avg[i] = params[i];
        params[i] = t;
    }
}

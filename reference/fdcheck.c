/*
 * fdcheck.c: whole-model finite-difference gradient check (see fdcheck.h).
 */
#include "reference/fdcheck.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The loss with the dropout masks replayed; for_backward: a training forward pass that
 * model_backward can follow, else a forward_only one (the loss is the same either way). */
static int loss_at(const Model *m, Acts *a, const Batch *batch, const ForwardOptions *opt,
                   uint64_t dropout_seed, int for_backward, double *loss, Error *err) {
    ForwardOptions o = *opt;
    o.forward_only = !for_backward;
    if (o.rng) rng_seed(o.rng, dropout_seed, 7);
    return model_forward(m, a, batch, &o, loss, err);
}

int fd_check_model(Model *m, Acts *a, const Batch *batch, const ForwardOptions *opt,
                   const FdCheckOptions *fd, TensorCheck result[PARAM_COUNT], Error *err) {
    double loss;
    model_zero_grad(m);
    if (loss_at(m, a, batch, opt, fd->dropout_seed, 1, &loss, err)) return -1;
    model_backward(m, a);
    for (int p = 0; p < PARAM_COUNT; p++) {
        const ParamInfo *info = &m->table.info[p];
        TensorCheck *tc = &result[p];
        memset(tc, 0, sizeof *tc);
        if (!info->size) continue;
        size_t count = fd->per_tensor && fd->per_tensor < info->size ? fd->per_tensor : info->size;
        for (size_t k = 0; k < count; k++) {
            /* spread the sample over the tensor, always including the first and last */
            size_t i = count == info->size ? k
                       : count == 1        ? 0
                                           : k * (info->size - 1) / (count - 1);
            /* the fourth-order central difference of fdcheck.h */
            real *x = m->params + info->offset + i;
            real saved = *x;
            static const double offsets[4] = {-2, -1, 1, 2}, weights[4] = {1, -8, 8, -1};
            double numeric = 0;
            for (int s = 0; s < 4; s++) {
                double loss_s;
                *x = saved + (real)(offsets[s] * fd->step);
                if (loss_at(m, a, batch, opt, fd->dropout_seed, 0, &loss_s, err)) return -1;
                numeric += weights[s] * loss_s;
            }
            *x = saved;
            numeric /= 12 * fd->step;
            double analytic = m->grads[info->offset + i];
            double scale = fmax(fmax(fabs(analytic), fabs(numeric)), fd->floor);
            double rel = fabs(analytic - numeric) / scale;
            if (k == 0 || rel > tc->max_rel) {
                tc->max_rel = rel, tc->worst = i;
                tc->analytic = analytic, tc->numeric = numeric;
            }
            tc->checked++;
        }
    }
    return 0;
}

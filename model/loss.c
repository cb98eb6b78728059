/*
 * loss.c: stable softmax, log-sum-exp and the fused cross-entropy (see loss.h).
 */
#include "loss.h"

#include <tgmath.h>

#include "fastmath.h"
#include "parallel.h"

void softmax_inplace(real *x, int n) {
    real max = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > max) max = x[i];
    vec_exp(x, x, (size_t)n, max, 1);
    real sum = 0;
    for (int i = 0; i < n; i++) sum += x[i];
    for (int i = 0; i < n; i++) x[i] /= sum;
}

real log_sum_exp(const real *x, int n) {
    real max = vec_max(x, (size_t)n);
    return max + log(vec_sum_exp(x, (size_t)n, max));
}

void xent_forward(real *lse, const real *logits, const int *targets, int rows, int V, real eps,
                  double *total) {
    /* Row losses are summed in row order after the parallel part, so the total does not
     * depend on the thread count. */
    PARALLEL_FOR(r, rows, (double)rows * V, 65536, lse[r] = log_sum_exp(logits + (size_t)r * V, V));
    for (int r = 0; r < rows; r++) {
        if (targets[r] == 0) continue;
        const real *z = logits + (size_t)r * V;
        double nll = (double)lse[r] - z[targets[r]];
        if (eps > 0) {
            double mean_z = 0;
            for (int j = 0; j < V; j++) mean_z += z[j];
            mean_z /= V;
            nll = (1 - (double)eps) * nll + (double)eps * ((double)lse[r] - mean_z);
        }
        *total += nll;
    }
}

/* Row r of xent_backward: d l / d z_j = p_j - (1 - eps) [j == y] - eps / V, times scale. */
static void xent_backward_row(real *z, real lse, int target, int V, real eps, real scale) {
    if (target == 0) {
        for (int j = 0; j < V; j++) z[j] = 0;
        return;
    }
    vec_exp(z, z, (size_t)V, lse, scale);
    if (eps > 0) {
        real smooth = scale * eps / V;
        for (int j = 0; j < V; j++) z[j] -= smooth;
    }
    z[target] -= scale * (1 - eps);
}

void xent_backward(real *logits, const real *lse, const int *targets, int rows, int V, real eps,
                   real scale) {
    PARALLEL_FOR(r, rows, (double)rows * V, 65536,
                 xent_backward_row(logits + (size_t)r * V, lse[r], targets[r], V, eps, scale));
}

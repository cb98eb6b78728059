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

/* The loss of one row with target y > 0, in double: lse - z_y, smoothed. */
static double row_nll(const real *z, real lse, int target, int V, real eps) {
    double nll = (double)lse - z[target];
    if (eps > 0) {
        double mean_z = 0;
        for (int j = 0; j < V; j++) mean_z += z[j];
        mean_z /= V;
        nll = (1 - (double)eps) * nll + (double)eps * ((double)lse - mean_z);
    }
    return nll;
}

/* z += b over a row (the output layer's bias, added here while the row is in cache) */
static void add_bias(real *z, const real *bias, int V) {
    if (bias)
        for (int j = 0; j < V; j++) z[j] += bias[j];
}

void xent_forward(real *lse, real *logits, const real *bias, const int *targets, int rows, int V,
                  real eps, double *total) {
    /* Row losses are summed in row order after the parallel part, so the total does not
     * depend on the thread count. */
    PARALLEL_FOR(r, rows, (double)rows * V, 65536, add_bias(logits + (size_t)r * V, bias, V);
                 lse[r] = log_sum_exp(logits + (size_t)r * V, V));
    for (int r = 0; r < rows; r++)
        if (targets[r] != 0) *total += row_nll(logits + (size_t)r * V, lse[r], targets[r], V, eps);
}

/* A row's gradient in place: d l / d z_j = p_j - (1 - eps) [j == y] - eps / V, times scale. */
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

/* xent_train's rows [r0, r1), one bias-gradient group: each row's loss into nll, its logits
 * turned into gradients, and their sum into part [V]. */
static void xent_train_group(real *logits, const real *bias, real *lse, const int *targets, int r0,
                             int r1, int V, real eps, real scale, double *nll, real *part) {
    for (int j = 0; j < V; j++) part[j] = 0;
    for (int r = r0; r < r1; r++) {
        real *z = logits + (size_t)r * V;
        add_bias(z, bias, V);
        lse[r] = log_sum_exp(z, V);
        nll[r] = targets[r] != 0 ? row_nll(z, lse[r], targets[r], V, eps) : 0;
        xent_backward_row(z, lse[r], targets[r], V, eps, scale);
        for (int j = 0; j < V; j++) part[j] += z[j];
    }
}

void xent_train(real *logits, const real *bias, real *lse, const int *targets, int rows, int V,
                real eps, real scale, double *total, real *db, real *parts, double *nll) {
    int groups = (rows + XENT_GROUP - 1) / XENT_GROUP;
    PARALLEL_FOR(g, groups, (double)rows * V, 65536,
                 xent_train_group(logits, bias, lse, targets, (int)g * XENT_GROUP,
                                  (int)g * XENT_GROUP + XENT_GROUP < rows
                                      ? (int)g * XENT_GROUP + XENT_GROUP
                                      : rows,
                                  V, eps, scale, nll, parts + (size_t)g * V));
    /* the loss in row order (xent_forward's sum), db in group order: neither depends on the
     * number of threads */
    for (int r = 0; r < rows; r++)
        if (targets[r] != 0) *total += nll[r];
    for (int g = 0; g < groups; g++)
        for (int j = 0; j < V; j++) db[j] += parts[(size_t)g * V + j];
}

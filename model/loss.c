/*
 * loss.c: stable softmax, log-sum-exp and the fused cross-entropy (see loss.h).
 */
#include "loss.h"

#include <tgmath.h>

#include "fastmath.h"
#include "layers.h"
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

/* log sum_j exp(x_j) from the largest x_j */
static real log_sum_exp_from(real max, const real *x, int n) {
    return max + log(vec_sum_exp(x, (size_t)n, max));
}

real log_sum_exp(const real *x, int n) {
    return log_sum_exp_from(vec_max(x, (size_t)n), x, n);
}

/* The mean of a row, in double (label smoothing's term); vectorised, as a plain loop in double
 * took a quarter of the output layer's time with Vt = 16,004. */
static double row_mean(const real *z, int V) {
    return vec_sum(z, (size_t)V) / V;
}

/* The loss of a row with target y > 0 from lse, z_y and (with smoothing) the row's mean, in
 * double: lse - z_y, smoothed. */
static double row_nll(real lse, real z_target, double mean_z, real eps) {
    double nll = (double)lse - z_target;
    return eps > 0 ? (1 - (double)eps) * nll + (double)eps * ((double)lse - mean_z) : nll;
}

/* z += b over a row (the output layer's bias, added here while the row is in cache), and
 * the row's largest value, in the same pass */
static real add_bias_max(real *z, const real *bias, int V) {
    return bias ? vec_add_max(z, bias, (size_t)V) : vec_max(z, (size_t)V);
}

void xent_forward(real *lse, real *logits, const real *bias, const int *targets, int rows, int V,
                  real eps, double *total) {
    /* Row losses are summed in row order after the parallel part, so the total does not
     * depend on the thread count. */
#pragma omp parallel for if (worth_parallel((double)rows * V, 65536)) schedule(static)
    for (int r = 0; r < rows; r++) {
        real *z = logits + (size_t)r * V;
        lse[r] = log_sum_exp_from(add_bias_max(z, bias, V), z, V);
    }
    for (int r = 0; r < rows; r++)
        if (targets[r] != 0) {
            const real *z = logits + (size_t)r * V;
            *total += row_nll(lse[r], z[targets[r]], eps > 0 ? row_mean(z, V) : 0, eps);
        }
}

/* Bias-gradient group g of xent_train: rows [g * XENT_GROUP, + XENT_GROUP) of the `rows`, each
 * row's loss into nll, its logits turned into gradients, and their sum into part [V]. With
 * p = e / sum, e = exp(z - max) kept from the log-sum-exp (one exp per logit, not two):
 * d l / d z_j = scale * (p_j - (1 - eps) [j == y] - eps / V). */
static VECTOR_BODY void xent_train_group_body(real *logits, const real *bias, real *lse,
                                              const int *targets, int g, int rows, int V, real eps,
                                              real scale, double *nll, real *part) {
    int r0 = g * XENT_GROUP, r1 = r0 + XENT_GROUP < rows ? r0 + XENT_GROUP : rows;
    for (int j = 0; j < V; j++) part[j] = 0;
    for (int r = r0; r < r1; r++) {
        real *z = logits + (size_t)r * V;
        int y = targets[r];
        if (y == 0) { /* padding: no loss, no gradient */
            for (int j = 0; j < V; j++) z[j] = 0;
            lse[r] = 0, nll[r] = 0;
            continue;
        }
        /* the loss's parts before z turns into e, then log_sum_exp's arithmetic exactly */
        real max = add_bias_max(z, bias, V), z_target = z[y];
        double mean_z = eps > 0 ? row_mean(z, V) : 0;
        real sum = vec_exp_sum(z, z, (size_t)V, max);
        lse[r] = max + log(sum);
        nll[r] = row_nll(lse[r], z_target, mean_z, eps);
        /* z_j = scale (p_j - eps / V), added into the bias gradient in the same pass; the
         * target's, less scale (1 - eps), goes in afterwards, with the same arithmetic */
        real p_scale = scale / sum, smooth = scale * eps / V;
        real z_y = z[y] * p_scale - smooth, part_y = part[y];
        z_y -= scale * (1 - eps);
        for (int j = 0; j < V; j++) {
            z[j] = z[j] * p_scale - smooth;
            part[j] += z[j];
        }
        z[y] = z_y, part[y] = part_y + z_y;
    }
}
VECTOR_DISPATCH_VOID(VECTOR_SETS, static, xent_train_group,
                     (real * logits, const real *bias, real *lse, const int *targets, int g,
                      int rows, int V, real eps, real scale, double *nll, real *part),
                     (logits, bias, lse, targets, g, rows, V, eps, scale, nll, part))

void xent_train(real *logits, const real *bias, real *lse, const int *targets, int rows, int V,
                real eps, real scale, double *total, real *db, real *parts, double *nll) {
    int groups = (rows + XENT_GROUP - 1) / XENT_GROUP;
#pragma omp parallel for if (worth_parallel((double)rows * V, 65536)) schedule(static)
    for (int g = 0; g < groups; g++)
        xent_train_group(logits, bias, lse, targets, g, rows, V, eps, scale, nll,
                         parts + (size_t)g * V);
    /* the loss in row order (xent_forward's sum), db in group order: neither depends on the
     * number of threads */
    for (int r = 0; r < rows; r++)
        if (targets[r] != 0) *total += nll[r];
    add_column_sums(db, parts, groups, V);
}

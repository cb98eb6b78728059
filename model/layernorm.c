/*
 * layernorm.c: layer normalisation of rows, forward and backward (see layernorm.h).
 */
#include "layernorm.h"

#include <math.h>

/*   LN(a) = (a - mean(a)) / sqrt(var(a) + eps),   y = g * LN(a) + b */
void layernorm_forward(real *y, int ldy, real *xhat, real *rstd, const real *a, int lda,
                       const real *g, const real *b, int rows, int n) {
    for (int r = 0; r < rows; r++) {
        const real *ar = a + (size_t)r * lda;
        real *yr = y + (size_t)r * ldy, *xr = xhat ? xhat + (size_t)r * n : NULL;
        double sum = 0, squares = 0;
        for (int j = 0; j < n; j++) sum += ar[j];
        double mean = sum / n;
        for (int j = 0; j < n; j++) squares += (ar[j] - mean) * (ar[j] - mean);
        real inv = (real)(1 / sqrt(squares / n + LAYERNORM_EPS)), m = (real)mean;
        if (rstd) rstd[r] = inv;
        /* a[j] is read before y[j] is written: y may be a */
        for (int j = 0; j < n; j++) {
            real x = (ar[j] - m) * inv;
            if (xr) xr[j] = x;
            yr[j] = g[j] * x + (b ? b[j] : 0);
        }
    }
}

void layernorm_param_grads(real *dg, real *db, const real *dy, const real *xhat, int rows, int n,
                           int lo, int hi) {
    /* forward was y = g * xhat + b */
    for (int r = 0; r < rows; r++) {
        const real *dyr = dy + (size_t)r * n, *xr = xhat + (size_t)r * n;
        if (dg)
            for (int j = lo; j < hi; j++) dg[j] += dyr[j] * xr[j];
        if (db)
            for (int j = lo; j < hi; j++) db[j] += dyr[j];
    }
}

void layernorm_backward(real *da, real *dg, real *db, const real *dy, const real *xhat,
                        const real *rstd, const real *g, int rows, int n) {
    if (dg || db) layernorm_param_grads(dg, db, dy, xhat, rows, n, 0, n);
    for (int r = 0; r < rows; r++) {
        const real *dyr = dy + (size_t)r * n, *xr = xhat + (size_t)r * n;
        real *dar = da + (size_t)r * n;
        /* xhat = (a - mean(a)) * rstd: through the mean and the variance, with dxhat = dy * g */
        double mean_d = 0, mean_dx = 0;
        for (int j = 0; j < n; j++) {
            double dxhat = (double)dyr[j] * g[j];
            mean_d += dxhat;
            mean_dx += dxhat * xr[j];
        }
        real m1 = (real)(mean_d / n), m2 = (real)(mean_dx / n), inv = rstd[r];
        /* dy is read before da is written: da may be dy */
        for (int j = 0; j < n; j++) dar[j] = inv * (dyr[j] * g[j] - m1 - xr[j] * m2);
    }
}

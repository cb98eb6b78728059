/*
 * layernorm.c: layer normalisation of rows, forward and backward (see layernorm.h).
 *
 * The row sums run in LANES independent double accumulators, added up in a fixed order at the
 * end: a single running sum is a chain of dependent additions that no compiler may reorder
 * (ISO C, no -ffast-math), which left these loops scalar and slower than the time step's
 * products they sit between; the lanes vectorise and give the same bits on every machine.
 */
#include "layernorm.h"

#include <math.h>

#include "fastmath.h"

enum { LANES = 8 };

/* sum_j x_j */
static VECTOR_BODY double row_sum_body(const real *restrict x, int n) {
    double lane[LANES] = {0}, sum = 0;
    int j = 0;
    for (; j + LANES <= n; j += LANES)
#pragma omp simd
        for (int k = 0; k < LANES; k++) lane[k] += x[j + k];
    for (; j < n; j++) lane[0] += x[j];
    for (int k = 0; k < LANES; k++) sum += lane[k];
    return sum;
}
VECTOR_DISPATCH(VECTOR_SETS, static, double, row_sum, (const real *restrict x, int n), (x, n))

/* sum_j (x_j - centre)^2 */
static VECTOR_BODY double row_squares_body(const real *restrict x, int n, double centre) {
    double lane[LANES] = {0}, sum = 0;
    int j = 0;
    for (; j + LANES <= n; j += LANES)
#pragma omp simd
        for (int k = 0; k < LANES; k++) lane[k] += (x[j + k] - centre) * (x[j + k] - centre);
    for (; j < n; j++) lane[0] += (x[j] - centre) * (x[j] - centre);
    for (int k = 0; k < LANES; k++) sum += lane[k];
    return sum;
}
VECTOR_DISPATCH(VECTOR_SETS, static, double, row_squares,
                (const real *restrict x, int n, double centre), (x, n, centre))

/* sum_j dy_j g_j and sum_j dy_j g_j xhat_j */
static VECTOR_BODY void row_dot_sums_body(const real *restrict dy, const real *restrict g,
                                          const real *restrict xhat, int n, double *sum_d,
                                          double *sum_dx) {
    double lane[LANES] = {0}, lane2[LANES] = {0};
    int j = 0;
    for (; j + LANES <= n; j += LANES) {
        LANE_LOOP
        for (int k = 0; k < LANES; k++) {
            double d = (double)dy[j + k] * g[j + k];
            lane[k] += d;
            lane2[k] += d * xhat[j + k];
        }
    }
    for (; j < n; j++) {
        double d = (double)dy[j] * g[j];
        lane[0] += d;
        lane2[0] += d * xhat[j];
    }
    *sum_d = *sum_dx = 0;
    for (int k = 0; k < LANES; k++) *sum_d += lane[k], *sum_dx += lane2[k];
}
VECTOR_DISPATCH_VOID(VECTOR_SETS, static, row_dot_sums,
                     (const real *restrict dy, const real *restrict g, const real *restrict xhat,
                      int n, double *sum_d, double *sum_dx),
                     (dy, g, xhat, n, sum_d, sum_dx))

/*   LN(a) = (a - mean(a)) / sqrt(var(a) + eps),   y = g * LN(a) + b */
void layernorm_forward(real *y, int ldy, real *xhat, real *rstd, const real *a, int lda,
                       const real *g, const real *b, int rows, int n) {
    for (int r = 0; r < rows; r++) {
        const real *ar = a + (size_t)r * lda;
        real *yr = y + (size_t)r * ldy, *xr = xhat ? xhat + (size_t)r * n : NULL;
        double mean = row_sum(ar, n) / n, squares = row_squares(ar, n, mean);
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
        double sum_d, sum_dx;
        row_dot_sums(dyr, g, xr, n, &sum_d, &sum_dx);
        real m1 = (real)(sum_d / n), m2 = (real)(sum_dx / n), inv = rstd[r];
        /* dy[j] is read before da[j] is written: da may be dy */
        for (int j = 0; j < n; j++) dar[j] = inv * (dyr[j] * g[j] - m1 - xr[j] * m2);
    }
}

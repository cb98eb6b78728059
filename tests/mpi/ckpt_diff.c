/*
 * ckpt_diff.c: compares the parameters of two checkpoints, for the MPI test (tests/mpi/run.sh).
 *
 * usage: ckpt_diff A.ckpt B.ckpt TOLERANCE
 * Prints the largest difference of each kind and exits 0 when every parameter agrees within
 * TOLERANCE relative to the tensor it belongs to: |a_i - b_i| <= TOLERANCE * max_j |b_j| over
 * that tensor's elements j. Relative to the tensor, not the element, because round-off in a
 * sum is relative to the terms summed, and an element near zero has terms as large as its
 * neighbours'. Exits 1 when they differ (or the sizes do), 2 on bad usage or unreadable files.
 * It does not compare the optimiser state.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "nmt/formats/checkpoint.h"

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: ckpt_diff A.ckpt B.ckpt TOLERANCE\n");
        return 2;
    }
    char *end;
    errno = 0;
    double tol = strtod(argv[3], &end);
    if (errno || *end || !(tol >= 0)) {
        fprintf(stderr, "ckpt_diff: bad tolerance '%s'\n", argv[3]);
        return 2;
    }
    NmtModel a = {0}, b = {0};
    Error err;
    if (checkpoint_load(argv[1], &a, NULL, NULL, &err) ||
        checkpoint_load(argv[2], &b, NULL, NULL, &err)) {
        fprintf(stderr, "ckpt_diff: %s\n", err.msg);
        nmt_model_free(&a);
        return 2;
    }
    int rc = 0;
    if (a.model.table.total != b.model.table.total) {
        fprintf(stderr, "ckpt_diff: %zu parameters against %zu\n", a.model.table.total,
                b.model.table.total);
        rc = 1;
    } else {
        double worst = 0, worst_abs = 0;
        const char *worst_name = "-";
        size_t worst_i = 0;
        for (int p = 0; p < PARAM_COUNT; p++) {
            const ParamInfo *info = &b.model.table.info[p];
            const real *x = a.model.params + info->offset, *y = b.model.params + info->offset;
            double scale = 0, diff = 0;
            size_t at = 0;
            for (size_t i = 0; i < info->size; i++) {
                scale = fmax(scale, fabs((double)y[i]));
                double d = fabs((double)x[i] - (double)y[i]);
                if (d > diff) diff = d, at = i;
            }
            double rel = scale > 0 ? diff / scale : diff;
            worst_abs = fmax(worst_abs, diff);
            if (rel > worst) worst = rel, worst_name = info->name, worst_i = at;
        }
        printf("%zu parameters: largest difference %.3g, relative to its tensor %.3g (%s[%zu]); "
               "tolerance %.3g\n",
               b.model.table.total, worst_abs, worst, worst_name, worst_i, tol);
        rc = worst <= tol ? 0 : 1;
    }
    nmt_model_free(&a);
    nmt_model_free(&b);
    return rc;
}

/*
 * layers.c: embedding lookup, affine layer, tanh and dropout (see layers.h).
 */
#include "model/layers.h"
#include "model/parallel.h"

#include <string.h>
#include <tgmath.h>

#include "model/fastmath.h"
#include "model/gemm.h"

/* Row r of embedding_forward. */
static void embedding_row(real *out, int ld, const int *ids, const real *keep, const real *emb,
                          int r, int dim) {
    real *o = out + (size_t)r * ld;
    memcpy(o, emb + (size_t)ids[r] * dim, sizeof(real) * (size_t)dim);
    if (keep) dropout_apply(o, keep + (size_t)r * dim, (size_t)dim);
}

void embedding_forward(real *out, int ld, const int *ids, const real *keep, const real *emb,
                       int rows, int dim) {
    /* in parallel: the rows of a large table are far apart, each a wait on memory; but a
     * search's few rows a step stay on this thread, outside any region (see worth_parallel) */
    if (worth_parallel((double)rows * dim, 65536)) {
#pragma omp parallel for schedule(static)
        for (int r = 0; r < rows; r++) embedding_row(out, ld, ids, keep, emb, r, dim);
    } else {
        for (int r = 0; r < rows; r++) embedding_row(out, ld, ids, keep, emb, r, dim);
    }
}

/* Threads take blocks of COLUMN_BLOCK columns in the loops below that add rows into one row:
 * each column still goes through the rows in order, so a sum does not depend on the thread
 * count. */
enum { COLUMN_BLOCK = 64 };

/* The blocks of `cols` columns, and the end of the block from column j0. */
static int column_blocks(int cols) {
    return (cols + COLUMN_BLOCK - 1) / COLUMN_BLOCK;
}
static int column_block_end(int j0, int cols) {
    return cols - j0 < COLUMN_BLOCK ? cols : j0 + COLUMN_BLOCK;
}

/* The block of columns from j0 of embedding_backward, every row in order. */
static void embedding_backward_columns(real *demb, const real *dout, int ld, const int *ids,
                                       const real *keep, int rows, int dim, int j0) {
    int j1 = column_block_end(j0, dim);
    for (int r = 0; r < rows; r++) {
        real *d = demb + (size_t)ids[r] * dim;
        const real *g = dout + (size_t)r * ld;
        const real *k = keep ? keep + (size_t)r * dim : NULL;
        for (int j = j0; j < j1; j++) d[j] += k ? g[j] * k[j] : g[j];
    }
}

void embedding_backward(real *demb, const real *dout, int ld, const int *ids, const real *keep,
                        int rows, int dim) {
    /* two rows with the same id add into the same gradient row: by blocks of columns */
#pragma omp parallel for if (worth_parallel((double)rows * dim, 65536)) schedule(static)
    for (int c = 0; c < column_blocks(dim); c++)
        embedding_backward_columns(demb, dout, ld, ids, keep, rows, dim, c * COLUMN_BLOCK);
}

/* y[r, lo:hi] += b[lo:hi] for `rows` rows of stride ldy: a linear layer's bias, added after
 * its product, so every path gives each value the same two roundings. */
static void add_bias(real *y, int ldy, const real *b, int rows, int lo, int hi) {
    for (int r = 0; r < rows; r++)
        for (int j = lo; j < hi; j++) y[(size_t)r * ldy + j] += b[j];
}

void linear_forward(real *y, const real *x, int ldx, const real *w, int ldw, const real *b,
                    int rows, int in, int out) {
    gemm(AS_STORED, TRANSPOSE, rows, out, in, x, ldx, w, ldw, 0, y, out);
    if (!b) return;
#pragma omp parallel for if (worth_parallel((double)rows * out, 65536)) schedule(static)
    for (int r = 0; r < rows; r++) add_bias(y + (size_t)r * out, out, b, 1, 0, out);
}

void linear_columns(real *y, int ldy, const real *x, int ldx, const real *w, int ldw, const real *b,
                    int rows, int in, int lo, int hi, int accumulate) {
    if (lo >= hi) return;
    gemm(AS_STORED, TRANSPOSE, rows, hi - lo, in, x, ldx, w + (size_t)lo * ldw, ldw,
         accumulate ? 1 : 0, y + lo, ldy);
    if (b) add_bias(y, ldy, b, rows, lo, hi);
}

void linear_packed(real *y, int ldy, const real *x, int ldx, const GemmPanels *w, const real *b,
                   int rows) {
    gemm_packed(AS_STORED, rows, x, ldx, w, 0, y, ldy);
    if (b) add_bias(y, ldy, b, rows, 0, w->N);
}

/* The block of columns from j0 of add_column_sums, in vector clones (a bias gradient reads all
 * of dy, a second pass after the weight gradient's product). */
static VECTOR_BODY void column_sums_block_body(real *restrict sums, const real *restrict x,
                                               int rows, int cols, int j0) {
    int j1 = column_block_end(j0, cols);
    for (int r = 0; r < rows; r++)
        for (int j = j0; j < j1; j++) sums[j] += x[(size_t)r * cols + j];
}
VECTOR_DISPATCH_VOID(VECTOR_SETS, static, column_sums_block,
                     (real *restrict sums, const real *restrict x, int rows, int cols, int j0),
                     (sums, x, rows, cols, j0))

void add_column_sums(real *sums, const real *x, int rows, int cols) {
#pragma omp parallel for if (worth_parallel((double)rows * cols, 65536)) schedule(static)
    for (int c = 0; c < column_blocks(cols); c++)
        column_sums_block(sums, x, rows, cols, c * COLUMN_BLOCK);
}

void linear_backward(real *dx, real *dw, real *db, const real *dy, const real *x, int ldx,
                     const real *w, int ldw, int rows, int in, int out) {
    if (dx) gemm(AS_STORED, AS_STORED, rows, in, out, dy, out, w, ldw, 1, dx, ldx);
    gemm(TRANSPOSE, AS_STORED, out, in, rows, dy, out, x, ldx, 1, dw, ldw);
    if (db) add_column_sums(db, dy, rows, out);
}

void tanh_forward(real *y, size_t n) {
    /* contiguous chunks, one per thread: the vector loop stays whole */
    enum { CHUNK = 16384 };
    size_t chunks = (n + CHUNK - 1) / CHUNK;
    if (!worth_parallel((double)chunks, 2)) {
        /* a row at a time (the encoder's s_0, a search's readout): no region */
        vec_tanh(y, n);
        return;
    }
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < chunks; c++)
        vec_tanh(y + c * CHUNK, n - c * CHUNK < CHUNK ? n - c * CHUNK : CHUNK);
}

void tanh_backward(real *dy, const real *y, size_t n) {
#pragma omp parallel for if (worth_parallel((double)n, 65536)) schedule(static)
    for (size_t i = 0; i < n; i++) dy[i] *= 1 - y[i] * y[i];
}

void dropout_apply(real *y, const real *keep, size_t n) {
    if (!keep) return;
    for (size_t i = 0; i < n; i++) y[i] *= keep[i];
}

/*
 * bench_gemm.c: times gemm() on the shapes the model uses and prints GFLOP/s, with one thread
 * and with two, next to the machine's FMA peak measured by a register-only loop.
 *
 * `make bench` runs it after the model benchmark (bin/bench_gemm -q). Options: `-q` quick (shorter
 * timing), `-t SECONDS` minimum timing per measurement, `-1` one thread only. Timings are the best
 * of repeated batches, which filters out some of the noise of a shared machine (but not all: check
 * the FMA peak line, measured the same way). For few rows (decoding) the product streams B,
 * the weights, once per call: the speed it does that at, from L2 or from L3 by the size of B,
 * is printed too (weights GB/s), as it bounds decoding one sentence at a time.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/peak.h"
#include "model/gemm.h"

/* ---- gemm timing ------------------------------------------------------------------------ */

typedef struct {
    int M, N, K;
    GemmOp ta, tb;
    const char *what;
} Shape;

static const Shape shapes[] = {
    {1920, 1024, 256, 0, 1, "linear fwd (tokens x hidden)"},
    {1920, 8000, 256, 0, 1, "output layer fwd"},
    {8000, 256, 1920, 1, 0, "output layer weight grad"},
    {1920, 256, 8000, 0, 0, "output layer input grad"},
    {64, 1536, 512, 0, 1, "recurrent step fwd (medium)"},
    {64, 1536, 512, 0, 0, "recurrent step bwd (medium)"},
    {32, 384, 128, 0, 1, "recurrent step fwd (toy)"},
    {32, 384, 128, 0, 0, "recurrent step bwd (toy)"},
    {384, 128, 384, 1, 0, "weight grad (toy)"},
    {1, 1000, 128, 0, 1, "decoding output (toy)"},
    {1, 8000, 256, 0, 1, "decoding output layer"},
    {1, 14336, 256, 0, 1, "all medium decoder weights"},
    {1, 1536, 512, 0, 1, "decoding recurrent step"},
    {5, 8000, 256, 0, 1, "beam-5 decoding output"},
    {5, 1536, 512, 0, 1, "beam-5 decoding recurrent"},
};

static void fill(real *x, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (real)((seed >> 8) * (1.0 / 16777216.0) - 0.5);
    }
}

/* Seconds per call: repeated calls in batches until min_time has passed; the best batch. */
static double time_gemm(const Shape *s, real *A, real *B, real *C, double min_time) {
    int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    gemm(s->ta, s->tb, s->M, s->N, s->K, A, lda, B, ldb, 0, C, s->N); /* warm up */
    double flops = 2.0 * s->M * s->N * s->K;
    long reps = (long)(2e8 / flops) + 1; /* about 0.002 - 0.05 s per batch */
    double best = 1e30, start = monotonic_seconds();
    do {
        double t0 = monotonic_seconds();
        for (long r = 0; r < reps; r++)
            gemm(s->ta, s->tb, s->M, s->N, s->K, A, lda, B, ldb, 1, C, s->N);
        double t = (monotonic_seconds() - t0) / reps;
        if (t < best) best = t;
    } while (monotonic_seconds() - start < min_time);
    return best;
}

int main(int argc, char **argv) {
    double min_time = 1.0;
    int max_threads = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-q"))
            min_time = 0.25;
        else if (!strcmp(argv[i], "-t") && i + 1 < argc)
            min_time = strtod(argv[++i], NULL) > 0 ? strtod(argv[i], NULL) : min_time;
        else if (!strcmp(argv[i], "-1"))
            max_threads = 1;
    }
    printf("gemm benchmark, real = %s, up to %d threads available\n", REAL_NAME,
           omp_get_max_threads());
    printf("FMA peak (register-only loop): %.1f GFLOP/s 1 thread, %.1f 2 threads\n",
           fma_peak_gflops(1), fma_peak_gflops(2));
    printf("\n%-28s %5s %5s %5s %3s  %9s %9s  %9s %9s\n", "shape", "M", "N", "K", "op", "1T GF/s",
           "1T us", "2T GF/s", "2T us");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const Shape *s = &shapes[i];
        size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, nc = (size_t)s->M * s->N;
        /* aligned as the model's parameters are */
        real *A = aligned_alloc(64, (sizeof(real) * na + 63) / 64 * 64),
             *B = aligned_alloc(64, (sizeof(real) * nb + 63) / 64 * 64),
             *C = aligned_alloc(64, (sizeof(real) * nc + 63) / 64 * 64);
        if (!A || !B || !C) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        fill(A, na, 1 + (unsigned)i), fill(B, nb, 100 + (unsigned)i), fill(C, nc, 7);
        double flops = 2.0 * s->M * s->N * s->K, t[2] = {0, 0};
        for (int th = 1; th <= max_threads; th++) {
            omp_set_num_threads(th);
            t[th - 1] = time_gemm(s, A, B, C, min_time);
        }
        printf("%-28s %5d %5d %5d  %c%c  %9.1f %9.1f", s->what, s->M, s->N, s->K, s->ta ? 'T' : 'N',
               s->tb ? 'T' : 'N', flops / t[0] / 1e9, t[0] * 1e6);
        if (max_threads > 1) printf("  %9.1f %9.1f", flops / t[1] / 1e9, t[1] * 1e6);
        if (s->M <= 16) {
            double bytes = sizeof(real) * (double)nb;
            printf("   weights GB/s: %.0f", bytes / t[0] / 1e9);
            if (max_threads > 1) printf(" / %.0f", bytes / t[1] / 1e9);
        }
        printf("\n");
        fflush(stdout);
        free(A), free(B), free(C);
    }
    return 0;
}

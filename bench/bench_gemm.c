/*
 * bench_gemm.c: times gemm() on the shapes the model uses and prints GFLOP/s, with one thread
 * and with two, next to the machine's FMA peak measured by a register-only loop.
 *
 * Standalone (its own main, not part of the Makefile's programs); build from the repo root:
 *   gcc -std=c17 -O3 -Wall -Wextra -fopenmp -D_POSIX_C_SOURCE=200809L -I. \
 *       bench/bench_gemm.c model/gemm.c model/common.c -lm -o bin/bench_gemm
 * Options: `-q` quick (shorter timing), `-t SECONDS` minimum timing per measurement, `-1` one
 * thread only. Timings are the best of repeated batches, which filters out some of the noise
 * of a shared machine (but not all: check the FMA peak line, measured the same way).
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/gemm.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* ---- FMA peak: independent chains of register-only FMAs, enough to cover the latency ---- */

#if HAVE_X86
/* 16 independent accumulators: 4-cycle latency x 2 FMA ports needs at least 8 in flight. */
__attribute__((target("avx512f"))) static float fma_loop_avx512(long iters) {
    __m512 acc[16], x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 16; i++) acc[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
    }
    __m512 s = acc[0];
    for (int i = 1; i < 16; i++) s = _mm512_add_ps(s, acc[i]);
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static float fma_loop_avx2(long iters) {
    __m256 acc[12], x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++) acc[i] = _mm256_set1_ps((float)i);
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
    }
    __m256 s = acc[0];
    for (int i = 1; i < 12; i++) s = _mm256_add_ps(s, acc[i]);
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0] + out[7];
}

/* GFLOP/s of `threads` threads each running the loop; flops per iteration = chains*lanes*2. */
static double fma_peak(int wide, int threads) {
    long iters = 20000000;
    double flops_per_iter = wide ? 16 * 16 * 2 : 12 * 8 * 2, best = 0;
    volatile float sink = 0;
    for (int trial = 0; trial < 3; trial++) {
        double t0 = now();
#pragma omp parallel num_threads(threads)
        {
            float r = wide ? fma_loop_avx512(iters) : fma_loop_avx2(iters);
#pragma omp atomic
            sink += r;
        }
        double g = flops_per_iter * iters * threads / (now() - t0) / 1e9;
        if (g > best) best = g;
    }
    (void)sink;
    return best;
}
#endif

/* ---- gemm timing ------------------------------------------------------------------------ */

typedef struct {
    int M, N, K, ta, tb;
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
    {1, 8000, 256, 0, 1, "decoding output layer"},
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
    double best = 1e30, start = now();
    do {
        double t0 = now();
        for (long r = 0; r < reps; r++)
            gemm(s->ta, s->tb, s->M, s->N, s->K, A, lda, B, ldb, 1, C, s->N);
        double t = (now() - t0) / reps;
        if (t < best) best = t;
    } while (now() - start < min_time);
    return best;
}

int main(int argc, char **argv) {
    double min_time = 1.0;
    int max_threads = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-q"))
            min_time = 0.25;
        else if (!strcmp(argv[i], "-t") && i + 1 < argc)
            min_time = atof(argv[++i]);
        else if (!strcmp(argv[i], "-1"))
            max_threads = 1;
    }
    printf("gemm benchmark, real = %s, up to %d threads available\n", REAL_NAME,
           omp_get_max_threads());
#if HAVE_X86
    if (__builtin_cpu_supports("avx512f"))
        printf("FMA peak (register-only loop), AVX-512: %.1f GFLOP/s 1 thread, %.1f 2 threads\n",
               fma_peak(1, 1), fma_peak(1, 2));
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        printf("FMA peak (register-only loop), AVX2:    %.1f GFLOP/s 1 thread, %.1f 2 threads\n",
               fma_peak(0, 1), fma_peak(0, 2));
#endif
    printf("\n%-28s %5s %5s %5s %3s  %9s %9s  %9s %9s\n", "shape", "M", "N", "K", "op", "1T GF/s",
           "1T us", "2T GF/s", "2T us");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const Shape *s = &shapes[i];
        size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, nc = (size_t)s->M * s->N;
        real *A = malloc(sizeof(real) * na), *B = malloc(sizeof(real) * nb),
             *C = malloc(sizeof(real) * nc);
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
        printf("\n");
        fflush(stdout);
        free(A), free(B), free(C);
    }
    return 0;
}

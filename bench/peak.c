/*
 * peak.c: FP32 FMA peak and the cores' round trip (see peak.h). Independent accumulators hide
 * the FMA latency: with a 4-cycle latency and two FMA ports, at least 8 chains must be in
 * flight.
 */
#include "bench/peak.h"

#include "base/base.h"
#include "base/cpu.h"

#include <omp.h>
#include <stdalign.h>
#include <stdatomic.h>

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx512f"))) static float fma_avx512(long iters) {
    __m512 acc[16], x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 16; i++) acc[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < 16; i++) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
    __m512 s = acc[0];
    for (int i = 1; i < 16; i++) s = _mm512_add_ps(s, acc[i]);
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static float fma_avx2(long iters) {
    __m256 acc[12], x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++) acc[i] = _mm256_set1_ps((float)i);
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < 12; i++) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
    __m256 s = acc[0];
    for (int i = 1; i < 12; i++) s = _mm256_add_ps(s, acc[i]);
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0] + out[7];
}
#endif

static float fma_plain(long iters) {
    float acc[64], x = 0.999999f, y = 1e-7f;
    for (int i = 0; i < 64; i++) acc[i] = (float)i;
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < 64; i++) acc[i] = acc[i] * x + y;
    float s = 0;
    for (int i = 0; i < 64; i++) s += acc[i];
    return s;
}

/* FLOPs per iteration and the loop of the best set cpu_allows(): with NMT_ISA=avx2 an AVX-512
 * CPU's peak is its AVX2 one, the peak the capped kernels can reach. */
static float run_loop(long iters, double *flops_per_iter) {
#if defined(__x86_64__)
    if (cpu_allows(ISA_AVX512)) {
        *flops_per_iter = 16 * 16 * 2;
        return fma_avx512(iters);
    }
    if (cpu_allows(ISA_AVX2)) {
        *flops_per_iter = 12 * 8 * 2;
        return fma_avx2(iters);
    }
#endif
    *flops_per_iter = 64 * 2;
    return fma_plain(iters);
}

double fma_peak_gflops(int threads) {
    const long iters = 20000000;
    double flops_per_iter = 0, best = 0;
    volatile float sink = 0;
    for (int repeat = 0; repeat < 3; repeat++) {
        double t0 = monotonic_seconds();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
        sink += run_loop(iters, &flops_per_iter);
        double seconds = monotonic_seconds() - t0;
        double gflops = flops_per_iter * iters * threads / seconds / 1e9;
        if (gflops > best) best = gflops;
    }
    return best;
}

double core_round_trip_ns(void) {
    /* thread 0 writes odd counts, thread 1 answers with the next even one; -1 ends. A time
     * limit rather than a count: beside a busy program every trip can wait for a time slice. */
    enum { MOST_TRIPS = 200000, CHECK_EVERY = 1024 };
    const double most_seconds = 0.02;
    if (omp_get_max_threads() < 2) return 0;
    alignas(64) atomic_long turn = 0;
    long trips = 0;
    double seconds = 0;
#pragma omp parallel num_threads(2)
    if (omp_get_num_threads() < 2) {
        /* a team of one (a nested region): nobody to answer */
    } else if (omp_get_thread_num() == 0) {
        double t0 = monotonic_seconds();
        while (trips < MOST_TRIPS) {
            atomic_store_explicit(&turn, 2 * trips + 1, memory_order_release);
            while (atomic_load_explicit(&turn, memory_order_acquire) != 2 * trips + 2) continue;
            trips++;
            if (trips % CHECK_EVERY == 0 && monotonic_seconds() - t0 > most_seconds) break;
        }
        seconds = monotonic_seconds() - t0;
        atomic_store_explicit(&turn, -1, memory_order_release);
    } else {
        for (long trip = 0;; trip++) {
            long seen;
            while ((seen = atomic_load_explicit(&turn, memory_order_acquire)) != 2 * trip + 1 &&
                   seen != -1)
                continue;
            if (seen == -1) break;
            atomic_store_explicit(&turn, 2 * trip + 2, memory_order_release);
        }
    }
    return trips ? seconds / (double)trips * 1e9 : 0;
}

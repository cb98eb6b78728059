/*
 * parallel.c: work sharing among threads (see parallel.h).
 */
#include "model/parallel.h"

#include <sched.h>

#include <omp.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define spin_pause() _mm_pause()
#else
#define spin_pause() ((void)0)
#endif

void share_range(int n, int unit, int part, int parts, int *lo, int *hi) {
    long units = (n + unit - 1) / unit;
    *lo = (int)(units * part / parts) * unit, *hi = (int)(units * (part + 1) / parts) * unit;
    *lo = *lo < n ? *lo : n, *hi = *hi < n ? *hi : n;
}

int worth_parallel(double work, double threshold) {
    return work > threshold && omp_get_max_threads() > 1 && !omp_in_parallel();
}

void spin_barrier_init(SpinBarrier *b, int threads) {
    atomic_init(&b->arrived, 0);
    atomic_init(&b->generation, 0);
    b->threads = (unsigned)threads;
}

void spin_barrier_wait(SpinBarrier *b) {
    unsigned gen = atomic_load_explicit(&b->generation, memory_order_relaxed);
    /* the last to arrive opens the barrier: its release publishes every thread's writes, as
     * each arrival was a release-acquire step on `arrived` */
    if (atomic_fetch_add_explicit(&b->arrived, 1, memory_order_acq_rel) == b->threads - 1) {
        atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
        atomic_store_explicit(&b->generation, gen + 1, memory_order_release);
        return;
    }
    for (long spins = 0; atomic_load_explicit(&b->generation, memory_order_acquire) == gen;
         spins++) {
        if (spins < 4096)
            spin_pause();
        else
            sched_yield();
    }
}

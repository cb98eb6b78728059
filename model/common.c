/*
 * common.c: error messages and checked allocation (see common.h).
 */
#include "common.h"

#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define spin_pause() _mm_pause()
#else
#define spin_pause() ((void)0)
#endif

int error_set(Error *err, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int error_prefix(Error *err, const char *fmt, ...) {
    if (err) {
        char old[sizeof err->msg];
        memcpy(old, err->msg, sizeof old);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        size_t used = strlen(err->msg); /* the message is cut, not overflowed, when too long */
        memcpy(err->msg + used, old, strnlen(old, sizeof err->msg - 1 - used));
        err->msg[used + strnlen(old, sizeof err->msg - 1 - used)] = '\0';
    }
    return -1;
}

void *checked_calloc(size_t count, size_t size, const char *what, Error *err) {
    if (count == 0 || size == 0) count = size = 1; /* a valid, freeable pointer */
    if (count > SIZE_MAX / size) {
        error_set(err, "cannot allocate %s: %zu x %zu bytes overflows", what, count, size);
        return NULL;
    }
    void *p = calloc(count, size);
    if (!p) error_set(err, "out of memory allocating %s (%zu bytes)", what, count * size);
    return p;
}

real *checked_calloc_aligned(size_t n, void **block, const char *what, Error *err) {
    /* calloc, not aligned_alloc and memset: pages never written stay out of memory */
    real *p = checked_calloc(n + 64 / sizeof(real), sizeof(real), what, err);
    *block = p;
    return p ? p + ((64 - ((uintptr_t)p & 63)) & 63) / sizeof(real) : NULL;
}

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

/*
 * parallel.c: work sharing among threads (see parallel.h).
 */
#include "model/parallel.h"

#include <math.h>
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

/* The probes' schedule: the usual steps before the first probe (few: on a busy machine they
 * are the slow ones), the interval that the first probe keeping the count multiplies, the
 * interval after a probe that changed the count, the least steps and seconds a probe or the
 * usual steps before it are measured over (time slices of a busy machine are milliseconds
 * long, and a toy step too), the most steps a probe takes, and the longest interval between
 * probes (so that a machine that becomes busy is noticed within some seconds of toy steps, a
 * few minutes of large ones). The first step of a probe and of the usual steps after one,
 * with a team to wake or to start, is not counted. */
enum {
    FIRST_PROBE = 4,
    FIRST_INTERVAL = 16,
    AFTER_SWITCH = 128,
    PROBE_STEPS = 5,
    PROBE_MOST = 100,
    MAX_INTERVAL = 512
};
static const double MEASURE_SECONDS = 0.15;
/* A probe whose first measured step runs below this share of the usual rate ends there:
 * on a busy machine each step of all the threads costs two or three of one, and on a quiet one
 * each step of one thread half as much again as a step of all. */
static const double CLEARLY_SLOWER = 0.8;

void thread_choice_init(ThreadChoice *c, int most) {
    *c = (ThreadChoice){
        .most = most, .threads = most, .until_probe = FIRST_PROBE, .interval = FIRST_INTERVAL};
}

static int other_count(const ThreadChoice *c) {
    return c->threads == c->most ? 1 : c->most;
}

int thread_choice_step(ThreadChoice *c, double tokens, double seconds) {
    if (c->most <= 1) return c->most;
    if (c->probing) {
        if (c->probing++ > 1) c->probe[0] += tokens, c->probe[1] += seconds;
        double usual_rate = c->usual[0] / fmax(c->usual[1], 1e-9);
        double probe_rate = c->probe[0] / fmax(c->probe[1], 1e-9);
        int clearly_slower = c->probing > 2 && probe_rate < CLEARLY_SLOWER * usual_rate;
        if (!clearly_slower && (c->probing <= PROBE_STEPS ||
                                (c->probe[1] < MEASURE_SECONDS && c->probing <= PROBE_MOST)))
            return other_count(c);
        /* the probe is over: keep the faster count (the probe's by a clear margin only) */
        if (probe_rate > 1.1 * usual_rate) {
            c->threads = other_count(c);
            c->interval = AFTER_SWITCH;
        } else {
            c->interval = c->interval * 4 < MAX_INTERVAL ? c->interval * 4 : MAX_INTERVAL;
        }
        c->probing = 0;
        c->until_probe = c->interval;
        c->usual[0] = c->usual[1] = 0;
        c->usual_steps = 0;
        return c->threads;
    }
    if (c->usual_steps++ > 0) c->usual[0] += tokens, c->usual[1] += seconds;
    if (--c->until_probe > 0 || c->usual[1] < MEASURE_SECONDS) return c->threads;
    c->probing = 1;
    c->probe[0] = c->probe[1] = 0;
    return other_count(c);
}

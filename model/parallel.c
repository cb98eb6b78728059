/*
 * parallel.c: work sharing among threads (see parallel.h).
 */
#include "model/parallel.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <omp.h>

#include "base/base.h"

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
/* The least seconds of usual steps before a probe of another count than the one the load calls
 * for: of more threads, LONG_SECONDS; of fewer, FEWER_SECONDS and FEWER_STEPS steps. On a
 * quiet machine a probe of fewer threads costs a step or so (it ends when it runs clearly
 * slower), so it waits for enough steps that the cost is a few percent, and a short run (a file
 * of a few seconds to translate) spends none of its time on one. */
static const double LONG_SECONDS = 30, FEWER_SECONDS = 2;
enum { FEWER_STEPS = 32 };
/* The load is measured over windows of at least this long: the system counts busy time in
 * ticks of 10 ms, so over two processors a window holds some 30 of them. Until the load is
 * first known, a shorter one will do: the program's start-up is what there is, and when it is
 * shorter still, the first steps add to it. */
static const double LOAD_SECONDS = 0.15, LOAD_FIRST_SECONDS = 0.05;
/* A probe whose first measured step runs below this share of the usual rate ends there:
 * on a busy machine each step of all the threads costs two or three of one, and on a quiet one
 * each step of one thread half as much again as a step of all. */
static const double CLEARLY_SLOWER = 0.8;
/* The first step of a probe is not measured (its team may be waking or starting), unless it
 * ran below this share of the usual rate: no team's start costs half a step, while beside a
 * busy program a step of all the threads costs two or three of one; the probe ends there. */
static const double FAR_SLOWER = 0.5;

static double seconds_of(const struct timespec *t) {
    return (double)t->tv_sec + (double)t->tv_nsec * 1e-9;
}

void load_sample(LoadSample *s) {
    struct timespec t;
    s->wall = monotonic_seconds();
    s->own = clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) == 0 ? seconds_of(&t) : NAN;
    s->busy = NAN;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN), tick = sysconf(_SC_CLK_TCK);
    s->cpus = cpus > 0 ? (int)cpus : 1;
    /* Linux: the first line sums every processor's time in ticks: user, nice, system, idle,
     * iowait, irq, softirq, steal (time a hypervisor gave to others: not ours to have) */
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return;
    unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle,
               &iowait, &irq, &softirq, &steal) == 8 &&
        tick > 0)
        s->busy = (double)(user + nice + system + irq + softirq + steal) / (double)tick;
    fclose(f);
}

double load_others(const LoadSample *from, const LoadSample *to) {
    double seconds = to->wall - from->wall;
    if (!(seconds > 0)) return NAN;
    double others = ((to->busy - from->busy) - (to->own - from->own)) / seconds;
    return isnan(others) ? NAN : fmax(others, 0);
}

void thread_choice_init(ThreadChoice *c, int most, const LoadSample *now) {
    *c = (ThreadChoice){.most = most,
                        .threads = most,
                        .until_probe = FIRST_PROBE,
                        .interval = FIRST_INTERVAL,
                        .load_from = *now};
}

/* The threads that would each have a processor of their own beside what other programs kept
 * busy since c->load_from, once `least` seconds are measured (then a new window starts). */
static void measure_load(ThreadChoice *c, const LoadSample *now, double least) {
    if (now->wall - c->load_from.wall < least) return;
    double others = load_others(&c->load_from, now);
    c->load_from = *now;
    if (isnan(others)) return;
    long fits = lround(now->cpus - others);
    c->load_fits = fits < 1 ? 1 : fits > c->most ? c->most : (int)fits;
}

int thread_choice_start(ThreadChoice *c, const LoadSample *now) {
    if (c->most <= 1) return c->most;
    measure_load(c, now, LOAD_FIRST_SECONDS);
    if (c->load_fits)
        c->threads = c->load_fits;
    else if (!isnan(now->busy))
        /* a start-up too short to tell, which the first step completes: on one thread it
         * costs a quiet machine half a step, on all of them beside a busy program two */
        c->threads = 1;
    return c->threads;
}

static int other_count(const ThreadChoice *c) {
    return c->threads == c->most ? 1 : c->most;
}

static void start_probe(ThreadChoice *c, int threads) {
    c->probing = 1;
    c->probe_count = threads;
    c->probe[0] = c->probe[1] = 0;
}

/* A step of the probe: its threads for the next step, the usual count once it is over. */
static int probe_step(ThreadChoice *c, double tokens, double seconds) {
    int first = c->probing == 1;
    if (c->probing++ > 1) c->probe[0] += tokens, c->probe[1] += seconds;
    double usual_rate = c->usual[0] / fmax(c->usual[1], 1e-9);
    double probe_rate = c->probe[0] / fmax(c->probe[1], 1e-9);
    int clearly_slower = (c->probing > 2 && probe_rate < CLEARLY_SLOWER * usual_rate) ||
                         (first && tokens / fmax(seconds, 1e-9) < FAR_SLOWER * usual_rate);
    if (!clearly_slower &&
        (c->probing <= PROBE_STEPS || (c->probe[1] < MEASURE_SECONDS && c->probing <= PROBE_MOST)))
        return c->probe_count;
    /* the probe is over: keep the faster count (the probe's by a clear margin only) */
    if (probe_rate > 1.1 * usual_rate) {
        c->threads = c->probe_count;
        c->interval = AFTER_SWITCH;
        c->load_refuted = 0;
    } else {
        c->interval = c->interval * 4 < MAX_INTERVAL ? c->interval * 4 : MAX_INTERVAL;
        if (c->probe_count == c->load_fits) c->load_refuted = 1;
    }
    c->probing = 0;
    c->until_probe = c->interval;
    c->usual[0] = c->usual[1] = 0;
    c->usual_steps = 0;
    return c->threads;
}

int thread_choice_step(ThreadChoice *c, double tokens, double seconds, const LoadSample *now) {
    if (c->most <= 1) return c->most;
    int known = c->load_fits != 0;
    measure_load(c, now, known ? LOAD_SECONDS : LOAD_FIRST_SECONDS);
    if (!known && c->load_fits && c->load_fits != c->threads && !c->probing) {
        /* a start-up shorter than its window, which the first steps completed: the load
         * chooses the count as it would have before the first step */
        c->threads = c->load_fits;
        c->usual[0] = c->usual[1] = 0;
        c->usual_steps = 0;
        return c->threads;
    }
    if (c->probing) return probe_step(c, tokens, seconds);
    if (c->usual_steps++ > 0) c->usual[0] += tokens, c->usual[1] += seconds;
    int load_calls = c->load_fits && c->load_fits != c->threads; /* for another count */
    if ((--c->until_probe > 0 && !load_calls) || c->usual[1] < MEASURE_SECONDS) return c->threads;
    /* a probe is due on the rates' schedule, or the load calls for another count */
    int due = c->until_probe <= 0, threads = other_count(c);
    if (load_calls) {
        threads = c->load_fits;
        due = due || !c->load_refuted;
    } else if (c->load_fits && threads != c->load_fits) {
        /* only after long enough that the probe costs little, in case the load misleads: more
         * threads than the processors other programs leave (a container sees its host's
         * load), or fewer (a quota or a hypervisor holds back processors it shows as idle) */
        if (threads > c->load_fits)
            due = due && c->usual[1] >= LONG_SECONDS;
        else
            due = due && c->usual[1] >= FEWER_SECONDS && c->usual_steps > FEWER_STEPS;
    }
    if (due) start_probe(c, threads);
    return due ? threads : c->threads;
}

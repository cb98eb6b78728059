/*
 * parallel.h: how the model's loops share work among OpenMP threads: when a parallel region
 * is worth entering, which part of a range each thread takes, and a spinning barrier.
 */
#ifndef NMT_MODEL_PARALLEL_H
#define NMT_MODEL_PARALLEL_H

#include <stdatomic.h>

/* Whether a loop of `work` operations should open a parallel region: only above `threshold`,
 * with more than one thread, and when not inside a parallel region already (whose threads
 * have shared out the work). The model's loops put it in their pragma,
 *     #pragma omp parallel for if (worth_parallel(work, threshold)) schedule(static)
 * and their iterations must write disjoint outputs. But OpenMP charges for entering a region
 * even when its if clause is false or it would be nested (a futex call in and out, as much as
 * a small loop), so a function called many times a step with little work each time (a row at
 * a time inside a region of the caller's, a search's step) tests it in an ordinary `if` and
 * runs its loop on this thread without entering a region. */
int worth_parallel(double work, double threshold);

/* [*lo, *hi): part `part` of `parts` of [0, n), cut at multiples of `unit` (a cache line of
 * features, a GEMM tile), for threads that share out rows or columns. */
void share_range(int n, int unit, int part, int parts, int *lo, int *hi);

/* A barrier for the threads of one parallel region that waits by spinning. An OpenMP barrier
 * makes a futex system call each time it opens (as costly as a small matrix-vector product),
 * and decoding one sentence meets several barriers a step. After a while of spinning the
 * waiters yield their core, so a team that shares its cores with other work still moves on.
 * Initialise with the team's size, inside or before the region; every thread of the team must
 * call spin_barrier_wait the same number of times. */
typedef struct {
    atomic_uint arrived, generation;
    unsigned threads;
} SpinBarrier;

void spin_barrier_init(SpinBarrier *b, int threads);
void spin_barrier_wait(SpinBarrier *b);

/* What the processors did up to a moment, in seconds: the clock, this process's processor time
 * and the time all the machine's `cpus` processors were busy (niced programs too: where the
 * system shares the processors among sessions first, as desktop Linux does, they compete all
 * the same). Where the system does not say (outside Linux's /proc/stat), busy is NAN. Two
 * samples tell how many processors other programs kept busy in between. */
typedef struct {
    double wall, own, busy;
    int cpus;
} LoadSample;

void load_sample(LoadSample *s);
/* Processors that other programs kept busy from `from` to `to` (at least 0; NAN unknown). */
double load_others(const LoadSample *from, const LoadSample *to);

/* How many threads a loop of steps (training's) runs on, chosen by measuring. On a machine
 * where another program keeps a core busy, a team of as many threads as cores waits at every
 * barrier for a thread that is not running, while its own threads spin (docs/performance.md,
 * "Threads on a busy machine"). Two measurements choose:
 * - the machine's load: every fraction of a second, the processors that other programs kept
 *   busy tell how many threads would each have one of their own. When that differs from the
 *   count running, a few steps run on it at once;
 * - the rates: now and then a few steps run on the other count (1, or all the threads asked
 *   for), and the faster in tokens a second is kept. A probe that keeps the choice makes the
 *   steps until the next four times as many (up to a bound), so a quiet machine spends few of
 *   its steps probing; a probe the load called for and the rates refuted waits for that
 *   schedule before the load may call again. While other programs hold the processors, no
 *   probe runs more threads than the load allows: there they cost a busy machine most.
 * Training's bits do not depend on the count (the passes sum a row alike in a share of any
 * size: gemm_packed), so they never depend on what the measurements chose. */
typedef struct {
    int most;             /* the threads asked for */
    int threads;          /* the count of the usual steps */
    int probing;          /* 1 + the steps of the current probe so far (0: not probing) */
    int probe_count;      /* the threads of the current probe */
    int load_fits;        /* the count the load last called for (0: unknown) */
    int load_refuted;     /* the last probe the load called for kept the usual count */
    long until_probe;     /* usual steps until the next probe on the rates' schedule */
    long usual_steps;     /* usual steps since the last probe */
    long interval;        /* usual steps between probes */
    double usual[2];      /* tokens and seconds of the usual steps since the last probe */
    double probe[2];      /* the same for the probe's steps (its first not counted) */
    LoadSample load_from; /* the start of the load's current measurement */
} ThreadChoice;

/* `now`: a sample taken as the program started, before its steps. */
void thread_choice_init(ThreadChoice *c, int most, const LoadSample *now);
/* Before the first step: its threads, from the machine's load since thread_choice_init (one
 * when that was too short to tell, which the first steps then complete). */
int thread_choice_start(ThreadChoice *c, const LoadSample *now);
/* After a step of `tokens` tokens that took `seconds`, `now` sampled as it ended: the threads
 * for the next step. */
int thread_choice_step(ThreadChoice *c, double tokens, double seconds, const LoadSample *now);

#endif

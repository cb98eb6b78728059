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

#endif

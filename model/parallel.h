/*
 * parallel.h: how the model's loops share work among OpenMP threads: when a parallel region
 * is worth entering, which part of a range each thread takes, and a spinning barrier.
 */
#ifndef NMT_MODEL_PARALLEL_H
#define NMT_MODEL_PARALLEL_H

#include <stdatomic.h>

/* Whether a loop of `work` operations should open a parallel region: only above `threshold`,
 * with more than one thread, and when not inside a parallel region already (whose threads
 * have shared out the work). OpenMP charges for entering a region even when its if clause is
 * false or it would be nested (a futex call in and out), so small per-step loops call their
 * body directly instead. */
int worth_parallel(double work, double threshold);

/* Runs `for (long i = 0; i < n; i++) { body }` on the threads of a new parallel region when
 * worth_parallel(work, threshold), otherwise on this thread without entering a region (which
 * costs as much as a small loop). Iterations must be independent. Every loop of the model
 * that may run in parallel goes through this one gate. Each thread takes one contiguous
 * share of the iterations, or with PARALLEL_FOR_DEALT every (number of threads)-th one, for
 * iterations whose work varies along the range. */
#define PARALLEL_FOR(i, n, work, threshold, ...)                                                   \
    PARALLEL_FOR_SCHEDULED(schedule(static), i, n, work, threshold, __VA_ARGS__)
#define PARALLEL_FOR_DEALT(i, n, work, threshold, ...)                                             \
    PARALLEL_FOR_SCHEDULED(schedule(static, 1), i, n, work, threshold, __VA_ARGS__)
#define OMP_PRAGMA(clauses) _Pragma(#clauses)
#define PARALLEL_FOR_SCHEDULED(clause, i, n, work, threshold, ...)                                 \
    do {                                                                                           \
        if (worth_parallel((work), (threshold))) {                                                 \
            OMP_PRAGMA(omp parallel for clause) for (long i = 0; i < (long)(n); i++) {             \
                __VA_ARGS__;                                                                       \
            }                                                                                      \
        } else {                                                                                   \
            for (long i = 0; i < (long)(n); i++) {                                                 \
                __VA_ARGS__;                                                                       \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* [*lo, *hi): part `part` of `parts` of [0, n), cut at multiples of `unit` (a cache line of
 * features, a GEMM tile), for threads that share out rows or columns. */
void share_range(int n, int unit, int part, int parts, int *lo, int *hi);

/* A barrier for the threads of one parallel region that waits by spinning. An OpenMP barrier
 * makes a futex system call each time it opens (as costly as a small matrix-vector product),
 * and decoding one sentence meets several barriers a step.
 * After a while of spinning the waiters yield their core, so a team that shares its cores
 * with other work still moves on. Initialise with the team's size, inside or before the
 * region; every thread of the team must call spin_barrier_wait the same number of times. */
typedef struct {
    atomic_uint arrived, generation;
    unsigned threads;
} SpinBarrier;

void spin_barrier_init(SpinBarrier *b, int threads);
void spin_barrier_wait(SpinBarrier *b);

#endif

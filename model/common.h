/*
 * common.h: the two things every file shares.
 *
 * `real` is the floating-point type of the whole model: float by default, double when built
 * with `make REAL=double` (-DREAL_DOUBLE), so gradient checks can run in exact arithmetic.
 * `Error` carries a one-line message from the place a failure is detected to the place that
 * reports it; functions that can fail return 0 on success and -1 after filling it.
 */
#ifndef NMT_COMMON_H
#define NMT_COMMON_H

#include <stdatomic.h>
#include <stddef.h>

#ifdef REAL_DOUBLE
typedef double real;
#define REAL_NAME "double"
#else
typedef float real;
#define REAL_NAME "float"
#endif

typedef struct {
    char msg[512];
} Error;

/* Formats the message into err (when err is not NULL) and returns -1, so callers can write
 * `return error_set(err, "...")`. */
int error_set(Error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes the message already in err with more context ("file.ini: " + old message). */
int error_prefix(Error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Allocates count*size zeroed bytes; on failure (or overflow) sets err naming `what`. */
void *checked_calloc(size_t count, size_t size, const char *what, Error *err);

/* Whether a loop of `work` operations should open a parallel region: only above `threshold`,
 * with more than one thread, and when not inside a parallel region already (whose threads
 * have shared out the work). OpenMP charges for entering a region even when its if clause is
 * false or it would be nested (a futex call in and out), so small per-step loops call their
 * body directly instead. */
int worth_parallel(double work, double threshold);

/* [*lo, *hi): part `part` of `parts` of [0, n), cut at multiples of `unit` (a cache line of
 * features, a GEMM tile), for threads that share out rows or columns. */
void share_range(int n, int unit, int part, int parts, int *lo, int *hi);

/* n zeroed reals starting on a 64-byte boundary, so that vector loads of rows whose length is
 * a multiple of 16 floats never straddle two cache lines (which halves the speed at which a
 * matrix-vector product streams a matrix). *block gets the pointer to free. */
real *checked_calloc_aligned(size_t n, void **block, const char *what, Error *err);

/* A barrier for the threads of one parallel region that waits by spinning. An OpenMP barrier
 * makes a futex system call each time it opens (0.2-0.4 us on these machines, as much as a
 * small matrix-vector product), and decoding one sentence meets several barriers a step.
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

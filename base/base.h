/*
 * base.h: what every layer shares: the number type, errors, checked allocation.
 *
 * `real` is the floating-point type of the whole model: float by default, double when built
 * with `make REAL=double` (-DREAL_DOUBLE), so gradient checks can run in exact arithmetic.
 * `Error` carries a one-line message from the place a failure is detected to the place that
 * reports it; functions that can fail return 0 on success and -1 after filling it.
 */
#ifndef NMT_BASE_H
#define NMT_BASE_H

#include <stddef.h>
#include <stdint.h>

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

/* Appends more context to the message already in err (" (the previous file is intact)"). */
int error_append(Error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Allocates count*size zeroed bytes; on failure (or overflow) sets err naming `what`. */
void *checked_calloc(size_t count, size_t size, const char *what, Error *err);

/* Asks for 2 MB pages behind a block of at least 8 MB that is not yet written (from
 * checked_calloc): a hint, for the arrays a training step reads and writes in full (the
 * parameters, gradients, Adam's moments, the moving average). Linux's transparent huge pages
 * follow it in their "madvise" mode ("always" gives such blocks huge pages anyway, "never"
 * none); elsewhere it does nothing. A step streams hundreds of MB through those arrays, and on
 * a VM each TLB miss walks two levels of page tables, so fewer, larger pages shorten Adam and
 * the gradient norm. Not for blocks that are touched only in part (a search's activations,
 * planned for the longest input): each first write would bring in 2 MB, which made a short
 * bin/translate slower (docs/performance.md). */
void advise_huge_pages(void *p, size_t bytes);

/* `bytes` zeroed bytes on a 64-byte boundary, for a block that is written in full right away
 * and read in full (a checkpoint file's bytes, the parameters it is read into). From 1 MB on,
 * the block starts on a 2 MB boundary and spans whole 2 MB pages, which it asks for (as
 * advise_huge_pages does) and takes in one call (Linux's MADV_POPULATE_WRITE, 5.14 and later)
 * instead of a page fault at each first write. On a VM a first touch of a 4 KB page is a costly
 * fault, and such faults were most of the time bin/translate took to load a small model; in
 * 2 MB pages there are few of them (docs/performance.md). Free with free(). */
void *checked_calloc_pages(size_t bytes, const char *what, Error *err);

/* A NUL-terminated copy of text[0..len) from malloc; on failure sets err naming `what`. */
char *checked_strndup(const char *text, size_t len, const char *what, Error *err);

/* n zeroed reals starting on a 64-byte boundary, so that vector loads of rows whose length is
 * a multiple of 16 floats never straddle two cache lines (which halves the speed at which a
 * matrix-vector product streams a matrix). *block gets the pointer to free. */
real *checked_calloc_aligned(size_t n, void **block, const char *what, Error *err);

/* FNV-1a, 64 bits: fnv1a(FNV1A_START, data, n) hashes data[0..n); passing a previous result
 * as h continues it over more bytes. Hash tables of tokens and checkpoint checksums use it. */
#define FNV1A_START 0xcbf29ce484222325ull
#define FNV1A_PRIME 0x100000001b3ull
uint64_t fnv1a(uint64_t h, const void *data, size_t n);

/* Seconds of the monotonic clock (CLOCK_MONOTONIC), for durations: not omp_get_wtime, which
 * clang's OpenMP runtime reads in steps of a microsecond or more. */
double monotonic_seconds(void);

/* Refuses, with an error naming `what`, to go on when `bytes` exceed the memory this process
 * can have: the physical memory, or the address-space or data-segment limit (ulimit -v / -d)
 * when lower. Checked before big allocations, because with Linux's overcommit an allocation
 * larger than the machine can succeed and the process is killed later, when it touches the
 * pages. */
int memory_check(double bytes, const char *what, Error *err);

#endif

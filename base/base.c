/*
 * base.c: error messages, checked allocation and the memory check (see base.h).
 */
#define _DEFAULT_SOURCE /* madvise's MADV_HUGEPAGE (Linux); the rest of this file is POSIX */
#include "base/base.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

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

int error_append(Error *err, const char *fmt, ...) {
    if (err) {
        size_t used = strnlen(err->msg, sizeof err->msg - 1);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg + used, sizeof err->msg - used, fmt, ap);
        va_end(ap);
    }
    return -1;
}

uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * FNV1A_PRIME;
    return h;
}

void advise_huge_pages(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
    enum { HUGE_PAGE = 2 << 20, AT_LEAST = 8 << 20 };
    if (!p || bytes < AT_LEAST) return;
    uintptr_t first = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    uintptr_t end = ((uintptr_t)p + bytes) & ~(uintptr_t)(HUGE_PAGE - 1);
    (void)madvise((void *)first, end - first, MADV_HUGEPAGE); /* refused: 4 KB pages, as before */
#else
    (void)p, (void)bytes;
#endif
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

void *checked_calloc_pages(size_t bytes, const char *what, Error *err) {
    enum { LINE = 64, HUGE_PAGE = 2 << 20, FROM = 1 << 20 };
    size_t align = bytes >= FROM ? HUGE_PAGE : LINE;
    if (bytes > SIZE_MAX - align) {
        error_set(err, "cannot allocate %s: %zu bytes is too large", what, bytes);
        return NULL;
    }
    size_t whole = (bytes + align - 1) / align * align + (bytes == 0 ? align : 0);
    void *p = aligned_alloc(align, whole);
    if (!p) {
        error_set(err, "out of memory allocating %s (%zu bytes)", what, bytes);
        return NULL;
    }
    if (align == HUGE_PAGE) { /* hints: where refused, the pages come at first touch */
#ifdef MADV_HUGEPAGE
        (void)madvise(p, whole, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
        (void)madvise(p, whole, MADV_POPULATE_WRITE);
#endif
    }
    memset(p, 0, whole);
    return p;
}

char *checked_strndup(const char *text, size_t len, const char *what, Error *err) {
    char *copy = checked_calloc(len + 1, 1, what, err);
    if (copy) memcpy(copy, text, len);
    return copy;
}

real *checked_calloc_aligned(size_t n, void **block, const char *what, Error *err) {
    /* calloc, not aligned_alloc and memset: pages never written stay out of memory */
    real *p = checked_calloc(n + 64 / sizeof(real), sizeof(real), what, err);
    *block = p;
    return p ? p + ((64 - ((uintptr_t)p & 63)) & 63) / sizeof(real) : NULL;
}

/* The soft limit of resource, in bytes; infinity when there is none. */
static double soft_limit(int resource) {
    struct rlimit limit;
    if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return INFINITY;
    return (double)limit.rlim_cur;
}

int memory_check(double bytes, const char *what, Error *err) {
    long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    double physical = pages > 0 && page_size > 0 ? (double)pages * (double)page_size : INFINITY;
    double address_space = soft_limit(RLIMIT_AS), data = soft_limit(RLIMIT_DATA);
    double available = fmin(physical, fmin(address_space, data));
    if (bytes <= available) return 0;
    const double gib = 1024.0 * 1024.0 * 1024.0;
    return error_set(err, "too large: %s need %.3g GiB, more than the %.3g GiB of memory %s", what,
                     bytes / gib, available / gib,
                     available < physical ? "the process limit (ulimit) allows"
                                          : "this machine has");
}

double monotonic_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/*
 * live/serial/omp.h: the OpenMP runtime calls the library makes, for the one-thread
 * WebAssembly build (make wasm), which compiles without -fopenmp: emscripten ships no OpenMP.
 * The `#pragma omp` lines then compile away, so each parallel region runs once, as thread 0
 * of a team of 1, which is what these answer. Only the wasm build puts this folder on the
 * include path; every other build uses the compiler's own omp.h.
 */
#ifndef LIVE_SERIAL_OMP_H
#define LIVE_SERIAL_OMP_H

#include <time.h>

static inline int omp_get_thread_num(void) {
    return 0;
}
static inline int omp_get_num_threads(void) {
    return 1;
}
static inline int omp_get_max_threads(void) {
    return 1;
}
static inline int omp_in_parallel(void) {
    return 0;
}

static inline double omp_get_wtime(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

#endif

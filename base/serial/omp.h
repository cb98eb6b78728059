/*
 * base/serial/omp.h: the OpenMP runtime calls the code makes, for the builds without an
 * OpenMP runtime: `make OPENMP=0`, a compiler that has none (Apple's clang without Homebrew's
 * libomp: the Makefile finds out), and the WebAssembly build (make wasm; emscripten ships no
 * OpenMP). Those compile without -fopenmp (with -fopenmp-simd where the compiler has it, so
 * that `#pragma omp simd` still vectorises): the other `#pragma omp` lines compile away and each
 * parallel region runs once, as thread 0 of a team of 1, which is what these answer. Only those
 * builds put this folder on the include path; every other build uses the compiler's own omp.h.
 */
#ifndef BASE_SERIAL_OMP_H
#define BASE_SERIAL_OMP_H

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
/* A team of one whatever is asked (bin/train's train.threads, the tests' thread counts). */
static inline void omp_set_num_threads(int threads) {
    (void)threads;
}

static inline double omp_get_wtime(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

#endif

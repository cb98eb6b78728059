/*
 * peak.h: the machine's FP32 peak, measured with a register-only FMA loop (AVX-512 or AVX2
 * when cpu_allows() them, so capped by NMT_ISA as the kernels are, else plain C), so benchmarks
 * can report a share of what the cores can do rather than of a datasheet number; and how far
 * apart the cores are.
 */
#ifndef NMT_BENCH_PEAK_H
#define NMT_BENCH_PEAK_H

/* GFLOP/s of `threads` threads each running the FMA loop (an FMA counts as 2 FLOPs). */
double fma_peak_gflops(int threads);

/* Nanoseconds for a cache line to go from one thread's core to another's and back, two threads
 * handing a counter to each other (0 with fewer than 2 threads). A VM's two cores can be
 * neighbours on one die or sit on two: the second multiplies this several times, and so the
 * time of everything one thread writes and the other reads (the threads' training step), while
 * each core alone (the peak, one thread's step) keeps its speed. */
double core_round_trip_ns(void);

#endif

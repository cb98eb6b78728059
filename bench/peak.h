/*
 * peak.h: the machine's FP32 peak, measured with a register-only FMA loop (AVX-512 or AVX2
 * when cpu_allows() them, so capped by NMT_ISA as the kernels are, else plain C), so benchmarks can report a share of what the cores
 * can do rather than of a datasheet number.
 */
#ifndef NMT_BENCH_PEAK_H
#define NMT_BENCH_PEAK_H

/* GFLOP/s of `threads` threads each running the FMA loop (an FMA counts as 2 FLOPs). */
double fma_peak_gflops(int threads);

#endif

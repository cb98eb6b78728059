/*
 * gemm.c: a blocked, register-tiled matrix product in the style of GotoBLAS/BLIS (see gemm.h
 * for the contract): C = beta C + op(A) op(B), row-major, beta 0 or 1.
 *
 * From the inside out:
 *
 *  - Micro-kernel. Computes an MR x NR tile of C in vector registers: for each k it loads NR
 *    values of op(B) (vectors along j), broadcasts MR values of op(A) and does MR x NR fused
 *    multiply-adds, then stores the tile to C or adds it, with masks at the right edge and a
 *    row count at the bottom. AVX-512 uses 8 x 32 (16 zmm accumulators), AVX2+FMA 6 x 16
 *    (12 ymm), the portable C kernel 4 x 8 (vectorised by the compiler, no FMA).
 *
 *  - Packing. Panels of op(A) (MR rows) and op(B) (NR columns) are copied into contiguous,
 *    64-byte aligned buffers in the order the kernel reads them ([k][MR], [k][NR]), zero-padded
 *    to whole panels. All four transpose cases and any lda/ldb are resolved here, so the
 *    kernel sees one layout. The AVX-512 packer transposes 8 x 16 blocks in registers.
 *
 *  - Cache blocking. K is cut into blocks of KC = 256. For each K block and each block of
 *    NC = 1024 columns, that KC x NC block of op(B) is packed (1 MiB, the size of one core's
 *    L2 on the smaller-cached of the machines it was tuned on; half as many columns measured
 *    no different), then op(A) is packed MC = 192 rows at a time, and each A micro-panel
 *    (8 x 256, 8 KiB) stays in L1 while the kernel sweeps it across all the B panels.
 *
 *  - Packed once. A weight that a time loop multiplies by at every step is packed by
 *    gemm_pack() as a pass starts, and gemm_packed() runs the steps' products on those panels
 *    (rows_from_panels): the rows of a step's share fit one A block, so each B panel is read
 *    once, into L1, for all of them, even when the panels are larger than L2. It reads them
 *    for few rows too, where gemm() would dot them, so that a share's rows get the bits they
 *    would get in any other share (see Determinism).
 *
 *  - Small shapes. With few rows, each element of B is used too few times to repay a copy.
 *    When op(B) is B itself, its rows are read in place. When B is transposed ([N,K], as in
 *    the forward y = x W^T), up to 16 rows (decoding, beams; not gemm_packed) are done as
 *    dot products of rows of op(A) and B, in vector lanes along k, with B streamed through
 *    once (faster than the transposed path below at 5-12 rows, even with its half tiles, and
 *    no slower at 16); up to 128 rows (a training batch), as
 *    C^T = op(B)^T op(A)^T: rows of B are broadcast in place, only the small op(A) is packed,
 *    and each tile (32 rows, or 16 for the last 16 or fewer) is transposed on its way to C.
 *    M == 1 with B not transposed is a vector-matrix loop; N == 1 is done as the transposed
 *    problem, with M == 1.
 *
 *  - Prefetch. Where B is read in place, its rows are far apart and too short for the hardware
 *    prefetchers to follow (a decoder step's weights, from L3): the AVX-512 and AVX2 kernels
 *    ask for the lines they read next, 8 rows of B ahead (the normal kernels), the next call's
 *    8 rows (the C^T kernel) or the next 4 rows (the dot-product tiles, when B is larger than
 *    L2): without it each line of B waited on L3, in training's decoder steps and in beam
 *    search alike. The AVX-512 kernel also asks for both lines of each row of its C tile as
 *    it starts (the output layer's C, tens of MB, is far from the core). The gains of each
 *    are in docs/performance.md.
 *
 *  - Dispatch. The instruction set is chosen once, on the first call, with cpu_allows()
 *    (base/cpu.h): AVX-512, else AVX2 with FMA, else portable C, capped by NMT_ISA (to run
 *    the paths of smaller CPUs on an AVX-512 machine). The double build (-DREAL_DOUBLE)
 *    always uses the portable code.
 *
 *  - Threads. OpenMP splits C into disjoint ranges of whole tiles: columns when M <= N (each
 *    thread then packs all of the smaller op(A)), rows otherwise: a fixed share each, or on
 *    the longest products, runs that the threads claim as they go. Each thread packs into its
 *    own buffer, allocated on its first product and kept. Products below a work threshold,
 *    or called from inside a parallel region (whose threads have shared out the work), run on
 *    the calling thread alone, without entering a region.
 *
 * Determinism. K is never split across threads, and the K blocks depend only on K. Every
 * element of C is: for each K block in order, a sum started at zero and taken over k in order
 * (a fused multiply-add per term with AVX2/AVX-512, a multiply then an add in the portable
 * code), then stored (first block, beta 0) or added to C. So results are bit-identical for
 * any number of threads and from run to run, and a row of C does not depend on M or on which
 * path computed it. The one exception is the dot-product path (B transposed and M <= 16 with
 * AVX-512 and AVX2, M == 1 otherwise, so from gemm_rows_summed_alike() rows on every row is
 * summed alike; N == 1 with A not transposed): there each element is summed in vector lanes
 * over chunks of 1024 k, then reduced in a fixed tree, the same for every thread count, but
 * not for every M (on AVX2, one row and 2-16 rows form their lanes differently).
 * gemm_packed() never takes it, so its rows are summed alike for any M. A thread that
 * cannot get its buffer falls back to a plain loop doing exactly the kernels' arithmetic,
 * which leaves no trace in the results either.
 */
#include "model/gemm.h"
#include "model/gemm_isa.h"
#include "model/parallel.h"

#include "base/cpu.h"

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if !defined(REAL_DOUBLE) && defined(__x86_64__) && defined(__GNUC__)
#define GEMM_X86 1
#include <immintrin.h>
#else
#define GEMM_X86 0
#endif

/* ---- blocking parameters and the per-instruction-set table ------------------------------ */

/* KC, the K block, and the Isa table are in gemm_isa.h. */
/* Columns of the packed B block: KC x NC reals, 1 MiB in float. */
#define NC 1024
/* Rows of op(A) packed at once (rounded down to a multiple of MR): 192 KiB in float. */
#define MC 192
/* The same for k_inside_rows, where the whole packed op(B) shares the L2 with the A
 * block and the C block (the output layer's weight gradient, 256 columns and ~600 tokens:
 * 594 KiB + 2 x 192 KiB overflowed it, and each block then came from L3). */
#define MC_K_INSIDE 128
/* Largest M for the C^T path (its packed op(A), KC x M, lives in the B block buffer). */
#define SWAP_MAX_M 128
/* Largest block of B (bytes) read in place instead of packed, for few rows. */
#define IN_PLACE_MAX_BYTES (512 * 1024)
/* The dot-product path (B transposed, few rows): K is summed in chunks of DOT_CHUNK, and
 * rows of op(A) that are not contiguous are copied DOT_ROWS at a time to a stack buffer. */
#define DOT_CHUNK 1024
#define DOT_ROWS  4
/* Below twice this many multiply-adds a second thread costs more than it brings. */
#define WORK_PER_THREAD (1L << 16)
/* Per-thread buffer: the packed B block, then the packed A block. */
#define WS_B_ELEMS ((size_t)KC * NC)
#define WS_ELEMS   (WS_B_ELEMS + (size_t)MC * KC)

static inline int imin(int a, int b) {
    return a < b ? a : b;
}

static inline int imax(int a, int b) {
    return a > b ? a : b;
}

/* ---- portable kernels (any compiler and CPU; the only ones in the double build) ---------- */

#define G_MR 4
#define G_NR 8

static void kernel_generic(int kc, const real *restrict a, const real *restrict b, ptrdiff_t ldb,
                           real *restrict c, ptrdiff_t ldc, int mr, int nr, int add) {
    real acc[G_MR][G_NR] = {{0}};
    for (int k = 0; k < kc; k++, a += G_MR, b += ldb)
        for (int i = 0; i < G_MR; i++)
            for (int j = 0; j < G_NR; j++) acc[i][j] += a[i] * b[j];
    for (int i = 0; i < mr; i++) {
        real *ci = c + i * ldc;
        if (add)
            for (int j = 0; j < nr; j++) ci[j] += acc[i][j];
        else
            for (int j = 0; j < nr; j++) ci[j] = acc[i][j];
    }
}

static void gemv_n_generic(int n, int K, const real *x, ptrdiff_t incx, const real *B,
                           ptrdiff_t ldb, int add, real *y, ptrdiff_t incy) {
    enum { W = 64 };
    for (int j0 = 0; j0 < n; j0 += W) {
        int w = imin(W, n - j0);
        for (int p = 0; p < K; p += KC) {
            real acc[W] = {0};
            for (int k = p; k < imin(p + KC, K); k++) {
                real xk = x[k * incx];
                const real *bk = B + k * ldb + j0;
                for (int j = 0; j < w; j++) acc[j] += xk * bk[j];
            }
            real *yj = y + j0 * incy;
            for (int j = 0; j < w; j++)
                yj[j * incy] = add || p > 0 ? yj[j * incy] + acc[j] : acc[j];
        }
    }
}

static void dot_generic(int m, int n, int kc, const real *a, ptrdiff_t lda, const real *b,
                        ptrdiff_t ldb, int add, real *c, ptrdiff_t rsc, ptrdiff_t csc) {
    enum { L = 8 }; /* partial sums in L lanes (k mod L), then a fixed tree */
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            const real *ai = a + i * lda, *bj = b + j * ldb;
            real s[L] = {0};
            int k = 0;
            for (; k + L <= kc; k += L)
                for (int l = 0; l < L; l++) s[l] += ai[k + l] * bj[k + l];
            for (int l = 0; k + l < kc; l++) s[l] += ai[k + l] * bj[k + l];
            real sum = ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
            real *cij = c + i * rsc + j * csc;
            *cij = add ? *cij + sum : sum;
        }
}

static const Isa isa_generic = {.set = ISA_PORTABLE,
                                .mr = G_MR,
                                .nr = G_NR,
                                .kernel = kernel_generic,
                                .gemv_n = gemv_n_generic,
                                .dot = dot_generic,
                                .dot_max_m = 1};

#if GEMM_X86
/* ---- AVX2 + FMA kernels (float) ---------------------------------------------------------- */

#define AVX2_MR 6
#define AVX2_NR 16

/* All-ones in lanes j < n: the mask of maskload/maskstore. */
__attribute__((target("avx2"))) static inline __m256i mask8(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

__attribute__((target("avx2,fma"))) static void kernel_avx2(int kc, const float *a, const float *b,
                                                            ptrdiff_t ldb, float *c, ptrdiff_t ldc,
                                                            int mr, int nr, int add) {
    /* Every loop over the accumulators is fully unrolled (constant trip count, no break):
     * with a run-time index the compiler keeps acc in memory, with stores in the k loop. */
    __m256 acc[AVX2_MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < AVX2_MR; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int k = 0; k < kc; k++, a += AVX2_MR, b += ldb) {
        _mm_prefetch((const char *)(b + 8 * ldb), _MM_HINT_T0); /* see Prefetch */
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
        for (int i = 0; i < AVX2_MR; i++) {
            __m256 ai = _mm256_broadcast_ss(a + i);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
    }
    __m256i m0 = mask8(nr), m1 = mask8(nr - 8);
#pragma GCC unroll 6
    for (int i = 0; i < AVX2_MR; i++) {
        if (i >= mr) continue;
        float *ci = c + i * ldc;
        __m256 c0 = acc[i][0], c1 = acc[i][1];
        if (nr == AVX2_NR) {
            if (add) {
                c0 = _mm256_add_ps(_mm256_loadu_ps(ci), c0);
                c1 = _mm256_add_ps(_mm256_loadu_ps(ci + 8), c1);
            }
            _mm256_storeu_ps(ci, c0);
            _mm256_storeu_ps(ci + 8, c1);
        } else {
            if (add) {
                c0 = _mm256_add_ps(_mm256_maskload_ps(ci, m0), c0);
                c1 = _mm256_add_ps(_mm256_maskload_ps(ci + 8, m1), c1);
            }
            _mm256_maskstore_ps(ci, m0, c0);
            _mm256_maskstore_ps(ci + 8, m1, c1);
        }
    }
}

/* Stores (or adds) lanes j < w of v to y[j*incy]. */
__attribute__((target("avx2"))) static inline void store8(float *y, ptrdiff_t incy, __m256 v, int w,
                                                          int add) {
    if (incy == 1) {
        __m256i m = mask8(w);
        if (add) v = _mm256_add_ps(_mm256_maskload_ps(y, m), v);
        _mm256_maskstore_ps(y, m, v);
    } else {
        float t[8];
        _mm256_storeu_ps(t, v);
        for (int j = 0; j < w; j++) y[j * incy] = add ? y[j * incy] + t[j] : t[j];
    }
}

__attribute__((target("avx2,fma"))) static void gemv_n_avx2(int n, int K, const float *x,
                                                            ptrdiff_t incx, const float *B,
                                                            ptrdiff_t ldb, int add, float *y,
                                                            ptrdiff_t incy) {
    int j0 = 0;
    for (; j0 + 64 <= n; j0 += 64) /* 8 accumulators: enough independent chains */
        for (int p = 0; p < K; p += KC) {
            __m256 acc[8];
#pragma GCC unroll 8
            for (int v = 0; v < 8; v++) acc[v] = _mm256_setzero_ps();
            for (int k = p; k < imin(p + KC, K); k++) {
                __m256 xk = _mm256_broadcast_ss(x + k * incx);
                const float *bk = B + k * ldb + j0;
#pragma GCC unroll 8
                for (int v = 0; v < 8; v++)
                    acc[v] = _mm256_fmadd_ps(xk, _mm256_loadu_ps(bk + 8 * v), acc[v]);
            }
#pragma GCC unroll 8
            for (int v = 0; v < 8; v++)
                store8(y + (j0 + 8 * v) * incy, incy, acc[v], 8, add || p > 0);
        }
    for (; j0 < n; j0 += 8) { /* the same arithmetic, one vector at a time */
        int w = imin(8, n - j0);
        __m256i m = mask8(w);
        for (int p = 0; p < K; p += KC) {
            __m256 acc = _mm256_setzero_ps();
            for (int k = p; k < imin(p + KC, K); k++)
                acc = _mm256_fmadd_ps(_mm256_broadcast_ss(x + k * incx),
                                      _mm256_maskload_ps(B + k * ldb + j0, m), acc);
            store8(y + j0 * incy, incy, acc, w, add || p > 0);
        }
    }
}

/* Horizontal sum in a fixed order. */
__attribute__((target("avx2"))) static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The sums over k of a_i[k] b_j[k] for lanes k, k+8, ... of one chain each; hsum8 ends each
 * chain. Both paths below form every (i, j) by the same chain, so a row's result does not depend
 * on how many rows come with it. */
__attribute__((target("avx2,fma"))) static void dot_avx2(int m, int n, int kc, const float *a,
                                                         ptrdiff_t lda, const float *b,
                                                         ptrdiff_t ldb, int add, float *c,
                                                         ptrdiff_t rsc, ptrdiff_t csc) {
    __m256i tail = mask8(kc % 8);
    int full = kc - kc % 8;
    if (m == 1) { /* a vector: 4 rows of b at a time share each load of it */
        for (int j = 0; j < n; j += 4) {
            int rows = imin(4, n - j);
            const float *bq[4];
            for (int q = 0; q < 4; q++) bq[q] = b + (j + imin(q, rows - 1)) * ldb;
            __m256 s[4];
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) s[q] = _mm256_setzero_ps();
            for (int k = 0; k < full; k += 8) {
                __m256 ak = _mm256_loadu_ps(a + k);
#pragma GCC unroll 4
                for (int q = 0; q < 4; q++)
                    s[q] = _mm256_fmadd_ps(ak, _mm256_loadu_ps(bq[q] + k), s[q]);
            }
            if (full < kc) {
                __m256 ak = _mm256_maskload_ps(a + full, tail);
#pragma GCC unroll 4
                for (int q = 0; q < 4; q++)
                    s[q] = _mm256_fmadd_ps(ak, _mm256_maskload_ps(bq[q] + full, tail), s[q]);
            }
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) {
                if (q >= rows) continue;
                float r = hsum8(s[q]), *cq = c + (j + q) * csc;
                *cq = add ? *cq + r : r;
            }
        }
        return;
    }
    /* 2 x 4 tiles of 8 chains: each row of b is loaded once for two rows of a (the 16 ymm
     * registers hold 8 sums, 2 rows of a and the rows of b in turn) */
    int far = (double)n * kc * sizeof(float) > (1 << 20);
    for (int j = 0; j < n; j += 4) {
        int nj = imin(4, n - j);
        const float *bq[4];
        for (int q = 0; q < 4; q++) bq[q] = b + (j + imin(q, nj - 1)) * ldb;
        for (int i = 0; i < m; i += 2) {
            int mi = imin(2, m - i);
            const float *a0 = a + i * lda, *a1 = a + (i + mi - 1) * lda;
            __m256 s[2][4];
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) s[0][q] = s[1][q] = _mm256_setzero_ps();
            for (int k = 0; k < full; k += 8) {
                __m256 x0 = _mm256_loadu_ps(a0 + k), x1 = _mm256_loadu_ps(a1 + k);
                if (i == 0 && far && k % 16 == 0) /* see Prefetch */
#pragma GCC unroll 4
                    for (int q = 0; q < 4; q++)
                        _mm_prefetch((const char *)(bq[q] + 4 * ldb + k), _MM_HINT_T0);
#pragma GCC unroll 4
                for (int q = 0; q < 4; q++) {
                    __m256 y = _mm256_loadu_ps(bq[q] + k);
                    s[0][q] = _mm256_fmadd_ps(x0, y, s[0][q]);
                    s[1][q] = _mm256_fmadd_ps(x1, y, s[1][q]);
                }
            }
            if (full < kc) {
                __m256 x0 = _mm256_maskload_ps(a0 + full, tail),
                       x1 = _mm256_maskload_ps(a1 + full, tail);
#pragma GCC unroll 4
                for (int q = 0; q < 4; q++) {
                    __m256 y = _mm256_maskload_ps(bq[q] + full, tail);
                    s[0][q] = _mm256_fmadd_ps(x0, y, s[0][q]);
                    s[1][q] = _mm256_fmadd_ps(x1, y, s[1][q]);
                }
            }
#pragma GCC unroll 2
            for (int p = 0; p < 2; p++) {
                if (p >= mi) continue;
#pragma GCC unroll 4
                for (int q = 0; q < 4; q++) {
                    if (q >= nj) continue;
                    float r = hsum8(s[p][q]), *cpq = c + (i + p) * rsc + (j + q) * csc;
                    *cpq = add ? *cpq + r : r;
                }
            }
        }
    }
}

/* The transpose of an 8 x 8 block in place: v[i][j] becomes v[j][i]. Unpacks build 4 x 4
 * blocks inside each 128-bit lane, then 128-bit permutes join the halves. */
__attribute__((target("avx2"), always_inline)) static inline void transpose8x8(__m256 v[8]) {
    __m256 t[8], u[8];
#pragma GCC unroll 4
    for (int q = 0; q < 8; q += 2) {
        t[q] = _mm256_unpacklo_ps(v[q], v[q + 1]);
        t[q + 1] = _mm256_unpackhi_ps(v[q], v[q + 1]);
    }
#pragma GCC unroll 2
    for (int h = 0; h < 8; h += 4) {
        u[h] = _mm256_shuffle_ps(t[h], t[h + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    /* u[r], lane L: elements 4h..4h+3 of output row 4L + r (h = 0 for u[r], 1 for u[4 + r]) */
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) {
        v[r] = _mm256_permute2f128_ps(u[r], u[4 + r], 0x20);
        v[4 + r] = _mm256_permute2f128_ps(u[r], u[4 + r], 0x31);
    }
}

/* The first w (6 or 8) lanes of v to d, which holds w floats. */
__attribute__((target("avx2"), always_inline)) static inline void store_panel_row(float *d,
                                                                                  __m256 v, int w) {
    if (w == 8) {
        _mm256_store_ps(d, v);
        return;
    }
    _mm_storeu_ps(d, _mm256_castps256_ps128(v));
    _mm_storel_pi((__m64 *)(d + 4), _mm256_extractf128_ps(v, 1));
}

/* Packs as pack_panels does, for the AVX2 panels (w = 6, op(A), or 16, op(B)). Rows of a
 * non-transposed operand are copied k by k across every panel, so that each row, often a page
 * of its own, is read once and in order (short ones prefetched a few rows ahead, as in
 * pack_avx512). A transposed operand goes 8 rows x 8 k at a time through transpose8x8; rows
 * past n read as zero. */
__attribute__((target("avx2"))) static int pack_avx2(int trans, int kc, int n, const float *x,
                                                     ptrdiff_t ldx, int w, float *dst) {
    enum { AHEAD = 12 };
    if (w != AVX2_MR && w != AVX2_NR) return 0;
    int lanes = w == AVX2_MR ? AVX2_MR : 8; /* of each 8-wide vector that go to the panel */
    if (!trans) {
        for (int k = 0; k < kc; k++) {
            const float *s = x + k * ldx;
            if (n < 512 && k + AHEAD < kc)
                for (int j = 0; j < n; j += 16)
                    _mm_prefetch((const char *)(s + AHEAD * ldx + j), _MM_HINT_T1);
            float *d = dst + k * w;
            for (int p = 0; p < n; p += w)
                for (int j0 = 0; j0 < w; j0 += 8) {
                    int have = n - p - j0;
                    __m256 v = have >= 8 ? _mm256_loadu_ps(s + p + j0)
                                         : _mm256_maskload_ps(s + p + j0, mask8(have));
                    store_panel_row(d + (ptrdiff_t)p * kc + j0, v, lanes);
                }
        }
        return 1;
    }
    __m256i tail = mask8(kc % 8);
    int full = kc - kc % 8;
    for (int p = 0; p < n; p += w, dst += w * kc)
        for (int j0 = 0; j0 < w; j0 += 8) {
            int rows = imin(lanes, n - p - j0);
            const float *s = x + (p + j0) * ldx;
            for (int k = 0; k < kc; k += 8) {
                __m256 v[8];
#pragma GCC unroll 8
                for (int j = 0; j < 8; j++)
                    if (j >= rows)
                        v[j] = _mm256_setzero_ps();
                    else if (k < full)
                        v[j] = _mm256_loadu_ps(s + j * ldx + k);
                    else
                        v[j] = _mm256_maskload_ps(s + j * ldx + k, tail);
                transpose8x8(v);
                float *d = dst + k * w + j0;
#pragma GCC unroll 8
                for (int q = 0; q < 8; q++)
                    if (k + q < kc) store_panel_row(d + q * w, v[q], lanes);
            }
        }
    return 1;
}

static const Isa isa_avx2 = {.set = ISA_AVX2,
                             .mr = AVX2_MR,
                             .nr = AVX2_NR,
                             .fma = 1,
                             .in_place_m = 16,
                             .kernel = kernel_avx2,
                             .gemv_n = gemv_n_avx2,
                             .dot = dot_avx2,
                             .dot_max_m = 16,
                             .pack = pack_avx2};

/* ---- AVX-512 kernels (float) ------------------------------------------------------------- */

#define A512_MR 8
#define A512_NR 32

/* Lanes j < n (n clamped to 0..16) of a zmm. */
static inline __mmask16 mask16(int n) {
    return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

__attribute__((target("avx512f"))) static void kernel_avx512(int kc, const float *a, const float *b,
                                                             ptrdiff_t ldb, float *c, ptrdiff_t ldc,
                                                             int mr, int nr, int add) {
    /* As in kernel_avx2, the loops over acc are all fully unrolled to keep it in registers. */
    __m512 acc[A512_MR][2];
#pragma GCC unroll 8
    for (int i = 0; i < A512_MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    /* the tile's rows of C, both lines of each (its 32 columns span two): the output layer's C
     * (37 MB of logits, or its weight gradient) is far from the core, and each row's second
     * line waited for it at the stores */
    for (int i = 0; i < mr; i++) {
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
        if (nr > 16) _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
    }
    for (int k = 0; k < kc; k++, a += A512_MR, b += ldb) {
        /* B 8 rows ahead: read in place (few rows of A), its rows are ldb apart, and their
         * lines came from L3 one by one; in a packed panel this is 1 KB ahead, already near */
        _mm_prefetch((const char *)(b + 8 * ldb), _MM_HINT_T0);
        _mm_prefetch((const char *)(b + 8 * ldb + 16), _MM_HINT_T0);
        __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 8
        for (int i = 0; i < A512_MR; i++) {
            __m512 ai = _mm512_set1_ps(a[i]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
    }
    __mmask16 m0 = mask16(nr), m1 = mask16(nr - 16);
#pragma GCC unroll 8
    for (int i = 0; i < A512_MR; i++) {
        if (i >= mr) continue;
        float *ci = c + i * ldc;
        __m512 c0 = acc[i][0], c1 = acc[i][1];
        if (add) {
            c0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, ci), c0);
            c1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, ci + 16), c1);
        }
        _mm512_mask_storeu_ps(ci, m0, c0);
        _mm512_mask_storeu_ps(ci + 16, m1, c1);
    }
}

/* The transpose of 8 vectors of 16: out[i][j] = v[j][i]. Unpacks build 4 x 4 blocks inside
 * each 128-bit lane, then 128-bit shuffles join the two halves of each output row. */
__attribute__((target("avx512f"), always_inline)) static inline void
transpose8x16(const __m512 v[8], __m256 out[16]) {
    __m512 t[8], u[8];
#pragma GCC unroll 4
    for (int q = 0; q < 8; q += 2) {
        t[q] = _mm512_unpacklo_ps(v[q], v[q + 1]);
        t[q + 1] = _mm512_unpackhi_ps(v[q], v[q + 1]);
    }
#define PD(x) _mm512_castps_pd(x)
#pragma GCC unroll 2
    for (int h = 0; h < 8; h += 4) {
        u[h] = _mm512_castpd_ps(_mm512_unpacklo_pd(PD(t[h]), PD(t[h + 2])));
        u[h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(PD(t[h]), PD(t[h + 2])));
        u[h + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(PD(t[h + 1]), PD(t[h + 3])));
        u[h + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(PD(t[h + 1]), PD(t[h + 3])));
    }
    /* u[r] (r < 4), 128-bit lane L: elements 0..3 of output row 4L + r; u[4 + r]: 4..7 */
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) {
        __m512 lo = _mm512_shuffle_f32x4(u[r], u[4 + r], _MM_SHUFFLE(1, 0, 1, 0));
        __m512 hi = _mm512_shuffle_f32x4(u[r], u[4 + r], _MM_SHUFFLE(3, 2, 3, 2));
        lo = _mm512_shuffle_f32x4(lo, lo, _MM_SHUFFLE(3, 1, 2, 0)); /* rows r, 4 + r */
        hi = _mm512_shuffle_f32x4(hi, hi, _MM_SHUFFLE(3, 1, 2, 0)); /* rows 8 + r, 12 + r */
        out[r] = _mm512_castps512_ps256(lo);
        out[4 + r] = _mm256_castpd_ps(_mm512_extractf64x4_pd(PD(lo), 1));
        out[8 + r] = _mm512_castps512_ps256(hi);
        out[12 + r] = _mm256_castpd_ps(_mm512_extractf64x4_pd(PD(hi), 1));
    }
#undef PD
}

/* C[i*ldc + j] (+)= v[j][i] for i < ni, j < nj: a tile computed transposed. */
__attribute__((target("avx512f"), always_inline)) static inline void
store_t8x16(const __m512 v[8], float *c, ptrdiff_t ldc, int ni, int nj, int add) {
    __m256 rows[16];
    transpose8x16(v, rows);
    __mmask16 m = mask16(nj);
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) {
        if (i >= ni) continue;
        float *ci = c + i * ldc;
        __m512 x = _mm512_castps256_ps512(rows[i]); /* upper half undefined: masked off */
        if (add) x = _mm512_maskz_add_ps(m, _mm512_maskz_loadu_ps(m, ci), x);
        _mm512_mask_storeu_ps(ci, m, x);
    }
}

/* kernel_t_avx512's sums over k for `halves` (1 or 2) vectors of 16 rows of op(A): a
 * constant where it is inlined, so that a tile's last 16 or fewer rows cost half a tile. */
__attribute__((target("avx512f"), always_inline)) static inline void
kernel_t_sums(int kc, const float *const bj[8], ptrdiff_t ldb, const float *a, __m512 acc[2][8],
              int halves) {
    for (int k = 0; k < kc; k++, a += A512_NR) {
        __m512 av[2];
        for (int h = 0; h < halves; h++) av[h] = _mm512_load_ps(a + 16 * h);
        /* the next call's 8 rows of B, a line of each per 16 k: rows 1-3 KB long, far apart,
         * are too short for the hardware prefetchers, and without this each waited on L3 */
        if (k % 16 == 0)
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++)
                _mm_prefetch((const char *)(bj[j] + 8 * ldb + k), _MM_HINT_T1);
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            /* the same product B(k,j) A(i,k) as the normal kernel's A(i,k) B(k,j) */
            __m512 bk = _mm512_set1_ps(bj[j][k]);
            for (int h = 0; h < halves; h++) acc[h][j] = _mm512_fmadd_ps(bk, av[h], acc[h][j]);
        }
    }
}

__attribute__((target("avx512f"))) static void kernel_t_avx512(int kc, const float *b,
                                                               ptrdiff_t ldb, const float *a,
                                                               float *c, ptrdiff_t ldc, int ni,
                                                               int nj, int add) {
    __m512 acc[2][8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) acc[0][j] = acc[1][j] = _mm512_setzero_ps();
    /* Rows past nj repeat the last valid one (computed, never stored) to stay in bounds. */
    const float *bj[8];
    for (int j = 0; j < 8; j++) bj[j] = b + imin(j, nj - 1) * ldb;
    if (ni <= 16)
        kernel_t_sums(kc, bj, ldb, a, acc, 1);
    else
        kernel_t_sums(kc, bj, ldb, a, acc, 2);
    store_t8x16(acc[0], c, ldc, imin(ni, 16), nj, add);
    if (ni > 16) store_t8x16(acc[1], c + 16 * ldc, ldc, ni - 16, nj, add);
}

/* Packs as pack_panels does, for w a multiple of 8. Rows of a non-transposed operand are
 * copied with vector moves (masked for the last, zero-padded panel); short rows are prefetched
 * a few rows ahead into L2, as with a large stride each is in a different page, where the
 * hardware prefetchers do not reach. A transposed operand goes 8 rows x 16 k at a time through
 * transpose8x16 (rows past n read as zero). */
__attribute__((target("avx512f"))) static int pack_avx512(int trans, int kc, int n, const float *x,
                                                          ptrdiff_t ldx, int w, float *dst) {
    enum { AHEAD = 12 };
    if (w % 8) return 0;
    if (!trans) {
        int whole = n - n % w; /* columns in whole panels */
        for (int k = 0; k < kc; k++) {
            const float *s = x + k * ldx;
            if (n < 512 && k + AHEAD < kc) /* longer rows are left to the hardware */
                for (int j = 0; j < n; j += 16)
                    _mm_prefetch((const char *)(s + AHEAD * ldx + j), _MM_HINT_T1);
            float *d = dst + k * w;
            if (w == 8)
                for (int p = 0; p < whole; p += 8)
                    _mm256_store_ps(d + (ptrdiff_t)p * kc, _mm256_loadu_ps(s + p));
            else if (w % 16 == 0)
                for (int p = 0; p < whole; p += w)
                    for (int j = 0; j < w; j += 16)
                        _mm512_store_ps(d + (ptrdiff_t)p * kc + j, _mm512_loadu_ps(s + p + j));
            else
                whole = 0;
            for (int p = whole; p < n; p += w) /* the last panel, zero-padded */
                for (int j0 = 0; j0 < w; j0 += 16) {
                    int lanes = imin(16, w - j0);
                    __m512 v = _mm512_maskz_loadu_ps(mask16(imin(lanes, n - p - j0)), s + p + j0);
                    _mm512_mask_storeu_ps(d + (ptrdiff_t)p * kc + j0, mask16(lanes), v);
                }
        }
        return 1;
    }
    for (int p = 0; p < n; p += w, dst += w * kc)
        for (int j0 = 0; j0 < w; j0 += 8) {
            int rows = imin(8, n - p - j0), next_rows = imin(8, n - p - j0 - 8);
            const float *s = x + (p + j0) * ldx, *next = next_rows > 0 ? s + 8 * ldx : s;
            for (int k = 0; k < kc; k += 16) {
                __mmask16 m = mask16(kc - k);
                __m512 v[8];
                __m256 out[16];
                /* the next 8 rows' line at this k: the rows are far apart (a dz row of the
                 * output layer is 64 KB), so the hardware does not fetch them ahead, and
                 * without this packing d loss / d z waited on memory */
#pragma GCC unroll 8
                for (int j = 0; j < 8; j++)
                    if (j < next_rows)
                        _mm_prefetch((const char *)(next + j * ldx + k), _MM_HINT_T0);
#pragma GCC unroll 8
                for (int j = 0; j < 8; j++)
                    v[j] =
                        j < rows ? _mm512_maskz_loadu_ps(m, s + j * ldx + k) : _mm512_setzero_ps();
                transpose8x16(v, out);
                float *d = dst + k * w + j0;
#pragma GCC unroll 16
                for (int q = 0; q < 16; q++)
                    if (k + q < kc) _mm256_store_ps(d + q * w, out[q]);
            }
        }
    return 1;
}

/* Stores (or adds) lanes j < w of v to y[j*incy]. */
__attribute__((target("avx512f"))) static inline void store16(float *y, ptrdiff_t incy, __m512 v,
                                                              int w, int add) {
    __mmask16 m = mask16(w);
    if (incy == 1) {
        if (add) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, y), v);
        _mm512_mask_storeu_ps(y, m, v);
    } else {
        float t[16];
        _mm512_storeu_ps(t, v);
        for (int j = 0; j < w; j++) y[j * incy] = add ? y[j * incy] + t[j] : t[j];
    }
}

__attribute__((target("avx512f"))) static void gemv_n_avx512(int n, int K, const float *x,
                                                             ptrdiff_t incx, const float *B,
                                                             ptrdiff_t ldb, int add, float *y,
                                                             ptrdiff_t incy) {
    int j0 = 0;
    for (; j0 + 128 <= n; j0 += 128) /* 8 accumulators: enough independent chains */
        for (int p = 0; p < K; p += KC) {
            __m512 acc[8];
#pragma GCC unroll 8
            for (int v = 0; v < 8; v++) acc[v] = _mm512_setzero_ps();
            for (int k = p; k < imin(p + KC, K); k++) {
                __m512 xk = _mm512_set1_ps(x[k * incx]);
                const float *bk = B + k * ldb + j0;
#pragma GCC unroll 8
                for (int v = 0; v < 8; v++)
                    acc[v] = _mm512_fmadd_ps(xk, _mm512_loadu_ps(bk + 16 * v), acc[v]);
            }
#pragma GCC unroll 8
            for (int v = 0; v < 8; v++)
                store16(y + (j0 + 16 * v) * incy, incy, acc[v], 16, add || p > 0);
        }
    for (; j0 < n; j0 += 16) { /* the same arithmetic, one vector at a time */
        int w = imin(16, n - j0);
        __mmask16 m = mask16(w);
        for (int p = 0; p < K; p += KC) {
            __m512 acc = _mm512_setzero_ps();
            for (int k = p; k < imin(p + KC, K); k++)
                acc = _mm512_fmadd_ps(_mm512_set1_ps(x[k * incx]),
                                      _mm512_maskz_loadu_ps(m, B + k * ldb + j0), acc);
            store16(y + j0 * incy, incy, acc, w, add || p > 0);
        }
    }
}

/* The sums of v0..v3, each in one fixed order: lanes l + 8, then + 4, + 2, + 1 (a tree), with
 * the shuffles shared between the four. */
__attribute__((target("avx512f"), always_inline)) static inline __m128
reduce4(__m512 v0, __m512 v1, __m512 v2, __m512 v3) {
    /* 128-bit lanes of t01: v0 lanes 0..3 + 8..11, 4..7 + 12..15, then the same for v1 */
    __m512 t01 = _mm512_add_ps(_mm512_shuffle_f32x4(v0, v1, _MM_SHUFFLE(1, 0, 1, 0)),
                               _mm512_shuffle_f32x4(v0, v1, _MM_SHUFFLE(3, 2, 3, 2)));
    __m512 t23 = _mm512_add_ps(_mm512_shuffle_f32x4(v2, v3, _MM_SHUFFLE(1, 0, 1, 0)),
                               _mm512_shuffle_f32x4(v2, v3, _MM_SHUFFLE(3, 2, 3, 2)));
    /* 128-bit lane q of u: 4 partial sums of v_q */
    __m512 u = _mm512_add_ps(_mm512_shuffle_f32x4(t01, t23, _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(t01, t23, _MM_SHUFFLE(3, 1, 3, 1)));
    u = _mm512_add_ps(u, _mm512_shuffle_ps(u, u, _MM_SHUFFLE(1, 0, 3, 2)));
    u = _mm512_add_ps(u, _mm512_shuffle_ps(u, u, _MM_SHUFFLE(2, 3, 0, 1)));
    __m512i first = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castps512_ps128(_mm512_permutexvar_ps(first, u));
}

__attribute__((target("avx512f"))) static void dot_avx512(int m, int n, int kc, const float *a,
                                                          ptrdiff_t lda, const float *b,
                                                          ptrdiff_t ldb, int add, float *c,
                                                          ptrdiff_t rsc, ptrdiff_t csc) {
    float r[4];
    if (m == 1) {
        /* A vector: 4 rows of b at a time, one chain each, summed in the same order as the
         * tiles below (a row's result must not depend on how many rows come with it). Only 4
         * row pointers are live: 8 would spill to the stack and cost a load each per step,
         * while 4 chains already outrun the rate at which b streams from L2. */
        for (int j = 0; j < n; j += 4) {
            int rows = imin(4, n - j);
            const float *b0 = b + j * ldb, *b1 = b0 + (rows > 1) * ldb,
                        *b2 = b0 + (rows > 2) * 2 * ldb, *b3 = b0 + (rows > 3) * 3 * ldb;
            __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
            for (int k = 0; k < kc; k += 16) {
                __mmask16 mk = mask16(kc - k);
                __m512 x = _mm512_maskz_loadu_ps(mk, a + k);
                s0 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(mk, b0 + k), s0);
                s1 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(mk, b1 + k), s1);
                s2 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(mk, b2 + k), s2);
                s3 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(mk, b3 + k), s3);
            }
            _mm_storeu_ps(r, reduce4(s0, s1, s2, s3));
            for (int q = 0; q < rows; q++) {
                float *cq = c + (j + q) * csc;
                *cq = add ? *cq + r[q] : r[q];
            }
        }
        return;
    }
    /* 4 x 4 tiles of 16 chains; 4 rows of b stay in L1 while all the rows of a pass by. A b
     * of more than 1 MB comes from L3 (a small one stays in L2, where prefetching only costs) */
    int far = (double)n * kc * sizeof(float) > (1 << 20);
    for (int j = 0; j < n; j += 4) {
        int nj = imin(4, n - j);
        const float *bq[4];
        for (int q = 0; q < 4; q++) bq[q] = b + (j + imin(q, nj - 1)) * ldb;
        for (int i = 0; i < m; i += 4) {
            int mi = imin(4, m - i);
            const float *ap[4];
            for (int q = 0; q < 4; q++) ap[q] = a + (i + imin(q, mi - 1)) * lda;
            __m512 s[4][4];
#pragma GCC unroll 4
            for (int p = 0; p < 4; p++)
#pragma GCC unroll 4
                for (int q = 0; q < 4; q++) s[p][q] = _mm512_setzero_ps();
            for (int k = 0; k < kc; k += 16) {
                __mmask16 mk = mask16(kc - k);
                __m512 av[4], bv[4];
                /* the next 4 rows of b, as the first rows of a pass (see Prefetch) */
                if (i == 0 && far)
#pragma GCC unroll 4
                    for (int q = 0; q < 4; q++)
                        _mm_prefetch((const char *)(bq[q] + 4 * ldb + k), _MM_HINT_T0);
#pragma GCC unroll 4
                for (int q = 0; q < 4; q++) {
                    av[q] = _mm512_maskz_loadu_ps(mk, ap[q] + k);
                    bv[q] = _mm512_maskz_loadu_ps(mk, bq[q] + k);
                }
#pragma GCC unroll 4
                for (int p = 0; p < 4; p++)
#pragma GCC unroll 4
                    for (int q = 0; q < 4; q++) s[p][q] = _mm512_fmadd_ps(av[p], bv[q], s[p][q]);
            }
#pragma GCC unroll 4
            for (int p = 0; p < 4; p++) {
                if (p >= mi) continue;
                _mm_storeu_ps(r, reduce4(s[p][0], s[p][1], s[p][2], s[p][3]));
                for (int q = 0; q < nj; q++) {
                    float *cpq = c + (i + p) * rsc + (j + q) * csc;
                    *cpq = add ? *cpq + r[q] : r[q];
                }
            }
        }
    }
}

static const Isa isa_avx512 = {.set = ISA_AVX512,
                               .mr = A512_MR,
                               .nr = A512_NR,
                               .fma = 1,
                               .in_place_m = 64,
                               .kernel = kernel_avx512,
                               .kernel_t = kernel_t_avx512,
                               .gemv_n = gemv_n_avx512,
                               .dot = dot_avx512,
                               .dot_max_m = 16,
                               .pack = pack_avx512};
#endif /* GEMM_X86 */

/* ---- dispatch ---------------------------------------------------------------------------- */

static const Isa *isa_select(void) {
    const Isa *isa = &isa_generic;
#if GEMM_NEON
    if (cpu_allows(ISA_NEON)) isa = &isa_neon;
#endif
#if GEMM_X86
    if (cpu_allows(ISA_AVX512))
        isa = &isa_avx512;
    else if (cpu_allows(ISA_AVX2))
        isa = &isa_avx2;
#endif
    return isa;
}

/* The one-time dispatch decision (racing first calls reach the same answer). */
static const Isa *isa_get(void) {
    static _Atomic(const Isa *) chosen;
    const Isa *isa = atomic_load_explicit(&chosen, memory_order_acquire);
    if (!isa) {
        isa = isa_select();
        atomic_store_explicit(&chosen, isa, memory_order_release);
    }
    return isa;
}

InstructionSet gemm_kernels(void) {
    return isa_get()->set;
}

int gemm_rows_summed_alike(void) {
    return isa_get()->dot_max_m + 1;
}

/* ---- packing ----------------------------------------------------------------------------- */

/* Packs columns [0, n) of the kc x n matrix X(k, j) = trans ? x[j*ldx + k] : x[k*ldx + j] into
 * panels of w columns, dst[p*kc + k*w + jj] for the panel starting at column p, zero-padding the
 * last. X is op(B) for B panels, op(A)^T for A panels (X(k, i) = op(A)(i, k)). */
static void pack_panels(const Isa *isa, int trans, int kc, int n, const real *x, ptrdiff_t ldx,
                        int w, real *dst) {
    if (isa->pack && isa->pack(trans, kc, n, x, ldx, w, dst)) return;
    for (int p = 0; p < n; p += w) {
        int nw = imin(w, n - p);
        real *d = dst + (ptrdiff_t)p * kc;
        if (trans) {
            for (int jj = 0; jj < nw; jj++) {
                const real *s = x + (p + jj) * ldx;
                for (int k = 0; k < kc; k++) d[k * w + jj] = s[k];
            }
        } else {
            for (int k = 0; k < kc; k++)
                for (int jj = 0; jj < nw; jj++) d[k * w + jj] = x[k * ldx + p + jj];
        }
        for (int k = 0; k < kc && nw < w; k++)
            for (int jj = nw; jj < w; jj++) d[k * w + jj] = 0;
    }
}

/* ---- per-thread buffer ------------------------------------------------------------------- */

/* One 64-byte aligned buffer per thread, allocated on its first product and reused by every
 * later one. It is also registered under a thread-specific key whose destructor frees it when
 * the thread ends (OpenMP ends pool threads when a team shrinks), so nothing leaks; the key is
 * created once, like the dispatch decision. NULL when the allocation fails. */
static pthread_key_t ws_key;
static int ws_key_ok;

static void ws_key_create(void) {
    ws_key_ok = pthread_key_create(&ws_key, free) == 0;
}

static real *workspace(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    static _Thread_local real *ws;
    if (!ws) {
        pthread_once(&once, ws_key_create);
        ws = aligned_alloc(64, WS_ELEMS * sizeof(real));
        /* without the key the buffer still works; it is only not freed at thread exit */
        if (ws && ws_key_ok) pthread_setspecific(ws_key, ws);
    }
    return ws;
}

/* ---- the parts of a product -------------------------------------------------------------- */

typedef struct {
    int ta, tb, K, add;
    const real *A, *B;
    ptrdiff_t lda, ldb, ldc;
    real *C;
} Problem;

/* Pointers to op(A)(i, k) and op(B)(k, j). */
static inline const real *at_a(const Problem *p, int i, int k) {
    return p->ta ? p->A + k * p->lda + i : p->A + i * p->lda + k;
}
static inline const real *at_b(const Problem *p, int k, int j) {
    return p->tb ? p->B + j * p->ldb + k : p->B + k * p->ldb + j;
}

/* Rows [m0, m1) x columns [n0, n1) of C without packing, with exactly the kernels' arithmetic
 * (same K blocks, same order, FMA or not). Only for a thread that has no buffer. */
static void part_fallback(const Isa *isa, const Problem *p, int m0, int m1, int n0, int n1) {
    for (int i = m0; i < m1; i++)
        for (int j = n0; j < n1; j++) {
            real *c = p->C + i * p->ldc + j;
            for (int pc = 0; pc < p->K; pc += KC) {
                real s = 0;
                for (int k = pc; k < imin(pc + KC, p->K); k++) {
                    real a = *at_a(p, i, k), b = *at_b(p, k, j);
#if GEMM_X86 || GEMM_NEON
                    if (isa->fma) {
                        s = fmaf(a, b, s);
                        continue;
                    }
#endif
                    s += a * b;
                }
                *c = p->add || pc > 0 ? *c + s : s;
            }
        }
    (void)isa;
}

/* Work handed out to threads as they come for it, instead of a fixed share each: on a shared
 * VM one core is often slower than the other for seconds at a time, and a fixed half then
 * kept the faster thread waiting at the end of each output-layer product. Each claim takes a
 * share of what is left (half of it divided among the threads, as OpenMP's guided schedule
 * does), so that the first claims are long runs and only the last ones short. A unit is
 * computed the same whichever thread takes it. */
typedef struct {
    atomic_int next; /* the first unit not yet taken */
} Claims;

/* Takes the next run of units of [0, units) for the caller: returns its length (0 when all
 * are taken) and its first unit in *first. Runs are at least min_run units long. */
static int claim(Claims *claims, int units, int parts, int min_run, int *first) {
    int at = atomic_load_explicit(&claims->next, memory_order_relaxed), run;
    do {
        if (at >= units) return 0;
        run = imin(units - at, imax(min_run, (units - at) / (2 * parts)));
    } while (!atomic_compare_exchange_weak_explicit(&claims->next, &at, at + run,
                                                    memory_order_relaxed, memory_order_relaxed));
    *first = at;
    return run;
}

/* The blocked product for rows [m0, m1) x columns [n0, n1). */
static void part_blocked(const Isa *isa, const Problem *p, int m0, int m1, int n0, int n1,
                         real *ws) {
    int MR = isa->mr, NR = isa->nr, mc_max = MC - MC % MR;
    /* Few rows: B's elements are used too few times to repay a copy, at least while that
     * part of B is small enough to be in cache (a large one is read faster by the packing
     * loop's long sequential rows). Whole panels are then read in place, and only a narrower
     * last one is packed. */
    int in_place = !p->tb && m1 - m0 <= isa->in_place_m &&
                   (double)imin(KC, p->K) * (n1 - n0) * sizeof(real) <= IN_PLACE_MAX_BYTES;
    real *bbuf = ws, *abuf = ws + WS_B_ELEMS;
    for (int pc = 0; pc < p->K; pc += KC) {
        int kc = imin(KC, p->K - pc), add = p->add || pc > 0;
        for (int jc = n0; jc < n1; jc += NC) {
            int nc = imin(NC, n1 - jc), whole = in_place ? nc - nc % NR : 0;
            pack_panels(isa, p->tb, kc, nc - whole, at_b(p, pc, jc + whole), p->ldb, NR,
                        bbuf + (ptrdiff_t)whole * kc);
            for (int ic = m0; ic < m1; ic += mc_max) {
                int mc = imin(mc_max, m1 - ic);
                pack_panels(isa, !p->ta, kc, mc, at_a(p, ic, pc), p->lda, MR, abuf);
                for (int ir = 0; ir < mc; ir += MR) {
                    /* this A micro-panel stays in L1 while the B panels stream from L2 */
                    const real *a = abuf + (ptrdiff_t)ir * kc;
                    real *c = p->C + (ic + ir) * p->ldc + jc;
                    int mr = imin(MR, mc - ir);
                    for (int jr = 0; jr < nc; jr += NR) {
                        int nr = imin(NR, nc - jr);
                        if (jr < whole)
                            isa->kernel(kc, a, at_b(p, pc, jc + jr), p->ldb, c + jr, p->ldc, mr, nr,
                                        add);
                        else
                            isa->kernel(kc, a, bbuf + (ptrdiff_t)jr * kc, NR, c + jr, p->ldc, mr,
                                        nr, add);
                    }
                }
            }
        }
    }
}

/* part_blocked for when every K block of op(B)'s columns [n0, n1) fits the B buffer at once
 * (few columns, K of a few hundred: the weight gradients, above all the output layer's, where C
 * is Vt x O and K the batch's tokens). op(B) is packed first, whole (k_inside_pack_b), and the
 * K loop goes inside the row loop (k_inside_rows): each block of C rows then stays in cache
 * across the K blocks instead of going to memory and back once per K block. Every sum is the
 * same, in the same order. */
static ptrdiff_t k_inside_padded(const Isa *isa, int n) {
    return (ptrdiff_t)(n + isa->nr - 1) / isa->nr * isa->nr;
}

/* Whether every K block of n columns of op(B) fits the B buffer at once. */
static int k_inside_fits(const Isa *isa, const Problem *p, int n) {
    return p->K > KC && k_inside_padded(isa, n) * p->K <= (ptrdiff_t)WS_B_ELEMS;
}

static void k_inside_pack_b(const Isa *isa, const Problem *p, int n0, int n1, real *ws) {
    ptrdiff_t padded = k_inside_padded(isa, n1 - n0);
    for (int pc = 0; pc < p->K; pc += KC)
        pack_panels(isa, p->tb, imin(KC, p->K - pc), n1 - n0, at_b(p, pc, n0), p->ldb, isa->nr,
                    ws + pc * padded);
}

/* Rows [m0, m1) x columns [n0, n1) from panels, op(B)'s columns [n0, n1) packed whole as
 * k_inside_pack_b packs them; op(A) is packed into abuf (MC_K_INSIDE x KC). Each A micro-panel
 * stays in L1 while the block's B panels stream past it; or, with panel_outer and rows that
 * fit one A block, each B panel is read once, into L1, for all of them (for panels larger
 * than L2, shared by the threads: a time step's weights). */
static void rows_from_panels(const Isa *isa, const Problem *p, int m0, int m1, int n0, int n1,
                             const real *panels, real *abuf, int panel_outer) {
    int MR = isa->mr, NR = isa->nr, mc_max = MC_K_INSIDE - MC_K_INSIDE % MR, n = n1 - n0;
    int one_block = panel_outer && m1 - m0 <= mc_max;
    ptrdiff_t padded = k_inside_padded(isa, n);
    for (int ic = m0; ic < m1; ic += mc_max) {
        int mc = imin(mc_max, m1 - ic);
        for (int pc = 0; pc < p->K; pc += KC) {
            int kc = imin(KC, p->K - pc), add = p->add || pc > 0;
            const real *bblock = panels + pc * padded;
            pack_panels(isa, !p->ta, kc, mc, at_a(p, ic, pc), p->lda, MR, abuf);
            for (int outer = 0; outer < (one_block ? n : mc); outer += one_block ? NR : MR)
                for (int inner = 0; inner < (one_block ? mc : n); inner += one_block ? MR : NR) {
                    int ir = one_block ? inner : outer, jr = one_block ? outer : inner;
                    isa->kernel(kc, abuf + (ptrdiff_t)ir * kc, bblock + (ptrdiff_t)jr * kc, NR,
                                p->C + (ic + ir) * p->ldc + n0 + jr, p->ldc, imin(MR, mc - ir),
                                imin(NR, n - jr), add);
                }
        }
    }
}

static void k_inside_rows(const Isa *isa, const Problem *p, int m0, int m1, int n0, int n1,
                          real *ws) {
    rows_from_panels(isa, p, m0, m1, n0, n1, ws, ws + WS_B_ELEMS, 0);
}

/* C^T = op(B)^T op(A)^T, for B transposed and at most SWAP_MAX_M rows: rows [m0, m1) x
 * columns [n0, n1). op(A)^T is packed (it is small); the rows of B are read in place. */
static void part_swapped(const Isa *isa, const Problem *p, int m0, int m1, int n0, int n1,
                         real *ws) {
    int NR = isa->nr, m = m1 - m0;
    for (int pc = 0; pc < p->K; pc += KC) {
        int kc = imin(KC, p->K - pc), add = p->add || pc > 0;
        /* op(A)^T(k, i) = op(A)(i, k): stored transposed exactly when A is not */
        pack_panels(isa, !p->ta, kc, m, at_a(p, m0, pc), p->lda, NR, ws);
        for (int j = n0; j < n1; j += 8)
            for (int i = 0; i < m; i += NR)
                isa->kernel_t(kc, at_b(p, pc, j), p->ldb, ws + (ptrdiff_t)i * kc,
                              p->C + (m0 + i) * p->ldc + j, p->ldc, imin(NR, m - i),
                              imin(8, n1 - j), add);
    }
}

/* Threads for `work` multiply-adds: one below the threshold or inside a parallel region (the
 * caller has shared out the work already), else all. Never a number in between: OpenMP ends
 * pool threads when a team shrinks and starts new ones (each needing a new buffer) when it
 * grows again. With one thread no region is entered at all (see worth_parallel). */
static int threads_for(double work) {
    return worth_parallel(work, 2.0 * WORK_PER_THREAD) ? omp_get_max_threads() : 1;
}

/* Part t of `parts` of a blocked product: the longer side of C is split, and every thread
 * packs all of the other side's operand. Where that side is long (CLAIMED_BLOCKS blocks a
 * thread or more) and a run of it costs no more packing than a fixed share, runs of it are
 * claimed instead (see Claims): the columns of a product whose K is one block (the output
 * layer's W_out o), the rows of a k-inside product (its weight gradient). */
enum { CLAIMED_BLOCKS = 3 };
static void blocked_share(const Isa *isa, const Problem *p, int M, int N, int t, int parts,
                          Claims *claims) {
    int swapped = isa->kernel_t && p->tb && M <= SWAP_MAX_M;
    int split_n = swapped || M <= N;
    int unit = swapped ? 8 : split_n ? isa->nr : isa->mr;
    int claim_columns =
        claims && !swapped && split_n && p->K <= KC && N >= CLAIMED_BLOCKS * parts * NC;
    int claim_rows =
        claims && !split_n && k_inside_fits(isa, p, N) && M >= CLAIMED_BLOCKS * parts * MC_K_INSIDE;
    real *ws = workspace();
    if (claim_columns || claim_rows) {
        /* runs of whole panels (columns) or micro-panels (rows), at least a quarter block */
        int side = claim_columns ? N : M, units = (side + unit - 1) / unit;
        int min_run = (claim_columns ? NC : MC_K_INSIDE) / 4 / unit, first, run;
        if (claim_rows && ws) k_inside_pack_b(isa, p, 0, N, ws);
        while ((run = claim(claims, units, parts, min_run, &first)) > 0) {
            int lo = first * unit, hi = imin(side, (first + run) * unit);
            int m0 = claim_rows ? lo : 0, m1 = claim_rows ? hi : M;
            int n0 = claim_columns ? lo : 0, n1 = claim_columns ? hi : N;
            if (!ws)
                part_fallback(isa, p, m0, m1, n0, n1);
            else if (claim_columns)
                part_blocked(isa, p, m0, m1, n0, n1, ws);
            else
                k_inside_rows(isa, p, m0, m1, n0, n1, ws);
        }
        return;
    }

    int m0 = 0, m1 = M, n0 = 0, n1 = N;
    if (split_n)
        share_range(N, unit, t, parts, &n0, &n1);
    else
        share_range(M, unit, t, parts, &m0, &m1);
    if (m0 >= m1 || n0 >= n1) return;
    if (!ws)
        part_fallback(isa, p, m0, m1, n0, n1);
    else if (swapped)
        part_swapped(isa, p, m0, m1, n0, n1, ws);
    else if (m1 - m0 > isa->in_place_m && k_inside_fits(isa, p, n1 - n0)) {
        k_inside_pack_b(isa, p, n0, n1, ws);
        k_inside_rows(isa, p, m0, m1, n0, n1, ws);
    } else
        part_blocked(isa, p, m0, m1, n0, n1, ws);
}

static void gemm_blocked(const Isa *isa, const Problem *p, int M, int N) {
    int nt = threads_for((double)M * N * p->K);
    Claims claims = {.next = 0};
    if (nt == 1) {
        blocked_share(isa, p, M, N, 0, 1, NULL);
        return;
    }
#pragma omp parallel num_threads(nt)
    blocked_share(isa, p, M, N, omp_get_thread_num(), omp_get_num_threads(), &claims);
}

/* y[j*incy] (+)= sum_k x[k*incx] B[k*ldb + j] for j < n: M == 1 with B not transposed, or
 * N == 1 with A transposed. Threads take ranges of j. */
static void gemv(const Isa *isa, int n, int K, const real *x, ptrdiff_t incx, const real *B,
                 ptrdiff_t ldb, int add, real *y, ptrdiff_t incy) {
    int nt = threads_for((double)n * K);
    if (nt == 1) {
        isa->gemv_n(n, K, x, incx, B, ldb, add, y, incy);
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        int j0, j1;
        share_range(n, 16, omp_get_thread_num(), omp_get_num_threads(), &j0, &j1);
        if (j0 < j1) isa->gemv_n(j1 - j0, K, x, incx, B + j0, ldb, add, y + j0 * incy, incy);
    }
}

/* Columns [j0, j1) of a dot-product product (see gemm_dot). */
static void dot_share(const Isa *isa, int m, int j0, int j1, int K, const real *x, ptrdiff_t rsx,
                      ptrdiff_t csx, const real *y, ptrdiff_t ldy, int add, real *c, ptrdiff_t rsc,
                      ptrdiff_t csc) {
    real rows[DOT_ROWS * DOT_CHUNK];
    for (int k0 = 0; k0 < K && j0 < j1; k0 += DOT_CHUNK) {
        int kc = imin(DOT_CHUNK, K - k0), addk = add || k0 > 0;
        const real *yk = y + j0 * ldy + k0;
        real *cj = c + j0 * csc;
        if (csx == 1) {
            isa->dot(m, j1 - j0, kc, x + k0, rsx, yk, ldy, addk, cj, rsc, csc);
            continue;
        }
        for (int i0 = 0; i0 < m; i0 += DOT_ROWS) {
            int mi = imin(DOT_ROWS, m - i0);
            for (int i = 0; i < mi; i++)
                for (int k = 0; k < kc; k++)
                    rows[i * DOT_CHUNK + k] = x[(i0 + i) * rsx + (k0 + k) * csx];
            isa->dot(mi, j1 - j0, kc, rows, DOT_CHUNK, yk, ldy, addk, cj + i0 * rsc, rsc, csc);
        }
    }
}

/* C(i, j) (+)= sum_k X(i, k) Y(j, k) for i < m, j < n: rows of Y are rows of B (or of A, for
 * N == 1), X(i, k) = x[i*rsx + k*csx], C(i, j) = c[i*rsc + j*csc]. K goes in chunks of
 * DOT_CHUNK; rows of X that are not contiguous are first copied. Threads take ranges of j. */
static void gemm_dot(const Isa *isa, int m, int n, int K, const real *x, ptrdiff_t rsx,
                     ptrdiff_t csx, const real *y, ptrdiff_t ldy, int add, real *c, ptrdiff_t rsc,
                     ptrdiff_t csc) {
    int nt = threads_for((double)m * n * K);
    if (nt == 1) {
        dot_share(isa, m, 0, n, K, x, rsx, csx, y, ldy, add, c, rsc, csc);
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        int j0, j1;
        share_range(n, 8, omp_get_thread_num(), omp_get_num_threads(), &j0, &j1);
        dot_share(isa, m, j0, j1, K, x, rsx, csx, y, ldy, add, c, rsc, csc);
    }
}

void gemm(GemmOp trans_a, GemmOp trans_b, int M, int N, int K, const real *A, int lda,
          const real *B, int ldb, real beta, real *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    int add = beta != 0;
    if (K <= 0) {
        if (!add)
            for (int i = 0; i < M; i++) memset(C + (ptrdiff_t)i * ldc, 0, sizeof(real) * N);
        return;
    }
    const Isa *isa = isa_get();
    /* op(A)(i, k) = A[i*rsa + k*csa] */
    ptrdiff_t rsa = trans_a ? 1 : lda, csa = trans_a ? lda : 1;
    ptrdiff_t rsb = trans_b ? 1 : ldb;  /* rows of op(B), used when N == 1 */
    if (trans_b && M <= isa->dot_max_m) /* row(s) of op(A) dotted with rows of B */
        gemm_dot(isa, M, N, K, A, rsa, csa, B, ldb, add, C, ldc, 1);
    else if (M == 1) /* op(A) is a vector x: c = x op(B), vectors along the rows of B */
        gemv(isa, N, K, A, csa, B, ldb, add, C, 1);
    else if (N == 1 && !trans_a) /* c^T = x^T op(A)^T, x the column op(B): rows of A dotted */
        gemm_dot(isa, 1, M, K, B, 0, rsb, A, lda, add, C, 0, ldc);
    else if (N == 1) /* the same along the rows of A, which is stored [K,M] */
        gemv(isa, M, K, B, rsb, A, lda, add, C, ldc);
    else
        gemm_blocked(isa, &(Problem){trans_a, trans_b, K, add, A, B, lda, ldb, ldc, C}, M, N);
}

/* ---- op(B) packed once ---------------------------------------------------------------- */

size_t gemm_panels_size(int K, int N) {
    return (size_t)k_inside_padded(isa_get(), N) * (size_t)(K > 0 ? K : 0);
}

/* Whether gemm_packed() reads the panels for a product of M rows: where gemm() would copy
 * op(B), and for a transposed B wherever there is no C^T kernel to read it in place, since the
 * dot products that gemm() takes for few rows sum them differently (see Determinism). */
static int packed_reads_panels(const Isa *isa, int M, GemmOp op_b) {
    if (op_b) return !(isa->kernel_t && M <= SWAP_MAX_M);
    return M > 1 && M > isa->in_place_m;
}

void gemm_pack(GemmPanels *p, GemmOp op_b, int K, int N, const real *B, int ldb, int most_rows,
               real *panels) {
    const Isa *isa = isa_get();
    if (!packed_reads_panels(isa, most_rows, op_b)) panels = NULL;
    *p = (GemmPanels){.op = op_b, .K = K, .N = N, .b = B, .ldb = ldb, .panels = panels};
    if (!panels) return;
    ptrdiff_t padded = k_inside_padded(isa, N);
    for (int pc = 0; pc < K; pc += KC) /* op(B)(k, 0) = B[k*ldb], or B[k] when transposed */
        pack_panels(isa, op_b, imin(KC, K - pc), N, B + (op_b ? pc : (ptrdiff_t)pc * ldb), ldb,
                    isa->nr, panels + pc * padded);
}

/* Part t of `parts` of gemm_packed's rows. */
static void packed_share(const Isa *isa, const Problem *prob, int M, const GemmPanels *p, int t,
                         int parts) {
    int m0, m1;
    real *ws = workspace();
    share_range(M, isa->mr, t, parts, &m0, &m1);
    if (m0 >= m1) return;
    if (ws)
        rows_from_panels(isa, prob, m0, m1, 0, p->N, p->panels, ws + WS_B_ELEMS, 1);
    else
        part_fallback(isa, prob, m0, m1, 0, p->N);
}

void gemm_packed(GemmOp op_a, int M, const real *A, int lda, const GemmPanels *p, real beta,
                 real *C, int ldc) {
    const Isa *isa = isa_get();
    if (M <= 0 || p->N <= 0 || p->K <= 0) {
        gemm(op_a, p->op, M, p->N, p->K, A, lda, p->b, p->ldb, beta, C, ldc);
        return;
    }
    Problem prob = {op_a, p->op, p->K, beta != 0, A, p->b, lda, p->ldb, ldc, C};
    if (!p->panels || !packed_reads_panels(isa, M, p->op)) {
        /* B read in place or copied now, never dotted (one row of an untransposed B: gemm()'s
         * vector-matrix loop, which sums alike) */
        if (M == 1 && !p->op)
            gemm(op_a, p->op, M, p->N, p->K, A, lda, p->b, p->ldb, beta, C, ldc);
        else
            gemm_blocked(isa, &prob, M, p->N);
        return;
    }
    int nt = threads_for((double)M * p->N * p->K);
    if (nt == 1) {
        packed_share(isa, &prob, M, p, 0, 1);
        return;
    }
#pragma omp parallel num_threads(nt)
    packed_share(isa, &prob, M, p, omp_get_thread_num(), omp_get_num_threads());
}

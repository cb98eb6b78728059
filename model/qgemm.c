/*
 * qgemm.c: int8 products for decoding (see qgemm.h).
 *
 * The unit of work is a "dots" kernel: one weight row against up to QROWS activation rows,
 * each weight vector loaded once and used for every activation row. Decoding multiplies a
 * few rows by many weight rows, so what matters is streaming the weights; a quarter of the
 * float weights' bytes is where int8 gets its speed.
 *
 * AVX2 has VPMADDUBSW (u8 x s8 -> s16 pair sums), but its int16 sums saturate (2 x 255 x 127
 * > 32767); the kernel here widens both operands to int16 and uses VPMADDWD, whose int32 pair
 * sums cannot overflow. AVX-512 VNNI's VPDPBUSD multiplies u8 by s8 into int32 without
 * saturation: activations are offset by 128 (x + 128 in [1, 255]) and 128 sum_k w_k, formed
 * by the same instruction with a constant 128, is subtracted.
 */
#include "qgemm.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define QGEMM_X86 1
#include <immintrin.h>
#else
#define QGEMM_X86 0
#endif

/* Activation rows per kernel call. */
enum { QROWS = 4 };

/* out[r] = sum_{k < K} x[r * ldx + k] * w[k] for r < m (m <= QROWS). */
typedef void DotsFn(int K, const int8_t *x, int ldx, int m, const int8_t *w, int32_t *out);

typedef struct {
    const char *name;
    DotsFn *dots;
} QIsa;

static void dots_generic(int K, const int8_t *x, int ldx, int m, const int8_t *w, int32_t *out) {
    for (int r = 0; r < m; r++) {
        const int8_t *xr = x + (size_t)r * ldx;
        int32_t sum = 0;
        for (int k = 0; k < K; k++) sum += (int32_t)xr[k] * w[k];
        out[r] = sum;
    }
}

static const QIsa qisa_generic = {.name = "generic", .dots = dots_generic};

#if QGEMM_X86
__attribute__((target("avx2"))) static int32_t hsum8_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* 16 bytes at a time widened to int16: VPMADDWD's pair sums (at most 2 x 127 x 127) fit. */
__attribute__((target("avx2"))) static void dots_avx2(int K, const int8_t *x, int ldx, int m,
                                                      const int8_t *w, int32_t *out) {
    __m256i acc[QROWS];
    for (int r = 0; r < QROWS; r++) acc[r] = _mm256_setzero_si256();
    int k = 0;
    for (; k + 16 <= K; k += 16) {
        __m256i wv = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(w + k)));
        for (int r = 0; r < m; r++) {
            __m256i xv =
                _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(x + (size_t)r * ldx + k)));
            acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(xv, wv));
        }
    }
    for (int r = 0; r < m; r++) {
        const int8_t *xr = x + (size_t)r * ldx;
        int32_t sum = hsum8_epi32(acc[r]);
        for (int j = k; j < K; j++) sum += (int32_t)xr[j] * w[j];
        out[r] = sum;
    }
}

static const QIsa qisa_avx2 = {.name = "avx2", .dots = dots_avx2};

/* 64 bytes at a time; the tail through a byte mask (masked-off bytes load as zero: the
 * weights' zeros make their products vanish from both sums). */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
dots_avx512vnni(int K, const int8_t *x, int ldx, int m, const int8_t *w, int32_t *out) {
    const __m512i offset = _mm512_set1_epi8((char)0x80); /* x ^ 0x80 = x + 128 as u8 */
    __m512i acc[QROWS], corr = _mm512_setzero_si512();
    for (int r = 0; r < QROWS; r++) acc[r] = _mm512_setzero_si512();
    for (int k = 0; k < K; k += 64) {
        __mmask64 mask = K - k >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (K - k)) - 1;
        __m512i wv = _mm512_maskz_loadu_epi8(mask, w + k);
        corr = _mm512_dpbusd_epi32(corr, offset, wv);
        for (int r = 0; r < m; r++) {
            __m512i xv = _mm512_maskz_loadu_epi8(mask, x + (size_t)r * ldx + k);
            acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_xor_si512(xv, offset), wv);
        }
    }
    int32_t c = _mm512_reduce_add_epi32(corr);
    for (int r = 0; r < m; r++) out[r] = _mm512_reduce_add_epi32(acc[r]) - c;
}

static const QIsa qisa_avx512vnni = {.name = "avx512vnni", .dots = dots_avx512vnni};
#endif

static int cpu_runs(const QIsa *isa) {
#if QGEMM_X86
    __builtin_cpu_init();
    if (isa == &qisa_avx512vnni)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vnni");
    if (isa == &qisa_avx2) return __builtin_cpu_supports("avx2");
#endif
    return isa == &qisa_generic;
}

static const QIsa *qisa_named(const char *name) {
    if (!strcmp(name, "generic")) return &qisa_generic;
#if QGEMM_X86
    if (!strcmp(name, "avx2")) return &qisa_avx2;
    if (!strcmp(name, "avx512vnni")) return &qisa_avx512vnni;
#endif
    return NULL;
}

int qgemm_supported(const char *name) {
    const QIsa *isa = qisa_named(name);
    return isa && cpu_runs(isa);
}

static const QIsa *qisa_select(void) {
#if QGEMM_X86
    /* the same cap as gemm's: NMT_GEMM_ISA=avx2 or generic (any other value is ignored) */
    const char *force = getenv("NMT_GEMM_ISA");
    int cap = !force ? 2 : !strcmp(force, "generic") ? 0 : !strcmp(force, "avx2") ? 1 : 2;
    if (cap >= 2 && cpu_runs(&qisa_avx512vnni)) return &qisa_avx512vnni;
    if (cap >= 1 && cpu_runs(&qisa_avx2)) return &qisa_avx2;
#endif
    return &qisa_generic;
}

/* The one-time dispatch decision (racing first calls reach the same answer). */
static const QIsa *qisa_get(void) {
    static _Atomic(const QIsa *) chosen;
    const QIsa *isa = atomic_load_explicit(&chosen, memory_order_acquire);
    if (!isa) {
        isa = qisa_select();
        atomic_store_explicit(&chosen, isa, memory_order_release);
    }
    return isa;
}

const char *qgemm_kernels(void) {
    return qisa_get()->name;
}

int qgemm_s8(const char *name, int M, int N, int K, const int8_t *x, int ldx, const int8_t *w,
             int ldw, int32_t *acc, int ldc) {
    const QIsa *isa = name ? qisa_named(name) : qisa_get();
    if (!isa || !cpu_runs(isa)) return -1;
    for (int j = 0; j < N; j++)
        for (int r0 = 0; r0 < M; r0 += QROWS) {
            int m = M - r0 < QROWS ? M - r0 : QROWS;
            int32_t out[QROWS];
            isa->dots(K, x + (size_t)r0 * ldx, ldx, m, w + (size_t)j * ldw, out);
            for (int r = 0; r < m; r++) acc[(size_t)(r0 + r) * ldc + j] = out[r];
        }
    return 0;
}

void qlinear_columns(real *y, int ldy, const int8_t *xq, int ldxq, const float *xs,
                     const QMatrix *w, int col0, const real *b, int rows, int in, int lo, int hi,
                     int accumulate) {
    DotsFn *dots = qisa_get()->dots;
    for (int j = lo; j < hi; j++) {
        const int8_t *wj = w->q + (size_t)j * w->cols + col0;
        float ws = w->scale[j];
        real bias = b ? b[j] : 0;
        for (int r0 = 0; r0 < rows; r0 += QROWS) {
            int m = rows - r0 < QROWS ? rows - r0 : QROWS;
            int32_t out[QROWS];
            dots(in, xq + (size_t)r0 * ldxq, ldxq, m, wj, out);
            for (int r = 0; r < m; r++) {
                real *yr = y + (size_t)(r0 + r) * ldy + j;
                real v = (real)(xs[r0 + r] * ws * (float)out[r]) + bias;
                *yr = accumulate ? *yr + v : v;
            }
        }
    }
}

/*
 * qgemm.c: int8 products for decoding (see qgemm.h).
 *
 * Decoding multiplies a few activation rows by many weight rows, so what matters is streaming
 * the weights, a quarter of the float weights' bytes. A kernel computes one block of output
 * features for up to MR activation rows: each packed weight vector is loaded once and used for
 * every row, and each lane accumulates one feature, so the sums come out of the registers as
 * they are (a kernel over plain rows would need a horizontal sum per feature and row).
 */
#include "model/qgemm.h"
#include "model/qgemm_isa.h"

#include "base/cpu.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define QGEMM_X86 1
#include <immintrin.h>
#else
#define QGEMM_X86 0
#endif


/* ---- generic: one feature per block, rows as stored (padded to whole groups) ---------- */

static void tile_generic(const QPacked *p, int jb, int m, const int8_t *x, int ldx, int32_t *tile) {
    int K = p->groups * GROUP;
    const int8_t *w = p->w + (size_t)jb * K;
    for (int r = 0; r < m; r++) {
        const int8_t *xr = x + (size_t)r * ldx;
        int32_t sum = 0;
        for (int k = 0; k < p->in; k++) sum += (int32_t)xr[k] * w[k];
        tile[r] = sum;
    }
}

static const QIsa qisa_generic = {.set = ISA_PORTABLE, .block = 1, .tile = tile_generic};

#if QGEMM_X86
/* The 4 activation bytes of group g of a row, as one 32-bit lane value. */
static inline int32_t x_group(const int8_t *x, int g) {
    int32_t v;
    memcpy(&v, x + (size_t)g * GROUP, sizeof v);
    return v;
}

/* ---- avx2: blocks of 8 features x 4 inputs ---------------------------------------------- */

__attribute__((target("avx2"))) static void tile_avx2(const QPacked *p, int jb, int m,
                                                      const int8_t *x, int ldx, int32_t *tile) {
    const int8_t *w = p->w + (size_t)jb * p->groups * 32;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[MR];
    for (int r = 0; r < MR; r++) acc[r] = _mm256_setzero_si256();
    for (int g = 0; g < p->groups; g++) {
        __m256i wv = _mm256_load_si256((const __m256i *)(w + (size_t)g * 32));
        for (int r = 0; r < m; r++) {
            __m256i xv = _mm256_set1_epi32(x_group(x + (size_t)r * ldx, g));
            /* |x| * (w with x's sign): u8 x s8 pairs of at most 2 x 127 x 127, no saturation */
            __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(xv), _mm256_sign_epi8(wv, xv));
            acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(pairs, ones));
        }
    }
    for (int r = 0; r < m; r++) _mm256_storeu_si256((__m256i *)(tile + (size_t)r * 8), acc[r]);
}

static const QIsa qisa_avx2 = {.set = ISA_AVX2, .block = 8, .tile = tile_avx2};

/* ---- avx512vnni: blocks of 16 features x 4 inputs ----------------------------------------- */

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
tile_avx512vnni(const QPacked *p, int jb, int m, const int8_t *x, int ldx, int32_t *tile) {
    const int8_t *w = p->w + (size_t)jb * p->groups * 64;
    const __m512i offset = _mm512_set1_epi8((char)0x80); /* x ^ 0x80 = x + 128 as u8 */
    __m512i acc[MR];
    for (int r = 0; r < MR; r++) acc[r] = _mm512_setzero_si512();
    for (int g = 0; g < p->groups; g++) {
        __m512i wv = _mm512_load_si512((const void *)(w + (size_t)g * 64));
        for (int r = 0; r < m; r++) {
            __m512i xv = _mm512_set1_epi32(x_group(x + (size_t)r * ldx, g));
            acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_xor_si512(xv, offset), wv);
        }
    }
    __m512i correction = _mm512_loadu_si512((const void *)(p->correction + (size_t)jb * 16));
    for (int r = 0; r < m; r++)
        _mm512_storeu_si512((void *)(tile + (size_t)r * 16), _mm512_sub_epi32(acc[r], correction));
}

static const QIsa qisa_avx512vnni = {.set = ISA_AVX512_VNNI, .block = 16, .tile = tile_avx512vnni};
#endif

/* ---- dispatch ---------------------------------------------------------------------------- */

/* The kernels of `set`, or NULL when there are none. */
static const QIsa *qisa_of(InstructionSet set) {
    switch (set) {
    case ISA_PORTABLE:
        return &qisa_generic;
#if QGEMM_X86
    case ISA_AVX2:
        return &qisa_avx2;
    case ISA_AVX512_VNNI:
        return &qisa_avx512vnni;
#endif
#if QGEMM_NEON
    case ISA_NEON:
    case ISA_DOTPROD:
    case ISA_I8MM:
        return qisa_arm(set);
#endif
    default:
        return NULL;
    }
}

int qgemm_supported(InstructionSet set) {
    return qisa_of(set) && cpu_runs(set);
}

/* The one-time dispatch decision: the best kernels cpu_allows(). */
InstructionSet qgemm_kernels(void) {
    static atomic_int chosen = -1;
    int set = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (set < 0) {
        set = ISA_PORTABLE;
        for (int s = ISA_PORTABLE + 1; s < ISA_COUNT; s++)
            if (qisa_of((InstructionSet)s) && cpu_allows((InstructionSet)s)) set = s;
        atomic_store_explicit(&chosen, set, memory_order_relaxed);
    }
    return (InstructionSet)set;
}

/* ---- packing ------------------------------------------------------------------------------ */

int qpack_row_room(int in) {
    return (in + GROUP - 1) / GROUP * GROUP;
}

static void *aligned_zeroed(size_t bytes, const char *what, Error *err) {
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p) {
        error_set(err, "out of memory for %s (%zu bytes)", what, rounded);
        return NULL;
    }
    memset(p, 0, rounded ? rounded : 64);
    return p;
}

int qpack(QPacked *p, InstructionSet set, const QMatrix *w, int col0, int in, Error *err) {
    memset(p, 0, sizeof *p);
    const QIsa *isa = qisa_of(set);
    if (!isa || !cpu_runs(set))
        return error_set(err, "this CPU cannot run int8 kernels for '%s'", isa_name(set));
    int block = isa->block, out = w->rows, blocks = (out + block - 1) / block;
    int groups = (in + GROUP - 1) / GROUP;
    *p = (QPacked){
        .isa = set, .out = out, .in = in, .block = block, .groups = groups, .scale = w->scale};
    size_t values = (size_t)blocks * block * groups * GROUP;
    p->w = aligned_zeroed(values, "packed int8 weights", err);
    if (!p->w) return -1;
    for (int j = 0; j < out; j++)
        for (int k = 0; k < in; k++) {
            int jb = j / block, jj = j % block, g = k / GROUP, kk = k % GROUP;
            size_t at = (((size_t)jb * groups + g) * block + jj) * GROUP + kk;
            p->w[at] = w->q[(size_t)j * w->cols + col0 + k];
        }
    if (isa->block == 16) { /* avx512vnni's offset: 128 sum_k w_jk, per padded block */
        p->correction =
            aligned_zeroed(sizeof(int32_t) * (size_t)blocks * block, "int8 corrections", err);
        if (!p->correction) {
            qpacked_free(p);
            return -1;
        }
        for (int j = 0; j < out; j++) {
            int32_t sum = 0;
            for (int k = 0; k < in; k++) sum += w->q[(size_t)j * w->cols + col0 + k];
            p->correction[j] = 128 * sum;
        }
    }
    return 0;
}

void qpacked_free(QPacked *p) {
    free(p->w);
    free(p->correction);
    memset(p, 0, sizeof *p);
}

/* ---- products ----------------------------------------------------------------------------- */

/* Where the sums of a tile go: into acc (qgemm_packed), or scaled into y (qlinear_packed). */
typedef struct {
    real *y;
    int ldy;
    const float *xs;
    const real *b;
    int accumulate;
    int32_t *acc;
    int ldc, lo;
} TileSink;

/* Rows r0 .. r0 + m - 1 of a tile, features [j0, j1) of the block starting at jbase. */
static void sink_tile(const TileSink *s, const QPacked *p, const int32_t *tile, int r0, int m,
                      int jbase, int j0, int j1) {
    for (int r = 0; r < m; r++) {
        const int32_t *t = tile + (size_t)r * p->block - jbase;
        if (s->acc) {
            int32_t *a = s->acc + (size_t)(r0 + r) * s->ldc - s->lo;
            for (int j = j0; j < j1; j++) a[j] = t[j];
            continue;
        }
        real *yr = s->y + (size_t)(r0 + r) * s->ldy;
        float xs = s->xs[r0 + r];
        for (int j = j0; j < j1; j++) {
            real v = (real)(xs * p->scale[j] * (float)t[j]) + (s->b ? s->b[j] : 0);
            yr[j] = s->accumulate ? yr[j] + v : v;
        }
    }
}

/* Every block of features meeting [lo, hi), MR rows at a time. */
static void run_tiles(const QPacked *p, int M, const int8_t *x, int ldx, int lo, int hi,
                      const TileSink *sink) {
    if (lo >= hi || M <= 0) return;
    const QIsa *isa = qisa_of(p->isa);
    int32_t tile[MR * MAX_BLOCK];
    for (int jb = lo / p->block; jb * p->block < hi; jb++) {
        int jbase = jb * p->block;
        int j0 = lo > jbase ? lo : jbase, j1 = hi < jbase + p->block ? hi : jbase + p->block;
        for (int r0 = 0; r0 < M; r0 += MR) {
            int m = M - r0 < MR ? M - r0 : MR;
            isa->tile(p, jb, m, x + (size_t)r0 * ldx, ldx, tile);
            sink_tile(sink, p, tile, r0, m, jbase, j0, j1);
        }
    }
}

void qgemm_packed(const QPacked *p, int M, const int8_t *x, int ldx, int lo, int hi, int32_t *acc,
                  int ldc) {
    TileSink sink = {.acc = acc, .ldc = ldc, .lo = lo};
    run_tiles(p, M, x, ldx, lo, hi, &sink);
}

void qlinear_packed(real *y, int ldy, const int8_t *xq, int ldxq, const float *xs, const QPacked *p,
                    const real *b, int rows, int lo, int hi, int accumulate) {
    TileSink sink = {.y = y, .ldy = ldy, .xs = xs, .b = b, .accumulate = accumulate};
    run_tiles(p, rows, xq, ldxq, lo, hi, &sink);
}

int decode_packs_build(QPacked *packs, const QuantWeights *qw, const ModelDims *d, Error *err) {
    int E = d->emb, K = dims_enc_state(d), D = d->dec_hidden, O = d->readout, H = d->enc_hidden;
    const struct {
        DecodeProduct id;
        ParamId weights;
        int col0, in;
    } products[] = {
        {QP_DEC_HH, P_DEC_GRU_W_HH, 0, D},
        {QP_DEC_IH_EMB, P_DEC_GRU_W_IH, 0, E},
        {QP_DEC_IH_CTX, P_DEC_GRU_W_IH, E, K},
        {QP_ATT_Q, P_ATT_W_Q, 0, D},
        {QP_RO_STATE, P_OUT_W_O, 0, D},
        {QP_RO_CTX, P_OUT_W_O, D, K},
        {QP_RO_EMB, P_OUT_W_O, D + K, E},
        {QP_OUT, d->tie_embeddings ? P_TGT_EMB : P_OUT_W, 0, O}, /* tied: O = E */
        {QP_ENC_FWD_IH, P_ENC_FWD_W_IH, 0, E},
        {QP_ENC_FWD_HH, P_ENC_FWD_W_HH, 0, H},
        {QP_ENC_BWD_IH, P_ENC_BWD_W_IH, 0, E},
        {QP_ENC_BWD_HH, P_ENC_BWD_W_HH, 0, H},
        {QP_KEYS, d->score == SCORE_GENERAL ? P_ATT_W_A : P_ATT_W_K, 0, K},
    };
    memset(packs, 0, sizeof *packs * QP_COUNT);
    for (size_t i = 0; i < sizeof products / sizeof products[0]; i++) {
        const QMatrix *w = &qw->m[products[i].weights];
        if (w->rows == 0) continue;
        if (qpack(&packs[products[i].id], qgemm_kernels(), w, products[i].col0, products[i].in,
                  err)) {
            for (int p = 0; p < QP_COUNT; p++) qpacked_free(&packs[p]);
            return -1;
        }
    }
    return 0;
}

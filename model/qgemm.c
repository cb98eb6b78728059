/*
 * qgemm.c: int8 products for decoding (see qgemm.h).
 *
 * Decoding multiplies a few activation rows by many weight rows, so what matters is streaming
 * the weights, a quarter of the float weights' bytes. A kernel computes one block of output
 * features for up to MR activation rows: each packed weight vector is loaded once and used for
 * every row, and each lane accumulates one feature, so the sums come out of the registers as
 * they are (a kernel over plain rows would need a horizontal sum per feature and row).
 *
 * The x86 kernels also take a run of blocks in one call (QIsa.tiles): a run small enough for
 * L1 is swept by every row, 4 rows and 2 blocks at a time, the row count a constant in each
 * specialised body so that the 8 accumulators stay in registers (with a run-time count they
 * went to the stack), and each activation broadcast serves 16 features (32 with VNNI). The
 * bytes the instruction multiplies by (|x| for VPMADDUBSW, x + 128 for VPDPBUSD) are formed
 * once per row and call instead of once per block. Beam search's 160 rows make these products
 * bound by the multiplier, not by memory: on AVX2 without VNNI each 32 products take a
 * VPMADDUBSW and a VPMADDWD.
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

/* acc + the int32 sums of each feature's 4 products: |x| * (w with x's sign), u8 x s8 pairs of
 * at most 2 x 127 x 127 (no saturation), then pairs of pairs by VPMADDWD. */
__attribute__((target("avx2"))) static inline __m256i avx2_step(__m256i acc, __m256i w, __m256i x,
                                                                __m256i abs_x) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i pairs = _mm256_maddubs_epi16(abs_x, _mm256_sign_epi8(w, x));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
}

/* One block (for rows longer than RUN_ROOM). */
__attribute__((target("avx2"))) static void tile_avx2(const QPacked *p, int jb, int m,
                                                      const int8_t *x, int ldx, int32_t *tile) {
    const int8_t *w = p->w + (size_t)jb * p->groups * 32;
    __m256i acc[MR];
    for (int r = 0; r < MR; r++) acc[r] = _mm256_setzero_si256();
    for (int g = 0; g < p->groups; g++) {
        __m256i wv = _mm256_load_si256((const __m256i *)(w + (size_t)g * 32));
        for (int r = 0; r < m; r++) {
            __m256i xv = _mm256_set1_epi32(x_group(x + (size_t)r * ldx, g));
            acc[r] = avx2_step(acc[r], wv, xv, _mm256_abs_epi8(xv));
        }
    }
    for (int r = 0; r < m; r++) _mm256_storeu_si256((__m256i *)(tile + (size_t)r * 8), acc[r]);
}

/* `m` rows (a constant where it is inlined, so that the accumulators stay in registers) by
 * blocks w0 and the one after it (16 features: each broadcast serves both); ax holds the rows'
 * |x| (stride RUN_ROOM). */
__attribute__((target("avx2"), always_inline)) static inline void
avx2_pass(const int8_t *w0, int groups, int m, const int8_t *x, int ldx, const int8_t *ax,
          int32_t *out, int ldo) {
    const int8_t *w1 = w0 + (size_t)groups * 32;
    __m256i acc0[RUN_ROWS], acc1[RUN_ROWS];
    for (int r = 0; r < m; r++) acc0[r] = acc1[r] = _mm256_setzero_si256();
    for (int g = 0; g < groups; g++) {
        __m256i wa = _mm256_load_si256((const __m256i *)(w0 + (size_t)g * 32));
        __m256i wb = _mm256_load_si256((const __m256i *)(w1 + (size_t)g * 32));
        for (int r = 0; r < m; r++) {
            __m256i xv = _mm256_set1_epi32(x_group(x + (size_t)r * ldx, g));
            __m256i av = _mm256_set1_epi32(x_group(ax + (size_t)r * RUN_ROOM, g));
            acc0[r] = avx2_step(acc0[r], wa, xv, av);
            acc1[r] = avx2_step(acc1[r], wb, xv, av);
        }
    }
    for (int r = 0; r < m; r++) {
        _mm256_storeu_si256((__m256i *)(out + (size_t)r * ldo), acc0[r]);
        _mm256_storeu_si256((__m256i *)(out + (size_t)r * ldo + 8), acc1[r]);
    }
}

/* avx2_pass with m as a constant. */
__attribute__((target("avx2"))) static void avx2_rows(const int8_t *w0, int groups, int m,
                                                      const int8_t *x, int ldx, const int8_t *ax,
                                                      int32_t *out, int ldo) {
    switch (m) {
    case 1:
        avx2_pass(w0, groups, 1, x, ldx, ax, out, ldo);
        break;
    case 2:
        avx2_pass(w0, groups, 2, x, ldx, ax, out, ldo);
        break;
    case 3:
        avx2_pass(w0, groups, 3, x, ldx, ax, out, ldo);
        break;
    default:
        avx2_pass(w0, groups, 4, x, ldx, ax, out, ldo);
        break;
    }
}

__attribute__((target("avx2"))) static void tiles_avx2(const QPacked *p, int jb0, int nb, int M,
                                                       const int8_t *x, int ldx, int32_t *out,
                                                       int ldo) {
    int groups = p->groups, K = groups * GROUP;
    int8_t ax[RUN_ROWS * RUN_ROOM] __attribute__((aligned(32)));
    for (int r0 = 0; r0 < M; r0 += RUN_ROWS) {
        int m = M - r0 < RUN_ROWS ? M - r0 : RUN_ROWS;
        const int8_t *xr = x + (size_t)r0 * ldx;
        for (int r = 0; r < m; r++) {
            const int8_t *from = xr + (size_t)r * ldx;
            int8_t *to = ax + (size_t)r * RUN_ROOM;
            int k = 0;
            for (; k + 32 <= K; k += 32)
                _mm256_store_si256((__m256i *)(to + k), _mm256_abs_epi8(_mm256_loadu_si256(
                                                            (const __m256i *)(from + k))));
            for (; k < K; k++) to[k] = (int8_t)(from[k] < 0 ? -from[k] : from[k]);
        }
        for (int b = 0; b < nb; b += 2)
            avx2_rows(p->w + (size_t)(jb0 + b) * groups * 32, groups, m, xr, ldx, ax,
                      out + (size_t)r0 * ldo + b * 8, ldo);
    }
}

static const QIsa qisa_avx2 = {.set = ISA_AVX2, .block = 8, .tile = tile_avx2, .tiles = tiles_avx2};

/* ---- avx512vnni: blocks of 16 features x 4 inputs ----------------------------------------- */

/* x ^ 0x80 = x + 128 as u8: VPDPBUSD's unsigned operand. */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static inline __m512i
vnni_offset(__m512i x) {
    return _mm512_xor_si512(x, _mm512_set1_epi8((char)0x80));
}

/* One block (for rows longer than RUN_ROOM). */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
tile_avx512vnni(const QPacked *p, int jb, int m, const int8_t *x, int ldx, int32_t *tile) {
    const int8_t *w = p->w + (size_t)jb * p->groups * 64;
    __m512i acc[MR];
    for (int r = 0; r < MR; r++) acc[r] = _mm512_setzero_si512();
    for (int g = 0; g < p->groups; g++) {
        __m512i wv = _mm512_load_si512((const void *)(w + (size_t)g * 64));
        for (int r = 0; r < m; r++) {
            __m512i xv = _mm512_set1_epi32(x_group(x + (size_t)r * ldx, g));
            acc[r] = _mm512_dpbusd_epi32(acc[r], vnni_offset(xv), wv);
        }
    }
    __m512i correction = _mm512_loadu_si512((const void *)(p->correction + (size_t)jb * 16));
    for (int r = 0; r < m; r++)
        _mm512_storeu_si512((void *)(tile + (size_t)r * 16), _mm512_sub_epi32(acc[r], correction));
}

/* avx2_pass's twin: `m` rows by blocks jb and jb + 1 (32 features); ax holds the rows' x + 128
 * (stride RUN_ROOM). */
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) static inline void
vnni_pass(const QPacked *p, int jb, int m, const int8_t *ax, int32_t *out, int ldo) {
    int groups = p->groups;
    const int8_t *w0 = p->w + (size_t)jb * groups * 64, *w1 = w0 + (size_t)groups * 64;
    __m512i acc0[RUN_ROWS], acc1[RUN_ROWS];
    for (int r = 0; r < m; r++) acc0[r] = acc1[r] = _mm512_setzero_si512();
    for (int g = 0; g < groups; g++) {
        __m512i wa = _mm512_load_si512((const void *)(w0 + (size_t)g * 64));
        __m512i wb = _mm512_load_si512((const void *)(w1 + (size_t)g * 64));
        for (int r = 0; r < m; r++) {
            __m512i av = _mm512_set1_epi32(x_group(ax + (size_t)r * RUN_ROOM, g));
            acc0[r] = _mm512_dpbusd_epi32(acc0[r], av, wa);
            acc1[r] = _mm512_dpbusd_epi32(acc1[r], av, wb);
        }
    }
    const int32_t *c = p->correction + (size_t)jb * 16;
    __m512i c0 = _mm512_loadu_si512((const void *)c);
    __m512i c1 = _mm512_loadu_si512((const void *)(c + 16));
    for (int r = 0; r < m; r++) {
        _mm512_storeu_si512((void *)(out + (size_t)r * ldo), _mm512_sub_epi32(acc0[r], c0));
        _mm512_storeu_si512((void *)(out + (size_t)r * ldo + 16), _mm512_sub_epi32(acc1[r], c1));
    }
}

/* vnni_pass with m as a constant. */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
vnni_rows(const QPacked *p, int jb, int m, const int8_t *ax, int32_t *out, int ldo) {
    switch (m) {
    case 1:
        vnni_pass(p, jb, 1, ax, out, ldo);
        break;
    case 2:
        vnni_pass(p, jb, 2, ax, out, ldo);
        break;
    case 3:
        vnni_pass(p, jb, 3, ax, out, ldo);
        break;
    default:
        vnni_pass(p, jb, 4, ax, out, ldo);
        break;
    }
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
tiles_avx512vnni(const QPacked *p, int jb0, int nb, int M, const int8_t *x, int ldx, int32_t *out,
                 int ldo) {
    int K = p->groups * GROUP;
    int8_t ax[RUN_ROWS * RUN_ROOM] __attribute__((aligned(64)));
    for (int r0 = 0; r0 < M; r0 += RUN_ROWS) {
        int m = M - r0 < RUN_ROWS ? M - r0 : RUN_ROWS;
        for (int r = 0; r < m; r++) {
            const int8_t *from = x + (size_t)(r0 + r) * ldx;
            int8_t *to = ax + (size_t)r * RUN_ROOM;
            int k = 0;
            for (; k + 64 <= K; k += 64)
                _mm512_store_si512((void *)(to + k),
                                   vnni_offset(_mm512_loadu_si512((const void *)(from + k))));
            for (; k < K; k++) to[k] = (int8_t)(from[k] ^ 0x80);
        }
        for (int b = 0; b < nb; b += 2)
            vnni_rows(p, jb0 + b, m, ax, out + (size_t)r0 * ldo + b * 16, ldo);
    }
}

static const QIsa qisa_avx512vnni = {
    .set = ISA_AVX512_VNNI, .block = 16, .tile = tile_avx512vnni, .tiles = tiles_avx512vnni};
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
    if (isa->tiles) blocks++; /* run kernels go 2 blocks at a time: a zero block to end on */
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

/* Rows r0 .. r0 + m - 1 of the sums `sums` (row stride lds, feature jbase first), features
 * [j0, j1). */
static void sink_sums(const TileSink *s, const QPacked *p, const int32_t *sums, int lds, int r0,
                      int m, int jbase, int j0, int j1) {
    for (int r = 0; r < m; r++) {
        const int32_t *t = sums + (size_t)r * lds - jbase;
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

/* The int32 sums a run kernel writes at once (on the stack): runs of blocks are cut so that
 * their weights stay in L1 while every row passes over them, and their sums fit here. */
enum { RUN_SUMS = 8192, RUN_WEIGHT_BYTES = 16384 };

/* Every block of features meeting [lo, hi): with a run kernel, runs of blocks for all rows at
 * once; else block by block, MR rows at a time. */
static void run_tiles(const QPacked *p, int M, const int8_t *x, int ldx, int lo, int hi,
                      const TileSink *sink) {
    if (lo >= hi || M <= 0) return;
    const QIsa *isa = qisa_of(p->isa);
    int block = p->block, jb_lo = lo / block, jb_hi = (hi + block - 1) / block;
    if (isa->tiles && p->groups * GROUP <= RUN_ROOM) {
        int32_t sums[RUN_SUMS];
        size_t block_bytes = (size_t)p->groups * GROUP * block;
        int rows = M < RUN_SUMS / (2 * block) ? M : RUN_SUMS / (2 * block);
        int run = (int)(RUN_WEIGHT_BYTES / block_bytes);
        if (run > RUN_SUMS / (rows * block)) run = RUN_SUMS / (rows * block);
        run = run < 2 ? 2 : run / 2 * 2; /* whole pairs: the kernels go 2 blocks at a time */
        for (int jb = jb_lo; jb < jb_hi; jb += run) {
            int nb = jb_hi - jb < run ? jb_hi - jb : run, jbase = jb * block;
            int j0 = lo > jbase ? lo : jbase,
                j1 = hi < jbase + nb * block ? hi : jbase + nb * block;
            int lds = (nb + 1) / 2 * 2 * block; /* room for the kernels' whole pairs */
            for (int r0 = 0; r0 < M; r0 += rows) {
                int m = M - r0 < rows ? M - r0 : rows;
                isa->tiles(p, jb, nb, m, x + (size_t)r0 * ldx, ldx, sums, lds);
                sink_sums(sink, p, sums, lds, r0, m, jbase, j0, j1);
            }
        }
        return;
    }
    int32_t tile[MR * MAX_BLOCK];
    for (int jb = jb_lo; jb < jb_hi; jb++) {
        int jbase = jb * block;
        int j0 = lo > jbase ? lo : jbase, j1 = hi < jbase + block ? hi : jbase + block;
        for (int r0 = 0; r0 < M; r0 += MR) {
            int m = M - r0 < MR ? M - r0 : MR;
            isa->tile(p, jb, m, x + (size_t)r0 * ldx, ldx, tile);
            sink_sums(sink, p, tile, block, r0, m, jbase, j0, j1);
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

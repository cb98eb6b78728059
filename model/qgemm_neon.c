/*
 * qgemm_neon.c: the int8 products' kernels for ARM64 (see qgemm.h and qgemm_isa.h), all on
 * qpack's blocks of 8 features x 4 inputs (32 bytes: two vectors, features 0-3 and 4-7):
 *   "neon"     every ARM64 CPU: smull (int8 x int8 -> int16, at most 127 x 127, exact) and
 *              sadalp (pairs of int16 added into int32), then addp joins each feature's pairs
 *   "dotprod"  sdot: each int32 lane adds the 4-byte dot product of one feature with the 4
 *              activations of its group, broadcast to every lane
 *   "i8mm"     smmla: a 2 x 8 block of activations (two rows, two groups) times a 2 x 8 block
 *              of weights (two features: zip1/zip2 of two groups' vectors bring a feature's 8
 *              inputs together) into a 2 x 2 block of sums
 * Integer sums have no rounding: every kernel gives the generic kernel's sums, bit for bit.
 * Rows go a few at a time (4, or 2 for smmla's pairs), a group's weights loaded once for them;
 * a missing last row repeats the one before it (computed, never stored).
 */
#include "model/qgemm_isa.h"

#if QGEMM_NEON
#include <arm_neon.h>
#include <string.h>

enum { BLOCK = 8, BLOCK_BYTES = BLOCK * GROUP };

/* sdot and smmla through inline assembly in functions compiled for the extension: the
 * intrinsics of GCC 12's and clang 14's arm_neon.h need the extension for the whole file
 * (-march), which would let the compiler use it anywhere, on CPUs without it too. */
#if defined(__clang__)
#define TARGET_DOTPROD __attribute__((target("dotprod")))
#define TARGET_I8MM    __attribute__((target("i8mm")))
#else
#define TARGET_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#define TARGET_I8MM    __attribute__((target("arch=armv8.2-a+i8mm")))
#endif

/* acc + the 4-byte dot products of a and b, lane by lane */
TARGET_DOTPROD static inline int32x4_t sdot(int32x4_t acc, int8x16_t a, int8x16_t b) {
    __asm__("sdot %0.4s, %1.16b, %2.16b" : "+w"(acc) : "w"(a), "w"(b));
    return acc;
}

/* acc (2 x 2) + a (2 x 8) b (2 x 8)^T */
TARGET_I8MM static inline int32x4_t smmla(int32x4_t acc, int8x16_t a, int8x16_t b) {
    __asm__("smmla %0.4s, %1.16b, %2.16b" : "+w"(acc) : "w"(a), "w"(b));
    return acc;
}

/* Group g's 4 activations of a row, in every 32-bit lane. */
static inline int8x16_t x_broadcast(const int8_t *row, int g) {
    int32_t v;
    memcpy(&v, row + (size_t)g * GROUP, sizeof v);
    return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

/* The rows r0 .. r0 + 3 of a tile (past m: the last row again). */
static inline void rows4(const int8_t *x, int ldx, int r0, int m, const int8_t *xr[4]) {
    for (int q = 0; q < 4; q++) xr[q] = x + (size_t)(r0 + q < m ? r0 + q : m - 1) * ldx;
}

static void tile_neon(const QPacked *p, int jb, int m, const int8_t *x, int ldx, int32_t *tile) {
    const int8_t *w = p->w + (size_t)jb * p->groups * BLOCK_BYTES;
    for (int r0 = 0; r0 < m; r0 += 4) {
        const int8_t *xr[4];
        rows4(x, ldx, r0, m, xr);
        /* acc[q][h]: features 2h, 2h + 1 of row q as (f k01, f k23, f+1 k01, f+1 k23) */
        int32x4_t acc[4][4];
        for (int q = 0; q < 4; q++)
            for (int h = 0; h < 4; h++) acc[q][h] = vdupq_n_s32(0);
        for (int g = 0; g < p->groups; g++) {
            int8x16_t w0 = vld1q_s8(w + (size_t)g * BLOCK_BYTES);
            int8x16_t w1 = vld1q_s8(w + (size_t)g * BLOCK_BYTES + 16);
            for (int q = 0; q < 4; q++) {
                int8x8_t xv = vget_low_s8(x_broadcast(xr[q], g));
                acc[q][0] = vpadalq_s16(acc[q][0], vmull_s8(vget_low_s8(w0), xv));
                acc[q][1] = vpadalq_s16(acc[q][1], vmull_s8(vget_high_s8(w0), xv));
                acc[q][2] = vpadalq_s16(acc[q][2], vmull_s8(vget_low_s8(w1), xv));
                acc[q][3] = vpadalq_s16(acc[q][3], vmull_s8(vget_high_s8(w1), xv));
            }
        }
        for (int q = 0; q < 4 && r0 + q < m; q++) {
            int32_t *t = tile + (size_t)(r0 + q) * BLOCK;
            vst1q_s32(t, vpaddq_s32(acc[q][0], acc[q][1]));
            vst1q_s32(t + 4, vpaddq_s32(acc[q][2], acc[q][3]));
        }
    }
}

TARGET_DOTPROD static void tile_dotprod(const QPacked *p, int jb, int m, const int8_t *x, int ldx,
                                        int32_t *tile) {
    const int8_t *w = p->w + (size_t)jb * p->groups * BLOCK_BYTES;
    for (int r0 = 0; r0 < m; r0 += 4) {
        const int8_t *xr[4];
        rows4(x, ldx, r0, m, xr);
        int32x4_t acc[4][2];
        for (int q = 0; q < 4; q++) acc[q][0] = acc[q][1] = vdupq_n_s32(0);
        for (int g = 0; g < p->groups; g++) {
            int8x16_t w0 = vld1q_s8(w + (size_t)g * BLOCK_BYTES);
            int8x16_t w1 = vld1q_s8(w + (size_t)g * BLOCK_BYTES + 16);
            for (int q = 0; q < 4; q++) {
                int8x16_t xv = x_broadcast(xr[q], g);
                acc[q][0] = sdot(acc[q][0], w0, xv);
                acc[q][1] = sdot(acc[q][1], w1, xv);
            }
        }
        for (int q = 0; q < 4 && r0 + q < m; q++) {
            vst1q_s32(tile + (size_t)(r0 + q) * BLOCK, acc[q][0]);
            vst1q_s32(tile + (size_t)(r0 + q) * BLOCK + 4, acc[q][1]);
        }
    }
}

/* Inputs 4g .. 4g + 7 of two rows as smmla's 2 x 8 left operand; `half`: only 4g .. 4g + 3
 * (the last, odd group: a row has room for whole groups only), the rest zero. */
static inline int8x16_t x_pair(const int8_t *x0, const int8_t *x1, int g, int half) {
    int8_t t[16] = {0};
    int bytes = half ? GROUP : 2 * GROUP;
    memcpy(t, x0 + (size_t)g * GROUP, (size_t)bytes);
    memcpy(t + 8, x1 + (size_t)g * GROUP, (size_t)bytes);
    return vld1q_s8(t);
}

TARGET_I8MM static void tile_i8mm(const QPacked *p, int jb, int m, const int8_t *x, int ldx,
                                  int32_t *tile) {
    const int8_t *w = p->w + (size_t)jb * p->groups * BLOCK_BYTES;
    for (int r0 = 0; r0 < m; r0 += 2) {
        const int8_t *x0 = x + (size_t)r0 * ldx, *x1 = r0 + 1 < m ? x0 + ldx : x0;
        /* acc[f]: features 2f, 2f + 1 of rows r0, r0 + 1 as (r0 2f, r0 2f+1, r1 2f, r1 2f+1) */
        int32x4_t acc[4];
        for (int f = 0; f < 4; f++) acc[f] = vdupq_n_s32(0);
        for (int g = 0; g < p->groups; g += 2) {
            int half = g + 1 == p->groups;
            const int8_t *wg = w + (size_t)g * BLOCK_BYTES;
            /* lanes: one feature's 4 inputs of group g (a), of group g + 1 (b: zero past the end)
             */
            int32x4_t a0 = vreinterpretq_s32_s8(vld1q_s8(wg));
            int32x4_t a1 = vreinterpretq_s32_s8(vld1q_s8(wg + 16));
            int32x4_t b0 = half ? vdupq_n_s32(0) : vreinterpretq_s32_s8(vld1q_s8(wg + BLOCK_BYTES));
            int32x4_t b1 =
                half ? vdupq_n_s32(0) : vreinterpretq_s32_s8(vld1q_s8(wg + BLOCK_BYTES + 16));
            int8x16_t xv = x_pair(x0, x1, g, half);
            acc[0] = smmla(acc[0], xv, vreinterpretq_s8_s32(vzip1q_s32(a0, b0)));
            acc[1] = smmla(acc[1], xv, vreinterpretq_s8_s32(vzip2q_s32(a0, b0)));
            acc[2] = smmla(acc[2], xv, vreinterpretq_s8_s32(vzip1q_s32(a1, b1)));
            acc[3] = smmla(acc[3], xv, vreinterpretq_s8_s32(vzip2q_s32(a1, b1)));
        }
        int32_t *t0 = tile + (size_t)r0 * BLOCK;
        vst1q_s32(t0, vcombine_s32(vget_low_s32(acc[0]), vget_low_s32(acc[1])));
        vst1q_s32(t0 + 4, vcombine_s32(vget_low_s32(acc[2]), vget_low_s32(acc[3])));
        if (r0 + 1 < m) {
            vst1q_s32(t0 + BLOCK, vcombine_s32(vget_high_s32(acc[0]), vget_high_s32(acc[1])));
            vst1q_s32(t0 + BLOCK + 4, vcombine_s32(vget_high_s32(acc[2]), vget_high_s32(acc[3])));
        }
    }
}

static const QIsa qisa_neon = {.set = ISA_NEON, .block = BLOCK, .tile = tile_neon};
static const QIsa qisa_dotprod = {.set = ISA_DOTPROD, .block = BLOCK, .tile = tile_dotprod};
static const QIsa qisa_i8mm = {.set = ISA_I8MM, .block = BLOCK, .tile = tile_i8mm};

const QIsa *qisa_arm(InstructionSet set) {
    return set == ISA_I8MM      ? &qisa_i8mm
           : set == ISA_DOTPROD ? &qisa_dotprod
           : set == ISA_NEON    ? &qisa_neon
                                : NULL;
}
#endif

/*
 * qgemm_isa.h: what one instruction set's int8 kernels give qgemm.c, for the kernels that live
 * in files of their own (model/qgemm_neon.c). Private to the int8 products.
 *
 * Weights are packed by qpack (qgemm.c) in blocks of `block` features x GROUP inputs, group
 * after group: W[jb * block + jj, g * GROUP + kk] at ((jb * groups + g) * block + jj) * GROUP
 * + kk, zero past the matrix.
 */
#ifndef NMT_QGEMM_ISA_H
#define NMT_QGEMM_ISA_H

#include <stdint.h>

#include "base/cpu.h"
#include "model/qgemm.h"

/* Activation rows per kernel call, and the widest block of features. */
enum { MR = 8, MAX_BLOCK = 16, GROUP = 4 };

/* tile[r * p->block + jj] = sum_k x[r * ldx + k] * W[jb * block + jj, k] for r < m <= MR. */
typedef void TileFn(const QPacked *p, int jb, int m, const int8_t *x, int ldx, int32_t *tile);

/* Rows a run kernel takes at once, and the longest rows (inputs) it takes: it copies the
 * bytes it multiplies by of RUN_ROWS rows to the stack; longer rows go block by block. */
enum { RUN_ROWS = 4, RUN_ROOM = 4096 };

/* out[r * ldo + (jb - jb0) * block + jj] = the same sums for every row r < M (any number) and
 * the blocks jb0 <= jb < jb0 + nb: one call for a run of blocks, each block's weights loaded
 * once for a few rows at a time while they are in L1. The kernels go 2 blocks at a time: with
 * nb odd they also write the block after the run (qpack adds a zero block at the end for them),
 * so ldo must have room for nb rounded up to even blocks. */
typedef void TilesFn(const QPacked *p, int jb0, int nb, int M, const int8_t *x, int ldx,
                     int32_t *out, int ldo);

typedef struct {
    InstructionSet set;
    int block;
    TileFn *tile;
    TilesFn *tiles; /* NULL: qgemm.c runs `tile` block by block */
} QIsa;

#if defined(__aarch64__)
#define QGEMM_NEON 1
/* model/qgemm_neon.c: the kernels of ISA_NEON, ISA_DOTPROD or ISA_I8MM (NULL for another set). */
const QIsa *qisa_arm(InstructionSet set);
#else
#define QGEMM_NEON 0
#endif

#endif

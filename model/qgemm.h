/*
 * qgemm.h: the products of 8-bit decoding: int8 x int8 accumulated in int32, exactly.
 *
 * A product's weights (some columns of a quantized matrix: quant.h) are packed once, in the
 * layout of the kernels that will run them, so that a vector instruction forms partial sums
 * of several output features at once and no horizontal sum is needed:
 *   avx512vnni    blocks of 16 features x 4 inputs (64 bytes) for VPDPBUSD, u8 x s8 -> s32;
 *                 activations are offset by 128 (x + 128 in [1, 255]) and each feature's
 *                 128 sum_k w_k, computed when packing, is subtracted
 *   avx2          blocks of 8 features x 4 inputs (32 bytes): VPMADDUBSW on |x| and w with
 *                 x's sign, whose int16 pair sums (at most 2 x 127 x 127) cannot saturate,
 *                 then VPMADDWD by ones into int32
 *   portable      rows as stored, plain C.
 * The best cpu_allows() is chosen on the first call (so NMT_ISA caps it, as it caps gemm's). Every
 * kernel gives the same int32 sums, bit for bit: integer sums have no rounding. Values are in
 * [-127, 127] on both sides (quantize_rows never writes -128).
 */
#ifndef NMT_QGEMM_H
#define NMT_QGEMM_H

#include <stdint.h>

#include "base/base.h"
#include "base/cpu.h"
#include "model/params.h"
#include "model/quant.h"

/* The weights of one product y = W[:, col0 : col0 + in] x, packed for one set of kernels. */
typedef struct QPacked {
    InstructionSet isa;  /* the kernels it is packed for */
    int out, in;         /* output features N, inputs K */
    int block;           /* features per block (16, 8, or 1 for portable) */
    int groups;          /* K rounded up to whole groups of 4 inputs, / 4 */
    int8_t *w;           /* the packed values */
    int32_t *correction; /* [out] 128 sum_k w_jk (avx512vnni only, else NULL) */
    const float *scale;  /* [out] the rows' scales (owned by the QMatrix) */
} QPacked;

/* Packs columns [col0, col0 + in) of w for the kernels of isa (qgemm_kernels(): the chosen
 * ones); -1 when there are none or the CPU cannot run them (or out of memory). */
int qpack(QPacked *p, InstructionSet isa, const QMatrix *w, int col0, int in, Error *err);
void qpacked_free(QPacked *p);

/* Activation rows must have room for in rounded up to a multiple of 4 (the kernels read whole
 * groups of 4; what follows the row's `in` values is multiplied by zero weights). */
int qpack_row_room(int in);

/* acc[r * ldc + j - lo] = sum_{k < in} x[r * ldx + k] * W[j, k] for r < M and the features
 * j in [lo, hi) of a packed product. */
void qgemm_packed(const QPacked *p, int M, const int8_t *x, int ldx, int lo, int hi, int32_t *acc,
                  int ldc);

/* The output features [lo, hi) of a linear layer on int8 rows: for r < rows,
 *   y[r, j] (+)= xs[r] * scale[j] * sum_k xq[r, k] * W[j, k] + b[j]
 * (accumulate 1: added to y; b may be NULL). xq (stride ldxq, see qpack_row_room) and xs come
 * from quantize_rows. */
void qlinear_packed(real *y, int ldy, const int8_t *xq, int ldxq, const float *xs, const QPacked *p,
                    const real *b, int rows, int lo, int hi, int accumulate);

/* The chosen kernels: ISA_AVX512_VNNI, ISA_AVX2 or ISA_PORTABLE, the best cpu_allows() (so
 * capped by NMT_ISA), chosen on the first call. */
InstructionSet qgemm_kernels(void);
/* Whether there are kernels for isa and this CPU runs them (whatever NMT_ISA says). */
int qgemm_supported(InstructionSet isa);

/* The products of translating (model/search.c, model_encode), each packed from the int8
 * weights. */
typedef enum {
    QP_DEC_HH,     /* dec.gru.w_hh s_{t-1} */
    QP_DEC_IH_EMB, /* dec.gru.w_ih's embedding columns u_t */
    QP_DEC_IH_CTX, /* dec.gru.w_ih's context columns h_i */
    QP_ATT_Q,      /* att.w_q s_{t-1} (additive, scaled_dot) */
    QP_RO_STATE,   /* out.w_o's state columns s_t */
    QP_RO_CTX,     /* out.w_o's context columns h_i */
    QP_RO_EMB,     /* out.w_o's embedding columns u_t */
    QP_OUT,        /* out.w o_t */
    QP_ENC_FWD_IH, /* the encoder's W_ih x_i and W_hh h, each direction */
    QP_ENC_FWD_HH,
    QP_ENC_BWD_IH,
    QP_ENC_BWD_HH,
    QP_KEYS, /* att.w_k h_i (additive, scaled_dot) or att.w_a h_i (general) */
    QP_COUNT
} DecodeProduct;

/* Packs every decoding product of an int8 model for the chosen kernels into packs[QP_COUNT]
 * (those the model has not: out = 0). */
int decode_packs_build(QPacked *packs, const QuantWeights *qw, const ModelDims *d, Error *err);

#endif

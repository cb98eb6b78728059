/*
 * quant.c: per-row symmetric 8-bit quantization of weights and activations (see quant.h).
 */
#include "quant.h"
#include "fastmath.h"
#include "qgemm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int param_is_quantized(ParamId p) {
    switch (p) {
    case P_SRC_EMB:
    case P_TGT_EMB:
    case P_ENC_FWD_W_IH:
    case P_ENC_FWD_W_HH:
    case P_ENC_BWD_W_IH:
    case P_ENC_BWD_W_HH:
    case P_ATT_W_K:
    case P_ATT_W_Q:
    case P_ATT_W_A:
    case P_DEC_GRU_W_IH:
    case P_DEC_GRU_W_HH:
    case P_OUT_W_O:
    case P_OUT_W:
        return 1;
    default:
        return 0;
    }
}

/* 1.5 x 2^23: adding and subtracting it rounds a float of magnitude below 2^22 to the nearest
 * integer, ties to even (as nearbyintf in the default mode), in plain vector arithmetic where
 * nearbyintf would be a library call per value on CPUs without SSE4.1's rounding instruction. */
static const float ROUNDER = 0x1.8p23f;

/* One row of quantize_rows, in vector clones: it runs on every activation row of every
 * decoding step. */
static VECTOR_BODY void quantize_row_body(const real *restrict x, int n, int8_t *restrict q,
                                          float *scale) {
    float part[16] = {0}; /* 16 running maxima of |x|, as vec_max's */
    int i = 0;
    for (; i + 16 <= n; i += 16)
#pragma omp simd
        for (int j = 0; j < 16; j++) {
            float a = fabsf((float)x[i + j]);
            part[j] = a > part[j] ? a : part[j];
        }
    for (int j = 0; i < n; i++, j++) {
        float a = fabsf((float)x[i]);
        part[j] = a > part[j] ? a : part[j];
    }
    float top = part[0];
    for (int j = 1; j < 16; j++) top = part[j] > top ? part[j] : top;
    *scale = top / 127;
    /* multiplying by 127 / top rather than dividing by the scale: one division a row; |v| is
     * then at most 127 (and a hair), which rounds to 127. The clamps are for rows that are not
     * ordinary numbers: a subnormal top makes the inverse infinite, and a NaN (which no
     * comparison passes) becomes 127, so the conversion to int is always defined. */
    float inverse = top > 0 ? 127 / top : 0;
    for (int k = 0; k < n; k++) {
        float v = ((float)x[k] * inverse + ROUNDER) - ROUNDER;
        v = v <= 127 ? v : 127;
        v = v >= -127 ? v : -127;
        q[k] = (int8_t)(int)v;
    }
}
VECTOR_DISPATCH_VOID(VECTOR_SETS, static, quantize_row,
                     (const real *restrict x, int n, int8_t *restrict q, float *scale),
                     (x, n, q, scale))

void quantize_rows(const real *x, int ldx, int rows, int cols, int8_t *q, int ldq, float *scale) {
    for (int r = 0; r < rows; r++)
        quantize_row(x + (size_t)r * ldx, cols, q + (size_t)r * ldq, scale + r);
}

int quant_weights_alloc(QuantWeights *qw, const ParamTable *table, Error *err) {
    memset(qw, 0, sizeof *qw);
    size_t bytes = 0;
    for (int p = 0; p < PARAM_COUNT; p++) {
        const ParamInfo *info = &table->info[p];
        if (!param_is_quantized((ParamId)p) || info->size == 0) continue;
        /* each matrix's scales start 64-byte aligned, its values follow them */
        bytes += ((size_t)info->shape[0] * sizeof(float) + info->size + 63) / 64 * 64;
    }
    qw->block = checked_calloc(bytes ? bytes : 1, 1, "int8 weights", err);
    if (!qw->block) return -1;
    qw->bytes = bytes;
    unsigned char *at = qw->block;
    for (int p = 0; p < PARAM_COUNT; p++) {
        const ParamInfo *info = &table->info[p];
        if (!param_is_quantized((ParamId)p) || info->size == 0) continue;
        QMatrix *m = &qw->m[p];
        m->rows = info->shape[0], m->cols = info->shape[1];
        m->scale = (float *)at;
        m->q = (int8_t *)(at + (size_t)m->rows * sizeof(float));
        at += ((size_t)m->rows * sizeof(float) + info->size + 63) / 64 * 64;
    }
    return 0;
}

int quant_weights_build(QuantWeights *qw, const ParamTable *table, const real *params, Error *err) {
    if (quant_weights_alloc(qw, table, err)) return -1;
    for (int p = 0; p < PARAM_COUNT; p++) {
        QMatrix *m = &qw->m[p];
        if (m->rows == 0) continue;
        quantize_rows(params + table->info[p].offset, m->cols, m->rows, m->cols, m->q, m->cols,
                      m->scale);
    }
    return 0;
}

void quant_weights_dequantize(const QuantWeights *qw, const ParamTable *table, real *params) {
    for (int p = 0; p < PARAM_COUNT; p++) {
        const QMatrix *m = &qw->m[p];
        if (m->rows == 0) continue;
        real *w = params + table->info[p].offset;
        for (int r = 0; r < m->rows; r++)
            for (int k = 0; k < m->cols; k++) {
                size_t i = (size_t)r * m->cols + k;
                w[i] = (real)(m->scale[r] * m->q[i]);
            }
    }
}

void quant_weights_free(QuantWeights *qw) {
    if (!qw) return;
    for (int p = 0; qw->packs && p < QP_COUNT; p++) qpacked_free(&qw->packs[p]);
    free(qw->packs);
    free(qw->block);
    memset(qw, 0, sizeof *qw);
}

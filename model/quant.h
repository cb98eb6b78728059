/*
 * quant.h: 8-bit weights. Each row of a quantized matrix is stored as int8 values q with one
 * float scale s (symmetric, as CTranslate2's int8 compute type): s = max_k |W_jk| / 127 and
 * q_jk = round(W_jk / s), so that W_jk ~ s q_jk to within s / 2. Activations are quantized
 * the same way, one scale per row, on the fly, just before a product (quantize_rows).
 *
 * Which tensors are quantized (param_is_quantized): the matrices that decoding multiplies by
 * (the encoder GRUs' and the decoder GRU's W_ih and W_hh, att.w_k, att.w_q and att.w_a, the
 * readout's W_o, the output layer's W_out) and both embedding tables; biases, att.v and the
 * decoder's initial-state layer stay float. A model that carries QuantWeights keeps its float
 * parameter block too, holding the dequantized values s q, so that the float paths that
 * remain (the embeddings' lookup, the decoder steps of force-decoding and --explain) compute
 * with the same weights as the int8 products do. Quantizing is idempotent: the dequantized
 * values quantize back to the same q (and s, up to its last bit).
 */
#ifndef NMT_QUANT_H
#define NMT_QUANT_H

#include <stdint.h>

#include "base/base.h"
#include "model/params.h"

/* One quantized matrix [rows, cols]: q row-major, one scale per row. */
typedef struct {
    int8_t *q;    /* [rows, cols], values in [-127, 127] */
    float *scale; /* [rows] */
    int rows, cols;
} QMatrix;

/* Every quantized tensor of a model, by parameter id (absent and float ones: rows 0). */
typedef struct QuantWeights {
    QMatrix m[PARAM_COUNT];
    struct QPacked *packs; /* [QP_COUNT] the decoding products packed for the kernels
                              (qgemm.h), or NULL */
    void *block;           /* the one allocation behind every q and scale */
    size_t bytes;
} QuantWeights;

/* Whether the tensor p is stored as 8-bit rows (see the list above). */
int param_is_quantized(ParamId p);

/* q[r, k] and scale[r] for rows r of x [rows, cols] (row stride ldx; q has stride ldq):
 * scale = max |x_r| / 127, q = round(x / scale), all zero for a zero row. */
void quantize_rows(const real *x, int ldx, int rows, int cols, int8_t *q, int ldq, float *scale);

/* Allocates the QMatrix of every quantized tensor of the table (q and scales zeroed). */
int quant_weights_alloc(QuantWeights *qw, const ParamTable *table, Error *err);
/* Allocates and fills qw from the float parameters (packs: NULL). */
int quant_weights_build(QuantWeights *qw, const ParamTable *table, const real *params, Error *err);
/* Writes s q over every quantized tensor of the parameter block. */
void quant_weights_dequantize(const QuantWeights *qw, const ParamTable *table, real *params);
void quant_weights_free(QuantWeights *qw);

#endif

/*
 * gru.h: one time step of a GRU over a batch (gate order r, z, n, as PyTorch's nn.GRU).
 *
 * The input projection gi = W_ih x + b_ih is NOT computed here: callers compute it for all
 * time steps with one matrix product before the time loop, and after the backward time loop
 * turn the per-step dgi and dgh into dW_ih, db_ih, dW_hh, db_hh with one product each. Only
 * the truly sequential work (h_{t-1} -> h_t and dh_t -> dh_{t-1}) happens per step.
 *
 * Sizes: B rows, N hidden units. Row b takes the step only when pos < len[b]; rows past their
 * sentence's end carry their state through unchanged (PyTorch's packed-sequence semantics).
 * len may be NULL: every row takes the step.
 *
 * The element-wise work runs on the calling thread, row after row: the model calls a step
 * from inside its own parallel region, each thread with its share of the rows (seq2seq.c),
 * where a region of the step's own would only cost its entry.
 */
#ifndef NMT_GRU_H
#define NMT_GRU_H

#include "base/base.h"
#include "model/gemm.h"

/* Per-step cache: [B, 4N] holding r, z, n and hn = W_hn h_prev + b_hn for each row. */
enum { GRU_CACHE_WIDTH = 4 };

/*   r  = sigmoid(gi_r + W_hr h + b_hr)
 *   z  = sigmoid(gi_z + W_hz h + b_hz)
 *   n  = tanh(gi_n + r * (W_hn h + b_hn))
 *   h' = (1 - z) * n + z * h                 (h' = h for rows with pos >= len)
 * h_out [B,N]; cache [B,4N]; scratch [B,3N]; gi [B,3N]; h_prev [B,N]; b_hh [3N]; w_hh: W_hh
 * [3N,N] as op(B) of h W_hh^T (gemm_pack(w_hh, TRANSPOSE, N, 3N, W_hh, N, panels or NULL)) */
void gru_step_forward(real *h_out, real *cache, real *scratch, const real *gi, const real *h_prev,
                      const GemmPanels *w_hh, const real *b_hh, const int *len, int pos, int B,
                      int N);

/* The layer-normalised cell's step (the spec's extension `model.layer_norm`): as
 * gru_step_forward with W_hh h + b_hh replaced by g_hh * LN(W_hh h) + b_hh, LN over each row's
 * 3N entries (layernorm.h). gi must be the normalised input part g_ih * LN(W_ih x) + b_ih.
 * xhat [B,3N] and rstd [B] keep the normalisation of W_hh h for the backward pass; g_hh [3N]. */
void gru_step_forward_ln(real *h_out, real *cache, real *xhat, real *rstd, real *scratch,
                         const real *gi, const real *h_prev, const GemmPanels *w_hh,
                         const real *g_hh, const real *b_hh, const int *len, int pos, int B, int N);

/* The same step with gh = W_hh h_prev [B,3N] (without b_hh) already computed: the gates and
 * the new state, for callers that share out the product among threads themselves. */
void gru_gates_forward(real *h_out, real *cache, const real *gi, const real *gh, const real *h_prev,
                       const real *b_hh, const int *len, int pos, int B, int N);

/* The gates and new state of the units [lo, hi) only (each unit's r, z and n columns of gi and
 * gh), for every row: for callers that share out the units among threads. */
void gru_gates_units(real *h_out, real *cache, const real *gi, const real *gh, const real *h_prev,
                     const real *b_hh, int B, int N, int lo, int hi);

/* Given dh = d loss / d h' [B,N], writes dgi = d loss / d gi [B,3N], dgh = d loss / d (W_hh h
 * + b_hh) [B,3N] and dh_prev = d loss / d h [B,N] (all three written, not accumulated). w_hh:
 * W_hh as op(B) of dgh W_hh (gemm_pack(w_hh, AS_STORED, 3N, N, W_hh, N, panels or NULL)). */
void gru_step_backward(real *dh_prev, real *dgi, real *dgh, const real *dh, const real *cache,
                       const real *h_prev, const GemmPanels *w_hh, const int *len, int pos, int B,
                       int N);

/* gru_step_backward of the layer-normalised cell: dgi = d loss / d gi and dgh = d loss / d
 * (g_hh * LN(W_hh h) + b_hh) [B,3N] written as there; d loss / d (W_hh h) goes into scratch
 * [B,3N] (written) on its way into dh_prev. xhat, rstd: gru_step_forward_ln's. */
void gru_step_backward_ln(real *dh_prev, real *dgi, real *dgh, real *scratch, const real *dh,
                          const real *cache, const real *xhat, const real *rstd, const real *h_prev,
                          const GemmPanels *w_hh, const real *g_hh, const int *len, int pos, int B,
                          int N);

#endif

/*
 * attention.h: additive (Bahdanau) attention for one decoder step over a batch.
 *
 *   e_ti    = v^T tanh(W_q s_{t-1} + W_k h_i + b)      (-inf for padding, i >= L)
 *   alpha_t = softmax_i(e_t)
 *   c_t     = sum_i alpha_ti h_i
 *
 * The step-independent part keys_i = W_k h_i + b is computed once per batch by the caller
 * (one matrix product over all source positions), and the query W_q s_{t-1} once per step,
 * so this file only holds the per-position work. Sizes: B sentences, S source positions,
 * A attention size, K encoder state size. keys [B,S,A], enc_h [B,S,K], src_len [B].
 */
#ifndef NMT_ATTENTION_H
#define NMT_ATTENTION_H

#include "base/base.h"

/* Writes context [B,K] (unless NULL), alpha [B,S] (exactly 0 at padding), energy [B,S] (the
 * e_ti, -inf at padding; may be NULL) and the cache hidden [B,S,A] = tanh(query + keys) (0 at
 * padding).
 * query [B,A] = W_q s_{t-1}. */
void attention_forward(real *context, real *alpha, real *energy, real *hidden, const real *query,
                       const real *keys, const real *enc_h, const int *src_len, const real *v,
                       int B, int S, int A, int K);

/* Writes only the cache hidden [B,S,A] = tanh(query + keys) (0 at padding), exactly as
 * attention_forward does: a caller that does not keep the cache of every step recomputes it
 * for attention_backward. */
void attention_hidden(real *hidden, const real *query, const real *keys, const int *src_len, int B,
                      int S, int A);

/* For callers that share one sentence's attention among threads by attention features: the
 * features [lo, hi) of e_i = sum_j v_j tanh(q_j + k_ij), for one query q [A] and its sentence's
 * keys [S,A]: part[i] for i < L. The e_i are the sums of the parts over the features split into
 * ranges. hid [S, hi - lo] is scratch: it gets the tanh values (0 at padding). */
void attention_energy_part(real *part, real *hid, const real *query, const real *keys,
                           const real *v, int L, int S, int A, int lo, int hi);

/* alpha [S] holds e_i (i < L) on entry and alpha_i on return: the softmax over the L positions,
 * exactly 0 at padding. energy [S] (unless NULL) gets the e_i, -inf at padding. */
void attention_weights(real *alpha, real *energy, int L, int S);

/* Given dcontext [B,K] and the forward's hidden [B,S,A]: writes dquery [B,A] and denergy [B,S]
 * (d loss / d e_ti); accumulates dkeys [B,S,A], denc_h [B,S,K] and dv [B,A], one row of
 * d loss / d v per sentence (the caller sums the rows in a fixed order, so the result does not
 * depend on how sentences are shared among threads). */
void attention_backward(real *dquery, real *denergy, real *dkeys, real *denc_h, real *dv,
                        const real *dcontext, const real *alpha, const real *hidden,
                        const real *enc_h, const int *src_len, const real *v, int B, int S, int A,
                        int K);

#endif

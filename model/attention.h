/*
 * attention.h: attention for one decoder step over a batch: the additive (Bahdanau) score,
 * below first, and the dot-product scores (dot, general, scaled_dot) after it.
 *
 *   e_ti    = v^T tanh(W_q s_{t-1} + W_k h_i + b)      (-inf for padding, i >= L)
 *   alpha_t = softmax_i(e_t)
 *   c_t     = sum_i alpha_ti h_i
 *
 * The step-independent part keys_i = W_k h_i + b is computed once per batch by the caller
 * (one matrix product over all source positions), and the query W_q s_{t-1} once per step,
 * so this file only holds the per-position work. Sizes: B sentences, S source positions,
 * A attention size, K encoder state size. keys [B,S,A], enc_h [B,S,K], src_len [B].
 *
 * The sentences run on the calling thread, one after another: the model calls a step from
 * inside its own parallel region, each thread with its share of the sentences (seq2seq.c).
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

/* ---- the dot-product scores ----
 * Each compares a query q_t [F] with a key k_i [F] precomputed once per sentence:
 *   dot         e_ti = s_{t-1} . h_i                       q = s_{t-1}, k_i = h_i, F = D = K
 *   general     e_ti = s_{t-1} . (W_a h_i)                 q = s_{t-1}, k_i = W_a h_i, F = D
 *   scaled_dot  e_ti = (W_q s_{t-1}) . (W_k h_i) / sqrt(A)  q = W_q s_{t-1}, k_i = W_k h_i, F = A
 * with e_ti = -inf at padding, alpha_t = softmax_i(e_t) and c_t = sum_i alpha_ti h_i as above.
 * Forwards write context [B,K] (unless NULL), alpha [B,S] (0 at padding) and energy [B,S]
 * (-inf at padding; may be NULL). Backwards take dcontext [B,K] and the forward's alpha; they
 * write d loss / d query [B,F] and denergy [B,S], and accumulate into dkeys [B,S,F] and
 * denc_h [B,S,K]. The query's gradient may be written over the query itself: it is written
 * only after the query's last use. */

/* dot: e_ti = s_{t-1} . h_i (D = K; the keys are the encoder states themselves, so their
 * gradient goes to denc_h). s_prev [B,K]. */
void attention_dot_forward(real *context, real *alpha, real *energy, const real *s_prev,
                           const real *enc_h, const int *src_len, int B, int S, int K);
void attention_dot_backward(real *ds_prev, real *denergy, real *denc_h, const real *dcontext,
                            const real *alpha, const real *s_prev, const real *enc_h,
                            const int *src_len, int B, int S, int K);

/* general: e_ti = s_{t-1} . (W_a h_i); keys [B,S,D] = W_a h_i, s_prev [B,D]. */
void attention_general_forward(real *context, real *alpha, real *energy, const real *s_prev,
                               const real *keys, const real *enc_h, const int *src_len, int B,
                               int S, int D, int K);
void attention_general_backward(real *ds_prev, real *denergy, real *dkeys, real *denc_h,
                                const real *dcontext, const real *alpha, const real *s_prev,
                                const real *keys, const real *enc_h, const int *src_len, int B,
                                int S, int D, int K);

/* scaled_dot: e_ti = (W_q s_{t-1}) . (W_k h_i) / sqrt(A); query [B,A] = W_q s_{t-1},
 * keys [B,S,A] = W_k h_i. */
void attention_scaled_dot_forward(real *context, real *alpha, real *energy, const real *query,
                                  const real *keys, const real *enc_h, const int *src_len, int B,
                                  int S, int A, int K);
void attention_scaled_dot_backward(real *dquery, real *denergy, real *dkeys, real *denc_h,
                                   const real *dcontext, const real *alpha, const real *query,
                                   const real *keys, const real *enc_h, const int *src_len, int B,
                                   int S, int A, int K);

/* The factor of a dot-product score: 1 / sqrt(A) for scaled_dot, 1 for dot and general. */
real attention_dot_scale(int scaled, int A);

/* For search, which shares one sentence's attention among threads by features (as
 * attention_energy_part does for the additive score): the features [lo, hi) of
 * e_i = scale * q . k_i for one query q [F] and its sentence's keys [S,F]: part[i], i < L. */
void attention_dot_energy_part(real *part, const real *query, const real *keys, real scale, int L,
                               int F, int lo, int hi);

#endif

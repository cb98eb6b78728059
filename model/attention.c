/*
 * attention.c: attention forward and backward for one decoder step, for each score (see
 * attention.h).
 */
#include "attention.h"

#include <math.h>
#include <string.h>

#include "fastmath.h"
#include "gemm.h"
#include "loss.h"

/* One sentence's hidden layer over the features [lo, hi): hid[i, j - lo] = tanh(q_j + k_ij)
 * for positions i < L, 0 for L <= i < S; hid is [S, hi - lo]. The pre-activations first, then
 * one vector tanh over all of them. */
static void sentence_hidden(real *hid, const real *q, const real *keys_b, int L, int S, int A,
                            int lo, int hi) {
    int w = hi - lo;
    for (int i = 0; i < L; i++) {
        const real *k = keys_b + (size_t)i * A;
        real *h = hid + (size_t)i * w;
        for (int j = lo; j < hi; j++) h[j - lo] = q[j] + k[j];
    }
    memset(hid + (size_t)L * w, 0, sizeof(real) * (size_t)(S - L) * w);
    vec_tanh(hid, (size_t)L * w);
}

void attention_hidden(real *hidden, const real *query, const real *keys, const int *src_len, int B,
                      int S, int A) {
    for (int b = 0; b < B; b++)
        sentence_hidden(hidden + (size_t)b * S * A, query + (size_t)b * A, keys + (size_t)b * S * A,
                        src_len[b], S, A, 0, A);
}

void attention_energy_part(real *part, real *hid, const real *query, const real *keys,
                           const real *v, int L, int S, int A, int lo, int hi) {
    sentence_hidden(hid, query, keys, L, S, A, lo, hi);
    /* part = hid v[lo:hi]: one product over the L positions */
    gemm(AS_STORED, TRANSPOSE, 1, L, hi - lo, v + lo, hi - lo, hid, hi - lo, 0, part, L);
}

void attention_weights(real *alpha, real *energy, int L, int S) {
    if (energy)
        for (int i = 0; i < S; i++) energy[i] = i < L ? alpha[i] : -INFINITY;
    /* softmax over the sentence's own positions only; padding gets exactly 0 */
    softmax_inplace(alpha, L);
    for (int i = L; i < S; i++) alpha[i] = 0;
}

/* Sentence b of attention_forward. */
static void sentence_forward(real *context, real *alpha, real *energy, real *hidden,
                             const real *query, const real *keys, const real *enc_h,
                             const int *src_len, const real *v, int b, int S, int A, int K) {
    real *a = alpha + (size_t)b * S, *c = context ? context + (size_t)b * K : NULL;
    int L = src_len[b];
    attention_energy_part(a, hidden + (size_t)b * S * A, query + (size_t)b * A,
                          keys + (size_t)b * S * A, v, L, S, A, 0, A);
    attention_weights(a, energy ? energy + (size_t)b * S : NULL, L, S);
    if (!context) return;
    memset(c, 0, sizeof(real) * (size_t)K);
    for (int i = 0; i < L; i++) vec_add_scaled(c, a[i], enc_h + ((size_t)b * S + i) * K, (size_t)K);
}

void attention_forward(real *context, real *alpha, real *energy, real *hidden, const real *query,
                       const real *keys, const real *enc_h, const int *src_len, const real *v,
                       int B, int S, int A, int K) {
    for (int b = 0; b < B; b++)
        sentence_forward(context, alpha, energy, hidden, query, keys, enc_h, src_len, v, b, S, A,
                         K);
}

/* Backward through c = sum_i alpha_i h_i and alpha = softmax(e) for one sentence (h, dh its
 * L real positions of S): dalpha_i = dc . h_i and dh_i += alpha_i dc, then
 * de_i = alpha_i (dalpha_i - sum_j alpha_j dalpha_j), 0 at padding. Every score shares it. */
static void context_softmax_backward(real *de, real *dh, const real *dc, const real *a,
                                     const real *h, int L, int S, int K) {
    real weighted = 0; /* sum_i alpha_i dalpha_i */
    for (int i = 0; i < L; i++) {
        de[i] = vec_dot(dc, h + (size_t)i * K, (size_t)K);
        vec_add_scaled(dh + (size_t)i * K, a[i], dc, (size_t)K);
        weighted += a[i] * de[i];
    }
    for (int i = 0; i < S; i++) de[i] = i < L ? a[i] * (de[i] - weighted) : 0;
}

/* One position's part of the additive score's backward: e_i = v . hidden_i, hidden_i =
 * tanh(q + k_i), so dv += de_i hidden_i and d(q + k_i) = de_i * v * (1 - hidden_i^2), added to
 * dq and dk_i. In vector clones (with restrict: the loop was scalar while these could alias). */
static VECTOR_BODY void hidden_backward_body(real *restrict dv, real *restrict dq,
                                             real *restrict dk, const real *restrict hid,
                                             const real *restrict v, real de_i, int A) {
    for (int j = 0; j < A; j++) {
        real dpre = de_i * v[j] * (1 - hid[j] * hid[j]);
        dv[j] += de_i * hid[j];
        dq[j] += dpre;
        dk[j] += dpre;
    }
}
VECTOR_DISPATCH_VOID(VECTOR_SETS, static, hidden_backward,
                     (real *restrict dv, real *restrict dq, real *restrict dk,
                      const real *restrict hid, const real *restrict v, real de_i, int A),
                     (dv, dq, dk, hid, v, de_i, A))

/* Sentence b of attention_backward. */
static void sentence_backward(real *dquery, real *denergy, real *dkeys, real *denc_h, real *dv,
                              const real *dcontext, const real *alpha, const real *hidden,
                              const real *enc_h, const int *src_len, const real *v, int b, int S,
                              int A, int K) {
    const real *dc = dcontext + (size_t)b * K, *a = alpha + (size_t)b * S;
    real *dq = dquery + (size_t)b * A, *de = denergy + (size_t)b * S;
    int L = src_len[b];
    context_softmax_backward(de, denc_h + (size_t)b * S * K, dc, a, enc_h + (size_t)b * S * K, L, S,
                             K);
    memset(dq, 0, sizeof(real) * (size_t)A);
    for (int i = 0; i < L; i++)
        hidden_backward(dv + (size_t)b * A, dq, dkeys + ((size_t)b * S + i) * A,
                        hidden + ((size_t)b * S + i) * A, v, de[i], A);
}

void attention_backward(real *dquery, real *denergy, real *dkeys, real *denc_h, real *dv,
                        const real *dcontext, const real *alpha, const real *hidden,
                        const real *enc_h, const int *src_len, const real *v, int B, int S, int A,
                        int K) {
    for (int b = 0; b < B; b++)
        sentence_backward(dquery, denergy, dkeys, denc_h, dv, dcontext, alpha, hidden, enc_h,
                          src_len, v, b, S, A, K);
}

/* ---- the dot-product scores ------------------------------------------------------------ */

real attention_dot_scale(int scaled, int A) {
    return scaled ? (real)(1 / sqrt((double)A)) : 1;
}

void attention_dot_energy_part(real *part, const real *query, const real *keys, real scale, int L,
                               int F, int lo, int hi) {
    for (int i = 0; i < L; i++)
        part[i] = scale * vec_dot(query + lo, keys + (size_t)i * F + lo, (size_t)(hi - lo));
}

/* Sentence b of product_forward: e_i = scale * q . k_i, then the softmax and the context. */
static void product_sentence_forward(real *context, real *alpha, real *energy, const real *query,
                                     const real *keys, const real *enc_h, const int *src_len,
                                     real scale, int b, int S, int F, int K) {
    real *a = alpha + (size_t)b * S, *c = context ? context + (size_t)b * K : NULL;
    int L = src_len[b];
    attention_dot_energy_part(a, query + (size_t)b * F, keys + (size_t)b * S * F, scale, L, F, 0,
                              F);
    attention_weights(a, energy ? energy + (size_t)b * S : NULL, L, S);
    if (!context) return;
    memset(c, 0, sizeof(real) * (size_t)K);
    for (int i = 0; i < L; i++) vec_add_scaled(c, a[i], enc_h + ((size_t)b * S + i) * K, (size_t)K);
}

/* e_ti = scale * q_t . k_i: what the three dot-product scores share. */
static void product_forward(real *context, real *alpha, real *energy, const real *query,
                            const real *keys, const real *enc_h, const int *src_len, real scale,
                            int B, int S, int F, int K) {
    for (int b = 0; b < B; b++)
        product_sentence_forward(context, alpha, energy, query, keys, enc_h, src_len, scale, b, S,
                                 F, K);
}

/* Sentence b of product_backward. */
static void product_sentence_backward(real *dquery, real *denergy, real *dkeys, real *denc_h,
                                      const real *dcontext, const real *alpha, const real *query,
                                      const real *keys, const real *enc_h, const int *src_len,
                                      real scale, int b, int S, int F, int K) {
    const real *dc = dcontext + (size_t)b * K, *a = alpha + (size_t)b * S;
    const real *q = query + (size_t)b * F, *k = keys + (size_t)b * S * F;
    real *dq = dquery + (size_t)b * F, *de = denergy + (size_t)b * S;
    real *dk = dkeys + (size_t)b * S * F;
    int L = src_len[b];
    context_softmax_backward(de, denc_h + (size_t)b * S * K, dc, a, enc_h + (size_t)b * S * K, L, S,
                             K);
    /* e_i = scale * q . k_i: dk_i += scale de_i q, then (after q's last read, since dq may be
     * q itself) dq = scale sum_i de_i k_i */
    for (int i = 0; i < L; i++) vec_add_scaled(dk + (size_t)i * F, scale * de[i], q, (size_t)F);
    memset(dq, 0, sizeof(real) * (size_t)F);
    for (int i = 0; i < L; i++) vec_add_scaled(dq, scale * de[i], k + (size_t)i * F, (size_t)F);
}

static void product_backward(real *dquery, real *denergy, real *dkeys, real *denc_h,
                             const real *dcontext, const real *alpha, const real *query,
                             const real *keys, const real *enc_h, const int *src_len, real scale,
                             int B, int S, int F, int K) {
    for (int b = 0; b < B; b++)
        product_sentence_backward(dquery, denergy, dkeys, denc_h, dcontext, alpha, query, keys,
                                  enc_h, src_len, scale, b, S, F, K);
}

/* dot: e_ti = s_{t-1} . h_i */
void attention_dot_forward(real *context, real *alpha, real *energy, const real *s_prev,
                           const real *enc_h, const int *src_len, int B, int S, int K) {
    product_forward(context, alpha, energy, s_prev, enc_h, enc_h, src_len, 1, B, S, K, K);
}

/* dot backward: the keys are h_i, so d e_ti / d h_i joins the context's part in denc_h */
void attention_dot_backward(real *ds_prev, real *denergy, real *denc_h, const real *dcontext,
                            const real *alpha, const real *s_prev, const real *enc_h,
                            const int *src_len, int B, int S, int K) {
    product_backward(ds_prev, denergy, denc_h, denc_h, dcontext, alpha, s_prev, enc_h, enc_h,
                     src_len, 1, B, S, K, K);
}

/* general: e_ti = s_{t-1} . (W_a h_i), keys = W_a h_i */
void attention_general_forward(real *context, real *alpha, real *energy, const real *s_prev,
                               const real *keys, const real *enc_h, const int *src_len, int B,
                               int S, int D, int K) {
    product_forward(context, alpha, energy, s_prev, keys, enc_h, src_len, 1, B, S, D, K);
}

void attention_general_backward(real *ds_prev, real *denergy, real *dkeys, real *denc_h,
                                const real *dcontext, const real *alpha, const real *s_prev,
                                const real *keys, const real *enc_h, const int *src_len, int B,
                                int S, int D, int K) {
    product_backward(ds_prev, denergy, dkeys, denc_h, dcontext, alpha, s_prev, keys, enc_h, src_len,
                     1, B, S, D, K);
}

/* scaled_dot: e_ti = (W_q s_{t-1}) . (W_k h_i) / sqrt(A), query = W_q s_{t-1}, keys = W_k h_i */
void attention_scaled_dot_forward(real *context, real *alpha, real *energy, const real *query,
                                  const real *keys, const real *enc_h, const int *src_len, int B,
                                  int S, int A, int K) {
    product_forward(context, alpha, energy, query, keys, enc_h, src_len, attention_dot_scale(1, A),
                    B, S, A, K);
}

void attention_scaled_dot_backward(real *dquery, real *denergy, real *dkeys, real *denc_h,
                                   const real *dcontext, const real *alpha, const real *query,
                                   const real *keys, const real *enc_h, const int *src_len, int B,
                                   int S, int A, int K) {
    product_backward(dquery, denergy, dkeys, denc_h, dcontext, alpha, query, keys, enc_h, src_len,
                     attention_dot_scale(1, A), B, S, A, K);
}

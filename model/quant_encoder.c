/*
 * quant_encoder.c: an int8 model's encoder (see quant_encoder.h), beside the int8 weights
 * (quant.c) and products (qgemm.c) it runs on.
 */
#include "model/quant_encoder.h"

#include <string.h>

#include <omp.h>

#include "model/fastmath.h"
#include "model/gru.h"
#include "model/layernorm.h"
#include "model/layers.h"
#include "model/qgemm.h"

/* The int8 encoder's rows (Acts.enc_xq): every position's x_i, both directions' states of
 * one step, or every h_i; and their width, whole groups of the kernels' inputs. */
static size_t int8_rows(int max_B, int max_S) {
    size_t all = (size_t)max_S * max_B, step = 2 * (size_t)max_B;
    return all > step ? all : step;
}
static int int8_room(const ModelDims *d) {
    int widest = d->emb > dims_enc_state(d) ? d->emb : dims_enc_state(d);
    return (qpack_row_room(widest) + 15) / 16 * 16;
}

double int8_encoder_bytes(const ModelDims *d, int max_B, int max_S) {
    return (double)int8_rows(max_B, max_S) * (int8_room(d) + sizeof(float));
}

int int8_encoder_plan(Acts *a, const ModelDims *d, int max_B, int max_S, Error *err) {
    size_t rows = int8_rows(max_B, max_S);
    a->enc_xq_room = int8_room(d);
    a->enc_xq = checked_calloc(rows, (size_t)a->enc_xq_room, "int8 activations", err);
    a->enc_xs = checked_calloc(rows, sizeof(float), "int8 activations", err);
    return a->enc_xq && a->enc_xs ? 0 : -1;
}

/* Rows [0, rows) of x quantized into a->enc_xq from row `at` on, shared among the threads of
 * the team (the caller waits at a barrier before reading them). */
static void quantize_shared(Acts *a, const real *x, int ld, int rows, int cols, size_t at) {
    int first, count;
    share_rows(rows, omp_get_thread_num(), omp_get_num_threads(), &first, &count);
    quantize_rows(x + (size_t)first * ld, ld, count, cols,
                  a->enc_xq + (at + first) * a->enc_xq_room, a->enc_xq_room,
                  a->enc_xs + at + first);
}

void encoder_forward_int8(const Model *m, Acts *a, int B, int S) {
    const ModelDims *d = &m->dims;
    const Weights *w = &m->w;
    const QPacked *packs = m->quant->packs;
    int E = d->emb, H = d->enc_hidden, K = dims_enc_state(d), D = d->dec_hidden;
    int F = dims_att_features(d), dirs = d->bidirectional ? 2 : 1, room = a->enc_xq_room;
    embedding_forward(a->x, E, a->src_ids, NULL, w->src_emb, S * B, E);
    for (int dir = 0; dir < dirs; dir++)
        memset(state_slot(a->enc_state[dir], dir == 0 ? 0 : S, B, H), 0,
               sizeof(real) * (size_t)B * H);
#pragma omp parallel
    {
        int dir0, dir1, part, parts, b0, nb, lo, n;
        encoder_share(dirs, &dir0, &dir1, &part, &parts);
        share_rows(B, part, parts, &b0, &nb);
        quantize_shared(a, a->x, E, S * B, E, 0);
#pragma omp barrier
        for (int dir = dir0; dir < dir1; dir++) { /* gi = W_ih x_i + b_ih, all positions */
            const GruWeights *gw = dir == 0 ? &w->enc_fwd : &w->enc_bwd;
            share_rows(3 * H, part, parts, &lo, &n);
            qlinear_packed(a->enc_gi[dir], 3 * H, a->enc_xq, room, a->enc_xs,
                           &packs[dir == 0 ? QP_ENC_FWD_IH : QP_ENC_BWD_IH],
                           d->layer_norm ? NULL : gw->b_ih, S * B, lo, lo + n, 0);
        }
#pragma omp barrier
        for (int dir = dir0; dir < dir1 && nb > 0; dir++) {
            const GruWeights *gw = dir == 0 ? &w->enc_fwd : &w->enc_bwd;
            real *states = a->enc_state[dir], *gh = a->scratch + ((size_t)dir * B + b0) * 3 * H;
            int8_t *xq = a->enc_xq + ((size_t)dir * B + b0) * room;
            float *xs = a->enc_xs + (size_t)dir * B + b0;
            for (int step = 0; step < S; step++) {
                int i = dir == 0 ? step : S - 1 - step;
                int from = dir == 0 ? i : i + 1, to = dir == 0 ? i + 1 : i;
                size_t row = (size_t)i * B + b0; /* row (i, b0) of [S*B, ...] */
                const real *h_prev = state_slot(states, from, B, H) + (size_t)b0 * H;
                quantize_rows(h_prev, H, nb, H, xq, room, xs);
                qlinear_packed(gh, 3 * H, xq, room, xs,
                               &packs[dir == 0 ? QP_ENC_FWD_HH : QP_ENC_BWD_HH], NULL, nb, 0, 3 * H,
                               0);
                if (d->layer_norm) { /* the products are int8, the normalisation float */
                    GruNormCache *nc = &a->enc_norm[dir];
                    normalise_input(a->enc_gi[dir], nc, gw, row, nb, H);
                    layernorm_forward(gh, 3 * H, nc->xhat_h + row * 3 * H, nc->rstd_h + row, gh,
                                      3 * H, gw->g_hh, NULL, nb, 3 * H);
                }
                gru_gates_forward(state_slot(states, to, B, H) + (size_t)b0 * H,
                                  a->enc_cache[dir] + row * 4 * H, a->enc_gi[dir] + row * 3 * H, gh,
                                  h_prev, gw->b_hh, a->src_len + b0, i, nb, H);
            }
            encoder_states_out(a, states, dir, b0, nb, S, B, H, K);
        }
#pragma omp barrier
        if (d->score != SCORE_DOT) {
            quantize_shared(a, a->enc_h, K, B * S, K, 0);
#pragma omp barrier
            share_rows(F, omp_get_thread_num(), omp_get_num_threads(), &lo, &n);
            qlinear_packed(a->keys, F, a->enc_xq, room, a->enc_xs, &packs[QP_KEYS], w->att_b, B * S,
                           lo, lo + n, 0);
        }
        share_rows(D, omp_get_thread_num(), omp_get_num_threads(), &lo, &n);
        linear_columns(a->dec_state, D, a->h_last, K, w->init_w, K, w->init_b, B, K, lo, lo + n, 0);
        for (int b = 0; b < B && n > 0; b++) tanh_forward(a->dec_state + (size_t)b * D + lo, n);
    }
}

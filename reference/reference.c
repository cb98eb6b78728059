/*
 * reference.c: the whole of docs/MODEL-SPEC.md in plain loops, to be read top to bottom: the
 * GRU encoder, the four attention scores, the GRU decoder, the readout, the loss, and the
 * backward pass of each, then Adam and greedy decoding.
 *
 * It is the model a reader studies and the arithmetic the fast engine (model/) is tested
 * against (tests/test_reference.c): one thread, one sentence and one step at a time, products
 * as plain loops, everything in double. It deliberately has none of the engine's speed: no
 * threads, no SIMD, no packing of rows, no chunks, no timers, no skipped rows. Each layer is a
 * forward/backward pair under the spec's equation; each backward quotes the forward line it
 * differentiates, and ADDS into its gradients (d loss / d x is a sum over every path from x).
 *
 * Letters as in the spec: B sentences in the batch, S and T the longest source and target
 * (with </s>), L a sentence's own source length, Vs and Vt the vocabularies, E the embedding,
 * H the encoder GRU per direction, K = 2H (bidirectional) or H the encoder state h_i, D the
 * decoder state s_t, A the attention size, O the readout, F the size of the vectors a score
 * compares (A for additive and scaled_dot, D for dot and general). W x is a matrix [out, in]
 * times a column vector. Arrays are sentence-major: [B, S, K] is sentence b's position i at
 * (b * S + i) * K, with the current batch's B, S and T as strides.
 */
#include "reference/reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- plain products ------------------------------------------------------------------- */

/* sum_i w[i] x[i]: a row of parameters times an activation */
static double dot(const real *w, const double *x, int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += w[i] * x[i];
    return sum;
}

/* sum_i x[i] y[i] of two activations */
static double vec_dot(const double *x, const double *y, int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += x[i] * y[i];
    return sum;
}

/* y = W x + b, W [out, in] row-major; b may be NULL. */
static void linear_forward(double *y, const real *W, const real *b, const double *x, int out,
                           int in) {
    for (int o = 0; o < out; o++) y[o] = (b ? b[o] : 0) + dot(W + (size_t)o * in, x, in);
}

/* forward was y = W x + b, so dx += W^T dy, dW += dy x^T, db += dy (dx, db may be NULL). */
static void linear_backward(double *dx, double *dW, double *db, const double *dy, const double *x,
                            const real *W, int out, int in) {
    for (int o = 0; o < out; o++) {
        for (int i = 0; i < in; i++) {
            if (dx) dx[i] += W[(size_t)o * in + i] * dy[o];
            dW[(size_t)o * in + i] += dy[o] * x[i];
        }
        if (db) db[o] += dy[o];
    }
}

static double sigmoid(double x) {
    return 1 / (1 + exp(-x));
}

/* ---- the parameters ------------------------------------------------------------------- */

/* The gradients of one GRU's tensors, in the double gradient block (the gains' are used only
 * by a layer-normalised GRU). */
typedef struct {
    double *w_ih, *w_hh, *b_ih, *b_hh, *g_ih, *g_hh;
} GruGrads;

/* d loss / d tensor p, a view of the double gradient block laid out like the parameters. */
static double *grad_of(const RefActs *a, ParamId p) {
    return a->grads + a->table.info[p].offset;
}

/* The tensors of a GRU whose w_ih is `first` (the table lists them in the order w_ih, w_hh,
 * b_ih, b_hh, g_ih, g_hh). */
static GruGrads gru_grads(const RefActs *a, ParamId first) {
    return (GruGrads){grad_of(a, first),     grad_of(a, first + 1), grad_of(a, first + 2),
                      grad_of(a, first + 3), grad_of(a, first + 4), grad_of(a, first + 5)};
}

/* Named views of the parameter block (model/params.h); nothing here writes through them but
 * Adam. */
static Weights weights_of(const RefActs *a, const real *params) {
    Weights w;
    weights_view(&w, &a->table, (real *)params);
    return w;
}

/* ---- memory: planned once ------------------------------------------------------------- */

/* Backward's vectors of one sentence and one step (and forward's pre-activations), carved out
 * of a->block once, by ref_acts_init. */
typedef struct RefScratch {
    double *d_enc_h, *d_keys, *d_x;           /* [S, K], [S, F], [S, E] of one sentence */
    double *carry, *d_prev;                   /* [max(H, D)] d loss / d state flowing back */
    double *d_state, *d_h_last;               /* [max(H, D)], [K] */
    double *dz, *d_o, *o_drop, *d_readout_in; /* [Vt], [O], [O], [D+K+E] */
    double *d_gru_in, *d_query, *d_alpha;     /* [E+K], [A], [S] */
    double *hidden, *zeros;                   /* [S, A] attention's hidden layer, [max(H, D)] */
    double *pre, *d_pre; /* [6 max(H, D)] a GRU step's gi and gh, and their gradients */
} Scratch;

/* A GRU step's cache (gru_forward): r, z, n and hn [4N], then for a layer-normalised GRU the
 * normalisations of W_ih x and W_hh h (xhat [3N] and rstd each). */
static int gru_cache_width(const ModelDims *d, int N) {
    return 4 * N + (d->layer_norm ? 2 * (3 * N + 1) : 0);
}

/* Lays every array out from base (NULL only counts) and returns how many doubles they take. */
static size_t layout(RefActs *a, Scratch *sc, double *base) {
    const ModelDims *d = &a->dims;
    size_t B = a->max_B, S = a->max_S, T = a->max_T, E = d->emb, H = d->enc_hidden,
           K = dims_enc_state(d), D = d->dec_hidden, A = d->att, O = d->readout, V = d->tgt_vocab,
           F = dims_att_features(d), N = H > D ? H : D;
    struct {
        double **slot;
        size_t count;
    } arrays[] = {
        {&a->x, B * S * E},
        {&a->x_keep, B * S * E},
        {&a->enc_cache[0], B * S * gru_cache_width(d, (int)H)},
        {&a->enc_cache[1], B * S * gru_cache_width(d, (int)H)},
        {&a->enc_state[0], B * S * H},
        {&a->enc_state[1], B * S * H},
        {&a->enc_h, B * S * K},
        {&a->keys, B * S * F},
        {&a->h_last, B * K},
        {&a->s, B * (T + 1) * D},
        {&a->dec_cache, B * T * gru_cache_width(d, (int)D)},
        {&a->query, B * T * A},
        {&a->alpha, B * T * S},
        {&a->energy, B * T * S},
        {&a->context, B * T * K},
        {&a->u_keep, B * T * E},
        {&a->o_keep, B * T * O},
        {&a->gru_in, B * T * (E + K)},
        {&a->readout_in, B * T * (D + K + E)},
        {&a->readout, B * T * O},
        {&a->logits, B * T * V},
        {&a->lse, B * T},
        {&a->grads, a->table.total},
        {&sc->d_enc_h, S * K},
        {&sc->d_keys, S * F},
        {&sc->d_x, S * E},
        {&sc->carry, N},
        {&sc->d_prev, N},
        {&sc->d_state, N},
        {&sc->d_h_last, K},
        {&sc->dz, V},
        {&sc->d_o, O},
        {&sc->o_drop, O},
        {&sc->d_readout_in, D + K + E},
        {&sc->d_gru_in, E + K},
        {&sc->d_query, A},
        {&sc->d_alpha, S},
        {&sc->hidden, S * A},
        {&sc->zeros, N},
        {&sc->pre, 6 * N},
        {&sc->d_pre, 6 * N},
    };
    size_t at = 0;
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++) {
        if (base) *arrays[k].slot = base + at;
        at += arrays[k].count;
    }
    return at;
}

int ref_acts_init(RefActs *a, const ModelDims *dims, int max_B, int max_S, int max_T, Error *err) {
    memset(a, 0, sizeof *a);
    if (dims_validate(dims, err)) return -1;
    if (max_B < 1 || max_S < 1 || max_T < 1)
        return error_set(err, "invalid batch plan %d x %d x %d", max_B, max_S, max_T);
    a->dims = *dims;
    param_table_build(&a->table, dims);
    a->max_B = max_B, a->max_S = max_S, a->max_T = max_T;
    a->scratch = checked_calloc(1, sizeof *a->scratch, "reference scratch", err);
    a->block = a->scratch ? checked_calloc(layout(a, a->scratch, NULL), sizeof(double),
                                           "reference activations", err)
                          : NULL;
    size_t ids = (size_t)max_B * (max_S + 2 * max_T + 2);
    a->int_block = a->block ? checked_calloc(ids, sizeof(int), "reference ids", err) : NULL;
    if (!a->int_block) {
        ref_acts_free(a);
        return -1;
    }
    layout(a, a->scratch, a->block);
    a->src_ids = a->int_block;
    a->tgt_in = a->src_ids + (size_t)max_B * max_S;
    a->tgt_out = a->tgt_in + (size_t)max_B * max_T;
    a->src_len = a->tgt_out + (size_t)max_B * max_T;
    a->tgt_len = a->src_len + max_B;
    return 0;
}

void ref_acts_free(RefActs *a) {
    free(a->block);
    free(a->int_block);
    free(a->scratch);
    memset(a, 0, sizeof *a);
}

/* ---- dropout -------------------------------------------------------------------------- */

/* Inverted dropout keeps a value with probability 1 - p and scales it by 1 / (1 - p), so its
 * expectation is unchanged: y = x * keep with keep 0 or 1 / (1 - p). The scales are drawn as
 * the engine draws them, so that the same stream gives the same masks: one uniform number per
 * value, position-major (position, then sentence, then unit) over the batch's whole shape,
 * padding included; keep is stored sentence-major [B, L, n]. */
static void dropout_draw(double *keep, int B, int L, int n, double p, Rng *rng) {
    double scale = 1 / (1 - p);
    for (int i = 0; i < L; i++)
        for (int b = 0; b < B; b++)
            for (int j = 0; j < n; j++)
                keep[((size_t)b * L + i) * n + j] = rng_uniform(rng) < p ? 0 : scale;
}

/* Word dropout (spec: extensions) drops whole tokens: one uniform number per position and
 * sentence, drawn in the same position-major order after the element-wise masks, scaling the
 * token's whole row of keep (1 where element-wise dropout is off) by 0 or 1 / (1 - p). */
static void word_dropout_draw(double *keep, int B, int L, int n, double p, Rng *rng) {
    double scale = 1 / (1 - p);
    for (int i = 0; i < L; i++)
        for (int b = 0; b < B; b++) {
            double word = rng_uniform(rng) < p ? 0 : scale;
            for (int j = 0; j < n; j++) keep[((size_t)b * L + i) * n + j] *= word;
        }
}

/* ---- embeddings ----------------------------------------------------------------------- */

/* x = emb[id] (* keep): a row of the table [V, E]. */
static void embedding_forward(double *x, const real *emb, int id, const double *keep, int E) {
    for (int j = 0; j < E; j++) x[j] = emb[(size_t)id * E + j] * (keep ? keep[j] : 1);
}

/* forward was x = emb[id] * keep, so d emb[id] += dx * keep. */
static void embedding_backward(double *d_emb, int id, const double *dx, const double *keep, int E) {
    for (int j = 0; j < E; j++) d_emb[(size_t)id * E + j] += dx[j] * (keep ? keep[j] : 1);
}

/* ---- layer normalisation (spec: extensions, model.layer_norm) ------------------------- */
/*
 *   LN(a) = (a - mean(a)) / sqrt(var(a) + 1e-5)     mean and biased variance over the n entries
 *   y = g * LN(a) + b
 * norm keeps xhat = LN(a) [n] and then rstd = 1 / sqrt(var(a) + 1e-5).
 */
static void layernorm_forward(double *y, double *norm, const double *a, const real *g,
                              const real *b, int n) {
    double mean = 0, var = 0;
    for (int k = 0; k < n; k++) mean += a[k] / n;
    for (int k = 0; k < n; k++) var += (a[k] - mean) * (a[k] - mean) / n;
    double rstd = 1 / sqrt(var + 1e-5);
    for (int k = 0; k < n; k++) {
        norm[k] = (a[k] - mean) * rstd;
        y[k] = g[k] * norm[k] + b[k];
    }
    norm[n] = rstd;
}

/* forward was y = g * xhat + b, xhat = (a - mean(a)) * rstd, so with dxhat = dy * g:
 *   da = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))     (written)
 *   dg += dy * xhat,  db += dy */
static void layernorm_backward(double *da, double *dg, double *db, const double *dy,
                               const double *norm, const real *g, int n) {
    const double *xhat = norm;
    double rstd = norm[n], mean_d = 0, mean_dx = 0;
    for (int k = 0; k < n; k++) {
        mean_d += dy[k] * g[k] / n;
        mean_dx += dy[k] * g[k] * xhat[k] / n;
        dg[k] += dy[k] * xhat[k];
        db[k] += dy[k];
    }
    for (int k = 0; k < n; k++) da[k] = rstd * (dy[k] * g[k] - mean_d - xhat[k] * mean_dx);
}

/* ---- GRU cell ------------------------------------------------------------------------- */
/*
 *   r  = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
 *   z  = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
 *   n  = tanh(W_in x + b_in + r * (W_hn h + b_hn))
 *   h' = (1 - z) * n + z * h
 * Rows 0..N-1 of w_ih [3N, in] and w_hh [3N, N] are r's, N..2N-1 z's, 2N..3N-1 n's.
 * Layer-normalised (spec: extensions; the gains g_ih, g_hh are present), W_ih x + b_ih becomes
 * gi = g_ih * LN(W_ih x) + b_ih and W_hh h + b_hh becomes gh = g_hh * LN(W_hh h) + b_hh, each
 * LN over all 3N rows.
 * cache [gru_cache_width] keeps r, z, n and hn = W_hn h + b_hn (the n rows of gh), then, when
 * normalised, the normalisations of W_ih x and of W_hh h (layernorm_forward's norm each, 3N + 1).
 * pre [6N] is scratch for the pre-activations gi and gh.
 */
static void gru_forward(double *h_new, double *cache, double *pre, const double *x, const double *h,
                        const GruWeights *w, int in, int N) {
    double *r = cache, *z = cache + N, *n = cache + 2 * N, *hn = cache + 3 * N;
    double *gi = pre, *gh = pre + 3 * N;
    double *norm_ih = cache + 4 * N, *norm_hh = norm_ih + 3 * N + 1;
    for (int k = 0; k < 3 * N; k++) {
        gi[k] = dot(w->w_ih + (size_t)k * in, x, in);
        gh[k] = dot(w->w_hh + (size_t)k * N, h, N);
    }
    if (w->g_ih) {
        layernorm_forward(gi, norm_ih, gi, w->g_ih, w->b_ih, 3 * N);
        layernorm_forward(gh, norm_hh, gh, w->g_hh, w->b_hh, 3 * N);
    } else {
        for (int k = 0; k < 3 * N; k++) gi[k] += w->b_ih[k], gh[k] += w->b_hh[k];
    }
    for (int j = 0; j < N; j++) {
        r[j] = sigmoid(gi[j] + gh[j]);
        z[j] = sigmoid(gi[N + j] + gh[N + j]);
        hn[j] = gh[2 * N + j];
        n[j] = tanh(gi[2 * N + j] + r[j] * hn[j]);
        h_new[j] = (1 - z[j]) * n[j] + z[j] * h[j];
    }
}

/* Given dh = d loss / d h', adds d loss / d x into dx, d loss / d h into dh_prev and the
 * weights' gradients into g. d_pre [6N] is scratch. */
static void gru_backward(double *dx, double *dh_prev, const GruGrads *g, double *d_pre,
                         const double *dh, const double *cache, const double *x, const double *h,
                         const GruWeights *w, int in, int N) {
    const double *r = cache, *z = cache + N, *n = cache + 2 * N, *hn = cache + 3 * N;
    double *d_gi = d_pre, *d_gh = d_pre + 3 * N;
    const double *norm_ih = cache + 4 * N, *norm_hh = norm_ih + 3 * N + 1;
    for (int j = 0; j < N; j++) {
        /* h' = (1 - z) * n + z * h */
        double dn = dh[j] * (1 - z[j]), dz = dh[j] * (h[j] - n[j]);
        dh_prev[j] += dh[j] * z[j];
        /* n = tanh(a_n), a_n = gi_n + r * hn */
        double da_n = dn * (1 - n[j] * n[j]);
        double dr = da_n * hn[j], d_hn = da_n * r[j];
        /* r = sigmoid(a_r), z = sigmoid(a_z): sigmoid' = s (1 - s); a = gi + gh */
        double da_r = dr * r[j] * (1 - r[j]), da_z = dz * z[j] * (1 - z[j]);
        d_gi[j] = da_r, d_gi[N + j] = da_z, d_gi[2 * N + j] = da_n;
        d_gh[j] = da_r, d_gh[N + j] = da_z, d_gh[2 * N + j] = d_hn;
    }
    double *db_ih = g->b_ih, *db_hh = g->b_hh;
    if (w->g_ih) {
        /* gi = g_ih * LN(W_ih x) + b_ih, gh = g_hh * LN(W_hh h) + b_hh: d_gi and d_gh become
         * d (W_ih x) and d (W_hh h) */
        layernorm_backward(d_gi, g->g_ih, g->b_ih, d_gi, norm_ih, w->g_ih, 3 * N);
        layernorm_backward(d_gh, g->g_hh, g->b_hh, d_gh, norm_hh, w->g_hh, 3 * N);
        db_ih = db_hh = NULL;
    }
    /* W_ih x (+ b_ih) and W_hh h (+ b_hh) */
    linear_backward(dx, g->w_ih, db_ih, d_gi, x, w->w_ih, 3 * N, in);
    linear_backward(dh_prev, g->w_hh, db_hh, d_gh, h, w->w_hh, 3 * N, N);
}

/* ---- encoder -------------------------------------------------------------------------- */
/*
 *   x_i = src_emb[src_i]                         (dropout: x_i * keep)
 *   forward GRU  over i = 0 .. L-1 from h = 0 -> f_i
 *   backward GRU over i = L-1 .. 0 from h = 0 -> g_i      (bidirectional only)
 *   h_i = [f_i ; g_i]  (K = 2H)  or  h_i = f_i  (K = H);  h_i = 0 for padding i >= L
 *   h_last = [f_{L-1} ; g_0]  or  f_{L-1}
 * Padding positions are never fed to either direction.
 */
static void encoder_forward(RefActs *a, const Weights *w, int b) {
    const ModelDims *d = &a->dims;
    int S = a->S, L = a->src_len[b], E = d->emb, H = d->enc_hidden, K = dims_enc_state(d);
    int dirs = d->bidirectional ? 2 : 1;
    const Scratch *sc = a->scratch;
    int cw = gru_cache_width(d, H);
    for (int i = 0; i < L; i++) {
        size_t at = (size_t)b * S + i;
        embedding_forward(a->x + at * E, w->src_emb, a->src_ids[at],
                          a->embedding_drop ? a->x_keep + at * E : NULL, E);
    }
    for (int dir = 0; dir < dirs; dir++) {
        const GruWeights *gw = dir == 0 ? &w->enc_fwd : &w->enc_bwd;
        for (int step = 0; step < L; step++) {
            int i = dir == 0 ? step : L - 1 - step, prev = dir == 0 ? i - 1 : i + 1;
            size_t at = (size_t)b * S + i;
            const double *h =
                step == 0 ? sc->zeros : a->enc_state[dir] + ((size_t)b * S + prev) * H;
            gru_forward(a->enc_state[dir] + at * H, a->enc_cache[dir] + at * cw, sc->pre,
                        a->x + at * E, h, gw, E, H);
            memcpy(a->enc_h + at * K + dir * H, a->enc_state[dir] + at * H, sizeof(double) * H);
        }
        /* f_{L-1} (the forward GRU's last state) or g_0 (the backward GRU's) */
        int last = dir == 0 ? L - 1 : 0;
        memcpy(a->h_last + (size_t)b * K + dir * H, a->enc_state[dir] + ((size_t)b * S + last) * H,
               sizeof(double) * H);
    }
}

/* Given d loss / d h_i (d_enc_h, [S, K] of sentence b) and d loss / d h_last, the encoder's
 * gradients, back through both directions and the embeddings. */
static void encoder_backward(RefActs *a, const Weights *w, int b, const Scratch *sc) {
    const ModelDims *d = &a->dims;
    int S = a->S, L = a->src_len[b], E = d->emb, H = d->enc_hidden, K = dims_enc_state(d);
    int cw = gru_cache_width(d, H);
    int dirs = d->bidirectional ? 2 : 1;
    memset(sc->d_x, 0, sizeof(double) * (size_t)L * E);
    for (int dir = 0; dir < dirs; dir++) {
        const GruWeights *gw = dir == 0 ? &w->enc_fwd : &w->enc_bwd;
        GruGrads gg = gru_grads(a, dir == 0 ? P_ENC_FWD_W_IH : P_ENC_BWD_W_IH);
        /* h_last = [f_{L-1} ; g_0]: the last state of the direction starts the carry */
        memcpy(sc->carry, sc->d_h_last + dir * H, sizeof(double) * H);
        for (int step = L - 1; step >= 0; step--) {
            int i = dir == 0 ? step : L - 1 - step, prev = dir == 0 ? i - 1 : i + 1;
            size_t at = (size_t)b * S + i;
            /* the state is both h_i (attention, keys) and the next step's input (the carry) */
            for (int j = 0; j < H; j++)
                sc->d_state[j] = sc->carry[j] + sc->d_enc_h[(size_t)i * K + dir * H + j];
            const double *h =
                step == 0 ? sc->zeros : a->enc_state[dir] + ((size_t)b * S + prev) * H;
            memset(sc->carry, 0, sizeof(double) * H);
            gru_backward(sc->d_x + (size_t)i * E, sc->carry, &gg, sc->d_pre, sc->d_state,
                         a->enc_cache[dir] + at * cw, a->x + at * E, h, gw, E, H);
        }
    }
    /* x_i = src_emb[src_i] * keep */
    for (int i = 0; i < L; i++) {
        size_t at = (size_t)b * S + i;
        embedding_backward(grad_of(a, P_SRC_EMB), a->src_ids[at], sc->d_x + (size_t)i * E,
                           a->embedding_drop ? a->x_keep + at * E : NULL, E);
    }
}

/* ---- keys and the decoder's initial state --------------------------------------------- */
/*
 *   k_i = W_k h_i + b (additive), W_a h_i (general), W_k h_i (scaled_dot); dot uses h_i itself
 *   s_0 = tanh(W_init h_last + b_init)
 */
static void keys_and_init_forward(RefActs *a, const Weights *w, int b) {
    const ModelDims *d = &a->dims;
    int S = a->S, L = a->src_len[b], K = dims_enc_state(d), D = d->dec_hidden,
        F = dims_att_features(d);
    const real *key_w = d->score == SCORE_GENERAL ? w->att_w_a : w->att_w_k;
    const real *key_b = d->score == SCORE_ADDITIVE ? w->att_b : NULL;
    if (d->score != SCORE_DOT)
        for (int i = 0; i < L; i++)
            linear_forward(a->keys + ((size_t)b * S + i) * F, key_w, key_b,
                           a->enc_h + ((size_t)b * S + i) * K, F, K);
    double *s0 = a->s + (size_t)b * (a->T + 1) * D;
    linear_forward(s0, w->init_w, w->init_b, a->h_last + (size_t)b * K, D, K);
    for (int j = 0; j < D; j++) s0[j] = tanh(s0[j]);
}

/* Given d loss / d s_0 (sc->carry) and d loss / d k_i (sc->d_keys), adds into d loss / d h_i
 * (sc->d_enc_h) and sets d loss / d h_last (sc->d_h_last). */
static void keys_and_init_backward(RefActs *a, const Weights *w, int b, const Scratch *sc) {
    const ModelDims *d = &a->dims;
    int S = a->S, L = a->src_len[b], K = dims_enc_state(d), D = d->dec_hidden,
        F = dims_att_features(d);
    /* s_0 = tanh(W_init h_last + b_init): tanh' = 1 - s_0^2 */
    const double *s0 = a->s + (size_t)b * (a->T + 1) * D;
    for (int j = 0; j < D; j++) sc->d_state[j] = sc->carry[j] * (1 - s0[j] * s0[j]);
    memset(sc->d_h_last, 0, sizeof(double) * K);
    linear_backward(sc->d_h_last, grad_of(a, P_DEC_INIT_W), grad_of(a, P_DEC_INIT_B), sc->d_state,
                    a->h_last + (size_t)b * K, w->init_w, D, K);
    /* k_i = W h_i (+ b) */
    if (d->score == SCORE_DOT) return;
    int general = d->score == SCORE_GENERAL;
    double *dW = grad_of(a, general ? P_ATT_W_A : P_ATT_W_K);
    double *db = d->score == SCORE_ADDITIVE ? grad_of(a, P_ATT_B) : NULL;
    for (int i = 0; i < L; i++)
        linear_backward(sc->d_enc_h + (size_t)i * K, dW, db, sc->d_keys + (size_t)i * F,
                        a->enc_h + ((size_t)b * S + i) * K, general ? w->att_w_a : w->att_w_k, F,
                        K);
}

/* ---- attention ------------------------------------------------------------------------ */
/*
 * The query at step t is s_{t-1}; for each source position i < L a score e_ti:
 *   additive    e_ti = v^T tanh(W_q s_{t-1} + k_i)       (k_i = W_k h_i + b)
 *   dot         e_ti = s_{t-1} . h_i                      (D = K)
 *   general     e_ti = s_{t-1} . k_i                      (k_i = W_a h_i)
 *   scaled_dot  e_ti = (W_q s_{t-1}) . k_i / sqrt(A)      (k_i = W_k h_i)
 *   e_ti = -inf for padding i >= L
 *   alpha_t = softmax_i(e_t)          c_t = sum_i alpha_ti h_i
 */
static void attention_forward(RefActs *a, const Weights *w, int b, int t) {
    const ModelDims *d = &a->dims;
    int S = a->S, L = a->src_len[b], K = dims_enc_state(d), D = d->dec_hidden, A = d->att,
        F = dims_att_features(d);
    size_t row = (size_t)b * a->T + (t - 1);
    const double *s_prev = a->s + ((size_t)b * (a->T + 1) + t - 1) * D;
    const double *h = a->enc_h + (size_t)b * S * K, *k = a->keys + (size_t)b * S * F;
    double *q = a->query + row * A, *e = a->energy + row * S, *alpha = a->alpha + row * S;
    if (d->score == SCORE_ADDITIVE || d->score == SCORE_SCALED_DOT)
        linear_forward(q, w->att_w_q, NULL, s_prev, A, D);
    for (int i = 0; i < L; i++) {
        switch (d->score) {
        case SCORE_ADDITIVE:
            e[i] = 0;
            for (int j = 0; j < A; j++) e[i] += w->att_v[j] * tanh(q[j] + k[(size_t)i * A + j]);
            break;
        case SCORE_DOT:
            e[i] = vec_dot(s_prev, h + (size_t)i * K, K);
            break;
        case SCORE_GENERAL:
            e[i] = vec_dot(s_prev, k + (size_t)i * D, D);
            break;
        default:
            e[i] = vec_dot(q, k + (size_t)i * A, A) / sqrt((double)A);
        }
    }
    /* softmax over the sentence's own positions, from the largest score (exp stays <= 1) */
    double max = e[0], sum = 0;
    for (int i = 1; i < L; i++) max = e[i] > max ? e[i] : max;
    for (int i = 0; i < L; i++) sum += alpha[i] = exp(e[i] - max);
    for (int i = 0; i < S; i++) alpha[i] = i < L ? alpha[i] / sum : 0;
    for (int i = L; i < S; i++) e[i] = -INFINITY;
    double *c = a->context + row * K;
    memset(c, 0, sizeof(double) * K);
    for (int i = 0; i < L; i++)
        for (int j = 0; j < K; j++) c[j] += alpha[i] * h[(size_t)i * K + j];
}

/* Given dc = d loss / d c_t, adds d loss / d s_{t-1} into ds_prev and attention's gradients
 * into sc->d_enc_h, sc->d_keys and the parameters'. */
static void attention_backward(RefActs *a, const Weights *w, int b, int t, const double *dc,
                               double *ds_prev, const Scratch *sc) {
    const ModelDims *d = &a->dims;
    int S = a->S, L = a->src_len[b], K = dims_enc_state(d), D = d->dec_hidden, A = d->att,
        F = dims_att_features(d);
    size_t row = (size_t)b * a->T + (t - 1);
    const double *s_prev = a->s + ((size_t)b * (a->T + 1) + t - 1) * D;
    const double *h = a->enc_h + (size_t)b * S * K, *k = a->keys + (size_t)b * S * F;
    const double *q = a->query + row * A, *alpha = a->alpha + row * S;
    double *de = sc->d_alpha; /* d alpha_ti, then d e_ti in place */
    /* c_t = sum_i alpha_ti h_i */
    for (int i = 0; i < L; i++) {
        de[i] = vec_dot(dc, h + (size_t)i * K, K);
        for (int j = 0; j < K; j++) sc->d_enc_h[(size_t)i * K + j] += alpha[i] * dc[j];
    }
    /* alpha_t = softmax_i(e_t): d e_i = alpha_i (d alpha_i - sum_j alpha_j d alpha_j) */
    double weighted = 0;
    for (int i = 0; i < L; i++) weighted += alpha[i] * de[i];
    for (int i = 0; i < L; i++) de[i] = alpha[i] * (de[i] - weighted);
    double *dq = sc->d_query;
    memset(dq, 0, sizeof(double) * A);
    for (int i = 0; i < L; i++) {
        double *dk = sc->d_keys + (size_t)i * F;
        switch (d->score) {
        case SCORE_ADDITIVE: /* e_ti = v . tanh(q + k_i), recomputed: the forward kept only e */
            for (int j = 0; j < A; j++) {
                double hid = tanh(q[j] + k[(size_t)i * A + j]);
                double d_pre = de[i] * w->att_v[j] * (1 - hid * hid);
                grad_of(a, P_ATT_V)[j] += de[i] * hid;
                dq[j] += d_pre;
                dk[j] += d_pre;
            }
            break;
        case SCORE_DOT: /* e_ti = s_{t-1} . h_i */
            for (int j = 0; j < K; j++) {
                ds_prev[j] += de[i] * h[(size_t)i * K + j];
                sc->d_enc_h[(size_t)i * K + j] += de[i] * s_prev[j];
            }
            break;
        case SCORE_GENERAL: /* e_ti = s_{t-1} . k_i */
            for (int j = 0; j < D; j++) {
                ds_prev[j] += de[i] * k[(size_t)i * D + j];
                dk[j] += de[i] * s_prev[j];
            }
            break;
        default: /* e_ti = q . k_i / sqrt(A) */
            for (int j = 0; j < A; j++) {
                dq[j] += de[i] * k[(size_t)i * A + j] / sqrt((double)A);
                dk[j] += de[i] * q[j] / sqrt((double)A);
            }
        }
    }
    /* q = W_q s_{t-1} */
    if (d->score == SCORE_ADDITIVE || d->score == SCORE_SCALED_DOT)
        linear_backward(ds_prev, grad_of(a, P_ATT_W_Q), NULL, dq, s_prev, w->att_w_q, A, D);
}

/* ---- one decoder step: attention, GRU, readout, output layer -------------------------- */
/*
 *   u_t = tgt_emb[y_{t-1}]                          (dropout: u_t * keep), y_0 = <s>
 *   s_t = GRU_dec([u_t ; c_t], s_{t-1})
 *   o_t = tanh(W_o [s_t ; c_t ; u_t] + b_o)         (dropout: the output layer sees o_t * keep)
 *   z_t = W_out o_t + b_out                          p_t = softmax(z_t)
 * Step t of sentence b, given its input word y_{t-1}; the loss is the caller's.
 */
static void decoder_step_forward(RefActs *a, const Weights *w, int b, int t, int y_prev) {
    const ModelDims *d = &a->dims;
    int E = d->emb, K = dims_enc_state(d), D = d->dec_hidden, O = d->readout, V = d->tgt_vocab,
        R = D + K + E;
    size_t row = (size_t)b * a->T + (t - 1);
    const double *s_prev = a->s + ((size_t)b * (a->T + 1) + t - 1) * D;
    double *s = a->s + ((size_t)b * (a->T + 1) + t) * D;
    double *gru_in = a->gru_in + row * (E + K), *r_in = a->readout_in + row * R;
    double *u = gru_in, *c = a->context + row * K, *o = a->readout + row * O;
    int drop = a->dropout > 0;
    embedding_forward(u, w->tgt_emb, y_prev, a->embedding_drop ? a->u_keep + row * E : NULL, E);
    attention_forward(a, w, b, t);
    memcpy(gru_in + E, c, sizeof(double) * K);
    gru_forward(s, a->dec_cache + row * gru_cache_width(d, D), a->scratch->pre, gru_in, s_prev,
                &w->dec_gru, E + K, D);
    memcpy(r_in, s, sizeof(double) * D);
    memcpy(r_in + D, c, sizeof(double) * K);
    memcpy(r_in + D + K, u, sizeof(double) * E);
    linear_forward(o, w->out_w_o, w->out_b_o, r_in, O, R);
    double *o_drop = a->scratch->o_drop;
    for (int j = 0; j < O; j++) {
        o[j] = tanh(o[j]);
        o_drop[j] = o[j] * (drop ? a->o_keep[row * O + j] : 1);
    }
    double *z = a->logits + row * V, max;
    linear_forward(z, w->out_w, w->out_b, o_drop, V, O);
    /* log sum_j exp z_j, from the largest (each exp <= 1) */
    max = z[0];
    for (int j = 1; j < V; j++) max = z[j] > max ? z[j] : max;
    double sum = 0;
    for (int j = 0; j < V; j++) sum += exp(z[j] - max);
    a->lse[row] = max + log(sum);
}

/* ---- loss ----------------------------------------------------------------------------- */
/*
 *   loss = (1 / N) sum over real target tokens (b, t) of
 *          (1 - eps) (-log p_t[y_t]) + eps mean_j(-log p_t[j])
 * with -log p_t[j] = lse_t - z_tj (eps = 0: the plain cross-entropy).
 */
static double token_loss(const RefActs *a, size_t row, int y) {
    const double *z = a->logits + row * a->dims.tgt_vocab;
    int V = a->dims.tgt_vocab;
    double eps = a->label_smoothing, nll = a->lse[row] - z[y];
    if (eps == 0) return nll;
    double mean_z = 0;
    for (int j = 0; j < V; j++) mean_z += z[j];
    mean_z /= V;
    return (1 - eps) * nll + eps * (a->lse[row] - mean_z);
}

/* d token_loss / N / d z_j = (p_j - (1 - eps) [j == y] - eps / V) / N */
static void token_loss_backward(double *dz, const RefActs *a, size_t row, int y) {
    const double *z = a->logits + row * a->dims.tgt_vocab;
    int V = a->dims.tgt_vocab;
    double eps = a->label_smoothing;
    for (int j = 0; j < V; j++)
        dz[j] = (exp(z[j] - a->lse[row]) - (j == y ? 1 - eps : 0) - eps / V) / a->n_tokens;
}

/* Step t's backward for sentence b: given sc->carry = d loss / d s_t from step t+1, leaves
 * d loss / d s_{t-1} in sc->carry. */
static void decoder_step_backward(RefActs *a, const Weights *w, int b, int t, const Scratch *sc) {
    const ModelDims *d = &a->dims;
    int E = d->emb, K = dims_enc_state(d), D = d->dec_hidden, O = d->readout, V = d->tgt_vocab,
        R = D + K + E;
    size_t row = (size_t)b * a->T + (t - 1);
    const double *s_prev = a->s + ((size_t)b * (a->T + 1) + t - 1) * D;
    const double *o = a->readout + row * O, *o_keep = a->o_keep + row * O;
    int drop = a->dropout > 0;
    /* the loss of z_t */
    token_loss_backward(sc->dz, a, row, a->tgt_out[row]);
    /* z_t = W_out o'_t + b_out, o'_t = o_t * keep */
    for (int j = 0; j < O; j++) sc->o_drop[j] = o[j] * (drop ? o_keep[j] : 1);
    memset(sc->d_o, 0, sizeof(double) * O);
    /* tied (spec: extensions), W_out is tgt_emb and its gradient adds to tgt_emb's */
    double *d_out_w = grad_of(a, a->table.tied ? P_TGT_EMB : P_OUT_W);
    linear_backward(sc->d_o, d_out_w, grad_of(a, P_OUT_B), sc->dz, sc->o_drop, w->out_w, V, O);
    /* o'_t = o_t * keep, o_t = tanh(W_o [s_t ; c_t ; u_t] + b_o) */
    for (int j = 0; j < O; j++) sc->d_o[j] *= (drop ? o_keep[j] : 1) * (1 - o[j] * o[j]);
    memset(sc->d_readout_in, 0, sizeof(double) * R);
    linear_backward(sc->d_readout_in, grad_of(a, P_OUT_W_O), grad_of(a, P_OUT_B_O), sc->d_o,
                    a->readout_in + row * R, w->out_w_o, O, R);
    /* s_t feeds the readout and step t+1 (the carry) */
    for (int j = 0; j < D; j++) sc->d_state[j] = sc->carry[j] + sc->d_readout_in[j];
    /* s_t = GRU_dec([u_t ; c_t], s_{t-1}) */
    GruGrads dec_grads = gru_grads(a, P_DEC_GRU_W_IH);
    memset(sc->d_gru_in, 0, sizeof(double) * (E + K));
    memset(sc->carry, 0, sizeof(double) * D);
    gru_backward(sc->d_gru_in, sc->carry, &dec_grads, sc->d_pre, sc->d_state,
                 a->dec_cache + row * gru_cache_width(d, D), a->gru_in + row * (E + K), s_prev,
                 &w->dec_gru, E + K, D);
    /* c_t feeds the readout and the GRU; u_t likewise */
    double *dc = sc->d_gru_in + E, *du = sc->d_gru_in;
    for (int j = 0; j < K; j++) dc[j] += sc->d_readout_in[D + j];
    for (int j = 0; j < E; j++) du[j] += sc->d_readout_in[D + K + j];
    attention_backward(a, w, b, t, dc, sc->carry, sc);
    /* u_t = tgt_emb[y_{t-1}] * keep */
    embedding_backward(grad_of(a, P_TGT_EMB), a->tgt_in[row], du,
                       a->embedding_drop ? a->u_keep + row * E : NULL, E);
}

/* ---- the whole model over a batch ----------------------------------------------------- */

/* The batch's shape, ids and lengths against the plan and the vocabularies. */
static int check_batch(const RefActs *a, const Batch *batch, Error *err) {
    const ModelDims *d = &a->dims;
    int B = batch->B, S = batch->S, T = batch->T;
    if (B < 1 || S < 1 || T < 1 || B > a->max_B || S > a->max_S || T > a->max_T)
        return error_set(err, "batch %d x %d x %d does not fit the planned %d x %d x %d", B, S, T,
                         a->max_B, a->max_S, a->max_T);
    for (int b = 0; b < B; b++) {
        int ls = batch->src_len[b], lt = batch->tgt_len[b];
        if (ls < 1 || ls > S || lt < 1 || lt > T)
            return error_set(err, "sentence %d: lengths %d/%d outside 1..%d/1..%d", b, ls, lt, S,
                             T);
        for (int i = 0; i < ls; i++) {
            int id = batch->src[(size_t)b * S + i];
            if (id < 0 || id >= d->src_vocab)
                return error_set(err, "sentence %d: source id %d outside the vocabulary", b, id);
        }
        for (int t = 0; t < lt; t++) {
            int in = batch->tgt_in[(size_t)b * T + t], out = batch->tgt_out[(size_t)b * T + t];
            if (in < 0 || in >= d->tgt_vocab || out <= TOK_PAD || out >= d->tgt_vocab)
                return error_set(err, "sentence %d: target ids %d/%d at %d are invalid", b, in, out,
                                 t);
        }
    }
    return 0;
}

int ref_forward(RefActs *a, const real *params, const Batch *batch, const RefOptions *opt,
                double *loss, Error *err) {
    const ModelDims *d = &a->dims;
    if (check_batch(a, batch, err)) return -1;
    if ((opt->dropout > 0 || opt->word_dropout > 0) && !opt->rng)
        return error_set(err, "dropout needs a random stream");
    if (!(opt->word_dropout >= 0 && opt->word_dropout < 1))
        return error_set(err, "word dropout %g is not in [0, 1)", (double)opt->word_dropout);
    int B = batch->B, S = batch->S, T = batch->T;
    int E = d->emb, K = dims_enc_state(d), D = d->dec_hidden, O = d->readout, V = d->tgt_vocab;
    a->B = B, a->S = S, a->T = T;
    a->dropout = opt->dropout, a->label_smoothing = opt->label_smoothing;
    a->word_dropout = opt->word_dropout;
    a->embedding_drop = a->dropout > 0 || a->word_dropout > 0;
    memcpy(a->src_ids, batch->src, sizeof(int) * (size_t)B * S);
    memcpy(a->tgt_in, batch->tgt_in, sizeof(int) * (size_t)B * T);
    memcpy(a->tgt_out, batch->tgt_out, sizeof(int) * (size_t)B * T);
    memcpy(a->src_len, batch->src_len, sizeof(int) * (size_t)B);
    memcpy(a->tgt_len, batch->tgt_len, sizeof(int) * (size_t)B);
    /* what padding holds, as the spec and the dump say: h_i, alpha, s_t, z_t all zero */
    memset(a->enc_h, 0, sizeof(double) * (size_t)B * S * K);
    memset(a->alpha, 0, sizeof(double) * (size_t)B * T * S);
    memset(a->s, 0, sizeof(double) * (size_t)B * (T + 1) * D);
    memset(a->logits, 0, sizeof(double) * (size_t)B * T * V);
    if (a->dropout > 0) { /* the engine's order: x, then u, then o */
        dropout_draw(a->x_keep, B, S, E, a->dropout, opt->rng);
        dropout_draw(a->u_keep, B, T, E, a->dropout, opt->rng);
        dropout_draw(a->o_keep, B, T, O, a->dropout, opt->rng);
    }
    if (a->word_dropout > 0) {
        if (a->dropout == 0) {
            for (size_t i = 0; i < (size_t)B * S * E; i++) a->x_keep[i] = 1;
            for (size_t i = 0; i < (size_t)B * T * E; i++) a->u_keep[i] = 1;
        }
        word_dropout_draw(a->x_keep, B, S, E, a->word_dropout, opt->rng);
        word_dropout_draw(a->u_keep, B, T, E, a->word_dropout, opt->rng);
    }
    Weights w = weights_of(a, params);
    double sum = 0;
    a->n_tokens = 0;
    for (int b = 0; b < B; b++) {
        encoder_forward(a, &w, b);
        keys_and_init_forward(a, &w, b);
        for (int t = 1; t <= a->tgt_len[b]; t++) {
            size_t row = (size_t)b * T + (t - 1);
            decoder_step_forward(a, &w, b, t, a->tgt_in[row]);
            sum += token_loss(a, row, a->tgt_out[row]);
            a->n_tokens++;
        }
    }
    *loss = sum / a->n_tokens;
    return 0;
}

void ref_backward(RefActs *a, const real *params, real *grads) {
    const ModelDims *d = &a->dims;
    int S = a->S, K = dims_enc_state(d), D = d->dec_hidden, F = dims_att_features(d);
    Weights w = weights_of(a, params);
    const Scratch *sc = a->scratch;
    memset(a->grads, 0, sizeof(double) * a->table.total);
    /* sentence by sentence: the decoder's steps from the last back to the first, then the
     * keys and s_0, then the encoder */
    for (int b = 0; b < a->B; b++) {
        memset(sc->d_enc_h, 0, sizeof(double) * (size_t)S * K);
        memset(sc->d_keys, 0, sizeof(double) * (size_t)S * F);
        memset(sc->carry, 0, sizeof(double) * D); /* nothing flows back from beyond the end */
        for (int t = a->tgt_len[b]; t >= 1; t--) decoder_step_backward(a, &w, b, t, sc);
        keys_and_init_backward(a, &w, b, sc);
        encoder_backward(a, &w, b, sc);
    }
    for (size_t i = 0; i < a->table.total; i++) grads[i] += (real)a->grads[i];
}

/* ---- Adam with clipping ---------------------------------------------------------------- */
/*
 *   g  = grad * min(1, max_norm / ||grad||)      (global clipping over every parameter)
 *   m  = b1 m + (1 - b1) g                        v = b2 v + (1 - b2) g^2
 *   m^ = m / (1 - b1^t)                           v^ = v / (1 - b2^t)      (bias correction)
 *   p -= lr m^ / (sqrt(v^) + eps)
 */
int ref_adam_init(RefAdam *adam, size_t n, double beta1, double beta2, double eps, Error *err) {
    *adam = (RefAdam){.n = n, .beta1 = beta1, .beta2 = beta2, .eps = eps};
    adam->m = checked_calloc(n, sizeof(double), "Adam first moments", err);
    adam->v = checked_calloc(n, sizeof(double), "Adam second moments", err);
    if (!adam->m || !adam->v) {
        ref_adam_free(adam);
        return -1;
    }
    return 0;
}

void ref_adam_free(RefAdam *adam) {
    free(adam->m);
    free(adam->v);
    memset(adam, 0, sizeof *adam);
}

double ref_grad_norm(const real *grads, size_t n) {
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += (double)grads[i] * grads[i];
    return sqrt(sum);
}

int ref_adam_step(RefAdam *adam, real *params, const real *grads, double clip_norm, double lr) {
    double norm = ref_grad_norm(grads, adam->n);
    /* the engine's clip factor, max_norm / (norm + 1e-12), kept to the last digit */
    double scale = clip_norm > 0 && norm > clip_norm ? clip_norm / (norm + 1e-12) : 1;
    adam->t++;
    double c1 = 1 - pow(adam->beta1, (double)adam->t), c2 = 1 - pow(adam->beta2, (double)adam->t);
    int bad = 0;
    for (size_t i = 0; i < adam->n; i++) {
        double g = grads[i] * scale;
        adam->m[i] = adam->beta1 * adam->m[i] + (1 - adam->beta1) * g;
        adam->v[i] = adam->beta2 * adam->v[i] + (1 - adam->beta2) * g * g;
        double m_hat = adam->m[i] / c1, v_hat = adam->v[i] / c2;
        params[i] = (real)(params[i] - lr * m_hat / (sqrt(v_hat) + adam->eps));
        bad |= !isfinite(params[i]);
    }
    return bad ? -1 : 0;
}

/* ---- greedy decoding ------------------------------------------------------------------ */

/* The encoder once, then decoder steps, each fed the most probable word of the step before
 * (the first of equal ones), until </s>. */
int ref_greedy(RefActs *a, const real *params, const int *src, int src_len, int max_len, int *out,
               int *out_len, Error *err) {
    const ModelDims *d = &a->dims;
    if (src_len < 1 || src_len > a->max_S || max_len < 1 || max_len > a->max_T)
        return error_set(err, "sentence of %d words, %d out: the plan is %d and %d", src_len,
                         max_len, a->max_S, a->max_T);
    for (int i = 0; i < src_len; i++)
        if (src[i] < 0 || src[i] >= d->src_vocab)
            return error_set(err, "source id %d outside the vocabulary", src[i]);
    Weights w = weights_of(a, params);
    int V = d->tgt_vocab;
    a->B = 1, a->S = src_len, a->T = max_len, a->dropout = 0;
    a->word_dropout = 0, a->embedding_drop = 0;
    memcpy(a->src_ids, src, sizeof(int) * (size_t)src_len);
    a->src_len[0] = src_len;
    encoder_forward(a, &w, 0);
    keys_and_init_forward(a, &w, 0);
    *out_len = 0;
    for (int t = 1, y = TOK_BOS; t <= max_len; t++) {
        decoder_step_forward(a, &w, 0, t, y);
        const double *z = a->logits + (size_t)(t - 1) * V;
        y = 0;
        for (int j = 1; j < V; j++) y = z[j] > z[y] ? j : y;
        if (y == TOK_EOS) break;
        out[(*out_len)++] = y;
    }
    return 0;
}

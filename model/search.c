/*
 * search.c: beam search and greedy decoding (see search.h).
 */
#include "search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "attention.h"
#include "gemm.h"
#include "gru.h"
#include "layers.h"
#include "loss.h"

typedef struct {
    real **slot;
    size_t count;
} Slab;

int search_init(Searcher *s, const ModelDims *d, int max_sentences, int max_src, int beam,
                int max_len, Error *err) {
    memset(s, 0, sizeof *s);
    if (max_sentences < 1 || max_src < 1 || beam < 1 || max_len < 1)
        return error_set(err, "invalid search plan (%d sentences, %d tokens, beam %d, %d steps)",
                         max_sentences, max_src, beam, max_len);
    s->max_sentences = max_sentences, s->max_src = max_src, s->beam = beam, s->max_len = max_len;
    if (acts_init(&s->enc, d, max_sentences, max_src, 1, err)) return -1;
    size_t R = (size_t)max_sentences * beam, S = max_src, L = max_len;
    size_t E = d->emb, D = d->dec_hidden, A = d->att, O = d->readout, V = d->tgt_vocab;
    /* ctx_gi and ctx_ro are per sentence and source position: see search_translate */
    const Slab slabs[] = {
        {&s->ctx_gi, (size_t)max_sentences * S * 3 * D},
        {&s->ctx_ro, (size_t)max_sentences * S * O},
        {&s->u, R * E},
        {&s->s, R * D},
        {&s->s_next, R * D},
        {&s->gi, R * 3 * D},
        {&s->gh, R * 3 * D},
        {&s->cache, R * 4 * D},
        {&s->query, R * A},
        {&s->hidden, R * S * A},
        {&s->alpha, R * S},
        {&s->energy, R * S},
        {&s->readout, R * O},
        {&s->logits, R * V},
        {&s->hist_alpha, L * R * S},
        {&s->hist_energy, L * R * S},
        {&s->sel_prob, L * R},
    };
    size_t total = 0;
    for (size_t i = 0; i < sizeof slabs / sizeof slabs[0]; i++) total += slabs[i].count;
    size_t ints = 2 * R + 2 * L * R + (size_t)max_sentences * S;
    s->block = checked_calloc_aligned(total, &s->block_alloc, "search buffers", err);
    s->int_block = checked_calloc(ints, sizeof(int), "search buffers", err);
    s->score = checked_calloc(2 * R, sizeof(double), "search scores", err);
    if (!s->block || !s->int_block || !s->score) {
        search_free(s);
        return -1;
    }
    real *p = s->block;
    for (size_t i = 0; i < sizeof slabs / sizeof slabs[0]; i++) {
        *slabs[i].slot = p;
        p += slabs[i].count;
    }
    s->src_len = s->int_block;
    s->y_prev = s->src_len + R;
    s->sel_parent = s->y_prev + R;
    s->sel_token = s->sel_parent + L * R;
    return 0;
}

void search_free(Searcher *s) {
    acts_free(&s->enc);
    free(s->block_alloc);
    free(s->int_block);
    free(s->score);
    memset(s, 0, sizeof *s);
}

void translation_free(Translation *t) {
    for (int i = 0; i < t->count; i++) {
        free(t->hyps[i].tokens);
        free(t->hyps[i].alpha);
        free(t->hyps[i].energy);
        free(t->hyps[i].prob);
    }
    free(t->hyps);
    memset(t, 0, sizeof *t);
}

/* A hypothesis that has ended: after emitting </s> at `step` from `row` (complete), or still
 * open in `row` when the step limit came (`step` = the limit). */
typedef struct {
    int step, row, complete;
    double logprob, score;
    real eos_prob;
} Ended;

typedef struct {
    double score; /* the hypothesis' log-probability with this token */
    real logp;    /* the token's own */
    int row, token;
} Candidate;

/* Inserts c into list (sorted best first, at most cap entries). */
static void keep_best(Candidate *list, int *n, int cap, Candidate c) {
    if (*n == cap && !(c.score > list[cap - 1].score)) return;
    int i = *n < cap ? (*n)++ : cap - 1;
    while (i > 0 && c.score > list[i - 1].score) {
        list[i] = list[i - 1];
        i--;
    }
    list[i] = c;
}

/* Rebuilds an ended hypothesis by following the parent pointers back to step 0. */
static int backtrack(const Searcher *s, const Ended *e, int R, int S, int src_len, Hypothesis *h,
                     Error *err) {
    int len = e->step, rows = len + e->complete;
    memset(h, 0, sizeof *h);
    h->tokens = checked_calloc((size_t)len + 1, sizeof(int), "hypothesis", err);
    h->alpha = checked_calloc((size_t)rows * src_len + 1, sizeof(real), "hypothesis", err);
    h->energy = checked_calloc((size_t)rows * src_len + 1, sizeof(real), "hypothesis", err);
    h->prob = checked_calloc((size_t)rows + 1, sizeof(real), "hypothesis", err);
    if (!h->tokens || !h->alpha || !h->energy || !h->prob) return -1;
    h->len = len, h->complete = e->complete, h->rows = rows, h->src_len = src_len;
    h->logprob = e->logprob, h->score = e->score;
    if (e->complete) {
        size_t at = ((size_t)e->step * R + e->row) * S;
        memcpy(h->alpha + (size_t)len * src_len, s->hist_alpha + at, sizeof(real) * src_len);
        memcpy(h->energy + (size_t)len * src_len, s->hist_energy + at, sizeof(real) * src_len);
        h->prob[len] = e->eos_prob;
    }
    int row = e->row;
    for (int t = len - 1; t >= 0; t--) {
        size_t sel = (size_t)t * R + row;
        int parent = s->sel_parent[sel];
        h->tokens[t] = s->sel_token[sel];
        h->prob[t] = s->sel_prob[sel];
        size_t at = ((size_t)t * R + parent) * S;
        memcpy(h->alpha + (size_t)t * src_len, s->hist_alpha + at, sizeof(real) * src_len);
        memcpy(h->energy + (size_t)t * src_len, s->hist_energy + at, sizeof(real) * src_len);
        row = parent;
    }
    return 0;
}

static int compare_ended(const void *a, const void *b) {
    const Ended *x = a, *y = b;
    return x->score > y->score ? -1 : x->score < y->score ? 1 : x->step - y->step;
}

/* One search call's state, shared by the threads of its team. */
typedef struct {
    Searcher *s;
    const Model *m;
    const SearchOptions *opt;
    int n, beam, R, S;
    Ended *ended;    /* [n][2*beam] */
    int *n_ended;    /* [n] */
    char *done;      /* [n] */
    Candidate *cand; /* [n][2*beam] */
    Candidate *best; /* [threads][R][2*beam]: each thread's best tokens of its vocabulary share */
    int *n_best;     /* [threads][R] */
    real *part_lse;  /* [threads][R]: log-sum-exp of each thread's share */
    int threads;     /* in the team */
    int remaining;   /* sentences not done */
    double *next_score;
} Decode;

/* The calling thread's share [*lo, *hi) of n output features, in whole cache lines, so that
 * threads writing the same rows never share a line. */
static void feature_share(int n, int *lo, int *hi) {
    int parts = omp_get_num_threads(), t = omp_get_thread_num(), units = (n + 15) / 16;
    *lo = (int)((long)units * t / parts) * 16, *hi = (int)((long)units * (t + 1) / parts) * 16;
    *lo = *lo < n ? *lo : n, *hi = *hi < n ? *hi : n;
}

/* y[r, lo:hi] (+)= x[r, :] W[lo:hi, :]^T for R rows: the columns [lo, hi) of x W^T. */
static void product_part(real *y, int ldy, const real *x, int ldx, const real *w, int ldw, int R,
                         int in, int lo, int hi, real beta) {
    gemm(0, 1, R, hi - lo, in, x, ldx, w + (size_t)lo * ldw, ldw, beta, y + lo, ldy);
}

static void bias_part(real *y, int ldy, const real *b, int R, int lo, int hi) {
    for (int r = 0; r < R; r++)
        for (int j = lo; j < hi; j++) y[(size_t)r * ldy + j] += b[j];
}

/* Everything of step t that needs only s_{t-1} and u_t, split by output features:
 * query = W_q s_{t-1}; gh = W_hh s_{t-1}; gi = W_ih[:, :E] u_t + b_ih. */
static void step_inputs(const Decode *dc) {
    const ModelDims *d = &dc->m->dims;
    const Weights *w = &dc->m->w;
    Searcher *s = dc->s;
    int E = d->emb, K = dims_enc_state(d), D = d->dec_hidden, A = d->att, R = dc->R, lo, hi;
    feature_share(A, &lo, &hi);
    product_part(s->query, A, s->s, D, w->att_w_q, D, R, D, lo, hi, 0);
    feature_share(3 * D, &lo, &hi);
    product_part(s->gh, 3 * D, s->s, D, w->dec_gru.w_hh, D, R, D, lo, hi, 0);
    product_part(s->gi, 3 * D, s->u, E, w->dec_gru.w_ih, E + K, R, E, lo, hi, 0);
    bias_part(s->gi, 3 * D, w->dec_gru.b_ih, R, lo, hi);
}

/* Attention, the GRU and the context's part of the readout for the rows of sentence i:
 * alpha_t (c_t itself is never formed); gi += sum_j alpha_tj ctx_gi_j; s_t = GRU gates;
 * readout = b_o + sum_j alpha_tj ctx_ro_j. */
static void step_attend(const Decode *dc, int i, int t) {
    const ModelDims *d = &dc->m->dims;
    const Weights *w = &dc->m->w;
    Searcher *s = dc->s;
    int K = dims_enc_state(d), D = d->dec_hidden, A = d->att, O = d->readout, S = dc->S;
    int base = i * dc->beam, rows = dc->beam;
    const real *keys = s->enc.keys + (size_t)i * S * A, *enc_h = s->enc.enc_h + (size_t)i * S * K;
    for (int r = base; r < base + rows; r++)
        attention_forward(NULL, s->alpha + (size_t)r * S, s->energy + (size_t)r * S,
                          s->hidden + (size_t)r * S * A, s->query + (size_t)r * A, keys, enc_h,
                          s->src_len + r, w->att_v, 1, S, A, K);
    const real *alpha = s->alpha + (size_t)base * S;
    gemm(0, 0, rows, 3 * D, S, alpha, S, s->ctx_gi + (size_t)i * S * 3 * D, 3 * D, 1,
         s->gi + (size_t)base * 3 * D, 3 * D);
    gru_gates_forward(s->s_next + (size_t)base * D, s->cache + (size_t)base * 4 * D,
                      s->gi + (size_t)base * 3 * D, s->gh + (size_t)base * 3 * D,
                      s->s + (size_t)base * D, w->dec_gru.b_hh, NULL, 0, rows, D);
    for (int r = base; r < base + rows; r++)
        memcpy(s->readout + (size_t)r * O, w->out_b_o, sizeof(real) * (size_t)O);
    gemm(0, 0, rows, O, S, alpha, S, s->ctx_ro + (size_t)i * S * O, O, 1,
         s->readout + (size_t)base * O, O);
    size_t at = ((size_t)t * dc->R + base) * S;
    memcpy(s->hist_alpha + at, alpha, sizeof(real) * (size_t)rows * S);
    memcpy(s->hist_energy + at, s->energy + (size_t)base * S, sizeof(real) * (size_t)rows * S);
}

/* The rest of the readout, split by output features:
 * o_t = tanh(W_o[:, :D] s_t + W_o[:, D+K:] u_t + (b_o + context part)). */
static void step_readout(const Decode *dc) {
    const ModelDims *d = &dc->m->dims;
    const Weights *w = &dc->m->w;
    Searcher *s = dc->s;
    int E = d->emb, K = dims_enc_state(d), D = d->dec_hidden, O = d->readout, R = dc->R, lo, hi;
    int RW = D + K + E;
    feature_share(O, &lo, &hi);
    product_part(s->readout, O, s->s_next, D, w->out_w_o, RW, R, D, lo, hi, 1);
    product_part(s->readout, O, s->u, E, w->out_w_o + D + K, RW, R, E, lo, hi, 1);
    for (int r = 0; r < R && lo < hi; r++) tanh_forward(s->readout + (size_t)r * O + lo, hi - lo);
}

/* z_t = W_out o_t + b_out, split by output features. Each thread computes its share of the
 * logits and, while they are in its cache, reduces them for step_select: their log-sum-exp and, per
 * row, its 2*beam best tokens (by logit, which within a row ranks as log p does). */
static void step_logits(const Decode *dc) {
    const ModelDims *d = &dc->m->dims;
    const Weights *w = &dc->m->w;
    Searcher *s = dc->s;
    int O = d->readout, V = d->tgt_vocab, R = dc->R, cap = 2 * dc->beam, lo, hi;
    int t = omp_get_thread_num();
    feature_share(V, &lo, &hi);
    product_part(s->logits, V, s->readout, O, w->out_w, O, R, O, lo, hi, 0);
    bias_part(s->logits, V, w->out_b, R, lo, hi);
    for (int r = 0; r < R; r++) {
        size_t at = (size_t)t * R + r;
        Candidate *best = dc->best + at * cap;
        int n = 0;
        const real *z = s->logits + (size_t)r * V;
        dc->part_lse[at] = lo < hi ? log_sum_exp(z + lo, hi - lo) : -INFINITY;
        real floor = -INFINITY; /* once the list is full: the logit to beat */
        for (int v = lo; v < hi; v++) {
            if ((n == cap && !(z[v] > floor)) || v == TOK_PAD || v == TOK_BOS) continue;
            keep_best(best, &n, cap, (Candidate){.score = z[v], .row = r, .token = v});
            if (n == cap) floor = (real)best[cap - 1].score;
        }
        dc->n_best[at] = n;
    }
}

/* Row r's log-sum-exp over the whole vocabulary, from the threads' partial ones. */
static real row_lse(const Decode *dc, int r) {
    real top = -INFINITY, sum = 0;
    for (int t = 0; t < dc->threads; t++) {
        real x = dc->part_lse[(size_t)t * dc->R + r];
        if (x > top) top = x;
    }
    for (int t = 0; t < dc->threads; t++) sum += exp(dc->part_lse[(size_t)t * dc->R + r] - top);
    return top + log(sum);
}

/* Sentence i's choice at step t: the beam best continuations of its live rows become its rows
 * for step t+1 (state, token, score, embedding); hypotheses that emit </s> end. Marks the
 * sentence done when it has no open hypothesis worth extending. */
static void step_select(const Decode *dc, int i, int t) {
    const ModelDims *d = &dc->m->dims;
    Searcher *s = dc->s;
    const SearchOptions *opt = dc->opt;
    int beam = dc->beam, R = dc->R, L = opt->max_len, D = d->dec_hidden;
    int base = i * beam, live = 0, ncand = 0, cap = 2 * beam;
    double *next_score = dc->next_score;
    Candidate *cand = dc->cand + (size_t)i * cap;
    Ended *ended = dc->ended + (size_t)i * cap;
    int *n_ended = &dc->n_ended[i];
    /* rows, threads and each thread's tokens in order: ties go to the earlier row and token */
    for (int k = 0; k < beam; k++) {
        int r = base + k;
        if (s->score[r] == -INFINITY) continue;
        real lse = row_lse(dc, r);
        for (int t = 0; t < dc->threads; t++) {
            size_t at = (size_t)t * R + r;
            for (int c = 0; c < dc->n_best[at]; c++) {
                Candidate b = dc->best[at * cap + c];
                b.logp = (real)b.score - lse;
                b.score = s->score[r] + b.logp;
                keep_best(cand, &ncand, cap, b);
            }
        }
    }
    for (int c = 0; c < ncand && live < beam; c++) {
        real logp = cand[c].logp;
        if (cand[c].token == TOK_EOS) {
            if (c < beam)
                ended[(*n_ended)++] = (Ended){.step = t,
                                              .row = cand[c].row,
                                              .complete = 1,
                                              .logprob = cand[c].score,
                                              .score = cand[c].score / pow(t + 1, opt->len_norm),
                                              .eos_prob = (real)exp(logp)};
            continue;
        }
        size_t sel = (size_t)t * R + base + live;
        s->sel_parent[sel] = cand[c].row;
        s->sel_token[sel] = cand[c].token;
        s->sel_prob[sel] = (real)exp(logp);
        next_score[base + live++] = cand[c].score;
    }
    for (int k = live; k < beam; k++) { /* empty rows follow row 0 harmlessly */
        size_t sel = (size_t)t * R + base + k;
        s->sel_parent[sel] = base, s->sel_token[sel] = TOK_EOS, s->sel_prob[sel] = 0;
        next_score[base + k] = -INFINITY;
    }
    int finished = *n_ended >= beam || live == 0;
    if (!finished && t == L - 1) { /* out of steps: the open hypotheses end here */
        for (int k = 0; k < live && *n_ended < 2 * beam; k++)
            ended[(*n_ended)++] = (Ended){.step = L,
                                          .row = base + k,
                                          .complete = 0,
                                          .logprob = next_score[base + k],
                                          .score = next_score[base + k] / pow(L, opt->len_norm)};
        finished = 1;
    }
    if (finished) {
        dc->done[i] = 1;
        return;
    }
    /* each new row continues from its parent's state and token */
    for (int r = base; r < base + beam; r++) {
        size_t sel = (size_t)t * R + r;
        memcpy(s->s + (size_t)r * D, s->s_next + (size_t)s->sel_parent[sel] * D,
               sizeof(real) * (size_t)D);
        s->y_prev[r] = s->sel_token[sel];
        s->score[r] = next_score[r];
    }
    embedding_forward(s->u + (size_t)base * d->emb, d->emb, s->y_prev + base, NULL,
                      dc->m->w.tgt_emb, beam, d->emb);
}

/* The decoding loop, run by every thread of the team. Each step's phases are separated by
 * barriers (the implicit ones of the worksharing loops included): the products that need only
 * s_{t-1} and y_{t-1}; per sentence, attention and the GRU (which need the whole query and gh);
 * the readout (which needs the whole s_t); the logits; per sentence, the choice of tokens
 * (which needs every thread's share of the vocabulary). */
static void decode_steps(Decode *dc) {
#pragma omp single
    dc->threads = omp_get_num_threads();
    for (int t = 0; t < dc->opt->max_len && dc->remaining > 0; t++) {
        step_inputs(dc);
#pragma omp barrier
#pragma omp for schedule(static)
        for (int i = 0; i < dc->n; i++)
            if (!dc->done[i]) step_attend(dc, i, t);
        step_readout(dc);
#pragma omp barrier
        step_logits(dc);
#pragma omp barrier
#pragma omp for schedule(static)
        for (int i = 0; i < dc->n; i++)
            if (!dc->done[i]) step_select(dc, i, t);
#pragma omp single
        {
            dc->remaining = 0;
            for (int i = 0; i < dc->n; i++) dc->remaining += !dc->done[i];
        }
    }
}

int search_translate(Searcher *s, const Model *m, const int *const *src, const int *src_len, int n,
                     const SearchOptions *opt, Translation *out, Error *err) {
    const ModelDims *d = &m->dims;
    const Weights *w = &m->w;
    int beam = opt->beam, L = opt->max_len;
    if (n < 1 || n > s->max_sentences || beam > s->beam || L > s->max_len || opt->nbest < 1 ||
        opt->nbest > beam)
        return error_set(err,
                         "search of %d sentences, beam %d, nbest %d, %d steps exceeds its "
                         "plan",
                         n, beam, opt->nbest, L);
    int S = 0;
    for (int i = 0; i < n; i++) {
        if (src_len[i] < 1 || src_len[i] > s->max_src)
            return error_set(err, "sentence %d has %d tokens (1..%d allowed)", i + 1, src_len[i],
                             s->max_src);
        if (src_len[i] > S) S = src_len[i];
    }
    int E = d->emb, K = dims_enc_state(d), D = d->dec_hidden, A = d->att, O = d->readout,
        V = d->tgt_vocab, R = n * beam;
    memset(out, 0, sizeof *out * (size_t)n);

    /* encode the padded sources once; every beam row starts from its sentence's s_0 */
    int *padded = s->sel_token + (size_t)s->max_len * s->max_sentences * s->beam;
    memset(padded, 0, sizeof(int) * (size_t)n * S);
    for (int i = 0; i < n; i++) memcpy(padded + (size_t)i * S, src[i], sizeof(int) * src_len[i]);
    if (model_encode(m, &s->enc, padded, src_len, n, S, err)) return -1;
    /* The context enters the model only through products: W c_t = sum_j alpha_tj (W h_j). So
     * the context's columns of W_ih and W_o are applied once per source position, as one
     * matrix product, instead of once per step and hypothesis (equal up to round-off). */
    gemm(0, 1, n * S, 3 * D, K, s->enc.enc_h, K, w->dec_gru.w_ih + E, E + K, 0, s->ctx_gi, 3 * D);
    gemm(0, 1, n * S, O, K, s->enc.enc_h, K, w->out_w_o + D, D + K + E, 0, s->ctx_ro, O);
    for (int r = 0; r < R; r++) {
        int i = r / beam;
        memcpy(s->s + (size_t)r * D, s->enc.dec_state + (size_t)i * D, sizeof(real) * (size_t)D);
        s->src_len[r] = src_len[i];
        s->y_prev[r] = TOK_BOS;
        s->score[r] = r % beam == 0 ? 0 : -INFINITY; /* one live hypothesis to start */
    }
    embedding_forward(s->u, E, s->y_prev, NULL, w->tgt_emb, R, E);

    /* A step streams every decoder weight once. The threads share out each product by its
     * output features (each streams its part of the weights, which stays in its core's cache
     * across steps); the per-sentence work is shared out by sentences. */
    double work =
        (double)R * ((double)A * D + 3.0 * D * (D + E) + (double)O * (D + E) + (double)V * O);
    int threads = work < 1 << 16 ? 1 : omp_get_max_threads(), cap = 2 * beam;
    Decode dc = {.s = s, .m = m, .opt = opt, .n = n, .beam = beam, .R = R, .S = S, .remaining = n};
    dc.ended = checked_calloc((size_t)n * cap, sizeof(Ended), "search results", err);
    dc.n_ended = checked_calloc((size_t)n, sizeof(int), "search results", err);
    dc.done = checked_calloc((size_t)n, 1, "search results", err);
    dc.cand = checked_calloc((size_t)n * cap, sizeof(Candidate), "search", err);
    dc.best = checked_calloc((size_t)threads * R * cap, sizeof(Candidate), "search", err);
    dc.n_best = checked_calloc((size_t)threads * R, sizeof(int), "search", err);
    dc.part_lse = checked_calloc((size_t)threads * R, sizeof(real), "search", err);
    dc.next_score = s->score + R;
    int rc =
        !dc.ended || !dc.n_ended || !dc.done || !dc.cand || !dc.best || !dc.n_best || !dc.part_lse
            ? -1
            : 0;
    if (rc == 0) {
#pragma omp parallel num_threads(threads)
        decode_steps(&dc);
    }

    for (int i = 0; i < n && rc == 0; i++) {
        int count = dc.n_ended[i];
        Ended *mine = dc.ended + (size_t)i * 2 * beam;
        qsort(mine, (size_t)count, sizeof *mine, compare_ended);
        int keep = count < opt->nbest ? count : opt->nbest;
        out[i].hyps = checked_calloc((size_t)keep + 1, sizeof(Hypothesis), "translations", err);
        if (!out[i].hyps) {
            rc = -1;
            break;
        }
        for (int h = 0; h < keep && rc == 0; h++) {
            out[i].count = h + 1;
            rc = backtrack(s, &mine[h], R, S, src_len[i], &out[i].hyps[h], err);
        }
    }
    free(dc.ended), free(dc.n_ended), free(dc.done), free(dc.cand);
    free(dc.best), free(dc.n_best), free(dc.part_lse);
    if (rc)
        for (int i = 0; i < n; i++) translation_free(&out[i]);
    return rc;
}

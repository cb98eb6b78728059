/*
 * search.c: beam search and greedy decoding (see search.h).
 */
#include "search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    size_t E = d->emb, K = dims_enc_state(d), D = d->dec_hidden, A = d->att, O = d->readout,
           V = d->tgt_vocab;
    const Slab slabs[] = {
        {&s->keys, R * S * A},
        {&s->enc_h, R * S * K},
        {&s->s, R * D},
        {&s->s_next, R * D},
        {&s->gi, R * 3 * D},
        {&s->cache, R * 4 * D},
        {&s->scratch, R * 3 * D},
        {&s->query, R * A},
        {&s->hidden, R * S * A},
        {&s->alpha, R * S},
        {&s->energy, R * S},
        {&s->context, R * K},
        {&s->readout_in, R * (D + K + E)},
        {&s->readout, R * O},
        {&s->logits, R * V},
        {&s->hist_alpha, L * R * S},
        {&s->hist_energy, L * R * S},
        {&s->sel_prob, L * R},
    };
    size_t total = 0;
    for (size_t i = 0; i < sizeof slabs / sizeof slabs[0]; i++) total += slabs[i].count;
    size_t ints = 2 * R + 2 * L * R + (size_t)max_sentences * S;
    s->block = checked_calloc(total, sizeof(real), "search buffers", err);
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
    free(s->block);
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
    double score;
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
    int E = d->emb, K = dims_enc_state(d), D = d->dec_hidden, A = d->att, V = d->tgt_vocab;
    int RW = D + K + E, R = n * beam;
    memset(out, 0, sizeof *out * (size_t)n);

    /* encode the padded sources once, then give every beam row its sentence's states */
    int *padded = s->sel_token + (size_t)s->max_len * s->max_sentences * s->beam;
    memset(padded, 0, sizeof(int) * (size_t)n * S);
    for (int i = 0; i < n; i++) memcpy(padded + (size_t)i * S, src[i], sizeof(int) * src_len[i]);
    if (model_encode(m, &s->enc, padded, src_len, n, S, err)) return -1;
    for (int r = 0; r < R; r++) {
        int i = r / beam;
        memcpy(s->keys + (size_t)r * S * A, s->enc.keys + (size_t)i * S * A,
               sizeof(real) * (size_t)S * A);
        memcpy(s->enc_h + (size_t)r * S * K, s->enc.enc_h + (size_t)i * S * K,
               sizeof(real) * (size_t)S * K);
        memcpy(s->s + (size_t)r * D, s->enc.dec_state + (size_t)i * D, sizeof(real) * (size_t)D);
        s->src_len[r] = src_len[i];
        s->y_prev[r] = TOK_BOS;
        s->score[r] = r % beam == 0 ? 0 : -INFINITY; /* one live hypothesis to start */
    }

    Ended *ended = checked_calloc((size_t)n * 2 * beam, sizeof(Ended), "search results", err);
    int *n_ended = checked_calloc((size_t)n, sizeof(int), "search results", err);
    char *done = checked_calloc((size_t)n, 1, "search results", err);
    Candidate *cand = checked_calloc((size_t)2 * beam, sizeof(Candidate), "search", err);
    if (!ended || !n_ended || !done || !cand) {
        free(ended), free(n_ended), free(done), free(cand);
        return -1;
    }
    double *next_score = s->score + R;
    int remaining = n;
    for (int t = 0; t < L && remaining > 0; t++) {
        /* u_t = tgt_emb[y_{t-1}] and its input projection, then the shared decoder step */
        embedding_forward(s->readout_in + D + K, RW, s->y_prev, NULL, w->tgt_emb, R, E);
        linear_forward(s->gi, s->readout_in + D + K, RW, w->dec_gru.w_ih, E + K, w->dec_gru.b_ih, R,
                       E, 3 * D);
        DecoderStep st = {.s_prev = s->s,
                          .s = s->s_next,
                          .gi = s->gi,
                          .cache = s->cache,
                          .query = s->query,
                          .hidden = s->hidden,
                          .alpha = s->alpha,
                          .energy = s->energy,
                          .context = s->context};
        decoder_step_forward(m, &st, s->keys, s->enc_h, s->src_len, s->scratch, R, S);
        for (int r = 0; r < R; r++) {
            memcpy(s->readout_in + (size_t)r * RW, s->s_next + (size_t)r * D,
                   sizeof(real) * (size_t)D);
            memcpy(s->readout_in + (size_t)r * RW + D, s->context + (size_t)r * K,
                   sizeof(real) * (size_t)K);
        }
        readout_forward(m, s->logits, s->readout, s->readout_in, R);
        memcpy(s->hist_alpha + (size_t)t * R * S, s->alpha, sizeof(real) * (size_t)R * S);
        memcpy(s->hist_energy + (size_t)t * R * S, s->energy, sizeof(real) * (size_t)R * S);

        for (int i = 0; i < n; i++) {
            int base = i * beam, live = 0, ncand = 0;
            for (int k = 0; k < beam; k++) next_score[base + k] = -INFINITY;
            if (done[i]) continue;
            for (int k = 0; k < beam; k++) {
                int r = base + k;
                if (s->score[r] == -INFINITY) continue;
                real *z = s->logits + (size_t)r * V;
                real lse = log_sum_exp(z, V);
                for (int v = 0; v < V; v++) {
                    z[v] -= lse; /* log p */
                    if (v == TOK_PAD || v == TOK_BOS) continue;
                    keep_best(cand, &ncand, 2 * beam,
                              (Candidate){.score = s->score[r] + z[v], .row = r, .token = v});
                }
            }
            for (int c = 0; c < ncand && live < beam; c++) {
                real logp = s->logits[(size_t)cand[c].row * V + cand[c].token];
                if (cand[c].token == TOK_EOS) {
                    if (c < beam) {
                        double score = cand[c].score / pow(t + 1, opt->len_norm);
                        ended[(size_t)base * 2 + n_ended[i]++] =
                            (Ended){.step = t,
                                    .row = cand[c].row,
                                    .complete = 1,
                                    .logprob = cand[c].score,
                                    .score = score,
                                    .eos_prob = (real)exp(logp)};
                    }
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
            }
            int finished = n_ended[i] >= beam || live == 0;
            if (!finished && t == L - 1) { /* out of steps: the open hypotheses end here */
                for (int k = 0; k < live && n_ended[i] < 2 * beam; k++)
                    ended[(size_t)base * 2 + n_ended[i]++] =
                        (Ended){.step = L,
                                .row = base + k,
                                .complete = 0,
                                .logprob = next_score[base + k],
                                .score = next_score[base + k] / pow(L, opt->len_norm)};
                finished = 1;
            }
            if (finished) {
                done[i] = 1;
                remaining--;
                for (int k = 0; k < beam; k++) next_score[base + k] = -INFINITY;
            }
        }
        /* each new row continues from its parent's state and token */
        for (int r = 0; r < R; r++) {
            size_t sel = (size_t)t * R + r;
            memcpy(s->s + (size_t)r * D, s->s_next + (size_t)s->sel_parent[sel] * D,
                   sizeof(real) * (size_t)D);
            s->y_prev[r] = s->sel_token[sel];
            s->score[r] = next_score[r];
        }
    }

    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        int count = n_ended[i];
        Ended *mine = ended + (size_t)i * 2 * beam;
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
    free(ended), free(n_ended), free(done), free(cand);
    if (rc)
        for (int i = 0; i < n; i++) translation_free(&out[i]);
    return rc;
}

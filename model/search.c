/*
 * search.c: beam search and greedy decoding (see search.h).
 */
#include "model/search.h"
#include "model/parallel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "model/attention.h"
#include "model/fastmath.h"
#include "model/gemm.h"
#include "model/gru.h"
#include "model/layernorm.h"
#include "model/layers.h"
#include "model/loss.h"
#include "model/qgemm.h"

typedef struct {
    real **slot;
    size_t count;
} Slab;

/* Features are shared out in whole cache lines, so that threads writing the same rows never
 * share a line. */
enum { LINE = 64 / sizeof(real) };

/* Cuts a block of memory into arrays, each on cache lines of its own (so that threads never
 * write the same line, and a product's vector loads and stores never straddle two); with no
 * block (base NULL) it only adds up the bytes needed. */
typedef struct {
    char *base;
    size_t used;
} Carver;

static void *carve(Carver *c, size_t bytes) {
    void *at = c->base ? c->base + c->used : NULL;
    c->used += (bytes + 63) / 64 * 64;
    return at;
}

/* The sums that cross the threads' shares are made of fixed blocks, whatever the number of
 * threads: an attention energy e_ti of blocks of the features, the vocabulary's log-sum-exp of
 * blocks of the words. Each block's sum is kept and the blocks are added in order, and the
 * threads share out whole blocks. So a translation is the same bits on any number of threads,
 * and a count chosen from the machine's load (ThreadChoice) never changes it. How many blocks:
 * the most of 12, 4, 2 or 1 (so that 2, 3 or 4 threads share them evenly) up to `most`, that
 * leaves each block at least `least` features (a block costs calls and a reduction of its own,
 * worth it only over enough features). */
static int block_count(int n, int least, int most) {
    static const int counts[] = {12, 4, 2};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
        if (counts[k] <= most && n / counts[k] >= least) return counts[k];
    return 1;
}

enum { ENERGY_LEAST = 64, VOCAB_LEAST = 128 };

/* The distance between the blocks' rows in s->vocab_lse: the rows of one block on whole cache
 * lines, since each block is written by one thread. */
static size_t vocab_lse_stride(const Searcher *s) {
    size_t rows = (size_t)s->max_sentences * s->beam;
    return (rows + LINE - 1) / LINE * LINE;
}

/* n features cut into `blocks` at whole cache lines: block b is [start[b], start[b + 1]) (empty
 * when n is small). */
static void block_starts(int n, int blocks, int *start) {
    for (int b = 0; b <= blocks; b++) {
        int hi;
        share_range(n, LINE, b, blocks, &start[b], &hi);
    }
}

int search_init(Searcher *s, const ModelDims *d, int max_sentences, int max_src, int beam,
                int max_len, Error *err) {
    memset(s, 0, sizeof *s);
    if (max_sentences < 1 || max_src < 1 || beam < 1 || max_len < 1)
        return error_set(err, "invalid search plan (%d sentences, %d tokens, beam %d, %d steps)",
                         max_sentences, max_src, beam, max_len);
    s->max_sentences = max_sentences, s->max_src = max_src, s->beam = beam, s->max_len = max_len;
    s->energy_blocks = block_count(dims_att_features(d), ENERGY_LEAST, SEARCH_ENERGY_BLOCKS);
    s->vocab_blocks = block_count(d->tgt_vocab, VOCAB_LEAST, SEARCH_VOCAB_BLOCKS);
    block_starts(dims_att_features(d), s->energy_blocks, s->energy_start);
    block_starts(d->tgt_vocab, s->vocab_blocks, s->vocab_start);
    /* a search may run an int8 model (model_encode) */
    if (acts_init_plan(&s->enc, d, max_sentences, max_src, 1, &(ActsPlan){.int8 = 1}, err))
        return -1;
    size_t R = (size_t)max_sentences * beam, S = max_src, L = max_len;
    size_t E = d->emb, D = d->dec_hidden, F = dims_att_features(d), O = d->readout,
           V = d->tgt_vocab;
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
        {&s->query, R * F},
        {&s->energy_sums, (size_t)s->energy_blocks * R * S},
        {&s->vocab_lse, (size_t)s->vocab_blocks * vocab_lse_stride(s)},
        {&s->readout, R * O},
        {&s->logits, R * V},
        {&s->hist_alpha, L * R * S},
        {&s->hist_energy, L * R * S},
        {&s->sel_prob, L * R},
    };
    Carver c = {0};
    for (size_t i = 0; i < sizeof slabs / sizeof slabs[0]; i++)
        carve(&c, sizeof(real) * slabs[i].count);
    size_t ints = 2 * R + 2 * L * R + (size_t)max_sentences * S;
    s->block =
        checked_calloc_aligned(c.used / sizeof(real), &s->block_alloc, "search buffers", err);
    s->int_block = checked_calloc(ints, sizeof(int), "search buffers", err);
    s->score = checked_calloc(2 * R, sizeof(double), "search scores", err);
    if (!s->block || !s->int_block || !s->score) {
        search_free(s);
        return -1;
    }
    c = (Carver){.base = (char *)s->block};
    for (size_t i = 0; i < sizeof slabs / sizeof slabs[0]; i++)
        *slabs[i].slot = carve(&c, sizeof(real) * slabs[i].count);
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

/* Each thread's part of a search call's memory: its results for the others to read and its
 * scratch. Threads write their parts at the same time, so each part has cache lines of its
 * own (a line written by two cores would travel between them at every write). */
typedef struct {
    real *alpha;     /* [R][S]: its own copy of alpha_t */
    real *hid;       /* [S][A]: scratch for its tanh values */
    Candidate *best; /* [R][2*beam]: its best tokens of that share, by row */
    int *n_best;     /* [R] */
    int *live;       /* [2R]: the rows whose logits a step needs (live_rows), or the runs of
                        open sentences' rows (open_runs) */
    real *gathered;  /* [R][O], float models: those rows of o_t, side by side */
    /* int8 models only: the activations this thread's products read, quantized by rows
     * (stride QuantPlan.width): each thread quantizes all rows for itself, a small cost
     * beside its share of the weights, so that no thread waits for another */
    int8_t *xq_a; /* [max(R, n S)][width]: s_{t-1}, then s_t, then o_t; the source states */
    int8_t *xq_b; /* [R][width]: u_t */
    float *xs_a;  /* [max(R, n S)] their scales */
    float *xs_b;  /* [R] */
} ThreadPart;

/* The sizes of the threads' int8 scratch (all zero for a float model). */
typedef struct {
    int rows_a, rows_b, width;
} QuantPlan;

/* Thread part p's arrays from c (see thread_parts). */
static void carve_part(ThreadPart *p, Carver *c, int R, int S, int A, int O, int cap,
                       const QuantPlan *qp) {
    size_t gathered = qp->width ? 0 : (size_t)R * O; /* an int8 model quantizes them instead */
    p->best = carve(c, sizeof(Candidate) * R * cap);
    p->alpha = carve(c, sizeof(real) * R * S);
    p->hid = carve(c, sizeof(real) * S * A);
    p->gathered = carve(c, sizeof(real) * gathered);
    p->n_best = carve(c, sizeof(int) * R);
    p->live = carve(c, sizeof(int) * 2 * R);
    p->xs_a = carve(c, sizeof(float) * qp->rows_a);
    p->xs_b = carve(c, sizeof(float) * qp->rows_b);
    p->xq_a = carve(c, (size_t)qp->width * qp->rows_a);
    p->xq_b = carve(c, (size_t)qp->width * qp->rows_b);
}

/* The parts of `threads` threads; *block gets the memory to free besides the returned array. */
static ThreadPart *thread_parts(int threads, int R, int S, int A, int O, int cap,
                                const QuantPlan *qp, void **block, Error *err) {
    ThreadPart *part = checked_calloc((size_t)threads, sizeof *part, "search", err), sizes;
    Carver c = {0};
    carve_part(&sizes, &c, R, S, A, O, cap, qp);
    c.base = (char *)checked_calloc_aligned((size_t)threads * c.used / sizeof(real), block,
                                            "search", err);
    if (!part || !c.base) {
        free(part);
        return NULL;
    }
    c.used = 0;
    for (int t = 0; t < threads; t++) carve_part(&part[t], &c, R, S, A, O, cap, qp);
    return part;
}

/* One search call's state, shared by the threads of its team. */
typedef struct {
    Searcher *s;
    const Model *m;
    const SearchOptions *opt;
    int n, beam, R, S;
    Ended *ended;     /* [n][2*beam] */
    int *n_ended;     /* [n] */
    char *done;       /* [n] */
    Candidate *cand;  /* [n][2*beam] */
    ThreadPart *part; /* [threads] */
    void *part_block;
    SpinBarrier barrier;
    int threads; /* in the team */
    double *next_score;
    const QuantWeights *quant; /* the model's int8 weights, NULL for float products */
    int qwidth;                /* the row stride of the threads' xq_a and xq_b */
} Decode;

/* The calling thread's share of n output features, among all the threads. */
static void feature_share(int n, int *lo, int *hi) {
    share_range(n, LINE, omp_get_thread_num(), omp_get_num_threads(), lo, hi);
}

/* Ends phase p of a step (the time since the last mark goes to it), for a benchmark's
 * breakdown: on the first thread, when the searcher's activations ask for it. */
static void search_phase(const Decode *dc, Phase p) {
    Acts *a = &dc->s->enc;
    if (a->time_search && omp_get_thread_num() == 0) phase_end(a, p);
}

/* Meets the other threads at the step's barrier. */
static void wait_others(Decode *dc) {
    spin_barrier_wait(&dc->barrier);
    search_phase(dc, PHASE_SEARCH_WAIT);
}

/* The columns of the hidden units [lo, hi) in the [r | z | n] layout of gi and gh: the ranges
 * [c0[g], c1[g]) for g < the count returned (one range when the units are all of them). */
static int gate_columns(int D, int lo, int hi, int c0[3], int c1[3]) {
    if (lo == 0 && hi == D) {
        c0[0] = 0, c1[0] = 3 * D;
        return 1;
    }
    for (int g = 0; g < 3; g++) c0[g] = g * D + lo, c1[g] = g * D + hi;
    return 3;
}

/* Attention and the GRU go by sentences when there are at least as many sentences as threads
 * (thread t takes sentences [n t / T, n (t+1) / T)); otherwise every thread takes a share of the
 * features of every sentence, so that one sentence alone still uses every core. */
static int by_sentence(const Decode *dc) {
    return dc->n >= dc->threads;
}

/* The sentences [*i0, *i1) that the calling thread works on, and its share [*lo, *hi) of n
 * features of each, in whole units of `unit` features. */
static void sentence_share(const Decode *dc, int n, int unit, int *i0, int *i1, int *lo, int *hi) {
    int me = omp_get_thread_num(), threads = dc->threads;
    if (by_sentence(dc)) {
        *i0 = (int)((long)dc->n * me / threads), *i1 = (int)((long)dc->n * (me + 1) / threads);
        *lo = 0, *hi = n;
    } else {
        *i0 = 0, *i1 = dc->n;
        share_range(n, unit, me, threads, lo, hi);
    }
}

/* The thread whose copy of alpha_t holds sentence i's rows (by sentences: the one that worked
 * on it; by features: every thread has all of alpha_t). */
static int alpha_holder(const Decode *dc, int i) {
    if (!by_sentence(dc)) return omp_get_thread_num();
    int t = dc->threads - 1;
    while (t > 0 && (long)dc->n * t / dc->threads > i) t--;
    return t;
}

/* Row r's sums of e_ti over the features of block b (see block_count), [S]. */
static real *energy_block(const Decode *dc, int b, int r) {
    return dc->s->energy_sums + ((size_t)b * dc->R + r) * dc->S;
}

/* The dot-product scores' part of step_inputs: for sentences [i0, i1), the blocks [b0, b1) of
 * the features of e_ti = scale * q . k_i, with the query s_{t-1} (dot, general) or W_q s_{t-1}
 * (scaled_dot, already in s->query) and the keys h_i (dot) or the encoder's W_a h_i or W_k h_i. */
static void dot_energy_blocks(const Decode *dc, int i0, int i1, int b0, int b1) {
    const ModelDims *d = &dc->m->dims;
    const Searcher *s = dc->s;
    int F = dims_att_features(d), S = dc->S;
    int scaled = d->score == SCORE_SCALED_DOT;
    real scale = attention_dot_scale(scaled, d->att);
    const real *query = scaled ? s->query : s->s;
    const real *keys = d->score == SCORE_DOT ? s->enc.enc_h : s->enc.keys;
    for (int i = i0; i < i1; i++) {
        if (dc->done[i]) continue;
        for (int r = i * dc->beam; r < (i + 1) * dc->beam; r++)
            for (int b = b0; b < b1; b++)
                attention_dot_energy_part(energy_block(dc, b, r), query + (size_t)r * F,
                                          keys + (size_t)i * S * F, scale, s->src_len[r], F,
                                          s->energy_start[b], s->energy_start[b + 1]);
    }
}

/* The rows of the sentences not done, as runs of whole sentences [run[2k], run[2k+1]) for k <
 * the count returned, for the products: the rows of done sentences are never read again. A
 * float model's runs have at least min(R, gemm_rows_summed_alike()) rows, as step_logits' (a
 * short run takes in the next one and the done rows between, the last short one the rows
 * before it), so that each row is summed as when the step multiplied all of them. */
static int open_runs(const Decode *dc, int *run) {
    int n = 0, beam = dc->beam, alike = gemm_rows_summed_alike();
    int least = dc->R < alike ? dc->R : alike;
    if (dc->quant) least = 1; /* int8 sums are exact */
    for (int i = 0; i < dc->n; i++) {
        if (dc->done[i]) continue;
        if (n > 0 && (run[2 * n - 1] == i * beam || run[2 * n - 1] - run[2 * n - 2] < least)) {
            run[2 * n - 1] = (i + 1) * beam; /* adjoining, or the one before is short */
            continue;
        }
        run[2 * n] = i * beam, run[2 * n + 1] = (i + 1) * beam, n++;
    }
    if (n > 1 && run[2 * n - 1] - run[2 * n - 2] < least) { /* the last is short */
        run[2 * n - 3] = run[2 * n - 1];
        n--;
    }
    if (n == 1 && run[1] - run[0] < least) { /* alone and short: done rows around it */
        run[0] = run[1] - least > 0 ? run[1] - least : 0;
        if (run[1] - run[0] < least) run[1] = run[0] + least;
    }
    return n;
}

/* Everything of step t that needs only s_{t-1} and u_t: this thread's share of the output
 * features of gh = W_hh s_{t-1} and gi = W_ih[:, :E] u_t + b_ih (without b_ih when the GRU is
 * layer-normalised; a contiguous share: a
 * product of a few rows streams its weights fastest in one long run); for its sentences (see
 * sentence_share), its attention features of query = W_q s_{t-1} and its blocks of the energies
 * (see block_count, attention_energy_part and dot_energy_blocks). */
static void step_inputs(const Decode *dc) {
    const ModelDims *d = &dc->m->dims;
    const Weights *w = &dc->m->w;
    Searcher *s = dc->s;
    int E = d->emb, K = dims_enc_state(d), D = d->dec_hidden, A = d->att, S = dc->S;
    int beam = dc->beam, i0, i1, lo, hi;
    const ThreadPart *mine = &dc->part[omp_get_thread_num()];
    const QuantWeights *q = dc->quant;
    int qw = dc->qwidth;
    /* layer-normalised, b_ih comes after the normalisation (normalise_rows) */
    const real *b_ih = d->layer_norm ? NULL : w->dec_gru.b_ih;
    feature_share(3 * D, &lo, &hi);
    for (int k = 0, runs = open_runs(dc, mine->live); k < runs; k++) {
        size_t r0 = (size_t)mine->live[2 * k];
        int rows = mine->live[2 * k + 1] - (int)r0;
        real *gh = s->gh + r0 * 3 * D, *gi = s->gi + r0 * 3 * D;
        if (q) {
            int8_t *xq_a = mine->xq_a + r0 * qw, *xq_b = mine->xq_b + r0 * qw;
            float *xs_a = mine->xs_a + r0, *xs_b = mine->xs_b + r0;
            quantize_rows(s->s + r0 * D, D, rows, D, xq_a, qw, xs_a);
            quantize_rows(s->u + r0 * E, E, rows, E, xq_b, qw, xs_b);
            search_phase(dc, PHASE_SEARCH_QUANTIZE);
            qlinear_packed(gh, 3 * D, xq_a, qw, xs_a, &q->packs[QP_DEC_HH], NULL, rows, lo, hi, 0);
            qlinear_packed(gi, 3 * D, xq_b, qw, xs_b, &q->packs[QP_DEC_IH_EMB], b_ih, rows, lo, hi,
                           0);
        } else {
            linear_columns(gh, 3 * D, s->s + r0 * D, D, w->dec_gru.w_hh, D, NULL, rows, D, lo, hi,
                           0);
            linear_columns(gi, 3 * D, s->u + r0 * E, E, w->dec_gru.w_ih, E + K, b_ih, rows, E, lo,
                           hi, 0);
        }
        search_phase(dc, PHASE_SEARCH_GRU_PRODUCTS);
    }
    int b0, b1;
    sentence_share(dc, s->energy_blocks, 1, &i0, &i1, &b0, &b1);
    lo = s->energy_start[b0], hi = s->energy_start[b1];
    if (i0 == i1) return;
    size_t r0 = (size_t)i0 * beam;
    if ((d->score == SCORE_ADDITIVE || d->score == SCORE_SCALED_DOT) && q)
        qlinear_packed(s->query + r0 * A, A, mine->xq_a + r0 * qw, qw, mine->xs_a + r0,
                       &q->packs[QP_ATT_Q], NULL, (i1 - i0) * beam, lo, hi, 0);
    else if (d->score == SCORE_ADDITIVE || d->score == SCORE_SCALED_DOT)
        linear_columns(s->query + r0 * A, A, s->s + r0 * D, D, w->att_w_q, D, NULL,
                       (i1 - i0) * beam, D, lo, hi, 0);
    search_phase(dc, PHASE_SEARCH_ATT_PRODUCTS);
    if (d->score != SCORE_ADDITIVE) {
        dot_energy_blocks(dc, i0, i1, b0, b1);
        return;
    }
    for (int i = i0; i < i1; i++) {
        if (dc->done[i]) continue;
        const real *keys = s->enc.keys + (size_t)i * S * A;
        for (int r = i * beam; r < (i + 1) * beam; r++)
            for (int b = b0; b < b1; b++)
                attention_energy_part(energy_block(dc, b, r), mine->hid, s->query + (size_t)r * A,
                                      keys, w->att_v, s->src_len[r], S, A, s->energy_start[b],
                                      s->energy_start[b + 1]);
    }
}

/* The layer-normalised GRU (spec: extensions), once gi holds the whole W_ih [u_t ; c_t] and gh
 * the whole W_hh s_{t-1}: gi = g_ih * LN(gi) + b_ih and gh = g_hh * LN(gh) (b_hh is the
 * gates'), for this thread's share of the live rows. A row's statistics need all of its
 * columns, which the threads that share out the units wrote: the caller meets the others
 * before and after. */
static void normalise_rows(const Decode *dc) {
    const GruWeights *gw = &dc->m->w.dec_gru;
    Searcher *s = dc->s;
    int D = dc->m->dims.dec_hidden, r0, r1;
    share_range(dc->R, 1, omp_get_thread_num(), dc->threads, &r0, &r1);
    for (int r = r0; r < r1; r++) {
        if (dc->done[r / dc->beam]) continue;
        real *gi = s->gi + (size_t)r * 3 * D, *gh = s->gh + (size_t)r * 3 * D;
        layernorm_forward(gi, 3 * D, NULL, NULL, gi, 3 * D, gw->g_ih, gw->b_ih, 1, 3 * D);
        layernorm_forward(gh, 3 * D, NULL, NULL, gh, 3 * D, gw->g_hh, NULL, 1, 3 * D);
    }
}

/* For this thread's sentences, its share of the hidden units of s_t: alpha_t from the
 * energies' blocks (by features, every thread forms all of alpha_t for itself, so that no thread
 * waits for another); the context's part of the GRU input on its units' columns,
 * gi += sum_i alpha_ti ctx_gi_i (c_t itself is never formed); the gates (layer-normalised: after
 * every thread's part of gi is in, and the rows are normalised). The first thread of each
 * sentence records alpha_t and e_t. */
static void step_gates(Decode *dc, int t) {
    const ModelDims *d = &dc->m->dims;
    Searcher *s = dc->s;
    int D = d->dec_hidden, R = dc->R, S = dc->S, beam = dc->beam, me = omp_get_thread_num();
    int i0, i1, lo, hi, c0[3], c1[3];
    real *alpha = dc->part[me].alpha;
    /* the thread that records a sentence's alpha_t and e_t */
    int first = by_sentence(dc) ? me : 0;
    sentence_share(dc, D, LINE, &i0, &i1, &lo, &hi);
    for (int i = i0; i < i1; i++) {
        if (dc->done[i]) continue;
        int base = i * beam;
        for (int r = base; r < base + beam; r++) {
            real *a = alpha + (size_t)r * S;
            int L = s->src_len[r];
            for (int p = 0; p < L; p++) { /* the blocks in order */
                real e = 0;
                for (int b = 0; b < s->energy_blocks; b++) e += energy_block(dc, b, r)[p];
                a[p] = e;
            }
            size_t at = ((size_t)t * R + r) * S;
            attention_weights(a, me == first ? s->hist_energy + at : NULL, L, S);
            if (me == first) memcpy(s->hist_alpha + at, a, sizeof(real) * (size_t)S);
        }
        for (int g = 0, ranges = gate_columns(D, lo, hi, c0, c1); g < ranges; g++)
            gemm(AS_STORED, AS_STORED, beam, c1[g] - c0[g], S, alpha + (size_t)base * S, S,
                 s->ctx_gi + (size_t)i * S * 3 * D + c0[g], 3 * D, 1,
                 s->gi + (size_t)base * 3 * D + c0[g], 3 * D);
    }
    search_phase(dc, PHASE_SEARCH_ATTENTION);
    if (d->layer_norm) {
        wait_others(dc);
        normalise_rows(dc);
        search_phase(dc, PHASE_SEARCH_LAYER_NORM);
        wait_others(dc);
    }
    for (int i = i0; i < i1; i++) {
        if (dc->done[i]) continue;
        int base = i * beam;
        gru_gates_units(s->s_next + (size_t)base * D, s->cache + (size_t)base * 4 * D,
                        s->gi + (size_t)base * 3 * D, s->gh + (size_t)base * 3 * D,
                        s->s + (size_t)base * D, dc->m->w.dec_gru.b_hh, beam, D, lo, hi);
    }
}

/* The readout, shared out by output features: o_t = tanh(W_o [s_t ; c_t ; u_t] + b_o), with
 * the context's part as sum_i alpha_ti ctx_ro_i for live sentences. */
static void step_readout(const Decode *dc) {
    const ModelDims *d = &dc->m->dims;
    const Weights *w = &dc->m->w;
    Searcher *s = dc->s;
    int E = d->emb, K = dims_enc_state(d), D = d->dec_hidden, O = d->readout;
    int S = dc->S, beam = dc->beam, RW = D + K + E, lo, hi;
    feature_share(O, &lo, &hi);
    if (lo == hi) return;
    for (int i = 0; i < dc->n; i++) {
        if (dc->done[i]) continue;
        int base = i * beam;
        const real *alpha = dc->part[alpha_holder(dc, i)].alpha + (size_t)base * S;
        for (int r = base; r < base + beam; r++)
            memcpy(s->readout + (size_t)r * O + lo, w->out_b_o + lo,
                   sizeof(real) * (size_t)(hi - lo));
        gemm(AS_STORED, AS_STORED, beam, hi - lo, S, alpha, S, s->ctx_ro + (size_t)i * S * O + lo,
             O, 1, s->readout + (size_t)base * O + lo, O);
    }
    search_phase(dc, PHASE_SEARCH_ATTENTION);
    const QuantWeights *q = dc->quant;
    const ThreadPart *mine = &dc->part[omp_get_thread_num()];
    int qw = dc->qwidth;
    for (int k = 0, runs = open_runs(dc, mine->live); k < runs; k++) {
        size_t r0 = (size_t)mine->live[2 * k];
        int rows = mine->live[2 * k + 1] - (int)r0;
        real *ro = s->readout + r0 * O;
        if (q) { /* u_t is still in xq_b from step_inputs */
            int8_t *xq_a = mine->xq_a + r0 * qw, *xq_b = mine->xq_b + r0 * qw;
            float *xs_a = mine->xs_a + r0, *xs_b = mine->xs_b + r0;
            quantize_rows(s->s_next + r0 * D, D, rows, D, xq_a, qw, xs_a);
            search_phase(dc, PHASE_SEARCH_QUANTIZE);
            qlinear_packed(ro, O, xq_a, qw, xs_a, &q->packs[QP_RO_STATE], NULL, rows, lo, hi, 1);
            qlinear_packed(ro, O, xq_b, qw, xs_b, &q->packs[QP_RO_EMB], NULL, rows, lo, hi, 1);
        } else {
            linear_columns(ro, O, s->s_next + r0 * D, D, w->out_w_o, RW, NULL, rows, D, lo, hi, 1);
            linear_columns(ro, O, s->u + r0 * E, E, w->out_w_o + D + K, RW, NULL, rows, E, lo, hi,
                           1);
        }
        search_phase(dc, PHASE_SEARCH_RO_PRODUCTS);
        for (int r = 0; r < rows; r++) tanh_forward(ro + (size_t)r * O + lo, hi - lo);
        search_phase(dc, PHASE_SEARCH_NONLINEAR);
    }
}

/* The rows whose hypotheses are open, those of sentences not done whose score is not -inf
 * (step_select reads no other's logits), into live[]; returns how many. */
static int live_rows(const Decode *dc, int *live) {
    int L = 0;
    for (int r = 0; r < dc->R; r++)
        if (!dc->done[r / dc->beam] && dc->s->score[r] != -INFINITY) live[L++] = r;
    return L;
}

/* Logits looked at by step_logits as one block when searching for the best: the block's maximum
 * (a vector loop) almost always shows it holds none. */
enum { SCAN_BLOCK = 64 };

/* z_t = W_out o_t + b_out, split by output features. Each thread computes its share of the
 * logits and, while they are in its cache, reduces them for step_select: their log-sum-exp by
 * blocks (see block_count) and, per row, its 2*beam best tokens (by logit, which within a row ranks
 * as log p does). */
static void step_logits(const Decode *dc) {
    const ModelDims *d = &dc->m->dims;
    const Weights *w = &dc->m->w;
    Searcher *s = dc->s;
    int O = d->readout, V = d->tgt_vocab, cap = 2 * dc->beam, lo, hi;
    const ThreadPart *mine = &dc->part[omp_get_thread_num()];
    const int *start = s->vocab_start;
    int b0, b1;
    share_range(s->vocab_blocks, 1, omp_get_thread_num(), omp_get_num_threads(), &b0, &b1);
    lo = start[b0], hi = start[b1];
    real *lse = s->vocab_lse;
    size_t stride = vocab_lse_stride(s);
    /* only the rows step_select reads, side by side: row c of the logits is row live[c]'s */
    int L = live_rows(dc, mine->live);
    if (dc->quant) {
        for (int c = 0; c < L; c++)
            quantize_rows(s->readout + (size_t)mine->live[c] * O, O, 1, O,
                          mine->xq_a + (size_t)c * dc->qwidth, dc->qwidth, mine->xs_a + c);
        search_phase(dc, PHASE_SEARCH_QUANTIZE);
        qlinear_packed(s->logits, V, mine->xq_a, dc->qwidth, mine->xs_a, &dc->quant->packs[QP_OUT],
                       w->out_b, L, lo, hi, 0);
    } else {
        /* gemm sums a few rows another way than many (its dot-product paths, see its
         * determinism note: M of 1, up to 16, more): few live rows go with copies of
         * themselves up to the count of all rows or gemm_rows_summed_alike(), so that their
         * logits are those that all rows would have given */
        int alike = gemm_rows_summed_alike(), least = dc->R < alike ? dc->R : alike;
        int rows = L > 0 && L < least ? least : L;
        for (int c = 0; c < rows; c++)
            memcpy(mine->gathered + (size_t)c * O, s->readout + (size_t)mine->live[c % L] * O,
                   sizeof(real) * (size_t)O);
        if (rows > 0)
            linear_columns(s->logits, V, mine->gathered, O, w->out_w, O, w->out_b, rows, O, lo, hi,
                           0);
    }
    search_phase(dc, PHASE_SEARCH_OUT_PRODUCTS);
    for (int c = 0; c < L; c++) {
        int r = mine->live[c];
        Candidate *best = mine->best + (size_t)r * cap;
        int n = 0;
        const real *z = s->logits + (size_t)c * V;
        for (int b = b0; b < b1; b++)
            lse[b * stride + r] = start[b] < start[b + 1]
                                      ? log_sum_exp(z + start[b], start[b + 1] - start[b])
                                      : -INFINITY;
        search_phase(dc, PHASE_SEARCH_SOFTMAX);
        real floor = -INFINITY; /* once the list is full: the logit to beat */
        for (int v0 = lo; v0 < hi; v0 += SCAN_BLOCK) {
            int v1 = v0 + SCAN_BLOCK < hi ? v0 + SCAN_BLOCK : hi;
            real top = vec_max(z + v0, (size_t)(v1 - v0));
            /* a block whose largest logit does not beat the list's last changes nothing (a
             * NaN top, from a NaN first logit, sends the block through the full test) */
            if (n == cap && !(top > floor) && top == top) continue;
            for (int v = v0; v < v1; v++) {
                if ((n == cap && !(z[v] > floor)) || v == TOK_PAD || v == TOK_BOS) continue;
                keep_best(best, &n, cap, (Candidate){.score = z[v], .row = r, .token = v});
                if (n == cap) floor = (real)best[cap - 1].score;
            }
        }
        mine->n_best[r] = n;
        search_phase(dc, PHASE_SEARCH_TOP_K);
    }
}

/* Row r's log-sum-exp over the whole vocabulary, from its blocks' (see block_count). */
static real row_lse(const Decode *dc, int r) {
    const Searcher *s = dc->s;
    const real *lse = s->vocab_lse + r;
    size_t stride = vocab_lse_stride(s);
    real top = -INFINITY, sum = 0;
    for (int b = 0; b < s->vocab_blocks; b++)
        if (lse[b * stride] > top) top = lse[b * stride];
    for (int b = 0; b < s->vocab_blocks; b++) sum += exp(lse[b * stride] - top);
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
            const ThreadPart *theirs = &dc->part[t];
            for (int c = 0; c < theirs->n_best[r]; c++) {
                Candidate b = theirs->best[(size_t)r * cap + c];
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

/* The context enters the model only through products: W c_t = sum_i alpha_ti (W h_i). So the
 * context's columns of W_ih and W_o are applied once per source position, as one matrix product
 * each (this thread's share of the columns), instead of once per step and hypothesis (equal up
 * to round-off). */
static void context_projections(const Decode *dc) {
    const ModelDims *d = &dc->m->dims;
    const Weights *w = &dc->m->w;
    Searcher *s = dc->s;
    int E = d->emb, K = dims_enc_state(d), D = d->dec_hidden, O = d->readout, rows = dc->n * dc->S;
    int lo, hi;
    if (dc->quant) {
        const ThreadPart *mine = &dc->part[omp_get_thread_num()];
        const QuantWeights *q = dc->quant;
        int qw = dc->qwidth;
        quantize_rows(s->enc.enc_h, K, rows, K, mine->xq_a, qw, mine->xs_a);
        search_phase(dc, PHASE_SEARCH_QUANTIZE);
        feature_share(3 * D, &lo, &hi);
        qlinear_packed(s->ctx_gi, 3 * D, mine->xq_a, qw, mine->xs_a, &q->packs[QP_DEC_IH_CTX], NULL,
                       rows, lo, hi, 0);
        feature_share(O, &lo, &hi);
        qlinear_packed(s->ctx_ro, O, mine->xq_a, qw, mine->xs_a, &q->packs[QP_RO_CTX], NULL, rows,
                       lo, hi, 0);
        return;
    }
    feature_share(3 * D, &lo, &hi);
    linear_columns(s->ctx_gi, 3 * D, s->enc.enc_h, K, w->dec_gru.w_ih + E, E + K, NULL, rows, K, lo,
                   hi, 0);
    feature_share(O, &lo, &hi);
    linear_columns(s->ctx_ro, O, s->enc.enc_h, K, w->out_w_o + D, D + K + E, NULL, rows, K, lo, hi,
                   0);
}

/* The decoding loop, run by every thread of the team. Each step's phases are separated by
 * barriers: the products and attention features that need only s_{t-1} and y_{t-1}; the
 * GRU's units (which need all of the energies, gi and gh); the readout (which needs the whole
 * s_t); the logits; per sentence, the choice of tokens (which needs every thread's share of
 * the vocabulary). The barriers spin (see SpinBarrier): a step of one sentence is a few
 * microseconds. */
static void decode_steps(Decode *dc) {
#pragma omp single
    {
        dc->threads = omp_get_num_threads();
        spin_barrier_init(&dc->barrier, dc->threads);
    }
    if (dc->s->enc.time_search && omp_get_thread_num() == 0) phase_start(&dc->s->enc);
    context_projections(dc);
    search_phase(dc, PHASE_SEARCH_SOURCE);
    wait_others(dc);
    int remaining = dc->n;
    for (int t = 0; t < dc->opt->max_len && remaining > 0; t++) {
        step_inputs(dc);
        search_phase(dc, PHASE_SEARCH_ATTENTION);
        wait_others(dc);
        step_gates(dc, t);
        search_phase(dc, PHASE_SEARCH_NONLINEAR);
        wait_others(dc);
        step_readout(dc);
        search_phase(dc, PHASE_SEARCH_NONLINEAR);
        wait_others(dc);
        step_logits(dc);
        wait_others(dc);
#pragma omp for schedule(static) nowait
        for (int i = 0; i < dc->n; i++)
            if (!dc->done[i]) step_select(dc, i, t);
        search_phase(dc, PHASE_SEARCH_BEAM);
        wait_others(dc);
        /* done[] is settled: each thread counts for itself */
        remaining = 0;
        for (int i = 0; i < dc->n; i++) remaining += !dc->done[i];
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
    int E = d->emb, D = d->dec_hidden, A = d->att, O = d->readout, V = d->tgt_vocab, R = n * beam;
    memset(out, 0, sizeof *out * (size_t)n);

    /* encode the padded sources once; every beam row starts from its sentence's s_0 */
    int *padded = s->sel_token + (size_t)s->max_len * s->max_sentences * s->beam;
    memset(padded, 0, sizeof(int) * (size_t)n * S);
    for (int i = 0; i < n; i++) memcpy(padded + (size_t)i * S, src[i], sizeof(int) * src_len[i]);
    if (s->enc.time_search) phase_start(&s->enc);
    if (model_encode(m, &s->enc, padded, src_len, n, S, err)) return -1;
    if (s->enc.time_search) phase_end(&s->enc, PHASE_SEARCH_ENCODER);
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
    Decode dc = {.s = s, .m = m, .opt = opt, .n = n, .beam = beam, .R = R, .S = S};
    QuantPlan qp = {0};
    if (m->quant) {
        int K = dims_enc_state(d), widest = D > E ? D : E;
        widest = widest > K ? widest : K;
        widest = widest > O ? widest : O;
        qp = (QuantPlan){
            .rows_a = R > n * S ? R : n * S, .rows_b = R, .width = (widest + 63) / 64 * 64};
        dc.quant = m->quant, dc.qwidth = qp.width;
    }
    dc.ended = checked_calloc((size_t)n * cap, sizeof(Ended), "search results", err);
    dc.n_ended = checked_calloc((size_t)n, sizeof(int), "search results", err);
    dc.done = checked_calloc((size_t)n, 1, "search results", err);
    dc.cand = checked_calloc((size_t)n * cap, sizeof(Candidate), "search", err);
    dc.part = thread_parts(threads, R, S, A, O, cap, &qp, &dc.part_block, err);
    dc.next_score = s->score + R;
    int rc = !dc.ended || !dc.n_ended || !dc.done || !dc.cand || !dc.part ? -1 : 0;
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
    free(dc.part), free(dc.part_block);
    if (rc)
        for (int i = 0; i < n; i++) translation_free(&out[i]);
    return rc;
}

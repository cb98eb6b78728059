/*
 * adam.c: Adam, gradient clipping and the learning-rate schedules (see adam.h).
 */
#include "train/adam.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <tgmath.h> /* sqrt of a float is sqrtf: the update stays in single precision */

#include <omp.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "model/fastmath.h"
#include "model/parallel.h"

int adam_init(Adam *adam, size_t n, double beta1, double beta2, double eps, Error *err) {
    memset(adam, 0, sizeof *adam);
    adam->n = n, adam->beta1 = beta1, adam->beta2 = beta2, adam->eps = eps;
    adam->m = checked_calloc(n, sizeof(real), "Adam first moments", err);
    adam->v = checked_calloc(n, sizeof(real), "Adam second moments", err);
    if (!adam->m || !adam->v) {
        adam_free(adam);
        return -1;
    }
    advise_huge_pages(adam->m, sizeof(real) * n);
    advise_huge_pages(adam->v, sizeof(real) * n);
    return 0;
}

void adam_free(Adam *adam) {
    free(adam->m);
    free(adam->v);
    memset(adam, 0, sizeof *adam);
}

/* A chunk [start, end) of the block walked in pieces: alternately a run outside the zero
 * spans and one inside, the latter shrunk to whole multiples of `align` counted from start. */
typedef struct {
    const ParamSpan *span, *last; /* the next span that may reach into the chunk; the end */
    size_t at, start, end, align;
} Pieces;

static Pieces pieces_of(ZeroGrads zero, size_t start, size_t end, size_t align) {
    size_t lo = 0, hi = zero.count; /* the first span that ends after start */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (zero.spans[mid].end <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (Pieces){zero.spans + lo, zero.spans + zero.count, start, start, end, align};
}

/* The next piece, [*first, *end), and whether it lies in a zero span; false at the end. */
static bool next_piece(Pieces *p, size_t *first, size_t *end, bool *zero) {
    if (p->at >= p->end) return false;
    *first = p->at;
    for (; p->span < p->last && p->span->begin < p->end; p->span++) {
        size_t a = p->span->begin > p->at ? p->span->begin : p->at;
        size_t b = p->span->end < p->end ? p->span->end : p->end;
        a = p->start + (a - p->start + p->align - 1) / p->align * p->align;
        b = p->start + (b - p->start) / p->align * p->align;
        if (b <= a) continue; /* no whole block: read as it is */
        *zero = a == p->at;
        *end = p->at = *zero ? b : a;
        if (*zero) p->span++;
        return true;
    }
    *zero = false;
    *end = p->at = p->end;
    return true;
}

/* Adam's constants for one step, in the update's precision. */
typedef struct {
    real b1, b2, eps;
    real step;   /* lr / (1 - beta1^t) */
    real inv_c2; /* 1 / (1 - beta2^t) */
} AdamStepConsts;

/* One parameter's update from its gradient g (clipped already): the moments, then the new
 * value of the parameter p (adam.h's formula). */
static inline real updated(real *m, real *v, real p, real g, const AdamStepConsts *c) {
    *m = c->b1 * *m + (1 - c->b1) * g;
    *v = c->b2 * *v + (1 - c->b2) * g * g;
    return p - c->step * *m / (sqrt(*v * c->inv_c2) + c->eps);
}

/* Where a team's new parameters go. The other threads read every parameter during the next
 * step, so each line Adam writes is one another core holds, and a store through the cache
 * waits for that copy to be invalidated: on cores on two dies, longer than the update itself.
 * A streaming (non-temporal) store hands the line to memory without waiting. A thread alone
 * would only send its own next reads to memory, so it stores as usual; so does a team whose
 * parameters outgrow STREAM_MOST_BYTES, a large last-level cache: few of their lines are still
 * in another core's cache when Adam writes them, and the streaming stores' writes to memory
 * would then be Adam's own time instead of the evictions' later. (x86 has the instruction in
 * its baseline, SSE; elsewhere every store is the usual one.) */
static const size_t STREAM_MOST_BYTES = (size_t)32 << 20;
#if defined(__x86_64__) && !defined(REAL_DOUBLE)
#define HAS_STREAMING_STORES 1
static void store_streaming(real *dst, const real *src, size_t n) {
    size_t i = 0;
    for (; i < n && (uintptr_t)(dst + i) % 16 != 0; i++) dst[i] = src[i];
    for (; i + 4 <= n; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
    for (; i < n; i++) dst[i] = src[i];
}
#else
#define HAS_STREAMING_STORES 0 /* so `stream` is never true */
#endif

/* The update of parameters [first, end), from grads, or from zero gradients when grads is NULL
 * (the same arithmetic, so the same bits), written in place or, when `stream`, through a block
 * on the stack by store_streaming; returns whether one came out non-finite. Each value is
 * updated on its own, so every instruction set gives the same bits. */
static VECTOR_BODY int adam_range_body(const Adam *adam, real *params, real *grads, real grad_scale,
                                       AdamStepConsts c, size_t first, size_t end, bool stream) {
    real *m = adam->m, *v = adam->v;
    int bad = 0;
    enum { BLOCK = 512 };
    real block[BLOCK];
    for (size_t lo = first; lo < end; lo += BLOCK) {
        size_t n = end - lo < BLOCK ? end - lo : BLOCK;
        real *out = stream ? block : params + lo;
        if (grads) {
#pragma omp simd reduction(| : bad)
            for (size_t j = 0; j < n; j++) {
                real g = grads[lo + j] * grad_scale;
                grads[lo + j] = 0; /* zero_grad's work, done while the gradient is at hand */
                out[j] = updated(&m[lo + j], &v[lo + j], params[lo + j], g, &c);
                bad |= !isfinite(out[j]);
            }
        } else {
#pragma omp simd reduction(| : bad)
            for (size_t j = 0; j < n; j++) {
                out[j] = updated(&m[lo + j], &v[lo + j], params[lo + j], 0, &c);
                bad |= !isfinite(out[j]);
            }
        }
#if HAS_STREAMING_STORES
        if (stream) store_streaming(params + lo, block, n);
#endif
    }
    return bad;
}
VECTOR_DISPATCH(NARROW_SETS, static, int, adam_range,
                (const Adam *adam, real *params, real *grads, real grad_scale, AdamStepConsts c,
                 size_t first, size_t end, bool stream),
                (adam, params, grads, grad_scale, c, first, end, stream))

/* adam_range over chunk [first, end), piece by piece. */
static int adam_chunk(const Adam *adam, real *params, real *grads, ZeroGrads zero, real grad_scale,
                      AdamStepConsts c, size_t first, size_t end, bool stream) {
    Pieces p = pieces_of(zero, first, end, 1);
    size_t a, b;
    bool is_zero;
    int bad = 0;
    while (next_piece(&p, &a, &b, &is_zero))
        bad |= adam_range(adam, params, is_zero ? NULL : grads, grad_scale, c, a, b, stream);
    return bad;
}

bool adam_step(Adam *adam, real *params, real *grads, ZeroGrads zero, real grad_scale, double lr) {
    adam->t++;
    double c1 = 1 - pow(adam->beta1, (double)adam->t), c2 = 1 - pow(adam->beta2, (double)adam->t);
    AdamStepConsts c = {(real)adam->beta1, (real)adam->beta2, (real)adam->eps, (real)(lr / c1),
                        (real)(1 / c2)};
    /* one pass over the four arrays also zeroes the gradients and checks the parameters: the
     * step of a short batch is short, and each extra pass over every parameter shows in it.
     * The chunks are dealt out in turn: the skipped embedding rows come first in the block, and
     * in halves one thread would get most of them and the other most of the work. */
    enum { CHUNKS = 64 };
    int bad[CHUNKS] = {0};
    size_t n = adam->n, per = (n + CHUNKS - 1) / CHUNKS;
    bool fits_streaming = HAS_STREAMING_STORES && sizeof(real) * n <= STREAM_MOST_BYTES;
#pragma omp parallel for if (worth_parallel((double)n, 100000)) schedule(static, 1)
    for (int k = 0; k < CHUNKS; k++) {
        size_t first = (size_t)k * per;
        bool stream = fits_streaming && omp_get_num_threads() > 1;
        bad[k] = adam_chunk(adam, params, grads, zero, grad_scale, c, first,
                            first + per < n ? first + per : n, stream);
#if HAS_STREAMING_STORES
        if (stream) _mm_sfence(); /* streaming stores are weakly ordered: before the barrier */
#endif
    }
    for (int k = 0; k < CHUNKS; k++)
        if (bad[k]) return false;
    return true;
}

/* The sum of squares of chunk [first, end), vec_sum_squares's bit for bit: the zero spans are
 * skipped in whole blocks of its lanes, counted from first. */
static double chunk_sum_squares(const real *grads, ZeroGrads zero, size_t first, size_t end) {
    double lanes[SUM_SQUARES_LANES] = {0};
    Pieces p = pieces_of(zero, first, end, SUM_SQUARES_LANES);
    size_t a, b;
    bool is_zero;
    while (next_piece(&p, &a, &b, &is_zero))
        if (!is_zero) vec_sum_squares_add(lanes, grads + a, b - a);
    return sum_squares_total(lanes);
}

double grad_norm(const real *grads, size_t n, ZeroGrads zero) {
    /* Fixed chunks summed in a fixed order: the same result for any number of threads; dealt
     * out as Adam's. */
    enum { CHUNKS = 64 };
    double part[CHUNKS];
    size_t per = (n + CHUNKS - 1) / CHUNKS;
#pragma omp parallel for if (worth_parallel((double)n, 100000)) schedule(static, 1)
    for (int k = 0; k < CHUNKS; k++) {
        size_t first = (size_t)k * per;
        part[k] = chunk_sum_squares(grads, zero, first, first + per < n ? first + per : n);
    }
    double total = 0;
    for (int k = 0; k < CHUNKS; k++) total += part[k];
    return sqrt(total);
}

real clip_scale(double norm, double max_norm) {
    return max_norm > 0 && norm > max_norm ? (real)(max_norm / (norm + 1e-12)) : 1;
}

real clip_grad_norm(const real *grads, size_t n, ZeroGrads zero, double max_norm, double *norm) {
    *norm = grad_norm(grads, n, zero);
    return clip_scale(*norm, max_norm);
}

double schedule_lr(const ConfigOptim *o, uint64_t step, double lr_scale, double budget_used) {
    double warm = o->warmup_steps > 0 ? fmin(1.0, (double)(step + 1) / o->warmup_steps) : 1;
    double factor = 1;
    if (o->schedule == LR_SCHEDULE_WARMUP_DECAY && step > (uint64_t)o->warmup_steps)
        factor = pow(o->decay_rate, (double)(step - o->warmup_steps) / o->decay_steps);
    else if (o->schedule == LR_SCHEDULE_PLATEAU)
        factor = lr_scale;
    else if (o->schedule == LR_SCHEDULE_BUDGET) /* 1 until the decay starts, 0 at the end */
        factor = fmin(1.0, fmax(0.0, 1 - budget_used) / o->decay_share);
    return fmax(o->min_lr, o->lr * factor) * warm;
}

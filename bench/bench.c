/*
 * bench.c: the performance benchmark behind `make bench` (a benchmark, not a test: it reports
 * figures and asserts nothing).
 *
 * For the toy and medium configurations of the performance issue it trains on random token
 * batches (full-length sentences, teacher forcing, Adam with clipping) and reports target
 * tokens/s, the median ms/step, FLOPs/step (formula below), GFLOP/s, the share of the
 * machine's FP32 peak, peak RSS and where a step's time went (the model's phase clocks, the
 * gradient norm and Adam). The peak is measured with a register-only FMA loop just
 * before each timed round, and the share is the median over the rounds of each round's
 * GFLOP/s over its own peak: a machine whose speed drifts from minute to minute (a shared VM,
 * a laptop with other programs running) slows the loop and the model alike. Every
 * measurement runs in a fresh process (this program run again with --run), so each peak RSS
 * is its own and no OpenMP state crosses a fork. Then greedy and beam-5
 * decoding speed at batch 1 and 32, with float and with 8-bit weights (int8), each with where a
 * step's time goes (the search's phase timers, from one more round), the wall time of
 * `bin/translate` (--compute float and int8) for one sentence as a whole process, and ms/step for
 * growing lengths and batch sizes. Each figure is also printed as one `BENCH key=value ...` line
 * for scripts. Threads: OMP_NUM_THREADS (make bench THREADS=N).
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/lengths.h"
#include "bench/peak.h"
#include "base/cpu.h"
#include "model/fastmath.h"
#include "model/fixtures.h"
#include "model/gemm.h"
#include "model/search.h"
#include "train/adam.h"
#include "train/batching.h"
#include "model/qgemm.h"
#include "nmt/text.h"
#include "train/new_model.h"

typedef struct {
    const char *name;
    ModelDims dims;
    int B, S, T;
    int steps; /* measured steps after warm-up */
} BenchConfig;

static const BenchConfig TOY = {
    "toy", {1000, 1000, 64, 128, 1, 128, 128, 128, SCORE_ADDITIVE, 0, 0}, 32, 12, 12, 60};
static const BenchConfig MEDIUM = {
    "medium", {8000, 8000, 256, 256, 1, 512, 256, 256, SCORE_ADDITIVE, 0, 0}, 64, 30, 30, 8};

/* Seconds spent in the passes over every parameter after backward, summed over steps. */
typedef struct {
    double norm, adam;
} UpdateSeconds;

/* One training step as bin/train takes it: forward, zero the gradients, backward, clipping,
 * Adam. */
static int train_step(Model *m, Acts *acts, Adam *adam, const Batch *batch,
                      const ForwardOptions *opt, UpdateSeconds *update) {
    double loss, norm;
    Error err;
    if (model_forward(m, acts, batch, opt, &loss, &err)) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return -1;
    }
    model_zero_grad(m);
    model_backward(m, acts);
    ZeroGrads zero = {acts->untouched, acts->n_untouched};
    double t0 = monotonic_seconds();
    real clip = clip_grad_norm(m->grads, m->table.total, zero, 1.0, &norm);
    double t1 = monotonic_seconds();
    bool ok = adam_step(adam, m->params, m->grads, zero, clip, 1e-4);
    m->grads_zero = true; /* adam_step zeroed each gradient as it read it */
    update->norm += t1 - t0;
    update->adam += monotonic_seconds() - t1;
    if (!ok) {
        fprintf(stderr, "bench: the Adam update overflowed\n");
        return -1;
    }
    return 0;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *x, int n) {
    qsort(x, (size_t)n, sizeof *x, compare_double);
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

/* FLOPs of one training step: 2 per multiply-add of every matrix product and of attention's
 * per-position work, forward; the backward pass costs two forward passes (an input gradient
 * and a weight gradient for every product), so a step is 3 x forward. src: the encoder's
 * positions (B x S: it computes padding too); tgt: the decoder's rows (steps x sentences);
 * attended: the source positions those rows attend to. */
static double step_flops(const ModelDims *d, double B, double src, double tgt, double attended) {
    double E = d->emb, H = d->enc_hidden, K = dims_enc_state(d), D = d->dec_hidden, A = d->att,
           O = d->readout, V = d->tgt_vocab, dirs = d->bidirectional ? 2 : 1;
    double encoder = dirs * src * (E * 3 * H + H * 3 * H) + src * K * A + B * K * D;
    double decoder = tgt * ((E + K) * 3 * D + D * 3 * D + D * A) + attended * (A + K);
    double readout = tgt * ((D + K + E) * O + O * V);
    return 3 * 2 * (encoder + decoder + readout);
}

/* The bench's batches of full-length sentences: padding counted, as there is none. */
static double train_flops(const ModelDims *d, int B, int S, int T) {
    return step_flops(d, B, (double)B * S, (double)B * T, (double)B * T * S);
}

/* A batch of real pairs as the model computes it: the decoder, attention and the output layer
 * skip ended sentences and padding; the encoder does not. */
static double batch_flops(const ModelDims *d, const Batch *b) {
    double tgt = 0, attended = 0;
    for (int i = 0; i < b->B; i++)
        tgt += b->tgt_len[i], attended += (double)b->tgt_len[i] * b->src_len[i];
    return step_flops(d, b->B, (double)b->B * b->S, tgt, attended);
}

/* Untimed steps before a training line's timed ones. */
static int warmup_steps(int steps) {
    return steps < 10 ? 2 : 5;
}

/* A decode line's search length: exactly this many steps (</s> is made impossible). */
enum { DECODE_STEPS = 30 };

typedef struct {
    double ms_per_step, tok_per_s, gflops, peak; /* peak: round_peak() beside the round */
    double phase_seconds[PHASE_TRAINING_COUNT];  /* the timed steps' phases, summed */
    UpdateSeconds update;                        /* and their norm and Adam */
    double timed_seconds;                        /* and the steps themselves */
} TrainFigures;

/* Where a step went, in mean ms a step over `steps` steps that took `seconds` in all: each
 * phase, the gradient norm, Adam, and the rest (what no clock covers: zeroing the gradients,
 * filling a batch). */
static void print_phases(const double *phase_seconds, const UpdateSeconds *update, double steps,
                         double seconds) {
    double rest = seconds - update->norm - update->adam;
    printf("  %-10s ms/step:", "");
    for (int p = 0; p < PHASE_TRAINING_COUNT; p++) {
        printf("%s %s %.2f", p ? "," : "", phase_name((Phase)p), 1e3 * phase_seconds[p] / steps);
        rest -= phase_seconds[p];
    }
    printf(", gradient norm %.2f, Adam %.2f, the rest %.2f\n", 1e3 * update->norm / steps,
           1e3 * update->adam / steps, 1e3 * rest / steps);
}

/* Trains cfg on a fixed random batch: warm-up steps, then `steps` timed ones. */
static int time_training(const ModelDims *dims, int B, int S, int T, int steps, TrainFigures *out) {
    Model m;
    Acts acts;
    RandomBatch rb;
    Adam adam;
    Error err;
    if (model_init(&m, dims, &err) ||
        acts_init_plan(&acts, dims, B, S, T, &(ActsPlan){.huge_pages = 1}, &err) ||
        random_batch_make(&rb, dims, B, S, T, 1, &err) ||
        adam_init(&adam, m.table.total, 0.9, 0.999, 1e-8, &err)) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return -1;
    }
    params_init(m.params, &m.table, 1);
    /* full-length sentences, as the reference figures were measured */
    BatchArrays arr = batch_arrays(rb.ids, B, S, T);
    Rng rng;
    rng_seed(&rng, 5, 0);
    for (int b = 0; b < B; b++) {
        arr.src_len[b] = S, arr.tgt_len[b] = T;
        for (int i = 0; i < S; i++)
            arr.src[b * S + i] =
                i == S - 1 ? TOK_EOS : 4 + (int)rng_below(&rng, dims->src_vocab - 4);
        for (int t = 0; t < T; t++) {
            arr.tgt_out[b * T + t] =
                t == T - 1 ? TOK_EOS : 4 + (int)rng_below(&rng, dims->tgt_vocab - 4);
            arr.tgt_in[b * T + t] = t == 0 ? TOK_BOS : arr.tgt_out[b * T + t - 1];
        }
    }
    int warmup = warmup_steps(steps);
    double *ms = calloc((size_t)steps, sizeof(double));
    if (!ms) return -1;
    ForwardOptions opt = {0};
    UpdateSeconds update = {0};
    for (int s = 0; s < warmup + steps; s++) {
        if (s == warmup) {
            memset(acts.phase_seconds, 0, sizeof acts.phase_seconds);
            update = (UpdateSeconds){0};
        }
        double t0 = monotonic_seconds();
        if (train_step(&m, &acts, &adam, &arr.batch, &opt, &update)) return -1;
        if (s >= warmup) ms[s - warmup] = (monotonic_seconds() - t0) * 1e3;
    }
    memcpy(out->phase_seconds, acts.phase_seconds, sizeof out->phase_seconds);
    out->update = update;
    out->timed_seconds = 0;
    for (int s = 0; s < steps; s++) out->timed_seconds += ms[s] / 1e3;
    out->ms_per_step = median(ms, steps);
    out->tok_per_s = B * T / (out->ms_per_step / 1e3);
    out->gflops = train_flops(dims, B, S, T) / (out->ms_per_step / 1e3) / 1e9;
    free(ms);
    adam_free(&adam);
    random_batch_free(&rb);
    acts_free(&acts);
    model_free(&m);
    return 0;
}

/* The FMA peak the percentages refer to: given (--run PEAK), or 0: measured beside each round
 * (round_peak), so that a share compares two figures of the same minutes on a machine whose
 * speed drifts (a shared VM, a laptop with other programs running). */
static double machine_peak;

static double round_peak(void) {
    return machine_peak > 0 ? machine_peak : fma_peak_gflops(omp_get_max_threads());
}

/* The median share of the peak over the rounds, in percent; *peaks gets the peaks, " / "
 * between them. */
static double median_share(const double *gflops, const double *peak, int rounds, char *peaks,
                           size_t size) {
    double share[16];
    int n = rounds < 16 ? rounds : 16;
    peaks[0] = '\0';
    for (int r = 0; r < n; r++) {
        share[r] = 100 * gflops[r] / peak[r];
        snprintf(peaks + strlen(peaks), size - strlen(peaks), "%s%.0f", r ? " / " : "", peak[r]);
    }
    return median(share, n);
}

/* The cores' round trip in ns beside each round (peak.h), " / " between them, into *out: empty
 * on one thread. */
static void round_trips(const double *ns, int rounds, char *out, size_t size) {
    out[0] = '\0';
    for (int r = 0; r < rounds && ns[r] > 0; r++)
        snprintf(out + strlen(out), size - strlen(out), "%s%.0f", r ? " / " : "; round trip ",
                 ns[r]);
    if (out[0]) snprintf(out + strlen(out), size - strlen(out), " ns");
}

/* Peak resident memory of this process so far, in MB. */
static double peak_rss_mb(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss / 1024.0 : -1;
}

/* The VM's second core is sometimes slow for a while: a figure is the median of ROUNDS
 * measurements in a row (one with --quick), and the readable line shows them all. */
enum { ROUNDS = 3 };

static int compare_figures(const void *a, const void *b) {
    double x = ((const TrainFigures *)a)->ms_per_step, y = ((const TrainFigures *)b)->ms_per_step;
    return x < y ? -1 : x > y;
}

static int train_report(const BenchConfig *c, int rounds) {
    TrainFigures runs[ROUNDS];
    double gflops[ROUNDS], peak[ROUNDS], trip[ROUNDS];
    for (int r = 0; r < rounds; r++) {
        peak[r] = round_peak();
        trip[r] = core_round_trip_ns();
        if (time_training(&c->dims, c->B, c->S, c->T, c->steps, &runs[r])) return -1;
        gflops[r] = runs[r].gflops;
    }
    char each[128] = "", peaks[128], trips[128];
    double pct = median_share(gflops, peak, rounds, peaks, sizeof peaks);
    round_trips(trip, rounds, trips, sizeof trips);
    for (int r = 0; r < rounds && rounds > 1; r++)
        snprintf(each + strlen(each), sizeof each - strlen(each), "%s%.0f", r ? " / " : " (",
                 runs[r].tok_per_s);
    if (rounds > 1) strcat(each, ")");
    qsort(runs, (size_t)rounds, sizeof runs[0], compare_figures);
    TrainFigures f = runs[rounds / 2];
    double rss = peak_rss_mb();
    printf("  %-8s %9.0f tok/s %8.1f ms/step %6.2f GFLOP/step %6.1f GFLOP/s %5.1f%% of peak "
           "%6.0f MB RSS%s, peaks %s%s\n",
           c->name, f.tok_per_s, f.ms_per_step, train_flops(&c->dims, c->B, c->S, c->T) / 1e9,
           f.gflops, pct, rss, each, peaks, trips);
    printf("BENCH name=%s threads=%d tok_per_s=%.0f ms_per_step=%.2f gflops=%.1f peak_pct=%.1f "
           "rss_mb=%.0f\n",
           c->name, omp_get_max_threads(), f.tok_per_s, f.ms_per_step, f.gflops, pct, rss);
    /* the median round's phases: means over its steps (the line above: its median step) */
    print_phases(f.phase_seconds, &f.update, c->steps, f.timed_seconds);
    return 0;
}

/* ---- training on realistic lengths -------------------------------------------------- */

/* The model for the gettext en-de corpus: Vs = Vt = 16,004, E = 256, H = 256 bi,
 * D = 512, A = O = 256. */
static const ModelDims REAL_DIMS = {16004, 16004, 256, 256, 1, 512, 256, 256, SCORE_ADDITIVE, 0, 0};
enum { REAL_PAIRS = 64 * 64 }; /* one full bucketing window of 64-pair batches */

typedef struct {
    double tok_per_s, pairs_per_s, ms_per_step, gflops;
} RealFigures;

static int compare_real(const void *a, const void *b) {
    double x = ((const RealFigures *)a)->tok_per_s, y = ((const RealFigures *)b)->tok_per_s;
    return x < y ? -1 : x > y;
}

/* Trains on pairs of realistic lengths batched as bin/train batches them (epoch 0's plan of
 * batch_size or batch_tokens, activations planned as the trainer plans them): an untimed
 * round, then `rounds` timings of the same `steps` batches. Target tokens count </s>, as
 * bin/train's tok/s does; padding is the share of padded positions of both sides over the
 * whole epoch. */
static int real_report(const char *name, int batch_size, int batch_tokens, const char *corpus,
                       int steps, int rounds) {
    Dataset ds;
    Model m;
    Adam adam;
    EpochPlan plan;
    BatchBuffer bb;
    Acts acts;
    Error err;
    ConfigTrain ct = {.batch_size = batch_size, .batch_tokens = batch_tokens, .seed = 1};
    if (lengths_dataset(&ds, REAL_PAIRS, &REAL_DIMS, corpus, 7, &err) ||
        training_plan(&plan, &ds, &ct, 0, &err) ||
        batch_buffer_init(&bb, training_max_pairs(&ds, &ct), ds.max_src, ds.max_tgt, &err) ||
        acts_init_plan(&acts, &REAL_DIMS, training_max_pairs(&ds, &ct), ds.max_src + 1,
                       ds.max_tgt + 1, &(ActsPlan){.huge_pages = 1}, &err) ||
        model_init(&m, &REAL_DIMS, &err) ||
        adam_init(&adam, m.table.total, 0.9, 0.999, 1e-8, &err)) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return -1;
    }
    params_init(m.params, &m.table, 1);
    /* the padding of the whole epoch, not only of the timed batches */
    PaddingCount padding = {0};
    for (size_t b = 0; b < plan.n_batches; b++)
        padding_add(&padding, batch_fill(&bb, &ds, plan.order + plan.start[b],
                                         (int)(plan.start[b + 1] - plan.start[b])));
    ForwardOptions opt = {0};
    RealFigures runs[ROUNDS];
    double gflops[ROUNDS], peak[ROUNDS], trip[ROUNDS];
    /* Round -1, untimed, trains on the same batches as the timed rounds: the activations are
     * planned for the longest batch, and their pages are first touched as longer batches come,
     * which made a first timed round after a 2-step warm-up ~20% slower than the next two
     * (training pays it once, in its first steps). The timed batches are the 3rd to the
     * (steps + 2)th of the epoch, as before. */
    enum { FIRST_BATCH = 2 };
    double timed = 0;
    UpdateSeconds update = {0};
    for (int r = -1; r < rounds; r++) {
        size_t tokens = 0, pairs = 0;
        double flops = 0;
        if (r == 0) {
            memset(acts.phase_seconds, 0, sizeof acts.phase_seconds);
            update = (UpdateSeconds){0};
        }
        if (r >= 0) peak[r] = round_peak(), trip[r] = core_round_trip_ns();
        double t0 = monotonic_seconds();
        for (int s = 0; s < steps; s++) {
            size_t b = (size_t)(FIRST_BATCH + s) % plan.n_batches;
            const Batch *batch = batch_fill(&bb, &ds, plan.order + plan.start[b],
                                            (int)(plan.start[b + 1] - plan.start[b]));
            if (train_step(&m, &acts, &adam, batch, &opt, &update)) return -1;
            tokens += (size_t)acts.n_tokens, pairs += (size_t)batch->B;
            flops += batch_flops(&REAL_DIMS, batch);
        }
        double elapsed = monotonic_seconds() - t0;
        if (r < 0) continue;
        runs[r] = (RealFigures){tokens / elapsed, pairs / elapsed, elapsed / steps * 1e3,
                                flops / elapsed / 1e9};
        gflops[r] = runs[r].gflops;
        timed += elapsed;
    }
    char each[128] = "", peaks[128], trips[128];
    double pct = median_share(gflops, peak, rounds, peaks, sizeof peaks);
    round_trips(trip, rounds, trips, sizeof trips);
    for (int r = 0; r < rounds && rounds > 1; r++)
        snprintf(each + strlen(each), sizeof each - strlen(each), "%s%.0f", r ? " / " : " (",
                 runs[r].tok_per_s);
    if (rounds > 1) strcat(each, ")");
    qsort(runs, (size_t)rounds, sizeof runs[0], compare_real);
    RealFigures f = runs[rounds / 2];
    double rss = peak_rss_mb(), pad = 100 * padding_share(&padding);
    double src_pad = 100 - 100.0 * padding.src_tokens / padding.src_positions;
    double tgt_pad = 100 - 100.0 * padding.tgt_tokens / padding.tgt_positions;
    printf("  %-10s %7.0f tgt tok/s %6.1f pairs/s %7.1f ms/step  pad %4.1f%% (src %4.1f%%, tgt "
           "%4.1f%%)  max %d pairs  %5.0f "
           "MB RSS%s\n",
           name, f.tok_per_s, f.pairs_per_s, f.ms_per_step, pad, src_pad, tgt_pad,
           training_max_pairs(&ds, &ct), rss, each);
    printf("  %-10s %7.1f GFLOP/s, %.1f%% of peak (peaks %s GFLOP/s%s; the FLOPs the model "
           "computes: padding and ended sentences only in the encoder)\n",
           "", f.gflops, pct, peaks, trips);
    printf("BENCH name=real-%s threads=%d tok_per_s=%.0f pairs_per_s=%.1f ms_per_step=%.2f "
           "padding=%.3f rss_mb=%.0f gflops=%.1f peak_pct=%.1f\n",
           name, omp_get_max_threads(), f.tok_per_s, f.pairs_per_s, f.ms_per_step, pad / 100, rss,
           f.gflops, pct);
    /* where a step goes, over every timed step */
    print_phases(acts.phase_seconds, &update, (double)steps * rounds, timed);
    adam_free(&adam);
    model_free(&m);
    acts_free(&acts);
    batch_buffer_free(&bb);
    epoch_plan_free(&plan);
    dataset_free(&ds);
    return 0;
}

/* ---- decoding ----------------------------------------------------------------------- */

typedef struct {
    const BenchConfig *cfg;
    int batch, beam, rounds;
    int int8; /* 1: the model's weights quantized (--compute int8) */
} DecodeCase;

/* Searches the batch again and again for at least `seconds`; *calls gets how many times and
 * *elapsed the time taken. */
static int search_for(Searcher *s, const Model *m, const int **src, const int *lens, int batch,
                      const SearchOptions *opt, Translation *tr, double seconds, long *calls,
                      double *elapsed) {
    Error err;
    double t0 = monotonic_seconds();
    *calls = 0;
    do {
        if (search_translate(s, m, src, lens, batch, opt, tr, &err)) {
            fprintf(stderr, "bench: %s\n", err.msg);
            return -1;
        }
        for (int b = 0; b < batch; b++) translation_free(&tr[b]);
        (*calls)++;
        *elapsed = monotonic_seconds() - t0;
    } while (*elapsed < seconds);
    return 0;
}

/* Sentences/s of decoding exactly DECODE_STEPS steps from random sources: the median of ROUNDS
 * timings of at least 0.4 s. */
static int decode_report(const DecodeCase *dc) {
    const ModelDims *d = &dc->cfg->dims;
    int S = dc->cfg->S, steps = DECODE_STEPS;
    Model m;
    Searcher s;
    Error err;
    if (model_init(&m, d, &err) || search_init(&s, d, dc->batch, S, dc->beam, steps, &err)) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return -1;
    }
    params_init(m.params, &m.table, 2);
    m.w.out_b[TOK_EOS] = -1e9f;
    if (dc->int8 && model_quantize(&m, &err)) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return -1;
    }
    int *ids = calloc((size_t)dc->batch * S, sizeof(int)),
        *lens = calloc((size_t)dc->batch, sizeof(int));
    const int **src = calloc((size_t)dc->batch, sizeof(int *));
    Translation *tr = calloc((size_t)dc->batch, sizeof(Translation));
    if (!ids || !lens || !src || !tr) return -1;
    Rng rng;
    rng_seed(&rng, 9, 0);
    for (int b = 0; b < dc->batch; b++) {
        for (int i = 0; i < S; i++)
            ids[b * S + i] = i == S - 1 ? TOK_EOS : 4 + (int)rng_below(&rng, d->src_vocab - 4);
        src[b] = ids + b * S;
        lens[b] = S;
    }
    SearchOptions opt = {.beam = dc->beam, .nbest = 1, .max_len = steps, .len_norm = 1};
    double rates[ROUNDS];
    double elapsed;
    long calls;
    for (int r = 0; r < dc->rounds; r++) {
        if (search_for(&s, &m, src, lens, dc->batch, &opt, tr, 0.4, &calls, &elapsed)) return -1;
        rates[r] = (double)calls * dc->batch / elapsed;
    }
    double rate = median(rates, dc->rounds);
    printf("  %-8s %-6s batch %-3d %-5s %9.1f sentences/s\n", dc->cfg->name,
           dc->beam == 1 ? "greedy" : "beam5", dc->batch, dc->int8 ? "int8" : "float", rate);
    printf("BENCH name=%s-decode-%s-b%d%s sent_per_s=%.1f\n", dc->cfg->name,
           dc->beam == 1 ? "greedy" : "beam5", dc->batch, dc->int8 ? "-int8" : "", rate);
    /* where a step goes: one more round, untimed above, with the search's phase clocks on
     * (their reads would slow the figure above a little) */
    memset(s.enc.phase_seconds, 0, sizeof s.enc.phase_seconds);
    s.enc.time_search = 1;
    if (search_for(&s, &m, src, lens, dc->batch, &opt, tr, 0.4, &calls, &elapsed)) return -1;
    double per_step = 1e6 / ((double)calls * steps), in_phases = 0;
    printf("  %8s us/step:", "");
    for (int p = PHASE_TRAINING_COUNT; p < PHASE_COUNT; p++) {
        printf("%s %s %.1f", p > PHASE_TRAINING_COUNT ? "," : "", phase_name((Phase)p),
               per_step * s.enc.phase_seconds[p]);
        in_phases += s.enc.phase_seconds[p];
    }
    printf(", the rest %.1f (of %.1f)\n", per_step * (elapsed - in_phases), per_step * elapsed);
    fflush(stdout);
    free(ids), free(lens), free(src), free(tr);
    search_free(&s);
    model_free(&m);
    return 0;
}

/* ---- whole-process translation ------------------------------------------------------ */

/* Median wall time of `bin/translate -m MODEL "I love machine learning"`, with the toy model
 * if trained, else a toy-sized model made from the toy config. */
static void translate_process_report(void) {
    const char *model = "runs/toy/best.ckpt";
    char made[] = "/tmp/nmt-bench-XXXXXX";
    char made_path[64] = "";
    if (access(model, R_OK) != 0) {
        Config cfg;
        Corpus corpus;
        TokenizedCorpus tokens;
        NmtModel nm;
        Error err;
        if (!mkdtemp(made) || config_load(&cfg, "configs/toy.ini", NULL, 0, &err) ||
            corpus_load(cfg.data.train, cfg.data.lowercase, &corpus, &tokens, &err) ||
            nmt_model_from_config(&nm, &cfg, &tokens, 1, &err)) {
            printf("  translate process: skipped (no model and none could be made)\n");
            return;
        }
        snprintf(made_path, sizeof made_path, "%s/toy.ckpt", made);
        if (checkpoint_save(made_path, &nm, NULL, &err)) return;
        nmt_model_free(&nm);
        tokenized_corpus_free(&tokens);
        corpus_free(&corpus);
        model = made_path;
    }
    for (int int8 = 0; int8 < 2; int8++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd,
                 "bin/translate -m %s --compute %s \"I love machine learning\" >/dev/null", model,
                 int8 ? "int8" : "float");
        double ms[21];
        for (int i = 0; i < 21; i++) {
            double t0 = monotonic_seconds();
            if (system(cmd) != 0) {
                printf("  translate process: bin/translate failed\n");
                return;
            }
            ms[i] = (monotonic_seconds() - t0) * 1e3;
        }
        double med = median(ms, 21);
        printf("  bin/translate --compute %-5s one sentence, whole process: %.1f ms (median of "
               "21; %s)\n",
               int8 ? "int8" : "float", med,
               made_path[0] ? "untrained toy-sized model" : "the trained toy model");
        printf("BENCH name=translate-process%s ms=%.2f\n", int8 ? "-int8" : "", med);
    }
    if (made_path[0]) {
        unlink(made_path);
        rmdir(made);
    }
}

/* A positive whole number, or -1 (these arguments come from this program itself). */
static int positive_int(const char *text) {
    char *end;
    long v = strtol(text, &end, 10);
    return end != text && *end == '\0' && v > 0 && v < 100000 ? (int)v : -1;
}

/* One measurement, in this process: "train NAME", "decode NAME BEAM BATCH", "length L",
 * "batch B" (the scaling table, toy sizes) or "real pairs N [CORPUS]" / "real tokens N
 * [CORPUS]" (realistic lengths, N pairs or N target tokens a batch). */
static int run_one(int argc, char **argv, int quick) {
    if (strcmp(argv[0], "real") == 0 && (argc == 3 || argc == 4) && positive_int(argv[2]) > 0) {
        int n = positive_int(argv[2]), by_tokens = strcmp(argv[1], "tokens") == 0;
        char name[32];
        snprintf(name, sizeof name, "%s%d", by_tokens ? "tokens" : "pairs", n);
        return real_report(name, by_tokens ? 64 : n, by_tokens ? n : 0, argc == 4 ? argv[3] : NULL,
                           quick ? 4 : 16, quick ? 1 : ROUNDS);
    }
    const BenchConfig *c = argc > 1 && strcmp(argv[1], "medium") == 0 ? &MEDIUM : &TOY;
    if (strcmp(argv[0], "train") == 0 && argc == 2) {
        BenchConfig copy = *c;
        if (quick) copy.steps = copy.steps / 4 + 1;
        return train_report(&copy, quick ? 1 : ROUNDS);
    }
    int int8 = argc == 5 && strcmp(argv[4], "int8") == 0;
    if (strcmp(argv[0], "decode") == 0 && (argc == 4 || int8)) {
        DecodeCase dc = {c, positive_int(argv[3]), positive_int(argv[2]), quick ? 1 : ROUNDS, int8};
        if (dc.batch > 0 && dc.beam > 0) return decode_report(&dc);
    }
    if ((strcmp(argv[0], "length") == 0 || strcmp(argv[0], "batch") == 0) && argc == 2 &&
        positive_int(argv[1]) > 0) {
        int n = positive_int(argv[1]), by_length = argv[0][0] == 'l';
        int B = by_length ? 32 : n, L = by_length ? n : 20;
        TrainFigures f;
        if (time_training(&TOY.dims, B, L, L, quick ? 3 : 10, &f)) return -1;
        printf("  B=%-3d S=T=%-3d %8.2f ms/step %8.0f tok/s\n", B, L, f.ms_per_step, f.tok_per_s);
        printf("BENCH name=toy-%s%d threads=%d ms_per_step=%.2f tok_per_s=%.0f\n",
               by_length ? "len" : "batch", n, omp_get_max_threads(), f.ms_per_step, f.tok_per_s);
        return 0;
    }
    fprintf(stderr, "bench: unknown measurement '%s' (see bench --help)\n", argv[0]);
    return -1;
}

/* Runs this program again as `SELF [--quick] --run PEAK WHAT...` and waits for it. */
static int spawn_run(const char *self, int quick, const char *const *what, int n) {
    const char *args[12] = {self};
    int k = 1;
    if (quick) args[k++] = "--quick";
    args[k++] = "--run";
    args[k++] = "0"; /* each run measures the peak beside its rounds */
    for (int i = 0; i < n && k < 11; i++) args[k++] = what[i];
    args[k] = NULL;
    fflush(stdout);
    pid_t pid;
    extern char **environ;
    if (posix_spawn(&pid, self, NULL, NULL, (char *const *)args, environ) != 0) return -1;
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("  (%s %s failed)\n", what[0], n > 1 ? what[1] : "");
        return -1;
    }
    return 0;
}

/* One line of key=value: what a line of config c trains and decodes, and how it is timed. */
static void describe(const BenchConfig *c) {
    const ModelDims *d = &c->dims;
    printf("name=%s Vs=%d Vt=%d E=%d H=%d bidirectional=%d D=%d A=%d O=%d score=%s "
           "tie_embeddings=%d layer_norm=%d B=%d S=%d T=%d steps=%d warmup=%d rounds=%d "
           "decode_steps=%d\n",
           c->name, d->src_vocab, d->tgt_vocab, d->emb, d->enc_hidden, d->bidirectional,
           d->dec_hidden, d->att, d->readout, score_name(d->score), d->tie_embeddings,
           d->layer_norm, c->B, c->S, c->T, c->steps, warmup_steps(c->steps), ROUNDS, DECODE_STEPS);
}

int main(int argc, char **argv) {
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    int at = 1 + quick;
    const char *corpus = NULL; /* --corpus FILE: realistic lengths from FILE, not the histogram */
    if (argc > at + 1 && strcmp(argv[at], "--corpus") == 0) corpus = argv[at + 1], at += 2;
    if (argc == at + 2 && strcmp(argv[at], "--describe") == 0 &&
        (strcmp(argv[at + 1], "toy") == 0 || strcmp(argv[at + 1], "medium") == 0)) {
        describe(strcmp(argv[at + 1], "toy") == 0 ? &TOY : &MEDIUM);
        return 0;
    }
    if (argc > at + 2 && strcmp(argv[at], "--run") == 0) {
        machine_peak = strtod(argv[at + 1], NULL);
        if (!(machine_peak > 0)) machine_peak = 0; /* measured beside each round */
        return run_one(argc - at - 2, argv + at + 2, quick) ? 1 : 0;
    }
    if (argc > at) {
        fprintf(
            stderr,
            "usage: bench [--quick] [--corpus FILE]      all the measurements; FILE (TSV pairs)\n"
            "         gives the realistic lengths instead of the built-in gettext histogram\n"
            "       bench [--quick] --run PEAK WHAT...   one, in this process: WHAT is\n"
            "         train toy|medium, decode toy|medium BEAM BATCH [int8], length L, batch B, "
            "or\n"
            "         real pairs|tokens N [FILE] (realistic lengths, N pairs or tokens a batch);\n"
            "         PEAK is the FMA peak in GFLOP/s for the percentages (0: measured just\n"
            "         before each timed round, as the runs of this program do)\n"
            "       bench --describe toy|medium           the configuration's sizes and\n"
            "         timing as key=value (bench/pytorch.py builds its model from them)\n"
            "(run from the repository root; threads: OMP_NUM_THREADS)\n");
        return 2;
    }
    const char *self = "/proc/self/exe";
    char exe[4096];
    ssize_t len = readlink(self, exe, sizeof exe - 1);
    if (len > 0) exe[len] = '\0', self = exe;
    int threads = omp_get_max_threads();
    double peak1 = fma_peak_gflops(1);
    double peak = fma_peak_gflops(threads);
    printf("machine: %d thread(s), FP32 FMA peak %.1f GFLOP/s (%.1f per thread) with %s, %s "
           "build, %s GEMM kernels, %s vector loops, %s int8 kernels\n",
           threads, peak, peak1, isa_name(cpu_best()), REAL_NAME, isa_name(gemm_kernels()),
           isa_name(vector_kernels()), isa_name(qgemm_kernels()));
    printf("BENCH name=peak threads=%d gflops=%.1f\n", threads, peak);

    printf("\ntraining (random full-length batches, Adam, clipping 1.0; FLOPs = 3 x forward):\n");
    spawn_run(self, quick, (const char *[]){"train", "toy"}, 2);
    spawn_run(self, quick, (const char *[]){"train", "medium"}, 2);

    printf("\ntraining on realistic lengths (%s; Vs=Vt=16004, E=256, H=256 bi, D=512, A=O=256;\n"
           "batched as bin/train does: by 64 pairs, by 700 target tokens (about as many as\n"
           "64 pairs hold) and by 1,500 (configs/base.ini's batches)):\n",
           corpus ? corpus : "the gettext en-de corpus's length histogram");
    spawn_run(self, quick, (const char *[]){"real", "pairs", "64", corpus}, corpus ? 4 : 3);
    spawn_run(self, quick, (const char *[]){"real", "tokens", "700", corpus}, corpus ? 4 : 3);
    spawn_run(self, quick, (const char *[]){"real", "tokens", "1500", corpus}, corpus ? 4 : 3);

    printf("\ndecoding, %d steps, random sources (S = %d toy, %d medium):\n", DECODE_STEPS, TOY.S,
           MEDIUM.S);
    const char *names[2] = {"toy", "medium"}, *beams[2] = {"1", "5"}, *batches[2] = {"1", "32"};
    for (int i = 0; i < 2; i++)
        for (int b = 0; b < 2; b++)
            for (int n = 0; n < 2; n++)
                for (int int8 = 0; int8 < 2; int8++)
                    spawn_run(self, quick,
                              (const char *[]){"decode", names[i], beams[b], batches[n], "int8"},
                              4 + int8);

    printf("\n");
    translate_process_report();

    printf("\nscaling (toy sizes): ms/step\n");
    const char *lengths[4] = {"10", "20", "40", "80"}, *sizes[4] = {"1", "8", "32", "128"};
    for (int i = 0; i < 4; i++) spawn_run(self, quick, (const char *[]){"length", lengths[i]}, 2);
    for (int i = 0; i < 4; i++) spawn_run(self, quick, (const char *[]){"batch", sizes[i]}, 2);
    return 0;
}

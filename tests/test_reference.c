/*
 * test_reference.c: the engine (model/, train/adam.c, model/search.c) against the plain
 * reference (reference/reference.c). Each case of a named table (a model and its forward
 * options, base.ini's own combination among them) runs for every attention score on random
 * models and ragged batches: the loss, the activations (h_i, the keys, alpha, c_t, s_t, o_t,
 * z_t) and every gradient agree within TOLERANCE of each tensor's largest magnitude (max
 * |engine - reference| / max |reference|), and any NaN or infinity in any element fails. 20
 * Adam steps keep the two in step, losses and parameters; greedy decoding of the toy test set
 * gives the same words. And the comparison can fail: a perturbed gradient, or a NaN in its last
 * element, is caught and named.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/search.h"
#include "nmt/text.h"
#include "model/fixtures.h"
#include "reference/reference.h"
#include "tests/suites.h"
#include "train/adam.h"
#include "train/new_model.h"

/* The engine computes in `real`, the reference in double: in a float build the difference is
 * the engine's round-off; in a double build both are exact to a few units in the last place. */
#ifdef REAL_DOUBLE
static const double TOLERANCE = 1e-12, ADAM_PARAMS = 1e-9;
#else
/* 20 Adam steps add up their round-off, and Adam divides each first moment by the root of
 * the second: an element whose gradient is small beside its tensor's largest carries its own
 * relative round-off (not the tensor's, which TOLERANCE bounds) into a whole step of its
 * parameter, and the two runs then see slightly different parameters at every later step. So
 * the parameters get ten times a single pass's bound. A wrong update (a sign, a skipped row, a
 * missed clip) moves a parameter by about lr = 0.01 a step, against parameters of 0.1 to 1:
 * hundreds of times this bound. */
static const double TOLERANCE = 1e-5, ADAM_PARAMS = 1e-4;
#endif
static const double ADAM_LOSSES = 1e-4;

/* The worst relative difference seen so far, and where: a tensor and its element. */
typedef struct {
    double worst;   /* INFINITY when a value is not finite */
    char name[64];  /* the tensor ("grad out.w", "alpha") */
    size_t element; /* of its largest difference, or of its first non-finite value */
} Verdict;

/* max |engine - reference| / max |reference| over n values (mask, if given, picks them), into
 * the verdict when it is the worst so far. A NaN or infinity on either side, in any element,
 * makes it infinite (fmax would drop a NaN, and a comparison with NaN is false). */
static double compare(Verdict *v, const char *name, const double *ref, const double *eng, size_t n,
                      const unsigned char *mask) {
    double diff = 0, scale = 0, rel = 0;
    size_t element = 0;
    for (size_t i = 0; i < n && rel == 0; i++) {
        if (mask && !mask[i]) continue;
        if (!isfinite(eng[i]) || !isfinite(ref[i])) rel = INFINITY, element = i;
        if (fabs(eng[i] - ref[i]) > diff) diff = fabs(eng[i] - ref[i]), element = i;
        scale = fmax(scale, fabs(ref[i]));
    }
    if (rel == 0) rel = scale > 0 ? diff / scale : diff;
    if (rel > v->worst || !v->name[0]) {
        v->worst = rel, v->element = element;
        snprintf(v->name, sizeof v->name, "%s", name);
    }
    return rel;
}

/* Every gradient tensor of the engine's block against the reference's. */
static void compare_grads(Verdict *v, const ParamTable *table, const real *engine,
                          const double *reference) {
    for (int p = 0; p < PARAM_COUNT; p++) {
        const ParamInfo *info = &table->info[p];
        if (!info->size) continue;
        double *eng = malloc(sizeof(double) * info->size);
        ck_assert_ptr_nonnull(eng);
        for (size_t i = 0; i < info->size; i++) eng[i] = engine[info->offset + i];
        char name[64];
        snprintf(name, sizeof name, "grad %s", info->name);
        compare(v, name, reference + info->offset, eng, info->size, NULL);
        free(eng);
    }
}

/* A model and its forward options, named by what they cover; each runs for every score. */
typedef struct {
    const char *name;
    int bidirectional, tied, layer_norm;
    double dropout, word_dropout, label_smoothing;
    int threads;
} Case;

static const Case CASES[] = {
    /* name                                               bi  tied ln  dropout word smooth thr */
    {"the spec's model", 0, 0, 0, 0, 0, 0, 1},
    {"the spec's model, bidirectional", 1, 0, 0, 0, 0, 0, 1},
    {"label smoothing", 0, 0, 0, 0, 0, 0.1, 1},
    {"bidirectional, label smoothing", 1, 0, 0, 0, 0, 0.1, 1},
    {"dropout", 0, 0, 0, 0.3, 0, 0, 1},
    {"bidirectional, dropout", 1, 0, 0, 0.3, 0, 0, 1},
    {"dropout and label smoothing", 0, 0, 0, 0.3, 0, 0.1, 1},
    {"bidirectional, dropout and label smoothing", 1, 0, 0, 0.3, 0, 0.1, 1},
    {"two threads", 0, 0, 0, 0, 0, 0, 2},
    {"two threads, bidirectional, label smoothing", 1, 0, 0, 0, 0, 0.1, 2},
    {"two threads, dropout", 0, 0, 0, 0.3, 0, 0, 2},
    {"two threads, bidirectional, dropout and label smoothing", 1, 0, 0, 0.3, 0, 0.1, 2},
    {"word dropout", 0, 0, 0, 0, 0.3, 0, 1},
    {"bidirectional, word dropout", 1, 0, 0, 0, 0.3, 0, 1},
    {"word dropout and dropout", 0, 0, 0, 0.3, 0.3, 0, 1},
    {"two threads, bidirectional, word dropout and dropout", 1, 0, 0, 0.3, 0.3, 0, 2},
    {"tied embeddings, label smoothing", 0, 1, 0, 0, 0, 0.1, 1},
    {"bidirectional, tied embeddings, label smoothing", 1, 1, 0, 0, 0, 0.1, 1},
    {"tied embeddings, both dropouts, label smoothing", 0, 1, 0, 0.3, 0.3, 0.1, 1},
    {"two threads, bidirectional, tied, both dropouts, smoothing", 1, 1, 0, 0.3, 0.3, 0.1, 2},
    {"layer-normalised GRUs", 0, 0, 1, 0, 0, 0, 1},
    {"bidirectional, layer-normalised, label smoothing", 1, 0, 1, 0, 0, 0.1, 1},
    {"two threads, layer-normalised, dropout", 0, 0, 1, 0.3, 0, 0, 2},
    {"two threads, bidirectional, layer-normalised, dropout, smoothing", 1, 0, 1, 0.3, 0, 0.1, 2},
    /* configs/base.ini: bidirectional, tied, layer-normalised, dropout and smoothing 0.1 */
    {"base.ini's combination", 1, 1, 1, 0.1, 0, 0.1, 1},
    {"two threads, base.ini's combination", 1, 1, 1, 0.1, 0, 0.1, 2},
};
enum { N_CASES = sizeof CASES / sizeof CASES[0] };

/* A small model of the case's kind: tied embeddings make the readout the embedding's size. */
static ModelDims case_dims(const Case *c, AttentionScore score) {
    int K = c->bidirectional ? 8 : 4;
    return (ModelDims){.src_vocab = 17,
                       .tgt_vocab = 19,
                       .emb = 5,
                       .enc_hidden = 4,
                       .bidirectional = c->bidirectional,
                       .dec_hidden = score == SCORE_DOT ? K : 6,
                       .att = 3,
                       .readout = c->tied ? 5 : 7,
                       .score = score,
                       .tie_embeddings = c->tied,
                       .layer_norm = c->layer_norm};
}

enum { CASE_B = 4, CASE_S = 7, CASE_T = 6 };

/* The engine's time-major [T, B, X] rows (row t * B + b) as the reference's sentence-major
 * [B, T, X]. */
static void engine_rows(double *out, const real *rows, int B, int T, int X) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int j = 0; j < X; j++)
                out[((size_t)b * T + t) * X + j] = rows[((size_t)t * B + b) * X + j];
}

/* A change made to one element of the engine's gradients before they are compared. */
typedef struct {
    ParamId tensor;
    long element; /* -1: none */
    /* the new value, from the old one and the tensor's largest magnitude */
    real (*change)(real old, real biggest);
} Injection;
static const Injection NO_INJECTION = {0, -1, NULL};

/* [B, L, X] values at real positions only: position i of sentence b when i < len[b]. */
static void mask_positions(unsigned char *mask, int B, int L, int X, const int *len) {
    for (int b = 0; b < B; b++)
        for (int i = 0; i < L; i++) memset(mask + ((size_t)b * L + i) * X, i < len[b], (size_t)X);
}

/* The activations of the engine's dump plan (every one kept) against the reference's: those
 * of the encoder at real source positions, those of the decoder's steps at real targets
 * (padding is not the spec's). */
static void compare_activations(Verdict *v, const Acts *acts, const RefActs *ref,
                                const Batch *batch, const ModelDims *d) {
    int B = batch->B, S = batch->S, T = batch->T;
    int K = dims_enc_state(d), D = d->dec_hidden, V = d->tgt_vocab, O = d->readout;
    int F = dims_att_features(d), widest = V > S ? V : S;
    widest = widest > K + D + F + O ? widest : K + D + F + O;
    size_t most = (size_t)B * (S > T ? S : T) * widest;
    double *eng = malloc(sizeof(double) * most), *ref_rows = malloc(sizeof(double) * most);
    unsigned char *mask = malloc(most);
    ck_assert(eng && ref_rows && mask);
    /* the encoder's, [B, S, X] on both sides */
    const struct {
        const char *name;
        const real *engine;
        const double *reference;
        int width;
    } encoder[] = {{"enc_h", acts->enc_h, ref->enc_h, K}, {"keys", acts->keys, ref->keys, F}};
    for (size_t k = 0; k < 2; k++) {
        if (encoder[k].engine == acts->keys && d->score == SCORE_DOT) continue; /* enc_h's */
        size_t n = (size_t)B * S * encoder[k].width;
        for (size_t i = 0; i < n; i++) eng[i] = encoder[k].engine[i];
        mask_positions(mask, B, S, encoder[k].width, batch->src_len);
        compare(v, encoder[k].name, encoder[k].reference, eng, n, mask);
    }
    /* the steps', time-major in the engine; s_1 .. s_T of the reference's [B, T+1, D] */
    const struct {
        const char *name;
        const real *engine;
        const double *reference;
        int width;
    } steps[] = {{"alpha", acts->alpha, ref->alpha, S},
                 {"c_t", acts->context, ref->context, K},
                 {"s_t", acts->dec_state + (size_t)B * D, NULL, D},
                 {"z_t", acts->logits, ref->logits, V}};
    for (int b = 0; b < B; b++)
        memcpy(ref_rows + (size_t)b * T * D, ref->s + ((size_t)b * (T + 1) + 1) * D,
               sizeof(double) * (size_t)T * D);
    for (size_t k = 0; k < 4; k++) {
        int X = steps[k].width;
        engine_rows(eng, steps[k].engine, B, T, X);
        mask_positions(mask, B, T, X, batch->tgt_len);
        compare(v, steps[k].name, steps[k].reference ? steps[k].reference : ref_rows, eng,
                (size_t)B * T * X, mask);
    }
    /* o_t: the engine's rows are those of out_row, packed */
    memset(eng, 0, sizeof(double) * (size_t)B * T * O);
    for (int r = 0; r < acts->n_out; r++) {
        int row = acts->out_row[r], t = row / B, b = row % B;
        for (int j = 0; j < O; j++)
            eng[((size_t)b * T + t) * O + j] = acts->readout[(size_t)r * O + j];
    }
    mask_positions(mask, B, T, O, batch->tgt_len);
    compare(v, "o_t", ref->readout, eng, (size_t)B * T * O, mask);
    free(eng);
    free(ref_rows);
    free(mask);
}

/* Runs a case with one score through the engine (both plans: the dump's, which keeps every
 * activation, and training's) and the reference, and returns the worst difference; the
 * injection, if any, changes the engine's gradients first. */
static Verdict run_case(const Case *c, AttentionScore score, uint64_t seed, Injection inject) {
    Error err;
    Model m;
    Acts acts;
    RefActs ref;
    RandomBatch rb;
    ModelDims dims = case_dims(c, score);
    const ModelDims *d = &dims;
    ck_assert_msg(model_init(&m, d, &err) == 0, "%s", err.msg);
    ck_assert_msg(random_batch_make(&rb, d, CASE_B, CASE_S, CASE_T, seed, &err) == 0, "%s",
                  err.msg);
    ck_assert_msg(ref_acts_init(&ref, d, CASE_B, CASE_S, CASE_T, &err) == 0, "%s", err.msg);
    /* twice PyTorch's default spread, so that the keys, and attention's scores, differ across
     * positions: the additive score's query-side gradients (att.w_q, att.b) are sums over
     * positions whose weights cancel (sum_i de_ti = 0), and with nearly equal keys the float
     * engine's round-off is a larger share of what remains than the tolerance allows */
    params_init(m.params, &m.table, seed);
    for (size_t i = 0; i < m.table.total; i++) m.params[i] *= 2;
    params_spread_gains(m.params, &m.table, seed); /* layer_norm: gains of 0.5 .. 1.5 */
    const Batch *batch = &rb.batch;
    int B = batch->B, S = batch->S, T = batch->T;
    Verdict v = {0};
    int threads = omp_get_max_threads();
    omp_set_num_threads(c->threads);

    /* the reference */
    Rng rng;
    rng_seed(&rng, seed, 7);
    RefOptions ropt = {(real)c->dropout, (real)c->label_smoothing, &rng, (real)c->word_dropout};
    double ref_loss;
    ck_assert_msg(ref_forward(&ref, m.params, batch, &ropt, &ref_loss, &err) == 0, "%s", err.msg);
    /* the reference's gradients in a block of their own: the engine's are the model's */
    real *ref_grads = calloc(m.table.total, sizeof(real));
    ck_assert_ptr_nonnull(ref_grads);
    ref_backward(&ref, m.params, ref_grads);

    /* the engine, as the dump runs it: every activation kept, gradients after */
    ActsPlan keep = {.logit_rows = ACTS_ALL_ROWS, .attention = ACTS_KEEP};
    ck_assert_msg(acts_init_plan(&acts, d, B, S, T, &keep, &err) == 0, "%s", err.msg);
    rng_seed(&rng, seed, 7);
    ForwardOptions opt = {.dropout = (real)c->dropout,
                          .label_smoothing = (real)c->label_smoothing,
                          .rng = &rng,
                          .forward_only = 1,
                          .word_dropout = (real)c->word_dropout};
    double loss;
    ck_assert_msg(model_forward(&m, &acts, batch, &opt, &loss, &err) == 0, "%s", err.msg);
    compare(&v, "loss", &ref_loss, &loss, 1, NULL);
    compare_activations(&v, &acts, &ref, batch, d);
    model_zero_grad(&m);
    model_backward(&m, &acts);
    if (inject.element >= 0) {
        const ParamInfo *info = &m.table.info[inject.tensor];
        real biggest = 0;
        for (size_t i = 0; i < info->size; i++)
            biggest = fmax(biggest, fabs(m.grads[info->offset + i]));
        real *g = &m.grads[info->offset + (size_t)inject.element];
        *g = inject.change(*g, biggest);
    }
    compare_grads(&v, &m.table, m.grads, ref.grads);
    acts_free(&acts);

    /* the engine as training runs it: default plan, output gradients formed with the loss */
    ck_assert_msg(acts_init(&acts, d, B, S, T, &err) == 0, "%s", err.msg);
    rng_seed(&rng, seed, 7);
    opt.forward_only = 0;
    ck_assert_msg(model_forward(&m, &acts, batch, &opt, &loss, &err) == 0, "%s", err.msg);
    compare(&v, "training loss", &ref_loss, &loss, 1, NULL);
    model_zero_grad(&m);
    model_backward(&m, &acts);
    compare_grads(&v, &m.table, m.grads, ref.grads);

    free(ref_grads);
    acts_free(&acts);
    ref_acts_free(&ref);
    random_batch_free(&rb);
    model_free(&m);
    omp_set_num_threads(threads);
    return v;
}

/* Every case of the table with every score. */
START_TEST(test_engine_matches_reference) {
    double worst_of_score[SCORE_COUNT] = {0};
    for (int score = 0; score < SCORE_COUNT; score++)
        for (int k = 0; k < N_CASES; k++) {
            const Case *c = &CASES[k];
            Verdict v =
                run_case(c, (AttentionScore)score, 100 + 64 * (uint64_t)score + k, NO_INJECTION);
            EXPECT_MSG(v.worst <= TOLERANCE,
                       "%s, score %s: %s[%zu] differs by %.3g (relative to its largest value)",
                       c->name, score_name(score), v.name, v.element, v.worst);
            worst_of_score[score] = fmax(worst_of_score[score], v.worst);
        }
    printf("reference: worst relative difference (%s build, %d cases): additive %.2g, dot %.2g, "
           "general %.2g, scaled_dot %.2g\n",
           REAL_NAME, N_CASES, worst_of_score[0], worst_of_score[1], worst_of_score[2],
           worst_of_score[3]);
}
END_TEST

static real nudge_by_a_thousandth(real old, real biggest) {
    return old + biggest * (real)1e-3;
}

static real make_nan(real old, real biggest) {
    (void)old, (void)biggest;
    return NAN;
}

/* The comparison can fail: one element of one gradient, off by a thousandth of the tensor's
 * largest value, is caught, and the tensor is named. */
START_TEST(test_comparison_names_a_wrong_gradient) {
    const ParamId targets[] = {P_DEC_GRU_W_HH, P_ATT_V, P_SRC_EMB, P_ENC_BWD_B_IH};
    const char *names[] = {"grad dec.gru.w_hh", "grad att.v", "grad src_emb", "grad enc.bwd.b_ih"};
    const Case *c = &CASES[1]; /* bidirectional */
    for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++) {
        ParamTable table;
        ModelDims d = case_dims(c, SCORE_ADDITIVE);
        param_table_build(&table, &d);
        /* an element whose gradient is not zero: the perturbation is relative to the largest */
        long middle = (long)(table.info[targets[k]].size / 2);
        Verdict v =
            run_case(c, SCORE_ADDITIVE, 5, (Injection){targets[k], middle, nudge_by_a_thousandth});
        EXPECT_MSG(v.worst > TOLERANCE && strcmp(v.name, names[k]) == 0,
                   "perturbed %s, but the comparison found %s off by %.3g", names[k], v.name,
                   v.worst);
    }
}
END_TEST

/* A NaN in the last element of a gradient (where a comparison that stops at the first
 * element, or keeps the largest difference with fmax, would miss it) fails the comparison,
 * which names the tensor and the element. */
START_TEST(test_comparison_names_a_nan_in_the_last_element) {
    const Case *c = &CASES[1];
    ModelDims d = case_dims(c, SCORE_ADDITIVE);
    ParamTable table;
    param_table_build(&table, &d);
    long last = (long)table.info[P_OUT_W].size - 1;
    Verdict v = run_case(c, SCORE_ADDITIVE, 5, (Injection){P_OUT_W, last, make_nan});
    EXPECT_MSG(isinf(v.worst) && strcmp(v.name, "grad out.w") == 0 && v.element == (size_t)last,
               "a NaN in grad out.w[%ld], but the comparison found %s[%zu] off by %.3g", last,
               v.name, v.element, v.worst);
}
END_TEST

/* The models that 20 Adam steps train side by side, with clipping, dropout and smoothing. */
static const Case ADAM_CASES[] = {
    /* name                                     bi  tied ln  dropout word smooth thr */
    {"bidirectional, dropout and smoothing", 1, 0, 0, 0.2, 0, 0.1, 1},
    /* Adam must not skip the target embedding rows only the output layer touched (the
     * reference skips none) */
    {"tied embeddings and word dropout", 1, 1, 0, 0.2, 0.2, 0.1, 1},
    {"layer-normalised GRUs, whose gains move too", 1, 0, 1, 0.2, 0, 0.1, 1},
    {"base.ini's combination", 1, 1, 1, 0.1, 0, 0.1, 1},
};

/* 20 Adam steps of the engine and the reference from the same parameters: every step's loss
 * within ADAM_LOSSES, the parameters after them within ADAM_PARAMS. */
START_TEST(test_adam_steps_match) {
    const Case *c = &ADAM_CASES[_i];
    Error err;
    ModelDims d = case_dims(c, SCORE_ADDITIVE);
    Model m;
    Acts acts;
    RefActs ref;
    RefAdam radam;
    Adam adam;
    ck_assert_msg(model_init(&m, &d, &err) == 0, "%s", err.msg);
    params_init(m.params, &m.table, 3);
    size_t n = m.table.total;
    real *ref_params = malloc(sizeof(real) * n), *ref_grads = malloc(sizeof(real) * n);
    double *eng = malloc(sizeof(double) * n), *ref_values = malloc(sizeof(double) * n);
    ck_assert(ref_params && ref_grads && eng && ref_values);
    memcpy(ref_params, m.params, sizeof(real) * n);
    ck_assert_msg(acts_init(&acts, &d, CASE_B, CASE_S, CASE_T, &err) == 0, "%s", err.msg);
    ck_assert_msg(ref_acts_init(&ref, &d, CASE_B, CASE_S, CASE_T, &err) == 0, "%s", err.msg);
    ck_assert_msg(adam_init(&adam, n, 0.9, 0.999, 1e-8, &err) == 0, "%s", err.msg);
    ck_assert_msg(ref_adam_init(&radam, n, 0.9, 0.999, 1e-8, &err) == 0, "%s", err.msg);
    Rng engine_rng, ref_rng;
    rng_seed(&engine_rng, 9, 2);
    rng_seed(&ref_rng, 9, 2);
    Verdict losses = {0};
    model_zero_grad(&m);
    for (int step = 0; step < 20; step++) {
        RandomBatch rb;
        ck_assert_msg(random_batch_make(&rb, &d, CASE_B, CASE_S, CASE_T, 40 + step, &err) == 0,
                      "%s", err.msg);
        ForwardOptions opt = {.dropout = (real)c->dropout,
                              .label_smoothing = (real)c->label_smoothing,
                              .rng = &engine_rng,
                              .word_dropout = (real)c->word_dropout};
        RefOptions ropt = {.dropout = (real)c->dropout,
                           .label_smoothing = (real)c->label_smoothing,
                           .rng = &ref_rng,
                           .word_dropout = (real)c->word_dropout};
        double loss, ref_loss;
        ck_assert_msg(model_forward(&m, &acts, &rb.batch, &opt, &loss, &err) == 0, "%s", err.msg);
        model_backward(&m, &acts);
        ZeroGrads zero = {acts.untouched, acts.n_untouched};
        /* a clip that binds, and a rate that moves the parameters */
        double norm = grad_norm(m.grads, n, zero);
        ck_assert(adam_step(&adam, m.params, m.grads, zero, clip_scale(norm, 0.5), 0.01));
        ck_assert_msg(ref_forward(&ref, ref_params, &rb.batch, &ropt, &ref_loss, &err) == 0, "%s",
                      err.msg);
        memset(ref_grads, 0, sizeof(real) * n);
        ref_backward(&ref, ref_params, ref_grads);
        ck_assert_int_eq(ref_adam_step(&radam, ref_params, ref_grads, 0.5, 0.01), 0);
        char name[32];
        snprintf(name, sizeof name, "step %d's loss", step + 1);
        compare(&losses, name, &ref_loss, &loss, 1, NULL);
        random_batch_free(&rb);
    }
    Verdict params = {0};
    for (int p = 0; p < PARAM_COUNT; p++) {
        const ParamInfo *info = &m.table.info[p];
        for (size_t i = 0; i < info->size; i++) {
            eng[i] = m.params[info->offset + i];
            ref_values[i] = ref_params[info->offset + i];
        }
        if (info->size) compare(&params, info->name, ref_values, eng, info->size, NULL);
    }
    printf("reference: 20 Adam steps (%s build, %s): losses within %.2g, parameters within "
           "%.2g (%s)\n",
           REAL_NAME, c->name, losses.worst, params.worst, params.name);
    EXPECT_MSG(losses.worst <= ADAM_LOSSES, "%s: %s differs by %.3g", c->name, losses.name,
               losses.worst);
    EXPECT_MSG(params.worst <= ADAM_PARAMS, "%s: after 20 steps %s[%zu] differs by %.3g", c->name,
               params.name, params.element, params.worst);
    free(ref_params);
    free(ref_grads);
    free(eng);
    free(ref_values);
    ref_adam_free(&radam);
    adam_free(&adam);
    ref_acts_free(&ref);
    acts_free(&acts);
    model_free(&m);
}
END_TEST

/* A small model trained briefly on the toy corpus by the engine (so that its words are
 * chosen by clear margins, not by round-off), then every sentence of the toy test set
 * decoded greedily by the engine's search and by the reference: the same words. */
START_TEST(test_greedy_translations_match) {
    Error err;
    Config cfg;
    const char *const sizes[] = {"model.emb_size=16", "model.enc_hidden=16", "model.dec_hidden=32",
                                 "model.att_size=16", "model.readout_size=32"};
    Corpus train = {0}, test = {0};
    TokenizedCorpus train_tokens = {0}, test_tokens = {0};
    NmtModel nm;
    Dataset ds;
    ck_assert_msg(config_load(&cfg, "../configs/toy.ini", sizes, 5, &err) == 0, "%s", err.msg);
    ck_assert_msg(corpus_load(cfg.data.train, cfg.data.lowercase, &train, &train_tokens, &err) == 0,
                  "%s", err.msg);
    ck_assert_msg(nmt_model_from_config(&nm, &cfg, &train_tokens, 1, &err) == 0, "%s", err.msg);
    ck_assert_msg(nmt_dataset(&ds, &nm, &train_tokens, &train, cfg.data.max_len, &err) == 0, "%s",
                  err.msg);
    Model *m = &nm.model;
    /* one thread: the search's threads meet by spinning, slow on a loaded test machine, and
     * the thread count changes none of its words */
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    enum { STEPS = 500, BATCH = 32 };
    BatchBuffer bb;
    Acts acts;
    Adam adam;
    EpochPlan plan;
    ck_assert_msg(batch_buffer_init(&bb, BATCH, ds.max_src, ds.max_tgt, &err) == 0, "%s", err.msg);
    ck_assert_msg(acts_init(&acts, &m->dims, BATCH, ds.max_src + 1, ds.max_tgt + 1, &err) == 0,
                  "%s", err.msg);
    ck_assert_msg(adam_init(&adam, m->table.total, 0.9, 0.999, 1e-8, &err) == 0, "%s", err.msg);
    ck_assert_msg(epoch_plan_make(&plan, &ds, BATCH, 1, 0, &err) == 0, "%s", err.msg);
    model_zero_grad(m);
    for (int step = 0; step < STEPS; step++) {
        size_t k = (size_t)step % plan.n_batches;
        const Batch *batch = batch_fill(&bb, &ds, plan.order + plan.start[k],
                                        (int)(plan.start[k + 1] - plan.start[k]));
        double loss;
        ForwardOptions opt = {0};
        ck_assert_msg(model_forward(m, &acts, batch, &opt, &loss, &err) == 0, "%s", err.msg);
        model_backward(m, &acts);
        ZeroGrads zero = {acts.untouched, acts.n_untouched};
        ck_assert(adam_step(&adam, m->params, m->grads, zero,
                            clip_scale(grad_norm(m->grads, m->table.total, zero), 1), 0.005));
    }
    epoch_plan_free(&plan);
    adam_free(&adam);
    acts_free(&acts);
    batch_buffer_free(&bb);

    ck_assert_msg(corpus_load(cfg.data.test, cfg.data.lowercase, &test, &test_tokens, &err) == 0,
                  "%s", err.msg);
    enum { MAX_SRC = NMT_MAX_TOKENS + 1, MAX_LEN = 40 };
    Searcher searcher;
    RefActs ref;
    ck_assert_msg(search_init(&searcher, &m->dims, 1, MAX_SRC, 1, MAX_LEN, &err) == 0, "%s",
                  err.msg);
    ck_assert_msg(ref_acts_init(&ref, &m->dims, 1, MAX_SRC, MAX_LEN, &err) == 0, "%s", err.msg);
    SearchOptions sopt = {.beam = 1, .nbest = 1, .max_len = MAX_LEN, .len_norm = 0};
    size_t same = 0, words = 0;
    for (size_t i = 0; i < test.count; i++) {
        int *ids, n, unknown, out[MAX_LEN], out_len;
        ck_assert_msg(encode_source(&nm, test.src[i], &ids, &n, &unknown, &err) == 0, "%s",
                      err.msg);
        Translation tr;
        const int *const srcs[1] = {ids};
        ck_assert_msg(search_translate(&searcher, m, srcs, &n, 1, &sopt, &tr, &err) == 0, "%s",
                      err.msg);
        ck_assert_msg(ref_greedy(&ref, m->params, ids, n, MAX_LEN, out, &out_len, &err) == 0, "%s",
                      err.msg);
        const Hypothesis *h = &tr.hyps[0];
        int equal = h->len == out_len && memcmp(h->tokens, out, sizeof(int) * out_len) == 0;
        EXPECT_MSG(equal,
                   "test pair %zu (\"%s\"): the engine's %d words differ from the "
                   "reference's %d",
                   i + 1, test.src[i], h->len, out_len);
        same += equal, words += (size_t)out_len;
        translation_free(&tr);
        free(ids);
    }
    ck_assert_uint_eq(same, test.count);
    ck_assert_uint_gt(words, test.count); /* it did translate: more than one word a sentence */
    printf("reference: greedy decoding of %zu toy test sentences (%zu words) identical\n",
           test.count, words);
    omp_set_num_threads(threads);
    ref_acts_free(&ref);
    search_free(&searcher);
    dataset_free(&ds);
    nmt_model_free(&nm);
    tokenized_corpus_free(&train_tokens);
    tokenized_corpus_free(&test_tokens);
    corpus_free(&train);
    corpus_free(&test);
}
END_TEST

Suite *reference_suite(void) {
    Suite *s = suite_create("reference");
    TCase *tc = tcase_create("engine against reference");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_engine_matches_reference);
    tcase_add_test(tc, test_comparison_names_a_wrong_gradient);
    tcase_add_test(tc, test_comparison_names_a_nan_in_the_last_element);
    tcase_add_loop_test(tc, test_adam_steps_match, 0,
                        (int)(sizeof ADAM_CASES / sizeof ADAM_CASES[0]));
    tcase_add_test(tc, test_greedy_translations_match);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * test_reference.c: the engine (model/, train/adam.c, model/search.c) against the plain
 * reference (reference/reference.c): for random models and ragged batches, unidirectional and
 * bidirectional, each attention score, with and without label smoothing and dropout (the same
 * masks), on 1 and 2 threads, the loss, the dump's activations and every gradient agree within
 * TOLERANCE of each tensor's largest magnitude (max |engine - reference| / max |reference|);
 * 20 Adam steps keep the two in step; greedy decoding of the toy test set gives the same
 * words. And the comparison can fail: a perturbed gradient is caught and named.
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
static const double TOLERANCE = 1e-5;
#endif
static const double ADAM_LOSSES = 1e-4;

/* The worst relative difference seen so far, and where. */
typedef struct {
    double worst;
    char name[64];
} Verdict;

/* max |engine - reference| / max |reference| over n values (mask, if given, picks them), into
 * the verdict when it is the worst so far. */
static double compare(Verdict *v, const char *name, const double *ref, const double *eng, size_t n,
                      const unsigned char *mask) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        if (mask && !mask[i]) continue;
        diff = fmax(diff, fabs(eng[i] - ref[i]));
        scale = fmax(scale, fabs(ref[i]));
    }
    double rel = scale > 0 ? diff / scale : diff;
    if (isnan(eng[0]) || isnan(rel)) rel = INFINITY;
    if (rel > v->worst || !v->name[0]) {
        v->worst = rel;
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

/* One case: a model, a batch and the forward options. */
typedef struct {
    ModelDims dims;
    double dropout, label_smoothing, word_dropout;
    int threads;
    uint64_t seed;
} Case;

static ModelDims case_dims(int bidirectional, AttentionScore score) {
    int K = bidirectional ? 8 : 4;
    return (ModelDims){.src_vocab = 17,
                       .tgt_vocab = 19,
                       .emb = 5,
                       .enc_hidden = 4,
                       .bidirectional = bidirectional,
                       .dec_hidden = score == SCORE_DOT ? K : 6,
                       .att = 3,
                       .readout = 7,
                       .score = score};
}

enum { CASE_B = 4, CASE_S = 7, CASE_T = 6 };

/* The engine's time-major [T, B, X] rows (row t * B + b, from `first` rows in) as the
 * reference's sentence-major [B, T, X]. */
static void engine_rows(double *out, const real *rows, int B, int T, int X) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int j = 0; j < X; j++)
                out[((size_t)b * T + t) * X + j] = rows[((size_t)t * B + b) * X + j];
}

/* Runs a case through the engine (both plans: the dump's, which keeps every activation, and
 * training's) and the reference, and returns the worst difference; the perturbation, when
 * perturb_index >= 0, is added to that element of the engine's gradients first. */
static Verdict run_case(const Case *c, ParamId perturb, long perturb_index) {
    Error err;
    Model m;
    Acts acts;
    RefActs ref;
    RandomBatch rb;
    const ModelDims *d = &c->dims;
    ck_assert_msg(model_init(&m, d, &err) == 0, "%s", err.msg);
    ck_assert_msg(random_batch_make(&rb, d, CASE_B, CASE_S, CASE_T, c->seed, &err) == 0, "%s",
                  err.msg);
    ck_assert_msg(ref_acts_init(&ref, d, CASE_B, CASE_S, CASE_T, &err) == 0, "%s", err.msg);
    /* twice PyTorch's default spread, so that the keys, and attention's scores, differ across
     * positions: the additive score's query-side gradients (att.w_q, att.b) are sums over
     * positions whose weights cancel (sum_i de_ti = 0), and with nearly equal keys the float
     * engine's round-off is a larger share of what remains than the tolerance allows */
    params_init(m.params, &m.table, c->seed);
    for (size_t i = 0; i < m.table.total; i++) m.params[i] *= 2;
    params_spread_gains(m.params, &m.table, c->seed); /* layer_norm: gains of 0.5 .. 1.5 */
    const Batch *batch = &rb.batch;
    int B = batch->B, S = batch->S, T = batch->T;
    int K = dims_enc_state(d), D = d->dec_hidden, V = d->tgt_vocab;
    Verdict v = {0};
    int threads = omp_get_max_threads();
    omp_set_num_threads(c->threads);

    /* the reference */
    Rng rng;
    rng_seed(&rng, c->seed, 7);
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
    rng_seed(&rng, c->seed, 7);
    ForwardOptions opt = {(real)c->dropout, (real)c->label_smoothing, &rng, 1,
                          (real)c->word_dropout};
    double loss;
    ck_assert_msg(model_forward(&m, &acts, batch, &opt, &loss, &err) == 0, "%s", err.msg);
    compare(&v, "loss", &ref_loss, &loss, 1, NULL);
    /* activations at real target positions (padding steps are not the spec's) */
    size_t n_steps = (size_t)B * T;
    double *eng = malloc(sizeof(double) * n_steps * (V > S ? V : S) * (D > K ? D : K) * 2);
    unsigned char *mask = malloc(n_steps * (V + S + D));
    ck_assert(eng && mask);
    const struct {
        const char *name;
        const real *rows;
        int width;
        const double *ref;
    } acts_of[] = {{"alpha", acts.alpha, S, ref.alpha},
                   {"dec_s", acts.dec_state + (size_t)B * D, D, NULL},
                   {"logits", acts.logits, V, ref.logits}};
    double *ref_dec_s = malloc(sizeof(double) * n_steps * D);
    ck_assert_ptr_nonnull(ref_dec_s);
    for (int b = 0; b < B; b++) /* s_1 .. s_T of [B, T+1, D] */
        memcpy(ref_dec_s + (size_t)b * T * D, ref.s + ((size_t)b * (T + 1) + 1) * D,
               sizeof(double) * (size_t)T * D);
    for (size_t k = 0; k < 3; k++) {
        int X = acts_of[k].width;
        engine_rows(eng, acts_of[k].rows, B, T, X);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++)
                memset(mask + ((size_t)b * T + t) * X, t < batch->tgt_len[b], (size_t)X);
        compare(&v, acts_of[k].name, acts_of[k].ref ? acts_of[k].ref : ref_dec_s, eng, n_steps * X,
                mask);
    }
    for (size_t i = 0; i < (size_t)B * S * K; i++) eng[i] = acts.enc_h[i];
    compare(&v, "enc_h", ref.enc_h, eng, (size_t)B * S * K, NULL);
    model_zero_grad(&m);
    model_backward(&m, &acts);
    if (perturb_index >= 0) {
        const ParamInfo *info = &m.table.info[perturb];
        real biggest = 0;
        for (size_t i = 0; i < info->size; i++)
            biggest = fmax(biggest, fabs(m.grads[info->offset + i]));
        m.grads[info->offset + (size_t)perturb_index] += biggest * (real)1e-3;
    }
    compare_grads(&v, &m.table, m.grads, ref.grads);
    acts_free(&acts);

    /* the engine as training runs it: default plan, output gradients formed with the loss */
    ck_assert_msg(acts_init(&acts, d, B, S, T, &err) == 0, "%s", err.msg);
    rng_seed(&rng, c->seed, 7);
    opt.forward_only = 0;
    ck_assert_msg(model_forward(&m, &acts, batch, &opt, &loss, &err) == 0, "%s", err.msg);
    compare(&v, "training loss", &ref_loss, &loss, 1, NULL);
    model_zero_grad(&m);
    model_backward(&m, &acts);
    compare_grads(&v, &m.table, m.grads, ref.grads);

    free(ref_grads);
    free(ref_dec_s);
    free(eng);
    free(mask);
    acts_free(&acts);
    ref_acts_free(&ref);
    random_batch_free(&rb);
    model_free(&m);
    omp_set_num_threads(threads);
    return v;
}

/* Each score, uni- and bidirectional, smoothing and dropout on and off, 1 and 2 threads; then
 * the extensions: word dropout with and without element-wise dropout, tied embeddings (O = E)
 * with and without both dropouts, and layer-normalised GRUs with and without dropout and
 * smoothing. */
START_TEST(test_engine_matches_reference) {
    double worst_of_score[SCORE_COUNT] = {0};
    for (int score = 0; score < SCORE_COUNT; score++)
        for (int variant = 0; variant < 40; variant++) {
            /* 0-15: the spec's model; 16-23: word dropout; 24-31: tied, smoothed; 32-39:
             * layer-normalised */
            int normalised = variant >= 32;
            int plain = variant < 16 || normalised, tied = variant >= 24 && !normalised;
            Case c = {.dims = case_dims(variant & 1, (AttentionScore)score),
                      .threads = variant & (plain && !normalised ? 8 : 4) ? 2 : 1,
                      .seed = 100 + 32 * (uint64_t)score + (uint64_t)variant};
            if (plain) {
                c.label_smoothing = variant & 2 ? 0.1 : 0;
                c.dropout = variant & 4 ? 0.3 : 0;
            } else {
                c.dropout = variant & 2 ? 0.3 : 0;
                c.word_dropout = !tied || variant & 2 ? 0.3 : 0;
            }
            if (tied) {
                c.label_smoothing = 0.1;
                c.dims.readout = c.dims.emb, c.dims.tie_embeddings = 1;
            }
            c.dims.layer_norm = normalised;
            Verdict v = run_case(&c, 0, -1);
            EXPECT_MSG(v.worst <= TOLERANCE,
                       "score %s, %s%s%s, eps %g, dropout %g, word dropout %g, %d threads: %s "
                       "differs by %.3g (relative to its largest value)",
                       score_name(score), variant & 1 ? "bidirectional" : "unidirectional",
                       tied ? ", tied" : "", normalised ? ", layer-normalised" : "",
                       c.label_smoothing, c.dropout, c.word_dropout, c.threads, v.name, v.worst);
            worst_of_score[score] = fmax(worst_of_score[score], v.worst);
        }
    printf("reference: worst relative difference (%s build): additive %.2g, dot %.2g, general "
           "%.2g, scaled_dot %.2g\n",
           REAL_NAME, worst_of_score[0], worst_of_score[1], worst_of_score[2], worst_of_score[3]);
}
END_TEST

/* The comparison can fail: one element of one gradient, off by a thousandth of the tensor's
 * largest value, is caught, and the tensor is named. */
START_TEST(test_comparison_names_a_wrong_gradient) {
    const ParamId targets[] = {P_DEC_GRU_W_HH, P_ATT_V, P_SRC_EMB, P_ENC_BWD_B_IH};
    const char *names[] = {"grad dec.gru.w_hh", "grad att.v", "grad src_emb", "grad enc.bwd.b_ih"};
    for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++) {
        Case c = {.dims = case_dims(1, SCORE_ADDITIVE), .threads = 1, .seed = 5};
        ParamTable table;
        param_table_build(&table, &c.dims);
        /* an element whose gradient is not zero: the perturbation is relative to the largest */
        Verdict v = run_case(&c, targets[k], (long)(table.info[targets[k]].size / 2));
        EXPECT_MSG(v.worst > TOLERANCE && strcmp(v.name, names[k]) == 0,
                   "perturbed %s, but the comparison found %s off by %.3g", names[k], v.name,
                   v.worst);
    }
}
END_TEST

/* 20 Adam steps with clipping, dropout and smoothing: the double build's parameters stay
 * within ADAM_PARAMS, every step's loss within ADAM_LOSSES. Then (_i = 1) the same with the
 * extensions: word dropout, and tied embeddings, where Adam must not skip the target
 * embedding rows that only the output layer touched (the reference skips none); and (_i = 2)
 * layer-normalised GRUs, whose gains move too. */
START_TEST(test_adam_steps_match) {
    Error err;
    ModelDims d = case_dims(1, SCORE_ADDITIVE);
    int extended = _i == 1;
    if (extended) d.readout = d.emb, d.tie_embeddings = 1;
    d.layer_norm = _i == 2;
    Model m;
    Acts acts;
    RefActs ref;
    RefAdam radam;
    Adam adam;
    ck_assert_msg(model_init(&m, &d, &err) == 0, "%s", err.msg);
    params_init(m.params, &m.table, 3);
    size_t n = m.table.total;
    real *ref_params = malloc(sizeof(real) * n), *ref_grads = malloc(sizeof(real) * n);
    ck_assert(ref_params && ref_grads);
    memcpy(ref_params, m.params, sizeof(real) * n);
    ck_assert_msg(acts_init(&acts, &d, CASE_B, CASE_S, CASE_T, &err) == 0, "%s", err.msg);
    ck_assert_msg(ref_acts_init(&ref, &d, CASE_B, CASE_S, CASE_T, &err) == 0, "%s", err.msg);
    ck_assert_msg(adam_init(&adam, n, 0.9, 0.999, 1e-8, &err) == 0, "%s", err.msg);
    ck_assert_msg(ref_adam_init(&radam, n, 0.9, 0.999, 1e-8, &err) == 0, "%s", err.msg);
    Rng engine_rng, ref_rng;
    rng_seed(&engine_rng, 9, 2);
    rng_seed(&ref_rng, 9, 2);
    double worst_loss = 0;
    model_zero_grad(&m);
    for (int step = 0; step < 20; step++) {
        RandomBatch rb;
        ck_assert_msg(random_batch_make(&rb, &d, CASE_B, CASE_S, CASE_T, 40 + step, &err) == 0,
                      "%s", err.msg);
        ForwardOptions opt = {.dropout = 0.2,
                              .label_smoothing = 0.1,
                              .rng = &engine_rng,
                              .word_dropout = extended ? 0.2 : 0};
        RefOptions ropt = {.dropout = 0.2,
                           .label_smoothing = 0.1,
                           .rng = &ref_rng,
                           .word_dropout = extended ? 0.2 : 0};
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
        double rel = fabs(loss - ref_loss) / fabs(ref_loss);
        worst_loss = fmax(worst_loss, rel);
        EXPECT_MSG(rel <= ADAM_LOSSES, "step %d: loss %.9g, reference %.9g", step + 1, loss,
                   ref_loss);
        random_batch_free(&rb);
    }
    double diff = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)m.params[i] - ref_params[i]));
        scale = fmax(scale, fabs((double)ref_params[i]));
    }
    printf("reference: 20 Adam steps (%s build%s): losses within %.2g, parameters within "
           "%.2g\n",
           REAL_NAME,
           extended  ? ", tied, word dropout"
           : _i == 2 ? ", layer-normalised"
                     : "",
           worst_loss, diff / scale);
#ifdef REAL_DOUBLE
    EXPECT_MSG(diff / scale <= ADAM_PARAMS, "parameters differ by %.3g after 20 steps",
               diff / scale);
#endif
    free(ref_params);
    free(ref_grads);
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
    tcase_add_loop_test(tc, test_adam_steps_match, 0, 3);
    tcase_add_test(tc, test_greedy_translations_match);
    suite_add_tcase(s, tc);
    return s;
}

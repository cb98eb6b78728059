/*
 * gradcheck.c: checks every parameter tensor's hand-written gradient against central finite
 * differences on a small random model and batch, and prints, per tensor, the worst relative
 * error and where it occurs. Exit status 0 only when every tensor is below the threshold
 * (1e-6 in a double build, 1e-2 in a float build, unless --tol says otherwise).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "model/fixtures.h"
#include "reference/fdcheck.h"
#include "tools/cli.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: gradcheck [options]\n"
            "Checks d loss / d parameter of every tensor against central finite differences.\n"
            "  --unidirectional   check a unidirectional encoder (default: bidirectional)\n"
            "  --score S          attention score: additive, dot, general or scaled_dot\n"
            "                     (default additive; dot runs with D = K)\n"
            "  --smoothing EPS    label smoothing (default 0)\n"
            "  --dropout P        dropout, with masks replayed for every evaluation (default 0)\n"
            "  --word-dropout P   word dropout (whole tokens' embeddings), replayed likewise\n"
            "                     (default 0)\n"
            "  --tie-embeddings   tie the output layer to tgt_emb (readout size O = E then)\n"
            "  --layer-norm       layer-normalised GRUs (gains spread over 0.5 .. 1.5)\n"
            "  --seed N           seed of the model and batch (default 1)\n"
            "  --samples N        elements per tensor, 0 = all (default: all in double, 40 in "
            "float)\n"
            "  --tol X            pass threshold (default 1e-6 double, 1e-2 float)\n"
            "  -h, --help         this text\n"
            "Build: this binary uses %s precision (make REAL=double for double).\n",
            REAL_NAME);
}

typedef struct {
    bool unidirectional, tie_embeddings, layer_norm;
    const char *score;
    double smoothing, dropout, word_dropout, tol;
    long samples, seed;
} Options;

/* Finite differences of every tensor of a small model on a random batch into result. Small
 * enough to check every element in double; sizes all differ so a transposed index cannot pass
 * by accident. */
static int check_gradients(const Options *o, Model *model, TensorCheck *result, Error *err) {
    bool double_build = sizeof(real) == sizeof(double);
    ModelDims dims = {.src_vocab = 11,
                      .tgt_vocab = 13,
                      .emb = 5,
                      .enc_hidden = 4,
                      .bidirectional = !o->unidirectional,
                      .dec_hidden = 6,
                      .att = 3,
                      .readout = 7,
                      .tie_embeddings = o->tie_embeddings,
                      .layer_norm = o->layer_norm};
    if (o->tie_embeddings) dims.readout = dims.emb; /* tying needs O = E */
    if (o->score && score_from_name(o->score, &dims.score, err)) return -1;
    if (dims.score == SCORE_DOT) dims.dec_hidden = dims_enc_state(&dims); /* dot needs D = K */
    int B = 3, S = 5, T = 4;
    /* the output layer in chunks of 5 of the 12 rows (5, 5, 2), so the chunked loss and its
     * gradients are checked across chunk boundaries, and attention's hidden layer recomputed
     * in backward, as large models run (tests check that keeping it gives the same bits) */
    ActsPlan plan = {.logit_rows = 5, .attention = ACTS_RECOMPUTE};
    Acts acts = {0};
    RandomBatch rb = {0};
    int rc = -1;
    if (model_init(model, &dims, err) || acts_init_plan(&acts, &dims, B, S, T, &plan, err) ||
        random_batch_make(&rb, &dims, B, S, T, (uint64_t)o->seed, err))
        goto done;
    params_init(model->params, &model->table, (uint64_t)o->seed);
    params_spread_gains(model->params, &model->table, (uint64_t)o->seed);
    Rng dropout_rng;
    ForwardOptions opt = {.dropout = (real)o->dropout,
                          .label_smoothing = (real)o->smoothing,
                          .rng = o->dropout > 0 || o->word_dropout > 0 ? &dropout_rng : NULL,
                          .word_dropout = (real)o->word_dropout};
    FdCheckOptions fd = {
        .per_tensor = o->samples >= 0 ? (size_t)o->samples
                      : double_build  ? 0
                                      : 40,
        .step = double_build ? 1e-3 : 3e-2,
        .floor = double_build ? 1e-6 : 1e-3,
        .dropout_seed = (uint64_t)o->seed,
    };
    rc = fd_check_model(model, &acts, &rb.batch, &opt, &fd, result, err);
done:
    random_batch_free(&rb);
    acts_free(&acts);
    return rc;
}

/* A line per tensor: its worst element and whether it is within the tolerance. Returns the
 * number of tensors above it. */
static int report(const Options *o, const Model *model, const TensorCheck *result) {
    printf("gradcheck: %s build, %s encoder, %s attention%s%s, label smoothing %g, dropout %g, "
           "word dropout %g, seed %ld\n",
           REAL_NAME, o->unidirectional ? "unidirectional" : "bidirectional",
           score_name(model->dims.score), o->tie_embeddings ? ", tied embeddings" : "",
           o->layer_norm ? ", layer-normalised GRUs" : "", o->smoothing, o->dropout,
           o->word_dropout, o->seed);
    printf("%-14s %-10s %8s %12s %10s %14s %14s  %s\n", "tensor", "shape", "checked", "max rel err",
           "at", "analytic", "numeric", "");
    int failures = 0;
    for (int p = 0; p < PARAM_COUNT; p++) {
        const ParamInfo *info = &model->table.info[p];
        if (!info->size) continue;
        const TensorCheck *tc = &result[p];
        char shape[32], at[32];
        if (info->ndim == 2) {
            snprintf(shape, sizeof shape, "%dx%d", info->shape[0], info->shape[1]);
            snprintf(at, sizeof at, "[%zu,%zu]", tc->worst / (size_t)info->shape[1],
                     tc->worst % (size_t)info->shape[1]);
        } else {
            snprintf(shape, sizeof shape, "%d", info->shape[0]);
            snprintf(at, sizeof at, "[%zu]", tc->worst);
        }
        int ok = tc->max_rel < o->tol;
        failures += !ok;
        printf("%-14s %-10s %8zu %12.3e %10s %14.6e %14.6e  %s\n", info->name, shape, tc->checked,
               tc->max_rel, at, tc->analytic, tc->numeric, ok ? "ok" : "FAIL");
    }
    printf("%s: %d tensor(s) above %g\n", failures ? "FAILED" : "PASSED", failures, o->tol);
    return failures;
}

int main(int argc, char **argv) {
    Options o = {.tol = sizeof(real) == sizeof(double) ? 1e-6 : 1e-2, .samples = -1, .seed = 1};
    const CliOption options[] = {OPT_FLAG("unidirectional", 0, &o.unidirectional),
                                 OPT_FLAG("tie-embeddings", 0, &o.tie_embeddings),
                                 OPT_FLAG("layer-norm", 0, &o.layer_norm),
                                 OPT_TEXT("score", 0, &o.score),
                                 OPT_REAL("smoothing", &o.smoothing, 0, 0.99),
                                 OPT_REAL("dropout", &o.dropout, 0, 0.9),
                                 OPT_REAL("word-dropout", &o.word_dropout, 0, 0.9),
                                 OPT_INT("seed", &o.seed, 0, 1e15),
                                 OPT_INT("samples", &o.samples, 0, 1e9),
                                 OPT_REAL("tol", &o.tol, 0, 1),
                                 OPT_END};
    int status = cli_parse("gradcheck", argc, argv, options, usage);
    if (status != CLI_GO_ON) return status;
    if (optind < argc) {
        char quoted[96];
        return usage_error("gradcheck", "unexpected argument '%s'",
                           text_for_message(quoted, sizeof quoted, argv[optind], 60));
    }
    Model model = {0};
    TensorCheck result[PARAM_COUNT];
    Error err;
    if (check_gradients(&o, &model, result, &err)) {
        fprintf(stderr, "gradcheck: %s\n", err.msg);
        model_free(&model);
        return 1;
    }
    int failures = report(&o, &model, result);
    model_free(&model);
    return failures ? 1 : 0;
}

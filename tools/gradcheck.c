/*
 * gradcheck.c: checks every parameter tensor's hand-written gradient against central finite
 * differences on a small random model and batch, and prints, per tensor, the worst relative
 * error and where it occurs. Exit status 0 only when every tensor is below the threshold
 * (1e-6 in a double build, 1e-2 in a float build, unless --tol says otherwise).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/fdcheck.h"
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
            "  --seed N           seed of the model and batch (default 1)\n"
            "  --samples N        elements per tensor, 0 = all (default: all in double, 40 in "
            "float)\n"
            "  --tol X            pass threshold (default 1e-6 double, 1e-2 float)\n"
            "  -h, --help         this text\n"
            "Build: this binary uses %s precision (make REAL=double for double).\n",
            REAL_NAME);
}

int main(int argc, char **argv) {
    int double_build = sizeof(real) == sizeof(double);
    int bidirectional = 1;
    AttentionScore score = SCORE_ADDITIVE;
    double smoothing = 0, dropout = 0, tol = double_build ? 1e-6 : 1e-2;
    long samples = -1, seed = 1;
    static const struct option longs[] = {{"unidirectional", no_argument, 0, 'u'},
                                          {"score", required_argument, 0, 'a'},
                                          {"smoothing", required_argument, 0, 'e'},
                                          {"dropout", required_argument, 0, 'd'},
                                          {"seed", required_argument, 0, 's'},
                                          {"samples", required_argument, 0, 'n'},
                                          {"tol", required_argument, 0, 't'},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    Error err;
    int c;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'u':
            bidirectional = 0;
            break;
        case 'a':
            bad = score_from_name(optarg, &score, &err);
            break;
        case 'e':
            bad = parse_double_option("--smoothing", optarg, 0, 0.99, &smoothing, &err);
            break;
        case 'd':
            bad = parse_double_option("--dropout", optarg, 0, 0.9, &dropout, &err);
            break;
        case 's':
            bad = parse_int_option("--seed", optarg, 0, 1000000000000000L, &seed, &err);
            break;
        case 'n':
            bad = parse_int_option("--samples", optarg, 0, 1000000000L, &samples, &err);
            break;
        case 't':
            bad = parse_double_option("--tol", optarg, 0, 1, &tol, &err);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "gradcheck: %s\n", err.msg);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gradcheck: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }

    /* Small enough to check every element in double; sizes all differ so a transposed index
     * cannot pass by accident. */
    ModelDims dims = {.src_vocab = 11,
                      .tgt_vocab = 13,
                      .emb = 5,
                      .enc_hidden = 4,
                      .bidirectional = bidirectional,
                      .dec_hidden = 6,
                      .att = 3,
                      .readout = 7,
                      .score = score};
    /* dot compares s_{t-1} with h_i, so it needs D = K */
    if (score == SCORE_DOT) dims.dec_hidden = dims_enc_state(&dims);
    int B = 3, S = 5, T = 4;
    /* the output layer in chunks of 5 of the 12 rows (5, 5, 2), so the chunked loss and its
     * gradients are checked across chunk boundaries, and attention's hidden layer recomputed
     * in backward, as large models run (tests check that keeping it gives the same bits) */
    ActsPlan plan = {.logit_rows = 5, .attention = ACTS_RECOMPUTE};
    Model model;
    Acts acts;
    RandomBatch rb;
    if (model_init(&model, &dims, &err) || acts_init_plan(&acts, &dims, B, S, T, &plan, &err) ||
        random_batch_make(&rb, &dims, B, S, T, (uint64_t)seed, &err)) {
        fprintf(stderr, "gradcheck: %s\n", err.msg);
        return 1;
    }
    params_init(model.params, &model.table, (uint64_t)seed);
    Rng dropout_rng;
    ForwardOptions opt = {.dropout = (real)dropout,
                          .label_smoothing = (real)smoothing,
                          .rng = dropout > 0 ? &dropout_rng : NULL};
    FdCheckOptions fd = {
        .per_tensor = samples >= 0   ? (size_t)samples
                      : double_build ? 0
                                     : 40,
        .step = double_build ? 1e-3 : 3e-2,
        .floor = double_build ? 1e-6 : 1e-3,
        .dropout_seed = (uint64_t)seed,
    };
    TensorCheck result[PARAM_COUNT];
    if (fd_check_model(&model, &acts, &rb.batch, &opt, &fd, result, &err)) {
        fprintf(stderr, "gradcheck: %s\n", err.msg);
        return 1;
    }
    printf("gradcheck: %s build, %s encoder, %s attention, label smoothing %g, dropout %g, "
           "seed %ld\n",
           REAL_NAME, bidirectional ? "bidirectional" : "unidirectional", score_name(score),
           smoothing, dropout, seed);
    printf("%-14s %-10s %8s %12s %10s %14s %14s  %s\n", "tensor", "shape", "checked", "max rel err",
           "at", "analytic", "numeric", "");
    int failures = 0;
    for (int p = 0; p < PARAM_COUNT; p++) {
        const ParamInfo *info = &model.table.info[p];
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
        int ok = tc->max_rel < tol;
        failures += !ok;
        printf("%-14s %-10s %8zu %12.3e %10s %14.6e %14.6e  %s\n", info->name, shape, tc->checked,
               tc->max_rel, at, tc->analytic, tc->numeric, ok ? "ok" : "FAIL");
    }
    printf("%s: %d tensor(s) above %g\n", failures ? "FAILED" : "PASSED", failures, tol);
    random_batch_free(&rb);
    acts_free(&acts);
    model_free(&model);
    return failures ? 1 : 0;
}

/*
 * gradref.c: writes the gradient reference dump of the model spec: for one model and one
 * batch of sentence pairs, every parameter, the batch, the loss, every gradient and the main
 * activations, as .npy files any other implementation can load and compare itself against.
 * The model comes from a config (fresh, seeded) or a checkpoint; no dropout, no smoothing.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/files.h"
#include "tools/cli.h"
#include "nmt/npy.h"
#include "nmt/text.h"
#include "train/new_model.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: gradref (-c CONFIG | -m MODEL) --pairs FILE.tsv -o DIR [--seed N] [--score S]\n"
            "Writes the gradient reference dump (see the model spec) for the pairs of FILE.tsv\n"
            "(source TAB target, one a line) taken as one batch.\n"
            "  -c, --config CONFIG  a fresh model: vocabularies from the config's training\n"
            "                       corpus, sizes from [model], parameters from --seed\n"
            "  -m, --model MODEL    a trained model (checkpoint)\n"
            "  --pairs FILE.tsv     the batch\n"
            "  -o, --out DIR        output folder (created if needed)\n"
            "  --seed N             initialisation seed with -c (default 1)\n"
            "  --score S            with -c: the attention score instead of the config's\n"
            "                       [model] score (additive, dot, general, scaled_dot)\n"
            "  -h, --help           this text\n"
            "Output: DIR/params/<name>.npy, DIR/grads/<name>.npy, DIR/batch/*.npy,\n"
            "DIR/loss.npy, DIR/acts/{alpha,enc_h,dec_s,logits}.npy, DIR/config.json\n");
}

static int write_real(const char *dir, const char *name, int ndim, size_t d0, size_t d1, size_t d2,
                      const real *data, Error *err) {
    char path[4096];
    const size_t shape[3] = {d0, d1, d2};
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    return npy_write_real(path, ndim, shape, data, err);
}

static int write_ints(const char *dir, const char *name, int ndim, size_t d0, size_t d1,
                      const int *data, Error *err) {
    char path[4096];
    const size_t shape[2] = {d0, d1};
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    return npy_write(path, NPY_I4, ndim, shape, data, err);
}

/* params/ or grads/: one file per tensor, by the table */
static int write_tensors(const char *dir, const Model *m, const real *block, Error *err) {
    for (int p = 0; p < PARAM_COUNT; p++) {
        const ParamInfo *info = &m->table.info[p];
        if (!info->size) continue;
        if (write_real(dir, info->name, info->ndim, (size_t)info->shape[0], (size_t)info->shape[1],
                       0, block + info->offset, err))
            return -1;
    }
    return 0;
}

/* Copies a time-major [T, B, X] activation into the dump's sentence-major [B, T, X]. */
static void to_batch_major(real *dst, const real *src, int T, int B, int X) {
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++)
            memcpy(dst + ((size_t)b * T + t) * X, src + ((size_t)t * B + b) * X,
                   sizeof(real) * (size_t)X);
}

static int write_config(const char *out, const ModelDims *d, Error *err) {
    char path[4096];
    OutputFile f;
    snprintf(path, sizeof path, "%s/config.json", out);
    if (output_file_open(&f, path, false, err)) return -1;
    fprintf(f.file,
            "{\"E\": %d, \"H\": %d, \"K\": %d, \"D\": %d, \"A\": %d, \"O\": %d, \"Vs\": %d, "
            "\"Vt\": %d, \"bidirectional\": %s, \"score\": \"%s\", \"label_smoothing\": 0, "
            "\"dropout\": 0, \"dtype\": \"%s\"}\n",
            d->emb, d->enc_hidden, dims_enc_state(d), d->dec_hidden, d->att, d->readout,
            d->src_vocab, d->tgt_vocab, d->bidirectional ? "true" : "false", score_name(d->score),
            sizeof(real) == 8 ? "float64" : "float32");
    return output_file_commit(&f, err);
}

typedef struct {
    const char *config, *model, *pairs, *out;
    const char *score; /* --score, or NULL */
    unsigned long long seed;
} Options;

static int run(const Options *o, Error *err) {
    NmtModel nm = {0};
    Corpus corpus = {0};
    TokenizedCorpus tokens = {0};
    Dataset ds = {0};
    BatchBuffer bb = {0};
    Acts acts = {0};
    real *scratch = NULL;
    int rc = -1;
    if (o->config) {
        Config cfg;
        Corpus train = {0};
        TokenizedCorpus train_tokens = {0};
        /* --score is the config key [model] score, checked by the config's rules */
        char score[96];
        const char *overrides[1] = {score};
        if (o->score) snprintf(score, sizeof score, "model.score=%.80s", o->score);
        if (config_load(&cfg, o->config, overrides, o->score ? 1 : 0, err) ||
            corpus_load(cfg.data.train, cfg.data.lowercase, &train, &train_tokens, err))
            goto done;
        int bad = nmt_model_from_config(&nm, &cfg, &train_tokens, o->seed, err);
        tokenized_corpus_free(&train_tokens);
        corpus_free(&train);
        if (bad) goto done;
    } else if (checkpoint_load(o->model, &nm, NULL, NULL, err)) {
        goto done;
    }
    if (corpus_load(o->pairs, nm.lowercase, &corpus, &tokens, err) ||
        nmt_dataset(&ds, &nm, &tokens, &corpus, 0, err))
        goto done;
    if (ds.skipped) {
        error_set(err, "%s: %zu pair(s) have an empty side after tokenization", o->pairs,
                  ds.skipped);
        goto done;
    }
    Model *m = &nm.model;
    const ModelDims *d = &m->dims;
    int B = (int)ds.count;
    size_t *idx = checked_calloc(ds.count, sizeof(size_t), "batch order", err);
    if (!idx || batch_buffer_init(&bb, B, ds.max_src, ds.max_tgt, err)) {
        free(idx);
        goto done;
    }
    for (size_t i = 0; i < ds.count; i++) idx[i] = i;
    const Batch *batch = batch_fill(&bb, &ds, idx, B);
    free(idx);
    int S = batch->S, T = batch->T, K = dims_enc_state(d), V = d->tgt_vocab;
    double loss;
    /* every row's logits, kept by a forward_only pass for the dump; backward then recomputes
     * the output layer's gradients */
    ActsPlan plan = {.logit_rows = ACTS_ALL_ROWS};
    if (batch_validate(batch, d, err) || acts_init_plan(&acts, d, B, S, T, &plan, err) ||
        model_forward(m, &acts, batch, &(ForwardOptions){.forward_only = 1}, &loss, err))
        goto done;

    char dir[4096];
    const char *subdirs[] = {"", "/params", "/grads", "/batch", "/acts"};
    for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
        snprintf(dir, sizeof dir, "%s%s", o->out, subdirs[i]);
        if (make_dirs(dir, err)) goto done;
    }
    /* activations first: the backward pass reuses the logits' memory */
    size_t largest = (size_t)B * T * (V > S ? V : S) + (size_t)B * T * d->dec_hidden;
    scratch = checked_calloc(largest, sizeof(real), "dump buffer", err);
    if (!scratch) goto done;
    snprintf(dir, sizeof dir, "%s/acts", o->out);
    to_batch_major(scratch, acts.alpha, T, B, S);
    if (write_real(dir, "alpha", 3, B, T, S, scratch, err)) goto done;
    if (write_real(dir, "enc_h", 3, B, S, K, acts.enc_h, err)) goto done;
    to_batch_major(scratch, acts.dec_state + (size_t)B * d->dec_hidden, T, B, d->dec_hidden);
    if (write_real(dir, "dec_s", 3, B, T, d->dec_hidden, scratch, err)) goto done;
    to_batch_major(scratch, acts.logits, T, B, V);
    if (write_real(dir, "logits", 3, B, T, V, scratch, err)) goto done;

    model_zero_grad(m);
    model_backward(m, &acts);
    real loss_value = (real)loss;
    snprintf(dir, sizeof dir, "%s/params", o->out);
    if (write_tensors(dir, m, m->params, err)) goto done;
    snprintf(dir, sizeof dir, "%s/grads", o->out);
    if (write_tensors(dir, m, m->grads, err)) goto done;
    snprintf(dir, sizeof dir, "%s/batch", o->out);
    if (write_ints(dir, "src", 2, B, S, batch->src, err) ||
        write_ints(dir, "src_len", 1, B, 0, batch->src_len, err) ||
        write_ints(dir, "tgt_in", 2, B, T, batch->tgt_in, err) ||
        write_ints(dir, "tgt_out", 2, B, T, batch->tgt_out, err) ||
        write_ints(dir, "tgt_len", 1, B, 0, batch->tgt_len, err) ||
        write_real(o->out, "loss", 0, 0, 0, 0, &loss_value, err) || write_config(o->out, d, err))
        goto done;
    printf("gradref: %d pairs (S=%d, T=%d), loss %.9g, %s precision -> %s\n", B, S, T, loss,
           REAL_NAME, o->out);
    rc = 0;
done:
    free(scratch);
    acts_free(&acts);
    batch_buffer_free(&bb);
    dataset_free(&ds);
    tokenized_corpus_free(&tokens);
    corpus_free(&corpus);
    nmt_model_free(&nm);
    return rc;
}

int main(int argc, char **argv) {
    Options o = {.seed = 1};
    static const struct option longs[] = {
        {"config", required_argument, 0, 'c'}, {"model", required_argument, 0, 'm'},
        {"pairs", required_argument, 0, 'p'},  {"out", required_argument, 0, 'o'},
        {"seed", required_argument, 0, 's'},   {"score", required_argument, 0, 'a'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "c:m:o:h", longs, NULL)) != -1) {
        switch (c) {
        case 'c':
            o.config = optarg;
            break;
        case 'm':
            o.model = optarg;
            break;
        case 'p':
            o.pairs = optarg;
            break;
        case 'o':
            o.out = optarg;
            break;
        case 'a':
            o.score = optarg;
            break;
        case 's': {
            long seed;
            Error err;
            if (parse_int_option("--seed", optarg, 0, LONG_MAX, &seed, &err)) {
                fprintf(stderr, "gradref: %s\n", err.msg);
                return 2;
            }
            o.seed = (unsigned long long)seed;
            break;
        }
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    AttentionScore score;
    Error score_err;
    if (o.score && score_from_name(o.score, &score, &score_err)) {
        fprintf(stderr, "gradref: --score: %s\n", score_err.msg);
        return 2;
    }
    if (o.score && o.model) {
        fprintf(stderr, "gradref: --score goes with -c (a checkpoint keeps its own score)\n");
        return 2;
    }
    if (optind < argc || !!o.config == !!o.model || !o.pairs || !o.out) {
        fprintf(stderr,
                optind < argc ? "gradref: unexpected argument '%s'\n"
                              : "gradref: need exactly one of -c/-m, and --pairs and -o%s\n",
                optind < argc ? argv[optind] : "");
        usage(stderr);
        return 2;
    }
    Error err;
    if (run(&o, &err)) {
        fprintf(stderr, "gradref: %s\n", err.msg);
        return 1;
    }
    return 0;
}

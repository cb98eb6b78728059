/*
 * gradref.c: writes the gradient reference dump of the model spec: for one model and one
 * batch of sentence pairs, every parameter, the batch, the loss, every gradient and the main
 * activations, as .npy files any other implementation can load and compare itself against.
 * The model comes from a config (fresh, seeded) or a checkpoint; no dropout, no smoothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "reference/refdump.h"
#include "nmt/metrics/scoring.h"
#include "nmt/text.h"
#include "train/new_model.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: gradref (-c CONFIG | -m MODEL) --pairs FILE.tsv -o DIR [--seed N] [--score S]\n"
            "               [--reference]\n"
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
            "  --reference          compute it with the plain reference (reference/reference.c:\n"
            "                       one thread, double inside) instead of the engine; the two\n"
            "                       agree within round-off (at padding target steps, the\n"
            "                       reference's alpha, dec_s and logits are zero)\n"
            "  -h, --help           this text\n"
            "Output: DIR/params/<name>.npy, DIR/grads/<name>.npy, DIR/batch/*.npy,\n"
            "DIR/loss.npy, DIR/acts/{alpha,enc_h,dec_s,logits}.npy, DIR/config.json\n"
            "A side longer than %d tokens (the translator's limit) is refused.\n",
            NMT_MAX_TOKENS);
}

typedef struct {
    const char *config, *model, *pairs, *out;
    unsigned long long seed;
    const char *score; /* --score, or NULL */
    int reference;     /* --reference: the plain reference computes it */
} Options;

static int run(const Options *o, Error *err) {
    NmtModel nm = {0};
    Corpus corpus = {0};
    TokenizedCorpus tokens = {0};
    Dataset ds = {0};
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
    /* the translator's sentence limit: the dump's activations grow with S x T */
    if (corpus_load(o->pairs, nm.lowercase, &corpus, &tokens, err) ||
        score_check_lengths(&nm, &corpus, &tokens, o->pairs, err) ||
        nmt_dataset(&ds, &nm, &tokens, &corpus, 0, err))
        goto done;
    if (ds.skipped) {
        error_set(err, "%s: %zu pair(s) have an empty side after tokenization", o->pairs,
                  ds.skipped);
        goto done;
    }
    RefDumpSummary dump;
    if (reference_dump(&nm, &ds, o->out, o->reference ? DUMP_REFERENCE : DUMP_ENGINE, &dump, err))
        goto done;
    printf("gradref: %d pairs (S=%d, T=%d), loss %.9g, %s precision, %s -> %s\n", dump.pairs,
           dump.S, dump.T, dump.loss, REAL_NAME, o->reference ? "reference" : "engine", o->out);
    rc = 0;
done:
    dataset_free(&ds);
    tokenized_corpus_free(&tokens);
    corpus_free(&corpus);
    nmt_model_free(&nm);
    return rc;
}

int main(int argc, char **argv) {
    Options o = {0};
    long seed = 1;
    const CliOption options[] = {
        OPT_TEXT("config", 'c', &o.config),     OPT_TEXT("model", 'm', &o.model),
        OPT_TEXT("pairs", 0, &o.pairs),         OPT_TEXT("out", 'o', &o.out),
        OPT_INT("seed", &seed, 0, 1e15),        OPT_TEXT("score", 0, &o.score),
        OPT_FLAG("reference", 0, &o.reference), OPT_END};
    int status = cli_parse("gradref", argc, argv, options, usage);
    if (status != CLI_GO_ON) return status;
    o.seed = (unsigned long long)seed;
    if (optind < argc || !!o.config == !!o.model || !o.pairs || !o.out) {
        return usage_error("gradref",
                           optind < argc ? "unexpected argument '%.60s'"
                                         : "need exactly one of -c/-m, and --pairs and -o%s",
                           optind < argc ? argv[optind] : "");
    }
    Error err;
    AttentionScore score;
    if (o.score && score_from_name(o.score, &score, &err)) {
        fprintf(stderr, "gradref: --score: %s\n", err.msg);
        return 2;
    }
    if (o.score && o.model) {
        fprintf(stderr, "gradref: --score goes with -c (a checkpoint keeps its own score)\n");
        return 2;
    }
    if (run(&o, &err)) {
        fprintf(stderr, "gradref: %s\n", err.msg);
        return 1;
    }
    return 0;
}

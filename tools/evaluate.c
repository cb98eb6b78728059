/*
 * evaluate.c: scores a trained model on a test file of pairs: corpus BLEU and chrF computed
 * as sacreBLEU computes them (exp smoothing, its --tokenize and -lc; chrF2) against the
 * references as the file has them, and the perplexity of the references under the model
 * (teacher forcing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "tools/cli.h"
#include "tools/load_model.h"
#include "nmt/text.h"
#include "nmt/metrics/scoring.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: evaluate [-m MODEL] --test FILE.tsv [--beam N] [--show N] [--keep-unk]\n"
            "                [--tokenize T] [--lowercase] [--lowercase-bleu] [--compute T]\n"
            "Translates the source side of FILE.tsv (source TAB target) and scores it against\n"
            "the target side exactly as written there (as sacreBLEU would score the file's\n"
            "second column).\n"
            "  -m, --model MODEL  checkpoint (default: the toy model, runs/toy/best.ckpt)\n"
            "  --test FILE.tsv    the pairs to score\n"
            "  --beam N           beam size; 1 is greedy (default 1)\n"
            "  --show N           also print the first N translations with their references\n"
            "  --keep-unk         score outputs with <unk> kept (default: a word-level model's\n"
            "                     <unk> becomes the source word it attends to most)\n"
            "  --tokenize T       BLEU's tokenizer, as sacreBLEU's --tokenize: 13a (default),\n"
            "                     zh (Chinese: each CJK character a word), intl (Unicode\n"
            "                     punctuation and symbols) or none\n"
            "  --lowercase        score lower-cased outputs and references (sacreBLEU -lc)\n"
            "  --lowercase-bleu   also print BLEU with -lc beside the cased scores\n"
            "  --compute T        float or int8 (8-bit weights, faster; default: as the model\n"
            "                     file says: int8 for a file bin/quantize wrote)\n"
            "  -h, --help         this text\n"
            "BLEU and chrF are cased unless --lowercase, as sacreBLEU's are, also for a model\n"
            "that lower-cases its input.\n");
}

typedef struct {
    long show;
    bool lowercase_bleu; /* also count BLEU with -lc */
    BleuStats lower;
    int failed; /* a sink cannot return an error: the first one is kept here */
    Error error;
} ShowSink;

static void show(void *user, size_t index, const char *source, const char *hyp, const char *ref) {
    ShowSink *s = user;
    if ((long)index < s->show) printf("SRC %s\nHYP %s\nREF %s\n\n", source, hyp, ref);
    if (!s->lowercase_bleu || s->failed) return;
    s->failed = bleu_add(&s->lower, hyp, ref, &s->error) != 0;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *test_path = NULL, *compute = NULL, *tokenize_name = "13a";
    long beam = 1, n_show = 0;
    bool keep_unk = false, lowercase = false, lowercase_bleu = false;
    const CliOption options[] = {OPT_TEXT("model", 'm', &model_path),
                                 OPT_TEXT("test", 0, &test_path),
                                 OPT_INT("beam", &beam, 1, 100),
                                 OPT_INT("show", &n_show, 0, 1000000),
                                 OPT_FLAG("keep-unk", 0, &keep_unk),
                                 OPT_TEXT("tokenize", 0, &tokenize_name),
                                 OPT_FLAG("lowercase", 0, &lowercase),
                                 OPT_FLAG("lowercase-bleu", 0, &lowercase_bleu),
                                 OPT_TEXT("compute", 0, &compute), /* float or int8 */
                                 OPT_END};
    int status = cli_parse("evaluate", argc, argv, options, usage);
    if (status != CLI_GO_ON) return status;
    Error err;
    if (!test_path) return usage_error("evaluate", "missing --test FILE.tsv");
    ScoreOptions scoring = {.lowercase = lowercase};
    if (bleu_tokenize_parse(tokenize_name, &scoring.tokenize, &err))
        return usage_error("evaluate", "--tokenize: %s", err.msg);
    ComputeType compute_type;
    if (compute_type_parse(compute, &compute_type, &err))
        return usage_error("evaluate", "--compute: %s", err.msg);
    if (optind < argc) {
        char quoted[96];
        return usage_error("evaluate", "unexpected argument '%s'",
                           text_for_message(quoted, sizeof quoted, argv[optind], 60));
    }
    NmtModel nm = {0};
    Corpus corpus = {0};
    TokenizedCorpus tokens = {0};
    Scores sc;
    int rc = 1;
    if (load_model_compute(model_path, compute, &nm, &err) ||
        corpus_load(test_path, nm.lowercase, &corpus, &tokens, &err)) {
        fprintf(stderr, "evaluate: %s\n", err.msg);
        goto done;
    }
    nm.keep_unk = keep_unk;
    if (score_check_lengths(&nm, &corpus, &tokens, test_path, &err)) {
        fprintf(stderr, "evaluate: %s\n", err.msg);
        goto done;
    }
    ShowSink sink = {.show = n_show, .lowercase_bleu = lowercase_bleu};
    bleu_stats_init(&sink.lower, &(ScoreOptions){.tokenize = scoring.tokenize, .lowercase = true});
    if (score_corpus(&nm, &corpus, &tokens, test_path, 64, (int)beam, &scoring, &sc, show, &sink,
                     &err)) {
        fprintf(stderr, "evaluate: %s\n", err.msg);
        goto done;
    }
    if (sink.failed) {
        fprintf(stderr, "evaluate: %s\n", sink.error.msg);
        goto done;
    }
    char line[METRICS_LINE_MAX];
    bleu_format(&sc.bleu, line, sizeof line);
    printf("%s\n", line);
    if (lowercase_bleu) {
        BleuResult lower = bleu_score(&sink.lower);
        bleu_format(&lower, line, sizeof line);
        printf("lowercased: %s\n", line);
    }
    chrf_format(&sc.chrf, line, sizeof line);
    printf("%s\n", line);
    printf("perplexity = %.4f (loss %.4f over %zu target tokens)\n", sc.perplexity, sc.loss,
           sc.tokens);
    char signature[METRICS_LINE_MAX];
    bleu_signature(&scoring, signature, sizeof signature);
    printf("sentences = %zu, beam = %ld, signature: %s\n", sc.sentences, beam, signature);
    if (flush_standard_output(&err)) {
        fprintf(stderr, "evaluate: %s\n", err.msg);
        goto done;
    }
    rc = 0;
done:
    tokenized_corpus_free(&tokens);
    corpus_free(&corpus);
    nmt_model_free(&nm);
    return rc;
}

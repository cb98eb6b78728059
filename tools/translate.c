/*
 * translate.c: translates sentences with a trained model: each argument, or each line of
 * standard input when there is none, one translation per line (so it works in a pipe on a
 * whole file). Greedy search by default, beam search with length normalisation on request.
 * A bad input line gets a one-line error naming it and an empty output line (so output lines
 * stay aligned with input lines); the exit status then is 1. --align FILE also writes each
 * best translation's attention alignment to FILE (see nmt/alignment.h for the formats).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/search.h"
#include "nmt/align_write.h"
#include "tools/cli.h"
#include "nmt/text.h"

enum { CHUNK = 32, MAX_INPUT_TOKENS = 250 };

static void usage(FILE *out) {
    fprintf(
        out,
        "usage: translate [-m MODEL] [--beam N] [--nbest N] [--max-len N] [--align FILE]\n"
        "                 [--align-format F] [TEXT ...]\n"
        "Translates each TEXT argument, or each line of standard input when there is none.\n"
        "  -m, --model MODEL  checkpoint (default: the toy model, runs/toy/best.ckpt)\n"
        "  --beam N           beam size; 1 is greedy search (default 1)\n"
        "  --nbest N          print the N best translations as 'i ||| text ||| score'\n"
        "                     (default 1: just the best, one line per input; N <= beam)\n"
        "  --max-len N        at most N output tokens (default: 2 x input length + 10)\n"
        "  --len-norm X       length-normalisation exponent of beam scores (default 1)\n"
        "  --align FILE       also write the attention alignment of each input's best\n"
        "                     translation to FILE (written whole, through FILE.tmp)\n"
        "  --align-format F   pharaoh (word links i-j, default), marian (soft weights),\n"
        "                     json, tsv, text or html (one interactive page); bin/align --help\n"
        "                     describes them\n"
        "  -h, --help         this text\n"
        "Inputs longer than %d tokens are cut to that length with a warning.\n",
        MAX_INPUT_TOKENS);
}

typedef struct {
    NmtModel nm;
    Searcher searcher;
    SearchOptions opt;
    int fixed_max_len; /* 0: per batch, from the input lengths */
    int failures;
    size_t counter;  /* inputs seen, for messages and n-best numbering */
    FILE *align_out; /* --align: where alignments go; NULL without it */
    AlignFormat align_format;
    Alignment *kept; /* html: every alignment, written as one page at the end */
    int n_kept, cap_kept;
} Translator;

/* html needs every sentence first: the alignment is kept (the translator owns it now). */
static int keep_alignment(Translator *t, Alignment *a, Error *err) {
    if (t->n_kept == t->cap_kept) {
        int cap = t->cap_kept ? 2 * t->cap_kept : 16;
        Alignment *grown = realloc(t->kept, (size_t)cap * sizeof *grown);
        if (!grown) {
            alignment_free(a);
            return error_set(err, "out of memory keeping alignments");
        }
        t->kept = grown, t->cap_kept = cap;
    }
    t->kept[t->n_kept++] = *a;
    return 0;
}

/* --align: the alignment of one input's best translation (or its placeholder). A problem
 * with one sentence's alignment is reported like a bad input and does not stop the run. */
static int write_alignment(Translator *t, const char *text, const Translation *x, const char *what,
                           size_t number, Error *err) {
    Alignment a;
    Error e;
    if (t->align_format == ALIGN_HTML && (!x || x->count == 0)) return 0; /* no placeholder */
    if (!x || x->count == 0) return alignment_write_missing(t->align_out, t->align_format, err);
    if (alignment_from_hypothesis(&a, &t->nm, text, &x->hyps[0], &e)) {
        fprintf(stderr, "translate: %s %zu: no alignment: %s\n", what, number, e.msg);
        t->failures++;
        return alignment_write_missing(t->align_out, t->align_format, err);
    }
    if (t->align_format == ALIGN_HTML) return keep_alignment(t, &a, err);
    int rc = alignment_write(t->align_out, t->align_format, &a, err);
    alignment_free(&a);
    return rc;
}

/* Encodes, translates and prints one chunk of inputs. */
static int translate_chunk(Translator *t, char **texts, int n, const char *what, Error *err) {
    int *ids[CHUNK] = {0}, lens[CHUNK], ok[CHUNK], good = 0, longest = 1;
    const int *src[CHUNK];
    for (int i = 0; i < n; i++) {
        size_t number = t->counter + (size_t)i + 1;
        int unknown;
        Error e;
        ok[i] = 0;
        if (encode_source(&t->nm, texts[i], &ids[i], &lens[i], &unknown, &e)) {
            fprintf(stderr, "translate: %s %zu: %s\n", what, number, e.msg);
            continue;
        }
        if (lens[i] == 1) {
            fprintf(stderr, "translate: %s %zu: empty sentence, nothing to translate\n", what,
                    number);
            continue;
        }
        if (lens[i] - 1 > MAX_INPUT_TOKENS) {
            fprintf(stderr, "translate: %s %zu: %d tokens, translating only the first %d\n", what,
                    number, lens[i] - 1, MAX_INPUT_TOKENS);
            ids[i][MAX_INPUT_TOKENS] = TOK_EOS;
            lens[i] = MAX_INPUT_TOKENS + 1;
        }
        if (unknown == lens[i] - 1)
            fprintf(stderr, "translate: %s %zu: no word of it is known to the model\n", what,
                    number);
        ok[i] = 1;
        src[good] = ids[i];
        lens[good] = lens[i];
        if (lens[good] > longest) longest = lens[good];
        good++;
    }
    Translation tr[CHUNK];
    int rc = 0;
    if (good > 0) {
        t->opt.max_len = t->fixed_max_len ? t->fixed_max_len : 2 * longest + 10;
        rc = search_translate(&t->searcher, &t->nm.model, src, lens, good, &t->opt, tr, err);
    }
    for (int i = 0, g = 0; i < n && rc == 0; i++) {
        size_t number = t->counter + (size_t)i + 1;
        if (!ok[i]) {
            t->failures++;
            if (t->opt.nbest == 1) printf("\n");
            if (t->align_out) rc = write_alignment(t, texts[i], NULL, what, number, err);
            continue;
        }
        const Translation *x = &tr[g++];
        if (t->align_out && (rc = write_alignment(t, texts[i], x, what, number, err))) break;
        for (int h = 0; h < x->count && rc == 0; h++) {
            char *text = decode_target(&t->nm, x->hyps[h].tokens, x->hyps[h].len, err);
            if (!text) {
                rc = -1;
                break;
            }
            if (t->opt.nbest == 1)
                printf("%s\n", text);
            else
                printf("%zu ||| %s ||| %.4f\n", number - 1, text, x->hyps[h].score);
            free(text);
        }
        if (x->count == 0 && t->opt.nbest == 1) printf("\n");
    }
    if (good > 0 && rc == 0)
        for (int g = 0; g < good; g++) translation_free(&tr[g]);
    for (int i = 0; i < n; i++) free(ids[i]);
    t->counter += (size_t)n;
    fflush(stdout);
    return rc;
}

int main(int argc, char **argv) {
    const char *model_path = NULL;
    long beam = 1, nbest = 1, max_len = 0;
    double len_norm = 1.0;
    static const struct option longs[] = {{"model", required_argument, 0, 'm'},
                                          {"beam", required_argument, 0, 'b'},
                                          {"nbest", required_argument, 0, 'n'},
                                          {"max-len", required_argument, 0, 'l'},
                                          {"len-norm", required_argument, 0, 'a'},
                                          {"align", required_argument, 0, 'A'},
                                          {"align-format", required_argument, 0, 'F'},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    const char *align_path = NULL;
    AlignFormat align_format = ALIGN_PHARAOH;
    bool align_format_given = false;
    Error err;
    int c;
    while ((c = getopt_long(argc, argv, "m:h", longs, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'm':
            model_path = optarg;
            break;
        case 'b':
            bad = parse_int_option("--beam", optarg, 1, 100, &beam, &err);
            break;
        case 'n':
            bad = parse_int_option("--nbest", optarg, 1, 100, &nbest, &err);
            break;
        case 'l':
            bad = parse_int_option("--max-len", optarg, 1, 1000, &max_len, &err);
            break;
        case 'a':
            bad = parse_double_option("--len-norm", optarg, 0, 10, &len_norm, &err);
            break;
        case 'A':
            align_path = optarg;
            break;
        case 'F':
            bad = align_format_parse(optarg, &align_format, &err);
            align_format_given = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "translate: %s\n", err.msg);
            return 2;
        }
    }
    if (nbest > beam) {
        fprintf(stderr, "translate: --nbest %ld needs --beam of at least %ld\n", nbest, nbest);
        return 2;
    }
    if (align_format_given && !align_path) {
        fprintf(stderr, "translate: --align-format needs --align FILE\n");
        return 2;
    }
    if (!align_format_streams(align_format) && align_format != ALIGN_HTML) {
        fprintf(stderr, "translate: --align-format %s needs every sentence first; use bin/align\n",
                align_format == ALIGN_SVG ? "svg" : "npy");
        return 2;
    }
    Translator t = {.opt = {.beam = (int)beam, .nbest = (int)nbest, .len_norm = len_norm},
                    .fixed_max_len = (int)max_len,
                    .align_format = align_format};
    OutputFile align_file = {0};
    /* A few sentences from the command line decode one at a time, where a second thread only
     * adds the cost of starting it (measured: batch-1 decoding is no faster on two threads). */
    if (optind < argc && argc - optind <= 4) omp_set_num_threads(1);
    if (load_model(model_path, &t.nm, &err) ||
        search_init(&t.searcher, &t.nm.model.dims, CHUNK, MAX_INPUT_TOKENS + 1, (int)beam,
                    max_len ? (int)max_len : 2 * (MAX_INPUT_TOKENS + 1) + 10, &err)) {
        fprintf(stderr, "translate: %s\n", err.msg);
        nmt_model_free(&t.nm);
        return 1;
    }
    if (align_path) {
        if (output_file_open(&align_file, align_path, false, &err)) {
            fprintf(stderr, "translate: %s\n", err.msg);
            search_free(&t.searcher);
            nmt_model_free(&t.nm);
            return 1;
        }
        t.align_out = align_file.file;
    }
    int rc = 0;
    if (optind < argc) {
        for (int first = optind; first < argc && rc == 0; first += CHUNK) {
            int n = argc - first < CHUNK ? argc - first : CHUNK;
            rc = translate_chunk(&t, argv + first, n, "argument", &err);
        }
    } else {
        char *lines[CHUNK] = {0};
        size_t caps[CHUNK] = {0};
        int n = 0;
        for (;;) {
            long len = read_line(stdin, &lines[n], &caps[n]);
            int read_errno = errno;
            if (len >= 0) n++;
            if ((len < 0 || n == CHUNK) && n > 0) { /* lines before a read error still count */
                rc = translate_chunk(&t, lines, n, "line", &err);
                n = 0;
            }
            if (rc == 0 && len == -2)
                rc = error_set(&err, "cannot read standard input: %s", strerror(read_errno));
            if (len < 0 || rc) break;
        }
        for (int i = 0; i < CHUNK; i++) free(lines[i]);
    }
    if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout)))
        rc = error_set(&err, "cannot write to standard output: %s", strerror(errno));
    if (align_path && rc == 0 && align_format == ALIGN_HTML)
        rc = alignment_write_html(align_file.file, t.kept, t.n_kept, &err);
    if (align_path && rc == 0) rc = output_file_commit(&align_file, &err);
    if (align_path && rc) output_file_abort(&align_file);
    if (rc) fprintf(stderr, "translate: %s\n", err.msg);
    for (int k = 0; k < t.n_kept; k++) alignment_free(&t.kept[k]);
    free(t.kept);
    search_free(&t.searcher);
    nmt_model_free(&t.nm);
    return rc || t.failures ? 1 : 0;
}

/*
 * translate.c: translates sentences with a trained model: each argument, or each line of
 * standard input when there is none, one translation per line (so it works in a pipe on a
 * whole file). Beam search with length normalisation (a beam of NMT_DEFAULT_BEAM, the C API's
 * default), or greedy search with --beam 1.
 * A bad input line gets a one-line error naming it and an empty output line (so output lines
 * stay aligned with input lines); the exit status then is 1. A blank line of standard input is
 * a blank translation (said once on stderr), not an error. --align FILE also writes each
 * best translation's attention alignment to FILE (see nmt/alignment.h for the formats).
 * Standard input is read in chunks of lines, which a file needs for speed, except from a
 * terminal or with --unbuffered, where each line is translated as soon as it arrives.
 * A source word the model does not know is named on stderr, and so is each word <unk>
 * replacement copied into the translation: a translation never drops words silently.
 */
#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nmt/pictures/align_write.h"
#include "nmt/nmt.h"
#include "base/utf8.h"
#include "data/tokenizer.h"
#include "tools/cli.h"
#include "tools/load_model.h"
#include "nmt/text.h"
#include "nmt/translator.h"

enum { CHUNK = 32 };

static void usage(FILE *out) {
    fprintf(out,
            "usage: translate [-m MODEL] [--beam N] [--nbest N] [--max-len N] [--len-norm X]\n"
            "                 [--align FILE] [--align-format F] [--keep-unk] [--unbuffered]\n"
            "                 [--compute T] [TEXT ...]\n"
            "Translates each TEXT argument, or each line of standard input when there is none.\n"
            "  -m, --model MODEL  checkpoint (default: the toy model, runs/toy/best.ckpt)\n"
            "  --beam N           beam size; 1 is greedy search (default %d)\n"
            "  --nbest N          print the N best translations as 'i ||| text ||| score'\n"
            "                     (default 1: just the best, one line per input; N <= beam)\n"
            "  --max-len N        at most N output tokens (default: 2 x input length + 10)\n"
            "  --len-norm X       length-normalisation exponent of beam scores (default 1)\n"
            "  --align FILE       also write the attention alignment of each input's best\n"
            "                     translation to FILE (written whole, through FILE.tmp.*)\n"
            "  --align-format F   pharaoh (word links i-j), marian (soft weights), json, tsv,\n"
            "                     text or html (one interactive page); bin/align --help\n"
            "                     describes them. Default: from FILE's extension (.tsv,\n"
            "                     .json, .jsonl, .html, .htm), else pharaoh (.txt too); FILE\n"
            "                     ending in another format's extension (.html with\n"
            "                     --align-format pharaoh), or in .svg, .npy or .png, is an\n"
            "                     error\n"
            "  --keep-unk         keep <unk> in the output (default: a word-level model's <unk>\n"
            "                     becomes the source word it attends to most)\n"
            "  --unbuffered       translate each line of standard input as soon as it is read\n"
            "                     (the default on a terminal; files are read in chunks)\n"
            "  --compute T        float or int8 (8-bit weights, faster; default: as the model\n"
            "                     file says: int8 for a file bin/quantize wrote)\n"
            "  -h, --help         this text\n"
            "Inputs longer than %d tokens are refused (an error and an empty line); a blank\n"
            "line of standard input gives a blank line. Words the model does not know, and\n"
            "words copied in place of <unk>, are named on stderr. Threads: at most\n"
            "OMP_NUM_THREADS (default: every core), fewer while other programs keep cores\n"
            "busy, with the same translations bit for bit.\n",
            NMT_DEFAULT_BEAM, NMT_MAX_TOKENS);
}

typedef struct {
    NmtModel nm;
    int lines_per_chunk; /* standard input: CHUNK, or 1 to answer each line as it comes */
    Translator translator;
    int failures;
    bool told_blank;        /* a blank line of standard input has been mentioned once */
    size_t counter;         /* inputs seen, for messages and n-best numbering */
    FILE *align_out;        /* --align: where alignments go; NULL without it */
    const char *align_path; /* its name, for a write that fails */
    AlignFormat align_format;
    Alignment *kept; /* html: every alignment, written as one page at the end */
    int n_kept, cap_kept;
} Run;

/* --align FILE: its extension chooses the format or must agree with --align-format; .txt is
 * the documented name of word links (pharaoh) unless --align-format names another format of
 * lines. npy and svg are bin/align's. */
static const AlignFileRules ALIGN_FILE_RULES = {.program = "translate",
                                                .path_option = "--align",
                                                .format_option = "--align-format",
                                                .for_txt = ALIGN_PHARAOH,
                                                .for_other = ALIGN_PHARAOH,
                                                .writes_npy_and_svg = false};

/* html needs every sentence first: the alignment is kept (the run owns it now). */
static int keep_alignment(Run *r, Alignment *a, Error *err) {
    if (r->n_kept == r->cap_kept) {
        int cap = r->cap_kept ? 2 * r->cap_kept : 16;
        Alignment *grown = realloc(r->kept, (size_t)cap * sizeof *grown);
        if (!grown) {
            alignment_free(a);
            return error_set(err, "out of memory keeping alignments");
        }
        r->kept = grown, r->cap_kept = cap;
    }
    r->kept[r->n_kept++] = *a;
    return 0;
}

/* --align: the alignment of one input's best translation (or its placeholder). A problem
 * with one sentence's alignment is reported like a bad input and does not stop the run. */
static int write_alignment_or_placeholder(Run *r, const TranslatedText *x, const char *what,
                                          size_t number, Error *err) {
    Alignment a;
    Error e;
    bool none = !x || x->best.count == 0;
    if (r->align_format == ALIGN_HTML && none) return 0; /* no placeholder */
    if (none) return alignment_write_missing(r->align_out, r->align_format, err);
    if (alignment_from_hypothesis(&a, &r->nm, &x->source, &x->best.hyps[0], &e)) {
        fprintf(stderr, "translate: %s %zu: no alignment: %s\n", what, number, e.msg);
        r->failures++;
        return alignment_write_missing(r->align_out, r->align_format, err);
    }
    a.number = (int)number; /* a refused input is left out of the page, but not renumbered */
    if (r->align_format == ALIGN_HTML) return keep_alignment(r, &a, err);
    int rc = alignment_write(r->align_out, r->align_format, &a, err);
    alignment_free(&a);
    return rc;
}

/* write_alignment_or_placeholder, a failed write naming the file. */
static int write_alignment(Run *r, const TranslatedText *x, const char *what, size_t number,
                           Error *err) {
    int rc = write_alignment_or_placeholder(r, x, what, number, err);
    return rc ? error_prefix(err, "%s: ", r->align_path) : 0;
}

/* Prints one input's translations: the best one a line, or its n-best list. */
static int print_translations(Run *r, const SourceText *source, const Translation *x, size_t number,
                              Error *err) {
    for (int h = 0; h < x->count; h++) {
        char *text = decode_hypothesis(&r->nm, source, &x->hyps[h], err);
        if (!text) return -1;
        if (r->translator.opt.nbest == 1)
            printf("%s\n", text);
        else
            printf("%zu ||| %s ||| %.4f\n", number - 1, text, x->hyps[h].score);
        free(text);
    }
    if (x->count == 0 && r->translator.opt.nbest == 1) printf("\n");
    return 0;
}

/* Names on stderr what of the source the model does not know: the whole text, or the words
 * (as the user wrote them) it reads as <unk> or spells in bytes; and, when <unk> replacement is
 * on, the source words copied into the best translation in place of <unk>. */
static void warn_unknown_words(const Run *r, const TranslatedText *x, const char *what,
                               size_t number) {
    const NmtModel *nm = &r->nm;
    bool replaces = !nm->subwords && !nm->keep_unk;
    const Hypothesis *best = x->best.count > 0 ? &x->best.hyps[0] : NULL;
    int copies = 0;
    for (int t = 0; best && replaces && t < best->len; t++) copies += best->tokens[t] == TOK_UNK;
    char list[512] = "";
    if (x->unfamiliar)
        fprintf(stderr, "translate: %s %zu: the model does not know this text: %s\n", what, number,
                nm->lossless ? "most of its characters never appeared in its training data"
                             : "no word of it is known to the model");
    else if (source_unknown_words(nm, &x->source, list, sizeof list) > 0)
        fprintf(stderr, "translate: %s %zu: unknown to the model, %s: %s\n", what, number,
                nm->lossless ? "spelled in bytes" : "read as <unk>", list);
    if (copies > 0 && best->src_len == x->source.n && best->src_len >= 2) {
        list[0] = '\0';
        int words = 0;
        for (int t = 0; t < best->len; t++) {
            if (best->tokens[t] != TOK_UNK) continue;
            char word[256];
            int k = unk_source_position(best->alpha + (size_t)t * best->src_len, best->src_len);
            source_unit_word(nm, &x->source, k, word, sizeof word);
            words += message_list_add(list, sizeof list, word);
        }
        fprintf(stderr,
                "translate: %s %zu: <unk> in the translation replaced by the source %s %s\n", what,
                number, words == 1 ? "word" : "words", list);
    }
}

/* Whether a line of standard input holds nothing but spaces, ASCII's or any the tokenizer
 * takes for spaces (U+3000, U+00A0, also where a model with subwords keeps them as bytes): a
 * paragraph break in a file, which keeps its place in the output as a blank line. */
static bool is_blank(const char *text) {
    size_t len = strlen(text), at = 0;
    while (at < len) {
        uint32_t cp;
        const char *problem = NULL;
        size_t used = utf8_decode((const unsigned char *)text + at, len - at, &cp, &problem);
        bool ascii_space = cp == ' ' || (cp >= '\t' && cp <= '\r' && cp != '\n');
        if (problem || !(ascii_space || tokenizer_is_space(cp))) return false;
        at += used;
    }
    return true;
}

/* Translates and prints one chunk of inputs. A refused input gets a one-line error and, to
 * keep output lines in step with input lines, an empty line. refusals (standard input's
 * lines only, else NULL) holds the reading's own verdict on each line: a message refuses it. */
static int translate_chunk(Run *r, char **texts, const Error *refusals, int n, const char *what,
                           Error *err) {
    TranslatedText out[CHUNK];
    if (translator_run(&r->translator, (const char *const *)texts, n, out, err)) return -1;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        size_t number = r->counter + (size_t)i + 1;
        const TranslatedText *x = &out[i];
        bool refused_by_reading = refusals && refusals[i].msg[0];
        if (refusals && !refused_by_reading && is_blank(texts[i])) {
            if (!r->told_blank)
                fprintf(stderr,
                        "translate: %s %zu: blank, so its translation is a blank line (said "
                        "once)\n",
                        what, number);
            r->told_blank = true;
            if (r->translator.opt.nbest == 1) printf("\n");
            if (r->align_out) rc = write_alignment(r, NULL, what, number, err);
            continue;
        }
        if (x->refused || refused_by_reading) {
            fprintf(stderr, "translate: %s %zu: %s\n", what, number,
                    refused_by_reading ? refusals[i].msg : x->error.msg);
            r->failures++;
            if (r->translator.opt.nbest == 1) printf("\n");
            if (r->align_out) rc = write_alignment(r, NULL, what, number, err);
            continue;
        }
        warn_unknown_words(r, x, what, number);
        if (r->align_out) rc = write_alignment(r, x, what, number, err);
        if (rc == 0) rc = print_translations(r, &x->source, &x->best, number, err);
    }
    translated_free(out, n);
    r->counter += (size_t)n;
    fflush(stdout);
    return rc;
}

/* Every input: the arguments in chunks, or standard input's lines as they come. */
static int translate_inputs(Run *r, int argc, char **argv, Error *err) {
    int rc = 0;
    if (argc > 0) {
        for (int first = 0; first < argc && rc == 0; first += CHUNK)
            rc = translate_chunk(r, argv + first, NULL, argc - first < CHUNK ? argc - first : CHUNK,
                                 "argument", err);
        return rc;
    }
    char *lines[CHUNK] = {0};
    size_t caps[CHUNK] = {0};
    Error refusals[CHUNK];
    int n = 0;
    for (;;) {
        long len =
            read_sentence_line(stdin, r->counter == 0 && n == 0, &lines[n], &caps[n], &refusals[n]);
        int read_errno = errno;
        if (len >= 0) n++;
        if ((len < 0 || n == r->lines_per_chunk) &&
            n > 0) { /* lines before a read error still count */
            rc = translate_chunk(r, lines, refusals, n, "line", err);
            n = 0;
        }
        if (rc == 0 && len == -2)
            rc = error_set(err, "cannot read standard input: %s", strerror(read_errno));
        if (len < 0 || rc) break;
    }
    for (int i = 0; i < CHUNK; i++) free(lines[i]);
    return rc;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *align_path = NULL, *align_format_name = NULL, *compute = NULL;
    long beam = NMT_DEFAULT_BEAM, nbest = 1, max_len = 0;
    bool keep_unk = false, unbuffered = false;
    double len_norm = 1.0;
    const CliOption options[] = {OPT_TEXT("model", 'm', &model_path),
                                 OPT_INT("beam", &beam, 1, 100),
                                 OPT_INT("nbest", &nbest, 1, 100),
                                 OPT_INT("max-len", &max_len, 1, 1000),
                                 OPT_REAL("len-norm", &len_norm, 0, NMT_MAX_LEN_NORM),
                                 OPT_TEXT("align", 0, &align_path),
                                 OPT_TEXT("align-format", 0, &align_format_name),
                                 OPT_FLAG("keep-unk", 0, &keep_unk),
                                 OPT_FLAG("unbuffered", 0, &unbuffered),
                                 OPT_TEXT("compute", 0, &compute),
                                 OPT_END};
    int status = cli_parse("translate", argc, argv, options, usage);
    if (status != CLI_GO_ON) return status;
    Error err;
    /* someone typing waits for each answer; a file is faster read a chunk at a time */
    Run r = {.align_format = ALIGN_PHARAOH,
             .lines_per_chunk = unbuffered || isatty(STDIN_FILENO) ? 1 : CHUNK};
    const char *problem = NULL;
    ComputeType compute_type;
    if (compute_type_parse(compute, &compute_type, &err))
        problem = (error_prefix(&err, "--compute: "), err.msg);
    else if (align_format_name && align_format_parse(align_format_name, &r.align_format, &err))
        problem = err.msg;
    else if (nbest > beam)
        problem = "--nbest N needs --beam of at least N";
    else if (align_format_name && !align_path)
        problem = "--align-format needs --align FILE";
    else if (align_path && align_format_for_path(align_path, align_format_name, &ALIGN_FILE_RULES,
                                                 &r.align_format, &err))
        problem = err.msg;
    if (problem) return usage_error("translate", "%s", problem);
    SearchOptions opt = {
        .beam = (int)beam, .nbest = (int)nbest, .len_norm = len_norm, .max_len = (int)max_len};
    OutputFile align_file = {0};
    /* A few sentences from the command line decode one at a time, where a second thread only
     * adds the cost of starting it (measured: batch-1 decoding is no faster on two threads). */
    if (optind < argc && argc - optind <= 4) omp_set_num_threads(1);
    /* the translator before the model: it measures the machine's load from its start to choose
     * the threads of its searches, and a large model's loading is long enough to tell the load
     * before the first search */
    int rc = translator_init(&r.translator, &r.nm, CHUNK, &opt, &err);
    if (rc == 0) rc = load_model_compute(model_path, compute, &r.nm, &err);
    r.nm.keep_unk = keep_unk;
    if (rc == 0 && align_path) rc = check_output_is_no_input(align_path, model_path, &err);
    if (rc == 0 && align_path) rc = output_file_open(&align_file, align_path, false, &err);
    r.align_out = align_file.file, r.align_path = align_path;
    /* someone at a terminal otherwise faces a silent cursor */
    if (rc == 0 && optind == argc && isatty(STDIN_FILENO))
        fprintf(stderr, "translate: type a sentence, Enter to translate, Ctrl-D to end\n");
    if (rc == 0) rc = translate_inputs(&r, argc - optind, argv + optind, &err);
    if (rc == 0) rc = flush_standard_output(&err);
    if (align_path && rc == 0 && r.align_format == ALIGN_HTML &&
        alignment_write_html(align_file.file, r.kept, r.n_kept, &err))
        rc = error_prefix(&err, "%s: ", align_path);
    if (align_path && rc == 0) rc = output_file_commit(&align_file, &err);
    if (rc) {
        output_file_abort(&align_file);
        fprintf(stderr, "translate: %s\n", err.msg);
    }
    for (int k = 0; k < r.n_kept; k++) alignment_free(&r.kept[k]);
    free(r.kept);
    translator_free(&r.translator);
    nmt_model_free(&r.nm);
    return rc || r.failures ? 1 : 0;
}

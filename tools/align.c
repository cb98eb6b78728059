/*
 * align.c: shows where the model looks. For each sentence (arguments, or lines of standard
 * input) it prints the attention matrix of its translation (greedy or beam search) or of a
 * given target (--ref, teacher forcing) in one of several formats, or walks through every
 * decoding step as worked arithmetic (--explain). --eval-gold scores the model's word
 * alignments against gold ones (precision, recall, AER).
 * The work is done in the library (nmt/alignment.h, words.h, align_write.h); this file reads
 * options and inputs and routes results.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nmt/pictures/align_write.h"
#include "nmt/words.h"
#include "tools/cli.h"
#include "tools/load_model.h"
#include "nmt/text.h"
#include "nmt/translator.h"

enum { CHUNK = 16 };

static void usage(FILE *out) {
    fprintf(
        out,
        "usage: align [-m MODEL] [--ref TARGET] [--beam N] [--format F] [-o PATH] [--explain]"
        " [TEXT ...]\n"
        "       align --eval-gold GOLD.align --pairs PAIRS.tsv [-m MODEL]\n"
        "Shows the attention (alignment) matrix of the translation of each TEXT, or of each\n"
        "line of standard input when there is none: one row per output token, one column per\n"
        "source token (both with </s>); row t holds the weights alpha_ti, which sum to 1.\n"
        "  -m, --model MODEL  checkpoint (default: the toy model, runs/toy/best.ckpt)\n"
        "  --ref TARGET       force-decode TARGET (teacher forcing) instead of searching;\n"
        "                     needs exactly one TEXT\n"
        "  --beam N           beam size; 1 is greedy search (default 1); the matrix is the\n"
        "                     best hypothesis's\n"
        "  --format F         tsv, npy, json, svg, text, marian, pharaoh or html (default:\n"
        "                     from the extension of -o PATH, else text on a terminal, else\n"
        "                     tsv); -o PATH ending in another format's extension (.svg\n"
        "                     with --format tsv, or .png) is an error\n"
        "  -o, --output PATH  write to PATH (through PATH.tmp.*, renamed when whole)\n"
        "                     instead of standard output; npy needs a file (default align.npy)\n"
        "  --explain          print every decoding step as worked arithmetic (query, scores,\n"
        "                     softmax by hand, context, chosen token) instead of the matrix;\n"
        "                     with -o the matrix still goes to PATH\n"
        "  --eval-gold GOLD   force-decode every pair of --pairs, link each target word to\n"
        "                     its most attended source word, and score the links against\n"
        "                     GOLD (Pharaoh i-j lines, source-target words, one per pair)\n"
        "  --pairs PAIRS      the sentence pairs (source TAB target) for --eval-gold\n"
        "  --compute T        float or int8 (8-bit weights; default: as the model file\n"
        "                     says: int8 for a file bin/quantize wrote)\n"
        "  -h, --help         this text\n"
        "Formats:\n"
        "  tsv      a corner cell and the source tokens, then each output token and its\n"
        "           weights (%%.9g); sentences separated by a blank line\n"
        "  npy      float32 [rows, cols] in PATH, tokens one per line in PATH without .npy\n"
        "           plus .src.txt and .tgt.txt; with several sentences, sentence k (0-based)\n"
        "           goes to BASE.k.npy, BASE.k.src.txt and BASE.k.tgt.txt\n"
        "  json     one object per line: source, translation, src_tokens, tgt_tokens, alpha,\n"
        "           prob (the probability of each output token)\n"
        "  svg      a labelled heatmap per sentence, stacked in one SVG document\n"
        "  html     one self-contained page: a heatmap per sentence; pointing at (or\n"
        "           focusing) an output token works out that step: e_ti, exp, sum, alpha_ti\n"
        "  text     a shaded heatmap for the terminal, naming each row's strongest column\n"
        "  marian   'translation ||| w,w,w w,w,w': one group of weights per output token\n"
        "  pharaoh  word links 'i-j' (source-target, 0-based): each target word to its most\n"
        "           attended source word (a source word's weight summed over its tokens or\n"
        "           subwords, a target word's rows averaged, </s> left out)\n"
        "An input that cannot be aligned gets a one-line error; line formats then print an\n"
        "empty line (json: null) to stay in step with the input, npy removes its number's\n"
        "files of an earlier run, and the exit status is 1.\n"
        "Inputs longer than %d tokens are refused.\n",
        NMT_MAX_TOKENS);
}

typedef struct {
    const char *model_path, *ref, *output, *eval_gold, *pairs, *compute;
    long beam;
    AlignFormat format;
    bool explain;
} Options;

/* What one run holds while it goes through the inputs. */
typedef struct {
    Options opt;
    NmtModel nm;
    Translator translator;
    ForcedDecoder forced;
    FILE *out; /* matrices of the streaming formats; NULL when none are written */
    OutputFile file;
    Alignment *kept; /* [n_inputs] for svg and html, written at the end */
    int n_kept;
    bool several; /* more than one input: npy files get an index */
    int failures;
} Run;

/* Whether the run writes matrices: --explain alone prints the explanation instead. */
static bool writes_matrices(const Options *o) {
    return !(o->explain && !o->output);
}

/* The npy file base and the number of input `index` in its names (-1: a single input). */
static const char *npy_base(const Run *r) {
    return r->opt.output ? r->opt.output : "align.npy";
}
static int npy_number(const Run *r, int index) {
    return r->several ? index : -1;
}

/* Writes (or keeps, for svg and html) the matrix of input `index`, and its explanation. */
static int deliver(Run *r, int index, Alignment *a, const Alignment *explained,
                   const StepTrace *trace, Error *err) {
    if (r->opt.explain && alignment_explain(stdout, explained, trace, err)) return -1;
    if (!writes_matrices(&r->opt)) return 0;
    if (r->opt.format == ALIGN_NPY)
        return alignment_write_npy(npy_base(r), npy_number(r, index), a, err);
    if (r->opt.format == ALIGN_SVG || r->opt.format == ALIGN_HTML) {
        a->number = index + 1;     /* a refused input is left out, but not renumbered */
        r->kept[r->n_kept++] = *a; /* the run owns it now */
        memset(a, 0, sizeof *a);
        return 0;
    }
    return alignment_write(r->out, r->opt.format, a, err);
}

/* One line for an input that gets no alignment. Its npy files of an earlier run go, so that
 * they cannot pass for this run's (the line says so). */
static int report_bad_input(Run *r, const char *what, int index, const char *msg, Error *err) {
    int removed = 0;
    if (r->opt.format == ALIGN_NPY && writes_matrices(&r->opt) &&
        alignment_remove_npy(npy_base(r), npy_number(r, index), &removed, err))
        return -1;
    char files[4096] = "";
    if (removed) npy_output_path(files, sizeof files, npy_base(r), npy_number(r, index), ".*", err);
    fprintf(stderr, "align: %s %d: %s%s%s%s\n", what, index + 1, msg,
            removed ? " (an earlier run's " : "", files, removed ? " removed)" : "");
    r->failures++;
    return 0;
}

/* Search, then alignment, of inputs [first, first + n). refusals (NULL, or one a text) holds
 * the reading's own verdict on each input: a message refuses it. */
static int align_chunk(Run *r, char *const *texts, char *const *refusals, int first, int n,
                       const char *what, Error *err) {
    TranslatedText out[CHUNK];
    if (translator_run(&r->translator, (const char *const *)texts + first, n, out, err)) return -1;
    int rc = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        const char *refusal = refusals ? refusals[first + k] : NULL;
        if (refusal || out[k].refused || out[k].best.count == 0) {
            rc = report_bad_input(r, what, first + k,
                                  refusal          ? refusal
                                  : out[k].refused ? out[k].error.msg
                                                   : "no translation found",
                                  err);
            if (rc == 0 && r->out) rc = alignment_write_missing(r->out, r->opt.format, err);
            continue;
        }
        const Hypothesis *h = &out[k].best.hyps[0];
        Alignment a = {0}, forced = {0};
        StepTrace trace = {0};
        if (out[k].unfamiliar)
            fprintf(stderr, "align: %s %d: the model does not know this text: %s\n", what,
                    first + k + 1,
                    r->nm.lossless ? "most of its characters never appeared in its training data"
                                   : "no word of it is known to the model");
        rc = alignment_from_hypothesis(&a, &r->nm, &out[k].source, h, err);
        /* --explain recomputes the steps by feeding the chosen tokens back in */
        if (rc == 0 && r->opt.explain)
            rc = force_align_ids(&r->forced, &out[k].source, h->tokens, h->len, h->complete,
                                 &forced, &trace, err);
        if (rc == 0) rc = deliver(r, first + k, &a, &forced, &trace, err);
        alignment_free(&a);
        alignment_free(&forced);
        step_trace_free(&trace);
    }
    translated_free(out, n);
    return rc;
}

/* --ref: the one input force-decoded against the given target. */
static int align_reference(Run *r, const char *text, Error *err) {
    Alignment a;
    StepTrace trace = {0};
    Error e;
    if (force_align(&r->forced, text, r->opt.ref, &a, r->opt.explain ? &trace : NULL, &e)) {
        if (report_bad_input(r, "argument", 0, e.msg, err)) return -1;
        return r->out ? alignment_write_missing(r->out, r->opt.format, err) : 0;
    }
    int rc = deliver(r, 0, &a, &a, &trace, err);
    alignment_free(&a);
    step_trace_free(&trace);
    return rc;
}

static int run_eval(Run *r, Error *err) {
    AerCounts c;
    size_t pairs;
    if (aer_evaluate(&r->forced, r->opt.pairs, r->opt.eval_gold, &c, &pairs, err)) return -1;
    printf("word alignment of %zu force-decoded pairs of %s against %s\n", pairs, r->opt.pairs,
           r->opt.eval_gold);
    printf("links: predicted %zu, gold %zu, matched %zu\n", c.predicted, c.gold, c.matched);
    printf("precision %.4f  recall %.4f  AER %.4f\n", aer_precision(&c), aer_recall(&c),
           aer_error_rate(&c));
    return 0;
}

/* Input sentences: the arguments, or every line of standard input. */
typedef struct {
    char **texts;
    char **refusals; /* [count] standard input's: why a line is refused as read, or NULL */
    int count;
    bool owned; /* lines read from standard input, freed at the end */
} Inputs;

static int read_inputs(Inputs *in, int argc, char **argv, Error *err) {
    if (argc > 0) {
        *in = (Inputs){.texts = argv, .count = argc};
        return 0;
    }
    *in = (Inputs){.owned = true};
    size_t cap = 0;
    for (;;) {
        char *line = NULL;
        size_t line_cap = 0;
        Error refusal;
        long len = read_sentence_line(stdin, in->count == 0, &line, &line_cap, &refusal);
        if (len < 0) {
            free(line);
            return len == -2 ? error_set(err, "cannot read standard input: %s", strerror(errno))
                             : 0;
        }
        if ((size_t)in->count == cap) {
            cap = cap ? 2 * cap : 64;
            char **grown = realloc(in->texts, cap * sizeof *grown);
            if (grown) in->texts = grown;
            char **grown_refusals = grown ? realloc(in->refusals, cap * sizeof *grown) : NULL;
            if (grown_refusals) in->refusals = grown_refusals;
            if (!grown_refusals) {
                free(line);
                return error_set(err, "out of memory reading standard input");
            }
        }
        char *why = NULL;
        if (refusal.msg[0] &&
            !(why = checked_strndup(refusal.msg, strlen(refusal.msg), "a message", err))) {
            free(line);
            return -1;
        }
        in->refusals[in->count] = why;
        in->texts[in->count++] = line;
    }
}

static void free_inputs(Inputs *in) {
    if (in->owned) {
        for (int i = 0; i < in->count; i++) free(in->texts[i]), free(in->refusals[i]);
        free(in->texts), free(in->refusals);
    }
}

/* -o PATH: its extension chooses the format or must agree with --format, and .txt is the
 * terminal's heatmap (text) unless --format names another format of lines. */
static const AlignFileRules OUTPUT_RULES = {.program = "align",
                                            .path_option = "-o",
                                            .format_option = "--format",
                                            .for_txt = ALIGN_TEXT,
                                            .for_other = ALIGN_TSV,
                                            .writes_npy_and_svg = true};

/* Parses the options; returns CLI_GO_ON, or the status to exit with. */
static int parse_options(Options *o, int argc, char **argv) {
    const char *format = NULL;
    const CliOption options[] = {OPT_TEXT("model", 'm', &o->model_path),
                                 OPT_TEXT("ref", 0, &o->ref),
                                 OPT_INT("beam", &o->beam, 1, 100),
                                 OPT_TEXT("format", 0, &format),
                                 OPT_TEXT("output", 'o', &o->output),
                                 OPT_FLAG("explain", 0, &o->explain),
                                 OPT_TEXT("eval-gold", 0, &o->eval_gold),
                                 OPT_TEXT("pairs", 0, &o->pairs),
                                 OPT_TEXT("compute", 0, &o->compute), /* float or int8 */
                                 OPT_END};
    *o = (Options){.beam = 1};
    int status = cli_parse("align", argc, argv, options, usage);
    if (status != CLI_GO_ON) return status;
    Error err;
    bool format_given = format != NULL;
    if (format_given && align_format_parse(format, &o->format, &err)) {
        return usage_error("align", "%s", err.msg);
    }
    ComputeType compute_type;
    if (compute_type_parse(o->compute, &compute_type, &err))
        return usage_error("align", "--compute: %s", err.msg);
    int texts = argc - optind;
    const char *problem = NULL;
    if (o->eval_gold || o->pairs) {
        if (!o->eval_gold || !o->pairs)
            problem = "--eval-gold and --pairs go together";
        else if (texts > 0 || o->ref || o->explain || o->output || format_given || o->beam != 1)
            problem = "--eval-gold takes only --pairs and -m";
    } else if (o->ref && texts != 1) {
        problem = "--ref needs exactly one TEXT argument";
    } else if (o->ref && o->beam != 1) {
        problem = "--ref force-decodes; it does not search with --beam";
    }
    if (problem) return usage_error("align", "%s", problem);
    if (o->output && align_format_for_path(o->output, format, &OUTPUT_RULES, &o->format, &err))
        return usage_error("align", "%s", err.msg);
    if (!format_given && !o->output) o->format = isatty(STDOUT_FILENO) ? ALIGN_TEXT : ALIGN_TSV;
    return CLI_GO_ON;
}

/* Aligns every input and writes the results; Err on failures that stop the run. */
static int align_inputs(Run *r, const Inputs *in, Error *err) {
    const char *what = in->owned ? "line" : "argument";
    r->several = in->count > 1;
    if (r->opt.format == ALIGN_SVG || r->opt.format == ALIGN_HTML) {
        r->kept = checked_calloc((size_t)in->count + 1, sizeof(Alignment), "alignments", err);
        if (!r->kept) return -1;
    }
    if (writes_matrices(&r->opt) && r->opt.format != ALIGN_NPY) {
        if (r->opt.output && (check_output_is_no_input(r->opt.output, r->opt.model_path, err) ||
                              output_file_open(&r->file, r->opt.output, false, err)))
            return -1;
        r->out = r->opt.output ? r->file.file : stdout;
    }
    int rc = 0;
    if (r->opt.ref)
        rc = align_reference(r, in->texts[0], err);
    else
        for (int first = 0; first < in->count && rc == 0; first += CHUNK)
            rc = align_chunk(r, in->texts, in->refusals, first,
                             in->count - first < CHUNK ? in->count - first : CHUNK, what, err);
    if (rc == 0 && r->opt.format == ALIGN_SVG && r->out)
        rc = alignment_write_svg(r->out, r->kept, r->n_kept, err);
    if (rc == 0 && r->opt.format == ALIGN_HTML && r->out)
        rc = alignment_write_html(r->out, r->kept, r->n_kept, err);
    if (rc == 0 && r->opt.output && r->out) rc = output_file_commit(&r->file, err);
    if (rc && r->opt.output) output_file_abort(&r->file);
    return rc;
}

int main(int argc, char **argv) {
    Run r = {0};
    int status = parse_options(&r.opt, argc, argv);
    if (status != CLI_GO_ON) return status;
    Error err;
    Inputs in = {0};
    int rc = load_model_compute(r.opt.model_path, r.opt.compute, &r.nm, &err);
    if (rc == 0) forced_decoder_init(&r.forced, &r.nm);
    if (rc == 0 && r.opt.eval_gold) {
        rc = run_eval(&r, &err);
    } else if (rc == 0) {
        rc = read_inputs(&in, argc - optind, argv + optind, &err);
        SearchOptions opt = {.beam = (int)r.opt.beam, .nbest = 1, .len_norm = 1.0};
        if (rc == 0 && !r.opt.ref) rc = translator_init(&r.translator, &r.nm, CHUNK, &opt, &err);
        if (rc == 0) rc = align_inputs(&r, &in, &err);
    }
    /* whatever went to stdout: the matrices, an explanation, the scores of --eval-gold */
    if (rc == 0) rc = flush_standard_output(&err);
    if (rc) fprintf(stderr, "align: %s\n", err.msg);
    for (int k = 0; k < r.n_kept; k++) alignment_free(&r.kept[k]);
    free(r.kept);
    free_inputs(&in);
    translator_free(&r.translator);
    forced_decoder_free(&r.forced);
    nmt_model_free(&r.nm);
    return rc || r.failures ? 1 : 0;
}

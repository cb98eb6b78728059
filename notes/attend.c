/*
 * attend.c: the course notes' hand computations of attention, exactly. Reads a worked example
 * (named matrices, token labels, the notes' published results; notes/worked.h has the language),
 * prints every step the notes compute by hand (Q, K, V, scores, scaling, exp, row sums,
 * softmax, the weighted sum) with 6 decimals and token labels, or as JSON, and with --check
 * says which of the published numbers are wrong.
 *
 * Exit status: 0, 1 when --check finds a published number off by more than the tolerance,
 * 2 for a usage error or bad input (one line on stderr naming FILE:LINE:COLUMN).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "notes/worked.h"
#include "tools/cli.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: attend [options] FILE\n"
            "Computes a worked example of attention exactly and prints every step.\n"
            "FILE holds named values, one a line (a matrix may go on over several lines):\n"
            "  X = [[1.0, 0.5], [0.3, 1.2]]   W_Q = ...   tokens = I love cats   # comment\n"
            "  self-attention:  X, W_Q, W_K, W_V      (Q = X W_Q: rows are tokens)\n"
            "  cross-attention: q (or Q), K, V        (source_tokens = labels of K's rows)\n"
            "  additive:        s, h, W_q, W_k, b, v  (e_i = v . tanh(W_q s + W_k h_i + b))\n"
            "  kind = self|cross|additive (default: from the names), score = dot|scaled_dot|"
            "general\n"
            "  expect.STEP = ... or expect.STEP[ROW] = ...: the notes' published results\n"
            "Options:\n"
            "  --format F       text or json (default text)\n"
            "  --score S        dot, scaled_dot or general, for a file without a score line\n"
            "                   (default scaled_dot; general needs W_a)\n"
            "  --check          compare the expect lines with the exact values; exit 1 if any\n"
            "                   differs by more than the tolerance\n"
            "  --tolerance X    the notes' rounding (default 0.005)\n"
            "  -o FILE          write the result to FILE (default: standard output)\n"
            "  -h, --help       this text\n"
            "Exit status: 0 done (and every published number agrees), 1 --check found a\n"
            "difference, 2 usage or input error.\n");
}

/* ---- labels ---- */

static const WorkedTokens *labels_of(const WorkedFile *wf, WorkedLabels which) {
    const WorkedTokens *t = which == WORKED_LABEL_TOKENS   ? &wf->tokens
                            : which == WORKED_LABEL_SOURCE ? &wf->source_tokens
                                                           : NULL;
    return t && t->count ? t : NULL;
}

/* ---- text ---- */

/* 6 decimals, without the "-0.000000" of a tiny negative number. */
static int format_fixed(char *buf, size_t size, double x) {
    if (fabs(x) < 5e-7) x = 0;
    return snprintf(buf, size, "%.6f", x);
}

/* NAME = [[a, b],   # label
 *         [c, d]]   # label
 * the way the notes lay out their matrices (and the way this tool reads them). */
static void print_matrix(FILE *out, const char *name, const WorkedMatrix *m,
                         const WorkedTokens *rows) {
    int width = 0;
    char num[64];
    for (int i = 0; i < m->rows * m->cols; i++) {
        int w = format_fixed(num, sizeof num, m->v[i]);
        if (w > width) width = w;
    }
    int indent = (int)strlen(name) + 3;
    int matrix = m->rows > 1;
    fprintf(out, "%s = %s", name, matrix ? "[" : "");
    for (int i = 0; i < m->rows; i++) {
        if (i > 0) fprintf(out, "%*s", indent + 1, "");
        fputc('[', out);
        for (int j = 0; j < m->cols; j++) {
            format_fixed(num, sizeof num, m->v[(size_t)i * m->cols + j]);
            fprintf(out, "%s%*s", j ? ", " : "", width, num);
        }
        fputc(']', out);
        if (matrix) fputs(i + 1 < m->rows ? "," : "]", out);
        if (rows && i < rows->count) fprintf(out, "   # %s", rows->words[i]);
        fputc('\n', out);
    }
}

static void print_text(FILE *out, const WorkedFile *wf, const WorkedRun *run) {
    fprintf(out, "# %s: kind %s, score %s", wf->path, worked_kind_name(run->kind),
            worked_score_name(run->score));
    if (run->score == WORKED_SCALED_DOT) fprintf(out, " (d_k = %d)", run->d_k);
    fputc('\n', out);
    const WorkedTokens *t[2] = {labels_of(wf, WORKED_LABEL_TOKENS),
                                labels_of(wf, WORKED_LABEL_SOURCE)};
    const char *const tname[2] = {"tokens", "source_tokens"};
    for (int k = 0; k < 2; k++) {
        if (!t[k]) continue;
        fprintf(out, "# %s:", tname[k]);
        for (int i = 0; i < t[k]->count; i++) fprintf(out, " %s", t[k]->words[i]);
        fputc('\n', out);
    }
    for (int i = 0; i < wf->n_inputs; i++) {
        const WorkedValue *v = &wf->inputs[i];
        fprintf(out, "\n# input %s (%d x %d)\n", v->name, v->m.rows, v->m.cols);
        int rows_are_tokens =
            strcmp(v->name, "X") == 0 || strcmp(v->name, "Q") == 0 || strcmp(v->name, "q") == 0;
        int rows_are_source =
            strcmp(v->name, "K") == 0 || strcmp(v->name, "V") == 0 || strcmp(v->name, "h") == 0;
        print_matrix(out, v->name, &v->m, rows_are_tokens ? t[0] : rows_are_source ? t[1] : NULL);
    }
    for (int k = 0; k < run->n_steps; k++) {
        const WorkedStep *s = &run->steps[k];
        fprintf(out, "\n# %s (%d x %d)", s->formula, s->m.rows, s->m.cols);
        const WorkedTokens *cols = labels_of(wf, s->col_labels);
        if (cols && cols->count == s->m.cols) {
            fprintf(out, "; columns:");
            for (int j = 0; j < cols->count; j++) fprintf(out, " %s", cols->words[j]);
        }
        fputc('\n', out);
        const WorkedTokens *rows = labels_of(wf, s->row_labels);
        print_matrix(out, s->name, &s->m, rows && rows->count == s->m.rows ? rows : NULL);
    }
}

/* The element's labels, "(我)" or "(我, 猫)", when the step has them. */
static void element_labels(char *buf, size_t size, const WorkedFile *wf, const WorkedStep *s,
                           int row, int col) {
    const WorkedTokens *r = labels_of(wf, s->row_labels), *c = labels_of(wf, s->col_labels);
    const char *rl = r && r->count == s->m.rows ? r->words[row] : NULL;
    const char *cl = c && c->count == s->m.cols ? c->words[col] : NULL;
    if (rl && cl)
        snprintf(buf, size, " (%.60s, %.60s)", rl, cl);
    else if (rl || cl)
        snprintf(buf, size, " (%.60s)", rl ? rl : cl);
    else
        buf[0] = '\0';
}

static void print_check_text(FILE *out, const WorkedFile *wf, const WorkedRun *run,
                             const WorkedCheck *chk, double tolerance) {
    fprintf(out, "\n# check: the published numbers against the exact ones (tolerance %g)\n",
            tolerance);
    int d = 0, total = 0, bad_lines = 0;
    for (int i = 0; i < wf->n_expects; i++) {
        const WorkedValue *e = &wf->expects[i];
        int differ = 0;
        while (d + differ < chk->count && chk->diffs[d + differ].expect == i) differ++;
        char what[96];
        if (e->column >= 0)
            snprintf(what, sizeof what, "%s[%d,%d]", e->name, e->row, e->column);
        else if (e->row >= 0)
            snprintf(what, sizeof what, "%s[%d]", e->name, e->row);
        else
            snprintf(what, sizeof what, "%s", e->name);
        total += chk->compared[i];
        if (differ == 0) {
            if (chk->compared[i] == 1)
                fprintf(out, "ok     %-12s line %d: agrees\n", what, e->line);
            else
                fprintf(out, "ok     %-12s line %d: all %d agree\n", what, e->line,
                        chk->compared[i]);
            continue;
        }
        bad_lines++;
        fprintf(out, "WRONG  %-12s line %d: %d of %d differ\n", what, e->line, differ,
                chk->compared[i]);
        for (int k = 0; k < differ; k++, d++) {
            const WorkedDiff *df = &chk->diffs[d];
            const WorkedStep *s = &run->steps[df->step];
            char labels[140], exact[64], off[64];
            element_labels(labels, sizeof labels, wf, s, df->row, df->col);
            format_fixed(exact, sizeof exact, df->exact);
            format_fixed(off, sizeof off, df->published - df->exact);
            fprintf(out, "         %s[%d,%d]%s: published %g, exact %s (off by %s)\n", s->name,
                    df->row, df->col, labels, df->published, exact, off);
        }
    }
    fprintf(out, "# %d of %d published numbers differ, in %d of %d expect lines\n", chk->count,
            total, bad_lines, wf->n_expects);
}

/* ---- JSON ---- */

static void json_string(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

/* The shortest of %.15g..%.17g that reads back as the same double. */
static void json_number(FILE *out, double x) {
    char buf[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, x);
        if (strtod(buf, NULL) == x) break;
    }
    fputs(buf, out);
}

static void json_matrix(FILE *out, const WorkedMatrix *m) {
    fputc('[', out);
    for (int i = 0; i < m->rows; i++) {
        fputs(i ? ", [" : "[", out);
        for (int j = 0; j < m->cols; j++) {
            if (j) fputs(", ", out);
            json_number(out, m->v[(size_t)i * m->cols + j]);
        }
        fputc(']', out);
    }
    fputc(']', out);
}

static void json_tokens(FILE *out, const WorkedTokens *t) {
    if (!t->count) {
        fputs("null", out);
        return;
    }
    fputc('[', out);
    for (int i = 0; i < t->count; i++) {
        if (i) fputs(", ", out);
        json_string(out, t->words[i]);
    }
    fputc(']', out);
}

static void print_json(FILE *out, const WorkedFile *wf, const WorkedRun *run,
                       const WorkedCheck *chk, double tolerance) {
    fputs("{\"file\": ", out);
    json_string(out, wf->path);
    fprintf(out, ",\n \"kind\": \"%s\", \"score\": \"%s\", \"d_k\": %d,\n \"tokens\": ",
            worked_kind_name(run->kind), worked_score_name(run->score), run->d_k);
    json_tokens(out, &wf->tokens);
    fputs(", \"source_tokens\": ", out);
    json_tokens(out, &wf->source_tokens);
    fputs(",\n \"inputs\": {", out);
    for (int i = 0; i < wf->n_inputs; i++) {
        fputs(i ? ",\n  " : "\n  ", out);
        json_string(out, wf->inputs[i].name);
        fputs(": ", out);
        json_matrix(out, &wf->inputs[i].m);
    }
    fputs("},\n \"step_order\": [", out);
    for (int k = 0; k < run->n_steps; k++) {
        if (k) fputs(", ", out);
        json_string(out, run->steps[k].name);
    }
    fputs("],\n \"steps\": {", out);
    for (int k = 0; k < run->n_steps; k++) {
        const WorkedStep *s = &run->steps[k];
        fputs(k ? ",\n  " : "\n  ", out);
        json_string(out, s->name);
        fputs(": {\"formula\": ", out);
        json_string(out, s->formula);
        fprintf(out, ", \"rows\": %d, \"cols\": %d, \"values\": ", s->m.rows, s->m.cols);
        json_matrix(out, &s->m);
        fputc('}', out);
    }
    fputc('}', out);
    if (chk) {
        int total = 0;
        for (int i = 0; i < wf->n_expects; i++) total += chk->compared[i];
        fputs(",\n \"check\": {\"tolerance\": ", out);
        json_number(out, tolerance);
        fprintf(out, ", \"compared\": %d, \"differ\": %d, \"differences\": [", total, chk->count);
        for (int d = 0; d < chk->count; d++) {
            const WorkedDiff *df = &chk->diffs[d];
            fputs(d ? ",\n   " : "\n   ", out);
            fputs("{\"step\": ", out);
            json_string(out, run->steps[df->step].name);
            fprintf(out, ", \"line\": %d, \"row\": %d, \"col\": %d, \"published\": ",
                    wf->expects[df->expect].line, df->row, df->col);
            json_number(out, df->published);
            fputs(", \"exact\": ", out);
            json_number(out, df->exact);
            fputc('}', out);
        }
        fputs("]}", out);
    }
    fputs("}\n", out);
}

/* ---- main ---- */

int main(int argc, char **argv) {
    bool check = false;
    double tolerance = 0.005;
    WorkedScore score = WORKED_SCORE_NONE;
    const char *out_path = NULL, *format = NULL, *score_name = NULL;
    const CliOption options[] = {
        OPT_TEXT("format", 0, &format),     OPT_TEXT("score", 0, &score_name),
        OPT_FLAG("check", 0, &check),       OPT_REAL("tolerance", &tolerance, 0, 1e9),
        OPT_TEXT("output", 'o', &out_path), OPT_END};
    int parsed = cli_parse("attend", argc, argv, options, usage);
    if (parsed != CLI_GO_ON) return parsed;
    Error err;
    if (format && strcmp(format, "text") && strcmp(format, "json")) {
        return usage_error("attend", "invalid --format '%.60s' (text or json)", format);
    }
    int json = format && strcmp(format, "json") == 0;
    if (score_name && (worked_score_parse(score_name, &score) || score == WORKED_ADDITIVE_SCORE)) {
        return usage_error("attend",
                           "invalid --score '%.60s' (dot, scaled_dot or general; additive "
                           "attention is chosen by its inputs)",
                           score_name);
    }
    if (argc - optind != 1)
        return usage_error("attend", "%s", optind < argc ? "one FILE only" : "no FILE given");
    if (out_path && same_file(argv[optind], out_path)) { /* the rename would replace the file */
        fprintf(stderr, "attend: %s and %s are the same file; write the output elsewhere\n",
                argv[optind], out_path);
        return 2;
    }

    WorkedFile wf;
    WorkedRun run;
    WorkedCheck chk = {0};
    if (worked_read(&wf, argv[optind], &err)) {
        fprintf(stderr, "attend: %s\n", err.msg);
        return 2;
    }
    if (worked_run(&run, &wf, score, &err)) {
        fprintf(stderr, "attend: %s\n", err.msg);
        worked_file_free(&wf);
        return 2;
    }
    int status = 0;
    if (check && wf.n_expects == 0) {
        fprintf(stderr, "attend: %s: --check, but the file has no expect lines to check\n",
                wf.path);
        status = 2;
    } else if (check && worked_check(&chk, &run, &wf, tolerance, &err)) {
        fprintf(stderr, "attend: %s\n", err.msg);
        status = 2;
    }
    OutputFile file = {0};
    if (!status && out_path && output_file_open(&file, out_path, false, &err)) {
        fprintf(stderr, "attend: %s\n", err.msg);
        status = 2;
    }
    if (!status) {
        FILE *out = out_path ? file.file : stdout;
        if (json)
            print_json(out, &wf, &run, check ? &chk : NULL, tolerance);
        else {
            print_text(out, &wf, &run);
            if (check) print_check_text(out, &wf, &run, &chk, tolerance);
        }
        if (out_path ? output_file_commit(&file, &err) : flush_standard_output(&err)) {
            fprintf(stderr, "attend: %s\n", err.msg);
            status = 2;
        } else if (check && chk.count > 0) {
            status = 1;
        }
    }
    worked_check_free(&chk);
    worked_run_free(&run);
    worked_file_free(&wf);
    return status;
}

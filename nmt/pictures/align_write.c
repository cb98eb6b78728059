/*
 * align_write.c: the streaming formats of alignments (tsv, json, marian, pharaoh, text) and
 * the npy files (see align_write.h). The writers check the stream once at the end instead of
 * after every print.
 */
#include "nmt/pictures/align_write.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "data/tokenizer.h"
#include "base/files.h"
#include "nmt/pictures/markup.h"
#include "nmt/formats/npy.h"
#include "nmt/words.h"

/* ---- formats ---------------------------------------------------------------------------- */

static const char *const FORMAT_NAMES[] = {
    [ALIGN_TSV] = "tsv",         [ALIGN_NPY] = "npy",   [ALIGN_JSON] = "json",
    [ALIGN_SVG] = "svg",         [ALIGN_TEXT] = "text", [ALIGN_MARIAN] = "marian",
    [ALIGN_PHARAOH] = "pharaoh", [ALIGN_HTML] = "html",
};

int align_format_parse(const char *name, AlignFormat *out, Error *err) {
    for (size_t f = 0; f < sizeof FORMAT_NAMES / sizeof FORMAT_NAMES[0]; f++)
        if (strcmp(name, FORMAT_NAMES[f]) == 0) {
            *out = (AlignFormat)f;
            return 0;
        }
    char quoted[96];
    return error_set(err,
                     "unknown format '%s' (expected tsv, npy, json, svg, text, marian, "
                     "pharaoh or html)",
                     text_for_message(quoted, sizeof quoted, name, 60));
}

bool align_format_streams(AlignFormat format) {
    return format != ALIGN_NPY && format != ALIGN_SVG && format != ALIGN_HTML;
}

/* The extensions of the formats (.txt apart: it suits every format of lines), and those of
 * kinds of file no format is: a picture, a document, a table. */
static const struct {
    const char *ext;
    AlignFormat format;
} FORMAT_EXTENSIONS[] = {{".tsv", ALIGN_TSV},    {".npy", ALIGN_NPY}, {".json", ALIGN_JSON},
                         {".jsonl", ALIGN_JSON}, {".svg", ALIGN_SVG}, {".html", ALIGN_HTML},
                         {".htm", ALIGN_HTML}};
static const char *const FOREIGN_EXTENSIONS[] = {".png", ".jpg",  ".jpeg", ".gif", ".webp", ".bmp",
                                                 ".tif", ".tiff", ".pdf",  ".eps", ".ps",   ".csv",
                                                 ".xml", ".md",   ".npz",  ".xls", ".xlsx"};

int align_format_for_path(const char *path, const char *given, const AlignFileRules *rules,
                          AlignFormat *format, Error *err) {
    char quoted[96];
    text_for_message(quoted, sizeof quoted, path, 60);
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    const char *ext = strrchr(name, '.');
    if (!ext || ext == name) ext = ""; /* a hidden file's leading dot starts no extension */
    for (size_t k = 0; k < sizeof FOREIGN_EXTENSIONS / sizeof FOREIGN_EXTENSIONS[0]; k++)
        if (strcasecmp(ext, FOREIGN_EXTENSIONS[k]) == 0)
            return error_set(err, "%s %s: %s writes no %s file; a picture is %s (formats: %s)",
                             rules->path_option, quoted, rules->program, FOREIGN_EXTENSIONS[k],
                             rules->writes_npy_and_svg ? ".svg or .html" : ".html",
                             rules->writes_npy_and_svg ? ".tsv .npy .json .svg .txt .html"
                                                       : ".tsv .json .txt .html");
    /* messages spell an extension as the tables do: the user's bytes are in the quoted path */
    const char *listed = NULL;
    AlignFormat by_name = rules->for_other;
    if (strcasecmp(ext, ".txt") == 0) {
        listed = ".txt";
        by_name = given && align_format_streams(*format) ? *format : rules->for_txt;
    }
    for (size_t k = 0; k < sizeof FORMAT_EXTENSIONS / sizeof FORMAT_EXTENSIONS[0]; k++)
        if (strcasecmp(ext, FORMAT_EXTENSIONS[k].ext) == 0) {
            listed = FORMAT_EXTENSIONS[k].ext;
            by_name = FORMAT_EXTENSIONS[k].format;
        }
    if (given && listed && by_name != *format)
        return error_set(err, "%s %s: the name ends in %s, which is not the %s %s given",
                         rules->path_option, quoted, listed, rules->format_option, given);
    if (!given) *format = by_name;
    if (!rules->writes_npy_and_svg && (*format == ALIGN_NPY || *format == ALIGN_SVG))
        return error_set(err, "%s %s: %s writes no %s alignments; use bin/align",
                         rules->path_option, quoted, rules->program, FORMAT_NAMES[*format]);
    return 0;
}

/* tsv: a corner cell and the source tokens, then each output token with its weights. */
static void write_tsv(FILE *out, const Alignment *a) {
    for (int i = 0; i < a->cols; i++) fprintf(out, "\t%s", a->src_tokens[i]);
    fputc('\n', out);
    for (int t = 0; t < a->rows; t++) {
        fputs(a->tgt_tokens[t], out);
        for (int i = 0; i < a->cols; i++)
            fprintf(out, "\t%.*g", REAL_DIGITS, (double)a->alpha[(size_t)t * a->cols + i]);
        fputc('\n', out);
    }
}

/* JSON has no NaN or infinity: such a value is null. */
static void json_number(FILE *out, double x) {
    if (isfinite(x))
        fprintf(out, "%.*g", REAL_DIGITS, x);
    else
        fputs("null", out);
}

static void write_json(FILE *out, const Alignment *a) {
    fputs("{\"source\": ", out);
    json_write_string(out, a->source);
    fputs(", \"translation\": ", out);
    json_write_string(out, a->translation);
    fputs(", \"src_tokens\": ", out);
    json_write_string_list(out, a->src_tokens, a->cols, ", ");
    fputs(", \"tgt_tokens\": ", out);
    json_write_string_list(out, a->tgt_tokens, a->rows, ", ");
    fputs(", \"alpha\": [", out);
    for (int t = 0; t < a->rows; t++) {
        fputs(t ? ", [" : "[", out);
        for (int i = 0; i < a->cols; i++) {
            if (i) fputs(", ", out);
            json_number(out, a->alpha[(size_t)t * a->cols + i]);
        }
        fputc(']', out);
    }
    fputs("], \"prob\": [", out);
    for (int t = 0; t < a->rows; t++) {
        if (t) fputs(", ", out);
        json_number(out, a->prob[t]);
    }
    fputs("]}\n", out);
}

/* marian: "translation ||| w,w,w w,w,w": one group per output token. */
static void write_marian(FILE *out, const Alignment *a) {
    fprintf(out, "%s |||", a->translation);
    for (int t = 0; t < a->rows; t++) {
        fputc(' ', out);
        for (int i = 0; i < a->cols; i++)
            fprintf(out, i ? ",%.6g" : "%.6g", (double)a->alpha[(size_t)t * a->cols + i]);
    }
    fputc('\n', out);
}

static int write_pharaoh(FILE *out, const Alignment *a, Error *err) {
    WordLink *links;
    int n;
    if (alignment_word_links(a, &links, &n, err)) return -1;
    for (int k = 0; k < n; k++) fprintf(out, k ? " %d-%d" : "%d-%d", links[k].src, links[k].tgt);
    fputc('\n', out);
    free(links);
    return 0;
}

/* ---- terminal text ---- */

static void pad(FILE *out, int n) {
    for (int i = 0; i < n; i++) fputc(' ', out);
}

/* The shade of a weight, from blank (below 0.1) to full block (0.7 and above). */
static const char *shade(double w) {
    return w < 0.1 ? " " : w < 0.3 ? "\u2591" : w < 0.5 ? "\u2592" : w < 0.7 ? "\u2593" : "\u2588";
}

enum { TEXT_MIN_CELL = 3, TEXT_MAX_CELL = 6, TEXT_MAX_ROW_LABEL = 16 };

static void write_text(FILE *out, const Alignment *a) {
    char label[LABEL_BYTES];
    int cell = TEXT_MIN_CELL, row_label = 1;
    for (int i = 0; i < a->cols; i++) {
        int w = label_fit(label, sizeof label, a->src_tokens[i], TEXT_MAX_CELL);
        if (w > cell) cell = w;
    }
    for (int t = 0; t < a->rows; t++) {
        int w = label_fit(label, sizeof label, a->tgt_tokens[t], TEXT_MAX_ROW_LABEL);
        if (w > row_label) row_label = w;
    }
    fprintf(out, "source: %s\n%s: %s\n", a->source, a->reference ? "target" : "output",
            a->translation);
    pad(out, row_label + 1);
    for (int i = 0; i < a->cols; i++) {
        int w = label_fit(label, sizeof label, a->src_tokens[i], cell);
        fputs(label, out);
        if (i + 1 < a->cols) pad(out, cell + 1 - w);
    }
    fputc('\n', out);
    for (int t = 0; t < a->rows; t++) {
        const real *row = a->alpha + (size_t)t * a->cols;
        int w = label_fit(label, sizeof label, a->tgt_tokens[t], row_label);
        fputs(label, out);
        pad(out, row_label + 1 - w);
        int best = 0;
        for (int i = 0; i < a->cols; i++) {
            for (int k = 0; k < cell; k++) fputs(shade(row[i]), out);
            fputc(' ', out);
            if (row[i] > row[best]) best = i;
        }
        fprintf(out, " %s %.2f\n", a->src_tokens[best], (double)row[best]);
    }
    fputs("(shades: \u2591 0.1+  \u2592 0.3+  \u2593 0.5+  \u2588 0.7+; "
          "right: the source token each output token attends to most)\n",
          out);
}

int alignment_write(FILE *out, AlignFormat format, const Alignment *a, Error *err) {
    switch (format) {
    case ALIGN_TSV:
        write_tsv(out, a);
        break;
    case ALIGN_JSON:
        write_json(out, a);
        break;
    case ALIGN_MARIAN:
        write_marian(out, a);
        break;
    case ALIGN_PHARAOH:
        if (write_pharaoh(out, a, err)) return -1;
        break;
    case ALIGN_TEXT:
        write_text(out, a);
        break;
    case ALIGN_NPY:
    case ALIGN_SVG:
    case ALIGN_HTML:
        return error_set(err, "the %s format is not written one sentence at a time",
                         FORMAT_NAMES[format]);
    }
    return stream_status(out, err);
}

int alignment_write_missing(FILE *out, AlignFormat format, Error *err) {
    if (format == ALIGN_MARIAN || format == ALIGN_PHARAOH) fputc('\n', out);
    if (format == ALIGN_JSON) fputs("null\n", out);
    return stream_status(out, err);
}

/* ---- npy -------------------------------------------------------------------------------- */

int npy_output_path(char *buf, size_t size, const char *base, int index, const char *suffix,
                    Error *err) {
    size_t len = strlen(base);
    if (len >= 4 && strcmp(base + len - 4, ".npy") == 0) len -= 4;
    int n = index >= 0 ? snprintf(buf, size, "%.*s.%d%s", (int)len, base, index, suffix)
                       : snprintf(buf, size, "%.*s%s", (int)len, base, suffix);
    if (n < 0 || (size_t)n >= size) return error_set(err, "%s: path too long", base);
    return 0;
}

static int write_token_file(const char *path, char *const *tokens, int n, Error *err) {
    OutputFile o;
    if (output_file_open(&o, path, false, err)) return -1;
    for (int i = 0; i < n; i++) fprintf(o.file, "%s\n", tokens[i]);
    return output_file_commit(&o, err);
}

int alignment_remove_npy(const char *base, int index, int *removed, Error *err) {
    static const char *const suffixes[] = {".npy", ".src.txt", ".tgt.txt"};
    char path[4096];
    *removed = 0;
    for (int k = 0; k < 3; k++) {
        if (npy_output_path(path, sizeof path, base, index, suffixes[k], err)) return -1;
        if (unlink(path) == 0)
            ++*removed;
        else if (errno != ENOENT)
            return error_set(err, "cannot remove %s: %s", path, strerror(errno));
    }
    return 0;
}

int alignment_write_npy(const char *base, int index, const Alignment *a, Error *err) {
    char path[4096];
    size_t cells = (size_t)a->rows * a->cols, shape[2] = {(size_t)a->rows, (size_t)a->cols};
    float *matrix = checked_calloc(cells + 1, sizeof(float), "npy matrix", err);
    if (!matrix) return -1;
    for (size_t k = 0; k < cells; k++) matrix[k] = (float)a->alpha[k];
    int rc = npy_output_path(path, sizeof path, base, index, ".npy", err) ||
                     npy_write(path, NPY_F4, 2, shape, matrix, err) ||
                     npy_output_path(path, sizeof path, base, index, ".src.txt", err) ||
                     write_token_file(path, a->src_tokens, a->cols, err) ||
                     npy_output_path(path, sizeof path, base, index, ".tgt.txt", err) ||
                     write_token_file(path, a->tgt_tokens, a->rows, err)
                 ? -1
                 : 0;
    free(matrix);
    return rc;
}

/*
 * align_write.h: alignments written out: the formats of bin/align (streaming text formats,
 * one SVG document, npy files), the format an output file's name asks for, and the
 * step-by-step --explain text. Nothing here prints to stderr: failures come back as an Error.
 */
#ifndef NMT_ALIGN_WRITE_H
#define NMT_ALIGN_WRITE_H

#include <stdbool.h>
#include <stdio.h>

#include "nmt/alignment.h"

typedef enum {
    ALIGN_TSV,
    ALIGN_NPY,
    ALIGN_JSON,
    ALIGN_SVG,
    ALIGN_TEXT,
    ALIGN_MARIAN,
    ALIGN_PHARAOH,
    ALIGN_HTML,
} AlignFormat;

/* "tsv", "npy", "json", "svg", "text", "marian", "pharaoh" or "html". */
int align_format_parse(const char *name, AlignFormat *out, Error *err);

/* True for the formats written one sentence at a time to a stream (all but npy, svg and html). */
bool align_format_streams(AlignFormat format);

/* What a program that writes alignments to a named file (bin/align's -o, bin/translate's
 * --align) makes of the name, and how its messages name it and its options. */
typedef struct {
    const char *program, *path_option, *format_option; /* "align", "-o", "--format" */
    AlignFormat for_txt;     /* what .txt chooses: every format of lines suits a text file */
    AlignFormat for_other;   /* what a name of no listed extension gets (weights.dat, links) */
    bool writes_npy_and_svg; /* false: those two are refused, pointing to bin/align */
} AlignFileRules;

/* The format of the alignment file at path. given is the text of the program's format option,
 * *format already holding it parsed, or NULL: then the extension chooses the format (.tsv .npy
 * .json .jsonl .svg .html .htm, .txt as rules say, any other name rules->for_other). An error,
 * a one-line message naming the file and the value, when given disagrees with the extension
 * (.txt takes any format of lines), when the extension is that of a kind of file no format is
 * (.png, .pdf, .csv...: a picture's name must not hold text), or when the program does not
 * write the format. Checks the name only: nothing is opened. */
int align_format_for_path(const char *path, const char *given, const AlignFileRules *rules,
                          AlignFormat *format, Error *err);

/* Writes one sentence in a streaming format. Between sentences: a blank line for tsv and
 * text; json, marian and pharaoh are one line per sentence. */
int alignment_write(FILE *out, AlignFormat format, const Alignment *a, Error *err);

/* What a streaming format writes for an input that could not be aligned, so line formats
 * stay in step with their input: an empty line (marian, pharaoh), "null" (json), nothing
 * (tsv, text). */
int alignment_write_missing(FILE *out, AlignFormat format, Error *err);

/* One standalone SVG document with a labelled heatmap per alignment, stacked vertically. */
int alignment_write_svg(FILE *out, const Alignment *list, int n, Error *err);

/* One self-contained interactive HTML page (align_html.c): a heatmap per alignment and, for
 * the output token pointed at or focused, that step of the softmax worked out. */
int alignment_write_html(FILE *out, const Alignment *list, int n, Error *err);

/* The file names of sentence `index` (-1: no index) for the npy format: base minus a
 * trailing ".npy", then ".INDEX" when indexed, then suffix (".npy", ".src.txt", ".tgt.txt"). */
int npy_output_path(char *buf, size_t size, const char *base, int index, const char *suffix,
                    Error *err);

/* Writes the matrix as float32 [rows, cols] to the .npy path and the token lists (one per
 * line) to the .src.txt and .tgt.txt paths beside it; index as in npy_output_path. */
int alignment_write_npy(const char *base, int index, const Alignment *a, Error *err);

/* Removes the three files alignment_write_npy would write for (base, index), where they exist:
 * those of an input that has none now, left by an earlier run. *removed: how many were. */
int alignment_remove_npy(const char *base, int index, int *removed, Error *err);

/* Explains every step of a force-decoded sentence for a learner: the query, the scores, the
 * softmax done by hand, the context vector and the chosen token. */
int alignment_explain(FILE *out, const Alignment *a, const StepTrace *trace, Error *err);

#endif

/*
 * curves.h: training curves. Reads the train_log.tsv files bin/train writes and draws them as
 * one standalone SVG chart: training loss and dev loss (top), dev BLEU (bottom), each against
 * steps (left) and against wall time (right), several runs overlaid in their own colours.
 * bin/train redraws OUT/curves.svg at every validation; bin/plot overlays any logs.
 * Nothing here prints: problems come back as an Error naming the file and line.
 */
#ifndef NMT_TRAIN_CURVES_H
#define NMT_TRAIN_CURVES_H

#include <stdio.h>

#include "base/base.h"

/* One line of a log. The dev values are NaN on lines written between validations. */
typedef struct {
    double step, loss, dev_loss, dev_bleu, elapsed_s;
} CurvePoint;

/* One log: its points in file order and the name the legend gives it (the log's folder). */
typedef struct {
    char *label;
    CurvePoint *points; /* [n] */
    int n;
} CurveRun;

/* Reads a train_log.tsv: the header line names the columns (step, loss, dev_loss, dev_bleu
 * and elapsed_s must be among them), then one line per logged step. Errors name PATH:LINE. */
int curves_read_log(const char *path, CurveRun *run, Error *err);

/* Frees what curves_read_log allocated; harmless on a zeroed or half-read run. */
void curve_run_free(CurveRun *run);

/* The chart of n runs as one SVG document. */
int curves_write_svg(FILE *out, const CurveRun *runs, int n, Error *err);

/* bin/train's call after each validation: redraws curves.svg in the log's folder from the
 * whole log, written to a temporary file and renamed, so a reader never sees half a chart. */
int curves_update(const char *log_path, Error *err);

#endif

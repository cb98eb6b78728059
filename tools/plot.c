/*
 * plot.c: overlays the training curves of several runs in one SVG chart: each LOG is a
 * train_log.tsv that bin/train wrote, named in the legend by its folder. The reading and the
 * drawing are train/curves.c; this file reads the options.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/files.h"
#include "base/usage.h"
#include "base/utf8.h"
#include "tools/cli.h"
#include "train/curves.h"

static void usage(FILE *out) {
    fputs("usage: plot LOG.tsv [LOG.tsv ...] -o FILE.svg\n"
          "Draws the training curves of each LOG (a train_log.tsv written by bin/train):\n"
          "training loss and dev loss, and dev BLEU, against steps and against wall time,\n"
          "one colour per run, named by the LOG's folder. bin/train draws its own run into\n"
          "OUT_DIR/curves.svg at every validation.\n"
          "  -o, --output FILE  the SVG file to write (required; through FILE.tmp.*, renamed\n"
          "                     when complete)\n"
          "  -h, --help         this text\n"
          "A log that cannot be read is a one-line error naming its file and line.\n",
          out);
}

int main(int argc, char **argv) {
    const char *output = NULL;
    const CliOption options[] = {OPT_TEXT("output", 'o', &output), OPT_END};
    int status = cli_parse("plot", argc, argv, options, usage);
    if (status != CLI_GO_ON) return status;
    int n = argc - optind;
    if (n == 0 || !output)
        return usage_error("plot", "%s", n == 0 ? "no LOG.tsv given" : "-o FILE.svg is required");
    for (int k = 0; k < n; k++)
        if (same_file(argv[optind + k], output)) { /* the rename would replace the log */
            fprintf(stderr, "plot: %s and %s are the same file; write the picture elsewhere\n",
                    argv[optind + k], output);
            return 1;
        }
    /* a picture named .png that holds SVG opens nowhere: say so now, as align does */
    const char *base = strrchr(output, '/') ? strrchr(output, '/') + 1 : output;
    const char *dot = strrchr(base, '.');
    if (dot && dot != base && strcasecmp(dot, ".svg") != 0) {
        char quoted[96];
        return usage_error("plot", "-o %s: plot writes SVG; name the picture .svg",
                           text_for_message(quoted, sizeof quoted, output, 60));
    }
    Error err;
    CurveRun *runs = checked_calloc((size_t)n, sizeof *runs, "runs", &err);
    int rc = runs ? 0 : -1;
    for (int k = 0; k < n && rc == 0; k++) rc = curves_read_log(argv[optind + k], &runs[k], &err);
    OutputFile file;
    if (rc == 0) rc = output_file_open(&file, output, false, &err);
    if (rc == 0) {
        rc = curves_write_svg(file.file, runs, n, &err);
        if (rc) error_prefix(&err, "%s: ", output);
        if (rc == 0)
            rc = output_file_commit(&file, &err);
        else
            output_file_abort(&file);
    }
    if (rc) fprintf(stderr, "plot: %s\n", err.msg);
    for (int k = 0; runs && k < n; k++) curve_run_free(&runs[k]);
    free(runs);
    return rc ? 1 : 0;
}

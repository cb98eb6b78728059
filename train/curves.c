/*
 * curves.c: training logs read back and drawn as an SVG chart (see curves.h). Four panels:
 * loss and dev BLEU by rows, steps and wall time by columns, so both questions ("how many
 * steps?" and "how long?") read off one picture. Axes are linear and start at 0; ticks are
 * 1, 2 or 5 times a power of ten. A value the chart cannot draw (negative, or so large that
 * an axis would overflow to infinity) is refused when the log is read, naming its line.
 */
#include "train/curves.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/files.h"
#include "base/utf8.h"
#include "nmt/pictures/markup.h"

/* ---- reading a log ---------------------------------------------------------------------- */

void curve_run_free(CurveRun *run) {
    free(run->label);
    free(run->points);
    *run = (CurveRun){0};
}

/* The columns a chart needs, by their header names. */
enum { COL_STEP, COL_LOSS, COL_DEV_LOSS, COL_DEV_BLEU, COL_ELAPSED, N_COLS };
static const char *const COL_NAMES[N_COLS] = {"step", "loss", "dev_loss", "dev_bleu", "elapsed_s"};
enum { MAX_FIELDS = 64 };

/* Splits line at tabs in place; returns the number of fields (MAX_FIELDS + 1 when more). */
static int split_tabs(char *line, char **fields) {
    int n = 0;
    for (char *p = line;; p++) {
        if (n == MAX_FIELDS) return MAX_FIELDS + 1;
        fields[n++] = p;
        p = strchr(p, '\t');
        if (!p) return n;
        *p = '\0';
    }
}

/* The folder of path, normalised ("runs/toy", not "configs/../runs/toy"), which names a run in
 * the legend ("." for a bare file name). */
static char *folder_of(const char *path, Error *err) {
    const char *slash = strrchr(path, '/');
    size_t len = slash ? (size_t)(slash - path) : 1;
    if (slash == path) len = 1; /* "/train_log.tsv" */
    char *label = checked_calloc(len + 2, 1, "run label", err);
    if (label) memcpy(label, slash ? path : ".", len);
    if (label) path_normalise(label);
    return label;
}

/* The largest value an axis can hold: its top, the next tick of 1, 2 or 5 times a power of ten
 * above the largest value, stays finite (near DBL_MAX it would be infinite and the ticks
 * would never end). Every column drawn (steps, seconds, losses, BLEU) is at least 0. */
#define CURVE_VALUE_MAX 1e300

/* One field as a number; empty dev fields (lines between validations) are NaN. Returns 0, -1
 * for text that is not a number, -2 for a number the chart cannot draw. */
static int parse_field(const char *text, bool may_be_empty, double *out) {
    if (*text == '\0' && may_be_empty) return *out = NAN, 0;
    char *end;
    errno = 0;
    *out = strtod(text, &end);
    if (*text == '\0' || *end != '\0' || errno == ERANGE || !isfinite(*out)) return -1;
    return *out >= 0 && *out <= CURVE_VALUE_MAX ? 0 : -2;
}

static int read_points(FILE *in, const char *path, CurveRun *run, Error *err) {
    char *line = NULL, *fields[MAX_FIELDS];
    size_t cap = 0, room = 0;
    int col[N_COLS], n_fields = 0, rc = 0;
    for (long number = 1;; number++) {
        long len = read_line(in, &line, &cap);
        if (len == -2 || len == -3) {
            rc = len == -2 ? error_set(err, "cannot read %s: %s", path, strerror(errno))
                           : error_set(err, "%s:%ld: %s", path, number, LINE_TOO_LONG);
            break;
        }
        if (len == -1) {
            if (number == 1)
                rc = error_set(err, "%s: empty, expected a training log", path);
            else if (run->n == 0)
                rc = error_set(err, "%s: no steps logged yet", path);
            break;
        }
        int n = split_tabs(line, fields);
        if (number == 1) { /* the header says where each column is */
            n_fields = n;
            for (int c = 0; c < N_COLS && rc == 0; c++) {
                col[c] = -1;
                for (int f = 0; f < n && f < MAX_FIELDS; f++)
                    if (strcmp(fields[f], COL_NAMES[c]) == 0) col[c] = f;
                if (col[c] < 0)
                    rc = error_set(err, "%s:1: not a training log: no '%s' column in the header",
                                   path, COL_NAMES[c]);
            }
            if (rc) break;
            continue;
        }
        if (n != n_fields) {
            rc = error_set(err, "%s:%ld: %d columns, expected %d as in the header", path, number, n,
                           n_fields);
            break;
        }
        CurvePoint p;
        double *values[N_COLS] = {&p.step, &p.loss, &p.dev_loss, &p.dev_bleu, &p.elapsed_s};
        for (int c = 0; c < N_COLS && rc == 0; c++) {
            int bad =
                parse_field(fields[col[c]], c == COL_DEV_LOSS || c == COL_DEV_BLEU, values[c]);
            char shown[64];
            if (bad) text_for_message(shown, sizeof shown, fields[col[c]], 40);
            if (bad == -1)
                rc = error_set(err, "%s:%ld: column '%s': '%s' is not a number", path, number,
                               COL_NAMES[c], shown);
            else if (bad == -2)
                rc = error_set(err,
                               "%s:%ld: column '%s': %s cannot be drawn (the chart's axes run "
                               "from 0 to at most %g)",
                               path, number, COL_NAMES[c], shown, CURVE_VALUE_MAX);
        }
        if (rc) break;
        if ((size_t)run->n == room) {
            room = room ? 2 * room : 64;
            CurvePoint *grown = realloc(run->points, room * sizeof *grown);
            if (!grown) {
                rc = error_set(err, "%s: out of memory reading the log", path);
                break;
            }
            run->points = grown;
        }
        run->points[run->n++] = p;
    }
    free(line);
    return rc;
}

int curves_read_log(const char *path, CurveRun *run, Error *err) {
    *run = (CurveRun){0};
    FILE *in = fopen(path, "r");
    if (!in) return error_set(err, "cannot read %s: %s", path, strerror(errno));
    int rc = read_points(in, path, run, err);
    fclose(in);
    if (rc == 0 && !(run->label = folder_of(path, err))) rc = -1;
    if (rc) curve_run_free(run);
    return rc;
}

/* ---- the chart -------------------------------------------------------------------------- */

enum {
    PANEL_W = 440,
    PANEL_H = 250, /* plot area of one panel, px */
    MARGIN_L = 64,
    MARGIN_R = 24, /* around each plot area: tick labels, axis titles */
    MARGIN_T = 34,
    MARGIN_B = 50,
    LEGEND_H = 30 /* per legend line */
};

static const char *const COLOURS[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
enum { N_COLOURS = sizeof COLOURS / sizeof COLOURS[0] };

typedef enum { SERIES_LOSS, SERIES_DEV_LOSS, SERIES_DEV_BLEU } Series;

static double series_value(const CurvePoint *p, Series s) {
    return s == SERIES_LOSS ? p->loss : s == SERIES_DEV_LOSS ? p->dev_loss : p->dev_bleu;
}

/* A tick step of 1, 2 or 5 times a power of ten giving about `ticks` intervals over span. */
static double nice_step(double span, int ticks) {
    if (!(span > 0)) return 1;
    double raw = span / ticks, power = pow(10, floor(log10(raw))), f = raw / power;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * power;
}

/* An axis from 0 to the first tick at or above the largest value: n_ticks steps of step. */
typedef struct {
    double max, step;
    int n_ticks;
} Axis;

static Axis axis_for(double largest, int ticks) {
    Axis a;
    a.step = nice_step(largest, ticks);
    double steps = fmax(1, ceil(largest / a.step - 1e-9));
    /* at most 2 x ticks by nice_step's rounding; the bound keeps any value from looping */
    a.n_ticks = steps <= 4 * ticks ? (int)steps : 4 * ticks;
    a.max = a.n_ticks * a.step;
    return a;
}

typedef struct {
    double left, top; /* of the plot area */
    Axis x, y;
    double x_scale; /* data x to axis units (seconds to minutes or hours) */
    bool by_time;
} Panel;

static double px_x(const Panel *p, double x) {
    return p->left + x * p->x_scale / p->x.max * PANEL_W;
}
static double px_y(const Panel *p, double y) {
    return p->top + PANEL_H - y / p->y.max * PANEL_H;
}

static void draw_axes(FILE *out, const Panel *p, const char *title, const char *x_title,
                      const char *y_title) {
    fprintf(out,
            "<g class=\"panel\">\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" "
            "font-weight=\"bold\">%s</text>\n",
            p->left, p->top - 12, title);
    for (int k = 0; k <= p->x.n_ticks; k++) { /* x ticks and grid */
        double x = p->left + k * p->x.step / p->x.max * PANEL_W;
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e6e6e6\"/>\n",
                x, p->top, x, p->top + PANEL_H);
        fprintf(out,
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%g</text>\n",
                x, p->top + PANEL_H + 15, k * p->x.step);
    }
    for (int k = 0; k <= p->y.n_ticks; k++) { /* y ticks and grid */
        double y = p->top + PANEL_H - k * p->y.step / p->y.max * PANEL_H;
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e6e6e6\"/>\n",
                p->left, y, p->left + PANEL_W, y);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n",
                p->left - 6, y + 4, k * p->y.step);
    }
    fprintf(out,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"none\" "
            "stroke=\"#444444\"/>\n",
            p->left, p->top, PANEL_W, PANEL_H);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">%s</text>\n",
            p->left + PANEL_W / 2.0, p->top + PANEL_H + 36, x_title);
    fprintf(out,
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
            "transform=\"rotate(-90 %.1f %.1f)\">%s</text>\n",
            p->left - 46, p->top + PANEL_H / 2.0, p->left - 46, p->top + PANEL_H / 2.0, y_title);
}

/* One run's series in a panel: a line through its points, and dots at dev points. */
static void draw_series(FILE *out, const Panel *p, const CurveRun *run, Series s,
                        const char *colour) {
    const char *dash = s == SERIES_DEV_LOSS ? " stroke-dasharray=\"6 4\"" : "";
    fprintf(out,
            "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\"%s "
            "points=\"",
            colour, dash);
    for (int k = 0, first = 1; k < run->n; k++) {
        const CurvePoint *c = &run->points[k];
        double x = p->by_time ? c->elapsed_s : c->step, y = series_value(c, s);
        if (!isfinite(y)) continue;
        fprintf(out, first ? "%.1f,%.1f" : " %.1f,%.1f", px_x(p, x), px_y(p, fmin(y, p->y.max)));
        first = 0;
    }
    fputs("\"/>\n", out);
    if (s == SERIES_LOSS) return;
    for (int k = 0; k < run->n; k++) {
        const CurvePoint *c = &run->points[k];
        double x = p->by_time ? c->elapsed_s : c->step, y = series_value(c, s);
        if (isfinite(y))
            fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", px_x(p, x),
                    px_y(p, fmin(y, p->y.max)), colour);
    }
}

int curves_write_svg(FILE *out, const CurveRun *runs, int n, Error *err) {
    double max_step = 0, max_time = 0, max_loss = 0, max_bleu = 0;
    for (int r = 0; r < n; r++)
        for (int k = 0; k < runs[r].n; k++) {
            const CurvePoint *c = &runs[r].points[k];
            max_step = fmax(max_step, c->step);
            max_time = fmax(max_time, c->elapsed_s);
            max_loss = fmax(max_loss, c->loss);
            if (isfinite(c->dev_loss)) max_loss = fmax(max_loss, c->dev_loss);
            if (isfinite(c->dev_bleu)) max_bleu = fmax(max_bleu, c->dev_bleu);
        }
    /* wall time in seconds, minutes or hours, whichever keeps the tick labels short */
    double time_scale = max_time > 3 * 3600 ? 1 / 3600.0 : max_time > 600 ? 1 / 60.0 : 1;
    const char *time_title = time_scale == 1          ? "wall time (s)"
                             : time_scale == 1 / 60.0 ? "wall time (min)"
                                                      : "wall time (h)";
    Axis steps = axis_for(max_step, 6), time = axis_for(max_time * time_scale, 6);
    Axis loss = axis_for(max_loss, 5), bleu = axis_for(fmin(fmax(max_bleu, 1), 100), 5);
    int legend_lines = 1 + (n + 3) / 4; /* the series key, then four runs per line */
    double top = 16 + legend_lines * LEGEND_H;
    double width = 2 * (MARGIN_L + PANEL_W + MARGIN_R), row_h = MARGIN_T + PANEL_H + MARGIN_B;
    double height = top + 2 * row_h + 8;
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n"
            "<rect class=\"background\" width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
            width, height, width, height);
    /* the legend: how each series is drawn, then each run's colour and folder */
    fputs("<g class=\"legend\">\n", out);
    static const struct {
        const char *name, *dash;
    } KEY[] = {{"training loss", ""},
               {"dev loss", " stroke-dasharray=\"6 4\""},
               {"dev BLEU (dots: validations)", ""}};
    for (int s = 0; s < 3; s++) {
        double x = MARGIN_L + s * 230.0, y = 16 + LEGEND_H / 2.0;
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444444\" "
                "stroke-width=\"1.8\"%s/>\n",
                x, y, x + 30, y, KEY[s].dash);
        if (s == 2)
            fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"#444444\"/>\n", x + 15,
                    y);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">%s</text>\n", x + 38, y + 4,
                KEY[s].name);
    }
    for (int r = 0; r < n; r++) {
        double x = MARGIN_L + (r % 4) * 230.0, y = 16 + (1 + r / 4) * LEGEND_H + LEGEND_H / 2.0;
        char label[LABEL_BYTES];
        label_fit(label, sizeof label, runs[r].label, 28);
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"30\" height=\"10\" fill=\"%s\"/>\n", x,
                y - 5, COLOURS[r % N_COLOURS]);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">", x + 38, y + 4);
        xml_write_text(out, label);
        fputs("</text>\n", out);
    }
    fputs("</g>\n", out);
    for (int row = 0; row < 2; row++)
        for (int column = 0; column < 2; column++) {
            Panel p = {.left = column * (MARGIN_L + PANEL_W + MARGIN_R) + MARGIN_L,
                       .top = top + row * row_h + MARGIN_T,
                       .x = column ? time : steps,
                       .y = row ? bleu : loss,
                       .x_scale = column ? time_scale : 1,
                       .by_time = column == 1};
            draw_axes(out, &p, row ? "dev BLEU" : "loss (per target token)",
                      column ? time_title : "step", row ? "BLEU" : "cross-entropy");
            for (int r = 0; r < n; r++) {
                const char *colour = COLOURS[r % N_COLOURS];
                if (row == 0) {
                    draw_series(out, &p, &runs[r], SERIES_LOSS, colour);
                    draw_series(out, &p, &runs[r], SERIES_DEV_LOSS, colour);
                } else {
                    draw_series(out, &p, &runs[r], SERIES_DEV_BLEU, colour);
                }
            }
            fputs("</g>\n", out);
        }
    fputs("</svg>\n", out);
    return stream_status(out, err);
}

int curves_update(const char *log_path, Error *err) {
    CurveRun run;
    if (curves_read_log(log_path, &run, err)) return -1;
    char path[4096];
    if (path_beside(path, sizeof path, log_path, "curves.svg")) {
        curve_run_free(&run);
        return error_set(err, "%s: path too long for curves.svg beside it", log_path);
    }
    OutputFile file;
    int rc = output_file_open(&file, path, false, err);
    if (rc == 0 && curves_write_svg(file.file, &run, 1, err)) rc = error_prefix(err, "%s: ", path);
    if (rc == 0)
        rc = output_file_commit(&file, err);
    else
        output_file_abort(&file);
    curve_run_free(&run);
    return rc;
}

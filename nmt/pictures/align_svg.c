/*
 * align_svg.c: alignments as one standalone SVG document of labelled heatmaps (see
 * align_write.h).
 */
#include "nmt/pictures/align_write.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nmt/pictures/markup.h"

/* ---- SVG -------------------------------------------------------------------------------- */

enum {
    SVG_CELL = 32,       /* side of one cell, px */
    SVG_FONT = 13,       /* label font size, px */
    SVG_MARGIN = 14,     /* around each block */
    SVG_TITLE = 22,      /* height of a block's title line */
    SVG_LEGEND = 64,     /* width of the colour scale and its ticks */
    SVG_LABEL_CHARS = 24 /* longer labels are cut with an ellipsis */
};

/* Rough width in px of a label in the sans-serif font (no font metrics in plain C). */
static double text_px(const char *s, int max_width) {
    char label[LABEL_BYTES];
    return label_fit(label, sizeof label, s, max_width) * 0.62 * SVG_FONT;
}

static void xml_label(FILE *out, const char *s) {
    char label[LABEL_BYTES];
    label_fit(label, sizeof label, s, SVG_LABEL_CHARS);
    xml_write_text(out, label);
}

/* The colour scale, white through mid blue to dark blue. */
static const struct {
    double at;
    int r, g, b;
} SCALE[] = {{0.0, 255, 255, 255}, {0.5, 107, 174, 214}, {1.0, 8, 48, 107}};

static void scale_colour(double w, int rgb[3]) {
    if (!(w > 0)) w = 0; /* also catches NaN */
    if (w > 1) w = 1;
    int k = w <= SCALE[1].at ? 0 : 1;
    double f = (w - SCALE[k].at) / (SCALE[k + 1].at - SCALE[k].at);
    rgb[0] = (int)lround(SCALE[k].r + f * (SCALE[k + 1].r - SCALE[k].r));
    rgb[1] = (int)lround(SCALE[k].g + f * (SCALE[k + 1].g - SCALE[k].g));
    rgb[2] = (int)lround(SCALE[k].b + f * (SCALE[k + 1].b - SCALE[k].b));
}

typedef struct {
    double left, top;     /* the grid's top-left corner inside the block */
    double width, height; /* of the whole block */
} SvgLayout;

static SvgLayout svg_layout(const Alignment *a) {
    double tgt_w = 0, src_w = 0;
    for (int t = 0; t < a->rows; t++)
        tgt_w = fmax(tgt_w, text_px(a->tgt_tokens[t], SVG_LABEL_CHARS));
    for (int i = 0; i < a->cols; i++)
        src_w = fmax(src_w, text_px(a->src_tokens[i], SVG_LABEL_CHARS));
    double lean = src_w * 0.7072; /* labels are turned 45 degrees up */
    SvgLayout l;
    l.left = SVG_MARGIN + tgt_w + 8;
    l.top = SVG_MARGIN + SVG_TITLE + lean + SVG_FONT;
    double grid_right = l.left + (double)a->cols * SVG_CELL;
    double title = 2 * SVG_MARGIN + (strlen(a->source) + strlen(a->translation) + 3) * 0.6 * 14;
    l.width = fmax(
        fmax(grid_right + SVG_LEGEND + SVG_MARGIN, grid_right - SVG_CELL / 2.0 + lean + SVG_MARGIN),
        title);
    l.height = l.top + (double)a->rows * SVG_CELL + 2 * SVG_MARGIN;
    return l;
}

static void svg_block(FILE *out, const Alignment *a, const SvgLayout *l, double y) {
    fprintf(out, "<g transform=\"translate(0,%.1f)\">\n", y);
    fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">", SVG_MARGIN,
            SVG_MARGIN + 14);
    xml_write_text(out, a->source);
    fputs(" \u2192 ", out);
    xml_write_text(out, a->translation);
    fputs("</text>\n", out);
    for (int i = 0; i < a->cols; i++) { /* source tokens along the top, turned up */
        double x = l->left + (i + 0.5) * SVG_CELL + 4, base = l->top - 6;
        fprintf(out,
                "<text x=\"%.1f\" y=\"%.1f\" transform=\"rotate(-45 %.1f %.1f)\" "
                "font-size=\"%d\">",
                x, base, x, base, SVG_FONT);
        xml_label(out, a->src_tokens[i]);
        fputs("</text>\n", out);
    }
    for (int t = 0; t < a->rows; t++) { /* output tokens down the side */
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"%d\">",
                l->left - 6, l->top + (t + 0.5) * SVG_CELL + 0.35 * SVG_FONT, SVG_FONT);
        xml_label(out, a->tgt_tokens[t]);
        fputs("</text>\n", out);
    }
    for (int t = 0; t < a->rows; t++)
        for (int i = 0; i < a->cols; i++) {
            double w = a->alpha[(size_t)t * a->cols + i], x = l->left + i * SVG_CELL,
                   top = l->top + t * SVG_CELL;
            int rgb[3];
            scale_colour(w, rgb);
            fprintf(out,
                    "<rect class=\"cell\" x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" "
                    "fill=\"#%02x%02x%02x\" stroke=\"#d0d0d0\" stroke-width=\"0.5\"><title>",
                    x, top, SVG_CELL, SVG_CELL, rgb[0], rgb[1], rgb[2]);
            xml_write_text(out, a->tgt_tokens[t]);
            fputs(" \u2190 ", out);
            xml_write_text(out, a->src_tokens[i]);
            fprintf(out, ": %.4f</title></rect>\n", w);
            if (w >= 0.1) /* the value itself where the cell is not near white */
                fprintf(out,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"9\" "
                        "fill=\"%s\" pointer-events=\"none\">%.2f</text>\n",
                        x + SVG_CELL / 2.0, top + SVG_CELL / 2.0 + 3,
                        w > 0.55 ? "#ffffff" : "#000000", w);
        }
    /* the colour scale: a bar from 0 (bottom) to 1 (top) with three ticks */
    double bar_x = l->left + (double)a->cols * SVG_CELL + 16;
    double bar_h = fmin(fmax((double)a->rows * SVG_CELL, 3.0 * SVG_CELL), 160);
    fprintf(out,
            "<rect class=\"legend\" x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"%.1f\" "
            "fill=\"url(#alpha-scale)\" stroke=\"#808080\" stroke-width=\"0.5\"/>\n",
            bar_x, l->top, bar_h);
    static const double ticks[] = {1.0, 0.5, 0.0};
    for (int k = 0; k < 3; k++)
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">%g</text>\n", bar_x + 16,
                l->top + (1 - ticks[k]) * bar_h + 3.5, ticks[k]);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">alpha</text>\n", bar_x, l->top - 6);
    fputs("</g>\n", out);
}

int alignment_write_svg(FILE *out, const Alignment *list, int n, Error *err) {
    SvgLayout *layout = checked_calloc((size_t)n + 1, sizeof *layout, "SVG layout", err);
    if (!layout) return -1;
    double width = 0, height = 0;
    for (int k = 0; k < n; k++) {
        layout[k] = svg_layout(&list[k]);
        width = fmax(width, layout[k].width);
        height += layout[k].height;
    }
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n",
            ceil(width), ceil(height), ceil(width), ceil(height));
    fputs("<defs><linearGradient id=\"alpha-scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">", out);
    for (size_t s = 0; s < sizeof SCALE / sizeof SCALE[0]; s++)
        fprintf(out, "<stop offset=\"%g\" stop-color=\"#%02x%02x%02x\"/>", SCALE[s].at, SCALE[s].r,
                SCALE[s].g, SCALE[s].b);
    fputs("</linearGradient></defs>\n", out);
    fputs("<rect class=\"background\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n", out);
    double y = 0;
    for (int k = 0; k < n; k++) {
        svg_block(out, &list[k], &layout[k], y);
        y += layout[k].height;
    }
    fputs("</svg>\n", out);
    free(layout);
    return stream_status(out, err);
}

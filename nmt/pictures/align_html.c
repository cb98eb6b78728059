/*
 * align_html.c: alignments as one self-contained interactive HTML page (see align_write.h).
 * The page lists the sentences, draws a heatmap per sentence (output tokens as rows, source
 * tokens as columns) and, for the output token under the pointer or the keyboard focus, works
 * that decoding step out as the course notes do: each score e_ti, exp, their sum, the weights
 * alpha_ti as bars, the chosen token and its probability. CSS and JavaScript are inline and
 * nothing is fetched, so the file reads offline from file://. The style sheets and scripts are
 * nmt/heatmap.css and .js (shared with the live page), then nmt/attention-page.css and .js.
 * The browser tests add a self-test script to the pages they check (tests/browser/run.sh).
 *
 * Tokens are never markup: the data travels as JSON in a <script type="application/json">
 * element with '<', '>', '&' and U+2028/9 escaped as \uXXXX (so no "</script" or "<!--" can
 * end it early), and the page builds its DOM with textContent only.
 *
 * Size: two matrices of floats as JSON text would be ~1 MB for 100 sentences of 20 tokens, so
 * each cell is one 4-character code (24 bits, base64url digits) of q_ti = lse_t - e_ti, where
 * lse_t = log sum_i exp(e_ti): the page recovers the score e_ti = lse_t - q_ti and the weight
 * alpha_ti = exp(-q_ti), both to 1e-5, from one number. The probabilities travel as codes of
 * -log p_t. A row of codes that does not belong to its scores then shows as a row of weights
 * that does not sum to 1, which the self-test checks.
 */
#include "nmt/pictures/align_write.h"

#include <math.h>
#include <string.h>

#include "nmt/pictures/markup.h"

enum { CODE_CHARS = 4, CODE_MAX = (1 << 24) - 1 };
static const double CODE_UNIT = 1e-5; /* value of one step of a code; the page uses the same */
static const char CODE_DIGITS[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* The page's style sheets and scripts, linked into the program as they are (base/embed.S,
 * whose symbols the Makefile names after the file's path): what it shares with the
 * live page (nmt/heatmap.css and .js), then its own (nmt/attention-page.css and .js). */
extern const char _binary_nmt_heatmap_css_start[], _binary_nmt_heatmap_css_end[];
extern const char _binary_nmt_heatmap_js_start[], _binary_nmt_heatmap_js_end[];
extern const char _binary_nmt_attention_page_css_start[], _binary_nmt_attention_page_css_end[];
extern const char _binary_nmt_attention_page_js_start[], _binary_nmt_attention_page_js_end[];

static void write_embedded(FILE *out, const char *start, const char *end) {
    fwrite(start, 1, (size_t)(end - start), out);
}

/* A JSON string that is also safe inside a <script> element: besides JSON's own escapes,
 * '<', '>' and '&' become \u003c, \u003e, \u0026 (no "</script>" or "<!--" can appear), and
 * U+2028 and U+2029 become \u2028 and \u2029 (line ends to older JavaScript parsers). */
static void json_write_script_string(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&')
            fprintf(out, "\\u%04x", *p);
        else if (p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9))
            fprintf(out, "\\u%04x", 0x2000 + (p[2] - 0x80)), p += 2;
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

static void json_script_string_list(FILE *out, char *const *items, int n) {
    fputc('[', out);
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', out);
        json_write_script_string(out, items[i]);
    }
    fputc(']', out);
}

/* One code: value >= 0 in steps of CODE_UNIT, as four base64url digits, most significant
 * first. Values past the largest code (weights below ~1e-73) and NaN get the largest. */
static void write_code(FILE *out, double value) {
    double steps = value / CODE_UNIT;
    long n = !(steps < CODE_MAX) ? CODE_MAX : steps > 0 ? lround(steps) : 0;
    char digits[CODE_CHARS];
    for (int j = CODE_CHARS - 1; j >= 0; j--, n >>= 6) digits[j] = CODE_DIGITS[n & 63];
    fwrite(digits, 1, CODE_CHARS, out);
}

/* log sum_i exp(e_i) of one row, shifted by the largest score so that nothing overflows. */
static double log_sum_exp(const real *e, int n) {
    double top = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++) top = fmax(top, e[i]);
    if (!isfinite(top)) return top;
    for (int i = 0; i < n; i++) sum += exp(e[i] - top);
    return top + log(sum);
}

static void write_sentence(FILE *out, const Alignment *a) {
    fputs("{\"source\":", out);
    json_write_script_string(out, a->source);
    fputs(",\"translation\":", out);
    json_write_script_string(out, a->translation);
    /* the input's own number, so that the page's sentence 4 is input line 4 even when line 3
     * was blank (refused, and not on the page) */
    if (a->number > 0) fprintf(out, ",\"n\":%d", a->number);
    fputs(",\"reference\":", out);
    if (a->reference)
        json_write_script_string(out, a->reference);
    else
        fputs("null", out);
    fprintf(out, ",\"score\":\"%s\",\"complete\":%d,\"src\":", score_name(a->score),
            a->complete ? 1 : 0);
    json_script_string_list(out, a->src_tokens, a->cols);
    fputs(",\"tgt\":", out);
    json_script_string_list(out, a->tgt_tokens, a->rows);
    fputs(",\"lse\":[", out);
    for (int t = 0; t < a->rows; t++) {
        double lse = log_sum_exp(a->energy + (size_t)t * a->cols, a->cols);
        fprintf(out, t ? ",%.6f" : "%.6f", isfinite(lse) ? lse : 0.0);
    }
    fputs("],\"nlp\":\"", out);
    for (int t = 0; t < a->rows; t++)
        write_code(out, a->prob[t] > 0 ? -log((double)a->prob[t]) : INFINITY);
    fputs("\",\n\"q\":\"", out);
    for (int t = 0; t < a->rows; t++) {
        const real *e = a->energy + (size_t)t * a->cols;
        double lse = log_sum_exp(e, a->cols);
        for (int i = 0; i < a->cols; i++) write_code(out, lse - e[i]);
    }
    fputs("\"}", out);
}

int alignment_write_html(FILE *out, const Alignment *list, int n, Error *err) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<title>Attention",
          out);
    if (n > 0) {
        fputs(": ", out);
        xml_write_text(out, list[0].source);
    }
    fputs("</title>\n<style>\n", out);
    write_embedded(out, _binary_nmt_heatmap_css_start, _binary_nmt_heatmap_css_end);
    write_embedded(out, _binary_nmt_attention_page_css_start, _binary_nmt_attention_page_css_end);
    fputs("</style>\n</head>\n<body>\n<header>\n<h1>Where the decoder looks</h1>\n"
          "<p class=\"hint\">Each heatmap shows the attention weights \u03b1<sub>ti</sub> "
          "of one translation: row t is output token t, column i is source token i. Point at "
          "an output token, or press Tab and the arrow keys, to see that step of the softmax "
          "worked out.</p>\n"
          "<div class=\"legend\" aria-hidden=\"true\"><span>\u03b1 = 0</span>"
          "<span class=\"ramp\"></span><span>1</span></div>\n"
          "<nav aria-label=\"sentences\"><ol id=\"sentence-list\"></ol></nav>\n</header>\n"
          "<main id=\"sentences\"></main>\n"
          "<noscript><p>This page draws its heatmaps with JavaScript; the numbers are in the "
          "alignment-data element of its source.</p></noscript>\n"
          "<!-- alignment-data: per sentence its texts and tokens; lse[t] = log sum_i "
          "exp(e_ti); nlp and q hold 4-character codes (base64url digits of a 24-bit number "
          "times 1e-5): nlp[t] = -log p_t, q[t*S+i] = lse[t] - e_ti, so alpha_ti = "
          "exp(-q[t*S+i]) -->\n"
          "<script type=\"application/json\" id=\"alignment-data\">\n{\"sentences\":[\n",
          out);
    for (int k = 0; k < n; k++) {
        if (k) fputs(",\n", out);
        write_sentence(out, &list[k]);
    }
    fputs("\n]}\n</script>\n<script>\n", out);
    write_embedded(out, _binary_nmt_heatmap_js_start, _binary_nmt_heatmap_js_end);
    write_embedded(out, _binary_nmt_attention_page_js_start, _binary_nmt_attention_page_js_end);
    fputs("</script>\n</body>\n</html>\n", out);
    return stream_status(out, err);
}

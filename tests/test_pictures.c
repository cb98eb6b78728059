/*
 * test_pictures.c: the pictures: the interactive HTML page of alignments (its data decodes to
 * the matrices, hostile tokens stay data, 100 sentences of 20 tokens stay under 300 KB), the
 * SVG heatmap and the training curves checked to be well-formed XML by a small structure
 * parser, training logs read back with errors naming file and line, and bin/train, bin/plot,
 * bin/align and bin/translate writing these files. What a browser makes of the page is
 * tests/browser/run.sh's job (make test-browser).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/rng.h"
#include "base/utf8.h"
#include "tests/harness.h"
#include "nmt/pictures/align_write.h"
#include "tests/suites.h"
#include "train/curves.h"

/* ---- helpers ---- */

/* An alignment of the given tokens whose scores are energies ([rows, cols]), alpha their
 * softmax per row and prob[t] = 1 / (t + 2). Labels and texts are copied. */
static void make_alignment(Alignment *a, const char *source, const char *reference,
                           const char *const *src, int cols, const char *const *tgt, int rows,
                           const double *energies) {
    memset(a, 0, sizeof *a);
    a->rows = rows, a->cols = cols, a->complete = 1, a->lowercase = true;
    a->alpha = calloc((size_t)rows * cols, sizeof(real));
    a->energy = calloc((size_t)rows * cols, sizeof(real));
    a->prob = calloc((size_t)rows, sizeof(real));
    a->src_tokens = calloc((size_t)cols, sizeof(char *));
    a->tgt_tokens = calloc((size_t)rows, sizeof(char *));
    ck_assert(a->alpha && a->energy && a->prob && a->src_tokens && a->tgt_tokens);
    for (int t = 0; t < rows; t++) {
        double top = -INFINITY, sum = 0;
        for (int i = 0; i < cols; i++) top = fmax(top, energies[t * cols + i]);
        for (int i = 0; i < cols; i++) sum += exp(energies[t * cols + i] - top);
        for (int i = 0; i < cols; i++) {
            a->energy[t * cols + i] = (real)energies[t * cols + i];
            a->alpha[t * cols + i] = (real)(exp(energies[t * cols + i] - top) / sum);
        }
        a->prob[t] = (real)(1.0 / (t + 2));
    }
    for (int i = 0; i < cols; i++) ck_assert_ptr_nonnull(a->src_tokens[i] = strdup(src[i]));
    for (int t = 0; t < rows; t++) ck_assert_ptr_nonnull(a->tgt_tokens[t] = strdup(tgt[t]));
    ck_assert_ptr_nonnull(a->source = strdup(source));
    if (reference) ck_assert_ptr_nonnull(a->reference = strdup(reference));
    ck_assert_ptr_nonnull(a->translation = strdup(reference ? reference : "x"));
}

typedef int (*PageWriter)(FILE *, const Alignment *, int, Error *);

/* What a whole-document writer makes of n alignments, as a string (free it). */
static char *page_of(PageWriter write, const Alignment *a, int n, size_t *size) {
    char *text = NULL;
    FILE *out = open_memstream(&text, size);
    ck_assert_ptr_nonnull(out);
    Error err;
    ck_assert_msg(write(out, a, n, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(fclose(out), 0);
    return text;
}

static int count_of(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what)) n++;
    return n;
}

/* ---- a cheap XML structure check ---- */

/* Length of an entity or character reference at p ('&'), or 0 when it is not one. */
static size_t entity_length(const char *p) {
    static const char *const named[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (size_t k = 0; k < 5; k++)
        if (strncmp(p, named[k], strlen(named[k])) == 0) return strlen(named[k]);
    if (p[1] != '#') return 0;
    size_t n = 2;
    bool hex = p[2] == 'x';
    if (hex) n++;
    size_t digits = strspn(p + n, hex ? "0123456789abcdefABCDEF" : "0123456789");
    return digits > 0 && p[n + digits] == ';' ? n + digits + 1 : 0;
}

static size_t name_length(const char *p) {
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_')) return 0;
    return strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:.-");
}

/* NULL when text is one well-formed XML element (an optional <?xml ?> declaration and
 * comments aside): tags nest and close in order, attributes are quoted, and no raw '<' or
 * stray '&' is in text or attribute values. Otherwise what is wrong and where. */
static const char *xml_problem(const char *text, char *msg, size_t size) {
    enum { DEPTH = 64 };
    const char *open[DEPTH];
    size_t open_len[DEPTH];
    int depth = 0, roots = 0;
    const char *p = text;
    if (strncmp(p, "<?xml", 5) == 0) {
        p = strstr(p, "?>");
        if (!p) return "unterminated <?xml";
        p += 2;
    }
    while (*p) {
        size_t at = (size_t)(p - text);
        if (strncmp(p, "<!--", 4) == 0) {
            const char *end = strstr(p + 4, "-->");
            if (!end) return snprintf(msg, size, "unterminated comment at %zu", at), msg;
            p = end + 3;
        } else if (p[0] == '<' && p[1] == '/') {
            size_t n = name_length(p + 2);
            if (depth == 0 || n != open_len[depth - 1] || strncmp(p + 2, open[depth - 1], n))
                return snprintf(msg, size, "unexpected </%.*s> at %zu", (int)n, p + 2, at), msg;
            depth--;
            p += 2 + n;
            p += strspn(p, " \n\t");
            if (*p++ != '>') return snprintf(msg, size, "bad end tag at %zu", at), msg;
        } else if (*p == '<') {
            size_t n = name_length(p + 1);
            if (n == 0) return snprintf(msg, size, "raw '<' at %zu", at), msg;
            if (depth == 0 && roots++ > 0)
                return snprintf(msg, size, "second root at %zu", at), msg;
            const char *name = p + 1;
            p += 1 + n;
            for (;;) {
                p += strspn(p, " \n\t");
                if (p[0] == '/' && p[1] == '>') {
                    p += 2;
                    break;
                }
                if (*p == '>') {
                    if (depth == DEPTH) return "nested too deeply";
                    open[depth] = name, open_len[depth++] = n;
                    p++;
                    break;
                }
                size_t an = name_length(p);
                if (an == 0 || p[an] != '=' || (p[an + 1] != '"' && p[an + 1] != '\''))
                    return snprintf(msg, size, "bad attribute at %zu", (size_t)(p - text)), msg;
                char quote = p[an + 1];
                for (p += an + 2; *p != quote; p++) {
                    if (*p == '\0' || *p == '<')
                        return snprintf(msg, size, "bad attribute value at %zu", at), msg;
                    if (*p == '&' && entity_length(p) == 0)
                        return snprintf(msg, size, "stray '&' at %zu", (size_t)(p - text)), msg;
                }
                p++;
            }
        } else {
            if (*p == '&' && entity_length(p) == 0)
                return snprintf(msg, size, "stray '&' at %zu", at), msg;
            if (depth == 0 && !strchr(" \n\t\r", *p))
                return snprintf(msg, size, "text outside the root at %zu", at), msg;
            p++;
        }
    }
    if (depth)
        return snprintf(msg, size, "<%.*s> never closed", (int)open_len[depth - 1],
                        open[depth - 1]),
               msg;
    return roots == 1 ? NULL : "no root element";
}

static void assert_well_formed(const char *text, const char *what) {
    char msg[160];
    const char *problem = xml_problem(text, msg, sizeof msg);
    ck_assert_msg(problem == NULL, "%s: %s", what, problem);
}

/* The tokens a hostile input can carry, and the text around them. */
static const char *const HOSTILE[] = {
    "</script><script>document.documentElement.setAttribute('x'+'pwned',1)</script>",
    "<!--",
    "-->",
    "javascript:alert(1)",
    "\"quoted\"",
    "'single'",
    "R&D",
    "a\u2028b",
    "<img src=x onerror=alert(1)>",
    "</s>"};
enum { N_HOSTILE = sizeof HOSTILE / sizeof HOSTILE[0] };

static void hostile_alignment(Alignment *a) {
    double e[N_HOSTILE * N_HOSTILE];
    for (int k = 0; k < N_HOSTILE * N_HOSTILE; k++) e[k] = (k % 7) - 3.0;
    make_alignment(a, "<b>bold</b> & </script><!-- \u2028", "</script>--> javascript:x", HOSTILE,
                   N_HOSTILE, HOSTILE, N_HOSTILE, e);
}

/* ---- the HTML page ---- */

START_TEST(html_parses_html_format) {
    AlignFormat f;
    Error err;
    ck_assert_int_eq(align_format_parse("html", &f, &err), 0);
    ck_assert_int_eq(f, ALIGN_HTML);
    ck_assert(!align_format_streams(ALIGN_HTML));
}
END_TEST

/* The text between the data element's start tag and its end. */
static char *data_block(const char *page) {
    const char *start = strstr(page, "<script type=\"application/json\" id=\"alignment-data\">");
    ck_assert_ptr_nonnull(start);
    start = strchr(start, '>') + 1;
    const char *end = strstr(start, "</script>");
    ck_assert_ptr_nonnull(end);
    char *copy = strndup(start, (size_t)(end - start));
    ck_assert_ptr_nonnull(copy);
    return copy;
}

START_TEST(html_hostile_tokens_stay_data) {
    Alignment a;
    hostile_alignment(&a);
    size_t size;
    char *page = page_of(alignment_write_html, &a, 1, &size);
    /* only the page's own two scripts start and end; the one comment is the page's */
    ck_assert_int_eq(count_of(page, "<script"), 2);
    ck_assert_int_eq(count_of(page, "</script"), 2);
    ck_assert_int_eq(count_of(page, "<!--"), 1);
    ck_assert_ptr_null(strstr(page, "<img"));
    char *data = data_block(page);
    ck_assert_ptr_null(strpbrk(data, "<>&"));
    ck_assert_ptr_null(strstr(data, "\u2028")); /* raw: a line end to older parsers */
    ck_assert_ptr_nonnull(strstr(data, "\\u003c/script\\u003e\\u003cscript\\u003edocument"));
    ck_assert_ptr_nonnull(strstr(data, "\"a\\u2028b\""));
    ck_assert_ptr_nonnull(strstr(data, "\"\\\"quoted\\\"\""));
    ck_assert_ptr_nonnull(strstr(data, "\"R\\u0026D\""));
    /* the title is escaped text */
    ck_assert_ptr_nonnull(
        strstr(page, "<title>Attention: &lt;b&gt;bold&lt;/b&gt; &amp; &lt;/script&gt;"));
    /* the script builds nodes from text only */
    ck_assert_ptr_null(strstr(page, "innerHTML"));
    ck_assert_ptr_null(strstr(page, "http://"));
    ck_assert_ptr_null(strstr(page, "https://"));
    free(data);
    free(page);
    alignment_free(&a);
}
END_TEST

/* Decodes the 4-character code at p as the page does. */
static double decode_code(const char *p) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    long n = 0;
    for (int j = 0; j < 4; j++) {
        const char *d = strchr(digits, p[j]);
        ck_assert_msg(d != NULL && p[j] != '\0', "bad code digit '%c'", p[j]);
        n = n * 64 + (d - digits);
    }
    return n * 1e-5;
}

START_TEST(html_codes_give_back_scores_weights_and_probabilities) {
    const char *src[] = {"i", "love", "machine", "learning", "</s>"};
    const char *tgt[] = {"j'", "aime", "l'", "apprentissage", "automatique", "</s>"};
    enum { S = 5, T = 6 };
    double e[S * T];
    Rng rng;
    rng_seed(&rng, 14, 0);
    for (int k = 0; k < S * T; k++) e[k] = 4 * rng_normal(&rng);
    e[3] = -60; /* a weight of ~1e-26: its score must still come back */
    Alignment a;
    make_alignment(&a, "I love machine learning", NULL, src, S, tgt, T, e);
    size_t size;
    char *page = page_of(alignment_write_html, &a, 1, &size);
    char *data = data_block(page);
    const char *lse = strstr(data, "\"lse\":["), *nlp = strstr(data, "\"nlp\":\""),
               *q = strstr(data, "\"q\":\"");
    ck_assert(lse && nlp && q);
    lse += 7, nlp += 7, q += 5;
    for (int t = 0; t < T; t++) {
        char *end;
        double row_lse = strtod(lse, &end), sum = 0;
        ck_assert(end != lse && (*end == ',' || *end == ']'));
        lse = end + 1;
        ck_assert_double_eq_tol(exp(-decode_code(nlp + 4 * t)), a.prob[t], 1e-5);
        for (int i = 0; i < S; i++) {
            double code = decode_code(q + 4 * (t * S + i)), w = exp(-code);
            ck_assert_double_eq_tol(row_lse - code, a.energy[t * S + i], 1e-4);
            ck_assert_double_eq_tol(w, a.alpha[t * S + i], 1e-5 * fmax(a.alpha[t * S + i], 1e-3));
            sum += w;
        }
        ck_assert_double_eq_tol(sum, 1, 1e-5);
    }
    ck_assert(q[4 * S * T] == '"');
    free(data);
    free(page);
    alignment_free(&a);
}
END_TEST

START_TEST(html_page_of_100_sentences_of_20_tokens_is_small) {
    static const char *const words[] = {"the",  "cat",   "sleeps", "on",       "mat",  "dog",
                                        "and",  "black", "house",  "learning", "chat", "noir",
                                        "très", "école", "maison", "où",       "est",  "le"};
    enum { N = 100, TOK = 20, S = TOK + 1, T = TOK + 1 };
    const char *src[S], *tgt[T];
    char source[512];
    static double e[S * T];
    static Alignment a[N];
    Rng rng;
    rng_seed(&rng, 300, 0);
    for (int k = 0; k < N; k++) {
        source[0] = '\0';
        for (int i = 0; i < TOK; i++) {
            src[i] = words[rng_below(&rng, 18)], tgt[i] = words[rng_below(&rng, 18)];
            strcat(source, i ? " " : ""), strcat(source, src[i]);
        }
        src[TOK] = tgt[TOK] = "</s>";
        for (int c = 0; c < S * T; c++) e[c] = 3 * rng_normal(&rng);
        make_alignment(&a[k], source, NULL, src, S, tgt, T, e);
        free(a[k].translation);
        ck_assert_ptr_nonnull(a[k].translation = strdup(source)); /* as long as the source */
    }
    size_t size;
    char *page = page_of(alignment_write_html, a, N, &size);
    ck_assert_msg(size < 300 * 1000, "%zu bytes", size);
    fprintf(stderr, "html page of 100 sentences of 20 tokens: %zu bytes\n", size);
    free(page);
    for (int k = 0; k < N; k++) alignment_free(&a[k]);
}
END_TEST

/* ---- SVG structure ---- */

START_TEST(xml_checker_catches_broken_markup) {
    char msg[160];
    ck_assert_ptr_null(
        xml_problem("<svg a=\"1\"><g><text>a &amp; b</text></g><rect/></svg>\n", msg, sizeof msg));
    ck_assert_ptr_nonnull(xml_problem("<svg><g></svg>", msg, sizeof msg));
    ck_assert_ptr_nonnull(xml_problem("<svg><text>a & b</text></svg>", msg, sizeof msg));
    ck_assert_ptr_nonnull(xml_problem("<svg><text>a < b</text></svg>", msg, sizeof msg));
    ck_assert_ptr_nonnull(xml_problem("<svg a=1></svg>", msg, sizeof msg));
    ck_assert_ptr_nonnull(xml_problem("<svg a=\"<\"></svg>", msg, sizeof msg));
    ck_assert_ptr_nonnull(xml_problem("<svg></svg><svg></svg>", msg, sizeof msg));
    ck_assert_ptr_nonnull(xml_problem("<svg>", msg, sizeof msg));
}
END_TEST

START_TEST(attention_svg_is_well_formed) {
    Alignment a[2];
    hostile_alignment(&a[0]);
    double e[4 * 3] = {1, 2, 3, 4, 0, 0, 0, 0, -1, 5, 2, 0};
    const char *src[] = {"où", "中", "文", "</s>"}, *tgt[] = {"é", "&", "</s>"};
    make_alignment(&a[1], "où 中文", NULL, src, 4, tgt, 3, e);
    size_t size;
    char *svg = page_of(alignment_write_svg, a, 2, &size);
    assert_well_formed(svg, "attention SVG");
    ck_assert_int_eq(count_of(svg, "<rect class=\"cell\""), N_HOSTILE * N_HOSTILE + 4 * 3);
    ck_assert_ptr_nonnull(strstr(svg, "url(#alpha-scale)"));
    free(svg);
    alignment_free(&a[0]);
    alignment_free(&a[1]);
}
END_TEST

/* ---- training logs and curves ---- */

static const char LOG_HEADER[] =
    "step\tepoch\tloss\tlr\tdev_loss\tdev_ppl\tdev_bleu\tdev_chrf\ttok_per_s\telapsed_s\n";

static void write_log(const Scratch *s, const char *name, const char *lines) {
    char text[4096];
    snprintf(text, sizeof text, "%s%s", LOG_HEADER, lines);
    scratch_write_text(s, name, text);
}

START_TEST(curves_read_a_log_and_draw_it) {
    Scratch s;
    scratch_make(&s);
    char dir[128], path[256];
    scratch_path(&s, "run", dir, sizeof dir);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    write_log(&s, "run/train_log.tsv",
              "100\t1\t4.5\t0.002\t\t\t\t\t3000.0\t7.5\n"
              "200\t1\t3.0\t0.002\t2.5\t12.2\t31.5\t50.1\t3000.0\t15.0\n"
              "300\t1\t2.0\t0.002\t\t\t\t\t3000.0\t22.5\n");
    scratch_path(&s, "run/train_log.tsv", path, sizeof path);
    CurveRun run;
    Error err;
    ck_assert_msg(curves_read_log(path, &run, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(run.n, 3);
    ck_assert_str_eq(run.label, dir);
    ck_assert_double_eq(run.points[1].dev_bleu, 31.5);
    ck_assert(isnan(run.points[0].dev_loss) && isnan(run.points[2].dev_bleu));
    ck_assert_double_eq(run.points[2].elapsed_s, 22.5);
    CurveRun two[2] = {run, run};
    char *svg = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&svg, &size);
    ck_assert_ptr_nonnull(out);
    ck_assert_msg(curves_write_svg(out, two, 2, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(fclose(out), 0);
    assert_well_formed(svg, "curves SVG");
    /* four panels; per run and panel column: training loss, dev loss and dev BLEU */
    ck_assert_int_eq(count_of(svg, "<g class=\"panel\">"), 4);
    ck_assert_int_eq(count_of(svg, "<polyline class=\"series\""), 2 * 2 * 3);
    ck_assert_int_eq(count_of(svg, "<circle"), 2 * 2 * 2 + 1); /* dev points, and the key's */
    assert_contains(svg, ">dev BLEU</text>");
    assert_contains(svg, ">wall time (s)</text>");
    assert_contains(svg, ">step</text>");
    free(svg);
    curve_run_free(&run);
    scratch_free(&s);
}
END_TEST

START_TEST(malformed_logs_name_file_and_line) {
    static const struct {
        const char *text, *fragment;
    } cases[] = {
        {"", "bad.tsv: empty"},
        {"step\tloss\n1\t2\n", "bad.tsv:1: not a training log: no 'dev_loss' column"},
        {LOG_HEADER, "bad.tsv: no steps logged yet"},
        {"step\tepoch\tloss\tlr\tdev_loss\tdev_ppl\tdev_bleu\tdev_chrf\ttok_per_s\telapsed_s\n"
         "100\t1\t4.5\t0.002\t\t\t\t\t3000.0\t7.5\n"
         "200\t1\t4.5\t0.002\n",
         "bad.tsv:3: 4 columns, expected 10"},
        {"step\tepoch\tloss\tlr\tdev_loss\tdev_ppl\tdev_bleu\tdev_chrf\ttok_per_s\telapsed_s\n"
         "100\t1\tnan\t0.002\t\t\t\t\t3000.0\t7.5\n",
         "bad.tsv:2: column 'loss': 'nan' is not a number"},
        {"step\tepoch\tloss\tlr\tdev_loss\tdev_ppl\tdev_bleu\tdev_chrf\ttok_per_s\telapsed_s\n"
         "100\t1\t4.5\t0.002\t1.0\t2.7\t12x\t4\t3000.0\t7.5\n",
         "bad.tsv:2: column 'dev_bleu': '12x' is not a number"},
        {"step\tepoch\tloss\tlr\tdev_loss\tdev_ppl\tdev_bleu\tdev_chrf\ttok_per_s\telapsed_s\n"
         "\t1\t4.5\t0.002\t\t\t\t\t3000.0\t7.5\n",
         "bad.tsv:2: column 'step': '' is not a number"},
        /* issue #36: near DBL_MAX the axis top overflowed to inf and the tick loop never ended
         * (980 MB of SVG in 5 s); -1e308 gave inf coordinates and exit status 0 */
        {"step\tepoch\tloss\tlr\tdev_loss\tdev_ppl\tdev_bleu\tdev_chrf\ttok_per_s\telapsed_s\n"
         "100\t1\t1.7976931348623157e308\t0.002\t\t\t\t\t3000.0\t7.5\n",
         "bad.tsv:2: column 'loss': 1.7976931348623157e308 cannot be drawn"},
        {"step\tepoch\tloss\tlr\tdev_loss\tdev_ppl\tdev_bleu\tdev_chrf\ttok_per_s\telapsed_s\n"
         "100\t1\t4.5\t0.002\t\t\t\t\t3000.0\t7.5\n"
         "1.7976931348623157e308\t1\t4.5\t0.002\t\t\t\t\t3000.0\t7.5\n",
         "bad.tsv:3: column 'step': 1.7976931348623157e308 cannot be drawn"},
        {"step\tepoch\tloss\tlr\tdev_loss\tdev_ppl\tdev_bleu\tdev_chrf\ttok_per_s\telapsed_s\n"
         "100\t1\t-1e308\t0.002\t\t\t\t\t3000.0\t7.5\n",
         "bad.tsv:2: column 'loss': -1e308 cannot be drawn"},
        {"step\tepoch\tloss\tlr\tdev_loss\tdev_ppl\tdev_bleu\tdev_chrf\ttok_per_s\telapsed_s\n"
         "100\t1\t4.5\t0.002\t-2\t0.1\t10\t10\t3000.0\t7.5\n",
         "bad.tsv:2: column 'dev_loss': -2 cannot be drawn"},
    };
    Scratch s;
    scratch_make(&s);
    char path[256];
    scratch_path(&s, "bad.tsv", path, sizeof path);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        scratch_write_text(&s, "bad.tsv", cases[k].text);
        CurveRun run;
        Error err;
        ck_assert_int_ne(curves_read_log(path, &run, &err), 0);
        assert_contains(err.msg, cases[k].fragment);
        ck_assert_ptr_null(run.points);
        /* bin/plot says the same in one line and exits 1 */
        RunResult r;
        char svg[256];
        scratch_path(&s, "out.svg", svg, sizeof svg);
        run_program(&r, &s, (const char *const[]){"../bin/plot", path, "-o", svg, NULL}, NULL, 20,
                    NULL);
        assert_one_line_error(&r, "plot", 1, (const char *const[]){cases[k].fragment, NULL});
        ck_assert_int_ne(access(svg, F_OK), 0);
    }
    scratch_free(&s);
}
END_TEST

/* The largest value a chart draws (1e300) gives finite coordinates and a handful of ticks,
 * and the legend names a run by its folder normalised: "run", not "sub/../run" (issue #36). */
START_TEST(curves_draw_huge_values_and_normalised_names) {
    Scratch s;
    scratch_make(&s);
    char sub[256], log[256], svg[256];
    scratch_path(&s, "sub", sub, sizeof sub);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    ck_assert_int_eq(mkdir(strcat(sub, "/../run"), 0755), 0);
    scratch_write_text(&s, "run/train_log.tsv",
                       "step\tepoch\tloss\tlr\tdev_loss\tdev_ppl\tdev_bleu\tdev_chrf\ttok_per_s\t"
                       "elapsed_s\n"
                       "1e300\t1\t1e300\t0.002\t1e300\t2\t1e300\t4\t3000.0\t1e300\n"
                       "2\t1\t0.5\t0.002\t\t\t\t\t3000.0\t7.5\n");
    /* from the scratch folder, so that the label is short enough to be shown whole */
    char cwd[256], script[1024];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(log, sizeof log, "sub/../run/train_log.tsv");
    scratch_path(&s, "out.svg", svg, sizeof svg);
    snprintf(script, sizeof script, "cd %s && %s/../bin/plot %s -o out.svg", s.dir, cwd, log);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"/bin/sh", "-c", script, NULL}, NULL, 20, NULL);
    ck_assert_msg(r.status == 0 && !r.timed_out, "%s", r.err);
    size_t len;
    char *text = (char *)slurp_file(svg, &len);
    ck_assert_uint_lt(len, 64 * 1024);
    ck_assert_ptr_null(strstr(text, "inf"));
    ck_assert_ptr_null(strstr(text, "nan"));
    ck_assert_ptr_null(strstr(text, "sub/.."));
    assert_contains(text, ">run</text>");
    free(text);
    scratch_free(&s);
}
END_TEST

/* U+FFFE and U+FFFF are valid UTF-8, so the input checks let them into tokens, but XML 1.0
 * forbids them (xmllint: "Char 0xFFFF out of allowed range"): they were written as they were
 * (found by hand with bin/align --ref); they now become U+FFFD like the C0 controls. */
START_TEST(svg_noncharacters_become_replacement_characters) {
    const char *src[] = {"a\xEF\xBF\xBE", "\xEF\xBF\xBF", "</s>"},
               *tgt[] = {"x\xEF\xBF\xBFy", "</s>"};
    double e[3 * 2] = {0, 1, 2, 3, 4, 5};
    Alignment a;
    make_alignment(&a, "a\xEF\xBF\xBE \xEF\xBF\xBF", "x\xEF\xBF\xBFy", src, 3, tgt, 2, e);
    size_t size;
    char *svg = page_of(alignment_write_svg, &a, 1, &size);
    assert_well_formed(svg, "attention SVG with noncharacters");
    ck_assert_ptr_null(strstr(svg, "\xEF\xBF\xBE"));
    ck_assert_ptr_null(strstr(svg, "\xEF\xBF\xBF"));
    assert_contains(svg, ">x\uFFFDy</text>");
    ck_assert_ptr_null(utf8_find_error(svg, size, NULL));
    free(svg);
    alignment_free(&a);
}
END_TEST

/* bin/plot names each run by its folder, and a folder name can hold markup, quotes, a byte
 * that is not UTF-8 and control characters: the curves stay well-formed, valid UTF-8 XML with
 * the names as text. (A byte that is not UTF-8 reached the SVG as it was, which XML parsers
 * refuse; label_fit now shows it as U+FFFD.) bin/plot runs in the scratch folder so that
 * the names are short enough not to be cut from the legend. */
START_TEST(curves_of_hostile_folder_names_stay_well_formed) {
    static const char *const folders[] = {"<b>&\"'</script>x", "--><!--javascript:x",
                                          "\xff\x01\xe2\x80\xa8y&amp"};
    enum { N = sizeof folders / sizeof folders[0] };
    Scratch s;
    scratch_make(&s);
    char path[256], plot[512], cwd[256];
    scratch_path(&s, "<b>&\"'<", path, sizeof path); /* "</script>x" is a folder in "<" */
    ck_assert_int_eq(mkdir(path, 0755), 0);
    for (int k = 0; k < N; k++) {
        scratch_path(&s, folders[k], path, sizeof path);
        ck_assert_int_eq(mkdir(path, 0755), 0);
        snprintf(path, sizeof path, "%s/train_log.tsv", folders[k]);
        write_log(&s, path,
                  "100\t1\t4.5\t0.002\t\t\t\t\t3000.0\t7.5\n"
                  "200\t1\t3.0\t0.002\t2.5\t12.2\t31.5\t50.1\t3000.0\t15.0\n");
    }
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(plot, sizeof plot, "%s/../bin/plot", cwd);
    char logs[N][128];
    for (int k = 0; k < N; k++) snprintf(logs[k], sizeof logs[k], "%s/train_log.tsv", folders[k]);
    RunResult r;
    run_program(&r, &s,
                (const char *const[]){"/bin/sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh",
                                      s.dir, plot, "-o", "out.svg", "--", logs[0], logs[1], logs[2],
                                      NULL},
                NULL, 30, NULL);
    ck_assert_msg(r.status == 0, "%d %s", r.status, r.err);
    size_t len;
    scratch_path(&s, "out.svg", path, sizeof path);
    char *svg = (char *)slurp_file(path, &len);
    ck_assert_ptr_nonnull(svg);
    assert_well_formed(svg, "curves of hostile folders");
    size_t offset;
    const char *problem = utf8_find_error(svg, len, &offset);
    ck_assert_msg(problem == NULL, "invalid UTF-8 at byte %zu: %s", offset, problem);
    assert_contains(svg, ">&lt;b&gt;&amp;&quot;&apos;&lt;/script&gt;x</text>");
    assert_contains(svg, ">--&gt;&lt;!--javascript:x</text>");
    assert_contains(svg, ">\uFFFD\uFFFD\u2028y&amp;amp</text>");
    ck_assert_int_eq(count_of(svg, "<!--"), 0);
    free(svg);
    scratch_free(&s);
}
END_TEST

/* ---- the programs ---- */

START_TEST(programs_write_curves_and_pages) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char path[256], model[256], out[256], log[256];
    size_t len;
    /* bin/train drew its run at each validation */
    scratch_path(&s, "run/curves.svg", path, sizeof path);
    char *svg = (char *)slurp_file(path, &len);
    ck_assert_msg(svg != NULL, "no %s", path);
    assert_well_formed(svg, path);
    ck_assert_int_eq(count_of(svg, "<polyline class=\"series\""), 6);
    free(svg);
    /* bin/plot overlays two logs */
    scratch_path(&s, "run/train_log.tsv", log, sizeof log);
    scratch_path(&s, "both.svg", out, sizeof out);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/plot", log, log, "-o", out, NULL}, NULL, 20,
                NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    svg = (char *)slurp_file(out, &len);
    ck_assert_ptr_nonnull(svg);
    assert_well_formed(svg, out);
    ck_assert_int_eq(count_of(svg, "<polyline class=\"series\""), 12);
    free(svg);
    /* bin/align and bin/translate write the page */
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    scratch_path(&s, "page.html", out, sizeof out);
    run_program(
        &r, &s,
        (const char *const[]){"../bin/align", "-m", model, "-o", out, "the cat", "a dog", NULL},
        NULL, 30, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    char *page = (char *)slurp_file(out, &len);
    ck_assert_ptr_nonnull(page);
    ck_assert(strncmp(page, "<!DOCTYPE html>", 15) == 0);
    ck_assert_int_eq(count_of(page, "\"q\":\""), 2);
    free(page);
    run_program(&r, &s,
                (const char *const[]){"../bin/translate", "-m", model, "--beam", "2", "--nbest",
                                      "2", "--align", out, "--align-format", "html", "the cat", "",
                                      "a dog", NULL},
                NULL, 30, NULL);
    ck_assert_int_eq(r.status, 1); /* the empty input */
    page = (char *)slurp_file(out, &len);
    ck_assert_ptr_nonnull(page);
    ck_assert_int_eq(count_of(page, "\"q\":\""), 2);
    assert_contains(page, "\"source\":\"a dog\"");
    /* the page keeps the inputs' numbers: "a dog" is argument 3, after the refused empty one
     * (issue #36: it was shown as sentence 2) */
    assert_contains(page, "{\"source\":\"the cat\",\"translation\":");
    assert_contains(page, "\"n\":1,");
    assert_contains(page, "\"n\":3,");
    ck_assert_ptr_null(strstr(page, "\"n\":2,"));
    /* a label of one or two characters is not turned on its side */
    assert_contains(page, "th.src.short span { writing-mode: horizontal-tb; }");
    assert_contains(page, "th.classList.add('short')");
    free(page);
    /* and so does bin/align on standard input with a blank line */
    scratch_write_text(&s, "in.txt", "the cat\n\na dog\n");
    char in[256];
    scratch_path(&s, "in.txt", in, sizeof in);
    run_program(&r, &s, (const char *const[]){"../bin/align", "-m", model, "-o", out, NULL}, in, 30,
                NULL);
    ck_assert_int_eq(r.status, 1); /* the blank line */
    assert_contains(r.err, "line 2");
    page = (char *)slurp_file(out, &len);
    ck_assert_ptr_nonnull(page);
    assert_contains(page, "\"n\":1,");
    assert_contains(page, "\"n\":3,");
    ck_assert_ptr_null(strstr(page, "\"n\":2,"));
    free(page);
    scratch_free(&s);
}
END_TEST

/* -o NAME: an extension of align's own formats chooses the format (or must agree with
 * --format); one of a kind of file align never writes is refused, and nothing is written
 * (issue #45: `-o attention.png` wrote TSV into a .png file without a word). */
START_TEST(align_output_extension_chooses_or_refuses_format) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char model[256], out[256];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    RunResult r;
    static const char *const refused[][3] = {
        {"attention.png", NULL, ".png"},     {"attention.PDF", NULL, ".PDF"},
        {"attention.png", "svg", ".png"},    {"attention.svg", "tsv", ".svg"},
        {"attention.html", "json", ".html"}, {"attention.npy", "text", ".npy"},
    };
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        scratch_path(&s, refused[k][0], out, sizeof out);
        const char *format = refused[k][1] ? refused[k][1] : "tsv";
        const char *const with[] = {"../bin/align", "-m",   model,     "-o", out,
                                    "--format",     format, "the cat", NULL};
        const char *const without[] = {"../bin/align", "-m", model, "-o", out, "the cat", NULL};
        run_program(&r, &s, refused[k][1] ? with : without, NULL, 30, NULL);
        assert_one_line_error(&r, "align", 2, (const char *const[]){refused[k][2], NULL});
        ck_assert_msg(access(out, F_OK) != 0, "%s was written", out);
    }
    /* the extension chooses: .svg, .html, .json, .htm */
    static const char *const chosen[][2] = {{"a.svg", "<svg"},
                                            {"a.html", "<!DOCTYPE html>"},
                                            {"a.htm", "<!DOCTYPE html>"},
                                            {"a.json", "{\"source\": \"the cat\""}};
    for (size_t k = 0; k < sizeof chosen / sizeof chosen[0]; k++) {
        scratch_path(&s, chosen[k][0], out, sizeof out);
        run_program(&r, &s,
                    (const char *const[]){"../bin/align", "-m", model, "-o", out, "the cat", NULL},
                    NULL, 30, NULL);
        ck_assert_msg(r.status == 0, "%s: %s", out, r.err);
        size_t len;
        char *text = (char *)slurp_file(out, &len);
        ck_assert_ptr_nonnull(text);
        ck_assert_msg(strstr(text, chosen[k][1]), "%s does not hold %s", out, chosen[k][1]);
        free(text);
    }
    /* .txt holds any format of lines; a name align does not know takes --format */
    static const char *const allowed[][2] = {{"links.txt", "pharaoh"}, {"weights.dat", "tsv"}};
    for (size_t k = 0; k < sizeof allowed / sizeof allowed[0]; k++) {
        scratch_path(&s, allowed[k][0], out, sizeof out);
        run_program(&r, &s,
                    (const char *const[]){"../bin/align", "-m", model, "-o", out, "--format",
                                          allowed[k][1], "the cat", NULL},
                    NULL, 30, NULL);
        ck_assert_msg(r.status == 0 && access(out, F_OK) == 0, "%s: %s", out, r.err);
    }
    scratch_free(&s);
}
END_TEST

/* ---- make live's checks (live/make-live.sh), which run before emscripten is needed ---- */

/* Runs live/make-live.sh COMPUTE with a stand-in module; MAKE-MODULE touches `built`, which
 * tells whether the checks let it go as far as building the module. */
static void make_live(RunResult *r, const Scratch *s, const char *compute, const char *model,
                      const char *out) {
    char module[256], built[256], make_module[300];
    scratch_path(s, "module.js", module, sizeof module);
    scratch_path(s, "built", built, sizeof built);
    snprintf(make_module, sizeof make_module, "touch '%s'", built);
    run_program(r, s,
                (const char *const[]){"/bin/sh", "../live/make-live.sh", compute, module, model,
                                      out, make_module, NULL},
                NULL, 60, NULL);
}

/* A damaged checkpoint, or OUT naming a folder, is refused before the module is built and
 * nothing is written (issue #45: half a checkpoint, one flipped byte and a truncated int8 file
 * gave "wrote x.html"; OUT=folder exited 0 leaving folder/folder.tmp). */
START_TEST(make_live_refuses_damaged_models_and_folders) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    scratch_write_text(&s, "module.js", "var createLiveModule = null;\n");
    char model[256], int8[256], out[256], built[256], path[256];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    scratch_path(&s, "int8.ckpt", int8, sizeof int8);
    scratch_path(&s, "built", built, sizeof built);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/quantize", model, int8, NULL}, NULL, 30,
                NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    size_t len, len8;
    unsigned char *bytes = slurp_file(model, &len), *bytes8 = slurp_file(int8, &len8);
    ck_assert(bytes && bytes8 && len > 200 && len8 > 200);
    scratch_write(&s, "half.ckpt", bytes, len / 2);
    bytes[len / 2] ^= 0x10;
    scratch_write(&s, "flipped.ckpt", bytes, len);
    scratch_write(&s, "int8-cut.ckpt", bytes8, len8 - 100);
    static const char *const damaged[][2] = {
        {"half.ckpt", "float"}, {"flipped.ckpt", "float"}, {"int8-cut.ckpt", "int8"}};
    for (size_t k = 0; k < sizeof damaged / sizeof damaged[0]; k++) {
        scratch_path(&s, damaged[k][0], path, sizeof path);
        scratch_path(&s, "page.html", out, sizeof out);
        make_live(&r, &s, damaged[k][1], path, out);
        ck_assert_msg(r.status == 1, "%s: exit %d: %s", path, r.status, r.err);
        ck_assert_msg(strstr(r.err, path) && (strstr(r.err, "checksum") || strstr(r.err, "size")),
                      "%s: %s", path, r.err);
        ck_assert_msg(access(out, F_OK) != 0, "%s: a page was written", path);
        ck_assert_msg(access(built, F_OK) != 0, "%s: checked after the module was built", path);
    }
    /* OUT an existing folder: refused, the folder left empty */
    scratch_path(&s, "outdir", out, sizeof out);
    ck_assert_int_eq(mkdir(out, 0755), 0);
    make_live(&r, &s, "float", model, out);
    ck_assert_msg(r.status == 1 && strstr(r.err, "is a folder"), "exit %d: %s", r.status, r.err);
    ck_assert_msg(rmdir(out) == 0, "%s is not empty", out);
    ck_assert(access(built, F_OK) != 0);
    /* a float model into an int8-only request and back: the good paths write the page */
    scratch_path(&s, "page.html", out, sizeof out);
    make_live(&r, &s, "float", int8, out);
    ck_assert_msg(r.status == 1 && strstr(r.err, "int8 checkpoint"), "%s", r.err);
    make_live(&r, &s, "float", model, out);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(access(built, F_OK) == 0, "the module was not built");
    char *page = (char *)slurp_file(out, &len);
    ck_assert_ptr_nonnull(page);
    assert_contains(page, "var createLiveModule = null;");
    assert_contains(page, "\"name\":\"best.ckpt\"");
    free(page);
    free(bytes);
    free(bytes8);
    scratch_free(&s);
}
END_TEST

Suite *pictures_suite(void) {
    Suite *s = suite_create("pictures");
    TCase *html = tcase_create("html");
    tcase_add_test(html, html_parses_html_format);
    tcase_add_test(html, html_hostile_tokens_stay_data);
    tcase_add_test(html, html_codes_give_back_scores_weights_and_probabilities);
    tcase_add_test(html, html_page_of_100_sentences_of_20_tokens_is_small);
    suite_add_tcase(s, html);
    TCase *svg = tcase_create("svg");
    tcase_set_timeout(svg, 60); /* bin/plot runs seven times, slow under the sanitizers */
    tcase_add_test(svg, xml_checker_catches_broken_markup);
    tcase_add_test(svg, attention_svg_is_well_formed);
    tcase_add_test(svg, curves_read_a_log_and_draw_it);
    tcase_add_test(svg, malformed_logs_name_file_and_line);
    tcase_add_test(svg, curves_draw_huge_values_and_normalised_names);
    tcase_add_test(svg, curves_of_hostile_folder_names_stay_well_formed);
    tcase_add_test(svg, svg_noncharacters_become_replacement_characters);
    suite_add_tcase(s, svg);
    TCase *programs = tcase_create("programs");
    tcase_set_timeout(programs, 120);
    tcase_add_test(programs, programs_write_curves_and_pages);
    tcase_add_test(programs, align_output_extension_chooses_or_refuses_format);
    tcase_add_test(programs, make_live_refuses_damaged_models_and_folders);
    suite_add_tcase(s, programs);
    return s;
}

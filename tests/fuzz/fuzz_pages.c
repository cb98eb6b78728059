/*
 * fuzz_pages.c: libFuzzer target for the writers of attention pictures (nmt/pictures/align_html.c,
 * nmt/pictures/align_svg.c): bytes -> a synthetic Alignment (sizes, tokens, texts and scores from the
 * bytes, weights the softmax of the scores) -> alignment_write_svg and alignment_write_html
 * into memory.
 *
 * Besides crashes, it checks that the SVG is one well-formed XML element (a small structure
 * parser: tags nest, attributes are quoted, no raw '<' or stray '&' in text), and that the
 * HTML page keeps its structure whatever the tokens hold: exactly the page's own two
 * <script> elements and its one comment, and in the JSON data block no '<', '>', '&' and no
 * raw U+2028/U+2029 (so no "</script", "<!--" or line end can come from a token). Tokens are
 * made valid UTF-8 without NUL first, as a model's tokens always are (U+FFFE and U+FFFF
 * included: they are valid UTF-8). The rest of the input then makes training curves whose
 * runs are named by raw bytes, as folder names can be (train/curves.c): their SVG must be
 * well-formed too. Every SVG must also be valid UTF-8 of XML characters only. Build and
 * run with `make fuzz`.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "nmt/pictures/align_write.h"
#include "train/curves.h"

enum { MAX_SIDE = 12, MAX_TEXT = 64 };

static void fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_pages: %s: %.300s\n", what, detail);
    abort();
}

/* Reads bytes from the input, zeros once it is used up. */
typedef struct {
    const uint8_t *data;
    size_t size, at;
} Reader;

static uint8_t next_byte(Reader *r) {
    return r->at < r->size ? r->data[r->at++] : 0;
}

/* A string of up to MAX_TEXT bytes from the input (its length first), with every byte that
 * is not part of valid UTF-8, and NUL, replaced by '?'. */
static char *next_text(Reader *r) {
    size_t len = next_byte(r) % (MAX_TEXT + 1);
    char *s = calloc(len + 1, 1);
    if (!s) return NULL;
    for (size_t i = 0; i < len; i++) s[i] = (char)next_byte(r);
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        const char *problem = NULL;
        size_t n = utf8_decode((const unsigned char *)s + i, len - i, &cp, &problem);
        if (problem || n == 0 || cp == 0) {
            s[i++] = '?';
            continue;
        }
        i += n;
    }
    return s;
}

static size_t entity_length(const char *p) {
    static const char *const named[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (size_t k = 0; k < 5; k++)
        if (strncmp(p, named[k], strlen(named[k])) == 0) return strlen(named[k]);
    return 0;
}

static size_t name_length(const char *p) {
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_')) return 0;
    return strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:.-");
}

/* NULL when text is one well-formed XML element of valid UTF-8 and XML characters only (no
 * C0 control but tab and line ends, no U+FFFE or U+FFFF), else what is wrong. The structure
 * check is test_pictures.c's. */
static const char *xml_problem(const char *text) {
    size_t offset;
    if (utf8_find_error(text, strlen(text), &offset)) return "invalid UTF-8";
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        if (c[0] == 0xEF && c[1] == 0xBF && (c[2] == 0xBE || c[2] == 0xBF))
            return "U+FFFE or U+FFFF, which XML forbids";
    enum { DEPTH = 64 };
    const char *open[DEPTH];
    size_t open_len[DEPTH];
    int depth = 0, roots = 0;
    const char *p = text;
    while (*p) {
        if (strncmp(p, "<!--", 4) == 0) {
            const char *end = strstr(p + 4, "-->");
            if (!end) return "unterminated comment";
            p = end + 3;
        } else if (p[0] == '<' && p[1] == '/') {
            size_t n = name_length(p + 2);
            if (depth == 0 || n != open_len[depth - 1] || strncmp(p + 2, open[depth - 1], n))
                return "unexpected end tag";
            depth--;
            p += 2 + n;
            if (*p++ != '>') return "bad end tag";
        } else if (*p == '<') {
            size_t n = name_length(p + 1);
            if (n == 0) return "raw '<'";
            if (depth == 0 && roots++ > 0) return "second root";
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
                if (an == 0 || p[an] != '=' || p[an + 1] != '"') return "bad attribute";
                for (p += an + 2; *p != '"'; p++) {
                    if (*p == '\0' || *p == '<') return "bad attribute value";
                    if (*p == '&' && entity_length(p) == 0) return "stray '&' in an attribute";
                }
                p++;
            }
        } else {
            if (*p == '&' && entity_length(p) == 0) return "stray '&'";
            if ((unsigned char)*p < 0x20 && !strchr("\n\t\r", *p)) return "control character";
            if (depth == 0 && !strchr(" \n\t\r", *p)) return "text outside the root";
            p++;
        }
    }
    if (depth) return "element never closed";
    return roots == 1 ? NULL : "no root element";
}

static int count_of(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what)) n++;
    return n;
}

static void check_html(const char *page) {
    if (strncmp(page, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n", 40) != 0)
        fail("html", "does not start as a page");
    size_t len = strlen(page);
    static const char tail[] = "</script>\n</body>\n</html>\n";
    if (len < sizeof tail - 1 || strcmp(page + len - (sizeof tail - 1), tail) != 0)
        fail("html", "does not end as a page");
    if (count_of(page, "<script") != 2 || count_of(page, "</script") != 2)
        fail("html", "other script elements than the page's two");
    if (count_of(page, "<!--") != 1 || count_of(page, "-->") != 1)
        fail("html", "other comments than the page's one");
    if (count_of(page, "<title>") != 1 || count_of(page, "</title>") != 1)
        fail("html", "the title is broken");
    const char *start = strstr(page, "<script type=\"application/json\" id=\"alignment-data\">");
    if (!start) fail("html", "no data block");
    start = strchr(start, '>') + 1;
    const char *end = strstr(start, "</script>");
    for (const char *p = start; p < end; p++) {
        if (*p == '<' || *p == '>' || *p == '&') fail("html: raw markup in the data", p);
        if ((unsigned char)p[0] == 0xE2 && (unsigned char)p[1] == 0x80 &&
            ((unsigned char)p[2] == 0xA8 || (unsigned char)p[2] == 0xA9))
            fail("html: raw U+2028/9 in the data", p);
        if ((unsigned char)*p < 0x20 && *p != '\n') fail("html: control character in the data", p);
    }
}

/* Writes with one writer into memory and returns the text (free it). */
static char *page_of(int (*write)(FILE *, const Alignment *, int, Error *), const Alignment *a,
                     int n) {
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (!out) return NULL;
    Error err;
    int status = write(out, a, n, &err);
    if (fclose(out) != 0 || status != 0) fail("writer failed", err.msg);
    if (strlen(text) != size) fail("writer", "wrote a NUL byte");
    return text;
}

/* A string of up to MAX_TEXT bytes from the input as they are, but for NUL: a folder name. */
static char *next_raw_text(Reader *r) {
    size_t len = next_byte(r) % (MAX_TEXT + 1);
    char *s = calloc(len + 1, 1);
    if (!s) return NULL;
    for (size_t i = 0; i < len; i++) {
        s[i] = (char)next_byte(r);
        if (s[i] == '\0') s[i] = '/';
    }
    return s;
}

/* Training curves of up to three runs named by raw bytes (bin/plot names a run by its
 * folder, and a path can hold any byte), points from the input: the SVG must be well-formed. */
static void check_curves(Reader *r) {
    CurveRun runs[3] = {{0}};
    int n = 1 + next_byte(r) % 3;
    bool ok = true;
    for (int k = 0; k < n && ok; k++) {
        int points = 1 + next_byte(r) % 8;
        runs[k].label = next_raw_text(r);
        runs[k].points = calloc((size_t)points, sizeof *runs[k].points);
        ok = runs[k].label && runs[k].points;
        for (int i = 0; i < points && ok; i++) {
            uint8_t b = next_byte(r), flags = next_byte(r);
            runs[k].points[i] = (CurvePoint){.step = 100.0 * (i + 1) + b,
                                             .loss = b / 16.0,
                                             .dev_loss = flags & 1 ? NAN : b / 20.0,
                                             .dev_bleu = flags & 2 ? NAN : b / 2.55,
                                             .elapsed_s = (i + 1) * (1.0 + (flags >> 2))};
        }
        runs[k].n = points;
    }
    char *svg = NULL;
    size_t size = 0;
    FILE *out = ok ? open_memstream(&svg, &size) : NULL;
    if (out) {
        Error err;
        int status = curves_write_svg(out, runs, n, &err);
        if (fclose(out) != 0 || status != 0) fail("curves writer failed", err.msg);
        const char *problem = xml_problem(svg);
        if (problem) fail(problem, svg);
    }
    free(svg);
    for (int k = 0; k < 3; k++) curve_run_free(&runs[k]);
}

/* Builds one alignment from the input; false when out of memory (a is then freeable). */
static bool make_alignment(Alignment *a, Reader *r) {
    memset(a, 0, sizeof *a);
    a->rows = 1 + next_byte(r) % MAX_SIDE;
    a->cols = 1 + next_byte(r) % MAX_SIDE;
    uint8_t flags = next_byte(r);
    a->complete = flags & 1;
    a->subwords = flags & 2;
    a->lowercase = flags & 4;
    size_t cells = (size_t)a->rows * a->cols;
    a->alpha = calloc(cells, sizeof(real));
    a->energy = calloc(cells, sizeof(real));
    a->prob = calloc((size_t)a->rows, sizeof(real));
    a->src_tokens = calloc((size_t)a->cols, sizeof(char *));
    a->tgt_tokens = calloc((size_t)a->rows, sizeof(char *));
    if (!a->alpha || !a->energy || !a->prob || !a->src_tokens || !a->tgt_tokens) return false;
    for (int i = 0; i < a->cols; i++)
        if (!(a->src_tokens[i] = next_text(r))) return false;
    for (int t = 0; t < a->rows; t++)
        if (!(a->tgt_tokens[t] = next_text(r))) return false;
    if (!(a->source = next_text(r)) || !(a->translation = next_text(r))) return false;
    if ((flags & 8) && !(a->reference = next_text(r))) return false;
    /* scores in [-32, 32), a few of them -inf as a masked position is; weights their softmax */
    for (int t = 0; t < a->rows; t++) {
        real *e = a->energy + (size_t)t * a->cols, *w = a->alpha + (size_t)t * a->cols;
        double top = -INFINITY, sum = 0;
        for (int i = 0; i < a->cols; i++) {
            uint8_t b = next_byte(r);
            e[i] = b == 255 && i > 0 ? -INFINITY : (real)((b - 128) / 4.0);
            top = fmax(top, e[i]);
        }
        for (int i = 0; i < a->cols; i++) sum += exp(e[i] - top);
        for (int i = 0; i < a->cols; i++) w[i] = (real)(exp(e[i] - top) / sum);
        a->prob[t] = (real)(next_byte(r) / 255.0);
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Reader r = {data, size, 0};
    Alignment list[2];
    int n = 1 + (next_byte(&r) & 1);
    bool ok = true;
    for (int k = 0; k < n; k++) ok = make_alignment(&list[k], &r) && ok;
    if (ok) {
        char *svg = page_of(alignment_write_svg, list, n);
        if (svg) {
            const char *problem = xml_problem(svg);
            if (problem) fail(problem, svg);
            free(svg);
        }
        char *html = page_of(alignment_write_html, list, n);
        if (html) {
            check_html(html);
            free(html);
        }
    }
    for (int k = 0; k < n; k++) alignment_free(&list[k]);
    check_curves(&r);
    return 0;
}

/*
 * worked.c: parses a worked example of attention (see worked.h for the file's language),
 * computes each step the notes compute by hand, exactly in double precision, and compares the
 * notes' published numbers with the exact ones.
 *
 * The parser reads the whole file into memory and walks it with a cursor that knows the line
 * and column, so every error names FILE:LINE:COLUMN. Nothing here has a fixed-size buffer
 * that input can reach: values, rows and token lists grow as needed, up to WORKED_MAX_DIM.
 */
#include "notes/worked.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the cursor and its errors ---- */

typedef struct {
    const char *s; /* NUL-terminated copy of the file (strtod reads from it) */
    size_t len, pos;
    int line, col; /* of s[pos], 1-based; columns count characters, not bytes */
    const char *path;
    Error *err;
} Cursor;

static int peek(const Cursor *c) {
    return c->pos < c->len ? (unsigned char)c->s[c->pos] : -1;
}

static void advance(Cursor *c) {
    unsigned char ch = (unsigned char)c->s[c->pos++];
    if (ch == '\n') {
        c->line++;
        c->col = 1;
    } else if ((ch & 0xC0) != 0x80) {
        /* a lead byte: the character's continuation bytes do not move the column */
        c->col++;
    }
}

static int error_at(Error *err, const char *path, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int error_at(Error *err, const char *path, int line, int col, const char *fmt, ...) {
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return error_set(err, "%.200s:%d:%d: %s", path, line, col, what);
}

/* What stands at the cursor, for "found ..." in messages: the word there (at most 40 bytes,
 * cut at a character boundary), or "end of line" / "end of file". */
static const char *describe_here(const Cursor *c, char *buf, size_t size) {
    int ch = peek(c);
    if (ch < 0) return "end of file";
    if (ch == '\n' || ch == '\r') return "end of line";
    size_t n = 0, limit = size - 3 < 40 ? size - 3 : 40;
    buf[n++] = '\'';
    for (size_t i = c->pos; i < c->len && n < limit; i++) {
        unsigned char b = (unsigned char)c->s[i];
        if (i > c->pos && (b == ' ' || b == '\t' || b == '\r' || b == '\n' || b == ',' ||
                           b == '[' || b == ']' || b == '#'))
            break;
        if (i == c->pos && (b == ',' || b == '[' || b == ']' || b == '#' || b == '=')) {
            buf[n++] = (char)b;
            break;
        }
        buf[n++] = (char)b;
    }
    /* a character cut at the limit is left out (the text is valid UTF-8) */
    size_t last = n - 1;
    while (last > 1 && ((unsigned char)buf[last] & 0xC0) == 0x80) last--;
    unsigned char lead = (unsigned char)buf[last];
    size_t bytes = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (last + bytes > n) n = last;
    buf[n++] = '\'';
    buf[n] = '\0';
    return buf;
}

static int error_here(Cursor *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int error_here(Cursor *c, const char *fmt, ...) {
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return error_at(c->err, c->path, c->line, c->col, "%s", what);
}

/* The file is UTF-8 text: a NUL byte (a binary file), an invalid UTF-8 sequence (overlong,
 * surrogate, beyond U+10FFFF, cut short) or a control character is reported where it is. */
static int check_text(Cursor *c) {
    Cursor at = *c;
    while (at.pos < at.len) {
        const unsigned char *p = (const unsigned char *)at.s + at.pos;
        size_t left = at.len - at.pos;
        unsigned b = p[0];
        if (b == 0) return error_here(&at, "NUL byte: this is not a text file");
        if (b < 0x80) {
            if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7f)
                return error_here(&at, "control character 0x%02x in the text", b);
            advance(&at);
            continue;
        }
        size_t need = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
        unsigned cp = need == 4 ? b & 0x07 : need == 3 ? b & 0x0F : b & 0x1F;
        int ok = need > 0 && b < 0xF5 && left >= need;
        for (size_t i = 1; ok && i < need; i++) {
            ok = (p[i] & 0xC0) == 0x80;
            cp = cp << 6 | (p[i] & 0x3F);
        }
        static const unsigned smallest[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (!ok || cp < smallest[need] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return error_here(&at, "invalid UTF-8 (byte 0x%02x)", b);
        for (size_t i = 0; i < need; i++) advance(&at);
    }
    return 0;
}

/* ---- growing arrays ---- */

/* Makes room for `need` elements of `size` bytes in *p (capacity *cap). */
static int grow(void *p, int *cap, int need, size_t size, const char *what, Error *err) {
    void **pp = p;
    if (need <= *cap) return 0;
    int n = *cap ? *cap : 8;
    while (n < need) n *= 2;
    void *q = realloc(*pp, (size_t)n * size);
    if (!q) return error_set(err, "out of memory growing %s to %d entries", what, n);
    *pp = q;
    *cap = n;
    return 0;
}

/* ---- lexical pieces ---- */

static int is_blank(int ch) {
    return ch == ' ' || ch == '\t' || ch == '\r';
}

static int is_name_char(int ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '.';
}

static void skip_blanks(Cursor *c) {
    while (is_blank(peek(c))) advance(c);
}

static void skip_comment(Cursor *c) {
    while (peek(c) >= 0 && peek(c) != '\n') advance(c);
}

/* Inside brackets a value may go on over several lines, with comments (as the notes write
 * their matrices, one row a line with the row's word after a #). */
static void skip_space(Cursor *c) {
    for (;;) {
        int ch = peek(c);
        if (is_blank(ch) || ch == '\n')
            advance(c);
        else if (ch == '#')
            skip_comment(c);
        else
            return;
    }
}

static int is_number_start(const Cursor *c) {
    int ch = peek(c);
    return (ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.';
}

/* A finite decimal number: [+-] digits [. digits] [e [+-] digits]. strtod alone would also
 * take "nan", "inf" and hexadecimal, none of which a hand computation writes. */
static int parse_number(Cursor *c, double *out) {
    char found[64];
    size_t start = c->pos;
    int line = c->line, col = c->col, digits = 0;
    if (!is_number_start(c))
        return error_here(c, "expected a number, found %s", describe_here(c, found, sizeof found));
    if (peek(c) == '-' || peek(c) == '+') advance(c);
    while (peek(c) >= '0' && peek(c) <= '9') advance(c), digits++;
    if (peek(c) == '.') {
        advance(c);
        while (peek(c) >= '0' && peek(c) <= '9') advance(c), digits++;
    }
    int bad = digits == 0;
    if (!bad && (peek(c) == 'e' || peek(c) == 'E')) {
        advance(c);
        if (peek(c) == '-' || peek(c) == '+') advance(c);
        bad = !(peek(c) >= '0' && peek(c) <= '9');
        while (peek(c) >= '0' && peek(c) <= '9') advance(c);
    }
    if (bad || is_name_char(peek(c))) {
        Cursor at = *c;
        at.pos = start;
        return error_at(c->err, c->path, line, col,
                        "expected a number, found %s (numbers are finite decimals like -1.5e3)",
                        describe_here(&at, found, sizeof found));
    }
    char *end;
    errno = 0;
    double v = strtod(c->s + start, &end);
    if (end != c->s + c->pos)
        return error_at(c->err, c->path, line, col, "cannot read this number");
    if (errno == ERANGE && fabs(v) > 1) {
        Cursor at = *c;
        at.pos = start;
        return error_at(c->err, c->path, line, col, "%s is out of the range of a double",
                        describe_here(&at, found, sizeof found));
    }
    /* an underflow (1e-400) reads as 0 or a subnormal: a value like any other */
    *out = v;
    return 0;
}

/* Numbers of one bracketed list whose '[' the caller has consumed, up to and with its ']'. */
static int parse_row(Cursor *c, double **buf, int *cap, int *count, int open_line, int open_col) {
    int n = 0;
    skip_space(c);
    if (peek(c) == ']') return error_at(c->err, c->path, open_line, open_col, "empty list []");
    for (;;) {
        if (peek(c) < 0)
            return error_at(c->err, c->path, open_line, open_col, "'[' is never closed");
        if (peek(c) == '[')
            return error_here(c, "too many '[': a matrix is [[a, b], [c, d]], a vector [a, b]");
        if (n >= WORKED_MAX_DIM)
            return error_here(c, "more than %d numbers in one row", WORKED_MAX_DIM);
        double v;
        if (grow(buf, cap, *count + n + 1, sizeof **buf, "a matrix", c->err) || parse_number(c, &v))
            return -1;
        (*buf)[*count + n++] = v;
        skip_space(c);
        if (peek(c) == ',') {
            advance(c);
            skip_space(c);
            if (peek(c) == ']') return error_here(c, "expected a number after ','");
        }
        if (peek(c) == ']') {
            advance(c);
            break;
        }
    }
    *count += n;
    return n;
}

/* A number, a vector [a, b, ...] (1 x n) or a matrix [[a, b], [c, d]] (rows x cols). */
static int parse_value(Cursor *c, WorkedValue *val) {
    double *buf = NULL;
    int cap = 0, count = 0;
    char found[64];
    if (peek(c) != '[') {
        if (!is_number_start(c))
            return error_here(c, "expected a number or '[', found %s",
                              describe_here(c, found, sizeof found));
        double v;
        if (parse_number(c, &v)) return -1;
        val->m.v = checked_calloc(1, sizeof(double), "a number", c->err);
        if (!val->m.v) return -1;
        val->m.v[0] = v;
        val->m.rows = val->m.cols = 1;
        val->is_vector = 1;
        return 0;
    }
    int open_line = c->line, open_col = c->col;
    advance(c);
    skip_space(c);
    if (peek(c) != '[') {
        int n = parse_row(c, &buf, &cap, &count, open_line, open_col);
        if (n < 0) {
            free(buf);
            return -1;
        }
        val->m = (WorkedMatrix){1, n, buf};
        val->is_vector = 1;
        return 0;
    }
    int rows = 0, cols = 0;
    for (;;) {
        int row_line = c->line, row_col = c->col;
        if (rows >= WORKED_MAX_DIM) {
            free(buf);
            return error_here(c, "more than %d rows", WORKED_MAX_DIM);
        }
        advance(c); /* the row's '[' */
        int n = parse_row(c, &buf, &cap, &count, row_line, row_col);
        if (n < 0) {
            free(buf);
            return -1;
        }
        if (rows > 0 && n != cols) {
            free(buf);
            return error_at(c->err, c->path, row_line, row_col,
                            "ragged matrix: row %d has %d number%s, row 1 has %d", rows + 1, n,
                            n == 1 ? "" : "s", cols);
        }
        cols = n;
        rows++;
        skip_space(c);
        if (peek(c) == ',') {
            advance(c);
            skip_space(c);
        } else if (peek(c) == ']') {
            advance(c);
            break;
        }
        if (peek(c) < 0) {
            free(buf);
            return error_at(c->err, c->path, open_line, open_col, "'[' is never closed");
        }
        if (peek(c) != '[') {
            free(buf);
            return error_here(
                c, "expected '[' (the next row) or ']' (closing the '[' at %d:%d), found %s",
                open_line, open_col, describe_here(c, found, sizeof found));
        }
    }
    val->m = (WorkedMatrix){rows, cols, buf};
    val->is_vector = 0;
    return 0;
}

/* ---- names ---- */

static const char *const INPUT_NAMES[] = {"X", "W_Q", "W_K", "W_V", "W_a", "q", "Q", "K",
                                          "V", "s",   "h",   "W_q", "W_k", "b", "v"};
#define INPUT_NAME_COUNT (int)(sizeof INPUT_NAMES / sizeof INPUT_NAMES[0])
#define INPUT_NAME_LIST                                                                            \
    "X, W_Q, W_K, W_V (self); q or Q, K, V (cross); s, h, W_q, W_k, b, v (additive); W_a "         \
    "(general)"

static int is_input_name(const char *name) {
    for (int i = 0; i < INPUT_NAME_COUNT; i++)
        if (strcmp(name, INPUT_NAMES[i]) == 0) return 1;
    return 0;
}

static const WorkedValue *find_input(const WorkedFile *wf, const char *name) {
    for (int i = 0; i < wf->n_inputs; i++)
        if (strcmp(wf->inputs[i].name, name) == 0) return &wf->inputs[i];
    return NULL;
}

static const char *const KIND_NAMES[] = {"none", "self", "cross", "additive"};
static const char *const SCORE_NAMES[] = {"none", "dot", "scaled_dot", "general", "additive"};

/* "self-attention", for messages */
static const char *kind_title(WorkedKind kind) {
    static const char *const titles[] = {"attention", "self-attention", "cross-attention",
                                         "additive attention"};
    return kind >= 0 && kind <= WORKED_ADDITIVE ? titles[kind] : "attention";
}

const char *worked_kind_name(WorkedKind kind) {
    return kind >= 0 && kind <= WORKED_ADDITIVE ? KIND_NAMES[kind] : "?";
}

const char *worked_score_name(WorkedScore score) {
    return score >= 0 && score <= WORKED_ADDITIVE_SCORE ? SCORE_NAMES[score] : "?";
}

int worked_score_parse(const char *text, WorkedScore *out) {
    for (int i = WORKED_DOT; i <= WORKED_ADDITIVE_SCORE; i++)
        if (strcmp(text, SCORE_NAMES[i]) == 0) {
            *out = (WorkedScore)i;
            return 0;
        }
    return -1;
}

/* ---- statements ---- */

/* tokens = w1 w2 ...: words separated by blanks, up to the end of the line or a '#'. */
static int parse_tokens(Cursor *c, WorkedTokens *t, int line, int col) {
    int cap = 0;
    t->line = line;
    t->col = col;
    for (;;) {
        skip_blanks(c);
        int ch = peek(c);
        if (ch < 0 || ch == '\n' || ch == '#') break;
        if (t->count >= WORKED_MAX_DIM) return error_here(c, "more than %d tokens", WORKED_MAX_DIM);
        size_t start = c->pos;
        while (peek(c) >= 0 && !is_blank(peek(c)) && peek(c) != '\n' && peek(c) != '#') advance(c);
        if (grow(&t->words, &cap, t->count + 1, sizeof *t->words, "tokens", c->err)) return -1;
        t->words[t->count] = checked_strndup(c->s + start, c->pos - start, "a name", c->err);
        if (!t->words[t->count]) return -1;
        t->count++;
    }
    if (t->count == 0) return error_at(c->err, c->path, line, col, "no tokens after '='");
    return 0;
}

/* kind = WORD or score = WORD. */
static int parse_word(Cursor *c, char *word, size_t size) {
    size_t n = 0;
    while (is_name_char(peek(c)) && n + 1 < size) {
        word[n++] = (char)peek(c);
        advance(c);
    }
    word[n] = '\0';
    return is_name_char(peek(c)) ? -1 : 0; /* too long to be any of the words */
}

static int parse_setting(Cursor *c, WorkedFile *wf, int is_kind, int line, int col) {
    char word[32], found[64];
    int *seen_line = is_kind ? &wf->kind_line : &wf->score_line;
    if (*seen_line)
        return error_at(c->err, c->path, line, col, "%s is already given at line %d",
                        is_kind ? "kind" : "score", *seen_line);
    Cursor at = *c;
    int bad = parse_word(c, word, sizeof word);
    if (is_kind) {
        int k = 0;
        for (int i = WORKED_SELF; !bad && i <= WORKED_ADDITIVE; i++)
            if (strcmp(word, KIND_NAMES[i]) == 0) k = i;
        if (bad || !k)
            return error_here(&at, "unknown kind %s (self, cross or additive)",
                              describe_here(&at, found, sizeof found));
        wf->kind = (WorkedKind)k;
        wf->kind_line = line;
        wf->kind_col = col;
    } else {
        if (bad || worked_score_parse(word, &wf->score))
            return error_here(&at, "unknown score %s (dot, scaled_dot, general or additive)",
                              describe_here(&at, found, sizeof found));
        wf->score_line = line;
        wf->score_col = col;
    }
    return 0;
}

/* A row or column number of expect.STEP[ROW, COLUMN], below WORKED_MAX_DIM. */
static int parse_index(Cursor *c, int *out) {
    long r = 0;
    int digits = 0;
    skip_blanks(c);
    while (peek(c) >= '0' && peek(c) <= '9' && r < WORKED_MAX_DIM) {
        r = r * 10 + (peek(c) - '0');
        digits++;
        advance(c);
    }
    skip_blanks(c);
    if (!digits || r >= WORKED_MAX_DIM) return -1;
    *out = (int)r;
    return 0;
}

/* NAME = VALUE or expect.STEP[ROW] = VALUE, up to the end of the line (a value in brackets
 * may go on over several lines). */
static int parse_statement(Cursor *c, WorkedFile *wf, int *input_cap, int *expect_cap) {
    int line = c->line, col = c->col;
    char found[64];
    size_t start = c->pos;
    if (!((peek(c) >= 'a' && peek(c) <= 'z') || (peek(c) >= 'A' && peek(c) <= 'Z') ||
          peek(c) == '_'))
        return error_here(c, "expected a name (like X or expect.Q), found %s",
                          describe_here(c, found, sizeof found));
    while (is_name_char(peek(c))) advance(c);
    size_t n = c->pos - start;
    const char *name = c->s + start;
    if (n > 64) return error_at(c->err, c->path, line, col, "name longer than 64 characters");
    char text[72];
    memcpy(text, name, n);
    text[n] = '\0';

    int is_expect = strncmp(text, "expect.", 7) == 0;
    const char *step = text + 7;
    int row = -1, column = -1;
    if (is_expect) {
        if (!*step || strchr(step, '.'))
            return error_at(c->err, c->path, line, col,
                            "'%s': expected expect.STEP (like expect.Q or expect.weights)", text);
        if (peek(c) == '[') {
            advance(c);
            if (parse_index(c, &row) ||
                (peek(c) == ',' && (advance(c), skip_blanks(c), parse_index(c, &column))) ||
                peek(c) != ']')
                return error_here(c, "expected expect.%s[ROW] or expect.%s[ROW, COLUMN]", step,
                                  step);
            advance(c);
        }
    } else if (strchr(text, '.')) {
        return error_at(c->err, c->path, line, col,
                        "unknown name '%s' (only expect.STEP has a dot)", text);
    } else if (strcmp(text, "tokens") && strcmp(text, "source_tokens") && strcmp(text, "kind") &&
               strcmp(text, "score") && !is_input_name(text)) {
        return error_at(c->err, c->path, line, col, "unknown name '%s' (inputs: %s)", text,
                        INPUT_NAME_LIST);
    }
    skip_blanks(c);
    if (peek(c) != '=')
        return error_here(c, "expected '=' after %s, found %s", text,
                          describe_here(c, found, sizeof found));
    advance(c);
    skip_blanks(c);

    if (strcmp(text, "tokens") == 0 || strcmp(text, "source_tokens") == 0) {
        WorkedTokens *t = text[0] == 't' ? &wf->tokens : &wf->source_tokens;
        if (t->line)
            return error_at(c->err, c->path, line, col, "%s is already given at line %d", text,
                            t->line);
        return parse_tokens(c, t, line, col);
    }
    if (strcmp(text, "kind") == 0 || strcmp(text, "score") == 0) {
        if (parse_setting(c, wf, text[0] == 'k', line, col)) return -1;
    } else {
        /* the same name twice is a mistake whichever value was meant */
        WorkedValue *list = is_expect ? wf->expects : wf->inputs;
        int count = is_expect ? wf->n_expects : wf->n_inputs;
        const char *key = is_expect ? step : text;
        for (int i = 0; i < count; i++)
            if (strcmp(list[i].name, key) == 0 && list[i].row == row && list[i].column == column)
                return error_at(c->err, c->path, line, col, "%s is already given at line %d", text,
                                list[i].line);
        int *cap = is_expect ? expect_cap : input_cap;
        WorkedValue **arr = is_expect ? &wf->expects : &wf->inputs;
        if (grow(arr, cap, count + 1, sizeof **arr, "the values", c->err)) return -1;
        WorkedValue *val = &(*arr)[count];
        *val = (WorkedValue){.row = row, .column = column, .line = line, .col = col};
        val->name = checked_strndup(key, strlen(key), "a name", c->err);
        if (!val->name) return -1;
        if (is_expect)
            wf->n_expects++;
        else
            wf->n_inputs++;
        if (parse_value(c, val)) return -1;
    }
    skip_blanks(c);
    if (peek(c) == '#') skip_comment(c);
    if (peek(c) >= 0 && peek(c) != '\n')
        return error_here(c, "unexpected %s after the value",
                          describe_here(c, found, sizeof found));
    return 0;
}

int worked_parse(WorkedFile *wf, const char *path, const char *text, size_t len, Error *err) {
    *wf = (WorkedFile){0};
    if (len > WORKED_MAX_FILE)
        return error_set(err, "%.200s:1:1: larger than %u bytes: not a hand computation", path,
                         WORKED_MAX_FILE);
    wf->path = checked_strndup(path, strlen(path), "a name", err);
    char *copy = checked_calloc(len + 1, 1, "the file's text", err);
    if (!wf->path || !copy) {
        free(copy);
        worked_file_free(wf);
        return -1;
    }
    memcpy(copy, text, len);
    Cursor c = {.s = copy, .len = len, .line = 1, .col = 1, .path = wf->path, .err = err};
    int failed = check_text(&c);
    if (!failed && len >= 3 && memcmp(copy, "\xEF\xBB\xBF", 3) == 0) c.pos = 3; /* a BOM */
    int input_cap = 0, expect_cap = 0;
    while (!failed) {
        skip_blanks(&c);
        int ch = peek(&c);
        if (ch < 0) break;
        if (ch == '\n')
            advance(&c);
        else if (ch == '#')
            skip_comment(&c);
        else
            failed = parse_statement(&c, wf, &input_cap, &expect_cap);
    }
    free(copy);
    if (failed) {
        worked_file_free(wf);
        return -1;
    }
    return 0;
}

int worked_read(WorkedFile *wf, const char *path, Error *err) {
    *wf = (WorkedFile){0};
    int from_stdin = strcmp(path, "-") == 0;
    FILE *f = from_stdin ? stdin : fopen(path, "rb");
    if (!f) return error_set(err, "%.200s: cannot open: %s", path, strerror(errno));
    /* a file known to be too large is refused before any of it is read */
    struct stat st;
    if (!from_stdin && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
        (uintmax_t)st.st_size > WORKED_MAX_FILE) {
        fclose(f);
        return error_set(err, "%.200s:1:1: larger than %u bytes: not a hand computation", path,
                         WORKED_MAX_FILE);
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int failed = 0;
    for (;;) {
        if (len == cap) {
            if (cap > WORKED_MAX_FILE) break; /* worked_parse says it is too large */
            cap = cap ? cap * 2 : 4096;
            char *nb = realloc(buf, cap);
            if (!nb) {
                failed = error_set(err, "%.200s: out of memory reading the file", path);
                break;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f))
                failed =
                    error_set(err, "%.200s: cannot read: %s", path, strerror(errno ? errno : EIO));
            break;
        }
    }
    if (!from_stdin) fclose(f);
    if (!failed) failed = worked_parse(wf, from_stdin ? "<stdin>" : path, buf ? buf : "", len, err);
    free(buf);
    return failed ? -1 : 0;
}

static void tokens_free(WorkedTokens *t) {
    for (int i = 0; i < t->count; i++) free(t->words[i]);
    free(t->words);
    *t = (WorkedTokens){0};
}

void worked_file_free(WorkedFile *wf) {
    if (!wf) return;
    for (int i = 0; i < wf->n_inputs; i++) {
        free(wf->inputs[i].name);
        free(wf->inputs[i].m.v);
    }
    for (int i = 0; i < wf->n_expects; i++) {
        free(wf->expects[i].name);
        free(wf->expects[i].m.v);
    }
    free(wf->inputs);
    free(wf->expects);
    tokens_free(&wf->tokens);
    tokens_free(&wf->source_tokens);
    free(wf->path);
    *wf = (WorkedFile){0};
}

/* ---- the computation ---- */

static double at(const WorkedMatrix *m, int i, int j) {
    return m->v[(size_t)i * m->cols + j];
}

static double *at_mut(WorkedMatrix *m, int i, int j) {
    return &m->v[(size_t)i * m->cols + j];
}

/* Appends a rows x cols step of zeros; returns it, or NULL after setting err. */
static WorkedStep *step_new(WorkedRun *run, const char *name, const char *formula, int rows,
                            int cols, WorkedLabels row_labels, WorkedLabels col_labels,
                            Error *err) {
    if (run->n_steps >= WORKED_MAX_STEPS) {
        error_set(err, "internal: more than %d steps", WORKED_MAX_STEPS);
        return NULL;
    }
    WorkedStep *s = &run->steps[run->n_steps];
    s->m.v = checked_calloc((size_t)rows * (size_t)cols, sizeof(double), name, err);
    if (!s->m.v) return NULL;
    s->m.rows = rows;
    s->m.cols = cols;
    s->name = name;
    s->formula = formula;
    s->row_labels = row_labels;
    s->col_labels = col_labels;
    run->n_steps++;
    return s;
}

/* C = A B: C_ij = sum_k A_ik B_kj */
static void matmul(WorkedMatrix *C, const WorkedMatrix *A, const WorkedMatrix *B) {
    for (int i = 0; i < C->rows; i++)
        for (int j = 0; j < C->cols; j++) {
            double sum = 0;
            for (int k = 0; k < A->cols; k++) sum += at(A, i, k) * at(B, k, j);
            *at_mut(C, i, j) = sum;
        }
}

/* C = A B^T: C_ij = sum_k A_ik B_jk (a row of A dotted with a row of B) */
static void matmul_bt(WorkedMatrix *C, const WorkedMatrix *A, const WorkedMatrix *B) {
    for (int i = 0; i < C->rows; i++)
        for (int j = 0; j < C->cols; j++) {
            double sum = 0;
            for (int k = 0; k < A->cols; k++) sum += at(A, i, k) * at(B, j, k);
            *at_mut(C, i, j) = sum;
        }
}

/* Where a missing input or a whole-example error is reported: the kind line, else the value
 * the kind was inferred from. */
typedef struct {
    const WorkedFile *wf;
    int line, col;
} Anchor;

static int need_input(const Anchor *a, const char *kind, const char *name, const char *why,
                      const WorkedValue **out, Error *err) {
    *out = find_input(a->wf, name);
    if (*out) return 0;
    return error_at(err, a->wf->path, a->line, a->col, "%s needs %s (%s)", kind, name, why);
}

static int shape_error(const WorkedFile *wf, const WorkedValue *v, Error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int shape_error(const WorkedFile *wf, const WorkedValue *v, Error *err, const char *fmt,
                       ...) {
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return error_at(err, wf->path, v->line, v->col, "%s", what);
}

/* A token list labels one row each of `what` (count rows). */
static int tokens_fit(const WorkedFile *wf, const WorkedTokens *t, const char *tname, int count,
                      const char *what, Error *err) {
    if (!t->line || t->count == count) return 0;
    return error_at(err, wf->path, t->line, t->col, "%d %s, but %s has %d row%s (one token a row)",
                    t->count, tname, what, count, count == 1 ? "" : "s");
}

/* From the logits (the scores after scaling, if any) on, every kind computes the same:
 *   exp_ij     = e^(l_ij)                              (as the notes print them)
 *   sums_i     = sum_j exp_ij
 *   weights_ij = e^(l_ij - max_j l_ij) / sum_j e^(l_ij - max_j l_ij)   (= exp_ij / sums_i)
 *   output_i   = sum_j weights_ij V_j
 * The weights are computed shifted by the row's maximum so that they stay exact when e^l
 * alone would overflow. */
static int softmax_and_sum(WorkedRun *run, int logits, const WorkedMatrix *V, WorkedLabels rows,
                           WorkedLabels cols, const char *out_name, const char *out_formula,
                           Error *err) {
    int m = run->steps[logits].m.rows, n = run->steps[logits].m.cols;
    const char *exp_formula = strcmp(run->steps[logits].name, "scaled") == 0
                                  ? "exp = e^scaled, element by element"
                                  : "exp = e^scores, element by element";
    WorkedStep *e = step_new(run, "exp", exp_formula, m, n, rows, cols, err);
    if (!e) return -1;
    WorkedStep *s =
        step_new(run, "sums", "sums = each row's sum of exp", m, 1, rows, WORKED_LABEL_NONE, err);
    if (!s) return -1;
    WorkedStep *w = step_new(run, "weights", "weights = exp / sums (softmax of each row)", m, n,
                             rows, cols, err);
    if (!w) return -1;
    WorkedStep *o = step_new(run, out_name, out_formula, m, V->cols, rows, WORKED_LABEL_NONE, err);
    if (!o) return -1;
    const WorkedMatrix *L = &run->steps[logits].m;
    for (int i = 0; i < m; i++) {
        double max = at(L, i, 0), sum = 0, shifted = 0;
        for (int j = 1; j < n; j++) max = fmax(max, at(L, i, j));
        for (int j = 0; j < n; j++) {
            *at_mut(&e->m, i, j) = exp(at(L, i, j));
            sum += at(&e->m, i, j);
            *at_mut(&w->m, i, j) = exp(at(L, i, j) - max);
            shifted += at(&w->m, i, j);
        }
        *at_mut(&s->m, i, 0) = sum;
        for (int j = 0; j < n; j++) *at_mut(&w->m, i, j) /= shifted;
    }
    matmul(&o->m, &w->m, V);
    return 0;
}

/* The scores of dot, scaled_dot and general, from queries Q [m, d_q] and keys K [n, d_k]:
 *   dot:        scores = Q K^T
 *   general:    scores = Q W_a K^T        (q_i . (W_a k_j), W_a [d_q, d_k])
 *   scaled_dot: scores = Q K^T, then scaled = scores / sqrt(d_k)
 * Returns the index of the logits step (scaled for scaled_dot, scores otherwise). */
static int dot_scores(WorkedRun *run, const WorkedMatrix *Q, const WorkedMatrix *K,
                      const WorkedMatrix *W_a, const char *formula, WorkedLabels rows,
                      WorkedLabels cols, Error *err) {
    WorkedStep *sc = step_new(run, "scores", formula, Q->rows, K->rows, rows, cols, err);
    if (!sc) return -1;
    int scores = run->n_steps - 1;
    if (run->score == WORKED_GENERAL) {
        WorkedMatrix QW = {Q->rows, W_a->cols, NULL};
        QW.v = checked_calloc((size_t)QW.rows * QW.cols, sizeof(double), "Q W_a", err);
        if (!QW.v) return -1;
        matmul(&QW, Q, W_a);
        matmul_bt(&run->steps[scores].m, &QW, K);
        free(QW.v);
    } else {
        matmul_bt(&sc->m, Q, K);
    }
    if (run->score != WORKED_SCALED_DOT) return scores;
    WorkedStep *scale = step_new(run, "scale", "scale = sqrt(d_k)", 1, 1, WORKED_LABEL_NONE,
                                 WORKED_LABEL_NONE, err);
    if (!scale) return -1;
    scale->m.v[0] = sqrt((double)run->d_k);
    WorkedStep *scaled =
        step_new(run, "scaled", "scaled = scores / sqrt(d_k)", Q->rows, K->rows, rows, cols, err);
    if (!scaled) return -1;
    const WorkedMatrix *S = &run->steps[scores].m;
    for (int i = 0; i < S->rows; i++)
        for (int j = 0; j < S->cols; j++) *at_mut(&scaled->m, i, j) = at(S, i, j) / scale->m.v[0];
    return run->n_steps - 1;
}

/* The score needs: dot and scaled_dot equal query and key sizes, general a W_a that fits. */
static int check_score_shapes(const WorkedFile *wf, WorkedScore score, const WorkedValue *q,
                              const char *qname, int d_q, const WorkedValue *k, const char *kname,
                              int d_k, Error *err) {
    const WorkedValue *W_a = find_input(wf, "W_a");
    if (score != WORKED_GENERAL) {
        if (W_a)
            return shape_error(wf, W_a, err, "W_a is used only by score = general (this is %s)",
                               worked_score_name(score));
        if (d_q != d_k)
            return shape_error(wf, k, err,
                               "%s gives keys of size %d but %s gives queries of size %d: %s "
                               "needs them equal (or score = general with W_a)",
                               kname, d_k, qname, d_q, worked_score_name(score));
        return 0;
    }
    if (!W_a)
        return shape_error(wf, q, err, "score = general needs W_a [%d x %d] (q . (W_a k))", d_q,
                           d_k);
    if (W_a->m.rows != d_q || W_a->m.cols != d_k)
        return shape_error(wf, W_a, err, "W_a is %d x %d, but score = general needs %d x %d here",
                           W_a->m.rows, W_a->m.cols, d_q, d_k);
    return 0;
}

/* Self-attention, the notes' way (rows are tokens):
 *   Q = X W_Q,  K = X W_K,  V = X W_V,  output = softmax_rows(scores) V */
static int run_self(WorkedRun *run, const WorkedFile *wf, const Anchor *a, Error *err) {
    const WorkedValue *X, *WQ, *WK, *WV;
    if (need_input(a, "self-attention", "X", "the tokens' vectors, one row each", &X, err) ||
        need_input(a, "self-attention", "W_Q", "Q = X W_Q", &WQ, err) ||
        need_input(a, "self-attention", "W_K", "K = X W_K", &WK, err) ||
        need_input(a, "self-attention", "W_V", "V = X W_V", &WV, err))
        return -1;
    int d = X->m.cols;
    const WorkedValue *W[3] = {WQ, WK, WV};
    const char *const names[3] = {"W_Q", "W_K", "W_V"};
    for (int i = 0; i < 3; i++)
        if (W[i]->m.rows != d)
            return shape_error(wf, W[i], err,
                               "%s has %d row%s, but X has %d columns (%c = X %s needs one row "
                               "of %s per column of X)",
                               names[i], W[i]->m.rows, W[i]->m.rows == 1 ? "" : "s", d, "QKV"[i],
                               names[i], names[i]);
    if (check_score_shapes(wf, run->score, WQ, "W_Q", WQ->m.cols, WK, "W_K", WK->m.cols, err))
        return -1;
    if (tokens_fit(wf, &wf->tokens, "tokens", X->m.rows, "X", err)) return -1;
    run->d_k = WK->m.cols;
    int n = X->m.rows;
    WorkedStep *Q =
        step_new(run, "Q", "Q = X W_Q", n, WQ->m.cols, WORKED_LABEL_TOKENS, WORKED_LABEL_NONE, err);
    if (!Q) return -1;
    matmul(&Q->m, &X->m, &WQ->m);
    WorkedStep *K =
        step_new(run, "K", "K = X W_K", n, WK->m.cols, WORKED_LABEL_TOKENS, WORKED_LABEL_NONE, err);
    if (!K) return -1;
    matmul(&K->m, &X->m, &WK->m);
    WorkedStep *V =
        step_new(run, "V", "V = X W_V", n, WV->m.cols, WORKED_LABEL_TOKENS, WORKED_LABEL_NONE, err);
    if (!V) return -1;
    matmul(&V->m, &X->m, &WV->m);
    const WorkedValue *W_a = find_input(wf, "W_a");
    int logits = dot_scores(run, &Q->m, &K->m, W_a ? &W_a->m : NULL,
                            run->score == WORKED_GENERAL ? "scores = Q W_a K^T" : "scores = Q K^T",
                            WORKED_LABEL_TOKENS, WORKED_LABEL_TOKENS, err);
    if (logits < 0) return -1;
    return softmax_and_sum(run, logits, &V->m, WORKED_LABEL_TOKENS, WORKED_LABEL_TOKENS, "output",
                           "output = weights V", err);
}

/* Cross-attention from given queries (q, one vector, or Q, one row each), keys K and values
 * V (one row per source token): context = softmax_rows(scores) V. */
static int run_cross(WorkedRun *run, const WorkedFile *wf, const Anchor *a, Error *err) {
    const WorkedValue *q = find_input(wf, "q"), *Qm = find_input(wf, "Q"), *K, *V;
    if (q && Qm)
        return shape_error(wf, Qm, err, "both q (line %d) and Q: give one of them", q->line);
    if (!q) q = Qm;
    if (!q)
        return error_at(err, wf->path, a->line, a->col,
                        "cross-attention needs a query q (or queries Q, one row each)");
    if (need_input(a, "cross-attention", "K", "the keys, one row per source token", &K, err) ||
        need_input(a, "cross-attention", "V", "the values, one row per source token", &V, err))
        return -1;
    if (V->m.rows != K->m.rows)
        return shape_error(wf, V, err, "V has %d rows, but K has %d (one of each per source token)",
                           V->m.rows, K->m.rows);
    if (check_score_shapes(wf, run->score, q, q->name, q->m.cols, K, "K", K->m.cols, err) ||
        tokens_fit(wf, &wf->source_tokens, "source_tokens", K->m.rows, "K", err) ||
        tokens_fit(wf, &wf->tokens, "tokens", q->m.rows, q->name, err))
        return -1;
    run->d_k = K->m.cols;
    const WorkedValue *W_a = find_input(wf, "W_a");
    int logits = dot_scores(run, &q->m, &K->m, W_a ? &W_a->m : NULL,
                            run->score == WORKED_GENERAL ? "scores = q W_a K^T" : "scores = q K^T",
                            WORKED_LABEL_TOKENS, WORKED_LABEL_SOURCE, err);
    if (logits < 0) return -1;
    return softmax_and_sum(run, logits, &V->m, WORKED_LABEL_TOKENS, WORKED_LABEL_SOURCE, "context",
                           "context = weights V", err);
}

/* Additive (Bahdanau) attention, MODEL-SPEC.md's notation (matrices act on column vectors):
 *   k_i = W_k h_i,  e_i = v . tanh(W_q s + k_i + b),  alpha = softmax(e),  c = sum_i alpha_i h_i */
static int run_additive(WorkedRun *run, const WorkedFile *wf, const Anchor *a, Error *err) {
    const WorkedValue *s, *h, *Wq, *Wk, *b, *v;
    if (need_input(a, "additive attention", "s", "the decoder state, the query", &s, err) ||
        need_input(a, "additive attention", "h", "the encoder states, one row per source token", &h,
                   err) ||
        need_input(a, "additive attention", "W_q", "W_q s", &Wq, err) ||
        need_input(a, "additive attention", "W_k", "W_k h_i", &Wk, err) ||
        need_input(a, "additive attention", "b", "the bias inside tanh", &b, err) ||
        need_input(a, "additive attention", "v", "e_i = v . tanh(...)", &v, err))
        return -1;
    if (find_input(wf, "W_a"))
        return shape_error(wf, find_input(wf, "W_a"), err,
                           "W_a is used only by score = general, not by additive attention");
    if (s->m.rows != 1)
        return shape_error(wf, s, err, "s is one decoder state: a vector [a, b, ...], not %d rows",
                           s->m.rows);
    int A = Wq->m.rows;
    if (Wq->m.cols != s->m.cols)
        return shape_error(wf, Wq, err,
                           "W_q has %d columns, but s has %d numbers (W_q s needs one column of "
                           "W_q per number of s)",
                           Wq->m.cols, s->m.cols);
    if (Wk->m.cols != h->m.cols)
        return shape_error(wf, Wk, err,
                           "W_k has %d columns, but each row h_i of h has %d numbers (W_k h_i "
                           "needs them equal)",
                           Wk->m.cols, h->m.cols);
    if (Wk->m.rows != A)
        return shape_error(wf, Wk, err, "W_k has %d rows, but W_q has %d (both give A numbers)",
                           Wk->m.rows, A);
    if (b->m.rows != 1 || b->m.cols != A)
        return shape_error(wf, b, err, "b is %d x %d, but it must be a vector of %d numbers",
                           b->m.rows, b->m.cols, A);
    if (v->m.rows != 1 || v->m.cols != A)
        return shape_error(wf, v, err, "v is %d x %d, but it must be a vector of %d numbers",
                           v->m.rows, v->m.cols, A);
    if (tokens_fit(wf, &wf->source_tokens, "source_tokens", h->m.rows, "h", err) ||
        tokens_fit(wf, &wf->tokens, "tokens", 1, "s", err))
        return -1;
    run->d_k = A;
    int n = h->m.rows;
    WorkedStep *qs =
        step_new(run, "Wq_s", "Wq_s = W_q s", 1, A, WORKED_LABEL_TOKENS, WORKED_LABEL_NONE, err);
    if (!qs) return -1;
    matmul_bt(&qs->m, &s->m, &Wq->m);
    WorkedStep *kh = step_new(run, "Wk_h", "Wk_h = W_k h_i (row i)", n, A, WORKED_LABEL_SOURCE,
                              WORKED_LABEL_NONE, err);
    if (!kh) return -1;
    matmul_bt(&kh->m, &h->m, &Wk->m);
    WorkedStep *pre = step_new(run, "pre", "pre = W_q s + W_k h_i + b (row i)", n, A,
                               WORKED_LABEL_SOURCE, WORKED_LABEL_NONE, err);
    if (!pre) return -1;
    WorkedStep *th = step_new(run, "tanh", "tanh = tanh(pre)", n, A, WORKED_LABEL_SOURCE,
                              WORKED_LABEL_NONE, err);
    if (!th) return -1;
    WorkedStep *e = step_new(run, "scores", "scores = e_i = v . tanh_i", 1, n, WORKED_LABEL_TOKENS,
                             WORKED_LABEL_SOURCE, err);
    if (!e) return -1;
    for (int i = 0; i < n; i++) {
        double energy = 0;
        for (int j = 0; j < A; j++) {
            double x = at(&qs->m, 0, j) + at(&kh->m, i, j) + at(&b->m, 0, j);
            *at_mut(&pre->m, i, j) = x;
            *at_mut(&th->m, i, j) = tanh(x);
            energy += at(&v->m, 0, j) * tanh(x);
        }
        *at_mut(&e->m, 0, i) = energy;
    }
    return softmax_and_sum(run, run->n_steps - 1, &h->m, WORKED_LABEL_TOKENS, WORKED_LABEL_SOURCE,
                           "context", "context = weights h (c = sum_i alpha_i h_i)", err);
}

/* The kind: the file's kind line, else the one its inputs name (X: self, K: cross, h:
 * additive); inputs of another kind are an error rather than silently unused. */
static int choose_kind(const WorkedFile *wf, WorkedKind *kind, Anchor *a, Error *err) {
    static const char *const marks[] = {NULL, "X", "K", "h"};
    const WorkedValue *found[4] = {0};
    int seen = 0;
    for (int k = WORKED_SELF; k <= WORKED_ADDITIVE; k++)
        if ((found[k] = find_input(wf, marks[k]))) seen++;
    a->wf = wf;
    if (wf->kind) {
        *kind = wf->kind;
        a->line = wf->kind_line;
        a->col = wf->kind_col;
    } else if (seen == 1) {
        for (int k = WORKED_SELF; k <= WORKED_ADDITIVE; k++)
            if (found[k]) {
                *kind = (WorkedKind)k;
                a->line = found[k]->line;
                a->col = found[k]->col;
            }
    } else if (seen == 0) {
        return error_set(err,
                         "%.200s:1:1: nothing to compute: no X (self-attention), K "
                         "(cross-attention) or h (additive attention)",
                         wf->path);
    } else {
        const WorkedValue *second = found[3] ? found[3] : found[2];
        return shape_error(wf, second, err,
                           "cannot tell the kind of attention from the names (X is "
                           "self-attention, K cross, h additive): add kind = self|cross|additive");
    }
    static const char *const allowed[4][7] = {
        {NULL},
        {"X", "W_Q", "W_K", "W_V", "W_a", NULL},
        {"q", "Q", "K", "V", "W_a", NULL},
        {"s", "h", "W_q", "W_k", "b", "v", NULL},
    };
    for (int i = 0; i < wf->n_inputs; i++) {
        int ok = 0;
        for (int j = 0; allowed[*kind][j]; j++)
            ok |= strcmp(wf->inputs[i].name, allowed[*kind][j]) == 0;
        if (!ok)
            return shape_error(wf, &wf->inputs[i], err, "%s is not an input of %s",
                               wf->inputs[i].name, kind_title(*kind));
    }
    if (*kind == WORKED_SELF && wf->source_tokens.line)
        return error_at(err, wf->path, wf->source_tokens.line, wf->source_tokens.col,
                        "source_tokens is for cross or additive attention (self-attention's "
                        "labels are tokens)");
    return 0;
}

/* The score: the file's line, else the request, else the notes' default for the kind. */
static int choose_score(const WorkedFile *wf, WorkedKind kind, WorkedScore requested,
                        WorkedScore *score, Error *err) {
    if (wf->score && requested && wf->score != requested)
        return error_at(err, wf->path, wf->score_line, wf->score_col,
                        "the file says score = %s, but %s was asked for: drop one of them",
                        worked_score_name(wf->score), worked_score_name(requested));
    *score = wf->score ? wf->score : requested;
    if (!*score) *score = kind == WORKED_ADDITIVE ? WORKED_ADDITIVE_SCORE : WORKED_SCALED_DOT;
    if ((kind == WORKED_ADDITIVE) != (*score == WORKED_ADDITIVE_SCORE)) {
        int line = wf->score ? wf->score_line : 1, col = wf->score ? wf->score_col : 1;
        return error_at(err, wf->path, line, col,
                        "score %s does not go with %s (additive attention has the "
                        "additive score, the others dot, scaled_dot or general)",
                        worked_score_name(*score), kind_title(kind));
    }
    return 0;
}

int worked_step_index(const WorkedRun *run, const char *name) {
    for (int i = 0; i < run->n_steps; i++)
        if (strcmp(run->steps[i].name, name) == 0) return i;
    return -1;
}

/* Each published result names a step, and has its shape (or is one row of it, or a flat
 * list for a step of one row or one column). */
static int map_expects(WorkedRun *run, const WorkedFile *wf, Error *err) {
    if (wf->n_expects == 0) return 0;
    run->expect_step = checked_calloc((size_t)wf->n_expects, sizeof(int), "expectations", err);
    if (!run->expect_step) return -1;
    for (int i = 0; i < wf->n_expects; i++) {
        const WorkedValue *e = &wf->expects[i];
        int k = worked_step_index(run, e->name);
        if (k < 0) {
            char list[256] = "";
            for (int j = 0; j < run->n_steps; j++) {
                size_t used = strlen(list);
                snprintf(list + used, sizeof list - used, "%s%s", j ? ", " : "",
                         run->steps[j].name);
            }
            return shape_error(wf, e, err, "no step '%s' in %s (steps: %s)", e->name,
                               kind_title(run->kind), list);
        }
        const WorkedMatrix *m = &run->steps[k].m;
        if (e->column >= 0) {
            if (e->row >= m->rows || e->column >= m->cols)
                return shape_error(wf, e, err, "expect.%s[%d, %d]: %s is %d x %d", e->name, e->row,
                                   e->column, e->name, m->rows, m->cols);
            if (e->m.rows * e->m.cols != 1)
                return shape_error(wf, e, err, "expect.%s[%d, %d] is one number, not %d x %d",
                                   e->name, e->row, e->column, e->m.rows, e->m.cols);
        } else if (e->row >= 0) {
            if (e->row >= m->rows)
                return shape_error(wf, e, err, "expect.%s[%d]: %s has %d row%s (0 to %d)", e->name,
                                   e->row, e->name, m->rows, m->rows == 1 ? "" : "s", m->rows - 1);
            if (!e->is_vector || e->m.cols != m->cols)
                return shape_error(wf, e, err,
                                   "expect.%s[%d] has %d number%s, but a row of %s has %d", e->name,
                                   e->row, e->m.rows * e->m.cols,
                                   e->m.rows * e->m.cols == 1 ? "" : "s", e->name, m->cols);
        } else {
            int flat_fits =
                e->is_vector && (m->rows == 1 || m->cols == 1) && e->m.cols == m->rows * m->cols;
            if (!flat_fits && (e->m.rows != m->rows || e->m.cols != m->cols))
                return shape_error(wf, e, err, "expect.%s is %d x %d, but %s is %d x %d", e->name,
                                   e->m.rows, e->m.cols, e->name, m->rows, m->cols);
        }
        run->expect_step[i] = k;
    }
    return 0;
}

int worked_run(WorkedRun *run, const WorkedFile *wf, WorkedScore requested, Error *err) {
    *run = (WorkedRun){0};
    Anchor a = {wf, 1, 1};
    if (choose_kind(wf, &run->kind, &a, err) ||
        choose_score(wf, run->kind, requested, &run->score, err))
        return -1;
    int failed = run->kind == WORKED_SELF    ? run_self(run, wf, &a, err)
                 : run->kind == WORKED_CROSS ? run_cross(run, wf, &a, err)
                                             : run_additive(run, wf, &a, err);
    /* huge inputs (1e200 squared) or large scores (e^800) leave the range of double */
    for (int k = 0; !failed && k < run->n_steps; k++) {
        const WorkedMatrix *m = &run->steps[k].m;
        for (int i = 0; !failed && i < m->rows * m->cols; i++)
            if (!isfinite(m->v[i]))
                failed = error_at(err, wf->path, a.line, a.col,
                                  "step %s overflows a double at [%d, %d]: the numbers are too "
                                  "large to compute exactly",
                                  run->steps[k].name, i / m->cols, i % m->cols);
    }
    if (!failed) failed = map_expects(run, wf, err);
    if (failed) {
        worked_run_free(run);
        return -1;
    }
    return 0;
}

void worked_run_free(WorkedRun *run) {
    if (!run) return;
    for (int i = 0; i < run->n_steps; i++) free(run->steps[i].m.v);
    free(run->expect_step);
    *run = (WorkedRun){0};
}

int worked_check(WorkedCheck *chk, const WorkedRun *run, const WorkedFile *wf, double tolerance,
                 Error *err) {
    *chk = (WorkedCheck){0};
    int cap = 0;
    if (wf->n_expects == 0) return 0;
    chk->compared = checked_calloc((size_t)wf->n_expects, sizeof(int), "the check", err);
    if (!chk->compared) return -1;
    for (int i = 0; i < wf->n_expects; i++) {
        const WorkedValue *e = &wf->expects[i];
        const WorkedMatrix *m = &run->steps[run->expect_step[i]].m;
        int count = e->m.rows * e->m.cols;
        for (int k = 0; k < count; k++) {
            /* a row: its columns; a flat list for a one-column step: its rows */
            int row = e->row >= 0 ? e->row : m->cols == 1 && e->is_vector ? k : k / m->cols;
            int col = e->column >= 0                 ? e->column
                      : e->row >= 0                  ? k
                      : m->cols == 1 && e->is_vector ? 0
                                                     : k % m->cols;
            double exact = at(m, row, col), published = e->m.v[k];
            if (!(fabs(published - exact) <= tolerance)) {
                if (grow(&chk->diffs, &cap, chk->count + 1, sizeof *chk->diffs, "the check", err)) {
                    worked_check_free(chk);
                    return -1;
                }
                chk->diffs[chk->count++] =
                    (WorkedDiff){i, run->expect_step[i], row, col, published, exact};
            }
        }
        chk->compared[i] = count;
    }
    return 0;
}

void worked_check_free(WorkedCheck *chk) {
    if (!chk) return;
    free(chk->diffs);
    free(chk->compared);
    *chk = (WorkedCheck){0};
}

/*
 * corpus.c: the parallel corpus reader (see corpus.h).
 *
 * Both readers hand one line at a time to add_line(), which does all the checking, so the
 * file and in-memory paths cannot drift apart. The stream reader takes lines of up to
 * LINE_MOST_BYTES (base/files.h), so a file without line ends is refused, not read whole.
 */
#include "data/corpus.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/files.h"
#include "data/tokenizer.h"

void corpus_free(Corpus *corpus) {
    for (size_t i = 0; i < corpus->count; i++) {
        free(corpus->src[i]);
        free(corpus->tgt[i]);
    }
    free(corpus->src);
    free(corpus->tgt);
    free(corpus->line);
    *corpus = (Corpus){0};
}

static int add_pair(Corpus *corpus, const char *src, size_t src_len, const char *tgt,
                    size_t tgt_len, size_t line_number, Error *err) {
    if (corpus->count == corpus->capacity) {
        size_t capacity = corpus->capacity ? 2 * corpus->capacity : 256;
        /* capacity is updated only once all three arrays have grown, so a failure part way
         * leaves a consistent (if roomier) corpus for corpus_free */
        char **grown_src = realloc(corpus->src, capacity * sizeof *grown_src);
        if (grown_src) corpus->src = grown_src;
        char **grown_tgt = grown_src ? realloc(corpus->tgt, capacity * sizeof *grown_tgt) : NULL;
        if (grown_tgt) corpus->tgt = grown_tgt;
        size_t *grown_line =
            grown_tgt ? realloc(corpus->line, capacity * sizeof *grown_line) : NULL;
        if (!grown_line)
            return error_set(err, "out of memory growing a corpus to %zu pairs", capacity);
        corpus->line = grown_line;
        corpus->capacity = capacity;
    }
    char *src_copy = checked_strndup(src, src_len, "a sentence", err);
    char *tgt_copy = src_copy ? checked_strndup(tgt, tgt_len, "a sentence", err) : NULL;
    if (!tgt_copy) {
        free(src_copy);
        return -1;
    }
    corpus->src[corpus->count] = src_copy;
    corpus->tgt[corpus->count] = tgt_copy;
    corpus->line[corpus->count] = line_number;
    corpus->count++;
    return 0;
}

/* True when text[0..len) holds nothing but ASCII spaces (a sentence that tokenizes to nothing). */
static bool is_blank(const char *text, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (text[i] != ' ') return false;
    return true;
}

/* Checks one line (its '\n', if any, included in len) and adds its pair to the corpus. */
static int add_line(Corpus *corpus, const char *line, size_t len, size_t line_number,
                    const char *name, Error *err) {
    size_t start = 0;
    if (line_number == 1 && len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) start = 3;
    if (len > start && line[len - 1] == '\n') len--;
    if (len > start && line[len - 1] == '\r') len--;
    if (len == start) {
        corpus->empty_lines++;
        return 0;
    }
    /* columns are 1-based byte positions in the line as stored, byte-order mark included */
    const char *nul = memchr(line, '\0', len);
    if (nul)
        return error_set(err, "%s:%zu: NUL byte at column %zu", name, line_number,
                         (size_t)(nul - line) + 1);
    /* whitespace to the tokenizer, so a file of lines ended by \r alone (an old Mac's) was read
     * as one pair of every line's text, silently */
    const char *cr = memchr(line, '\r', len);
    if (cr)
        return error_set(err,
                         "%s:%zu: carriage return at column %zu inside the line (are its lines "
                         "ended by \\r alone? end them with \\n)",
                         name, line_number, (size_t)(cr - line) + 1);
    size_t offset;
    const char *problem = utf8_find_error(line + start, len - start, &offset);
    if (problem)
        return error_set(err, "%s:%zu: invalid UTF-8 at column %zu: %s", name, line_number,
                         start + offset + 1, problem);
    uint32_t control;
    if (utf8_find_control(line + start, len - start, &offset, &control))
        return error_set(err, "%s:%zu: control character U+%04X at column %zu", name, line_number,
                         (unsigned)control, start + offset + 1);
    const char *src = line + start, *end = line + len;
    const char *tab = memchr(src, '\t', (size_t)(end - src));
    if (!tab) return error_set(err, "%s:%zu: no tab between source and target", name, line_number);
    const char *tgt = tab + 1;
    const char *tgt_end = memchr(tgt, '\t', (size_t)(end - tgt));
    if (!tgt_end) tgt_end = end;
    size_t src_len = (size_t)(tab - src), tgt_len = (size_t)(tgt_end - tgt);
    if (is_blank(src, src_len))
        return error_set(err, "%s:%zu: empty source sentence", name, line_number);
    if (is_blank(tgt, tgt_len))
        return error_set(err, "%s:%zu: empty target sentence", name, line_number);
    if (add_pair(corpus, src, src_len, tgt, tgt_len, line_number, err) != 0)
        return error_prefix(err, "%s:%zu: ", name, line_number);
    return 0;
}

/* A corpus without pairs is an error: training on nothing is never what was meant. */
static int require_pairs(const Corpus *corpus, const char *name, Error *err) {
    if (corpus->count > 0) return 0;
    if (corpus->empty_lines > 0)
        return error_set(err, "%s: no sentence pairs, only %zu empty lines", name,
                         corpus->empty_lines);
    return error_set(err, "%s: no sentence pairs (empty input)", name);
}

int corpus_read_stream(FILE *in, const char *name, Corpus *out, Error *err) {
    *out = (Corpus){0};
    char *line = NULL;
    size_t line_capacity = 0, line_number = 0;
    int status = 0;
    for (;;) {
        long got = read_line_with_end(in, &line, &line_capacity);
        if (got == -3) status = error_set(err, "%s:%zu: %s", name, line_number + 1, LINE_TOO_LONG);
        if (got == -2) status = error_set(err, "cannot read %s: %s", name, strerror(errno));
        if (got < 0) break;
        status = add_line(out, line, (size_t)got, ++line_number, name, err);
        if (status != 0) break;
    }
    free(line);
    if (status == 0) status = require_pairs(out, name, err);
    if (status != 0) corpus_free(out);
    return status;
}

int corpus_read_file(const char *path, Corpus *out, Error *err) {
    *out = (Corpus){0};
    FILE *in = fopen(path, "rb");
    if (!in) return error_set(err, "cannot open %s: %s", path, strerror(errno));
    /* fopen succeeds on a directory on Linux; say so plainly instead of a later read error */
    struct stat info;
    if (fstat(fileno(in), &info) == 0 && S_ISDIR(info.st_mode)) {
        fclose(in);
        return error_set(err, "cannot read %s: %s", path, strerror(EISDIR));
    }
    int status = corpus_read_stream(in, path, out, err);
    fclose(in);
    return status;
}

int corpus_read_string(const char *text, size_t len, const char *name, Corpus *out, Error *err) {
    *out = (Corpus){0};
    size_t line_number = 0, at = 0;
    while (at < len) {
        const char *newline = memchr(text + at, '\n', len - at);
        size_t line_len = newline ? (size_t)(newline - (text + at)) + 1 : len - at;
        if (add_line(out, text + at, line_len, ++line_number, name, err) != 0) {
            corpus_free(out);
            return -1;
        }
        at += line_len;
    }
    if (require_pairs(out, name, err) != 0) {
        corpus_free(out);
        return -1;
    }
    return 0;
}

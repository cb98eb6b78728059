/*
 * words.c: tokens merged into words, hard word links and their alignment error rate (see
 * words.h).
 */
#include "nmt/words.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/files.h"
#include "data/corpus.h"
#include "data/bpe.h"
#include "data/lossless.h"
#include "data/tokenizer.h"

/* ---- words ------------------------------------------------------------------------------ */

void word_map_free(WordMap *map) {
    free(map->word_of);
    memset(map, 0, sizeof *map);
}

/* The separators of the gold alignments' words (the corpus generator joins with spaces). */
static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int word_map_from_text(WordMap *map, const char *text, const char *const *tokens, int n,
                       Error *err) {
    memset(map, 0, sizeof *map);
    map->word_of = checked_calloc((size_t)n + 1, sizeof(int), "word map", err);
    if (!map->word_of) return -1;
    map->n_tokens = n;
    size_t len = strlen(text), at = 0;
    int word = -1;
    bool apart = true; /* a separator of words lies between the last token and here */
    for (int k = 0; k < n; k++) {
        const char *t = tokens[k];
        size_t chars = 0;
        uint32_t cp;
        for (size_t i = 0, tn = strlen(t); i < tn; chars++)
            i += utf8_decode((const unsigned char *)t + i, tn - i, &cp, NULL) ?: 1;
        /* the token's characters are the next `chars` ones the tokenizer does not leave out */
        for (size_t c = 0; c < chars;) {
            if (at >= len) {
                word_map_free(map);
                return error_set(err, "the tokens run past the end of the text");
            }
            size_t step = utf8_decode((const unsigned char *)text + at, len - at, &cp, NULL);
            if (step == 0) step = 1;
            at += step;
            if (tokenizer_is_space(cp)) {
                apart = apart || (cp < 0x80 && is_space((char)cp));
                continue;
            }
            if (c++ == 0 && apart) word++, apart = false;
        }
        map->word_of[k] = word < 0 ? 0 : word;
    }
    map->n_words = word + 1;
    return 0;
}

/* Which joined token each of pieces[0..n) belongs to, by bpe_join's rule: a piece ending in
 * the marker continues its token, any other ends it, and a token is made only when its pieces
 * add text. A piece of no token (a trailing empty one) goes with the last token. Returns the
 * number of tokens. */
static int pieces_to_tokens(const char *const *pieces, int n, int *token_of) {
    size_t marker = strlen(BPE_MARKER);
    int tokens = 0, open_has_text = 0;
    for (int k = 0; k < n; k++) {
        size_t len = strlen(pieces[k]);
        int more = len >= marker && strcmp(pieces[k] + len - marker, BPE_MARKER) == 0;
        if (len > (more ? marker : 0)) open_has_text = 1;
        token_of[k] = tokens;
        if (!more && open_has_text) tokens++;
        if (!more) open_has_text = 0;
    }
    if (open_has_text) tokens++;
    for (int k = 0; k < n; k++)
        if (token_of[k] >= tokens) token_of[k] = tokens > 0 ? tokens - 1 : 0;
    return tokens;
}

int word_map_expand_pieces(WordMap *map, const char *const *pieces, int n, Error *err) {
    int *token_of = checked_calloc((size_t)n + 1, sizeof(int), "word map", err);
    int *word_of = checked_calloc((size_t)n + 1, sizeof(int), "word map", err);
    int rc = token_of && word_of ? 0 : -1;
    if (rc == 0) {
        int tokens = pieces_to_tokens(pieces, n, token_of);
        if (tokens != map->n_tokens || (tokens == 0 && n > 0))
            rc = error_set(err, "%d pieces join into %d tokens, the words have %d", n, tokens,
                           map->n_tokens);
    }
    for (int k = 0; k < n && rc == 0; k++)
        word_of[k] = map->n_tokens ? map->word_of[token_of[k]] : 0;
    free(token_of);
    if (rc) {
        free(word_of);
        return -1;
    }
    free(map->word_of);
    map->word_of = word_of, map->n_tokens = n;
    return 0;
}

int word_map_from_tokens(WordMap *map, const char *const *tokens, int n, Error *err) {
    memset(map, 0, sizeof *map);
    map->word_of = checked_calloc((size_t)n + 1, sizeof(int), "word map", err);
    if (!map->word_of) return -1;
    map->n_tokens = n;
    /* detokenize decides the space before token k from tokens 0..k only, so each prefix's
     * text extends the previous one: a space between them starts a new word */
    size_t before = 0;
    for (int k = 0; k < n; k++) {
        char *text = detokenize(tokens, (size_t)k + 1, err);
        if (!text) {
            word_map_free(map);
            return -1;
        }
        size_t len = strlen(text);
        if (k == 0 || (len > before && text[before] == ' ')) map->n_words++;
        map->word_of[k] = map->n_words - 1;
        before = len;
        free(text);
    }
    return 0;
}

static int compare_links(const void *a, const void *b) {
    const WordLink *x = a, *y = b;
    return x->src != y->src ? (x->src > y->src) - (x->src < y->src)
                            : (x->tgt > y->tgt) - (x->tgt < y->tgt);
}

int word_links(const real *alpha, int rows, int cols, const WordMap *src, const WordMap *tgt,
               WordLink **links, int *n, Error *err) {
    *links = NULL, *n = 0;
    if (cols != src->n_tokens + 1 || (rows != tgt->n_tokens && rows != tgt->n_tokens + 1))
        return error_set(err, "a %d x %d matrix does not fit %d source and %d target tokens", rows,
                         cols, src->n_tokens, tgt->n_tokens);
    size_t SW = (size_t)src->n_words, TW = (size_t)tgt->n_words;
    double *sum = checked_calloc(SW * TW + 1, sizeof(double), "word matrix", err);
    int *has_token = checked_calloc(TW + 1, sizeof(int), "word matrix", err); /* counts */
    *links = checked_calloc(TW + 1, sizeof(WordLink), "word links", err);
    if (!sum || !has_token || !*links) {
        free(sum), free(has_token), free(*links);
        *links = NULL;
        return -1;
    }
    /* a source word's weight is the sum over its tokens (its share of the row); a target
     * word's row is the mean of its tokens' rows (added here, divided below; the argmax is
     * the sum's). The </s> row and column are left out. */
    for (int t = 0; t < tgt->n_tokens; t++) {
        size_t j = (size_t)tgt->word_of[t];
        has_token[j]++;
        for (int i = 0; i < src->n_tokens; i++)
            sum[j * SW + (size_t)src->word_of[i]] += alpha[(size_t)t * cols + i];
    }
    for (size_t j = 0; j < TW && SW > 0; j++) {
        if (!has_token[j]) continue;
        for (size_t i = 0; i < SW; i++) sum[j * SW + i] /= has_token[j];
        size_t best = 0;
        for (size_t i = 1; i < SW; i++)
            if (sum[j * SW + i] > sum[j * SW + best]) best = i;
        (*links)[(*n)++] = (WordLink){.src = (int)best, .tgt = (int)j};
    }
    qsort(*links, (size_t)*n, sizeof **links, compare_links);
    free(sum), free(has_token);
    return 0;
}

/* The words of a lossless model's pieces[0..n): a piece that starts with the marker and holds
 * text after it starts a new word, once the current word has text (so that a run of spaces,
 * whose pieces are markers alone, splits no word in two). */
static int word_map_from_lossless(WordMap *map, const char *const *pieces, int n, Error *err) {
    memset(map, 0, sizeof *map);
    map->word_of = checked_calloc((size_t)n + 1, sizeof(int), "word map", err);
    if (!map->word_of) return -1;
    map->n_tokens = n;
    int word = 0;
    bool has_text = false;
    for (int k = 0; k < n; k++) {
        const char *p = pieces[k];
        while (lossless_starts_word(p)) p += strlen(LOSSLESS_MARKER);
        bool text = *p != '\0';
        if (p != pieces[k] && text && has_text) word++, has_text = false;
        map->word_of[k] = word;
        has_text = has_text || text;
    }
    map->n_words = n > 0 ? word + 1 : 0;
    return 0;
}

/* The word map of an output: its tokens' words, expanded to its pieces for a model with
 * subwords (the pieces are joined into tokens first, as the translation's text is). */
static int output_word_map(WordMap *map, const Alignment *a, Error *err) {
    const char *const *units = (const char *const *)a->tgt_tokens;
    int n = a->rows - a->complete;
    if (a->lossless) return word_map_from_lossless(map, units, n, err);
    if (!a->subwords) return word_map_from_tokens(map, units, n, err);
    TokenList tokens = {0};
    if (bpe_join(units, (size_t)n, &tokens, err)) return -1;
    int rc = word_map_from_tokens(map, (const char *const *)tokens.tokens, (int)tokens.count, err);
    token_list_free(&tokens);
    if (rc == 0 && (rc = word_map_expand_pieces(map, units, n, err)) != 0) word_map_free(map);
    return rc;
}

/* The word map of a text given as such (a source or a reference) whose units are the
 * alignment's n labels: the words are found from the labels, never by tokenizing again. */
static int text_word_map(WordMap *map, const Alignment *a, const char *text, char *const *labels,
                         int n, Error *err) {
    const char *const *units = (const char *const *)labels;
    if (a->lossless) return word_map_from_lossless(map, units, n, err);
    if (!a->subwords) return word_map_from_text(map, text, units, n, err);
    TokenList tokens = {0};
    if (bpe_join(units, (size_t)n, &tokens, err)) return -1;
    int rc =
        word_map_from_text(map, text, (const char *const *)tokens.tokens, (int)tokens.count, err);
    token_list_free(&tokens);
    if (rc == 0 && (rc = word_map_expand_pieces(map, units, n, err)) != 0) word_map_free(map);
    return rc;
}

int alignment_word_links(const Alignment *a, WordLink **links, int *n, Error *err) {
    WordMap src = {0}, tgt = {0};
    *links = NULL, *n = 0;
    int rc = text_word_map(&src, a, a->source, a->src_tokens, a->cols - 1, err);
    if (rc == 0)
        rc = a->reference
                 ? text_word_map(&tgt, a, a->reference, a->tgt_tokens, a->rows - a->complete, err)
                 : output_word_map(&tgt, a, err);
    if (rc == 0) rc = word_links(a->alpha, a->rows, a->cols, &src, &tgt, links, n, err);
    word_map_free(&src);
    word_map_free(&tgt);
    return rc;
}

/* ---- alignment error rate --------------------------------------------------------------- */

/* Parses a whole non-negative decimal index from s[0..len). */
static int parse_index(const char *s, size_t len, int *out) {
    long v = 0;
    if (len == 0 || len > 9) return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = (int)v;
    return 0;
}

int pharaoh_parse(const char *line, WordLink **links, int *n, Error *err) {
    *n = 0;
    *links = checked_calloc(strlen(line) / 4 + 1, sizeof(WordLink), "links", err);
    if (!*links) return -1;
    for (const char *p = line;;) {
        while (is_space(*p)) p++;
        if (!*p) return 0;
        size_t len = 0;
        while (p[len] && !is_space(p[len])) len++;
        const char *dash = memchr(p, '-', len);
        WordLink link;
        if (!dash || parse_index(p, (size_t)(dash - p), &link.src) ||
            parse_index(dash + 1, len - (size_t)(dash - p) - 1, &link.tgt)) {
            char link_text[48], quoted[96];
            snprintf(link_text, sizeof link_text, "%.*s", (int)(len < 40 ? len : 40), p);
            free(*links);
            *links = NULL, *n = 0;
            return error_set(err,
                             "malformed link '%s' (expected i-j: source word index, "
                             "dash, target word index)",
                             text_for_message(quoted, sizeof quoted, link_text, 40));
        }
        (*links)[(*n)++] = link;
        p += len;
    }
}

/* Sorts links and drops repeats; returns the new count. */
static int unique_links(WordLink *links, int n) {
    qsort(links, (size_t)n, sizeof *links, compare_links);
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (kept == 0 || compare_links(&links[kept - 1], &links[i]) != 0) links[kept++] = links[i];
    return kept;
}

int aer_add(AerCounts *c, const WordLink *predicted, int np, const WordLink *gold, int ng,
            Error *err) {
    WordLink *a = checked_calloc((size_t)np + (size_t)ng + 1, sizeof(WordLink), "links", err);
    if (!a) return -1;
    WordLink *s = a + np;
    if (np) memcpy(a, predicted, sizeof *a * (size_t)np);
    if (ng) memcpy(s, gold, sizeof *s * (size_t)ng);
    np = unique_links(a, np);
    ng = unique_links(s, ng);
    size_t matched = 0;
    for (int i = 0, j = 0; i < np && j < ng;) {
        int order = compare_links(&a[i], &s[j]);
        if (order == 0)
            matched++, i++, j++;
        else if (order < 0)
            i++;
        else
            j++;
    }
    c->predicted += (size_t)np, c->gold += (size_t)ng, c->matched += matched;
    free(a);
    return 0;
}

double aer_precision(const AerCounts *c) {
    return c->predicted ? (double)c->matched / (double)c->predicted : 0;
}

double aer_recall(const AerCounts *c) {
    return c->gold ? (double)c->matched / (double)c->gold : 0;
}

double aer_error_rate(const AerCounts *c) {
    size_t total = c->predicted + c->gold;
    return total ? 1 - 2 * (double)c->matched / (double)total : 0;
}

/* The whitespace-separated words of text. */
static int count_words(const char *text) {
    int words = 0;
    for (const char *p = text; *p;) {
        while (is_space(*p)) p++;
        if (!*p) break;
        words++;
        while (*p && !is_space(*p)) p++;
    }
    return words;
}

/* Checks that every gold link lies inside the pair's words. */
static int gold_in_range(const WordLink *gold, int ng, const Alignment *a, Error *err) {
    int src_words = count_words(a->source), tgt_words = count_words(a->reference);
    for (int k = 0; k < ng; k++)
        if (gold[k].src >= src_words || gold[k].tgt >= tgt_words)
            return error_set(err, "link %d-%d is outside the pair (%d source, %d target words)",
                             gold[k].src, gold[k].tgt, src_words, tgt_words);
    return 0;
}

int aer_evaluate(ForcedDecoder *fd, const char *pairs_path, const char *gold_path,
                 AerCounts *counts, size_t *pairs, Error *err) {
    Corpus corpus = {0};
    memset(counts, 0, sizeof *counts);
    *pairs = 0;
    if (corpus_read_file(pairs_path, &corpus, err)) return -1;
    FILE *gold = fopen(gold_path, "r");
    if (!gold) {
        corpus_free(&corpus);
        return error_set(err, "cannot open %s: %s", gold_path, strerror(errno));
    }
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    for (size_t k = 0; k < corpus.count && rc == 0; k++) {
        long len = read_line(gold, &line, &cap);
        if (len == -2 || len == -3) {
            rc = len == -2 ? error_set(err, "cannot read %s: %s", gold_path, strerror(errno))
                           : error_set(err, "%s:%zu: %s", gold_path, k + 1, LINE_TOO_LONG);
            break;
        }
        if (len < 0) {
            rc = error_set(err, "%s:%zu: missing: the file ends after %zu lines, %s has %zu pairs",
                           gold_path, k + 1, k, pairs_path, corpus.count);
            break;
        }
        WordLink *gold_links = NULL, *links = NULL;
        int ng = 0, np = 0;
        Alignment a = {0};
        if (pharaoh_parse(line, &gold_links, &ng, err))
            rc = error_prefix(err, "%s:%zu: ", gold_path, k + 1);
        else if (force_align(fd, corpus.src[k], corpus.tgt[k], &a, NULL, err))
            rc = error_prefix(err, "%s:%zu: ", pairs_path, corpus.line[k]);
        else if (gold_in_range(gold_links, ng, &a, err))
            rc = error_prefix(err, "%s:%zu: ", gold_path, k + 1);
        else if (alignment_word_links(&a, &links, &np, err))
            rc = error_prefix(err, "%s:%zu: ", pairs_path, corpus.line[k]);
        else
            rc = aer_add(counts, links, np, gold_links, ng, err);
        alignment_free(&a);
        free(gold_links);
        free(links);
    }
    if (rc == 0 && read_line(gold, &line, &cap) >= 0)
        rc = error_set(err, "%s:%zu: more alignment lines than the %zu pairs of %s", gold_path,
                       corpus.count + 1, corpus.count, pairs_path);
    if (rc == 0 && ferror(gold)) rc = error_set(err, "cannot read %s", gold_path);
    if (rc == 0) *pairs = corpus.count;
    free(line);
    fclose(gold);
    corpus_free(&corpus);
    return rc;
}

/*
 * text.c: corpus loading and encoding, sentence encoding and decoding, <unk> replacement (see
 * text.h).
 */
#include "nmt/text.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int corpus_load(const char *path, bool lowercase, Corpus *corpus, TokenizedCorpus *tokens,
                Error *err) {
    if (corpus_read_file(path, corpus, err)) return -1;
    if (tokenized_corpus_make(tokens, corpus, path, lowercase, err)) {
        corpus_free(corpus);
        return -1;
    }
    return 0;
}

int nmt_segments(const NmtModel *nm, const char *text, TokenList *out, Error *err) {
    if (nm->lossless) return lossless_split(text, nm->lowercase, nm->across_spaces, out, err);
    return tokenize(text, nm->lowercase, out, err);
}

/* A lossless model's pieces of segments; while its vocabularies are still being built (empty),
 * without byte fallback. */
static int lossless_side(const NmtModel *nm, const TokenList *segments, bool target, TokenList *out,
                         Error *err) {
    const Vocab *vocab = target ? &nm->tgt_vocab : &nm->src_vocab;
    return lossless_pieces(target ? &nm->tgt_bpe : &nm->src_bpe, vocab->size ? vocab : NULL,
                           segments, out, err);
}

/* The units of a model with subwords from the first cut of a text, into *out (overwritten). */
static int units_of_cut(const NmtModel *nm, const TokenList *cut, bool target, TokenList *out,
                        Error *err) {
    if (nm->lossless) return lossless_side(nm, cut, target, out, err);
    return bpe_apply_list(target ? &nm->tgt_bpe : &nm->src_bpe, cut, out, err);
}

int nmt_units(const NmtModel *nm, const char *text, bool target, TokenList *out, Error *err) {
    if (nmt_segments(nm, text, out, err)) return -1;
    if (!nm->subwords) return 0;
    TokenList cut = *out;
    int rc = units_of_cut(nm, &cut, target, out, err);
    token_list_free(&cut);
    return rc;
}

int nmt_unit_count(const NmtModel *nm, const char *text, bool target, size_t *count, Error *err) {
    TokenList units = {0};
    if (nmt_units(nm, text, target, &units, err)) return -1;
    *count = units.count;
    token_list_free(&units);
    return 0;
}

int nmt_subword_corpus(const NmtModel *nm, const TokenizedCorpus *tc, TokenizedCorpus *out,
                       Error *err) {
    memset(out, 0, sizeof *out);
    out->src = checked_calloc(tc->count + 1, sizeof(TokenList), "subword corpus", err);
    out->tgt = checked_calloc(tc->count + 1, sizeof(TokenList), "subword corpus", err);
    if (!out->src || !out->tgt) {
        free(out->src), free(out->tgt);
        memset(out, 0, sizeof *out);
        return -1;
    }
    if (nm->lossless && (!tc->src_text || !tc->tgt_text)) {
        free(out->src), free(out->tgt);
        memset(out, 0, sizeof *out);
        return error_set(err, "lossless subwords need the corpus's sentences as written");
    }
    for (size_t i = 0; i < tc->count; i++) {
        out->count = i + 1; /* so a failure frees what was made */
        int rc = nm->lossless ? nmt_units(nm, tc->src_text[i], false, &out->src[i], err) ||
                                    nmt_units(nm, tc->tgt_text[i], true, &out->tgt[i], err)
                              : bpe_apply_list(&nm->src_bpe, &tc->src[i], &out->src[i], err) ||
                                    bpe_apply_list(&nm->tgt_bpe, &tc->tgt[i], &out->tgt[i], err);
        if (rc) {
            tokenized_corpus_free(out);
            return -1;
        }
    }
    out->count = tc->count;
    return 0;
}

int nmt_dataset(Dataset *ds, const NmtModel *nm, const TokenizedCorpus *tc, const Corpus *corpus,
                int max_len, Error *err) {
    if (!nm->subwords)
        return dataset_make(ds, tc, corpus, &nm->src_vocab, &nm->tgt_vocab, max_len, err);
    /* max_len then counts pieces: it bounds the memory of a batch, which pieces fill */
    TokenizedCorpus pieces;
    if (nmt_subword_corpus(nm, tc, &pieces, err)) return -1;
    int rc = dataset_make(ds, &pieces, corpus, &nm->src_vocab, &nm->tgt_vocab, max_len, err);
    tokenized_corpus_free(&pieces);
    return rc;
}

int source_encode(const NmtModel *nm, const char *text, SourceText *out, Error *err) {
    memset(out, 0, sizeof *out);
    out->text = text;
    TokenList cut = {0};
    size_t offset;
    uint32_t control;
    if (nmt_segments(nm, text, &cut, err)) return -1; /* the one UTF-8 check */
    if (utf8_find_control(text, strlen(text), &offset, &control)) {
        token_list_free(&cut);
        return error_set(err, "control character U+%04X at byte %zu", (unsigned)control, offset);
    }
    int rc = 0;
    if (nm->subwords) {
        out->cut = cut;
        rc = units_of_cut(nm, &cut, false, &out->units, err);
    } else {
        out->units = cut;
    }
    const TokenList *units = &out->units;
    if (rc == 0 && units->count >= INT_MAX)
        rc = error_set(err, "%zu tokens are more than any sentence can have", units->count);
    if (rc == 0 && !(out->ids = checked_calloc(units->count + 1, sizeof(int), "source ids", err)))
        rc = -1;
    if (rc) {
        source_free(out);
        return -1;
    }
    vocab_encode(&nm->src_vocab, units, out->ids);
    out->n = (int)units->count + 1;
    out->ids[units->count] = TOK_EOS;
    for (size_t i = 0; i < units->count; i++) {
        out->unknown += out->ids[i] == TOK_UNK;
        out->byte_pieces += nm->lossless && lossless_piece_byte(units->tokens[i]) >= 0;
    }
    return 0;
}

void source_free(SourceText *src) {
    token_list_free(&src->cut);
    token_list_free(&src->units);
    free(src->ids);
    memset(src, 0, sizeof *src);
}

int encode_source(const NmtModel *nm, const char *text, int **ids, int *n, int *unknown,
                  Error *err) {
    SourceText src;
    *ids = NULL;
    if (source_encode(nm, text, &src, err)) return -1;
    *ids = src.ids, *n = src.n, *unknown = src.unknown;
    src.ids = NULL;
    source_free(&src);
    return 0;
}

bool source_unfamiliar(const SourceText *src) {
    int units = src->n - 1;
    return units > 0 && (src->unknown == units || 2 * src->byte_pieces > units);
}

/* Where tokens[j] is in text, [*from, *to): the tokenizer leaves out only what separates
 * tokens (tokenizer_is_space) and gives every other character to one token, in order, as one
 * character, so counting characters finds it. */
static void token_span(const char *text, const TokenList *tokens, size_t j, size_t *from,
                       size_t *to) {
    size_t len = strlen(text), skip = 0, take = 0, counted = 0;
    uint32_t cp;
    for (size_t i = 0; i <= j && i < tokens->count; i++) {
        const char *t = tokens->tokens[i];
        size_t chars = 0;
        for (size_t k = 0, n = strlen(t); k < n; chars++)
            k += utf8_decode((const unsigned char *)t + k, n - k, &cp, NULL);
        if (i < j)
            skip += chars;
        else
            take = chars;
    }
    *from = *to = len;
    for (size_t at = 0; at < len && counted < skip + take;) {
        size_t n = utf8_decode((const unsigned char *)text + at, len - at, &cp, NULL);
        if (!tokenizer_is_space(cp)) {
            if (counted == skip) *from = at;
            if (++counted == skip + take) *to = at + n;
        }
        at += n;
    }
}

/* The characters of the text that lossless_join makes of units[0..n): the text itself has as
 * many before that point (the pieces take its characters one for one, lower-cased or not). */
static size_t joined_characters(const TokenList *units, size_t n) {
    Error err;
    char *text = lossless_join((const char *const *)units->tokens, n, &err);
    size_t chars = 0, len = text ? strlen(text) : 0;
    uint32_t cp;
    for (size_t at = 0; at < len; chars++)
        at += utf8_decode((const unsigned char *)text + at, len - at, &cp, NULL);
    free(text);
    return chars;
}

/* A lossless model's unit k as the user wrote it: the text of the pieces from the last one
 * before it that starts a word to the next that does, without the spaces at either end. */
static void lossless_word(const SourceText *src, size_t k, char *word, size_t size) {
    const TokenList *units = &src->units;
    size_t first = k, end = k + 1;
    while (first > 0 && !lossless_starts_word(units->tokens[first])) first--;
    while (end < units->count && !lossless_starts_word(units->tokens[end])) end++;
    size_t skip = joined_characters(units, first), stop = joined_characters(units, end);
    const char *text = src->text;
    size_t len = strlen(text), from = len, to = len, chars = 0;
    uint32_t cp;
    for (size_t at = 0; at <= len; chars++) {
        if (chars == skip) from = at;
        if (chars == stop || at == len) {
            to = at;
            break;
        }
        at += utf8_decode((const unsigned char *)text + at, len - at, &cp, NULL);
    }
    while (from < to && text[from] == ' ') from++;
    while (to > from && text[to - 1] == ' ') to--;
    snprintf(word, size, "%.*s", (int)(to - from), text + from);
}

void source_unit_word(const NmtModel *nm, const SourceText *src, int k, char *word, size_t size) {
    if (nm->lossless) {
        lossless_word(src, (size_t)k, word, size);
        return;
    }
    size_t j = (size_t)k;
    const TokenList *tokens = &src->units;
    if (nm->subwords) { /* the token the piece joins into (bpe.h's marker rule) */
        j = 0;
        for (int i = 0; i < k; i++) {
            const char *piece = src->units.tokens[i];
            size_t n = strlen(piece);
            j += !(n >= 2 && strcmp(piece + n - 2, BPE_MARKER) == 0);
        }
        tokens = &src->cut;
    }
    size_t from, to;
    token_span(src->text, tokens, j, &from, &to);
    snprintf(word, size, "%.*s", (int)(to - from), src->text + from);
}

int message_list_add(char *list, size_t size, const char *word) {
    enum { ENOUGH = 200 };
    char quoted[96], item[100];
    snprintf(item, sizeof item, "'%s'", text_for_message(quoted, sizeof quoted, word, 60));
    if (strstr(list, item)) return 0;
    size_t used = strlen(list);
    if (used >= ENOUGH) {
        if (used < 5 || strcmp(list + used - 5, ", ...") != 0)
            snprintf(list + used, size - used, ", ...");
        return 1;
    }
    snprintf(list + used, size - used, "%s%s", used ? ", " : "", item);
    return 1;
}

int source_unknown_words(const NmtModel *nm, const SourceText *src, char *list, size_t size) {
    int words = 0;
    list[0] = '\0';
    for (int k = 0; k + 1 < src->n; k++) {
        bool unknown = src->ids[k] == TOK_UNK ||
                       (nm->lossless && lossless_piece_byte(src->units.tokens[k]) >= 0);
        if (!unknown) continue;
        char word[256];
        source_unit_word(nm, src, k, word, sizeof word);
        words += message_list_add(list, size, word);
    }
    return words;
}

char *nmt_join_target(const NmtModel *nm, const char *const *units, int n, Error *err) {
    if (nm->lossless) return lossless_join(units, (size_t)n, err);
    if (!nm->subwords) return detokenize(units, (size_t)n, err);
    TokenList tokens = {0};
    if (bpe_join(units, (size_t)n, &tokens, err)) return NULL;
    char *text = detokenize((const char *const *)tokens.tokens, tokens.count, err);
    token_list_free(&tokens);
    return text;
}

/* The vocabulary's spelling of each id; an id outside it reads as <unk>. */
static const char **target_units(const NmtModel *nm, const int *ids, int n, Error *err) {
    const char **units = checked_calloc((size_t)n + 1, sizeof(char *), "target tokens", err);
    if (!units) return NULL;
    for (int i = 0; i < n; i++) {
        units[i] = vocab_token(&nm->tgt_vocab, ids[i]);
        if (!units[i]) units[i] = vocab_token(&nm->tgt_vocab, TOK_UNK);
    }
    return units;
}

char *decode_target(const NmtModel *nm, const int *ids, int n, Error *err) {
    const char **units = target_units(nm, ids, n, err);
    if (!units) return NULL;
    char *text = nmt_join_target(nm, units, n, err);
    free(units);
    return text;
}

int unk_source_position(const real *row, int cols) {
    int best = 0;
    for (int i = 1; i < cols - 1; i++)
        if (row[i] > row[best]) best = i;
    return best;
}

void unk_replace(const char **tokens, const int *ids, int n, const real *alpha, int cols,
                 const char *const *src_tokens) {
    if (cols < 2) return; /* only </s>: nothing to copy */
    for (int t = 0; t < n; t++)
        if (ids[t] == TOK_UNK)
            tokens[t] = src_tokens[unk_source_position(alpha + (size_t)t * cols, cols)];
}

char *decode_hypothesis(const NmtModel *nm, const SourceText *source, const Hypothesis *h,
                        Error *err) {
    int unknown = 0;
    for (int t = 0; t < h->len; t++) unknown += h->tokens[t] == TOK_UNK;
    if (unknown == 0 || nm->subwords || nm->keep_unk)
        return decode_target(nm, h->tokens, h->len, err);
    const char **units = NULL;
    char *text = NULL;
    if (source->n != h->src_len) {
        error_set(err, "the translation has %d source positions, the sentence %d", h->src_len,
                  source->n);
    } else if ((units = target_units(nm, h->tokens, h->len, err)) != NULL) {
        unk_replace(units, h->tokens, h->len, h->alpha, h->src_len,
                    (const char *const *)source->units.tokens);
        text = nmt_join_target(nm, units, h->len, err);
    }
    free(units);
    return text;
}

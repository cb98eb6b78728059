/*
 * text.c: corpus loading and encoding, sentence encoding and decoding, <unk> replacement (see
 * text.h).
 */
#include "text.h"

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

int nmt_units(const NmtModel *nm, const char *text, bool target, TokenList *out, Error *err) {
    if (nm->lossless) {
        TokenList segments = {0};
        *out = (TokenList){0};
        if (nmt_segments(nm, text, &segments, err)) return -1;
        int rc = lossless_side(nm, &segments, target, out, err);
        token_list_free(&segments);
        return rc;
    }
    if (tokenize(text, nm->lowercase, out, err)) return -1;
    if (!nm->subwords) return 0;
    TokenList pieces = {0};
    int rc = bpe_apply_list(target ? &nm->tgt_bpe : &nm->src_bpe, out, &pieces, err);
    token_list_free(out);
    *out = pieces;
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

int encode_source(const NmtModel *nm, const char *text, int **ids, int *n, int *unknown,
                  Error *err) {
    TokenList tokens = {0};
    *ids = NULL;
    size_t offset;
    uint32_t control;
    if (utf8_validate(text, strlen(text), err)) return -1;
    if (utf8_find_control(text, strlen(text), &offset, &control))
        return error_set(err, "control character U+%04X at byte %zu", (unsigned)control, offset);
    if (nmt_units(nm, text, false, &tokens, err)) return -1;
    if (tokens.count >= INT_MAX) {
        token_list_free(&tokens);
        return error_set(err, "%zu tokens are more than any sentence can have", tokens.count);
    }
    *ids = checked_calloc(tokens.count + 1, sizeof(int), "source ids", err);
    if (!*ids) {
        token_list_free(&tokens);
        return -1;
    }
    vocab_encode(&nm->src_vocab, &tokens, *ids);
    *n = (int)tokens.count + 1;
    (*ids)[tokens.count] = TOK_EOS;
    *unknown = 0;
    for (size_t i = 0; i < tokens.count; i++) *unknown += (*ids)[i] == TOK_UNK;
    token_list_free(&tokens);
    return 0;
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

char *decode_hypothesis(const NmtModel *nm, const char *source, const Hypothesis *h, Error *err) {
    int unknown = 0;
    for (int t = 0; t < h->len; t++) unknown += h->tokens[t] == TOK_UNK;
    if (unknown == 0 || nm->subwords || nm->keep_unk)
        return decode_target(nm, h->tokens, h->len, err);
    TokenList src = {0};
    const char **units = NULL;
    char *text = NULL;
    if (nmt_units(nm, source, false, &src, err)) return NULL;
    if ((int)src.count + 1 != h->src_len) {
        error_set(err, "the translation has %d source positions, the sentence %zu", h->src_len,
                  src.count + 1);
    } else if ((units = target_units(nm, h->tokens, h->len, err)) != NULL) {
        unk_replace(units, h->tokens, h->len, h->alpha, h->src_len,
                    (const char *const *)src.tokens);
        text = nmt_join_target(nm, units, h->len, err);
    }
    free(units);
    token_list_free(&src);
    return text;
}

/*
 * words.h: an alignment's tokens merged into words, hard word links, and their alignment
 * error rate (AER) against gold links.
 */
#ifndef NMT_WORDS_H
#define NMT_WORDS_H

#include <stdbool.h>

#include "nmt/alignment.h"

/* Which word each token belongs to. Words are the whitespace-separated words of a sentence
 * (punctuation attached to a word is part of it: "chat?" and "j'aime" are one word each). */
typedef struct {
    int n_tokens, n_words;
    int *word_of; /* [n_tokens] 0-based word index */
} WordMap;

/* The words of text's tokens[0..n) (as the tokenizer made them from text, not made again
 * here): a token starts a new word when an ASCII whitespace character lies between it and the
 * token before (tokenizer.h: tokens take the text's characters in order, one for one, leaving
 * out only spaces). Fails when the tokens run past the text. */
int word_map_from_text(WordMap *map, const char *text, const char *const *tokens, int n,
                       Error *err);

/* For output tokens without their own text: a token starts a new word when the detokenizer
 * puts a space before it. */
int word_map_from_tokens(WordMap *map, const char *const *tokens, int n, Error *err);

/* For a model with subwords: turns a map of tokens into a map of their BPE pieces[0..n),
 * each piece belonging to the word of the token it joins into (bpe_join's marker rule).
 * Fails, leaving *map as it was, when the pieces do not join into map->n_tokens tokens. */
int word_map_expand_pieces(WordMap *map, const char *const *pieces, int n, Error *err);

void word_map_free(WordMap *map);

typedef struct {
    int src, tgt; /* 0-based word indices */
} WordLink;

/* Word-level hard links from a token-level matrix alpha [rows, cols]: a source word's weight
 * is the sum over its tokens (columns), a target word's row the mean of its tokens' rows, the </s>
 * row and column left out, and each target word is linked to its strongest source word (the first
 * on a tie). Rows beyond tgt->n_tokens and columns beyond src->n_tokens are the </s> ones. *links
 * (malloc'd, one per target word) is sorted by source then target index. */
int word_links(const real *alpha, int rows, int cols, const WordMap *src, const WordMap *tgt,
               WordLink **links, int *n, Error *err);

/* word_links of an alignment, words taken from its source and its reference (when forced) or
 * its output tokens. */
int alignment_word_links(const Alignment *a, WordLink **links, int *n, Error *err);

/* ---- alignment error rate ---- */

/* Parses a Pharaoh line "0-0 1-2 ..." (source-target); *links is malloc'd (may be empty). */
int pharaoh_parse(const char *line, WordLink **links, int *n, Error *err);

typedef struct {
    size_t predicted, gold, matched; /* |A|, |S| and |A n S| */
} AerCounts;

/* Adds one sentence: links are compared as sets (duplicates count once). */
int aer_add(AerCounts *c, const WordLink *predicted, int np, const WordLink *gold, int ng,
            Error *err);

double aer_precision(const AerCounts *c); /* |A n S| / |A| */
double aer_recall(const AerCounts *c);    /* |A n S| / |S| */
/* Och & Ney's AER with every gold link sure: 1 - 2 |A n S| / (|A| + |S|). */
double aer_error_rate(const AerCounts *c);

/* Force-decodes every pair of pairs_path, links words and counts against gold_path (one
 * Pharaoh line per pair). Errors name the file and line. */
int aer_evaluate(ForcedDecoder *fd, const char *pairs_path, const char *gold_path,
                 AerCounts *counts, size_t *pairs, Error *err);

#endif

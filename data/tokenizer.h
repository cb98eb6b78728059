/*
 * tokenizer.h: splitting text into tokens and joining them back.
 *
 * Rule-based and lossless for normally written text: detokenize(tokenize(s)) == s. Splits on
 * Unicode whitespace, splits off punctuation, French elisions (j'aime -> j' aime) and each CJK
 * character; keeps numbers (3.14, 1,000) and word-internal hyphens and apostrophes whole.
 * Deliberately not here: subword units, Unicode normalisation (NFC), full Unicode case
 * folding (lower-casing covers ASCII, Latin-1, Latin Extended-A, basic Greek and Cyrillic).
 */
#ifndef NMT_DATA_TOKENIZER_H
#define NMT_DATA_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "base/utf8.h"

/* An owning list of tokens: each tokens[i] is a NUL-terminated UTF-8 string from malloc. */
typedef struct {
    char **tokens; /* [count] */
    size_t count;
    size_t capacity; /* allocated length of tokens */
} TokenList;

/* Splits the NUL-terminated UTF-8 text into *out (which is overwritten, not freed: pass an
 * empty or freed list). With lowercase set, letters are lower-cased first. The typographic
 * apostrophe U+2019 becomes '. Returns 0, or -1 (with *out empty) on invalid UTF-8 or when
 * out of memory. */
int tokenize(const char *text, bool lowercase, TokenList *out, Error *err);

/* Whether tokenize treats cp as a space: it separates tokens and belongs to none. Every other
 * character goes to exactly one token, in order, as exactly one character (lower-cased or
 * U+2019 -> '), so a token's place in the text can be found by counting characters. */
bool tokenizer_is_space(uint32_t cp);

/* The lower-case letter of cp as tokenize lower-cases it (the ranges above), or cp. */
uint32_t lowercase_code_point(uint32_t cp);

/* Frees every token and the list itself, leaving an empty list; accepts an empty list. */
void token_list_free(TokenList *list);

/* Joins tokens[0..count) into a new NUL-terminated string (free() it) that reads as normal
 * text: one space between tokens, except none after an elision ("l'") or opening punctuation,
 * none before closing punctuation, none between two CJK tokens; straight quotes (" and a lone
 * ') alternate between opening and closing. Returns NULL with err set when out of memory.
 * A TokenList's tokens can be passed as (const char *const *)list.tokens. */
char *detokenize(const char *const *tokens, size_t count, Error *err);

#endif

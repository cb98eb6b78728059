/*
 * tokenizer.h: UTF-8 checking, and splitting text into tokens and joining them back.
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

/* An owning list of tokens: each tokens[i] is a NUL-terminated UTF-8 string from malloc. */
typedef struct {
    char **tokens; /* [count] */
    size_t count;
    size_t capacity; /* allocated length of tokens */
} TokenList;

/* Finds the first ill-formed sequence in bytes[0..len): returns NULL when all of it is valid
 * UTF-8, otherwise a static description ("overlong encoding", "UTF-16 surrogate", "code point
 * above U+10FFFF", "truncated sequence", ...) with *offset (when not NULL) set to the byte
 * offset where that sequence starts. NUL bytes are valid UTF-8; callers that forbid them
 * check separately. */
const char *utf8_find_error(const char *bytes, size_t len, size_t *offset);

/* utf8_find_error as an Error: "invalid UTF-8 at byte 12: overlong encoding". */
int utf8_validate(const char *bytes, size_t len, Error *err);

/* Finds the first control character in the valid UTF-8 bytes[0..len): a C0 control other
 * than the whitespace ones (tab, line feed, vertical tab, form feed, carriage return), DEL, or
 * a C1 control other than U+0085 (next line, which is whitespace). Such characters are never
 * part of a sentence (terminal escapes, binary data) but would otherwise pass as letters.
 * Returns true with *offset set to its byte offset and *code_point to it, false when there is
 * none. */
bool utf8_find_control(const char *bytes, size_t len, size_t *offset, uint32_t *code_point);

/* Copies text into buf (size bytes, at least 8) so it can be quoted in a one-line message:
 * control characters become escapes (\n, \r, \t, \x1B, \u0085), bytes that are not UTF-8
 * become \xFF, and text beyond max_bytes bytes (or beyond what buf holds) is cut at a character
 * and marked with "...". Returns buf. Any text a user typed or a file held goes through this
 * before it is echoed in an error, so an error stays one line and cannot drive the terminal. */
const char *text_for_message(char *buf, size_t size, const char *text, size_t max_bytes);

/* Splits the NUL-terminated UTF-8 text into *out (which is overwritten, not freed: pass an
 * empty or freed list). With lowercase set, letters are lower-cased first. The typographic
 * apostrophe U+2019 becomes '. Returns 0, or -1 (with *out empty) on invalid UTF-8 or when
 * out of memory. */
int tokenize(const char *text, bool lowercase, TokenList *out, Error *err);

/* Frees every token and the list itself, leaving an empty list; accepts an empty list. */
void token_list_free(TokenList *list);

/* Joins tokens[0..count) into a new NUL-terminated string (free() it) that reads as normal
 * text: one space between tokens, except none after an elision ("l'") or opening punctuation,
 * none before closing punctuation, none between two CJK tokens; straight quotes (" and a lone
 * ') alternate between opening and closing. Returns NULL with err set when out of memory.
 * A TokenList's tokens can be passed as (const char *const *)list.tokens. */
char *detokenize(const char *const *tokens, size_t count, Error *err);

#endif

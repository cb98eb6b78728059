/*
 * bpe.h: byte-pair-encoding subwords (Sennrich et al. 2016): learning the merges from a
 * tokenized corpus, cutting tokens into pieces with them, joining pieces back into tokens,
 * and the merges' serialised form for a checkpoint.
 *
 * Works on the tokenizer's tokens (non-empty UTF-8 without spaces or control characters) and
 * splits them into Unicode characters, never into bytes inside one. Deliberately not here:
 * tokenizing text (tokenizer.h) and mapping pieces to ids (vocab.h: build the vocabulary from
 * the pieces instead of the tokens).
 *
 * The marker rule. A piece that does not end its word carries the suffix "@@" (BPE_MARKER);
 * the last piece of a word does not. So that a token's own '@' can never pass for a marker,
 * a token is first escaped: when it ends in '@' followed by zero or more '~' (BPE_ESCAPE), one
 * more '~' is appended ("a@@" -> "a@@~", "@" -> "@~", "@~" -> "@~~"; "x@@y" and "a~" stay).
 *   - Joining reads a piece ending in "@@" as a non-final piece (its text minus the "@@") and
 *     any other piece as the end of a word; the word then loses one '~' when it ends in '@'
 *     followed by one or more '~'.
 *   - Why this is exact: an escaped token never ends in '@' (the escape appends '~' exactly
 *     when it would), so the last piece, a non-empty suffix of it, never ends in "@@", and every
 *     other piece does; the pieces' texts concatenate to the escaped token. Unescaping inverts
 *     escaping: a token ending in '@' plus zero or more '~' gained a '~' and now ends in '@'
 *     plus one or more '~'; any other token was kept as it was and does not end that way
 *     (ending in '@' plus one or more '~' is a case of ending in '@' plus zero or more).
 * Learning uses the same marking instead of subword-nmt's "</w>" end-of-word symbol: the
 * characters of "low" are the symbols "l@@" "o@@" "w", so a symbol at the end of a word differs
 * from the same letters inside one, and every symbol is spelled exactly like the piece it
 * becomes. A merge of (left, right) makes left's text without its "@@" followed by right.
 */
#ifndef NMT_DATA_BPE_H
#define NMT_DATA_BPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "data/tokenizer.h"
#include "base/base.h"

#define BPE_MARKER "@@"
#define BPE_ESCAPE '~'

/* Most merges learned or read; symbol ids then fit 32 bits with room to spare. */
#define BPE_MAX_MERGES ((size_t)1 << 24)

/* Most characters of one word that learning looks at: a longer word (a URL, base64, a line
 * without spaces) is learned from as its first BPE_LEARN_MAX_CHARS characters, so each merge
 * costs at most this much per distinct word and one 1 MB "word" cannot make learning take
 * minutes. Real words are far shorter; such a word is still cut whole by bpe_apply, and the
 * pair holding it is then mostly dropped by [data] max_len. */
#define BPE_LEARN_MAX_CHARS 1000

/* A set of distinct symbols (pieces as spelled above) with ids 0..count-1. */
typedef struct {
    size_t count;
    size_t capacity; /* allocated length of strings and lengths */
    char **strings;  /* [count] NUL-terminated */
    size_t *lengths; /* [count] strlen of each */
    uint32_t *slots; /* [mask + 1] hash table: id + 1 of the symbol stored there, 0 = free */
    size_t mask;     /* table size - 1, a power of two at least twice count; 0 when empty */
} BpeSymbols;

/* Merge number `rank` (0 = first learned, applied first) joins symbol `left` followed by
 * symbol `right` into symbol `result`. */
typedef struct {
    uint32_t left, right, result;
} BpeMerge;

/* An all-zero Bpe is valid and has no merges: it cuts every token into its characters. */
typedef struct {
    size_t merge_count;
    size_t merge_capacity; /* allocated length of merges */
    BpeMerge *merges;      /* [merge_count] in rank order */
    BpeSymbols symbols;    /* the characters the merges use and every merge's result */
    uint32_t *merge_slots; /* [merge_mask + 1] hash table of (left, right): rank + 1, 0 = free */
    size_t merge_mask;
} Bpe;

/* Learns *out (overwritten) from the tokens of sentences[0..sentence_count): at most
 * max_merges merges, each joining the adjacent pair of symbols that occurs most often in the
 * corpus at that point (a token occurring n times counts n times). Ties go to the pair whose
 * left symbol is byte-wise smallest (strcmp, symbols spelled with their "@@"), then whose
 * right symbol is; the result therefore does not depend on the order of sentences or tokens.
 * Stops early, without error, when no pair occurs at least twice. Returns 0, or -1 (with *out
 * empty) when max_merges exceeds BPE_MAX_MERGES, a token is empty, not UTF-8 or holds a space
 * or a control character (as the tokenizer's never do), or out of memory. Takes O(length) per
 * merge for each word holding the merged pair, and the pairs' counts are updated, never
 * recounted: a second or so for 20,000 merges over 50,000 distinct words. Only the first
 * BPE_LEARN_MAX_CHARS characters of a longer token are learned from. */
int bpe_learn(const TokenList *sentences, size_t sentence_count, size_t max_merges, Bpe *out,
              Error *err);

/* Appends the pieces of one token to *pieces (a valid TokenList, possibly empty): the token is
 * escaped, split into characters, and the merges are applied by rank, lowest first, each to
 * every non-overlapping occurrence from left to right (as subword-nmt does). Characters the
 * merges never mention stay single-character pieces. Never quadratic in the token's length.
 * Returns 0, or -1 (with *pieces as it was) when the token is empty or not UTF-8, or out of
 * memory. Reads bpe only, so threads may share it. */
int bpe_apply(const Bpe *bpe, const char *token, TokenList *pieces, Error *err);

/* The same cut as bpe_apply, spelled as plain text: no marker, no escape, so the pieces
 * concatenate to the token itself (a piece that held only the escape is left out). For text
 * whose word boundaries are marked otherwise (data/lossless.h). */
int bpe_apply_unmarked(const Bpe *bpe, const char *token, TokenList *pieces, Error *err);

/* The pieces of every token of *tokens, in order, into *out (overwritten, not freed). Returns
 * 0, or -1 with *out empty. */
int bpe_apply_list(const Bpe *bpe, const TokenList *tokens, TokenList *out, Error *err);

/* The inverse of bpe_apply_list: joins pieces[0..count) into tokens in *out (overwritten, not
 * freed) by the marker rule above. Any sequence of pieces is accepted, as a model may produce
 * one: non-final pieces at the very end still make a token (as if the last were final), pieces
 * that add no text ("@@", "") make none, so every token out is non-empty and, when the pieces
 * hold no spaces or control characters, a valid token. A special such as "<unk>" is text
 * like any other and joins the word before it when that word is unfinished. Returns 0, or -1
 * with *out empty when out of memory. */
int bpe_join(const char *const *pieces, size_t count, TokenList *out, Error *err);

/* Serialised layout, all integers unsigned 32-bit little-endian:
 *     merge count, then per merge in rank order: byte length of the left symbol, its UTF-8
 *     bytes, byte length of the right symbol, its bytes (symbols spelled as above, no NUL)
 * Returns 0, or -1 when a write fails (errno from the stream; the caller names the file). */
int bpe_write(const Bpe *bpe, FILE *out);

/* Reads the layout above into *out (overwritten), consuming at most max_bytes bytes (e.g.
 * what is left of a checkpoint file). Trusts nothing: the count must be at most
 * BPE_MAX_MERGES and fit max_bytes, every length must be non-zero and fit what is left, symbols
 * must be valid UTF-8 without NUL, spaces or control characters; a left symbol must end in
 * "@@", a right symbol without "@@" must not end in '@' (no escaped token does); each symbol
 * must exist, being one character (with or without "@@") or an earlier merge's result; no
 * merge may repeat an earlier one. Returns 0, or -1 with *out empty and err naming the merge. */
int bpe_read(Bpe *out, FILE *in, size_t max_bytes, Error *err);

/* Frees everything, leaving an all-zero Bpe; accepts an all-zero or half-built one. */
void bpe_free(Bpe *bpe);

#endif

/*
 * vocab.h: the token <-> id mapping of one language, and its serialised form.
 *
 * Ids 0..3 are reserved (<pad> <unk> <s> </s>); the rest are the corpus's most frequent
 * tokens, ordered by count (descending) then by byte-wise string order, so a build is fully
 * deterministic. Lookup is an open-addressing hash table. Deliberately not here: adding
 * <s>/</s> around sentences, padding and batching (that is the batcher's job).
 */
#ifndef NMT_DATA_VOCAB_H
#define NMT_DATA_VOCAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/batch.h"
#include "data/tokenizer.h"
#include "base/base.h"

/* Largest vocabulary built or read, specials included; ids then always fit an int. */
#define VOCAB_MAX_SIZE ((size_t)1 << 24)

typedef struct {
    size_t size;      /* number of tokens, the 4 specials included */
    char **tokens;    /* [size] id -> NUL-terminated UTF-8 token */
    uint32_t *slots;  /* [slot_mask + 1] hash table: id + 1 of the token stored there, 0 = free */
    size_t slot_mask; /* table size - 1; the size is a power of two at least twice `size` */
} Vocab;

/* Builds *out (overwritten) from sentences[0..sentence_count): every token seen at least
 * min_count times, most frequent first, keeping at most max_size tokens in all (specials
 * included; pass SIZE_MAX for no limit beyond VOCAB_MAX_SIZE). Tokens spelled like a special
 * ("<unk>") map to that special. Returns 0, or -1 when max_size < TOK_SPECIALS or out of
 * memory. */
int vocab_build(const TokenList *sentences, size_t sentence_count, size_t min_count,
                size_t max_size, Vocab *out, Error *err);

/* vocab_build with reserved[0..reserved_count) (distinct, none a special) at the ids right
 * after the specials, whether or not the sentences hold them; max_size counts them too. */
int vocab_build_reserved(const TokenList *sentences, size_t sentence_count,
                         const char *const *reserved, size_t reserved_count, size_t min_count,
                         size_t max_size, Vocab *out, Error *err);

/* The id of token, TOK_UNK when it is not in the vocabulary. */
int vocab_id(const Vocab *vocab, const char *token);

/* The token with this id, NULL when id is outside 0..size-1. */
const char *vocab_token(const Vocab *vocab, int id);

/* ids[i] = vocab_id(tokens->tokens[i]) for every token; ids holds tokens->count entries. */
void vocab_encode(const Vocab *vocab, const TokenList *tokens, int *ids);

/* Serialised layout, all integers unsigned 32-bit little-endian:
 *     count, then count times: byte length (>= 1), that many UTF-8 bytes (no NUL, no terminator)
 * Returns 0, or -1 when a write fails (errno from the stream; the caller names the file). */
int vocab_write(const Vocab *vocab, FILE *out);

/* Reads the layout above into *out (overwritten), consuming at most max_bytes bytes (e.g.
 * what is left of a checkpoint file). Trusts nothing: the count must lie in
 * TOK_SPECIALS..VOCAB_MAX_SIZE, every length must be non-zero and fit what is left of
 * max_bytes, tokens must be valid UTF-8 without NUL, spaces or control characters, and
 * distinct, and ids 0..3 must be the specials. Returns 0, or -1 with *out empty and err saying
 * what was wrong where. */
int vocab_read(Vocab *out, FILE *in, size_t max_bytes, Error *err);

/* Frees the vocabulary, leaving it empty; accepts an empty or half-built one. */
void vocab_free(Vocab *vocab);

#endif

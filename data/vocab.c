/*
 * vocab.c: building, looking up and (de)serialising vocabularies (see vocab.h).
 *
 * Both hash tables here (token counts while building, token -> id afterwards) use linear
 * probing over a power-of-two table kept at most half full, hashed with 64-bit FNV-1a; a hash
 * collision only costs a strcmp. The counting table borrows the sentences' strings; the
 * vocabulary owns copies of its own.
 */
#include "data/vocab.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/files.h"

static const char *const special_tokens[TOK_SPECIALS] = {"<pad>", "<unk>", "<s>", "</s>"};

/* ---- Lookup ---- */

/* The slot holding token, or the free slot where it would go. */
static size_t find_slot(const Vocab *vocab, const char *token) {
    size_t slot = (size_t)fnv1a(FNV1A_START, token, strlen(token)) & vocab->slot_mask;
    while (vocab->slots[slot] != 0 && strcmp(vocab->tokens[vocab->slots[slot] - 1], token) != 0)
        slot = (slot + 1) & vocab->slot_mask;
    return slot;
}

/* Fills the hash table for tokens[0..size); a token seen twice is an error. */
static int index_tokens(Vocab *vocab, Error *err) {
    size_t slot_count = 16;
    while (slot_count < 2 * vocab->size) slot_count *= 2;
    vocab->slots = checked_calloc(slot_count, sizeof *vocab->slots, "vocabulary hash table", err);
    if (!vocab->slots) return -1;
    vocab->slot_mask = slot_count - 1;
    for (size_t id = 0; id < vocab->size; id++) {
        size_t slot = find_slot(vocab, vocab->tokens[id]);
        char quoted[128];
        if (vocab->slots[slot] != 0)
            return error_set(err, "vocabulary: token %zu \"%s\" repeats token %u", id,
                             text_for_message(quoted, sizeof quoted, vocab->tokens[id], 80),
                             vocab->slots[slot] - 1);
        vocab->slots[slot] = (uint32_t)id + 1;
    }
    return 0;
}

int vocab_id(const Vocab *vocab, const char *token) {
    uint32_t stored = vocab->slots[find_slot(vocab, token)];
    return stored != 0 ? (int)stored - 1 : TOK_UNK;
}

const char *vocab_token(const Vocab *vocab, int id) {
    return id >= 0 && (size_t)id < vocab->size ? vocab->tokens[id] : NULL;
}

void vocab_encode(const Vocab *vocab, const TokenList *tokens, int *ids) {
    for (size_t i = 0; i < tokens->count; i++) ids[i] = vocab_id(vocab, tokens->tokens[i]);
}

void vocab_free(Vocab *vocab) {
    for (size_t id = 0; id < vocab->size; id++) free(vocab->tokens[id]);
    free(vocab->tokens);
    free(vocab->slots);
    *vocab = (Vocab){0};
}

/* ---- Building ---- */

typedef struct {
    const char *token; /* borrowed from the sentences; NULL marks a free slot */
    size_t count;
} TokenCount;

typedef struct {
    TokenCount *slots; /* [mask + 1] */
    size_t mask;
    size_t used;
} CountTable;

static TokenCount *count_slot(TokenCount *slots, size_t mask, const char *token) {
    size_t slot = (size_t)fnv1a(FNV1A_START, token, strlen(token)) & mask;
    while (slots[slot].token && strcmp(slots[slot].token, token) != 0) slot = (slot + 1) & mask;
    return &slots[slot];
}

static int count_token(CountTable *table, const char *token, Error *err) {
    if (2 * (table->used + 1) > table->mask + 1) { /* keep the table at most half full */
        size_t size = 2 * (table->mask + 1);
        TokenCount *grown = checked_calloc(size, sizeof *grown, "token count table", err);
        if (!grown) return -1;
        for (size_t i = 0; i <= table->mask; i++)
            if (table->slots[i].token)
                *count_slot(grown, size - 1, table->slots[i].token) = table->slots[i];
        free(table->slots);
        table->slots = grown;
        table->mask = size - 1;
    }
    TokenCount *entry = count_slot(table->slots, table->mask, token);
    if (!entry->token) {
        entry->token = token;
        table->used++;
    }
    entry->count++;
    return 0;
}

/* Count descending, then byte-wise order (strcmp compares as unsigned char). */
static int compare_counts(const void *a, const void *b) {
    const TokenCount *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->token, y->token);
}

static bool is_special(const char *token) {
    for (int id = 0; id < TOK_SPECIALS; id++)
        if (strcmp(token, special_tokens[id]) == 0) return true;
    return false;
}

static int append_copy(Vocab *vocab, const char *token, Error *err) {
    size_t len = strlen(token);
    char *copy = checked_calloc(len + 1, 1, "vocabulary token", err);
    if (!copy) return -1;
    memcpy(copy, token, len);
    vocab->tokens[vocab->size++] = copy;
    return 0;
}

static bool in_list(const char *token, const char *const *list, size_t count) {
    for (size_t i = 0; i < count; i++)
        if (strcmp(token, list[i]) == 0) return true;
    return false;
}

/* Fills *vocab with the specials and the reserved tokens, then with ranked[0..ranked_count)
 * while the tokens are frequent enough and there is room. */
static int fill_vocab(Vocab *vocab, const TokenCount *ranked, size_t ranked_count,
                      const char *const *reserved, size_t reserved_count, size_t min_count,
                      size_t max_size, Error *err) {
    size_t fixed = TOK_SPECIALS + reserved_count;
    if (max_size > ranked_count + fixed) max_size = ranked_count + fixed;
    vocab->tokens = checked_calloc(max_size, sizeof *vocab->tokens, "vocabulary", err);
    if (!vocab->tokens) return -1;
    for (int id = 0; id < TOK_SPECIALS; id++)
        if (append_copy(vocab, special_tokens[id], err) != 0) return -1;
    for (size_t i = 0; i < reserved_count; i++)
        if (append_copy(vocab, reserved[i], err) != 0) return -1;
    for (size_t i = 0; i < ranked_count && vocab->size < max_size; i++) {
        if (ranked[i].count < min_count) break; /* the rest are rarer still */
        if (is_special(ranked[i].token) || in_list(ranked[i].token, reserved, reserved_count))
            continue;
        if (append_copy(vocab, ranked[i].token, err) != 0) return -1;
    }
    return index_tokens(vocab, err);
}

int vocab_build(const TokenList *sentences, size_t sentence_count, size_t min_count,
                size_t max_size, Vocab *out, Error *err) {
    return vocab_build_reserved(sentences, sentence_count, NULL, 0, min_count, max_size, out, err);
}

int vocab_build_reserved(const TokenList *sentences, size_t sentence_count,
                         const char *const *reserved, size_t reserved_count, size_t min_count,
                         size_t max_size, Vocab *out, Error *err) {
    *out = (Vocab){0};
    if (max_size < TOK_SPECIALS + reserved_count)
        return error_set(err, "vocabulary size %zu leaves no room for the %zu reserved tokens",
                         max_size, TOK_SPECIALS + reserved_count);
    if (max_size > VOCAB_MAX_SIZE) max_size = VOCAB_MAX_SIZE;
    CountTable table = {0};
    table.mask = 1023;
    table.slots = checked_calloc(table.mask + 1, sizeof *table.slots, "token count table", err);
    int status = table.slots ? 0 : -1;
    for (size_t s = 0; s < sentence_count && status == 0; s++)
        for (size_t i = 0; i < sentences[s].count && status == 0; i++)
            status = count_token(&table, sentences[s].tokens[i], err);
    if (status == 0) {
        /* move the used slots to the front, then rank them */
        size_t used = 0;
        for (size_t i = 0; i <= table.mask; i++)
            if (table.slots[i].token) table.slots[used++] = table.slots[i];
        qsort(table.slots, used, sizeof *table.slots, compare_counts);
        status =
            fill_vocab(out, table.slots, used, reserved, reserved_count, min_count, max_size, err);
    }
    free(table.slots);
    if (status != 0) vocab_free(out);
    return status;
}

/* ---- Serialisation ---- */

int vocab_write(const Vocab *vocab, FILE *out) {
    if (file_write_u32(out, (uint32_t)vocab->size) != 0) return -1;
    for (size_t id = 0; id < vocab->size; id++) {
        size_t len = strlen(vocab->tokens[id]);
        if (len > UINT32_MAX || file_write_u32(out, (uint32_t)len) != 0 ||
            fwrite(vocab->tokens[id], 1, len, out) != len)
            return -1;
    }
    return 0;
}

/* Reads token `id` into vocab->tokens[id]; *budget is what is left of max_bytes. */
static int read_token(Vocab *vocab, FILE *in, size_t id, size_t *budget, Error *err) {
    uint32_t len;
    if (*budget < 4 || file_read_u32(in, &len) != 0)
        return error_set(err, "vocabulary: truncated at the length of token %zu", id);
    *budget -= 4;
    if (len == 0) return error_set(err, "vocabulary: token %zu is empty", id);
    if (len > *budget)
        return error_set(err, "vocabulary: token %zu claims %u bytes but at most %zu remain", id,
                         len, *budget);
    *budget -= len;
    char *token = checked_calloc((size_t)len + 1, 1, "vocabulary token", err);
    if (!token) return -1;
    vocab->tokens[id] = token;
    vocab->size = id + 1; /* from here on vocab_free releases it */
    if (fread(token, 1, len, in) != len)
        return error_set(err, "vocabulary: truncated inside token %zu", id);
    if (memchr(token, '\0', len))
        return error_set(err, "vocabulary: token %zu holds a NUL byte", id);
    if (utf8_validate(token, len, err) != 0)
        return error_prefix(err, "vocabulary: token %zu: ", id);
    /* the tokenizer splits at spaces, and the corpus reader refuses control characters */
    size_t offset;
    uint32_t control;
    if (strpbrk(token, " \t\n\v\f\r") || utf8_find_control(token, len, &offset, &control))
        return error_set(err, "vocabulary: token %zu holds a space or a control character", id);
    return 0;
}

int vocab_read(Vocab *out, FILE *in, size_t max_bytes, Error *err) {
    *out = (Vocab){0};
    uint32_t count;
    if (max_bytes < 4 || file_read_u32(in, &count) != 0)
        return error_set(err, "vocabulary: truncated before its token count");
    size_t budget = max_bytes - 4;
    if (count < TOK_SPECIALS || count > VOCAB_MAX_SIZE)
        return error_set(err, "vocabulary: %u tokens is outside %d..%zu", count, TOK_SPECIALS,
                         VOCAB_MAX_SIZE);
    if (count > budget / 5) /* every token takes at least 4 length bytes and 1 byte */
        return error_set(err, "vocabulary: %u tokens cannot fit in %zu bytes", count, budget);
    out->tokens = checked_calloc(count, sizeof *out->tokens, "vocabulary", err);
    int status = out->tokens ? 0 : -1;
    for (size_t id = 0; id < count && status == 0; id++)
        status = read_token(out, in, id, &budget, err);
    char quoted[128];
    for (int id = 0; id < TOK_SPECIALS && status == 0; id++)
        if (strcmp(out->tokens[id], special_tokens[id]) != 0)
            status = error_set(err, "vocabulary: id %d is \"%s\", not the reserved \"%s\"", id,
                               text_for_message(quoted, sizeof quoted, out->tokens[id], 80),
                               special_tokens[id]);
    if (status == 0) status = index_tokens(out, err);
    if (status != 0) vocab_free(out);
    return status;
}

/*
 * bpe.c: learning, applying, joining and (de)serialising byte-pair-encoding merges (bpe.h).
 *
 * Learning keeps each distinct word once, as an array of symbol ids with its count, and for
 * every adjacent pair of symbols its count and a list of the words it was seen in. A merge
 * rewrites only the words on its pair's list and re-counts the pairs of those words, and a
 * max-heap updated lazily finds the next pair: an entry whose count is no longer its pair's is
 * stale and dropped when it surfaces. Applying keeps a word's symbols in a linked list with a
 * min-heap of (rank, position), so a word of n characters costs O(n log n) whatever the merges.
 * Hash tables probe linearly in a power-of-two table kept at most half full, as in vocab.c.
 * A learned Bpe is built by replaying its merges through the same code that reads one, so both
 * hold the same symbols and pass the same checks.
 */
#include "data/bpe.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/files.h"

#define NO_SYMBOL UINT32_MAX
#define NONE      SIZE_MAX

/* ---- Small helpers ---- */

static uint64_t hash_pair(uint32_t left, uint32_t right) {
    uint64_t x = ((uint64_t)left << 32 | right) * 0x9E3779B97F4A7C15u; /* Fibonacci hashing */
    return x ^ x >> 29;
}

/* Grows *array (of elements of `size` bytes, *capacity of them) to hold at least `need`. */
static int grow(void **array, size_t *capacity, size_t need, size_t size, const char *what,
                Error *err) {
    if (need <= *capacity) return 0;
    size_t capacity_new = *capacity ? *capacity : 16;
    while (capacity_new < need) capacity_new *= 2;
    if (capacity_new > SIZE_MAX / size)
        return error_set(err, "cannot allocate %s: %zu x %zu bytes overflows", what, capacity_new,
                         size);
    void *grown = realloc(*array, capacity_new * size);
    if (!grown)
        return error_set(err, "out of memory growing %s to %zu bytes", what, capacity_new * size);
    *array = grown;
    *capacity = capacity_new;
    return 0;
}

/* The byte length of the UTF-8 character starting with `lead` (the text is known valid). */
static size_t char_length(unsigned char lead) {
    return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

static bool ends_with_marker(const char *s, size_t len) {
    return len >= 2 && s[len - 1] == '@' && s[len - 2] == '@';
}

/* Whether s ends in '@' followed by zero or more BPE_ESCAPE: the tokens that get escaped. */
static bool needs_escape(const char *s, size_t len) {
    while (len > 0 && s[len - 1] == BPE_ESCAPE) len--;
    return len > 0 && s[len - 1] == '@';
}

/* Whether s ends in '@' followed by one or more BPE_ESCAPE: the tokens that were escaped. */
static bool was_escaped(const char *s, size_t len) {
    return len >= 2 && s[len - 1] == BPE_ESCAPE && needs_escape(s, len - 1);
}

/* Appends the string `piece` (from malloc; freed on failure) to list. */
static int append_owned(TokenList *list, char *piece, Error *err) {
    if (grow((void **)&list->tokens, &list->capacity, list->count + 1, sizeof *list->tokens,
             "a token list", err) != 0) {
        free(piece);
        return -1;
    }
    list->tokens[list->count++] = piece;
    return 0;
}

/* ---- Symbol sets ---- */

/* The slot holding s[0..len), or the free slot where it would go; the table must exist. */
static size_t symbol_slot(const BpeSymbols *set, const char *s, size_t len) {
    size_t slot = (size_t)fnv1a(FNV1A_START, s, len) & set->mask;
    for (uint32_t id; (id = set->slots[slot]) != 0; slot = (slot + 1) & set->mask)
        if (set->lengths[id - 1] == len && memcmp(set->strings[id - 1], s, len) == 0) break;
    return slot;
}

static uint32_t symbol_find(const BpeSymbols *set, const char *s, size_t len) {
    if (!set->slots) return NO_SYMBOL;
    uint32_t stored = set->slots[symbol_slot(set, s, len)];
    return stored ? stored - 1 : NO_SYMBOL;
}

/* Sets *id to the id of s[0..len), adding a copy of it when it is new. */
static int symbol_intern(BpeSymbols *set, const char *s, size_t len, uint32_t *id, Error *err) {
    *id = symbol_find(set, s, len);
    if (*id != NO_SYMBOL) return 0;
    if (set->count >= UINT32_MAX - 1) return error_set(err, "bpe: too many symbols");
    if (2 * (set->count + 1) > set->mask + 1 || !set->slots) { /* at most half full */
        size_t size = set->slots ? 2 * (set->mask + 1) : 64;
        uint32_t *slots = checked_calloc(size, sizeof *slots, "bpe symbol table", err);
        if (!slots) return -1;
        free(set->slots);
        set->slots = slots;
        set->mask = size - 1;
        for (size_t i = 0; i < set->count; i++)
            set->slots[symbol_slot(set, set->strings[i], set->lengths[i])] = (uint32_t)i + 1;
    }
    /* both arrays share one capacity, raised only once both have grown */
    size_t strings_capacity = set->capacity, lengths_capacity = set->capacity;
    if (grow((void **)&set->strings, &strings_capacity, set->count + 1, sizeof *set->strings,
             "bpe symbols", err) != 0 ||
        grow((void **)&set->lengths, &lengths_capacity, set->count + 1, sizeof *set->lengths,
             "bpe symbol lengths", err) != 0)
        return -1;
    set->capacity = strings_capacity;
    char *copy = checked_strndup(s, len, "bpe symbol", err);
    if (!copy) return -1;
    set->slots[symbol_slot(set, s, len)] = (uint32_t)set->count + 1;
    set->strings[set->count] = copy;
    set->lengths[set->count] = len;
    *id = (uint32_t)set->count++;
    return 0;
}

static void symbols_free(BpeSymbols *set) {
    for (size_t i = 0; i < set->count; i++) free(set->strings[i]);
    free(set->strings);
    free(set->lengths);
    free(set->slots);
    *set = (BpeSymbols){0};
}

/* ---- The merge table ---- */

static size_t merge_slot(const Bpe *bpe, uint32_t left, uint32_t right) {
    size_t slot = (size_t)hash_pair(left, right) & bpe->merge_mask;
    for (uint32_t rank; (rank = bpe->merge_slots[slot]) != 0; slot = (slot + 1) & bpe->merge_mask)
        if (bpe->merges[rank - 1].left == left && bpe->merges[rank - 1].right == right) break;
    return slot;
}

/* The rank of the merge of (left, right), NONE when there is none. */
static size_t merge_rank(const Bpe *bpe, uint32_t left, uint32_t right) {
    if (!bpe->merge_slots || left == NO_SYMBOL || right == NO_SYMBOL) return NONE;
    uint32_t stored = bpe->merge_slots[merge_slot(bpe, left, right)];
    return stored ? stored - 1 : NONE;
}

void bpe_free(Bpe *bpe) {
    symbols_free(&bpe->symbols);
    free(bpe->merges);
    free(bpe->merge_slots);
    *bpe = (Bpe){0};
}

/* Checks one symbol of merge `index` and finds (or, for a character, adds) its id. */
static int merge_symbol(Bpe *bpe, size_t index, const char *side, const char *s, size_t len,
                        uint32_t *id, Error *err) {
    char quoted[128];
    bool final = !ends_with_marker(s, len);
    size_t text_len = final ? len : len - 2;
    if (text_len == 0)
        return error_set(err, "bpe: merge %zu: the %s symbol \"@@\" has no text", index, side);
    if (final && s[len - 1] == '@')
        return error_set(err,
                         "bpe: merge %zu: the %s symbol \"%s\" ends a word in '@', which no "
                         "escaped token does",
                         index, side, text_for_message(quoted, sizeof quoted, s, 80));
    *id = symbol_find(&bpe->symbols, s, len);
    if (*id != NO_SYMBOL) return 0;
    if (char_length((unsigned char)s[0]) != text_len) /* neither a character nor a result */
        return error_set(err,
                         "bpe: merge %zu: the %s symbol \"%s\" does not exist (not a "
                         "character, nor made by an earlier merge)",
                         index, side, text_for_message(quoted, sizeof quoted, s, 80));
    return symbol_intern(&bpe->symbols, s, len, id, err);
}

/* Adds the merge of the symbols left[0..left_len) and right[0..right_len) (valid UTF-8 without
 * NUL) as merge number bpe->merge_count, after checking that it can be one. */
static int add_merge(Bpe *bpe, const char *left, size_t left_len, const char *right,
                     size_t right_len, Error *err) {
    size_t index = bpe->merge_count;
    char quoted[128];
    if (!ends_with_marker(left, left_len))
        return error_set(err, "bpe: merge %zu: the left symbol \"%s\" ends a word (no \"@@\")",
                         index, text_for_message(quoted, sizeof quoted, left, 80));
    BpeMerge merge;
    if (merge_symbol(bpe, index, "left", left, left_len, &merge.left, err) != 0 ||
        merge_symbol(bpe, index, "right", right, right_len, &merge.right, err) != 0)
        return -1;
    if (bpe->merge_slots && bpe->merge_slots[merge_slot(bpe, merge.left, merge.right)] != 0)
        return error_set(err, "bpe: merge %zu repeats merge %u", index,
                         bpe->merge_slots[merge_slot(bpe, merge.left, merge.right)] - 1);

    size_t joined_len = left_len - 2 + right_len;
    char *joined = checked_calloc(joined_len + 1, 1, "bpe merge result", err);
    if (!joined) return -1;
    memcpy(joined, left, left_len - 2);
    memcpy(joined + left_len - 2, right, right_len);
    int status = symbol_intern(&bpe->symbols, joined, joined_len, &merge.result, err);
    free(joined);
    if (status != 0) return -1;

    if (grow((void **)&bpe->merges, &bpe->merge_capacity, index + 1, sizeof *bpe->merges,
             "bpe merges", err) != 0)
        return -1;
    if (2 * (index + 1) > bpe->merge_mask + 1 || !bpe->merge_slots) {
        size_t size = bpe->merge_slots ? 2 * (bpe->merge_mask + 1) : 64;
        uint32_t *slots = checked_calloc(size, sizeof *slots, "bpe merge table", err);
        if (!slots) return -1;
        free(bpe->merge_slots);
        bpe->merge_slots = slots;
        bpe->merge_mask = size - 1;
        for (size_t rank = 0; rank < index; rank++)
            slots[merge_slot(bpe, bpe->merges[rank].left, bpe->merges[rank].right)] =
                (uint32_t)rank + 1;
    }
    bpe->merges[index] = merge;
    bpe->merge_slots[merge_slot(bpe, merge.left, merge.right)] = (uint32_t)index + 1;
    bpe->merge_count = index + 1;
    return 0;
}

/* Checks text read from outside: no NUL, valid UTF-8, no spaces or control characters (the
 * tokenizer splits at spaces, and the corpus reader refuses control characters). */
static int check_text(const char *s, size_t len, Error *err) {
    if (memchr(s, '\0', len)) return error_set(err, "holds a NUL byte");
    if (utf8_validate(s, len, err) != 0) return -1;
    size_t offset;
    uint32_t control;
    static const struct {
        char c;
        const char *name;
    } SPACES[] = {{' ', "a space"},         {'\t', "a tab"},       {'\n', "a newline"},
                  {'\v', "a vertical tab"}, {'\f', "a form feed"}, {'\r', "a carriage return"}};
    for (size_t i = 0; i < len; i++)
        for (size_t k = 0; k < sizeof SPACES / sizeof SPACES[0]; k++)
            if (s[i] == SPACES[k].c)
                return error_set(err, "holds %s at byte %zu", SPACES[k].name, i);
    if (utf8_find_control(s, len, &offset, &control))
        return error_set(err, "holds the control character U+%04X at byte %zu", (unsigned)control,
                         offset);
    return 0;
}

/* ---- Learning ---- */

typedef struct {
    const char *token; /* borrowed from the sentences; NULL marks a free slot */
    size_t count;
} WordCount;

/* An adjacent pair of symbols, as counted over the corpus. */
typedef struct {
    uint32_t left, right;
    int64_t count;   /* occurrences in the corpus now, each word weighted by its count */
    int64_t pushed;  /* the count in its newest heap entry, 0 when it has none */
    uint32_t stamp;  /* the merge (number + 1) that last changed it, to list it once a merge */
    uint32_t *words; /* [word_count] words it occurred in; some may no longer hold it */
    size_t word_count, word_capacity;
} Pair;

typedef struct {
    int64_t count;
    uint32_t pair;
} HeapEntry;

typedef struct {
    BpeSymbols symbols; /* every character of the corpus and every merge result */
    size_t word_count;
    uint32_t *text; /* [text_capacity] the symbols of every distinct word, one after another */
    size_t text_count, text_capacity;
    size_t *word_start; /* [word_count] where word w starts in text */
    size_t *word_len;   /* [word_count] its current number of symbols */
    int64_t *word_freq; /* [word_count] its number of occurrences in the corpus */
    uint32_t *visited;  /* [word_count] the merge (number + 1) that last rewrote it */
    Pair *pairs;
    size_t pair_count, pair_capacity;
    uint32_t *pair_slots; /* [pair_mask + 1] hash table: pair id + 1, 0 = free */
    size_t pair_mask;
    HeapEntry *heap; /* max-heap by heap_before */
    size_t heap_count, heap_capacity;
    uint32_t *changed; /* pairs changed by the current merge */
    size_t changed_count, changed_capacity;
    uint32_t stamp; /* number + 1 of the merge in progress, 0 while counting */
} Learner;

static WordCount *word_slot(WordCount *slots, size_t mask, const char *token) {
    size_t slot = (size_t)fnv1a(FNV1A_START, token, strlen(token)) & mask;
    while (slots[slot].token && strcmp(slots[slot].token, token) != 0) slot = (slot + 1) & mask;
    return &slots[slot];
}

/* Counts the distinct tokens of the corpus into *slots (from checked_calloc, *used of them in
 * front when done), in no particular order. */
static int count_words(const TokenList *sentences, size_t sentence_count, WordCount **slots,
                       size_t *used, Error *err) {
    size_t mask = 1023;
    *used = 0;
    *slots = checked_calloc(mask + 1, sizeof **slots, "bpe word count table", err);
    if (!*slots) return -1;
    for (size_t s = 0; s < sentence_count; s++)
        for (size_t i = 0; i < sentences[s].count; i++) {
            if (2 * (*used + 1) > mask + 1) { /* keep the table at most half full */
                WordCount *grown =
                    checked_calloc(2 * (mask + 1), sizeof *grown, "bpe word count table", err);
                if (!grown) return -1;
                for (size_t j = 0; j <= mask; j++)
                    if ((*slots)[j].token)
                        *word_slot(grown, 2 * mask + 1, (*slots)[j].token) = (*slots)[j];
                free(*slots);
                *slots = grown;
                mask = 2 * mask + 1;
            }
            WordCount *entry = word_slot(*slots, mask, sentences[s].tokens[i]);
            if (!entry->token) {
                entry->token = sentences[s].tokens[i];
                ++*used;
            }
            entry->count++;
        }
    size_t front = 0;
    for (size_t j = 0; j <= mask; j++)
        if ((*slots)[j].token) (*slots)[front++] = (*slots)[j];
    return 0;
}

/* Appends the escaped token, cut into characters, to the learner's text as word w: only its
 * first BPE_LEARN_MAX_CHARS characters when it is longer (all of them then marked as inside
 * the word, which they are), so that one enormous word cannot make every merge rewrite it. */
static int load_word(Learner *l, size_t w, const WordCount *word, Error *err) {
    size_t len = strlen(word->token), chars = 0;
    char quoted[128];
    if (len == 0) return error_set(err, "bpe: the training corpus holds an empty token");
    if (check_text(word->token, len, err) != 0)
        return error_prefix(err, "bpe: the training token \"%s\": ",
                            text_for_message(quoted, sizeof quoted, word->token, 80));
    size_t total = len + needs_escape(word->token, len);
    const char escape[1] = {BPE_ESCAPE};
    l->word_start[w] = l->text_count;
    l->word_freq[w] = (int64_t)word->count;
    for (size_t at = 0; at < total && chars++ < BPE_LEARN_MAX_CHARS;) {
        size_t n = at < len ? char_length((unsigned char)word->token[at]) : 1;
        char piece[8]; /* a character and the marker */
        memcpy(piece, at < len ? word->token + at : escape, n);
        at += n;
        if (at < total) {
            memcpy(piece + n, BPE_MARKER, 2);
            n += 2;
        }
        uint32_t id;
        if (symbol_intern(&l->symbols, piece, n, &id, err) != 0 ||
            grow((void **)&l->text, &l->text_capacity, l->text_count + 1, sizeof *l->text,
                 "bpe training text", err) != 0)
            return -1;
        l->text[l->text_count++] = id;
    }
    l->word_len[w] = l->text_count - l->word_start[w];
    return 0;
}

static int load_words(Learner *l, const TokenList *sentences, size_t sentence_count, Error *err) {
    WordCount *words;
    size_t count;
    int status = count_words(sentences, sentence_count, &words, &count, err);
    if (status == 0 && count >= UINT32_MAX)
        status = error_set(err, "bpe: %zu distinct tokens are too many", count);
    if (status == 0) {
        l->word_count = count;
        l->word_start = checked_calloc(count, sizeof *l->word_start, "bpe words", err);
        l->word_len = checked_calloc(count, sizeof *l->word_len, "bpe words", err);
        l->word_freq = checked_calloc(count, sizeof *l->word_freq, "bpe words", err);
        l->visited = checked_calloc(count, sizeof *l->visited, "bpe words", err);
        if (!l->word_start || !l->word_len || !l->word_freq || !l->visited) status = -1;
    }
    for (size_t w = 0; w < count && status == 0; w++) status = load_word(l, w, &words[w], err);
    free(words);
    return status;
}

static size_t pair_slot(const Learner *l, uint32_t left, uint32_t right) {
    size_t slot = (size_t)hash_pair(left, right) & l->pair_mask;
    for (uint32_t id; (id = l->pair_slots[slot]) != 0; slot = (slot + 1) & l->pair_mask)
        if (l->pairs[id - 1].left == left && l->pairs[id - 1].right == right) break;
    return slot;
}

/* Sets *id to the pair (left, right), adding it with count 0 when it is new. */
static int pair_id(Learner *l, uint32_t left, uint32_t right, uint32_t *id, Error *err) {
    if (l->pair_slots) {
        uint32_t stored = l->pair_slots[pair_slot(l, left, right)];
        if (stored) {
            *id = stored - 1;
            return 0;
        }
    }
    if (l->pair_count >= UINT32_MAX - 1) return error_set(err, "bpe: too many symbol pairs");
    if (2 * (l->pair_count + 1) > l->pair_mask + 1 || !l->pair_slots) {
        size_t size = l->pair_slots ? 2 * (l->pair_mask + 1) : 1024;
        uint32_t *slots = checked_calloc(size, sizeof *slots, "bpe pair table", err);
        if (!slots) return -1;
        free(l->pair_slots);
        l->pair_slots = slots;
        l->pair_mask = size - 1;
        for (size_t i = 0; i < l->pair_count; i++)
            slots[pair_slot(l, l->pairs[i].left, l->pairs[i].right)] = (uint32_t)i + 1;
    }
    if (grow((void **)&l->pairs, &l->pair_capacity, l->pair_count + 1, sizeof *l->pairs,
             "bpe pairs", err) != 0)
        return -1;
    l->pairs[l->pair_count] = (Pair){.left = left, .right = right};
    l->pair_slots[pair_slot(l, left, right)] = (uint32_t)l->pair_count + 1;
    *id = (uint32_t)l->pair_count++;
    return 0;
}

/* Adds delta to the count of (left, right), notes the pair as changed by the current merge,
 * and, when word is not NO_SYMBOL, lists that word as holding the pair. */
static int pair_change(Learner *l, uint32_t left, uint32_t right, int64_t delta, uint32_t word,
                       Error *err) {
    uint32_t id = 0;
    if (pair_id(l, left, right, &id, err) != 0) return -1;
    Pair *pair = &l->pairs[id];
    pair->count += delta;
    if (l->stamp != 0 && pair->stamp != l->stamp) {
        pair->stamp = l->stamp;
        if (grow((void **)&l->changed, &l->changed_capacity, l->changed_count + 1,
                 sizeof *l->changed, "bpe changed pairs", err) != 0)
            return -1;
        l->changed[l->changed_count++] = id;
    }
    /* a word lists its pairs in one go, so a repeat is always the last entry */
    if (word != NO_SYMBOL && (pair->word_count == 0 || pair->words[pair->word_count - 1] != word)) {
        if (grow((void **)&pair->words, &pair->word_capacity, pair->word_count + 1,
                 sizeof *pair->words, "bpe pair's word list", err) != 0)
            return -1;
        pair->words[pair->word_count++] = word;
    }
    return 0;
}

/* The heap's order: higher count first, then the byte-wise smaller left symbol, then right. */
static bool heap_before(const Learner *l, HeapEntry a, HeapEntry b) {
    if (a.count != b.count) return a.count > b.count;
    const Pair *x = &l->pairs[a.pair], *y = &l->pairs[b.pair];
    int order = strcmp(l->symbols.strings[x->left], l->symbols.strings[y->left]);
    if (order == 0) order = strcmp(l->symbols.strings[x->right], l->symbols.strings[y->right]);
    return order < 0;
}

static int heap_push(Learner *l, uint32_t id, Error *err) {
    if (grow((void **)&l->heap, &l->heap_capacity, l->heap_count + 1, sizeof *l->heap,
             "bpe pair heap", err) != 0)
        return -1;
    HeapEntry entry = {l->pairs[id].count, id};
    l->pairs[id].pushed = entry.count;
    size_t at = l->heap_count++;
    while (at > 0 && heap_before(l, entry, l->heap[(at - 1) / 2])) {
        l->heap[at] = l->heap[(at - 1) / 2];
        at = (at - 1) / 2;
    }
    l->heap[at] = entry;
    return 0;
}

static void heap_pop(Learner *l) {
    HeapEntry last = l->heap[--l->heap_count];
    size_t at = 0;
    for (;;) {
        size_t child = 2 * at + 1;
        if (child >= l->heap_count) break;
        if (child + 1 < l->heap_count && heap_before(l, l->heap[child + 1], l->heap[child]))
            child++;
        if (!heap_before(l, l->heap[child], last)) break;
        l->heap[at] = l->heap[child];
        at = child;
    }
    if (l->heap_count > 0) l->heap[at] = last;
}

/* Finds the most frequent pair, dropping stale heap entries on the way; false when no pair
 * occurs at least twice. */
static bool best_pair(Learner *l, uint32_t *id) {
    while (l->heap_count > 0) {
        HeapEntry top = l->heap[0];
        if (top.count == l->pairs[top.pair].count) {
            *id = top.pair;
            return top.count >= 2;
        }
        heap_pop(l);
    }
    return false;
}

/* Replaces every non-overlapping (left, right) in word w, from left to right, by joined, and
 * moves the word's pair counts from its old symbols to its new ones. */
static int rewrite_word(Learner *l, uint32_t w, uint32_t left, uint32_t right, uint32_t joined,
                        Error *err) {
    uint32_t *s = l->text + l->word_start[w];
    size_t len = l->word_len[w];
    int64_t freq = l->word_freq[w];
    size_t i = 0;
    while (i + 1 < len && !(s[i] == left && s[i + 1] == right)) i++;
    if (i + 1 >= len) return 0; /* a stale entry of the pair's word list */
    for (i = 0; i + 1 < len; i++)
        if (pair_change(l, s[i], s[i + 1], -freq, NO_SYMBOL, err) != 0) return -1;
    size_t kept = 0;
    for (i = 0; i < len; kept++) {
        if (i + 1 < len && s[i] == left && s[i + 1] == right) {
            s[kept] = joined;
            i += 2;
        } else {
            s[kept] = s[i++];
        }
    }
    l->word_len[w] = len = kept;
    /* only pairs with the new symbol are new to this word; the others list it already */
    for (i = 0; i + 1 < len; i++)
        if (pair_change(l, s[i], s[i + 1], freq,
                        s[i] == joined || s[i + 1] == joined ? w : NO_SYMBOL, err) != 0)
            return -1;
    return 0;
}

/* Carries out merge number m, of pair id, in the learner's words. */
static int learn_merge(Learner *l, uint32_t id, size_t m, Error *err) {
    Pair pair = l->pairs[id]; /* a copy: pair_change may move the array */
    const char *left = l->symbols.strings[pair.left], *right = l->symbols.strings[pair.right];
    size_t left_len = l->symbols.lengths[pair.left] - 2, right_len = l->symbols.lengths[pair.right];
    char *joined_text = checked_calloc(left_len + right_len + 1, 1, "bpe merge result", err);
    if (!joined_text) return -1;
    memcpy(joined_text, left, left_len);
    memcpy(joined_text + left_len, right, right_len);
    uint32_t joined;
    int status = symbol_intern(&l->symbols, joined_text, left_len + right_len, &joined, err);
    free(joined_text);

    l->stamp = (uint32_t)m + 1;
    l->changed_count = 0;
    for (size_t k = 0; k < pair.word_count && status == 0; k++) {
        uint32_t w = pair.words[k];
        if (l->visited[w] == l->stamp) continue;
        l->visited[w] = l->stamp;
        status = rewrite_word(l, w, pair.left, pair.right, joined, err);
    }
    /* every occurrence is merged now, so the list of where the pair was is of no more use */
    free(l->pairs[id].words);
    l->pairs[id].words = NULL;
    l->pairs[id].word_count = l->pairs[id].word_capacity = 0;
    for (size_t k = 0; k < l->changed_count && status == 0; k++) {
        Pair *changed = &l->pairs[l->changed[k]];
        if (changed->count == changed->pushed) continue; /* its newest entry is still right */
        if (changed->count > 0)
            status = heap_push(l, l->changed[k], err);
        else
            changed->pushed = 0;
    }
    return status;
}

static void learner_free(Learner *l) {
    symbols_free(&l->symbols);
    for (size_t i = 0; i < l->pair_count; i++) free(l->pairs[i].words);
    free(l->pairs);
    free(l->pair_slots);
    free(l->text);
    free(l->word_start);
    free(l->word_len);
    free(l->word_freq);
    free(l->visited);
    free(l->heap);
    free(l->changed);
    *l = (Learner){0};
}

int bpe_learn(const TokenList *sentences, size_t sentence_count, size_t max_merges, Bpe *out,
              Error *err) {
    *out = (Bpe){0};
    if (max_merges > BPE_MAX_MERGES)
        return error_set(err, "bpe: %zu merges is more than the %zu allowed", max_merges,
                         BPE_MAX_MERGES);
    Learner l = {0};
    int status = load_words(&l, sentences, sentence_count, err);
    for (uint32_t w = 0; w < l.word_count && status == 0; w++) {
        const uint32_t *s = l.text + l.word_start[w];
        for (size_t i = 0; i + 1 < l.word_len[w] && status == 0; i++)
            status = pair_change(&l, s[i], s[i + 1], l.word_freq[w], w, err);
    }
    for (uint32_t id = 0; id < l.pair_count && status == 0; id++) status = heap_push(&l, id, err);
    uint32_t best;
    for (size_t m = 0; m < max_merges && status == 0 && best_pair(&l, &best); m++) {
        const Pair *pair = &l.pairs[best];
        status = add_merge(out, l.symbols.strings[pair->left], l.symbols.lengths[pair->left],
                           l.symbols.strings[pair->right], l.symbols.lengths[pair->right], err);
        if (status == 0) status = learn_merge(&l, best, m, err);
    }
    learner_free(&l);
    if (status != 0) bpe_free(out);
    return status;
}

/* ---- Applying ---- */

/* One symbol of the word being cut: text[start..end) of the escaped token. */
typedef struct {
    size_t start, end;
    size_t prev, next; /* neighbours, NONE at the ends; start is NONE once merged away */
    uint32_t symbol;   /* NO_SYMBOL for a character no merge mentions */
} Node;

typedef struct {
    size_t rank, at; /* the merge of rank `rank` could join node `at` and its next */
} Candidate;

static bool candidate_before(Candidate a, Candidate b) {
    return a.rank != b.rank ? a.rank < b.rank : a.at < b.at;
}

/* Pushes the merge of node `at` with its next, when there is one (heap has room: see below). */
static void consider(const Bpe *bpe, const Node *nodes, size_t at, Candidate *heap, size_t *count) {
    if (at == NONE || nodes[at].next == NONE) return;
    size_t rank = merge_rank(bpe, nodes[at].symbol, nodes[nodes[at].next].symbol);
    if (rank == NONE) return;
    Candidate entry = {rank, at};
    size_t i = (*count)++;
    while (i > 0 && candidate_before(entry, heap[(i - 1) / 2])) {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap[i] = entry;
}

static Candidate pop_candidate(Candidate *heap, size_t *count) {
    Candidate top = heap[0], last = heap[--*count];
    size_t at = 0;
    for (;;) {
        size_t child = 2 * at + 1;
        if (child >= *count) break;
        if (child + 1 < *count && candidate_before(heap[child + 1], heap[child])) child++;
        if (!candidate_before(heap[child], last)) break;
        heap[at] = heap[child];
        at = child;
    }
    if (*count > 0) heap[at] = last;
    return top;
}

/* Applies the merges to the n characters in nodes, lowest rank first and, within a rank, from
 * left to right; a merge never makes a pair of its own rank or lower (a symbol's merges all
 * come after the one that made it), so this is subword-nmt's order. */
static void merge_nodes(const Bpe *bpe, Node *nodes, size_t n, Candidate *heap) {
    size_t count = 0; /* at most n - 1 at first, then 2 more per merge: at most 3n */
    for (size_t at = 0; at < n; at++) consider(bpe, nodes, at, heap, &count);
    while (count > 0) {
        Candidate c = pop_candidate(heap, &count);
        Node *node = &nodes[c.at];
        if (node->start == NONE || node->next == NONE) continue;
        Node *next = &nodes[node->next];
        const BpeMerge *merge = &bpe->merges[c.rank];
        if (merge->left != node->symbol || merge->right != next->symbol) continue; /* stale */
        node->symbol = merge->result;
        node->end = next->end;
        node->next = next->next;
        if (node->next != NONE) nodes[node->next].prev = c.at;
        next->start = NONE;
        consider(bpe, nodes, node->prev, heap, &count);
        consider(bpe, nodes, c.at, heap, &count);
    }
}

/* bpe_apply (marked) and bpe_apply_unmarked: the same cut, spelled two ways. */
static int cut(const Bpe *bpe, const char *token, bool marked, TokenList *pieces, Error *err) {
    size_t len = strlen(token), offset;
    char quoted[128];
    if (len == 0) return error_set(err, "bpe: cannot cut an empty token into pieces");
    const char *problem = utf8_find_error(token, len, &offset);
    if (problem)
        return error_set(err, "bpe: token \"%s\": invalid UTF-8 at byte %zu: %s",
                         text_for_message(quoted, sizeof quoted, token, 80), offset, problem);
    size_t total = len + needs_escape(token, len), n = 0;
    char *text = checked_strndup(token, len, "bpe token", err);
    if (!text) return -1;
    if (total > len) {
        char *escaped = realloc(text, total + 1);
        if (!escaped) {
            free(text);
            return error_set(err, "out of memory escaping a token of %zu bytes", len);
        }
        text = escaped;
        text[len] = BPE_ESCAPE;
        text[total] = '\0';
    }
    for (size_t at = 0; at < total; at += char_length((unsigned char)text[at])) n++;
    Node *nodes = checked_calloc(n, sizeof *nodes, "bpe word", err);
    Candidate *heap = checked_calloc(n, 3 * sizeof *heap, "bpe merge queue", err);
    int status = nodes && heap ? 0 : -1;
    for (size_t i = 0, at = 0; i < n && status == 0; i++) {
        size_t end = at + char_length((unsigned char)text[at]);
        char piece[8]; /* a character and the marker */
        memcpy(piece, text + at, end - at);
        memcpy(piece + (end - at), BPE_MARKER, 2);
        nodes[i] = (Node){.start = at,
                          .end = end,
                          .prev = i > 0 ? i - 1 : NONE,
                          .next = i + 1 < n ? i + 1 : NONE,
                          .symbol = symbol_find(&bpe->symbols, piece, end - at + 2 * (i + 1 < n))};
        at = end;
    }
    if (status == 0) merge_nodes(bpe, nodes, n, heap);
    size_t first = pieces->count;
    for (size_t at = 0; at != NONE && status == 0; at = nodes[at].next) {
        size_t piece_len = nodes[at].end - nodes[at].start;
        bool final = nodes[at].next == NONE;
        if (!marked && final && total > len) piece_len--; /* the escape is no text */
        if (!marked && piece_len == 0) continue;
        char *piece = checked_calloc(piece_len + 3, 1, "bpe piece", err);
        if (!piece) {
            status = -1;
            break;
        }
        memcpy(piece, text + nodes[at].start, piece_len);
        if (marked && !final) memcpy(piece + piece_len, BPE_MARKER, 2);
        status = append_owned(pieces, piece, err);
    }
    if (status != 0) /* leave the list as it was */
        while (pieces->count > first) free(pieces->tokens[--pieces->count]);
    free(heap);
    free(nodes);
    free(text);
    return status;
}

int bpe_apply(const Bpe *bpe, const char *token, TokenList *pieces, Error *err) {
    return cut(bpe, token, true, pieces, err);
}

int bpe_apply_unmarked(const Bpe *bpe, const char *token, TokenList *pieces, Error *err) {
    return cut(bpe, token, false, pieces, err);
}

int bpe_apply_list(const Bpe *bpe, const TokenList *tokens, TokenList *out, Error *err) {
    *out = (TokenList){0};
    for (size_t i = 0; i < tokens->count; i++)
        if (bpe_apply(bpe, tokens->tokens[i], out, err) != 0) {
            token_list_free(out);
            return -1;
        }
    return 0;
}

/* ---- Joining ---- */

int bpe_join(const char *const *pieces, size_t count, TokenList *out, Error *err) {
    *out = (TokenList){0};
    char *word = NULL;
    size_t len = 0, capacity = 0;
    int status = 0;
    /* the extra round (i == count) ends a word left unfinished by the last piece */
    for (size_t i = 0; i <= count && status == 0; i++) {
        bool final = true;
        if (i < count) {
            size_t n = strlen(pieces[i]);
            final = !ends_with_marker(pieces[i], n);
            if (!final) n -= 2;
            status = grow((void **)&word, &capacity, len + n + 1, 1, "a joined token", err);
            if (status != 0) break;
            memcpy(word + len, pieces[i], n);
            len += n;
        }
        if (final && len > 0) {
            if (was_escaped(word, len)) len--;
            char *token = checked_strndup(word, len, "a joined token", err);
            status = token ? append_owned(out, token, err) : -1;
            len = 0;
        }
    }
    free(word);
    if (status != 0) token_list_free(out);
    return status;
}

/* ---- Serialisation ---- */

static int write_symbol(const Bpe *bpe, uint32_t id, FILE *out) {
    size_t len = bpe->symbols.lengths[id];
    return len <= UINT32_MAX && file_write_u32(out, (uint32_t)len) == 0 &&
                   fwrite(bpe->symbols.strings[id], 1, len, out) == len
               ? 0
               : -1;
}

int bpe_write(const Bpe *bpe, FILE *out) {
    if (bpe->merge_count > UINT32_MAX || file_write_u32(out, (uint32_t)bpe->merge_count) != 0)
        return -1;
    for (size_t i = 0; i < bpe->merge_count; i++)
        if (write_symbol(bpe, bpe->merges[i].left, out) != 0 ||
            write_symbol(bpe, bpe->merges[i].right, out) != 0)
            return -1;
    return 0;
}

/* Reads one symbol of merge `index` into *symbol (from malloc) and *len; *budget is what is
 * left of max_bytes. */
static int read_symbol(FILE *in, size_t index, const char *side, size_t *budget, char **symbol,
                       size_t *len, Error *err) {
    uint32_t n;
    if (*budget < 4 || file_read_u32(in, &n) != 0)
        return error_set(err, "bpe: truncated at the length of merge %zu's %s symbol", index, side);
    *budget -= 4;
    if (n == 0) return error_set(err, "bpe: merge %zu: the %s symbol is empty", index, side);
    if (n > *budget)
        return error_set(err,
                         "bpe: merge %zu: the %s symbol claims %u bytes but at most %zu "
                         "remain",
                         index, side, n, *budget);
    *budget -= n;
    char *s = checked_calloc((size_t)n + 1, 1, "bpe symbol", err);
    if (!s) return -1;
    if (fread(s, 1, n, in) != n) {
        free(s);
        return error_set(err, "bpe: truncated inside merge %zu's %s symbol", index, side);
    }
    if (check_text(s, n, err) != 0) {
        free(s);
        return error_prefix(err, "bpe: merge %zu: the %s symbol: ", index, side);
    }
    *symbol = s;
    *len = n;
    return 0;
}

int bpe_read(Bpe *out, FILE *in, size_t max_bytes, Error *err) {
    *out = (Bpe){0};
    uint32_t count;
    if (max_bytes < 4 || file_read_u32(in, &count) != 0)
        return error_set(err, "bpe: truncated before its merge count");
    size_t budget = max_bytes - 4;
    if (count > BPE_MAX_MERGES)
        return error_set(err, "bpe: %u merges is more than the %zu allowed", count, BPE_MAX_MERGES);
    if (count > budget / 12) /* a merge takes at least 4 + 3 ("x@@") + 4 + 1 bytes */
        return error_set(err, "bpe: %u merges cannot fit in %zu bytes", count, budget);
    int status = 0;
    for (size_t i = 0; i < count && status == 0; i++) {
        char *left = NULL, *right = NULL;
        size_t left_len = 0, right_len = 0;
        status = read_symbol(in, i, "left", &budget, &left, &left_len, err);
        if (status == 0) status = read_symbol(in, i, "right", &budget, &right, &right_len, err);
        if (status == 0) status = add_merge(out, left, left_len, right, right_len, err);
        free(left);
        free(right);
    }
    if (status != 0) bpe_free(out);
    return status;
}

/*
 * tokenizer.c: UTF-8 checking, tokenization and its inverse (see tokenizer.h).
 *
 * tokenize() validates the text, decodes it into code points once, then scans left to right
 * with one character of look-behind and look-ahead, which is all the rules need (is this
 * hyphen between two letters? this comma between two digits?). Tokens are re-encoded as they
 * are emitted; that is where lower-casing and the U+2019 -> ' mapping happen. Character
 * classes are static tables of code-point ranges, not a full Unicode database.
 */
#include "data/tokenizer.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Character classes ---- */

typedef struct {
    uint32_t first, last;
} Range;

static bool in_ranges(uint32_t cp, const Range *ranges, size_t count) {
    for (size_t i = 0; i < count; i++)
        if (cp >= ranges[i].first && cp <= ranges[i].last) return true;
    return false;
}

/* Unicode White_Space, plus the zero-width space and the byte-order mark: invisible
 * separators that would otherwise glue themselves to words and split the vocabulary. */
static const Range whitespace_ranges[] = {
    {0x0009, 0x000D}, {0x0020, 0x0020}, {0x0085, 0x0085}, {0x00A0, 0x00A0},
    {0x1680, 0x1680}, {0x2000, 0x200B}, {0x2028, 0x2029}, {0x202F, 0x202F},
    {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF},
};

/* Scripts written without spaces between words, where each character becomes a token. */
static const Range cjk_ranges[] = {
    {0x2E80, 0x2FDF},   /* CJK and Kangxi radicals */
    {0x3001, 0x303F},   /* CJK symbols and punctuation (U+3000 is whitespace) */
    {0x3040, 0x30FF},   /* Hiragana, Katakana */
    {0x3100, 0x31FF},   /* Bopomofo, Hangul compatibility jamo, Kanbun, strokes */
    {0x3200, 0x33FF},   /* enclosed CJK letters, CJK compatibility */
    {0x3400, 0x4DBF},   /* CJK Unified Ideographs Extension A */
    {0x4E00, 0x9FFF},   /* CJK Unified Ideographs */
    {0xAC00, 0xD7AF},   /* Hangul syllables */
    {0xF900, 0xFAFF},   /* CJK compatibility ideographs */
    {0xFE30, 0xFE4F},   /* CJK compatibility forms */
    {0xFF00, 0xFFEF},   /* halfwidth and fullwidth forms (，。！？ and friends) */
    {0x20000, 0x3134F}, /* CJK Unified Ideographs Extensions B..G, compatibility supplement */
};

/* Punctuation split off as tokens of its own. Symbols (% $ € + = / @ # & ...) are not here:
 * they stay inside words, so "50%" and "and/or" survive a round trip. */
static const Range punctuation_ranges[] = {
    {0x00A1, 0x00A1}, /* ¡ */
    {0x00AB, 0x00AB}, /* « */
    {0x00BB, 0x00BB}, /* » */
    {0x00BF, 0x00BF}, /* ¿ */
    {0x2012, 0x2027}, /* dashes, quotation marks, daggers, bullets, … */
    {0x2039, 0x203A}, /* ‹ › */
    {0x203C, 0x203C}, /* ‼ */
    {0x2047, 0x2049}, /* ⁇ ⁈ ⁉ */
};

#define COUNT_OF(array) (sizeof(array) / sizeof((array)[0]))

typedef enum {
    CLASS_SPACE,
    CLASS_CJK,
    CLASS_APOSTROPHE, /* part of a word between two word characters, punctuation otherwise */
    CLASS_HYPHEN,     /* likewise */
    CLASS_PUNCTUATION,
    CLASS_WORD, /* letters, digits, marks, symbols: anything else */
} CharClass;

static CharClass char_class(uint32_t cp) {
    if (cp == '\'' || cp == 0x2019) return CLASS_APOSTROPHE;
    if (cp == '-' || cp == 0x2010 || cp == 0x2011) return CLASS_HYPHEN;
    if (in_ranges(cp, whitespace_ranges, COUNT_OF(whitespace_ranges))) return CLASS_SPACE;
    if (cp < 0x80)
        return cp != 0 && strchr("!\"(),.:;?[]{}", (int)cp) ? CLASS_PUNCTUATION : CLASS_WORD;
    if (in_ranges(cp, punctuation_ranges, COUNT_OF(punctuation_ranges))) return CLASS_PUNCTUATION;
    if (in_ranges(cp, cjk_ranges, COUNT_OF(cjk_ranges))) return CLASS_CJK;
    return CLASS_WORD;
}

static bool is_word_char(uint32_t cp) {
    return char_class(cp) == CLASS_WORD;
}

static bool is_digit(uint32_t cp) {
    return cp >= '0' && cp <= '9';
}

/* Simple (one-to-one) lower-case mapping; no mapping makes a character longer in UTF-8. */
static uint32_t to_lower(uint32_t cp) {
    if (cp >= 'A' && cp <= 'Z') return cp + 32;
    if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32; /* À..Þ except × */
    if (cp == 0x130) return 'i';                                /* İ */
    if (cp == 0x178) return 0xFF;                               /* Ÿ pairs with Latin-1 ÿ */
    /* Latin Extended-A alternates upper/lower: even upper in these runs, odd upper in the next */
    if ((cp >= 0x100 && cp <= 0x137) || (cp >= 0x14A && cp <= 0x177)) return cp | 1;
    if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E)) return cp + (cp & 1);
    if (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2) return cp + 32; /* Greek Α..Ϋ */
    if (cp >= 0x410 && cp <= 0x42F) return cp + 32;                /* Cyrillic А..Я */
    if (cp >= 0x400 && cp <= 0x40F) return cp + 80;                /* Cyrillic Ѐ..Џ */
    return cp;
}

bool tokenizer_is_space(uint32_t cp) {
    return char_class(cp) == CLASS_SPACE;
}

uint32_t lowercase_code_point(uint32_t cp) {
    return to_lower(cp);
}

/* ---- Elision ---- */

/* French words that elide their final vowel before a vowel: l'arbre, qu'il, jusqu'à. */
static const char *const elision_prefixes[] = {"j", "l", "d",  "n",     "s",      "c",
                                               "m", "t", "qu", "jusqu", "lorsqu", "puisqu"};

/* Is word[0..len) (ASCII letters, any case) one of the elision prefixes? */
static bool is_elision_prefix(const char *word, size_t len) {
    for (size_t i = 0; i < COUNT_OF(elision_prefixes); i++) {
        const char *prefix = elision_prefixes[i];
        if (strlen(prefix) != len) continue;
        size_t k = 0;
        while (k < len && (word[k] | 0x20) == prefix[k]) k++;
        if (k == len) return true;
    }
    return false;
}

/* The same test on code points; prefixes are short ASCII words, anything else is not one. */
static bool is_elision_prefix_cp(const uint32_t *cps, size_t len) {
    char ascii[8];
    if (len >= sizeof ascii) return false;
    for (size_t k = 0; k < len; k++) {
        if (cps[k] >= 0x80) return false;
        ascii[k] = (char)cps[k];
    }
    return is_elision_prefix(ascii, len);
}

/* ---- tokenize ---- */

void token_list_free(TokenList *list) {
    for (size_t i = 0; i < list->count; i++) free(list->tokens[i]);
    free(list->tokens);
    *list = (TokenList){0};
}

/* A character as it appears in a token: U+2019 as ', lower-cased when asked. */
static uint32_t as_written(uint32_t cp, bool lowercase) {
    if (cp == 0x2019) return '\'';
    return lowercase ? to_lower(cp) : cp;
}

/* Appends cps[from..to) as a token, lower-cased when asked and with U+2019 as '. */
static int emit(TokenList *list, const uint32_t *cps, size_t from, size_t to, bool lowercase,
                Error *err) {
    if (list->count == list->capacity) {
        size_t capacity = list->capacity ? 2 * list->capacity : 16;
        char **grown = realloc(list->tokens, capacity * sizeof *grown);
        if (!grown) return error_set(err, "out of memory growing a token list to %zu", capacity);
        list->tokens = grown;
        list->capacity = capacity;
    }
    size_t size = 1;
    for (size_t i = from; i < to; i++) size += utf8_encode(as_written(cps[i], lowercase), NULL);
    char *token = checked_calloc(size, 1, "a token", err);
    if (!token) return -1;
    for (size_t i = from, used = 0; i < to; i++)
        used += utf8_encode(as_written(cps[i], lowercase), token + used);
    list->tokens[list->count++] = token;
    return 0;
}

/* Returns the end of the word whose first character is at cps[at - 1]: a run of word
 * characters that may also hold hyphens and apostrophes between two word characters
 * (est-ce, don't) and . , : between two digits (3.14, 1,000, 9:30). */
static size_t word_end(const uint32_t *cps, size_t count, size_t at) {
    for (; at < count; at++) {
        uint32_t cp = cps[at], before = cps[at - 1];
        bool has_after = at + 1 < count;
        CharClass class = char_class(cp);
        if (class == CLASS_WORD) continue;
        if ((class == CLASS_HYPHEN || class == CLASS_APOSTROPHE) && is_word_char(before) &&
            has_after && is_word_char(cps[at + 1]))
            continue;
        if ((cp == '.' || cp == ',' || cp == ':') && is_digit(before) && has_after &&
            is_digit(cps[at + 1]))
            continue;
        break;
    }
    return at;
}

/* Emits the word cps[from..to), split after the apostrophe when it starts with an elision. */
static int emit_word(TokenList *list, const uint32_t *cps, size_t from, size_t to, bool lowercase,
                     Error *err) {
    size_t apostrophe = from;
    while (apostrophe < to && char_class(cps[apostrophe]) != CLASS_APOSTROPHE) apostrophe++;
    if (apostrophe < to && is_elision_prefix_cp(cps + from, apostrophe - from)) {
        if (emit(list, cps, from, apostrophe + 1, lowercase, err) != 0) return -1;
        from = apostrophe + 1;
    }
    return emit(list, cps, from, to, lowercase, err);
}

static int split(const uint32_t *cps, size_t count, bool lowercase, TokenList *out, Error *err) {
    size_t at = 0;
    while (at < count) {
        size_t start = at;
        CharClass class = char_class(cps[at]);
        bool negative_number = cps[at] == '-' && at + 1 < count && is_digit(cps[at + 1]);
        if (class == CLASS_SPACE) {
            at++;
        } else if (class == CLASS_WORD || negative_number) {
            at = word_end(cps, count, at + 1);
            if (emit_word(out, cps, start, at, lowercase, err) != 0) return -1;
        } else {
            /* a run of dots is one token, the ASCII spelling of … */
            at++;
            while (cps[start] == '.' && at < count && cps[at] == '.') at++;
            if (emit(out, cps, start, at, lowercase, err) != 0) return -1;
        }
    }
    return 0;
}

int tokenize(const char *text, bool lowercase, TokenList *out, Error *err) {
    *out = (TokenList){0};
    size_t len = strlen(text);
    if (utf8_validate(text, len, err) != 0) return -1;
    uint32_t *cps = checked_calloc(len, sizeof *cps, "code points", err);
    if (!cps) return -1;
    size_t count = 0;
    const char *problem = NULL;
    for (size_t at = 0; at < len; count++)
        at += utf8_decode((const unsigned char *)text + at, len - at, &cps[count], &problem);
    int status = split(cps, count, lowercase, out, err);
    free(cps);
    if (status != 0) token_list_free(out);
    return status;
}

/* ---- detokenize ---- */

typedef enum { ROLE_WORD, ROLE_CJK, ROLE_ELISION, ROLE_OPENING, ROLE_CLOSING } TokenRole;

static const char *const opening_tokens[] = {"(", "[", "{", "«", "¿", "¡", "“", "„", "‘", "‚", "‹"};
static const char *const closing_tokens[] = {".", ",", ")", "]", "}", "»", "…", "”", "›",
                                             "!", "?", ";", ":", "‼", "⁇", "⁈", "⁉"};

static bool in_list(const char *token, const char *const *list, size_t count) {
    for (size_t i = 0; i < count; i++)
        if (strcmp(token, list[i]) == 0) return true;
    return false;
}

/* The role of a token in spacing; *open_quote tracks straight quotes (" and a lone ') so that
 * they alternate between opening and closing. */
static TokenRole token_role(const char *token, bool open_quote[2]) {
    size_t len = strlen(token);
    if (strcmp(token, "\"") == 0 || strcmp(token, "'") == 0) {
        bool *open = &open_quote[token[0] == '\''];
        *open = !*open;
        return *open ? ROLE_OPENING : ROLE_CLOSING;
    }
    if (len >= 2 && token[len - 1] == '\'' && is_elision_prefix(token, len - 1))
        return ROLE_ELISION;
    if (in_list(token, opening_tokens, COUNT_OF(opening_tokens))) return ROLE_OPENING;
    if (in_list(token, closing_tokens, COUNT_OF(closing_tokens))) return ROLE_CLOSING;
    if (len > 0 && strspn(token, ".") == len) return ROLE_CLOSING; /* ... */
    uint32_t first;
    const char *problem = NULL;
    if (len > 0 && utf8_decode((const unsigned char *)token, len, &first, &problem) > 0 &&
        char_class(first) == CLASS_CJK)
        return ROLE_CJK;
    return ROLE_WORD;
}

char *detokenize(const char *const *tokens, size_t count, Error *err) {
    size_t total = 1;
    for (size_t i = 0; i < count; i++) total += strlen(tokens[i]) + 1;
    char *text = checked_calloc(total, 1, "detokenized text", err);
    if (!text) return NULL;
    size_t used = 0;
    bool open_quote[2] = {false, false};
    TokenRole previous = ROLE_OPENING; /* so the first token gets no space before it */
    for (size_t i = 0; i < count; i++) {
        TokenRole role = token_role(tokens[i], open_quote);
        bool joined = previous == ROLE_OPENING || previous == ROLE_ELISION ||
                      role == ROLE_CLOSING || (previous == ROLE_CJK && role == ROLE_CJK);
        if (!joined) text[used++] = ' ';
        size_t len = strlen(tokens[i]);
        memcpy(text + used, tokens[i], len);
        used += len;
        previous = role;
    }
    text[used] = '\0';
    return text;
}

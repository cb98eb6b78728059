/*
 * metrics.c: sacreBLEU-compatible corpus BLEU and chrF (see metrics.h).
 *
 * Text is first decoded from UTF-8 into Unicode code points, because every sacreBLEU rule works
 * on Python str characters: the 13a regexes, str.split()'s whitespace and chrF's character
 * n-grams all count code points, not bytes. N-grams are counted by sorting both sides and
 * merging the sorted lists, which needs no hash table and puts no limit on sentence length.
 * The scoring formulas follow sacreBLEU's compute_bleu and CHRF._compute_f_score step by step,
 * in the same floating-point order, so scores agree to the last printed digit.
 */
#include "nmt/metrics/metrics.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "nmt/metrics/unicode.h"

/* ------------------------------------------------------------------------------------------ */
/* Unicode text                                                                               */
/* ------------------------------------------------------------------------------------------ */

/* A string as Python sees it: a sequence of code points. */
typedef struct {
    uint32_t *chars;
    size_t len;
} CodePoints;

static void code_points_free(CodePoints *text) {
    free(text->chars);
    text->chars = NULL;
    text->len = 0;
}

/* Replaces text's buffer with a new one of len code points (the result of a rewrite pass). */
static void code_points_replace(CodePoints *text, uint32_t *chars, size_t len) {
    free(text->chars);
    text->chars = chars;
    text->len = len;
}

/* Python's str.isspace(), which str.split() and str.rstrip() use to find whitespace: ASCII
 * \t \n \v \f \r, the separators 0x1C-0x1F and space, plus the Unicode spaces below (NEL,
 * no-break space, ogham, the typographic spaces, line/paragraph separators, ideographic). */
static bool is_python_space(uint32_t c) {
    if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Decodes a whole NUL-terminated UTF-8 string; malformed input is an error rather than
 * something to score, as sacreBLEU would fail reading such a file. */
static int decode_utf8(const char *text, CodePoints *out, Error *err) {
    size_t bytes = strlen(text);
    uint32_t *chars = checked_calloc(bytes, sizeof *chars, "decoded text", err);
    if (!chars) return -1;
    const unsigned char *s = (const unsigned char *)text;
    size_t len = 0;
    for (size_t i = 0; i < bytes;) {
        size_t used = utf8_decode(s + i, bytes - i, &chars[len], NULL);
        if (used == 0) {
            free(chars);
            return error_set(err, "invalid UTF-8 at byte %zu", i);
        }
        i += used;
        len++;
    }
    out->chars = chars;
    out->len = len;
    return 0;
}

/* Python's str.rstrip(): drops trailing whitespace. */
static void strip_trailing_space(CodePoints *text) {
    while (text->len > 0 && is_python_space(text->chars[text->len - 1])) text->len--;
}

/* Python's str.strip(): drops whitespace at both ends. */
static void strip_space(CodePoints *text) {
    strip_trailing_space(text);
    size_t start = 0;
    while (start < text->len && is_python_space(text->chars[start])) start++;
    memmove(text->chars, text->chars + start, (text->len - start) * sizeof *text->chars);
    text->len -= start;
}

/* Python's str.lower() (unicode.c says where it differs): one code point for one,
 * except U+0130 (I with dot above), which becomes i and a combining dot above. */
static int lower_case(CodePoints *text, Error *err) {
    uint32_t *out = checked_calloc(text->len + 1, 2 * sizeof *out, "lower-cased text", err);
    if (!out) return -1;
    size_t len = 0;
    for (size_t i = 0; i < text->len; i++) {
        if (text->chars[i] == 0x130) {
            out[len++] = 'i';
            out[len++] = 0x307;
        } else {
            out[len++] = char_lower(text->chars[i]);
        }
    }
    code_points_replace(text, out, len);
    return 0;
}

/* Python's "".join(s.split()): removes every whitespace character. */
static void remove_space(CodePoints *text) {
    size_t kept = 0;
    for (size_t i = 0; i < text->len; i++)
        if (!is_python_space(text->chars[i])) text->chars[kept++] = text->chars[i];
    text->len = kept;
}

/* Python's " ".join(s.split()) encoded back to UTF-8: words separated by single spaces, no
 * space at either end. On success *out is a new NUL-terminated string. */
static int join_words_utf8(const CodePoints *text, char **out, Error *err) {
    /* At most 4 bytes per code point, plus the terminator. */
    char *joined = checked_calloc(text->len + 1, 4, "tokenized text", err);
    if (!joined) return -1;
    size_t used = 0;
    bool in_word = false;
    for (size_t i = 0; i < text->len; i++) {
        uint32_t c = text->chars[i];
        if (is_python_space(c)) {
            in_word = false;
            continue;
        }
        if (!in_word && used > 0) joined[used++] = ' ';
        in_word = true;
        used += utf8_encode(c, joined + used);
    }
    joined[used] = '\0';
    *out = joined;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The 13a tokenizer (sacrebleu/tokenizers/tokenizer_13a.py and tokenizer_re.py)             */
/* ------------------------------------------------------------------------------------------ */

/* Does the ASCII string pattern occur in text at position at? */
static bool occurs_at(const CodePoints *text, size_t at, const char *pattern, size_t pattern_len) {
    if (text->len - at < pattern_len) return false;
    for (size_t k = 0; k < pattern_len; k++)
        if (text->chars[at + k] != (unsigned char)pattern[k]) return false;
    return true;
}

/* Python's str.replace(pattern, replacement) for ASCII strings: every non-overlapping
 * occurrence, scanning left to right, in one pass (so a replacement that forms a new
 * occurrence is left alone: "&amp;quot;" becomes "&quot;", not '"'). Every replacement
 * 13a makes is no longer than its pattern, which lets the rewrite happen in place. */
static void replace_all(CodePoints *text, const char *pattern, const char *replacement) {
    size_t pattern_len = strlen(pattern), replacement_len = strlen(replacement);
    assert(pattern_len > 0 && replacement_len <= pattern_len);
    size_t write = 0;
    for (size_t read = 0; read < text->len;) {
        if (occurs_at(text, read, pattern, pattern_len)) {
            for (size_t k = 0; k < replacement_len; k++)
                text->chars[write++] = (unsigned char)replacement[k];
            read += pattern_len;
        } else {
            text->chars[write++] = text->chars[read++];
        }
    }
    text->len = write;
}

/* f' {line} ': the padding gives the pair rules below a neighbour at both ends, which is why
 * a leading ".5" tokenizes as ". 5". */
static int surround_with_spaces(CodePoints *text, Error *err) {
    uint32_t *padded = checked_calloc(text->len + 2, sizeof *padded, "tokenizer buffer", err);
    if (!padded) return -1;
    padded[0] = ' ';
    if (text->len > 0) memcpy(padded + 1, text->chars, text->len * sizeof *padded);
    padded[text->len + 1] = ' ';
    code_points_replace(text, padded, text->len + 2);
    return 0;
}

/* The first regex's class [\{-\~\[-\` -\&\(-\+\:-\@\/]: ranges {-~, [-`, space-&, (-+, :-@
 * and '/', i.e. every printable ASCII symbol except the apostrophe, comma, hyphen and period
 * (the later rules decide about those) and never a letter, digit or non-ASCII character. */
static bool is_13a_symbol(uint32_t c) {
    return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
           (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

/* A regex (X) -> " \1 ": spaces around every character of class X. */
static int pad_each(CodePoints *text, bool (*is_padded)(uint32_t c), Error *err) {
    uint32_t *out = checked_calloc(text->len, 3 * sizeof *out, "tokenizer buffer", err);
    if (!out) return -1;
    size_t len = 0;
    for (size_t i = 0; i < text->len; i++) {
        uint32_t c = text->chars[i];
        if (is_padded(c)) {
            out[len++] = ' ';
            out[len++] = c;
            out[len++] = ' ';
        } else {
            out[len++] = c;
        }
    }
    code_points_replace(text, out, len);
    return 0;
}

/* [0-9] in a Python str regex is the ASCII digits only; [^0-9] is everything else, newlines
 * and non-ASCII letters included. */
static bool is_digit(uint32_t c) {
    return c >= '0' && c <= '9';
}
static bool is_not_digit(uint32_t c) {
    return !is_digit(c);
}
static bool is_period_or_comma(uint32_t c) {
    return c == '.' || c == ',';
}
static bool is_hyphen(uint32_t c) {
    return c == '-';
}

/* One of 13a's rules 2-4: a two-character regex (X)(Y) whose replacement inserts spaces,
 * either "\1 \2 " or, with space_first, " \1 \2". */
typedef struct {
    bool (*first)(uint32_t c);
    bool (*second)(uint32_t c);
    bool space_first;
} PairRule;

/* Rule 2: ([^0-9])([\.,]) -> "\1 \2 ": split a period or comma off a preceding non-digit. */
static const PairRule rule_split_after_non_digit = {is_not_digit, is_period_or_comma, false};
/* Rule 3: ([\.,])([^0-9]) -> " \1 \2": split a period or comma off a following non-digit. */
static const PairRule rule_split_before_non_digit = {is_period_or_comma, is_not_digit, true};
/* Rule 4: ([0-9])(-) -> "\1 \2 ": split a hyphen off a preceding digit. */
static const PairRule rule_split_hyphen_after_digit = {is_digit, is_hyphen, false};

/* Applies a rule as Python's re.sub does: scanning left to right, and after a match resuming
 * behind both matched characters, so matches never overlap. In "x..." rule 2 matches "x."
 * and then ".." afresh; in "a.,b" it matches "a." and the consumed '.' cannot pair with ','
 * again, so the ',' is left for rule 3. */
static int apply_pair_rule(CodePoints *text, const PairRule *rule, Error *err) {
    /* A match turns 2 characters into 4, anything else is copied: at most twice the length. */
    uint32_t *out = checked_calloc(text->len, 2 * sizeof *out, "tokenizer buffer", err);
    if (!out) return -1;
    size_t len = 0;
    for (size_t i = 0; i < text->len;) {
        uint32_t c = text->chars[i];
        if (i + 1 < text->len && rule->first(c) && rule->second(text->chars[i + 1])) {
            if (rule->space_first) out[len++] = ' ';
            out[len++] = c;
            out[len++] = ' ';
            out[len++] = text->chars[i + 1];
            if (!rule->space_first) out[len++] = ' ';
            i += 2;
        } else {
            out[len++] = c;
            i++;
        }
    }
    code_points_replace(text, out, len);
    return 0;
}

/* TokenizerRegexp.__call__, the part 13a and zh share: four regexes in order (rule 1 pads
 * the symbols of is_13a_symbol), then "one space only between words", no leading or trailing
 * space. */
static int apply_regexp_tokenizer(CodePoints *line, char **out, Error *err) {
    if (pad_each(line, is_13a_symbol, err)) return -1;
    if (apply_pair_rule(line, &rule_split_after_non_digit, err)) return -1;
    if (apply_pair_rule(line, &rule_split_before_non_digit, err)) return -1;
    if (apply_pair_rule(line, &rule_split_hyphen_after_digit, err)) return -1;
    return join_words_utf8(line, out, err);
}

/* Tokenizer13a.__call__ followed by TokenizerRegexp.__call__, on decoded text (which it
 * rewrites; the caller still frees it). */
static int tokenize_13a_code_points(CodePoints *line, char **out, Error *err) {
    /* The language-independent part, in sacreBLEU's order. */
    replace_all(line, "<skipped>", "");
    replace_all(line, "-\n", ""); /* a hyphenated word broken across lines is joined */
    replace_all(line, "\n", " ");
    replace_all(line, "&quot;", "\"");
    replace_all(line, "&amp;", "&");
    replace_all(line, "&lt;", "<");
    replace_all(line, "&gt;", ">");
    if (surround_with_spaces(line, err)) return -1;
    return apply_regexp_tokenizer(line, out, err);
}

/* ------------------------------------------------------------------------------------------ */
/* The zh tokenizer (sacrebleu/tokenizers/tokenizer_zh.py)                                   */
/* ------------------------------------------------------------------------------------------ */

/* TokenizerZh._is_chinese_char: `start <= uchar <= end` over _UCODE_RANGES, in its order.
 * Python compares the one-character uchar with each end as strings, and two entries were
 * written with five hex digits after \u, which Python reads as four and a character:
 * ('\u20000', '\u2a6d6') is ("\u2000" "0", "\u2a6d" "6"), which holds U+2001 to U+2A6D
 * (general punctuation, currency, arrows, mathematical operators...: ’ “ ” — … € ≥ are
 * words of their own), and ('\u2f800', '\u2fa1d') holds U+2F81 to U+2FA1. So the
 * supplementary ideographs (U+20000 and above) are not split, as in sacreBLEU. */
static bool is_zh_char(uint32_t c) {
    static const uint32_t ranges[][2] = {
        {0x3400, 0x4DB5}, {0x4E00, 0x9FA5}, {0x9FA6, 0x9FBB}, {0xF900, 0xFA2D}, {0xFA30, 0xFA6A},
        {0xFA70, 0xFAD9}, {0x2001, 0x2A6D}, {0x2F81, 0x2FA1}, {0xFF00, 0xFFEF}, {0x2E80, 0x2EFF},
        {0x3000, 0x303F}, {0x31C0, 0x31EF}, {0x2F00, 0x2FDF}, {0x2FF0, 0x2FFF}, {0x3100, 0x312F},
        {0x31A0, 0x31BF}, {0xFE10, 0xFE1F}, {0xFE30, 0xFE4F}, {0x2600, 0x26FF}, {0x2700, 0x27BF},
        {0x3200, 0x32FF}, {0x3300, 0x33FF}};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if (c >= ranges[i][0] && c <= ranges[i][1]) return true;
    return false;
}

/* TokenizerZh.__call__: line.strip(), " c " for each Chinese character, then
 * TokenizerRegexp, without 13a's entity and line-break steps and without its padding (so a
 * leading ".5" stays one word here). */
static int tokenize_zh_code_points(CodePoints *line, char **out, Error *err) {
    strip_space(line);
    if (pad_each(line, is_zh_char, err)) return -1;
    return apply_regexp_tokenizer(line, out, err);
}

/* ------------------------------------------------------------------------------------------ */
/* The intl tokenizer (sacrebleu/tokenizers/tokenizer_intl.py)                               */
/* ------------------------------------------------------------------------------------------ */

static bool is_punctuation(uint32_t c) {
    return char_class(c) == CHAR_PUNCTUATION;
}
static bool is_not_number(uint32_t c) {
    return char_class(c) != CHAR_NUMBER;
}
static bool is_symbol(uint32_t c) {
    return char_class(c) == CHAR_SYMBOL;
}

/* (\P{N})(\p{P}) -> "\1 \2 ": punctuation preceded by a non-number. */
static const PairRule rule_punctuation_after_non_number = {is_not_number, is_punctuation, false};
/* (\p{P})(\P{N}) -> " \1 \2": punctuation followed by a non-number. */
static const PairRule rule_punctuation_before_non_number = {is_punctuation, is_not_number, true};

/* TokenizerV14International.__call__: the two punctuation rules, spaces around symbols, then
 * ' '.join(line.split()). No padding: a year and its full stop ending the line stay one word
 * ("2024." is a word), as mteval-v14 and sacreBLEU have it. */
static int tokenize_intl_code_points(CodePoints *line, char **out, Error *err) {
    if (apply_pair_rule(line, &rule_punctuation_after_non_number, err)) return -1;
    if (apply_pair_rule(line, &rule_punctuation_before_non_number, err)) return -1;
    if (pad_each(line, is_symbol, err)) return -1;
    return join_words_utf8(line, out, err);
}

/* ------------------------------------------------------------------------------------------ */
/* Choosing a tokenizer                                                                       */
/* ------------------------------------------------------------------------------------------ */

static const char *const TOKENIZE_NAMES[] = {[BLEU_TOKENIZE_13A] = "13a",
                                             [BLEU_TOKENIZE_ZH] = "zh",
                                             [BLEU_TOKENIZE_INTL] = "intl",
                                             [BLEU_TOKENIZE_NONE] = "none"};
#define TOKENIZE_COUNT (sizeof TOKENIZE_NAMES / sizeof TOKENIZE_NAMES[0])

int bleu_tokenize_parse(const char *name, BleuTokenize *out, Error *err) {
    for (size_t i = 0; name && i < TOKENIZE_COUNT; i++) {
        if (strcmp(name, TOKENIZE_NAMES[i]) == 0) {
            *out = (BleuTokenize)i;
            return 0;
        }
    }
    char quoted[96];
    return error_set(err, "unknown BLEU tokenizer '%s' (13a, zh, intl or none)",
                     text_for_message(quoted, sizeof quoted, name ? name : "", 40));
}

const char *bleu_tokenize_name(BleuTokenize tokenize) {
    return (size_t)tokenize < TOKENIZE_COUNT ? TOKENIZE_NAMES[tokenize] : "?";
}

int bleu_signature(const ScoreOptions *options, char *buf, size_t size) {
    return snprintf(buf, size, "nrefs:1|case:%s|eff:no|tok:%s|smooth:exp",
                    options->lowercase ? "lc" : "mixed", bleu_tokenize_name(options->tokenize));
}

int chrf_signature(const ScoreOptions *options, char *buf, size_t size) {
    return snprintf(buf, size, "nrefs:1|case:%s|eff:yes|nc:%d|nw:0|space:no",
                    options->lowercase ? "lc" : "mixed", CHRF_CHAR_ORDER);
}

/* The chosen tokenizer on decoded text (which it rewrites; the caller still frees it). */
static int tokenize_code_points(CodePoints *line, BleuTokenize tokenize, char **out, Error *err) {
    switch (tokenize) {
    case BLEU_TOKENIZE_13A:
        return tokenize_13a_code_points(line, out, err);
    case BLEU_TOKENIZE_ZH:
        return tokenize_zh_code_points(line, out, err);
    case BLEU_TOKENIZE_INTL:
        return tokenize_intl_code_points(line, out, err);
    case BLEU_TOKENIZE_NONE:
        return join_words_utf8(line, out, err);
    }
    return error_set(err, "bleu: unknown tokenizer %d", (int)tokenize);
}

int bleu_tokenize(const char *text, BleuTokenize tokenize, char **out, Error *err) {
    if (!text) return error_set(err, "bleu_tokenize: text is NULL");
    CodePoints line;
    if (decode_utf8(text, &line, err)) return -1;
    int status = tokenize_code_points(&line, tokenize, out, err);
    code_points_free(&line);
    return status;
}

/* ------------------------------------------------------------------------------------------ */
/* N-gram matching                                                                            */
/* ------------------------------------------------------------------------------------------ */

/* An n-gram: `order` consecutive symbols (word numbers or code points) starting at start. */
typedef struct {
    const uint32_t *start;
    size_t order;
} Ngram;

/* Lexicographic order on two n-grams of the same order; any total order works for matching. */
static int compare_ngrams(const void *a, const void *b) {
    const Ngram *x = a, *y = b;
    for (size_t k = 0; k < x->order; k++)
        if (x->start[k] != y->start[k]) return x->start[k] < y->start[k] ? -1 : 1;
    return 0;
}

/* All n-grams of one order in seq, sorted so equal n-grams sit next to each other. */
static Ngram *sorted_ngrams(const uint32_t *seq, size_t len, size_t order, size_t *count,
                            Error *err) {
    *count = len >= order ? len - order + 1 : 0;
    Ngram *grams = checked_calloc(*count, sizeof *grams, "n-grams", err);
    if (!grams) return NULL;
    for (size_t i = 0; i < *count; i++) grams[i] = (Ngram){seq + i, order};
    qsort(grams, *count, sizeof *grams, compare_ngrams);
    return grams;
}

/* How many n-grams from grams[from] on equal grams[from]. */
static size_t run_length(const Ngram *grams, size_t count, size_t from) {
    size_t end = from + 1;
    while (end < count && compare_ngrams(&grams[from], &grams[end]) == 0) end++;
    return end - from;
}

typedef struct {
    uint64_t hyp;   /* n-grams in the hypothesis */
    uint64_t ref;   /* n-grams in the reference */
    uint64_t match; /* clipped matches */
} NgramCounts;

/* Counts the n-grams of one order on both sides and the clipped matches: each distinct
 * n-gram matches min(its count in hyp, its count in ref) times, as sacreBLEU's
 * min(hyp_count, ref_ngrams[ngram]) over a Counter. */
static int count_ngram_matches(const uint32_t *hyp, size_t hyp_len, const uint32_t *ref,
                               size_t ref_len, size_t order, NgramCounts *counts, Error *err) {
    size_t hyp_count, ref_count;
    Ngram *hyp_grams = sorted_ngrams(hyp, hyp_len, order, &hyp_count, err);
    if (!hyp_grams) return -1;
    Ngram *ref_grams = sorted_ngrams(ref, ref_len, order, &ref_count, err);
    if (!ref_grams) {
        free(hyp_grams);
        return -1;
    }
    uint64_t match = 0;
    size_t i = 0, j = 0;
    while (i < hyp_count && j < ref_count) {
        int comparison = compare_ngrams(&hyp_grams[i], &ref_grams[j]);
        if (comparison < 0) {
            i++;
        } else if (comparison > 0) {
            j++;
        } else {
            size_t in_hyp = run_length(hyp_grams, hyp_count, i);
            size_t in_ref = run_length(ref_grams, ref_count, j);
            match += in_hyp < in_ref ? in_hyp : in_ref;
            i += in_hyp;
            j += in_ref;
        }
    }
    free(hyp_grams);
    free(ref_grams);
    *counts = (NgramCounts){hyp_count, ref_count, match};
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* BLEU (sacrebleu/metrics/bleu.py)                                                           */
/* ------------------------------------------------------------------------------------------ */

/* A tokenized segment: the 13a output with its single spaces turned into terminators. */
typedef struct {
    char *text;
    char **words;
    size_t count;
} WordList;

static void word_list_free(WordList *list) {
    free(list->text);
    free(list->words);
    *list = (WordList){0};
}

/* BLEU._preprocess_segment: sent.lower() when asked, tokenizer(sent.rstrip()), then
 * line.split() into words. rstrip comes first, so a trailing "-\n" is not joined away. */
static int bleu_words(const char *segment, const ScoreOptions *options, WordList *list,
                      Error *err) {
    CodePoints line;
    if (decode_utf8(segment, &line, err)) return -1;
    char *text = NULL;
    int status = options->lowercase ? lower_case(&line, err) : 0;
    if (status == 0) {
        strip_trailing_space(&line);
        status = tokenize_code_points(&line, options->tokenize, &text, err);
    }
    code_points_free(&line);
    if (status) return -1;

    /* The tokenizer's output has single spaces between words and none at the ends. */
    size_t count = text[0] == '\0' ? 0 : 1;
    for (const char *p = text; *p; p++) count += *p == ' ';
    char **words = checked_calloc(count, sizeof *words, "word list", err);
    if (!words) {
        free(text);
        return -1;
    }
    char *word = text;
    for (size_t w = 0; w < count; w++) {
        char *space = strchr(word, ' ');
        if (space) *space = '\0';
        words[w] = word;
        word = space ? space + 1 : NULL;
    }
    *list = (WordList){text, words, count};
    return 0;
}

typedef struct {
    const char *word;
    size_t position;
} WordSlot;

static int compare_word_slots(const void *a, const void *b) {
    return strcmp(((const WordSlot *)a)->word, ((const WordSlot *)b)->word);
}

/* Numbers the words of hyp followed by ref so that equal words (byte-equal, as Python's
 * tuple-of-str n-gram keys compare) get equal numbers: ids[i] for position i of the
 * concatenation. Word n-grams can then be matched like any other integer sequence. */
static int number_words(const WordList *hyp, const WordList *ref, uint32_t *ids, Error *err) {
    size_t count = hyp->count + ref->count;
    if (count > UINT32_MAX) return error_set(err, "bleu: too many words (%zu)", count);
    WordSlot *slots = checked_calloc(count, sizeof *slots, "word slots", err);
    if (!slots) return -1;
    for (size_t i = 0; i < hyp->count; i++) slots[i] = (WordSlot){hyp->words[i], i};
    for (size_t i = 0; i < ref->count; i++)
        slots[hyp->count + i] = (WordSlot){ref->words[i], hyp->count + i};
    qsort(slots, count, sizeof *slots, compare_word_slots);
    uint32_t next_id = 0;
    for (size_t i = 0; i < count; i++) {
        if (i > 0 && strcmp(slots[i - 1].word, slots[i].word) != 0) next_id++;
        ids[slots[i].position] = next_id;
    }
    free(slots);
    return 0;
}

/* BLEU._compute_segment_statistics for one reference: lengths, and per order the
 * hypothesis n-gram total and the clipped matches. */
static int bleu_pair_stats(const WordList *hyp, const WordList *ref, BleuStats *pair, Error *err) {
    uint32_t *ids = checked_calloc(hyp->count + ref->count, sizeof *ids, "word ids", err);
    if (!ids) return -1;
    int status = number_words(hyp, ref, ids, err);
    *pair = (BleuStats){.sentences = 1, .hyp_len = hyp->count, .ref_len = ref->count};
    for (size_t n = 1; n <= BLEU_MAX_ORDER && status == 0; n++) {
        NgramCounts counts;
        status =
            count_ngram_matches(ids, hyp->count, ids + hyp->count, ref->count, n, &counts, err);
        if (status) break;
        pair->total[n - 1] = counts.hyp;
        pair->correct[n - 1] = counts.match;
    }
    free(ids);
    return status;
}

void bleu_stats_init(BleuStats *stats, const ScoreOptions *options) {
    *stats = (BleuStats){.options = options ? *options : (ScoreOptions){0}};
}

int bleu_add(BleuStats *stats, const char *hypothesis, const char *reference, Error *err) {
    if (!hypothesis || !reference) return error_set(err, "bleu: hypothesis or reference is NULL");
    /* Metric._cache_references raises on an empty reference; a whitespace-only one passes. */
    if (reference[0] == '\0') return error_set(err, "bleu: empty reference sentence");
    WordList hyp = {0}, ref = {0};
    BleuStats pair;
    int status = -1;
    if (bleu_words(hypothesis, &stats->options, &hyp, err))
        error_prefix(err, "bleu hypothesis: ");
    else if (bleu_words(reference, &stats->options, &ref, err))
        error_prefix(err, "bleu reference: ");
    else
        status = bleu_pair_stats(&hyp, &ref, &pair, err);
    word_list_free(&hyp);
    word_list_free(&ref);
    /* Only a fully counted pair enters the corpus, so a failure leaves stats as they were. */
    if (status == 0) bleu_merge(stats, &pair);
    return status;
}

void bleu_merge(BleuStats *total, const BleuStats *part) {
    total->sentences += part->sentences;
    total->hyp_len += part->hyp_len;
    total->ref_len += part->ref_len;
    for (size_t n = 0; n < BLEU_MAX_ORDER; n++) {
        total->correct[n] += part->correct[n];
        total->total[n] += part->total[n];
    }
}

/* sacrebleu.utils.my_log: a log that maps 0 to -9999999999 instead of failing, so a zero
 * precision drives the geometric mean to exactly 0. */
static double floored_log(double x) {
    return x == 0.0 ? -9999999999.0 : log(x);
}

/* BLEU.compute_bleu with smooth_method='exp', effective_order=False, max_ngram_order=4. */
BleuResult bleu_score(const BleuStats *stats) {
    BleuResult result = {0};
    result.hyp_len = stats->hyp_len;
    result.ref_len = stats->ref_len;
    memcpy(result.correct, stats->correct, sizeof result.correct);
    memcpy(result.total, stats->total, sizeof result.total);
    double hyp_len = (double)stats->hyp_len, ref_len = (double)stats->ref_len;
    result.length_ratio = stats->ref_len ? hyp_len / ref_len : 0.0;

    /* Brevity penalty on corpus lengths: exp(1 - r/c) when the output is shorter. */
    if (stats->hyp_len < stats->ref_len)
        result.brevity_penalty = stats->hyp_len > 0 ? exp(1.0 - ref_len / hyp_len) : 0.0;
    else
        result.brevity_penalty = 1.0;

    /* "Early stop if there are no matches (#141)": score 0 and all precisions reported 0. */
    bool any_match = false;
    for (size_t n = 0; n < BLEU_MAX_ORDER; n++) any_match |= stats->correct[n] > 0;
    if (!any_match) return result;

    /* 'exp' smoothing (NIST mteval-v13a): the k-th order with no match gets precision
     * 1 / (2^k * total) instead of 0. An order with no n-grams at all stops the loop and
     * leaves that and all higher precisions 0: with effective_order off they still count in
     * the mean below, so a corpus without any 4-gram scores 0. */
    double smoothing = 1.0;
    for (size_t n = 0; n < BLEU_MAX_ORDER; n++) {
        if (stats->total[n] == 0) break;
        double total = (double)stats->total[n];
        if (stats->correct[n] == 0) {
            smoothing *= 2.0;
            result.precisions[n] = 100.0 / (smoothing * total);
        } else {
            result.precisions[n] = 100.0 * (double)stats->correct[n] / total;
        }
    }

    /* Geometric mean of the percentages, summed in order like Python's sum(). */
    double log_sum = 0.0;
    for (size_t n = 0; n < BLEU_MAX_ORDER; n++) log_sum += floored_log(result.precisions[n]);
    result.score = result.brevity_penalty * exp(log_sum / BLEU_MAX_ORDER);
    return result;
}

/* BLEUScore's verbose line; printf's %.Nf rounds exactly like Python's f'{x:.Nf}'. The
 * longest line (20-digit lengths and ratio) is about 150 bytes, within METRICS_LINE_MAX. */
int bleu_format(const BleuResult *result, char *buf, size_t size) {
    return snprintf(buf, size,
                    "BLEU = %.2f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %" PRIu64
                    " ref_len = %" PRIu64 ")",
                    result->score, result->precisions[0], result->precisions[1],
                    result->precisions[2], result->precisions[3], result->brevity_penalty,
                    result->length_ratio, result->hyp_len, result->ref_len);
}

/* ------------------------------------------------------------------------------------------ */
/* chrF (sacrebleu/metrics/chrf.py)                                                           */
/* ------------------------------------------------------------------------------------------ */

/* CHRF._preprocess_segment (sent.lower() when asked), then extract_all_char_ngrams with
 * whitespace=False: whitespace is removed before counting, so character n-grams span word
 * boundaries. */
static int chrf_characters(const char *segment, const ScoreOptions *options, CodePoints *chars,
                           Error *err) {
    if (decode_utf8(segment, chars, err)) return -1;
    if (options->lowercase && lower_case(chars, err)) {
        code_points_free(chars);
        return -1;
    }
    remove_space(chars);
    return 0;
}

/* CHRF._get_match_statistics per order for one pair (no lowercasing by default). */
static int chrf_pair_stats(const CodePoints *hyp, const CodePoints *ref, ChrfStats *pair,
                           Error *err) {
    *pair = (ChrfStats){.sentences = 1};
    for (size_t n = 1; n <= CHRF_CHAR_ORDER; n++) {
        NgramCounts counts;
        if (count_ngram_matches(hyp->chars, hyp->len, ref->chars, ref->len, n, &counts, err))
            return -1;
        /* "Don't count hits if no reference exists for that n-gram": a reference shorter
         * than n characters zeroes this sentence's hypothesis n-gram count too. */
        pair->hyp[n - 1] = counts.ref > 0 ? counts.hyp : 0;
        pair->ref[n - 1] = counts.ref;
        pair->match[n - 1] = counts.match;
    }
    return 0;
}

void chrf_stats_init(ChrfStats *stats, const ScoreOptions *options) {
    *stats = (ChrfStats){.options = options ? *options : (ScoreOptions){0}};
}

int chrf_add(ChrfStats *stats, const char *hypothesis, const char *reference, Error *err) {
    if (!hypothesis || !reference) return error_set(err, "chrf: hypothesis or reference is NULL");
    /* Metric._cache_references raises on an empty reference, for chrF as for BLEU. */
    if (reference[0] == '\0') return error_set(err, "chrf: empty reference sentence");
    CodePoints hyp = {0}, ref = {0};
    ChrfStats pair;
    int status = -1;
    if (chrf_characters(hypothesis, &stats->options, &hyp, err))
        error_prefix(err, "chrf hypothesis: ");
    else if (chrf_characters(reference, &stats->options, &ref, err))
        error_prefix(err, "chrf reference: ");
    else
        status = chrf_pair_stats(&hyp, &ref, &pair, err);
    code_points_free(&hyp);
    code_points_free(&ref);
    if (status == 0) chrf_merge(stats, &pair);
    return status;
}

void chrf_merge(ChrfStats *total, const ChrfStats *part) {
    total->sentences += part->sentences;
    for (size_t n = 0; n < CHRF_CHAR_ORDER; n++) {
        total->hyp[n] += part->hyp[n];
        total->ref[n] += part->ref[n];
        total->match[n] += part->match[n];
    }
}

/* CHRF._compute_f_score with eps_smoothing=False ("sacreBLEU <2.0.0 style effective order
 * smoothing"): precision and recall are averaged over the orders where both sides have
 * n-grams, then combined into one F-beta; no orders, or no matches, score 0. */
ChrfResult chrf_score(const ChrfStats *stats) {
    ChrfResult result = {0};
    const double factor = (double)CHRF_BETA * CHRF_BETA;
    double precision_sum = 0.0, recall_sum = 0.0;
    for (size_t n = 0; n < CHRF_CHAR_ORDER; n++) {
        if (stats->hyp[n] > 0 && stats->ref[n] > 0) {
            precision_sum += (double)stats->match[n] / (double)stats->hyp[n];
            recall_sum += (double)stats->match[n] / (double)stats->ref[n];
            result.effective_order++;
        }
    }
    if (result.effective_order > 0) {
        result.precision = precision_sum / result.effective_order;
        result.recall = recall_sum / result.effective_order;
    }
    if (result.precision + result.recall != 0.0) {
        double f = (1.0 + factor) * result.precision * result.recall;
        f /= factor * result.precision + result.recall;
        result.score = 100.0 * f;
    }
    return result;
}

/* CHRFScore's line: name chrF<beta>, two decimals (sacreBLEU 2.x Score.format). */
int chrf_format(const ChrfResult *result, char *buf, size_t size) {
    return snprintf(buf, size, "chrF%d = %.2f", CHRF_BETA, result->score);
}

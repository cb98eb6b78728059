/*
 * test_text.c: tests of the text pipeline in data/: UTF-8 checking, tokenize/detokenize,
 * the parallel corpus reader and the vocabulary (build, lookup, serialisation).
 *
 * Corpus files are written to a fresh mkdtemp() directory per test and removed afterwards;
 * serialised vocabularies go through tmpfile(). Nothing here depends on the working directory.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/corpus.h"
#include "data/tokenizer.h"
#include "data/vocab.h"
#include "tests/suites.h"

/* A string literal and its length, embedded NUL bytes included. */
#define BYTES(literal) literal, sizeof(literal) - 1

/* ---- helpers ---- */

/* Tokenizes text and checks the tokens against the NULL-terminated list expected. */
static void expect_tokens(const char *text, bool lowercase, const char *const *expected) {
    TokenList list;
    Error err = {{0}};
    ck_assert_msg(tokenize(text, lowercase, &list, &err) == 0, "tokenize(\"%s\"): %s", text,
                  err.msg);
    size_t n = 0;
    while (expected[n]) n++;
    for (size_t i = 0; i < n && i < list.count; i++)
        ck_assert_msg(strcmp(list.tokens[i], expected[i]) == 0,
                      "tokenize(\"%s\"): token %zu is \"%s\", expected \"%s\"", text, i,
                      list.tokens[i], expected[i]);
    ck_assert_msg(list.count == n, "tokenize(\"%s\"): %zu tokens, expected %zu", text, list.count,
                  n);
    token_list_free(&list);
}

/* detokenize(tokenize(text)), as a new string. */
static char *round_trip(const char *text, bool lowercase) {
    TokenList list;
    Error err = {{0}};
    ck_assert_msg(tokenize(text, lowercase, &list, &err) == 0, "%s", err.msg);
    char *joined = detokenize((const char *const *)list.tokens, list.count, &err);
    ck_assert_ptr_nonnull(joined);
    token_list_free(&list);
    return joined;
}

static void expect_detokenized(const char *const *tokens, const char *expected) {
    size_t n = 0;
    while (tokens[n]) n++;
    Error err = {{0}};
    char *joined = detokenize(tokens, n, &err);
    ck_assert_ptr_nonnull(joined);
    ck_assert_str_eq(joined, expected);
    free(joined);
}

/* ---- UTF-8 ---- */

START_TEST(test_utf8_accepts_valid_text) {
    const char *valid[] = {"",
                           "plain ASCII",
                           "é à ç",
                           "我爱猫",
                           "\xF0\x9F\x98\x80",
                           "\xF4\x8F\xBF\xBF" /* U+10FFFF, the last code point */,
                           "\xEF\xBF\xBF" /* U+FFFF */};
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        size_t offset = 12345;
        ck_assert_ptr_null(utf8_find_error(valid[i], strlen(valid[i]), &offset));
        ck_assert_uint_eq(offset, 12345);
    }
    Error err = {{0}};
    ck_assert_int_eq(utf8_validate(BYTES("a\0b"), &err), 0); /* NUL is valid UTF-8 */
}
END_TEST

typedef struct {
    const char *bytes;
    size_t len;
    size_t offset;       /* of the first byte of the bad sequence */
    const char *problem; /* a substring of the description */
} BadUtf8;

static const BadUtf8 bad_utf8[] = {
    {BYTES("ab\xC0\x80"), 2, "overlong"},                /* NUL in two bytes */
    {BYTES("\xC1\xBF"), 0, "overlong"},                  /* U+007F in two bytes */
    {BYTES("\xE0\x80\xAF"), 0, "overlong"},              /* '/' in three bytes */
    {BYTES("x\xF0\x82\x82\xAC"), 1, "overlong"},         /* U+20AC in four bytes */
    {BYTES("abc\xED\xA0\x80"), 3, "surrogate"},          /* U+D800 */
    {BYTES("\xED\xBF\xBF z"), 0, "surrogate"},           /* U+DFFF */
    {BYTES("ok \xF4\x90\x80\x80"), 3, "above U+10FFFF"}, /* U+110000 */
    {BYTES("\xF7\xBF\xBF\xBF"), 0, "above U+10FFFF"},
    {BYTES("h\xC3\xA9\xE2\x82"), 3, "truncated"}, /* cut off at the end */
    {BYTES("\xE2\x82"
           "A"),
     0, "truncated"}, /* continuation missing */
    {BYTES("caf\xC3"), 3, "truncated"},
    {BYTES("a\x80"), 1, "continuation"},
    {BYTES("\xC3\xA9\xBF"), 2, "continuation"},
    {BYTES("xy\xFF"), 2, "0xF8..0xFF"},
    {BYTES("\xF8\x88\x80\x80\x80"), 0, "0xF8..0xFF"}, /* old 5-byte form */
};

START_TEST(test_utf8_rejects_with_offset) {
    const BadUtf8 *bad = &bad_utf8[_i];
    size_t offset = 99;
    const char *problem = utf8_find_error(bad->bytes, bad->len, &offset);
    ck_assert_ptr_nonnull(problem);
    ck_assert_msg(strstr(problem, bad->problem), "case %d: \"%s\" lacks \"%s\"", _i, problem,
                  bad->problem);
    ck_assert_uint_eq(offset, bad->offset);

    char expected[64];
    snprintf(expected, sizeof expected, "at byte %zu:", bad->offset);
    Error err = {{0}};
    ck_assert_int_eq(utf8_validate(bad->bytes, bad->len, &err), -1);
    ck_assert_msg(strstr(err.msg, expected), "case %d: \"%s\" lacks \"%s\"", _i, err.msg, expected);
}
END_TEST

START_TEST(test_tokenize_rejects_invalid_utf8) {
    TokenList list = {0};
    Error err = {{0}};
    ck_assert_int_eq(tokenize("Bonjour l\xC3\xA0 \xED\xA0\x80!", false, &list, &err), -1);
    ck_assert_msg(strstr(err.msg, "invalid UTF-8 at byte 12"), "%s", err.msg);
    ck_assert_uint_eq(list.count, 0);
    ck_assert_ptr_null(list.tokens);
}
END_TEST

/* ---- tokenize ---- */

START_TEST(test_tokenize_punctuation) {
    expect_tokens("Hello, world!", false, (const char *[]){"Hello", ",", "world", "!", NULL});
    expect_tokens(
        "Really?! (Yes; no: maybe.)", false,
        (const char *[]){"Really", "?", "!", "(", "Yes", ";", "no", ":", "maybe", ".", ")", NULL});
    expect_tokens("« Non », dit-il… [sic] {x}", false,
                  (const char *[]){"«", "Non", "»", ",", "dit-il", "…", "[", "sic", "]", "{", "x",
                                   "}", NULL});
    expect_tokens("He said \"hi\".", false,
                  (const char *[]){"He", "said", "\"", "hi", "\"", ".", NULL});
    expect_tokens("Wait... what?", false, (const char *[]){"Wait", "...", "what", "?", NULL});
    expect_tokens("¿Qué? ¡Sí!", false, (const char *[]){"¿", "Qué", "?", "¡", "Sí", "!", NULL});
    /* a hyphen or apostrophe not inside a word is punctuation */
    expect_tokens("'quoted' - end-", false,
                  (const char *[]){"'", "quoted", "'", "-", "end", "-", NULL});
    /* symbols stay in their words */
    expect_tokens("50% and/or $5", false, (const char *[]){"50%", "and/or", "$5", NULL});
}
END_TEST

START_TEST(test_tokenize_words_keep_hyphens_and_apostrophes) {
    expect_tokens("est-ce que tu as un chat?", false,
                  (const char *[]){"est-ce", "que", "tu", "as", "un", "chat", "?", NULL});
    expect_tokens(
        "I don't think it's a well-known fact.", false,
        (const char *[]){"I", "don't", "think", "it's", "a", "well-known", "fact", ".", NULL});
    expect_tokens("aujourd'hui O'Brien", false, (const char *[]){"aujourd'hui", "O'Brien", NULL});
}
END_TEST

START_TEST(test_tokenize_french_elision) {
    expect_tokens("j'aime l'apprentissage automatique.", false,
                  (const char *[]){"j'", "aime", "l'", "apprentissage", "automatique", ".", NULL});
    expect_tokens("qu'il d'eau n'est s'il c'est m'a t'as", false,
                  (const char *[]){"qu'", "il", "d'", "eau", "n'", "est", "s'", "il", "c'", "est",
                                   "m'", "a", "t'", "as", NULL});
    expect_tokens("Jusqu'à lorsqu'on puisqu'elle", false,
                  (const char *[]){"Jusqu'", "à", "lorsqu'", "on", "puisqu'", "elle", NULL});
    /* only the first apostrophe can end an elision; the rest of the word stays whole */
    expect_tokens("Qu'est-ce qu'aujourd'hui", false,
                  (const char *[]){"Qu'", "est-ce", "qu'", "aujourd'hui", NULL});
    /* the typographic apostrophe U+2019 becomes ' */
    expect_tokens("L\xE2\x80\x99"
                  "école n\xE2\x80\x99"
                  "est pas là",
                  false, (const char *[]){"L'", "école", "n'", "est", "pas", "là", NULL});
    expect_tokens("it\xE2\x80\x99s", false, (const char *[]){"it's", NULL});
}
END_TEST

START_TEST(test_tokenize_numbers) {
    expect_tokens(
        "Pi is 3.14, not 1,000 or 9:30.", false,
        (const char *[]){"Pi", "is", "3.14", ",", "not", "1,000", "or", "9:30", ".", NULL});
    expect_tokens("-5 degrees, pages 5-7.", false,
                  (const char *[]){"-5", "degrees", ",", "pages", "5-7", ".", NULL});
    expect_tokens("(1.5)", false, (const char *[]){"(", "1.5", ")", NULL});
}
END_TEST

START_TEST(test_tokenize_cjk) {
    expect_tokens("我爱猫", false, (const char *[]){"我", "爱", "猫", NULL});
    expect_tokens("我爱猫。你呢？", false,
                  (const char *[]){"我", "爱", "猫", "。", "你", "呢", "？", NULL});
    expect_tokens("こんにちはカタカナ", false,
                  (const char *[]){"こ", "ん", "に", "ち", "は", "カ", "タ", "カ", "ナ", NULL});
    expect_tokens("한국어", false, (const char *[]){"한", "국", "어", NULL});
    expect_tokens("I love 猫s!", false, (const char *[]){"I", "love", "猫", "s", "!", NULL});
}
END_TEST

START_TEST(test_tokenize_whitespace) {
    /* tab, no-break space, narrow no-break space, ideographic space, line separator, CRLF */
    expect_tokens(" a\tb\xC2\xA0"
                  "c\xE2\x80\xAF"
                  "d\xE3\x80\x80"
                  "e\xE2\x80\xA8"
                  "f\r\n",
                  false, (const char *[]){"a", "b", "c", "d", "e", "f", NULL});
    expect_tokens("", false, (const char *[]){NULL});
    expect_tokens(" \t\n ", false, (const char *[]){NULL});
}
END_TEST

START_TEST(test_tokenize_lowercase) {
    expect_tokens("ÉCOLE À Ça Ôter ÀÉÎÕÜÇÑ Hello", true,
                  (const char *[]){"école", "à", "ça", "ôter", "àéîõüçñ", "hello", NULL});
    /* Latin Extended-A, both alternation patterns, and the odd ones out */
    expect_tokens("ŒUVRE ŁÓDŹ ĀČĘĞĪŃŠŻ Ÿ İ", true,
                  (const char *[]){"œuvre", "łódź", "āčęğīńšż", "ÿ", "i", NULL});
    /* no case: already lower, multiplication sign, sharp s, digits */
    expect_tokens("é×ß1", true, (const char *[]){"é×ß1", NULL});
    expect_tokens("ΑΘΗΝΑ МОСКВА Ёж", true, (const char *[]){"αθηνα", "москва", "ёж", NULL});
    expect_tokens("ÉCOLE", false, (const char *[]){"ÉCOLE", NULL});
    expect_tokens("J'AIME", true, (const char *[]){"j'", "aime", NULL});
}
END_TEST

START_TEST(test_tokenize_long_text) {
    /* 100000 words in one string: tokens are not bounded by any fixed buffer */
    size_t words = 100000;
    char *text = malloc(3 * words + 1);
    ck_assert_ptr_nonnull(text);
    for (size_t i = 0; i < words; i++) memcpy(text + 3 * i, i % 2 ? "ab " : "c. ", 3);
    text[3 * words] = '\0';
    TokenList list;
    Error err = {{0}};
    ck_assert_int_eq(tokenize(text, false, &list, &err), 0);
    ck_assert_uint_eq(list.count, words + words / 2);
    ck_assert_str_eq(list.tokens[list.count - 1], "ab");
    token_list_free(&list);
    ck_assert_uint_eq(list.count, 0);
    free(text);
}
END_TEST

/* ---- detokenize ---- */

static const char *const round_trip_texts[] = {
    "j'aime l'apprentissage automatique.",
    "est-ce que tu as un chat?",
    "Hello, world!",
    "我爱猫",
    "我爱猫。你呢？",
    "Qu'est-ce que c'est? C'est l'été.",
    "I don't know... Really?!",
    "He said: \"Go away!\" and left.",
    "(Tom, 3.14 and 1,000) [sic] {ok}",
    "Jusqu'à quand? -5 degrés, 50% d'humidité…",
    "«Bonjour», dit-il.",
    "It's 9:30; we're late.",
    "¿Dónde está? ¡Aquí!",
    "L'école n'est pas loin d'ici.",
    "Emoji \xF0\x9F\x98\x80, CJK-B \xF0\xA0\x9C\x8E too.", /* four-byte characters */
};

START_TEST(test_detokenize_round_trip) {
    const char *text = round_trip_texts[_i];
    char *joined = round_trip(text, false);
    ck_assert_str_eq(joined, text);
    free(joined);
}
END_TEST

START_TEST(test_detokenize_round_trip_lowercase) {
    char *joined = round_trip("J'aime l'École à Paris. Ça va?", true);
    ck_assert_str_eq(joined, "j'aime l'école à paris. ça va?");
    free(joined);
    /* U+2019 comes back as the ASCII apostrophe */
    joined = round_trip("C\xE2\x80\x99"
                        "est l\xE2\x80\x99"
                        "heure.",
                        false);
    ck_assert_str_eq(joined, "C'est l'heure.");
    free(joined);
}
END_TEST

START_TEST(test_detokenize_spacing_rules) {
    expect_detokenized((const char *[]){NULL}, "");
    expect_detokenized((const char *[]){"«", "Bonjour", "»", NULL}, "«Bonjour»");
    expect_detokenized((const char *[]){"\"", "a", "\"", "b", "\"", "c", "\"", NULL},
                       "\"a\" b \"c\"");
    expect_detokenized((const char *[]){"'", "hi", "'", "!", NULL}, "'hi'!");
    expect_detokenized((const char *[]){"qu'", "il", "a", "'", NULL}, "qu'il a '");
    expect_detokenized((const char *[]){"Tom", "'s", NULL}, "Tom 's"); /* not an elision */
    expect_detokenized((const char *[]){"我", "爱", "Paris", "猫", "。", NULL}, "我爱 Paris 猫。");
    expect_detokenized((const char *[]){"a", "-", "b", "—", "c", NULL}, "a - b — c");
    /* an invalid token is treated as a word, never read past */
    expect_detokenized((const char *[]){"x", "\xE4", "\xE4\xBD", NULL}, "x \xE4 \xE4\xBD");
}
END_TEST

Suite *tokenizer_suite(void) {
    Suite *suite = suite_create("tokenizer");
    TCase *utf8 = tcase_create("utf8");
    tcase_add_test(utf8, test_utf8_accepts_valid_text);
    tcase_add_loop_test(utf8, test_utf8_rejects_with_offset, 0,
                        (int)(sizeof bad_utf8 / sizeof bad_utf8[0]));
    tcase_add_test(utf8, test_tokenize_rejects_invalid_utf8);
    suite_add_tcase(suite, utf8);

    TCase *tokens = tcase_create("tokenize");
    tcase_add_test(tokens, test_tokenize_punctuation);
    tcase_add_test(tokens, test_tokenize_words_keep_hyphens_and_apostrophes);
    tcase_add_test(tokens, test_tokenize_french_elision);
    tcase_add_test(tokens, test_tokenize_numbers);
    tcase_add_test(tokens, test_tokenize_cjk);
    tcase_add_test(tokens, test_tokenize_whitespace);
    tcase_add_test(tokens, test_tokenize_lowercase);
    tcase_add_test(tokens, test_tokenize_long_text);
    suite_add_tcase(suite, tokens);

    TCase *joining = tcase_create("detokenize");
    tcase_add_loop_test(joining, test_detokenize_round_trip, 0,
                        (int)(sizeof round_trip_texts / sizeof round_trip_texts[0]));
    tcase_add_test(joining, test_detokenize_round_trip_lowercase);
    tcase_add_test(joining, test_detokenize_spacing_rules);
    suite_add_tcase(suite, joining);
    return suite;
}

/* ---- corpus ---- */

/* Reads text as a corpus that must fail, and checks the error holds `expected`. */
static void expect_corpus_error(const char *text, size_t len, const char *expected) {
    Corpus corpus;
    Error err = {{0}};
    ck_assert_int_eq(corpus_read_string(text, len, "in.tsv", &corpus, &err), -1);
    ck_assert_msg(strstr(err.msg, expected), "\"%s\" lacks \"%s\"", err.msg, expected);
    ck_assert_msg(!strchr(err.msg, '\n'), "error is not one line: %s", err.msg);
    ck_assert_uint_eq(corpus.count, 0);
    ck_assert_ptr_null(corpus.src);
}

/* A fresh temporary directory, and files in it, removed by fixture_cleanup(). */
typedef struct {
    char dir[64];
    char path[128];
} Fixture;

static void fixture_write(Fixture *fixture, const char *bytes, size_t len) {
    snprintf(fixture->dir, sizeof fixture->dir, "/tmp/nmt-text-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(fixture->dir));
    snprintf(fixture->path, sizeof fixture->path, "%s/pairs.tsv", fixture->dir);
    FILE *out = fopen(fixture->path, "wb");
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(fwrite(bytes, 1, len, out), len);
    ck_assert_int_eq(fclose(out), 0);
}

static void fixture_cleanup(Fixture *fixture) {
    remove(fixture->path);
    rmdir(fixture->dir);
}

START_TEST(test_corpus_reads_pairs_and_ignores_extra_columns) {
    const char text[] = "Go.\tVa !\tCC-BY 2.0 (France) Attribution: tatoeba.org #2877272\n"
                        "I'm OK.\tJe vais bien.\n"
                        "Who?\tQui ?"; /* no line end on the last line */
    Corpus corpus;
    Error err = {{0}};
    ck_assert_int_eq(corpus_read_string(text, strlen(text), "in.tsv", &corpus, &err), 0);
    ck_assert_uint_eq(corpus.count, 3);
    ck_assert_str_eq(corpus.src[0], "Go.");
    ck_assert_str_eq(corpus.tgt[0], "Va !");
    ck_assert_str_eq(corpus.src[1], "I'm OK.");
    ck_assert_str_eq(corpus.tgt[1], "Je vais bien.");
    ck_assert_str_eq(corpus.tgt[2], "Qui ?");
    ck_assert_uint_eq(corpus.line[2], 3);
    ck_assert_uint_eq(corpus.empty_lines, 0);
    corpus_free(&corpus);
    ck_assert_uint_eq(corpus.count, 0);
}
END_TEST

START_TEST(test_corpus_crlf_bom_and_empty_lines) {
    const char text[] = "\xEF\xBB\xBFHi.\tSalut.\r\n"
                        "\r\n"
                        "\n"
                        "Run!\tCours !\r\n"
                        "\n";
    Corpus corpus;
    Error err = {{0}};
    ck_assert_int_eq(corpus_read_string(text, strlen(text), "in.tsv", &corpus, &err), 0);
    ck_assert_uint_eq(corpus.count, 2);
    ck_assert_str_eq(corpus.src[0], "Hi."); /* no byte-order mark */
    ck_assert_str_eq(corpus.tgt[0], "Salut.");
    ck_assert_str_eq(corpus.tgt[1], "Cours !"); /* no carriage return */
    ck_assert_uint_eq(corpus.line[0], 1);
    ck_assert_uint_eq(corpus.line[1], 4);
    ck_assert_uint_eq(corpus.empty_lines, 3);
    corpus_free(&corpus);
}
END_TEST

START_TEST(test_corpus_line_errors) {
    expect_corpus_error(BYTES("a\tb\nno tab here\nc\td\n"), "in.tsv:2: no tab");
    expect_corpus_error(BYTES("a\tb\n\n\tb\n"), "in.tsv:3: empty source");
    expect_corpus_error(BYTES("  \tb\n"), "in.tsv:1: empty source");
    expect_corpus_error(BYTES("a\t\n"), "in.tsv:1: empty target");
    expect_corpus_error(BYTES("a\t\r\n"), "in.tsv:1: empty target");
    expect_corpus_error(BYTES("a\t\tattribution\n"), "in.tsv:1: empty target");
    expect_corpus_error(BYTES("a\tb\nab\t\xC3\x28\n"), "in.tsv:2: invalid UTF-8 at column 4");
    expect_corpus_error(BYTES("\xEF\xBB\xBFok\t\xC0\xAF\n"), "in.tsv:1: invalid UTF-8 at column 7");
    expect_corpus_error(BYTES("a\tb\nc\td\nab\0c\td\n"), "in.tsv:3: NUL byte at column 3");
}
END_TEST

START_TEST(test_corpus_without_pairs) {
    expect_corpus_error("", 0, "in.tsv: no sentence pairs");
    expect_corpus_error(BYTES("\n\r\n\n"), "only 3 empty lines");
    expect_corpus_error(BYTES("\xEF\xBB\xBF"), "no sentence pairs");
}
END_TEST

START_TEST(test_corpus_file_with_bom_and_crlf) {
    Fixture fixture;
    fixture_write(&fixture, BYTES("\xEF\xBB\xBFI see.\tJe vois.\r\n\r\nThanks.\tMerci.\r\n"));
    Corpus corpus;
    Error err = {{0}};
    int status = corpus_read_file(fixture.path, &corpus, &err);
    fixture_cleanup(&fixture);
    ck_assert_msg(status == 0, "%s", err.msg);
    ck_assert_uint_eq(corpus.count, 2);
    ck_assert_str_eq(corpus.src[0], "I see.");
    ck_assert_str_eq(corpus.tgt[1], "Merci.");
    ck_assert_uint_eq(corpus.line[1], 3);
    ck_assert_uint_eq(corpus.empty_lines, 1);
    corpus_free(&corpus);
}
END_TEST

START_TEST(test_corpus_file_error_names_file_and_line) {
    Fixture fixture;
    fixture_write(&fixture, BYTES("a\tb\r\nmissing a tab\r\n"));
    Corpus corpus;
    Error err = {{0}};
    ck_assert_int_eq(corpus_read_file(fixture.path, &corpus, &err), -1);
    char expected[160];
    snprintf(expected, sizeof expected, "%s:2: no tab", fixture.path);
    fixture_cleanup(&fixture);
    ck_assert_msg(strstr(err.msg, expected), "\"%s\" lacks \"%s\"", err.msg, expected);
}
END_TEST

START_TEST(test_corpus_one_mebibyte_line) {
    size_t src_len = (size_t)1 << 20;
    char *text = malloc(src_len + 16);
    ck_assert_ptr_nonnull(text);
    for (size_t i = 0; i < src_len; i++) text[i] = i % 8 == 7 ? ' ' : 'a' + (char)(i % 7);
    memcpy(text + src_len, "\tlong\nx\ty\n", 10);
    Fixture fixture;
    fixture_write(&fixture, text, src_len + 10);
    Corpus corpus;
    Error err = {{0}};
    int status = corpus_read_file(fixture.path, &corpus, &err);
    fixture_cleanup(&fixture);
    ck_assert_msg(status == 0, "%s", err.msg);
    ck_assert_uint_eq(corpus.count, 2);
    ck_assert_uint_eq(strlen(corpus.src[0]), src_len);
    ck_assert_int_eq(memcmp(corpus.src[0], text, src_len), 0);
    ck_assert_str_eq(corpus.tgt[0], "long");
    ck_assert_str_eq(corpus.src[1], "x");
    corpus_free(&corpus);
    free(text);
}
END_TEST

START_TEST(test_corpus_unreadable_inputs) {
    Fixture fixture;
    fixture_write(&fixture, "", 0);
    Corpus corpus;
    Error err = {{0}};
    char expected[160];

    ck_assert_int_eq(corpus_read_file(fixture.path, &corpus, &err), -1); /* empty file */
    snprintf(expected, sizeof expected, "%s: no sentence pairs", fixture.path);
    ck_assert_msg(strstr(err.msg, expected), "\"%s\" lacks \"%s\"", err.msg, expected);

    ck_assert_int_eq(corpus_read_file(fixture.dir, &corpus, &err), -1);
    snprintf(expected, sizeof expected, "%s: Is a directory", fixture.dir);
    ck_assert_msg(strstr(err.msg, expected), "\"%s\" lacks \"%s\"", err.msg, expected);

    fixture_cleanup(&fixture);
    ck_assert_int_eq(corpus_read_file(fixture.path, &corpus, &err), -1); /* now missing */
    snprintf(expected, sizeof expected, "%s: No such file or directory", fixture.path);
    ck_assert_msg(strstr(err.msg, expected), "\"%s\" lacks \"%s\"", err.msg, expected);
    ck_assert_uint_eq(corpus.count, 0);
}
END_TEST

START_TEST(test_corpus_stream) {
    FILE *in = tmpfile();
    ck_assert_ptr_nonnull(in);
    fputs("A.\tB.\n\nC.\tD.\n", in);
    rewind(in);
    Corpus corpus;
    Error err = {{0}};
    ck_assert_int_eq(corpus_read_stream(in, "<stdin>", &corpus, &err), 0);
    ck_assert_uint_eq(corpus.count, 2);
    ck_assert_str_eq(corpus.tgt[1], "D.");
    ck_assert_uint_eq(corpus.line[1], 3);
    corpus_free(&corpus);
    fclose(in);
}
END_TEST

Suite *corpus_suite(void) {
    Suite *suite = suite_create("corpus");
    TCase *memory = tcase_create("string");
    tcase_add_test(memory, test_corpus_reads_pairs_and_ignores_extra_columns);
    tcase_add_test(memory, test_corpus_crlf_bom_and_empty_lines);
    tcase_add_test(memory, test_corpus_line_errors);
    tcase_add_test(memory, test_corpus_without_pairs);
    suite_add_tcase(suite, memory);

    TCase *files = tcase_create("file");
    tcase_add_test(files, test_corpus_file_with_bom_and_crlf);
    tcase_add_test(files, test_corpus_file_error_names_file_and_line);
    tcase_add_test(files, test_corpus_one_mebibyte_line);
    tcase_add_test(files, test_corpus_unreadable_inputs);
    tcase_add_test(files, test_corpus_stream);
    suite_add_tcase(suite, files);
    return suite;
}

/* ---- vocabulary ---- */

/* Tokenizes each of texts[0..count) into sentences[]. */
static void tokenize_all(const char *const *texts, size_t count, TokenList *sentences) {
    Error err = {{0}};
    for (size_t i = 0; i < count; i++)
        ck_assert_msg(tokenize(texts[i], false, &sentences[i], &err) == 0, "%s", err.msg);
}

static void free_all(TokenList *sentences, size_t count) {
    for (size_t i = 0; i < count; i++) token_list_free(&sentences[i]);
}

/* Builds a vocabulary from the given sentences, which must succeed. */
static Vocab build(const char *const *texts, size_t count, size_t min_count, size_t max_size) {
    TokenList sentences[8];
    ck_assert_uint_le(count, 8);
    tokenize_all(texts, count, sentences);
    Vocab vocab;
    Error err = {{0}};
    ck_assert_msg(vocab_build(sentences, count, min_count, max_size, &vocab, &err) == 0, "%s",
                  err.msg);
    free_all(sentences, count);
    return vocab;
}

static const char *const animal_texts[] = {"b a c a b a", "d <unk> a", "z y x"};

START_TEST(test_vocab_specials) {
    Vocab vocab = build(animal_texts, 3, 1, SIZE_MAX);
    const char *specials[] = {"<pad>", "<unk>", "<s>", "</s>"};
    for (int id = 0; id < TOK_SPECIALS; id++) {
        ck_assert_str_eq(vocab_token(&vocab, id), specials[id]);
        ck_assert_int_eq(vocab_id(&vocab, specials[id]), id);
    }
    ck_assert_int_eq(TOK_PAD, 0);
    ck_assert_int_eq(TOK_UNK, 1);
    ck_assert_int_eq(TOK_BOS, 2);
    ck_assert_int_eq(TOK_EOS, 3);
    ck_assert_int_eq(vocab_id(&vocab, "never seen"), TOK_UNK);
    ck_assert_int_eq(vocab_id(&vocab, ""), TOK_UNK);
    ck_assert_ptr_null(vocab_token(&vocab, -1));
    ck_assert_ptr_null(vocab_token(&vocab, (int)vocab.size));
    /* "<unk>" in the text maps to the special and takes no second id */
    ck_assert_uint_eq(vocab.size, TOK_SPECIALS + 7);
    vocab_free(&vocab);
    ck_assert_uint_eq(vocab.size, 0);
}
END_TEST

START_TEST(test_vocab_order_is_count_then_bytes) {
    Vocab vocab = build(animal_texts, 3, 1, SIZE_MAX);
    /* a:4 b:2, then the count-1 tokens in byte order */
    const char *expected[] = {"a", "b", "c", "d", "x", "y", "z"};
    for (int i = 0; i < 7; i++)
        ck_assert_str_eq(vocab_token(&vocab, TOK_SPECIALS + i), expected[i]);
    vocab_free(&vocab);

    /* byte-wise: upper-case before lower-case, ASCII before any multi-byte character */
    const char *texts[] = {"é b B a"};
    vocab = build(texts, 1, 1, SIZE_MAX);
    ck_assert_str_eq(vocab_token(&vocab, 4), "B");
    ck_assert_str_eq(vocab_token(&vocab, 5), "a");
    ck_assert_str_eq(vocab_token(&vocab, 6), "b");
    ck_assert_str_eq(vocab_token(&vocab, 7), "é");
    vocab_free(&vocab);
}
END_TEST

START_TEST(test_vocab_min_count_and_max_size) {
    Vocab vocab = build(animal_texts, 3, 2, SIZE_MAX);
    ck_assert_uint_eq(vocab.size, TOK_SPECIALS + 2); /* only a (4) and b (2) */
    ck_assert_int_eq(vocab_id(&vocab, "b"), 5);
    ck_assert_int_eq(vocab_id(&vocab, "c"), TOK_UNK);
    vocab_free(&vocab);

    vocab = build(animal_texts, 3, 1, TOK_SPECIALS + 3);
    ck_assert_uint_eq(vocab.size, TOK_SPECIALS + 3);
    ck_assert_int_eq(vocab_id(&vocab, "c"), 6);
    ck_assert_int_eq(vocab_id(&vocab, "d"), TOK_UNK);
    vocab_free(&vocab);

    vocab = build(animal_texts, 3, 1, TOK_SPECIALS); /* specials only */
    ck_assert_uint_eq(vocab.size, TOK_SPECIALS);
    ck_assert_int_eq(vocab_id(&vocab, "a"), TOK_UNK);
    vocab_free(&vocab);

    Vocab too_small;
    Error err = {{0}};
    ck_assert_int_eq(vocab_build(NULL, 0, 1, 3, &too_small, &err), -1);
    ck_assert_msg(strstr(err.msg, "reserved"), "%s", err.msg);
}
END_TEST

START_TEST(test_vocab_many_tokens_and_encode) {
    /* enough distinct tokens to grow the counting table several times */
    size_t words = 5000;
    char *text = malloc(8 * words);
    ck_assert_ptr_nonnull(text);
    size_t used = 0;
    for (size_t i = 0; i < words; i++)
        used += (size_t)snprintf(text + used, 8 * words - used, "w%zu ", i % 3000);
    TokenList sentences[2];
    const char *texts[] = {text, "w7 w7 w7 ?"};
    tokenize_all(texts, 2, sentences);
    Vocab vocab;
    Error err = {{0}};
    ck_assert_int_eq(vocab_build(sentences, 2, 1, SIZE_MAX, &vocab, &err), 0);
    ck_assert_uint_eq(vocab.size, TOK_SPECIALS + 3001);
    ck_assert_str_eq(vocab_token(&vocab, 4), "w7"); /* 5 times */
    for (int id = 0; id < (int)vocab.size; id++)
        ck_assert_int_eq(vocab_id(&vocab, vocab_token(&vocab, id)), id);

    TokenList query;
    ck_assert_int_eq(tokenize("w7 unseen <s> w2999 ?", false, &query, &err), 0);
    int ids[5] = {-1, -1, -1, -1, -1};
    vocab_encode(&vocab, &query, ids);
    ck_assert_int_eq(ids[0], 4);
    ck_assert_int_eq(ids[1], TOK_UNK);
    ck_assert_int_eq(ids[2], TOK_BOS);
    ck_assert_str_eq(vocab_token(&vocab, ids[3]), "w2999");
    ck_assert_str_eq(vocab_token(&vocab, ids[4]), "?");
    token_list_free(&query);
    vocab_free(&vocab);
    free_all(sentences, 2);
    free(text);
}
END_TEST

START_TEST(test_vocab_write_read_round_trip) {
    const char *texts[] = {"l'école est là.", "我爱猫 est là"};
    Vocab vocab = build(texts, 2, 1, SIZE_MAX);
    FILE *file = tmpfile();
    ck_assert_ptr_nonnull(file);
    ck_assert_int_eq(vocab_write(&vocab, file), 0);
    fputs("tail", file); /* whatever follows in a checkpoint must be left unread */
    long size = ftell(file);
    rewind(file);

    unsigned char head[9];
    ck_assert_uint_eq(fread(head, 1, 9, file), 9);
    ck_assert_uint_eq(head[0] | head[1] << 8 | head[2] << 16 | (unsigned)head[3] << 24,
                      vocab.size); /* little-endian count */
    ck_assert_int_eq(memcmp(head + 4, "\x05\0\0\0<", 5), 0);
    rewind(file);

    Vocab copy;
    Error err = {{0}};
    ck_assert_msg(vocab_read(&copy, file, (size_t)size, &err) == 0, "%s", err.msg);
    char tail[5] = {0};
    ck_assert_uint_eq(fread(tail, 1, 4, file), 4);
    ck_assert_str_eq(tail, "tail");
    ck_assert_uint_eq(copy.size, vocab.size);
    for (int id = 0; id < (int)vocab.size; id++) {
        ck_assert_str_eq(vocab_token(&copy, id), vocab_token(&vocab, id));
        ck_assert_int_eq(vocab_id(&copy, vocab_token(&vocab, id)), id);
    }
    ck_assert_int_eq(vocab_id(&copy, "猫"), vocab_id(&vocab, "猫"));
    ck_assert_int_ne(vocab_id(&copy, "猫"), TOK_UNK);
    vocab_free(&copy);
    vocab_free(&vocab);
    fclose(file);
}
END_TEST

/* Serialised vocabularies that must be rejected. Integers are little-endian u32. */
#define SPECIALS "\x05\0\0\0<pad>\x05\0\0\0<unk>\x03\0\0\0<s>\x04\0\0\0</s>"

typedef struct {
    const char *bytes;
    size_t len;
    long max_bytes_change; /* max_bytes is len plus this */
    const char *expected;  /* a substring of the error */
} CorruptVocab;

static const CorruptVocab corrupt_vocabs[] = {
    {BYTES(""), 0, "before its token count"},
    {BYTES("\x05\0\0"), 0, "before its token count"},
    {BYTES("\x03\0\0\0\x05\0\0\0<pad>\x05\0\0\0<unk>\x03\0\0\0<s>"), 0, "outside"},
    {BYTES("\xFF\xFF\xFF\xFF" SPECIALS), 1000, "outside"},
    {BYTES("\x00\x10\0\0" SPECIALS), 0, "cannot fit"}, /* 4096 tokens in 40 bytes */
    {BYTES("\x06\0\0\0" SPECIALS "\x01\0\0\0x"), 0, "truncated at the length of token 5"},
    {BYTES("\x05\0\0\0" SPECIALS "\x09\0\0\0xy"), 100, "truncated inside token 4"},
    {BYTES("\x05\0\0\0" SPECIALS "\x03\0\0\0xyz"), -1, "token 4 claims 3 bytes"},
    {BYTES("\x05\0\0\0" SPECIALS "\xFF\xFF\xFF\x7F"), 0, "token 4 claims"},
    {BYTES("\x05\0\0\0" SPECIALS "\0\0\0\0"), 0, "token 4 is empty"},
    {BYTES("\x05\0\0\0" SPECIALS "\x03\0\0\0x\0y"), 0, "token 4 holds a NUL"},
    {BYTES("\x05\0\0\0" SPECIALS "\x02\0\0\0\xC0\xAF"), 0, "token 4: invalid UTF-8 at byte 0"},
    {BYTES("\x05\0\0\0" SPECIALS "\x03\0\0\0\xED\xA0\x80"), 0, "surrogate"},
    {BYTES("\x06\0\0\0" SPECIALS "\x01\0\0\0x\x01\0\0\0x"), 0, "token 5 \"x\" repeats token 4"},
    {BYTES("\x05\0\0\0" SPECIALS "\x03\0\0\0<s>"), 0, "repeats token 2"},
    {BYTES("\x04\0\0\0\x05\0\0\0<unk>\x05\0\0\0<pad>\x03\0\0\0<s>\x04\0\0\0</s>"), 0,
     "id 0 is \"<unk>\", not the reserved \"<pad>\""},
};

START_TEST(test_vocab_read_rejects_corrupt_data) {
    const CorruptVocab *bad = &corrupt_vocabs[_i];
    FILE *file = tmpfile();
    ck_assert_ptr_nonnull(file);
    ck_assert_uint_eq(fwrite(bad->bytes, 1, bad->len, file), bad->len);
    rewind(file);
    Vocab vocab;
    Error err = {{0}};
    ck_assert_int_eq(
        vocab_read(&vocab, file, (size_t)((long)bad->len + bad->max_bytes_change), &err), -1);
    ck_assert_msg(strstr(err.msg, bad->expected), "case %d: \"%s\" lacks \"%s\"", _i, err.msg,
                  bad->expected);
    ck_assert_uint_eq(vocab.size, 0);
    ck_assert_ptr_null(vocab.tokens);
    fclose(file);
}
END_TEST

START_TEST(test_vocab_read_accepts_minimal) {
    FILE *file = tmpfile();
    ck_assert_ptr_nonnull(file);
    const char bytes[] = "\x04\0\0\0" SPECIALS;
    ck_assert_uint_eq(fwrite(bytes, 1, sizeof bytes - 1, file), sizeof bytes - 1);
    rewind(file);
    Vocab vocab;
    Error err = {{0}};
    ck_assert_msg(vocab_read(&vocab, file, sizeof bytes - 1, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(vocab.size, TOK_SPECIALS);
    ck_assert_int_eq(vocab_id(&vocab, "</s>"), TOK_EOS);
    vocab_free(&vocab);
    fclose(file);
}
END_TEST

Suite *vocab_suite(void) {
    Suite *suite = suite_create("vocab");
    TCase *building = tcase_create("build");
    tcase_add_test(building, test_vocab_specials);
    tcase_add_test(building, test_vocab_order_is_count_then_bytes);
    tcase_add_test(building, test_vocab_min_count_and_max_size);
    tcase_add_test(building, test_vocab_many_tokens_and_encode);
    suite_add_tcase(suite, building);

    TCase *files = tcase_create("serialisation");
    tcase_add_test(files, test_vocab_write_read_round_trip);
    tcase_add_test(files, test_vocab_read_accepts_minimal);
    tcase_add_loop_test(files, test_vocab_read_rejects_corrupt_data, 0,
                        (int)(sizeof corrupt_vocabs / sizeof corrupt_vocabs[0]));
    suite_add_tcase(suite, files);
    return suite;
}

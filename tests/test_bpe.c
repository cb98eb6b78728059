/*
 * test_bpe.c: tests of byte-pair-encoding subwords (data/bpe.h): the merge order learned on
 * hand-computed corpora and its determinism, cutting tokens into pieces, the exact round trip
 * tokens -> pieces -> tokens (adversarial tokens with '@' and '~', CJK, emoji, 100k-character
 * words), joining whatever a model might output, and the serialised merges, damaged ones
 * included. Serialised tables go through tmpfile(); nothing depends on the working directory.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/bpe.h"
#include "data/tokenizer.h"
#include "tests/suites.h"

/* A string literal and its length, embedded NUL bytes included. */
#define BYTES(literal) literal, sizeof(literal) - 1

/* ---- helpers ---- */

/* A TokenList holding copies of tokens[0..n). */
static TokenList make_list(const char *const *tokens, size_t n) {
    TokenList list = {0};
    list.tokens = calloc(n ? n : 1, sizeof *list.tokens);
    ck_assert_ptr_nonnull(list.tokens);
    list.capacity = n ? n : 1;
    for (size_t i = 0; i < n; i++) {
        list.tokens[i] = strdup(tokens[i]);
        ck_assert_ptr_nonnull(list.tokens[i]);
    }
    list.count = n;
    return list;
}

/* One sentence per token of tokens[0..n), each repeated `times` times in a row. */
static TokenList *sentences_of(const char *const *tokens, size_t n, size_t times) {
    TokenList *sentences = calloc(n ? n : 1, sizeof *sentences);
    ck_assert_ptr_nonnull(sentences);
    for (size_t i = 0; i < n; i++) {
        const char **repeated = calloc(times, sizeof *repeated);
        ck_assert_ptr_nonnull(repeated);
        for (size_t k = 0; k < times; k++) repeated[k] = tokens[i];
        sentences[i] = make_list(repeated, times);
        free(repeated);
    }
    return sentences;
}

static void free_sentences(TokenList *sentences, size_t n) {
    for (size_t i = 0; i < n; i++) token_list_free(&sentences[i]);
    free(sentences);
}

static Bpe learn(const TokenList *sentences, size_t n, size_t max_merges) {
    Bpe bpe;
    Error err = {{0}};
    ck_assert_msg(bpe_learn(sentences, n, max_merges, &bpe, &err) == 0, "%s", err.msg);
    return bpe;
}

/* The classic example of Sennrich et al.: low x5, lower x2, newest x6, widest x3. */
static Bpe learn_classic(size_t max_merges) {
    const char *words[] = {"low", "lower", "newest", "widest"};
    const size_t times[] = {5, 2, 6, 3};
    TokenList sentences[4];
    for (int i = 0; i < 4; i++) {
        const char *repeated[6];
        for (size_t k = 0; k < times[i]; k++) repeated[k] = words[i];
        sentences[i] = make_list(repeated, times[i]);
    }
    Bpe bpe = learn(sentences, 4, max_merges);
    for (int i = 0; i < 4; i++) token_list_free(&sentences[i]);
    return bpe;
}

static void expect_merges(const Bpe *bpe, const char *const (*expected)[2], size_t n) {
    ck_assert_uint_eq(bpe->merge_count, n);
    for (size_t i = 0; i < n; i++) {
        const char *left = bpe->symbols.strings[bpe->merges[i].left];
        const char *right = bpe->symbols.strings[bpe->merges[i].right];
        ck_assert_msg(strcmp(left, expected[i][0]) == 0 && strcmp(right, expected[i][1]) == 0,
                      "merge %zu is (%s, %s), expected (%s, %s)", i, left, right, expected[i][0],
                      expected[i][1]);
    }
}

static void expect_same_merges(const Bpe *a, const Bpe *b) {
    ck_assert_uint_eq(a->merge_count, b->merge_count);
    for (size_t i = 0; i < a->merge_count; i++) {
        ck_assert_str_eq(a->symbols.strings[a->merges[i].left],
                         b->symbols.strings[b->merges[i].left]);
        ck_assert_str_eq(a->symbols.strings[a->merges[i].right],
                         b->symbols.strings[b->merges[i].right]);
        ck_assert_str_eq(a->symbols.strings[a->merges[i].result],
                         b->symbols.strings[b->merges[i].result]);
    }
}

/* Cuts token and checks the pieces against the NULL-terminated list expected. */
static void expect_pieces(const Bpe *bpe, const char *token, const char *const *expected) {
    TokenList pieces = {0};
    Error err = {{0}};
    ck_assert_msg(bpe_apply(bpe, token, &pieces, &err) == 0, "%s", err.msg);
    size_t n = 0;
    while (expected[n]) n++;
    for (size_t i = 0; i < n && i < pieces.count; i++)
        ck_assert_msg(strcmp(pieces.tokens[i], expected[i]) == 0,
                      "\"%s\": piece %zu is \"%s\", expected \"%s\"", token, i, pieces.tokens[i],
                      expected[i]);
    ck_assert_msg(pieces.count == n, "\"%s\": %zu pieces, expected %zu", token, pieces.count, n);
    token_list_free(&pieces);
}

/* Checks that token -> pieces -> tokens gives token back, and the pieces' marking: every piece
 * but the last ends in "@@", the last does not. */
static void expect_round_trip(const Bpe *bpe, const char *token) {
    TokenList pieces = {0}, back;
    Error err = {{0}};
    ck_assert_msg(bpe_apply(bpe, token, &pieces, &err) == 0, "%s", err.msg);
    ck_assert_uint_ge(pieces.count, 1);
    for (size_t i = 0; i < pieces.count; i++) {
        size_t len = strlen(pieces.tokens[i]);
        int marked = len >= 2 && strcmp(pieces.tokens[i] + len - 2, "@@") == 0;
        EXPECT_MSG(marked == (i + 1 < pieces.count), "piece %zu \"%s\" of %zu is %smarked", i,
                   pieces.tokens[i], pieces.count, marked ? "" : "not ");
        EXPECT_MSG(len > (size_t)(marked ? 2 : 0), "piece %zu \"%s\" is empty", i,
                   pieces.tokens[i]);
    }
    ck_assert_msg(bpe_join((const char *const *)pieces.tokens, pieces.count, &back, &err) == 0,
                  "%s", err.msg);
    ck_assert_msg(back.count == 1, "\"%.80s\" joined into %zu tokens", token, back.count);
    ck_assert_msg(strcmp(back.tokens[0], token) == 0, "\"%.80s\" came back as \"%.80s\"", token,
                  back.tokens[0]);
    token_list_free(&back);
    token_list_free(&pieces);
}

/* Joins pieces[0..n) and checks the tokens against the NULL-terminated list expected. */
static void expect_joined(const char *const *pieces, size_t n, const char *const *expected) {
    TokenList tokens;
    Error err = {{0}};
    ck_assert_msg(bpe_join(pieces, n, &tokens, &err) == 0, "%s", err.msg);
    size_t count = 0;
    while (expected[count]) count++;
    for (size_t i = 0; i < count && i < tokens.count; i++)
        ck_assert_str_eq(tokens.tokens[i], expected[i]);
    ck_assert_uint_eq(tokens.count, count);
    token_list_free(&tokens);
}

/* ---- learning ---- */

/* Worked by hand: (e s) and (s t) both occur 9 times and "e@@" < "s@@"; then the ties at 6
 * go (e w) < (n e) < (w est), and so on until no pair is left. */
static const char *const classic_merges[][2] = {
    {"e@@", "s@@"},   {"es@@", "t"},   {"l@@", "o@@"},  {"e@@", "w@@"},  {"ew@@", "est"},
    {"n@@", "ewest"}, {"lo@@", "w"},   {"d@@", "est"},  {"i@@", "dest"}, {"w@@", "idest"},
    {"e@@", "r"},     {"lo@@", "w@@"}, {"low@@", "er"},
};

START_TEST(test_bpe_learns_classic_merge_order) {
    Bpe bpe = learn_classic(100); /* more than exist: stops after the last pair */
    expect_merges(&bpe, classic_merges, 13);
    ck_assert_str_eq(bpe.symbols.strings[bpe.merges[12].result], "lower");
    bpe_free(&bpe);
    ck_assert_uint_eq(bpe.merge_count, 0);

    bpe = learn_classic(5);
    expect_merges(&bpe, classic_merges, 5);
    bpe_free(&bpe);
    bpe = learn_classic(0);
    ck_assert_uint_eq(bpe.merge_count, 0);
    bpe_free(&bpe);
}
END_TEST

START_TEST(test_bpe_learning_is_deterministic) {
    Error err = {{0}};
    const char *texts[] = {"the quick brown fox jumps over the lazy dog .",
                           "der schnelle braune Fuchs springt über den faulen Hund !",
                           "我爱猫 , 猫爱我 .", "the dog , the fox , the cat ."};
    TokenList forward[4], backward[4];
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(tokenize(texts[i], false, &forward[i], &err), 0);
        /* the same tokens, sentences in the opposite order and each sentence reversed */
        TokenList *b = &backward[3 - i];
        ck_assert_int_eq(tokenize(texts[i], false, b, &err), 0);
        for (size_t k = 0; k < b->count / 2; k++) {
            char *t = b->tokens[k];
            b->tokens[k] = b->tokens[b->count - 1 - k];
            b->tokens[b->count - 1 - k] = t;
        }
    }
    Bpe first = learn(forward, 4, 1000), second = learn(forward, 4, 1000);
    Bpe reversed = learn(backward, 4, 1000);
    ck_assert_uint_gt(first.merge_count, 5);
    expect_same_merges(&first, &second);
    expect_same_merges(&first, &reversed);
    /* "the" x5 is the most frequent word: (t h) and (h e) tie at 5, "h@@" < "t@@" */
    ck_assert_str_eq(first.symbols.strings[first.merges[0].left], "h@@");
    ck_assert_str_eq(first.symbols.strings[first.merges[0].right], "e");
    ck_assert_str_eq(first.symbols.strings[first.merges[1].result], "the");
    bpe_free(&first);
    bpe_free(&second);
    bpe_free(&reversed);
    for (int i = 0; i < 4; i++) {
        token_list_free(&forward[i]);
        token_list_free(&backward[i]);
    }
}
END_TEST

START_TEST(test_bpe_learns_from_degenerate_corpora) {
    /* no sentences at all, and sentences without tokens */
    Bpe bpe = learn(NULL, 0, 10);
    ck_assert_uint_eq(bpe.merge_count, 0);
    expect_pieces(&bpe, "abc", (const char *[]){"a@@", "b@@", "c", NULL});
    bpe_free(&bpe);
    TokenList empty[2] = {{0}, {0}};
    bpe = learn(empty, 2, 10);
    ck_assert_uint_eq(bpe.merge_count, 0);
    bpe_free(&bpe);

    /* single-character words have no pairs; a pair seen once is not merged */
    const char *single[] = {"a", "a", "b", "abc"};
    TokenList *sentences = sentences_of(single, 4, 3);
    token_list_free(&sentences[3]);
    sentences[3] = make_list(&single[3], 1);
    bpe = learn(sentences, 4, 10);
    ck_assert_uint_eq(bpe.merge_count, 0);
    bpe_free(&bpe);
    free_sentences(sentences, 4);

    /* one distinct character: aaaa -> (aa@@ a@@ a) -> (aa@@ aa) -> aaaa, then nothing */
    const char *a4[] = {"aaaa"};
    sentences = sentences_of(a4, 1, 3);
    bpe = learn(sentences, 1, 1000);
    expect_merges(&bpe, (const char *const[][2]){{"a@@", "a@@"}, {"a@@", "a"}, {"aa@@", "aa"}}, 3);
    expect_pieces(&bpe, "aaaaaaa", (const char *[]){"aa@@", "aa@@", "aa@@", "a", NULL});
    expect_round_trip(&bpe, "aaaaaaa");
    bpe_free(&bpe);
    free_sentences(sentences, 1);

    /* only punctuation */
    const char *punct[] = {"...", "!?", "...", "--", "!?", "(", ")"};
    sentences = sentences_of(punct, 7, 2);
    bpe = learn(sentences, 7, 100);
    /* (! ?), (. .) and (. .) at the end each occur 4 times: "!@@" < ".@@", and "." < ".@@" */
    expect_merges(
        &bpe, (const char *const[][2]){{"!@@", "?"}, {".@@", "."}, {".@@", ".."}, {"-@@", "-"}}, 4);
    for (size_t i = 0; i < 7; i++) expect_round_trip(&bpe, punct[i]);
    expect_pieces(&bpe, "!?!?", (const char *[]){"!@@", "?@@", "!?", NULL});
    bpe_free(&bpe);
    free_sentences(sentences, 7);
}
END_TEST

START_TEST(test_bpe_learn_rejects_bad_input) {
    Error err = {{0}};
    Bpe bpe;
    ck_assert_int_eq(bpe_learn(NULL, 0, BPE_MAX_MERGES + 1, &bpe, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "more than"));
    const char *bad[][1] = {{""}, {"a\xC0\xAF"}, {"a b"}, {"a\x1B"}};
    const char *expected[] = {"empty token", "invalid UTF-8", "space", "control"};
    for (int i = 0; i < 4; i++) {
        TokenList list = make_list(bad[i], 1);
        ck_assert_int_eq(bpe_learn(&list, 1, 10, &bpe, &err), -1);
        ck_assert_msg(strstr(err.msg, expected[i]), "\"%s\" lacks \"%s\"", err.msg, expected[i]);
        ck_assert_uint_eq(bpe.merge_count, 0);
        ck_assert_ptr_null(bpe.merges);
        token_list_free(&list);
    }
}
END_TEST

/* ---- applying and joining ---- */

START_TEST(test_bpe_applies_merges_by_rank) {
    Bpe bpe = learn_classic(100);
    expect_pieces(&bpe, "lowest", (const char *[]){"low@@", "est", NULL});
    expect_pieces(&bpe, "newest", (const char *[]){"newest", NULL});
    expect_pieces(&bpe, "lower", (const char *[]){"lower", NULL});
    /* (e s) comes before (l o): "lo" then misses (lo@@ w) which needs w to end the word */
    expect_pieces(&bpe, "slowest", (const char *[]){"s@@", "low@@", "est", NULL});
    /* characters never seen stay single pieces, whatever their size */
    expect_pieces(&bpe, "zoo", (const char *[]){"z@@", "o@@", "o", NULL});
    expect_pieces(&bpe, "猫low", (const char *[]){"猫@@", "low", NULL});
    expect_pieces(&bpe, "\xF0\x9F\x98\x80w", (const char *[]){"\xF0\x9F\x98\x80@@", "w", NULL});
    expect_pieces(&bpe, "é", (const char *[]){"é", NULL});

    /* a sentence at a time, into a list that is overwritten */
    const char *tokens[] = {"the", "lowest", "."};
    TokenList sentence = make_list(tokens, 3), pieces, back;
    Error err = {{0}};
    ck_assert_int_eq(bpe_apply_list(&bpe, &sentence, &pieces, &err), 0);
    ck_assert_uint_eq(pieces.count, 6); /* t@@ h@@ e low@@ est . */
    ck_assert_str_eq(pieces.tokens[3], "low@@");
    ck_assert_int_eq(bpe_join((const char *const *)pieces.tokens, pieces.count, &back, &err), 0);
    ck_assert_uint_eq(back.count, 3);
    for (size_t i = 0; i < 3; i++) ck_assert_str_eq(back.tokens[i], tokens[i]);
    token_list_free(&back);
    token_list_free(&pieces);
    token_list_free(&sentence);
    bpe_free(&bpe);
}
END_TEST

START_TEST(test_bpe_apply_rejects_bad_tokens) {
    Bpe bpe = learn_classic(100);
    const char *first[] = {"kept"};
    TokenList pieces = make_list(first, 1);
    Error err = {{0}};
    ck_assert_int_eq(bpe_apply(&bpe, "", &pieces, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "empty"));
    ck_assert_int_eq(bpe_apply(&bpe, "low\xFF", &pieces, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "invalid UTF-8 at byte 3"));
    ck_assert_uint_eq(pieces.count, 1); /* the list is as it was */
    ck_assert_str_eq(pieces.tokens[0], "kept");
    token_list_free(&pieces);
    bpe_free(&bpe);
}
END_TEST

/* Tokens that look like markers or escapes, and text of every size of character. */
static const char *const adversarial[] = {
    "@@",
    "a@@",
    "@",
    "x@@y",
    "@@@",
    "@@@@",
    "a@",
    "@~",
    "@~~",
    "a@~",
    "a@@~",
    "~",
    "~~",
    "a~",
    "@a",
    "@@a",
    "a@@b@@",
    "@x@@",
    "~@",
    "@~@",
    "a",
    "é",
    "猫",
    "我爱猫",
    "\xF0\x9F\x98\x80",
    "\xF0\x9F\x98\x80\xF0\x9F\x91\x8D@@",
    "l'",
    "3.14",
    "<unk>",
    "</w>",
    "a</w>b",
    "@@猫@@",
};
#define ADVERSARIAL_COUNT (sizeof adversarial / sizeof adversarial[0])

START_TEST(test_bpe_round_trip_is_exact) {
    /* with no merges, with merges learned elsewhere, and with merges learned on these very
     * tokens (so '@', '~' and "@@" themselves get merged) */
    Bpe none = {0}, classic = learn_classic(100);
    TokenList *sentences = sentences_of(adversarial, ADVERSARIAL_COUNT, 3);
    Bpe own = learn(sentences, ADVERSARIAL_COUNT, 1000);
    ck_assert_uint_gt(own.merge_count, 20);
    const Bpe *tables[] = {&none, &classic, &own};
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < ADVERSARIAL_COUNT; i++) expect_round_trip(tables[t], adversarial[i]);
    expect_pieces(&none, "a@@", (const char *[]){"a@@", "@@@", "@@@", "~", NULL});
    expect_pieces(&own, "a@@", (const char *[]){"a@@~", NULL});
    expect_pieces(&own, "@", (const char *[]){"@~", NULL});

    /* every token of a small tokenized corpus, and all of them in one sequence */
    const char *texts[] = {"L'école est là, n'est-ce pas ? Oui : 3,14 % de 1.000 €.",
                           "Die Straße – „so“ sagt man – ist 12 km lang!",
                           "我爱猫。 email: me@example.org @@ a@@ b@ ~@~",
                           "\xF0\x9F\x98\x80\xF0\x9F\x98\x80 ok \xF0\x9F\x91\x8D"};
    TokenList corpus[4];
    Error err = {{0}};
    for (int i = 0; i < 4; i++) ck_assert_int_eq(tokenize(texts[i], false, &corpus[i], &err), 0);
    Bpe small = learn(corpus, 4, 200);
    for (int i = 0; i < 4; i++) {
        TokenList pieces, back;
        ck_assert_int_eq(bpe_apply_list(&small, &corpus[i], &pieces, &err), 0);
        ck_assert_int_eq(bpe_join((const char *const *)pieces.tokens, pieces.count, &back, &err),
                         0);
        ck_assert_uint_eq(back.count, corpus[i].count);
        for (size_t k = 0; k < back.count; k++)
            ck_assert_str_eq(back.tokens[k], corpus[i].tokens[k]);
        token_list_free(&back);
        token_list_free(&pieces);
        token_list_free(&corpus[i]);
    }
    bpe_free(&small);
    bpe_free(&own);
    bpe_free(&classic);
    free_sentences(sentences, ADVERSARIAL_COUNT);
}
END_TEST

/* The cut as subword-nmt makes it, slowly: find the adjacent pair with the lowest rank, merge
 * every occurrence of it from left to right, repeat. Works on the piece strings alone. */
static TokenList reference_cut(const Bpe *bpe, const char *token) {
    size_t len = strlen(token), end = len;
    while (end > 0 && token[end - 1] == '~') end--;
    char escaped[64];
    ck_assert_uint_lt(len + 2, sizeof escaped);
    snprintf(escaped, sizeof escaped, "%s%s", token, end > 0 && token[end - 1] == '@' ? "~" : "");
    TokenList pieces = {0};
    pieces.tokens = calloc(sizeof escaped, sizeof *pieces.tokens);
    ck_assert_ptr_nonnull(pieces.tokens);
    pieces.capacity = sizeof escaped;
    for (size_t at = 0, n; escaped[at]; at += n) {
        unsigned char lead = (unsigned char)escaped[at];
        n = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
        char piece[8] = {0};
        memcpy(piece, escaped + at, n);
        if (escaped[at + n]) strcat(piece, "@@");
        pieces.tokens[pieces.count++] = strdup(piece);
    }
    for (;;) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i + 1 < pieces.count; i++)
            for (size_t r = 0; r < bpe->merge_count && r < best; r++)
                if (strcmp(pieces.tokens[i], bpe->symbols.strings[bpe->merges[r].left]) == 0 &&
                    strcmp(pieces.tokens[i + 1], bpe->symbols.strings[bpe->merges[r].right]) == 0)
                    best = r;
        if (best == SIZE_MAX) return pieces;
        const BpeMerge *m = &bpe->merges[best];
        size_t kept = 0;
        for (size_t i = 0; i < pieces.count;) {
            if (i + 1 < pieces.count &&
                strcmp(pieces.tokens[i], bpe->symbols.strings[m->left]) == 0 &&
                strcmp(pieces.tokens[i + 1], bpe->symbols.strings[m->right]) == 0) {
                free(pieces.tokens[i]);
                free(pieces.tokens[i + 1]);
                pieces.tokens[kept++] = strdup(bpe->symbols.strings[m->result]);
                i += 2;
            } else {
                pieces.tokens[kept++] = pieces.tokens[i++];
            }
        }
        pieces.count = kept;
    }
}

/* Random tokens over an alphabet rich in markers and escapes: the round trip is exact and the
 * cut is the reference's, with merges learned on other random tokens. */
START_TEST(test_bpe_random_tokens) {
    static const char *const alphabet[] = {"a", "b", "@", "@", "~", "é", "猫", "\xF0\x9F\x98\x80"};
    enum { TOKENS = 2000 };
    uint64_t state = 0x2545F4914F6CDD1Du; /* xorshift64: explicit state, fixed seed */
    char *tokens[2 * TOKENS];
    for (int t = 0; t < 2 * TOKENS; t++) {
        char token[64] = {0};
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        int n = 1 + (int)(state % 10);
        for (int i = 0; i < n; i++) {
            state ^= state << 13, state ^= state >> 7, state ^= state << 17;
            strcat(token, alphabet[state % 8]);
        }
        tokens[t] = strdup(token);
        ck_assert_ptr_nonnull(tokens[t]);
    }
    TokenList training = make_list((const char *const *)tokens, TOKENS);
    Bpe bpe = learn(&training, 1, 300);
    ck_assert_uint_eq(bpe.merge_count, 300);
    for (int t = 0; t < 2 * TOKENS; t++) {
        expect_round_trip(&bpe, tokens[t]);
        TokenList pieces = {0}, expected = reference_cut(&bpe, tokens[t]);
        Error err = {{0}};
        ck_assert_int_eq(bpe_apply(&bpe, tokens[t], &pieces, &err), 0);
        ck_assert_uint_eq(pieces.count, expected.count);
        for (size_t i = 0; i < pieces.count; i++)
            EXPECT_MSG(strcmp(pieces.tokens[i], expected.tokens[i]) == 0,
                       "\"%s\": piece %zu is \"%s\", expected \"%s\"", tokens[t], i,
                       pieces.tokens[i], expected.tokens[i]);
        token_list_free(&pieces);
        token_list_free(&expected);
    }
    bpe_free(&bpe);
    token_list_free(&training);
    for (int t = 0; t < 2 * TOKENS; t++) free(tokens[t]);
}
END_TEST

/* A 100,000-character word: cut into pieces in O(n log n), not quadratically. */
START_TEST(test_bpe_long_words) {
    enum { LENGTH = 100000 };
    char *ab = malloc(LENGTH + 1);
    ck_assert_ptr_nonnull(ab);
    for (int i = 0; i < LENGTH; i++) ab[i] = "ab"[i % 2];
    ab[LENGTH] = '\0';
    /* learned on shorter words, the merges apply ~n times at ~log n ranks; learning on the
     * long word itself sees its first BPE_LEARN_MAX_CHARS (1000) characters only */
    const char *words[] = {"abababab", "ab", ab};
    TokenList *sentences = sentences_of(words, 3, 2);
    Bpe bpe = learn(sentences, 2, 100);
    ck_assert_uint_ge(bpe.merge_count, 3);
    expect_round_trip(&bpe, ab);
    Bpe own = learn(sentences, 3, 40);
    TokenList pieces = {0};
    Error err = {{0}};
    ck_assert_int_eq(bpe_apply(&own, ab, &pieces, &err), 0);
    /* the doubling merges, learned from the first 1000 characters, make pieces of up to 512 */
    ck_assert_uint_lt(pieces.count, LENGTH / 256);
    token_list_free(&pieces);
    expect_round_trip(&own, ab);
    bpe_free(&own);

    /* four-byte characters no merge mentions, then an '@' ending to escape */
    char *emoji = malloc(4 * LENGTH + 2);
    ck_assert_ptr_nonnull(emoji);
    for (int i = 0; i < LENGTH; i++) memcpy(emoji + 4 * i, "\xF0\x9F\x98\x80", 4);
    memcpy(emoji + 4 * LENGTH, "@", 2);
    expect_round_trip(&bpe, emoji);
    free(emoji);
    bpe_free(&bpe);
    free_sentences(sentences, 3);
    free(ab);
}
END_TEST

/* One 1 MiB word without a space among ordinary ones, learned with the default 8000 merges:
 * before learning looked at only BPE_LEARN_MAX_CHARS characters of a word, every merge
 * rewrote the whole word (a 200 KB one took minutes); now no merge holds more than the
 * first 1000 characters, and the word is still cut whole and joined back exactly. */
START_TEST(test_bpe_enormous_word_is_learned_in_bounded_time) {
    enum { LENGTH = 1 << 20 };
    char *word = malloc(LENGTH + 1);
    ck_assert_ptr_nonnull(word);
    uint32_t x = 12345;
    for (int i = 0; i < LENGTH; i++) {
        x = x * 1664525u + 1013904223u;
        word[i] = (char)('a' + (x >> 24) % 26);
    }
    word[LENGTH] = '\0';
    const char *words[] = {"the", "cat", "sat", word};
    TokenList *sentences = sentences_of(words, 4, 2);
    Bpe bpe = learn(sentences, 4, 8000);
    ck_assert_uint_gt(bpe.merge_count, 100);
    for (size_t m = 0; m < bpe.merge_count; m++)
        ck_assert_uint_le(bpe.symbols.lengths[bpe.merges[m].result], BPE_LEARN_MAX_CHARS + 2);
    expect_round_trip(&bpe, word);
    expect_round_trip(&bpe, "cat");
    bpe_free(&bpe);
    free_sentences(sentences, 4);

    /* the same with one character repeated: the doubling merges stop at 512 characters */
    memset(word, 'z', LENGTH);
    sentences = sentences_of(words, 4, 1);
    bpe = learn(sentences, 4, 8000);
    ck_assert_uint_le(bpe.merge_count, 20);
    expect_round_trip(&bpe, word);
    bpe_free(&bpe);
    free_sentences(sentences, 4);
    free(word);
}
END_TEST

/* Characters outside the Basic Multilingual Plane (four UTF-8 bytes) are single symbols:
 * merges join whole characters, never bytes inside one. */
START_TEST(test_bpe_characters_beyond_the_bmp) {
    const char *words[] = {"😀😀😀", "😀😀", "𝄞a𝄞", "𝄞a", "😀@"};
    TokenList *sentences = sentences_of(words, 5, 3);
    Bpe bpe = learn(sentences, 5, 100);
    ck_assert_uint_gt(bpe.merge_count, 0);
    for (size_t s = 0; s < bpe.symbols.count; s++)
        ck_assert_ptr_null(utf8_find_error(bpe.symbols.strings[s], bpe.symbols.lengths[s], NULL));
    for (size_t i = 0; i < 5; i++) expect_round_trip(&bpe, words[i]);
    expect_round_trip(&bpe, "😀😀😀😀😀𝄞𝄞");
    bpe_free(&bpe);
    free_sentences(sentences, 5);
}
END_TEST

START_TEST(test_bpe_join_accepts_any_pieces) {
    /* a word left unfinished at the end still makes a token */
    expect_joined((const char *[]){"new@@"}, 1, (const char *[]){"new", NULL});
    expect_joined((const char *[]){"the", "low@@", "est", "ne@@", "w@@"}, 5,
                  (const char *[]){"the", "lowest", "new", NULL});
    /* pieces without text make no token, and no empty token is ever made */
    expect_joined((const char *[]){"@@"}, 1, (const char *[]){NULL});
    expect_joined((const char *[]){"a@@", "@@", "b"}, 3, (const char *[]){"ab", NULL});
    expect_joined((const char *[]){"", "x", "@@", ""}, 4, (const char *[]){"x", NULL});
    expect_joined(NULL, 0, (const char *[]){NULL});
    /* a special is text like any other */
    expect_joined((const char *[]){"low@@", "<unk>", "."}, 3,
                  (const char *[]){"low<unk>", ".", NULL});
    /* escapes: exactly one '~' goes, and only after '@' */
    expect_joined((const char *[]){"a@@@", "@~", "a~", "@~~", "~"}, 5,
                  (const char *[]){"a@@", "a~", "@~", "~", NULL});
    expect_joined((const char *[]){"a@@@"}, 1, (const char *[]){"a@", NULL});
}
END_TEST

/* ---- serialisation ---- */

START_TEST(test_bpe_write_read_round_trip) {
    Bpe bpe = learn_classic(100);
    FILE *file = tmpfile();
    ck_assert_ptr_nonnull(file);
    ck_assert_int_eq(bpe_write(&bpe, file), 0);
    fputs("tail", file); /* whatever follows in a checkpoint must be left unread */
    long size = ftell(file);
    rewind(file);

    unsigned char head[18];
    ck_assert_uint_eq(fread(head, 1, sizeof head, file), sizeof head);
    ck_assert_int_eq(memcmp(head, "\x0D\0\0\0\x03\0\0\0e@@\x03\0\0\0s@@", 18), 0);
    rewind(file);

    Bpe copy;
    Error err = {{0}};
    ck_assert_msg(bpe_read(&copy, file, (size_t)size, &err) == 0, "%s", err.msg);
    char tail[5] = {0};
    ck_assert_uint_eq(fread(tail, 1, 4, file), 4);
    ck_assert_str_eq(tail, "tail");
    expect_same_merges(&bpe, &copy);
    expect_pieces(&copy, "lowest", (const char *[]){"low@@", "est", NULL});
    bpe_free(&copy);

    /* no merges at all is a valid table */
    Bpe none = {0};
    rewind(file);
    ck_assert_int_eq(bpe_write(&none, file), 0);
    rewind(file);
    ck_assert_int_eq(bpe_read(&copy, file, 4, &err), 0);
    ck_assert_uint_eq(copy.merge_count, 0);
    expect_pieces(&copy, "ab", (const char *[]){"a@@", "b", NULL});
    bpe_free(&copy);
    bpe_free(&bpe);
    fclose(file);
}
END_TEST

/* Serialised tables that must be rejected. Integers are little-endian u32. */
typedef struct {
    const char *bytes;
    size_t len;
    long max_bytes_change; /* max_bytes is len plus this */
    const char *expected;  /* a substring of the error */
} CorruptTable;

#define AB   "\x03\0\0\0a@@\x01\0\0\0b"   /* merge (a@@, b) */
#define AB_M "\x03\0\0\0a@@\x03\0\0\0b@@" /* merge (a@@, b@@) */

static const CorruptTable corrupt_tables[] = {
    {BYTES(""), 0, "truncated before its merge count"},
    {BYTES("\x01\0\0"), 0, "truncated before its merge count"},
    {BYTES("\xFF\xFF\xFF\xFF" AB), 1000, "more than"},
    {BYTES("\x02\0\0\0" AB), 0, "2 merges cannot fit in 12 bytes"},
    {BYTES("\x10\0\0\0" AB AB AB), 100, "cannot fit"},
    {BYTES("\x01\0\0\0\x03\0\0\0a@@"), 100, "truncated at the length of merge 0's right"},
    {BYTES("\x02\0\0\0" AB "\x03\0\0\0x@@"), 100, "truncated at the length of merge 1's right"},
    {BYTES("\x01\0\0\0\x03\0\0\0a@@\x09\0\0\0b"), 0, "merge 0: the right symbol claims 9 bytes"},
    {BYTES("\x01\0\0\0\x03\0\0\0a@@\x09\0\0\0b"), 100, "truncated inside merge 0's right"},
    {BYTES("\x01\0\0\0\0\0\0\0\x01\0\0\0bxxx"), 0, "merge 0: the left symbol is empty"},
    {BYTES("\x01\0\0\0\x04\0\0\0ab@@\x01\0\0\0c"), 0,
     "merge 0: the left symbol \"ab@@\" does not exist"},
    {BYTES("\x03\0\0\0" AB_M "\x04\0\0\0ab@@\x01\0\0\0c\x04\0\0\0bc@@\x01\0\0\0d"), 0,
     "merge 2: the left symbol \"bc@@\" does not exist"},
    {BYTES("\x02\0\0\0" AB_M "\x03\0\0\0c@@\x02\0\0\0bc"), 0,
     "merge 1: the right symbol \"bc\" does not exist"},
    {BYTES("\x02\0\0\0" AB AB), 0, "merge 1 repeats merge 0"},
    {BYTES("\x03\0\0\0" AB_M AB "\x03\0\0\0a@@\x03\0\0\0b@@"), 0, "merge 2 repeats merge 0"},
    {BYTES("\x01\0\0\0\x01\0\0\0a\x04\0\0\0bcde"), 0, "merge 0: the left symbol \"a\" ends a word"},
    {BYTES("\x01\0\0\0\x03\0\0\0a@@\x02\0\0\0b@"), 0, "ends a word in '@'"},
    {BYTES("\x01\0\0\0\x02\0\0\0@@\x02\0\0\0bc"), 0, "the left symbol \"@@\" has no text"},
    {BYTES("\x01\0\0\0\x04\0\0\0\xC0\xAF@@\x01\0\0\0b"), 0,
     "merge 0: the left symbol: invalid UTF-8 at byte 0"},
    {BYTES("\x01\0\0\0\x03\0\0\0a@@\x03\0\0\0\xED\xA0\x80"), 0, "surrogate"},
    {BYTES("\x01\0\0\0\x04\0\0\0a\0@@\x01\0\0\0b"), 0, "holds a NUL byte"},
    {BYTES("\x01\0\0\0\x03\0\0\0a@@\x03\0\0\0b c"), 0, "merge 0: the right symbol: holds a space"},
    /* issue #36: a newline was reported as "holds a space" */
    {BYTES("\x01\0\0\0\x03\0\0\0a@@\x03\0\0\0b\nc"), 0,
     "merge 0: the right symbol: holds a newline at byte 1"},
    {BYTES("\x01\0\0\0\x04\0\0\0a\t@@\x01\0\0\0b"), 0, "merge 0: the left symbol: holds a tab"},
    {BYTES("\x01\0\0\0\x03\0\0\0\x1B@@\x01\0\0\0b"), 0, "control character U+001B"},
};

START_TEST(test_bpe_read_rejects_corrupt_tables) {
    const CorruptTable *bad = &corrupt_tables[_i];
    FILE *file = tmpfile();
    ck_assert_ptr_nonnull(file);
    ck_assert_uint_eq(fwrite(bad->bytes, 1, bad->len, file), bad->len);
    rewind(file);
    Bpe bpe;
    Error err = {{0}};
    ck_assert_int_eq(bpe_read(&bpe, file, (size_t)((long)bad->len + bad->max_bytes_change), &err),
                     -1);
    ck_assert_msg(strstr(err.msg, bad->expected), "case %d: \"%s\" lacks \"%s\"", _i, err.msg,
                  bad->expected);
    ck_assert_uint_eq(bpe.merge_count, 0);
    ck_assert_ptr_null(bpe.merges);
    ck_assert_ptr_null(bpe.symbols.strings);
    fclose(file);
}
END_TEST

START_TEST(test_bpe_read_accepts_merges_of_merges) {
    /* (a b) -> ab@@, (ab c) -> abc; the same result twice by another route is allowed */
    const char bytes[] = "\x04\0\0\0" AB_M "\x04\0\0\0ab@@\x01\0\0\0c\x03\0\0\0b@@\x01\0\0\0c"
                         "\x03\0\0\0a@@\x02\0\0\0bc";
    FILE *file = tmpfile();
    ck_assert_ptr_nonnull(file);
    ck_assert_uint_eq(fwrite(bytes, 1, sizeof bytes - 1, file), sizeof bytes - 1);
    rewind(file);
    Bpe bpe;
    Error err = {{0}};
    ck_assert_msg(bpe_read(&bpe, file, sizeof bytes - 1, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(bpe.merge_count, 4);
    ck_assert_uint_eq(bpe.merges[1].result, bpe.merges[3].result);
    expect_pieces(&bpe, "abc", (const char *[]){"abc", NULL});
    expect_pieces(&bpe, "abcx", (const char *[]){"ab@@", "c@@", "x", NULL});
    bpe_free(&bpe);
    fclose(file);
}
END_TEST

Suite *bpe_suite(void) {
    Suite *suite = suite_create("bpe");
    TCase *learning = tcase_create("learn");
    tcase_add_test(learning, test_bpe_learns_classic_merge_order);
    tcase_add_test(learning, test_bpe_learning_is_deterministic);
    tcase_add_test(learning, test_bpe_learns_from_degenerate_corpora);
    tcase_add_test(learning, test_bpe_learn_rejects_bad_input);
    suite_add_tcase(suite, learning);

    TCase *applying = tcase_create("apply and join");
    tcase_add_test(applying, test_bpe_applies_merges_by_rank);
    tcase_add_test(applying, test_bpe_apply_rejects_bad_tokens);
    tcase_add_test(applying, test_bpe_round_trip_is_exact);
    tcase_add_test(applying, test_bpe_random_tokens);
    tcase_add_test(applying, test_bpe_long_words);
    tcase_add_test(applying, test_bpe_enormous_word_is_learned_in_bounded_time);
    tcase_add_test(applying, test_bpe_characters_beyond_the_bmp);
    tcase_add_test(applying, test_bpe_join_accepts_any_pieces);
    tcase_set_timeout(applying,
                      60); /* generous for sanitizer builds; a quadratic cut is far slower */
    suite_add_tcase(suite, applying);

    TCase *files = tcase_create("serialisation");
    tcase_add_test(files, test_bpe_write_read_round_trip);
    tcase_add_test(files, test_bpe_read_accepts_merges_of_merges);
    tcase_add_loop_test(files, test_bpe_read_rejects_corrupt_tables, 0,
                        (int)(sizeof corrupt_tables / sizeof corrupt_tables[0]));
    suite_add_tcase(suite, files);
    return suite;
}

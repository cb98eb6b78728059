/*
 * test_subwords.c: subwords, case and <unk> replacement as the library and the programs use
 * them: a model with [data] subwords = bpe learns its merges deterministically, stores them in
 * its checkpoint and gets them back; every training sentence goes through encode (tokenize,
 * BPE) and decode (join, detokenize) exactly as through the tokenizer alone; unseen characters,
 * empty and very long words; a damaged BPE table is a one-line error naming the file; the
 * programs run on a BPE model; <unk> replacement and --keep-unk; cased output stays cased.
 * The BPE module itself is tested in test_bpe.c; this is about the way it is wired in.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <omp.h>

#include "tests/harness.h"
#include "data/lossless.h"
#include "nmt/formats/checkpoint.h"
#include "nmt/nmt.h"
#include "nmt/text.h"
#include "nmt/translator.h"
#include "nmt/words.h"
#include "tests/suites.h"
#include "train/config.h"
#include "train/new_model.h"

/* ---- helpers ------------------------------------------------------------------------------ */

/* Pairs with capitals, a rare word and punctuation, for the cased end-to-end model. */
static const char CASED_PAIRS[] = "I love cats.\tJ'aime les chats.\n"
                                  "I have a cat\tJ'ai un chat\n"
                                  "The black cat\tLe chat noir\n"
                                  "We see the dog\tNous voyons le chien\n"
                                  "The dog sees a cat\tLe chien voit un chat\n"
                                  "Paris loves cats\tParis aime les chats\n";

/* A model of size 4 with subwords, trained for four steps (as harness.h's tiny setup). */
static const char BPE_CONFIG[] = "[data]\n"
                                 "train = train.tsv\n"
                                 "dev = dev.tsv\n"
                                 "lowercase = false\n"
                                 "subwords = bpe\n"
                                 "src_merges = 30\n"
                                 "tgt_merges = 40\n"
                                 "[model]\n"
                                 "emb_size = 4\n"
                                 "enc_hidden = 4\n"
                                 "dec_hidden = 4\n"
                                 "att_size = 4\n"
                                 "readout_size = 4\n"
                                 "[train]\n"
                                 "batch_size = 2\n"
                                 "max_steps = 4\n"
                                 "valid_every = 2\n"
                                 "log_every = 1\n"
                                 "threads = 1\n"
                                 "out_dir = run\n";

/* A config for in-process models on the toy corpus (which the repository holds). */
/* The model's sizes of the tests that need no more than a model to tokenize with. */
static const char SMALL_SIZES[] =
    "emb_size = 4\nenc_hidden = 4\ndec_hidden = 4\natt_size = 4\nreadout_size = 4\n";

static void toy_config(Config *cfg, const Scratch *s, const char *subwords, int merges,
                       const char *sizes) {
    char text[2048], path[512], here[512];
    ck_assert_ptr_nonnull(getcwd(here, sizeof here));
    snprintf(text, sizeof text,
             "[data]\ntrain = %s/../data/toy/train.tsv\ndev = %s/../data/toy/dev.tsv\n"
             "lowercase = false\nsubwords = %s\nsrc_merges = %d\ntgt_merges = %d\n"
             "[model]\n%s",
             here, here, subwords, merges, merges + 100, sizes);
    scratch_write_text(s, "toy.ini", text);
    scratch_path(s, "toy.ini", path, sizeof path);
    Error err = {{0}};
    ck_assert_msg(config_load(cfg, path, NULL, 0, &err) == 0, "%s", err.msg);
}

/* The toy corpus, cased, and a model with subwords built from it. */
typedef struct {
    Corpus corpus;
    TokenizedCorpus tokens;
    NmtModel nm;
} ToyModel;

static void toy_model_sized(ToyModel *t, const char *subwords, int merges, const char *sizes) {
    Scratch s;
    Config cfg;
    Error err = {{0}};
    scratch_make(&s);
    toy_config(&cfg, &s, subwords, merges, sizes);
    scratch_free(&s);
    ck_assert_msg(corpus_load(cfg.data.train, false, &t->corpus, &t->tokens, &err) == 0, "%s",
                  err.msg);
    ck_assert_msg(nmt_model_from_config(&t->nm, &cfg, &t->tokens, 1, &err) == 0, "%s", err.msg);
}

static void toy_model(ToyModel *t, const char *subwords, int merges) {
    toy_model_sized(t, subwords, merges, SMALL_SIZES);
}

static void toy_model_free(ToyModel *t) {
    nmt_model_free(&t->nm);
    tokenized_corpus_free(&t->tokens);
    corpus_free(&t->corpus);
}

/* The bytes of a BPE table as the checkpoint stores them; free() the result. */
static char *bpe_bytes(const Bpe *bpe, size_t *len) {
    char *buf = NULL;
    FILE *mem = open_memstream(&buf, len);
    ck_assert_ptr_nonnull(mem);
    ck_assert_int_eq(bpe_write(bpe, mem), 0);
    ck_assert_int_eq(fclose(mem), 0);
    return buf;
}

static void expect_same_bpe(const Bpe *a, const Bpe *b) {
    size_t la, lb;
    char *x = bpe_bytes(a, &la), *y = bpe_bytes(b, &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert_int_eq(memcmp(x, y, la), 0);
    free(x), free(y);
}

/* What the tokenizer alone makes of text: detokenize(tokenize(text)). */
static char *tokenizer_round_trip(const char *text, bool lowercase) {
    TokenList tokens = {0};
    Error err = {{0}};
    ck_assert_msg(tokenize(text, lowercase, &tokens, &err) == 0, "%s", err.msg);
    char *back = detokenize((const char *const *)tokens.tokens, tokens.count, &err);
    ck_assert_ptr_nonnull(back);
    token_list_free(&tokens);
    return back;
}

/* text through the model's units and back, as the target side decodes: nmt_units, then
 * nmt_join_target. */
static char *units_round_trip(const NmtModel *nm, const char *text, bool target) {
    TokenList units = {0};
    Error err = {{0}};
    ck_assert_msg(nmt_units(nm, text, target, &units, &err) == 0, "%s", err.msg);
    char *back = nmt_join_target(nm, (const char *const *)units.tokens, (int)units.count, &err);
    ck_assert_ptr_nonnull(back);
    token_list_free(&units);
    return back;
}

/* ---- in the library ----------------------------------------------------------------------- */

START_TEST(test_every_training_sentence_round_trips) {
    ToyModel t;
    toy_model(&t, "bpe", 300);
    ck_assert(t.nm.subwords);
    ck_assert_uint_gt(t.nm.src_bpe.merge_count, 0);
    Error err = {{0}};
    size_t cut = 0; /* sentences with at least one word in pieces: the test means something */
    for (size_t i = 0; i < t.corpus.count; i++) {
        for (int side = 0; side < 2; side++) {
            const char *text = side ? t.corpus.tgt[i] : t.corpus.src[i];
            char *want = tokenizer_round_trip(text, false);
            char *got = units_round_trip(&t.nm, text, side == 1);
            EXPECT_MSG(strcmp(want, got) == 0, "line %zu: '%s' came back as '%s'", t.corpus.line[i],
                       want, got);
            free(want), free(got);
        }
        /* and through the ids: every training piece is in the vocabulary */
        TokenList pieces = {0};
        ck_assert(nmt_units(&t.nm, t.corpus.tgt[i], true, &pieces, &err) == 0);
        cut += pieces.count > t.tokens.tgt[i].count;
        int *ids = calloc(pieces.count + 1, sizeof(int));
        ck_assert_ptr_nonnull(ids);
        vocab_encode(&t.nm.tgt_vocab, &pieces, ids);
        for (size_t k = 0; k < pieces.count; k++)
            EXPECT_MSG(ids[k] != TOK_UNK, "line %zu: piece %zu \"%s\" is <unk>", t.corpus.line[i],
                       k, pieces.tokens[k]);
        char *text = decode_target(&t.nm, ids, (int)pieces.count, &err);
        char *want = tokenizer_round_trip(t.corpus.tgt[i], false);
        ck_assert_str_eq(text, want);
        free(text), free(want), free(ids);
        token_list_free(&pieces);
    }
    ck_assert_uint_gt(cut, t.corpus.count / 10);
    toy_model_free(&t);
}
END_TEST

START_TEST(test_merges_are_deterministic) {
    ToyModel a, b;
    toy_model(&a, "bpe", 200);
    toy_model(&b, "bpe", 200);
    expect_same_bpe(&a.nm.src_bpe, &b.nm.src_bpe);
    expect_same_bpe(&a.nm.tgt_bpe, &b.nm.tgt_bpe);
    ck_assert_uint_eq(a.nm.src_vocab.size, b.nm.src_vocab.size);
    for (size_t i = 0; i < a.nm.tgt_vocab.size; i++)
        ck_assert_str_eq(a.nm.tgt_vocab.tokens[i], b.nm.tgt_vocab.tokens[i]);
    ck_assert_uint_eq(a.nm.src_bpe.merge_count, 200);
    ck_assert_uint_eq(a.nm.tgt_bpe.merge_count, 300);
    toy_model_free(&a);
    toy_model_free(&b);
}
END_TEST

START_TEST(test_without_subwords_nothing_changes) {
    ToyModel t;
    toy_model(&t, "none", 300);
    ck_assert(!t.nm.subwords);
    ck_assert_uint_eq(t.nm.src_bpe.merge_count, 0);
    TokenList units = {0};
    Error err = {{0}};
    ck_assert(nmt_units(&t.nm, "I love machine learning.", false, &units, &err) == 0);
    ck_assert_uint_eq(units.count, 5);
    ck_assert_str_eq(units.tokens[2], "machine");
    token_list_free(&units);
    toy_model_free(&t);
}
END_TEST

START_TEST(test_unseen_characters_empty_and_long_words) {
    ToyModel t;
    toy_model(&t, "bpe", 300);
    Error err = {{0}};
    /* characters the training data never had: pieces of their own, <unk> as ids, and the
     * text itself still round-trips */
    const char *odd = "Zebras ŋ猫Ω eat 🐈 snacks@@ and ~@~ too";
    char *want = tokenizer_round_trip(odd, false);
    for (int side = 0; side < 2; side++) {
        char *got = units_round_trip(&t.nm, odd, side == 1);
        ck_assert_str_eq(got, want);
        free(got);
    }
    free(want);
    int *ids = NULL, n = 0, unknown = 0;
    ck_assert_msg(encode_source(&t.nm, odd, &ids, &n, &unknown, &err) == 0, "%s", err.msg);
    ck_assert_int_gt(unknown, 0);
    ck_assert_int_eq(ids[n - 1], TOK_EOS);
    free(ids);

    /* empty: no units, the source is </s> alone */
    TokenList units = {0};
    ck_assert(nmt_units(&t.nm, "", false, &units, &err) == 0);
    ck_assert_uint_eq(units.count, 0);
    ck_assert(encode_source(&t.nm, "   ", &ids, &n, &unknown, &err) == 0);
    ck_assert_int_eq(n, 1);
    free(ids);
    char *empty = decode_target(&t.nm, NULL, 0, &err);
    ck_assert_str_eq(empty, "");
    free(empty);

    /* a 20,000-character word: many pieces, exact round trip, and the translator refuses it
     * by its pieces (the memory of a search grows with them) */
    size_t len = 20000;
    char *word = malloc(len + 1);
    ck_assert_ptr_nonnull(word);
    size_t filled = 0;
    for (; filled + 9 < len; filled += 9) memcpy(word + filled, "chatonsé", 9);
    word[filled] = '\0';
    char *back = units_round_trip(&t.nm, word, true);
    ck_assert_str_eq(back, word);
    free(back);
    ck_assert(nmt_units(&t.nm, word, false, &units, &err) == 0);
    ck_assert_uint_gt(units.count, NMT_MAX_TOKENS);
    token_list_free(&units);
    Translator tr;
    SearchOptions opt = {.beam = 1, .nbest = 1, .len_norm = 1};
    ck_assert(translator_init(&tr, &t.nm, 1, &opt, &err) == 0);
    TranslatedText out;
    ck_assert(translator_run(&tr, (const char *const[]){word}, 1, &out, &err) == 0);
    ck_assert(out.refused);
    ck_assert_ptr_nonnull(strstr(out.error.msg, "more than the 250"));
    translated_free(&out, 1);
    translator_free(&tr);
    free(word);
    toy_model_free(&t);
}
END_TEST

START_TEST(test_checkpoint_keeps_merges) {
    ToyModel t;
    toy_model(&t, "bpe", 100);
    Scratch s;
    scratch_make(&s);
    char path[512];
    scratch_path(&s, "bpe.ckpt", path, sizeof path);
    Error err = {{0}};
    ck_assert_msg(checkpoint_save(path, &t.nm, NULL, &err) == 0, "%s", err.msg);
    NmtModel back;
    ck_assert_msg(checkpoint_load(path, &back, NULL, NULL, &err) == 0, "%s", err.msg);
    ck_assert(back.subwords && !back.lowercase);
    expect_same_bpe(&t.nm.src_bpe, &back.src_bpe);
    expect_same_bpe(&t.nm.tgt_bpe, &back.tgt_bpe);
    char *a = units_round_trip(&back, "Unseen words: Zorblaxian cats!", false);
    ck_assert_str_eq(a, "Unseen words: Zorblaxian cats!");
    free(a);
    nmt_model_free(&back);
    /* the current version, with the subwords flag */
    size_t len;
    unsigned char *bytes = slurp_file(path, &len);
    ck_assert_int_eq(bytes[8], 3);
    ck_assert_int_eq(bytes[48] & 4, 4);
    free(bytes);
    toy_model_free(&t);
    toy_model(&t, "none", 100);
    ck_assert_msg(checkpoint_save(path, &t.nm, NULL, &err) == 0, "%s", err.msg);
    bytes = slurp_file(path, &len);
    ck_assert_int_eq(bytes[8], 3); /* the same version: the flag alone says "no subwords" */
    ck_assert_int_eq(bytes[48] & 4, 0);
    free(bytes);
    ck_assert_msg(checkpoint_load(path, &back, NULL, NULL, &err) == 0, "%s", err.msg);
    ck_assert(!back.subwords);
    nmt_model_free(&back);
    toy_model_free(&t);
    scratch_free(&s);
}
END_TEST

/* ---- tokenized once ------------------------------------------------------------------------ */

/* The tokenizer's calls, counted: the test binary is linked with --wrap=tokenize and
 * --wrap=lossless_split (Makefile), so a call from any of the library's objects comes here
 * first; the programs' objects are the same, without the wrappers. Apple's linker has no
 * --wrap: there the Makefile defines NMT_NO_LINK_WRAP, and the counting test is skipped. */
#ifndef NMT_NO_LINK_WRAP
static int tokenizer_calls;
int __real_tokenize(const char *text, bool lowercase, TokenList *out, Error *err);
int __wrap_tokenize(const char *text, bool lowercase, TokenList *out, Error *err);
int __real_lossless_split(const char *text, bool lowercase, bool across_spaces, TokenList *out,
                          Error *err);
int __wrap_lossless_split(const char *text, bool lowercase, bool across_spaces, TokenList *out,
                          Error *err);

int __wrap_tokenize(const char *text, bool lowercase, TokenList *out, Error *err) {
    tokenizer_calls++;
    return __real_tokenize(text, lowercase, out, err);
}

int __wrap_lossless_split(const char *text, bool lowercase, bool across_spaces, TokenList *out,
                          Error *err) {
    tokenizer_calls++;
    return __real_lossless_split(text, lowercase, across_spaces, out, err);
}
#endif

/* A sentence is checked and tokenized once on its way through bin/translate and bin/align
 * (issue #41): every stage after the translator (the warnings about unknown words, decoding
 * with <unk> replacement, the alignment, its word links, --explain's forced steps) takes what
 * the translator made of it. The walk here is the programs' own, through the library; the
 * programs themselves call no tokenizer (test_programs_call_no_tokenizer). */
START_TEST(test_a_sentence_is_tokenized_once) {
    static const char *const kinds[] = {"none", "bpe", "lossless"};
#ifdef NMT_NO_LINK_WRAP
    char test[96];
    snprintf(test, sizeof test, "test_a_sentence_is_tokenized_once (%s)", kinds[_i]);
    test_skip(test, "counts the tokenizer's calls through ld --wrap, which this linker lacks");
#else
    const char *texts[] = {"I love the black cat", "Zorblax loves 50% of cats", "我爱猫"};
    enum { N = 3 };
    ToyModel t;
    toy_model(&t, kinds[_i], 100);
    Translator tr;
    SearchOptions opt = {.beam = 2, .nbest = 1, .len_norm = 1.0, .max_len = 20};
    Error err = {{0}};
    ck_assert_msg(translator_init(&tr, &t.nm, N, &opt, &err) == 0, "%s", err.msg);
    ForcedDecoder fd;
    forced_decoder_init(&fd, &t.nm);
    TranslatedText out[N];
    tokenizer_calls = 0;
    ck_assert_msg(translator_run(&tr, texts, N, out, &err) == 0, "%s", err.msg);
    for (int k = 0; k < N; k++) {
        ck_assert_msg(!out[k].refused, "%s", out[k].error.msg);
        ck_assert_int_gt(out[k].best.count, 0);
        const Hypothesis *h = &out[k].best.hyps[0];
        char list[512];
        (void)source_unfamiliar(&out[k].source);
        (void)source_unknown_words(&t.nm, &out[k].source, list, sizeof list);
        char word[64];
        source_unit_word(&t.nm, &out[k].source, 0, word, sizeof word);
        char *text = decode_hypothesis(&t.nm, &out[k].source, h, &err);
        ck_assert_msg(text, "%s", err.msg);
        free(text);
        Alignment a, forced;
        ck_assert_msg(alignment_from_hypothesis(&a, &t.nm, &out[k].source, h, &err) == 0, "%s",
                      err.msg);
        WordLink *links;
        int n_links;
        ck_assert_msg(alignment_word_links(&a, &links, &n_links, &err) == 0, "%s", err.msg);
        free(links);
        ck_assert_msg(force_align_ids(&fd, &out[k].source, h->tokens, h->len, h->complete, &forced,
                                      NULL, &err) == 0,
                      "%s", err.msg);
        alignment_free(&a);
        alignment_free(&forced);
    }
    ck_assert_msg(tokenizer_calls == N, "%s: %d sentences were tokenized %d times", kinds[_i], N,
                  tokenizer_calls);
    translated_free(out, N);
    forced_decoder_free(&fd);
    translator_free(&tr);
    toy_model_free(&t);
#endif
}
END_TEST

/* The programs hand sentences to the translator and take what it made of them: their source
 * calls no tokenizer. */
START_TEST(test_programs_call_no_tokenizer) {
    static const char *const programs[] = {"../tools/translate.c", "../tools/align.c"};
    static const char *const calls[] = {"tokenize(",      "nmt_units(",     "nmt_segments(",
                                        "source_encode(", "encode_source(", "lossless_split("};
    for (size_t p = 0; p < sizeof programs / sizeof programs[0]; p++) {
        size_t len;
        char *source = (char *)slurp_file(programs[p], &len);
        ck_assert_ptr_nonnull(source);
        for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++)
            ck_assert_msg(!strstr(source, calls[c]), "%s calls %s", programs[p], calls[c]);
        free(source);
    }
}
END_TEST

/* The translator chooses each search's threads (ThreadChoice: fewer while other programs keep
 * the processors busy), up to the caller's count, which it leaves as it was: a translation is
 * the same bits whatever it chose, here against the caller's one thread, over chunks enough for
 * the machine's load to be measured. */
START_TEST(test_translations_do_not_depend_on_the_threads) {
    ToyModel t; /* sizes enough for two threads and for two of the search's blocks */
    toy_model_sized(&t, "none", 0,
                    "emb_size = 32\nenc_hidden = 64\ndec_hidden = 64\natt_size = 136\n"
                    "readout_size = 64\n");
    Error err = {{0}};
    enum { CHUNK = 32, CHUNKS = 12, RUNS = 2 };
    ck_assert_uint_ge(t.corpus.count, CHUNK * CHUNKS);
    SearchOptions opt = {.beam = 3, .nbest = 3, .len_norm = 1.0, .max_len = 12};
    TranslatedText out[RUNS][CHUNKS][CHUNK];
    int saved = omp_get_max_threads();
    for (int run = 0; run < RUNS; run++) {
        int callers = run == 0 ? 1 : 2;
        omp_set_num_threads(callers);
        Translator tr;
        ck_assert_msg(translator_init(&tr, &t.nm, CHUNK, &opt, &err) == 0, "%s", err.msg);
        for (int c = 0; c < CHUNKS; c++) {
            const char *const *texts = (const char *const *)t.corpus.src + c * CHUNK;
            ck_assert_msg(translator_run(&tr, texts, CHUNK, out[run][c], &err) == 0, "%s", err.msg);
            ck_assert_int_eq(omp_get_max_threads(), callers);
        }
        translator_free(&tr);
    }
    omp_set_num_threads(saved);
    for (int c = 0; c < CHUNKS; c++)
        for (int k = 0; k < CHUNK; k++) {
            const Translation *a = &out[0][c][k].best, *b = &out[1][c][k].best;
            ck_assert_int_eq(a->count, b->count);
            for (int h = 0; h < a->count; h++) {
                const Hypothesis *x = &a->hyps[h], *y = &b->hyps[h];
                ck_assert_int_eq(x->len, y->len);
                ck_assert_msg(
                    x->score == y->score &&
                        !memcmp(x->tokens, y->tokens, sizeof(int) * (size_t)x->len) &&
                        !memcmp(x->alpha, y->alpha, sizeof(real) * (size_t)x->rows * x->src_len),
                    "sentence %d, hypothesis %d differs", c * CHUNK + k + 1, h);
            }
        }
    for (int run = 0; run < RUNS; run++)
        for (int c = 0; c < CHUNKS; c++) translated_free(out[run][c], CHUNK);
    toy_model_free(&t);
}
END_TEST

/* The unknown-word warning names words as the user wrote them (issue #45): never a BPE piece
 * such as '%@@' or '%', nor a lower-cased token; a lossless model names the word its byte
 * pieces spell. */
START_TEST(test_unknown_words_named_as_written) {
    static const struct {
        const char *kind, *text, *named, *never;
        bool lowercase;
    } cases[] = {
        {"bpe", "The cat costs 50% now", "'50%'", "'%", false},
        {"none", "I love the ZORBLAX", "'ZORBLAX'", "'zorblax'", true},
        {"bpe", "I love the Zorblax’s cat", "'Zorblax’s'", "@@", true},
        {"lossless", "the black cat 猫", "'猫'", "<0x", false},
        {"lossless", "The BLACK Zorblax’s 😀cat", "'😀cat'", "zorblax", true},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ToyModel t;
        toy_model(&t, cases[c].kind, 100);
        t.nm.lowercase = cases[c].lowercase;
        SourceText src;
        Error err = {{0}};
        ck_assert_msg(source_encode(&t.nm, cases[c].text, &src, &err) == 0, "%s", err.msg);
        char list[512];
        ck_assert_int_ge(source_unknown_words(&t.nm, &src, list, sizeof list), 1);
        ck_assert_msg(strstr(list, cases[c].named) && !strstr(list, cases[c].never),
                      "%s: '%s' names %s", cases[c].kind, cases[c].text, list);
        ck_assert(!source_unfamiliar(&src));
        source_free(&src);
        toy_model_free(&t);
    }
}
END_TEST

/* A text the model does not know is flagged (issue #45): every word unknown, or, lossless,
 * most of it in bytes; on the C API's result too. */
START_TEST(test_unfamiliar_text_is_flagged) {
    static const char *const kinds[] = {"none", "bpe", "lossless"};
    ToyModel t;
    toy_model(&t, kinds[_i], 100);
    Error err = {{0}};
    SourceText src;
    ck_assert_msg(source_encode(&t.nm, "我爱猫", &src, &err) == 0, "%s", err.msg);
    ck_assert(source_unfamiliar(&src));
    source_free(&src);
    ck_assert_msg(source_encode(&t.nm, "the black cat 猫", &src, &err) == 0, "%s", err.msg);
    ck_assert(!source_unfamiliar(&src));
    source_free(&src);
    Scratch s;
    scratch_make(&s);
    char path[512];
    scratch_path(&s, "model.ckpt", path, sizeof path);
    ck_assert_msg(checkpoint_save(path, &t.nm, NULL, &err) == 0, "%s", err.msg);
    nmt_error e;
    nmt_model *m = nmt_open(path, &e);
    ck_assert_msg(m, "%s", e.message);
    const char *texts[] = {"我爱猫", "the black cat"};
    nmt_translation out[2];
    nmt_options opt = {.beam = 1, .max_len = 10};
    ck_assert_msg(nmt_translate(m, texts, 2, &opt, out, &e) == 0, "%s", e.message);
    ck_assert_int_eq(out[0].unfamiliar, 1);
    ck_assert_int_eq(out[1].unfamiliar, 0);
    nmt_translation_free(out, 2);
    nmt_close(m);
    scratch_free(&s);
    toy_model_free(&t);
}
END_TEST

/* ---- lossless subwords (data/lossless.h) ---------------------------------------------------- */

/* Every line of the corpus of text as written (French spacing, typographic quotes, NBSP and
 * narrow NBSP, tabs, spaces at either end and in runs, CJK, emoji, combining marks, the marker
 * itself, text spelled like a byte piece or a special) comes back byte for byte through a
 * lossless model's units, on both sides, though the toy corpus it learned from holds almost
 * none of these characters; and no unit is <unk>. */
START_TEST(test_lossless_round_trips_text_as_written) {
    ToyModel t;
    toy_model(&t, "lossless", 200);
    ck_assert(t.nm.subwords && t.nm.lossless && !t.nm.across_spaces);
    t.nm.across_spaces = _i; /* segments not cut at spaces lose nothing either */
    FILE *in = fopen("text/as-written.txt", "r");
    ck_assert_ptr_nonnull(in);
    char *line = NULL;
    size_t cap = 0;
    int lines = 0;
    for (ssize_t got; (got = getline(&line, &cap, in)) > 0; lines++) {
        if (line[got - 1] == '\n') line[got - 1] = '\0';
        for (int target = 0; target < 2; target++) {
            char *back = units_round_trip(&t.nm, line, target);
            ck_assert_msg(strcmp(back, line) == 0, "line %d: '%s' came back as '%s'", lines + 1,
                          line, back);
            free(back);
        }
        int *ids = NULL, n = 0, unknown = -1;
        Error err = {{0}};
        ck_assert_msg(encode_source(&t.nm, line, &ids, &n, &unknown, &err) == 0, "line %d: %s",
                      lines + 1, err.msg);
        ck_assert_int_eq(unknown, 0);
        for (int i = 0; i < n; i++) ck_assert_int_ne(ids[i], TOK_UNK);
        free(ids);
    }
    free(line);
    fclose(in);
    ck_assert_int_ge(lines, 25);
    toy_model_free(&t);
}
END_TEST

/* Pieces start at a marker and never hold one inside; a character never seen is its UTF-8
 * bytes; lower-casing is the one change, and only when asked for. */
START_TEST(test_lossless_pieces_and_bytes) {
    ToyModel t;
    toy_model(&t, "lossless", 200);
    Error err = {{0}};
    TokenList units = {0};
    ck_assert_msg(nmt_units(&t.nm, "the black cats  猫", false, &units, &err) == 0, "%s", err.msg);
    for (size_t i = 0; i < units.count; i++) {
        const char *inside = strstr(units.tokens[i] + 1, LOSSLESS_MARKER);
        ck_assert_msg(!inside, "piece '%s' holds the marker inside", units.tokens[i]);
    }
    /* 猫 (E7 8C AB) is not in the English toy: three byte pieces, the last units */
    ck_assert_uint_ge(units.count, 4);
    ck_assert_str_eq(units.tokens[units.count - 3], "<0xE7>");
    ck_assert_str_eq(units.tokens[units.count - 2], "<0x8C>");
    ck_assert_str_eq(units.tokens[units.count - 1], "<0xAB>");
    ck_assert_int_eq(vocab_id(&t.nm.src_vocab, "<0xE7>"), TOK_SPECIALS + 0xE7);
    token_list_free(&units);
    t.nm.lowercase = true;
    char *back = units_round_trip(&t.nm, "Été À l’Île  ?", true);
    ck_assert_str_eq(back, "été à l’île  ?");
    free(back);
    toy_model_free(&t);
}
END_TEST

/* What a model writes is any sequence of pieces: bytes that are not UTF-8, and control
 * characters no input line holds, are dropped; specials are no text; the added marker goes. */
START_TEST(test_lossless_join_writes_valid_text) {
    Error err = {{0}};
    const char *pieces[] = {"▁a",     "<0xE7>", "<0x8C>", "▁b",     "<0xFF>", "<0x0A>",
                            "<0x00>", "<unk>",  "<0x09>", "<0xE7>", "<0x8C>", "<0xAB>",
                            "<0x80>", "▁",      "<0x1B>", "c"};
    char *text = lossless_join(pieces, sizeof pieces / sizeof pieces[0], &err);
    ck_assert_ptr_nonnull(text);
    ck_assert_str_eq(text, "a b\t猫 c");
    free(text);
    /* a first piece without the marker keeps its text */
    const char *bare[] = {"<0x41>", "▁b"};
    text = lossless_join(bare, 2, &err);
    ck_assert_str_eq(text, "A b");
    free(text);
    ck_assert_int_eq(lossless_piece_byte("<0x7f>"), -1); /* upper-case hex only */
    ck_assert_int_eq(lossless_piece_byte("<0x7F>"), 0x7F);
    ck_assert_int_eq(lossless_piece_byte("<0x7F"), -1);
}
END_TEST

/* A lossless model, saved and loaded, keeps its flag, merges and vocabularies, and a line with
 * characters it never saw is translated without <unk> into valid UTF-8 (the model is untrained:
 * its output is any sequence of pieces, byte pieces included). */
START_TEST(test_lossless_checkpoint_and_translation) {
    ToyModel t;
    toy_model(&t, "lossless", 200);
    Scratch s;
    scratch_make(&s);
    char path[512];
    scratch_path(&s, "lossless.ckpt", path, sizeof path);
    Error err = {{0}};
    ck_assert_msg(checkpoint_save(path, &t.nm, NULL, &err) == 0, "%s", err.msg);
    NmtModel back;
    ck_assert_msg(checkpoint_load(path, &back, NULL, NULL, &err) == 0, "%s", err.msg);
    ck_assert(back.subwords && back.lossless && !back.across_spaces);
    expect_same_bpe(&t.nm.src_bpe, &back.src_bpe);
    expect_same_bpe(&t.nm.tgt_bpe, &back.tgt_bpe);
    ck_assert_uint_eq(back.src_vocab.size, t.nm.src_vocab.size);
    size_t len;
    unsigned char *bytes = slurp_file(path, &len);
    ck_assert_int_eq(bytes[48] & 4, 4);
    ck_assert_int_eq(bytes[49] & 1, 1); /* flag bit 8 */
    free(bytes);
    const char *line = "Je t’aime 😀 — 我爱猫 !";
    char *again = units_round_trip(&back, line, false);
    ck_assert_str_eq(again, line);
    free(again);
    Translator tr;
    SearchOptions opt = {.beam = 2, .nbest = 1, .len_norm = 1.0, .max_len = 40};
    ck_assert_msg(translator_init(&tr, &back, 1, &opt, &err) == 0, "%s", err.msg);
    TranslatedText out;
    ck_assert_msg(translator_run(&tr, &line, 1, &out, &err) == 0, "%s", err.msg);
    ck_assert_msg(!out.refused, "%s", out.error.msg);
    ck_assert_int_eq(out.unknown, 0);
    ck_assert_int_gt(out.best.count, 0);
    char *text = decode_hypothesis(&back, &out.source, &out.best.hyps[0], &err);
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(utf8_validate(text, strlen(text), &err) == 0, "%s", err.msg);
    ck_assert(!strstr(text, "<unk>"));
    free(text);
    translated_free(&out, 1);
    translator_free(&tr);
    /* a lossless vocabulary without its byte pieces is refused, naming the id */
    free(back.src_vocab.tokens[TOK_SPECIALS + 7]);
    back.src_vocab.tokens[TOK_SPECIALS + 7] = strdup("zzz");
    ck_assert(lossless_vocab_check(&back.src_vocab, &err) != 0);
    assert_contains(err.msg, "id 11");
    nmt_model_free(&back);
    toy_model_free(&t);
    scratch_free(&s);
}
END_TEST

/* ---- <unk> replacement and case ------------------------------------------------------------ */

/* A word-level model with vocabularies only (no parameters): enough to decode. */
static void vocab_model(NmtModel *nm, bool subwords) {
    memset(nm, 0, sizeof *nm);
    TokenList tgt = {0};
    Error err = {{0}};
    ck_assert(tokenize("Le chat noir dort . Paris", false, &tgt, &err) == 0);
    ck_assert(vocab_build(&tgt, 1, 1, SIZE_MAX, &nm->tgt_vocab, &err) == 0);
    ck_assert(vocab_build(&tgt, 1, 1, SIZE_MAX, &nm->src_vocab, &err) == 0);
    token_list_free(&tgt);
    nm->subwords = subwords; /* with no merges, pieces are characters */
}

START_TEST(test_unk_replace_by_hand) {
    /* source "the Zorblax sleeps" + </s>; rows: le, <unk>, <unk>, dort */
    const char *src[] = {"the", "Zorblax", "sleeps"};
    const real alpha[] = {
        0.7f, 0.1f, 0.1f, 0.1f, /* le */
        0.1f, 0.3f, 0.0f, 0.6f, /* <unk>: </s> is strongest but never copied */
        0.2f, 0.2f, 0.5f, 0.1f, /* <unk> */
        0.0f, 0.0f, 1.0f, 0.0f, /* dort */
    };
    const int ids[] = {5, TOK_UNK, TOK_UNK, 6};
    const char *tokens[] = {"Le", "<unk>", "<unk>", "dort"};
    unk_replace(tokens, ids, 4, alpha, 4, src);
    ck_assert_str_eq(tokens[0], "Le");
    ck_assert_str_eq(tokens[1], "Zorblax");
    ck_assert_str_eq(tokens[2], "sleeps");
    ck_assert_str_eq(tokens[3], "dort");
    /* a tie goes to the first column */
    const real tie[] = {0.4f, 0.4f, 0.2f};
    const char *one[] = {"<unk>"};
    unk_replace(one, (const int[]){TOK_UNK}, 1, tie, 3, src);
    ck_assert_str_eq(one[0], "the");
}
END_TEST

START_TEST(test_decode_hypothesis_replaces_unk) {
    NmtModel nm;
    vocab_model(&nm, false);
    int le = vocab_id(&nm.tgt_vocab, "Le"), dort = vocab_id(&nm.tgt_vocab, "dort");
    ck_assert(le != TOK_UNK && dort != TOK_UNK);
    int tokens[] = {le, TOK_UNK, dort};
    real alpha[] = {
        0.8f, 0.1f, 0.1f, 0.0f, /* Le */
        0.1f, 0.2f, 0.1f, 0.6f, /* <unk> */
        0.0f, 0.1f, 0.9f, 0.0f, /* dort */
        0.0f, 0.0f, 0.0f, 1.0f, /* </s> */
    };
    Hypothesis h = {
        .tokens = tokens, .len = 3, .complete = 1, .rows = 4, .src_len = 4, .alpha = alpha};
    Error err = {{0}};
    SourceText src, short_src;
    ck_assert_msg(source_encode(&nm, "The Zorblax sleeps", &src, &err) == 0, "%s", err.msg);
    char *text = decode_hypothesis(&nm, &src, &h, &err);
    ck_assert_msg(text != NULL, "%s", err.msg);
    ck_assert_str_eq(text, "Le Zorblax dort");
    free(text);
    nm.keep_unk = true;
    text = decode_hypothesis(&nm, &src, &h, &err);
    ck_assert_str_eq(text, "Le <unk> dort");
    free(text);
    /* a model with subwords keeps <unk>: its units are not words */
    nm.keep_unk = false;
    nm.subwords = true;
    text = decode_hypothesis(&nm, &src, &h, &err);
    ck_assert_str_eq(text, "Le <unk> dort");
    free(text);
    /* a hypothesis that does not fit the sentence is an error, not a guess */
    nm.subwords = false;
    ck_assert_msg(source_encode(&nm, "The Zorblax", &short_src, &err) == 0, "%s", err.msg);
    ck_assert_ptr_null(decode_hypothesis(&nm, &short_src, &h, &err));
    source_free(&src);
    source_free(&short_src);
    nmt_model_free(&nm);
}
END_TEST

START_TEST(test_cased_units_stay_cased) {
    NmtModel nm;
    vocab_model(&nm, false);
    Error err = {{0}};
    TokenList units = {0};
    ck_assert(nmt_units(&nm, "Le Chat NOIR", true, &units, &err) == 0);
    ck_assert_str_eq(units.tokens[1], "Chat");
    ck_assert_str_eq(units.tokens[2], "NOIR");
    token_list_free(&units);
    int ids[] = {vocab_id(&nm.tgt_vocab, "Paris"), vocab_id(&nm.tgt_vocab, "dort"),
                 vocab_id(&nm.tgt_vocab, ".")};
    char *text = decode_target(&nm, ids, 3, &err);
    ck_assert_str_eq(text, "Paris dort.");
    free(text);
    /* with subwords (characters here) too */
    nm.subwords = true;
    char *back = units_round_trip(&nm, "Le Chat NOIR dort à Paris.", true);
    ck_assert_str_eq(back, "Le Chat NOIR dort à Paris.");
    free(back);
    nmt_model_free(&nm);
}
END_TEST

START_TEST(test_word_map_of_pieces) {
    WordMap map;
    Error err = {{0}};
    /* "J'aime les chats." is 5 tokens (j' aime les chats .) in 3 words */
    const char *tokens[] = {"J'", "aime", "les", "chats", "."};
    ck_assert(word_map_from_text(&map, "J'aime les chats.", tokens, 5, &err) == 0);
    ck_assert_int_eq(map.n_tokens, 5);
    const char *pieces[] = {"J'", "ai@@", "me", "les", "ch@@", "at@@", "s", "."};
    ck_assert_msg(word_map_expand_pieces(&map, pieces, 8, &err) == 0, "%s", err.msg);
    const int want[] = {0, 0, 0, 1, 2, 2, 2, 2};
    ck_assert_int_eq(map.n_tokens, 8);
    ck_assert_int_eq(map.n_words, 3);
    for (int k = 0; k < 8; k++) ck_assert_int_eq(map.word_of[k], want[k]);
    /* pieces that join into another number of tokens are refused, the map left as it was */
    ck_assert(word_map_expand_pieces(&map, pieces, 3, &err) != 0);
    ck_assert_int_eq(map.n_tokens, 8);
    word_map_free(&map);

    /* a target word's row is the mean of its pieces' rows, a source word's weight the sum */
    WordMap src = {.n_tokens = 3, .n_words = 2, .word_of = (int[]){0, 1, 1}};
    WordMap tgt = {.n_tokens = 3, .n_words = 2, .word_of = (int[]){0, 0, 1}};
    const real alpha[] = {
        0.5f, 0.3f, 0.2f, 0.0f, /* target word 0, piece 1: source words 0.5 and 0.5 */
        0.3f, 0.1f, 0.1f, 0.5f, /* target word 0, piece 2: 0.3 and 0.2 */
        0.1f, 0.4f, 0.4f, 0.1f, /* target word 1: 0.1 and 0.8 */
    };
    WordLink *links;
    int n;
    ck_assert(word_links(alpha, 3, 4, &src, &tgt, &links, &n, &err) == 0);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(links[0].src, 0); /* word 0: (0.5+0.3)/2 = 0.4 beats (0.5+0.2)/2 = 0.35 */
    ck_assert_int_eq(links[0].tgt, 0);
    ck_assert_int_eq(links[1].src, 1);
    ck_assert_int_eq(links[1].tgt, 1);
    free(links);
}
END_TEST

/* ---- the programs on a BPE model ----------------------------------------------------------- */

/* Trains the cased BPE model into s: run/best.ckpt, run/last.ckpt. */
static void train_bpe_model(const Scratch *s) {
    scratch_write_text(s, "train.tsv", CASED_PAIRS);
    scratch_write_text(s, "dev.tsv", CASED_PAIRS);
    scratch_write_text(s, "bpe.ini", BPE_CONFIG);
    char config[512];
    scratch_path(s, "bpe.ini", config, sizeof config);
    RunResult r;
    run_program(&r, s, (const char *const[]){"../bin/train", config, NULL}, NULL, 60, NULL);
    ck_assert_msg(r.status == 0, "training the BPE model failed (%d): %s", r.status, r.err);
}

static void expect_success(const Scratch *s, const char *const *argv, RunResult *r) {
    run_program(r, s, argv, NULL, 60, NULL);
    ck_assert_msg(!r->timed_out && r->status == 0, "%s %s failed (%d): %s", argv[0], argv[1],
                  r->status, r->err);
}

START_TEST(test_programs_run_on_a_bpe_model) {
    Scratch s;
    scratch_make(&s);
    train_bpe_model(&s);
    char model[512], pairs[512], gold[512], out[512];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    scratch_path(&s, "dev.tsv", pairs, sizeof pairs);
    scratch_path(&s, "gold.align", gold, sizeof gold);
    scratch_write_text(&s, "gold.align",
                       "0-0 1-1 2-2\n0-0 1-0 2-1 3-2\n0-0 2-1 1-2\n"
                       "0-0 1-1 2-2 3-3\n0-0 1-1 2-2 3-3 4-4\n0-0 1-1 2-2 2-3\n");
    NmtModel nm;
    Error err = {{0}};
    ck_assert_msg(checkpoint_load(model, &nm, NULL, NULL, &err) == 0, "%s", err.msg);
    ck_assert(nm.subwords && !nm.lowercase);
    nmt_model_free(&nm);

    RunResult r;
    expect_success(&s,
                   (const char *const[]){"../bin/translate", "-m", model, "Paris loves cats",
                                         "Zorblax ŋ", NULL},
                   &r);
    expect_success(&s,
                   (const char *const[]){"../bin/translate", "-m", model, "--beam", "3", "--nbest",
                                         "2", "--keep-unk", "I love cats.", NULL},
                   &r);
    /* the default beam (NMT_DEFAULT_BEAM) has room for two best; greedy search would refuse */
    expect_success(&s,
                   (const char *const[]){"../bin/translate", "-m", model, "--nbest", "2",
                                         "I love cats.", NULL},
                   &r);
    int lines = 0;
    for (const char *p = r.out; *p; p++) lines += *p == '\n';
    ck_assert_msg(lines == 2 && strncmp(r.out, "0 ||| ", 6) == 0 && strstr(r.out, "\n0 ||| "), "%s",
                  r.out);
    const char *formats[] = {"tsv", "json", "text", "marian", "pharaoh"};
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        expect_success(&s,
                       (const char *const[]){"../bin/align", "-m", model, "--format", formats[f],
                                             "Paris loves cats", NULL},
                       &r);
        /* forced, so the pieces shown are known: "cats" is cut ("ca@@ ts" or the like) unless
         * the merges made it whole; the reference's pieces always come back joined */
        expect_success(&s,
                       (const char *const[]){"../bin/align", "-m", model, "--format", formats[f],
                                             "--ref", "Paris aime les chats", "Paris loves cats",
                                             NULL},
                       &r);
    }
    expect_success(&s,
                   (const char *const[]){"../bin/align", "-m", model, "--format", "tsv", "--ref",
                                         "Zyx", "Qwv", NULL},
                   &r);
    assert_contains(r.out, "@@"); /* unseen words are shown as their pieces */
    const char *files[] = {"a.npy", "a.svg"};
    for (size_t f = 0; f < 2; f++) {
        scratch_path(&s, files[f], out, sizeof out);
        expect_success(
            &s,
            (const char *const[]){"../bin/align", "-m", model, "-o", out, "Paris loves cats", NULL},
            &r);
    }
    expect_success(
        &s,
        (const char *const[]){"../bin/align", "-m", model, "--explain", "Paris loves cats", NULL},
        &r);
    assert_contains(r.out, "Source tokens:");
    expect_success(&s,
                   (const char *const[]){"../bin/align", "-m", model, "--eval-gold", gold,
                                         "--pairs", pairs, NULL},
                   &r);
    assert_contains(r.out, "AER");
    expect_success(&s,
                   (const char *const[]){"../bin/evaluate", "-m", model, "--test", pairs, "--show",
                                         "6", "--lowercase-bleu", NULL},
                   &r);
    /* a cased model is scored against cased references */
    assert_contains(r.out, "REF J'aime les chats.");
    assert_contains(r.out, "case:mixed");
    assert_contains(r.out, "lowercased: BLEU = ");
    scratch_free(&s);
}
END_TEST

START_TEST(test_resume_keeps_merges) {
    Scratch s;
    scratch_make(&s);
    train_bpe_model(&s);
    char config[512], last[512];
    scratch_path(&s, "bpe.ini", config, sizeof config);
    scratch_path(&s, "run/last.ckpt", last, sizeof last);
    NmtModel before, after;
    Error err = {{0}};
    ck_assert_msg(checkpoint_load(last, &before, NULL, NULL, &err) == 0, "%s", err.msg);
    RunResult r;
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--resume", "--set",
                                      "train.max_steps=6", "--set", "data.src_merges=2", NULL},
                NULL, 60, NULL);
    ck_assert_msg(r.status == 0, "resuming failed (%d): %s", r.status, r.err);
    ck_assert_msg(checkpoint_load(last, &after, NULL, NULL, &err) == 0, "%s", err.msg);
    expect_same_bpe(&before.src_bpe, &after.src_bpe);
    expect_same_bpe(&before.tgt_bpe, &after.tgt_bpe);
    nmt_model_free(&before);
    nmt_model_free(&after);
    /* a config without subwords cannot resume a model with them */
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--resume", "--set",
                                      "train.max_steps=8", "--set", "data.subwords=none", NULL},
                NULL, 60, NULL);
    assert_one_line_error(&r, "train", 1, (const char *const[]){"subwords", NULL});
    scratch_free(&s);
}
END_TEST

/* A byte of the source BPE table changed (and the checksum made to match again, so the table's
 * own checks are what catches it): one line naming the file and the table. */
START_TEST(test_damaged_bpe_table_is_an_error) {
    Scratch s;
    scratch_make(&s);
    train_bpe_model(&s);
    char model[512], bad[512], pairs[512];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    scratch_path(&s, "dev.tsv", pairs, sizeof pairs);
    scratch_path(&s, "bad.ckpt", bad, sizeof bad);
    size_t len;
    unsigned char *bytes = slurp_file(model, &len);
    size_t pos = 64; /* the header */
    for (int v = 0; v < 2; v++) {
        uint64_t n;
        memcpy(&n, bytes + pos, 8);
        pos += 8 + n;
    }
    uint32_t merges;
    memcpy(&merges, bytes + pos + 8, 4);
    ck_assert_uint_gt(merges, 0);
    /* variant 0: the first merge's left symbol loses its "@@" (its length shrinks by 2 would
     * misalign; a letter replaces the last '@' instead) */
    uint32_t left_len;
    memcpy(&left_len, bytes + pos + 12, 4);
    ck_assert_uint_ge(left_len, 3);
    bytes[pos + 16 + left_len - 1] = 'x';
    uint64_t sum = checkpoint_checksum(bytes, len - 8);
    memcpy(bytes + len - 8, &sum, 8);
    scratch_write(&s, "bad.ckpt", bytes, len);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/translate", "-m", bad, "Paris", NULL}, NULL,
                60, NULL);
    assert_one_line_error(&r, "translate", 1,
                          (const char *const[]){bad, "source BPE merges", NULL});
    /* variant 1: a merge count larger than the section */
    free(bytes);
    bytes = slurp_file(model, &len);
    uint32_t huge = 1u << 20;
    memcpy(bytes + pos + 8, &huge, 4);
    sum = checkpoint_checksum(bytes, len - 8);
    memcpy(bytes + len - 8, &sum, 8);
    scratch_write(&s, "bad.ckpt", bytes, len);
    run_program(&r, &s, (const char *const[]){"../bin/evaluate", "-m", bad, "--test", pairs, NULL},
                NULL, 60, NULL);
    assert_one_line_error(&r, "evaluate", 1, (const char *const[]){bad, "source BPE merges", NULL});
    free(bytes);
    scratch_free(&s);
}
END_TEST

/* --keep-unk, end to end on a word-level model whose vocabulary misses a word the source has:
 * the output's <unk> (if the tiny model emits one) becomes a source word by default. Only the
 * options' acceptance and the absence of <unk> by default can be asserted on an untrained
 * model. */
START_TEST(test_keep_unk_option) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char model[512], pairs[512];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    scratch_path(&s, "dev.tsv", pairs, sizeof pairs);
    RunResult r;
    expect_success(
        &s, (const char *const[]){"../bin/translate", "-m", model, "I love zorblax", NULL}, &r);
    ck_assert_ptr_null(strstr(r.out, "<unk>"));
    expect_success(&s,
                   (const char *const[]){"../bin/translate", "-m", model, "--keep-unk",
                                         "I love zorblax", NULL},
                   &r);
    expect_success(
        &s,
        (const char *const[]){"../bin/evaluate", "-m", model, "--test", pairs, "--keep-unk", NULL},
        &r);
    scratch_free(&s);
}
END_TEST

/* ---- hostile tables, vocabularies and corpora (issue #16) --------------------------------- */

/* A copy of the checkpoint bytes[0..len) with section `index` (0 source vocabulary, 1 target
 * vocabulary, 2 source BPE merges, 3 target BPE merges; each a u64 length and its bytes after
 * the 64-byte header) replaced by repl[0..repl_len) and the checksum forged to match. */
static unsigned char *with_section(const unsigned char *bytes, size_t len, int index,
                                   const void *repl, size_t repl_len, size_t *out_len) {
    size_t pos = 64;
    for (int k = 0; k < index; k++) {
        uint64_t n;
        memcpy(&n, bytes + pos, 8);
        pos += 8 + n;
    }
    uint64_t old;
    memcpy(&old, bytes + pos, 8);
    size_t rest = pos + 8 + old;
    *out_len = len - old + repl_len;
    unsigned char *out = malloc(*out_len);
    ck_assert_ptr_nonnull(out);
    memcpy(out, bytes, pos);
    uint64_t n = repl_len;
    memcpy(out + pos, &n, 8);
    memcpy(out + pos + 8, repl, repl_len);
    memcpy(out + pos + 8 + repl_len, bytes + rest, len - rest);
    uint64_t sum = checkpoint_checksum(out, *out_len - 8);
    memcpy(out + *out_len - 8, &sum, 8);
    return out;
}

/* A serialised merge table: count, then (u32 length, bytes) per symbol, from a string list. */
static size_t table_bytes(unsigned char *buf, uint32_t count, const char *const *symbols) {
    size_t at = 0;
    memcpy(buf, &count, 4);
    at += 4;
    for (int i = 0; symbols[i]; i++) {
        uint32_t n = (uint32_t)strlen(symbols[i]);
        memcpy(buf + at, &n, 4);
        memcpy(buf + at + 4, symbols[i], n);
        at += 4 + n;
    }
    return at;
}

/* The source merge table of a BPE checkpoint replaced by hand-made ones: each broken one is
 * one line from bin/translate naming the file, the section and the merge; a table without
 * merges, whose vocabulary then holds pieces the merges can never make, is accepted. */
START_TEST(test_forged_merge_tables_are_refused) {
    static const struct {
        uint32_t count;
        const char *symbols[9];
        const char *fragment; /* NULL: accepted */
    } cases[] = {
        /* truncated: three merges announced, two present (caught by the size); a table cut
         * inside its last merge */
        {3, {"P@@", "a@@", "Pa@@", "r"}, "3 merges cannot fit in 27 bytes"},
        {2, {"P@@", "a", "xxxxxxxxxxxx@@"}, "truncated at the length of merge 1's right symbol"},
        /* reordered: merge 0 uses the symbol merge 1 makes */
        {2, {"Pa@@", "r", "P@@", "a@@"}, "merge 0: the left symbol \"Pa@@\" does not exist"},
        /* symbols that do not exist */
        {1, {"P@@", "zzz"}, "merge 0: the right symbol \"zzz\" does not exist"},
        /* the same merge twice */
        {2, {"P@@", "a@@", "P@@", "a@@"}, "merge 1 repeats merge 0"},
        /* a right symbol ending in '@': no escaped token does */
        {1, {"P@@", "a@"}, "ends a word in '@'"},
        /* no merges at all: characters only */
        {0, {NULL}, NULL},
    };
    Scratch s;
    scratch_make(&s);
    train_bpe_model(&s);
    char model[512], bad[512];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    scratch_path(&s, "bad.ckpt", bad, sizeof bad);
    size_t len;
    unsigned char *bytes = slurp_file(model, &len);
    ck_assert_ptr_nonnull(bytes);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        unsigned char table[256];
        size_t table_len = table_bytes(table, cases[k].count, cases[k].symbols), forged_len;
        unsigned char *forged = with_section(bytes, len, 2, table, table_len, &forged_len);
        scratch_write(&s, "bad.ckpt", forged, forged_len);
        free(forged);
        RunResult r;
        run_program(&r, &s, (const char *const[]){"../bin/translate", "-m", bad, "Paris", NULL},
                    NULL, 60, NULL);
        if (cases[k].fragment)
            assert_one_line_error(
                &r, "translate", 1,
                (const char *const[]){bad, "source BPE merges", cases[k].fragment, NULL});
        else
            ck_assert_msg(r.status == 0 && r.out[0] != '\0', "case %zu: %d %s", k, r.status, r.err);
    }
    /* a section longer than its table */
    unsigned char table[64];
    size_t table_len = table_bytes(table, 1, (const char *const[]){"P@@", "a", NULL}), forged_len;
    memcpy(table + table_len, "junk", 4);
    unsigned char *forged = with_section(bytes, len, 2, table, table_len + 4, &forged_len);
    scratch_write(&s, "bad.ckpt", forged, forged_len);
    free(forged);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/translate", "-m", bad, "Paris", NULL}, NULL,
                60, NULL);
    assert_one_line_error(
        &r, "translate", 1,
        (const char *const[]){bad, "source BPE merges", "the merges end at byte", NULL});
    free(bytes);
    scratch_free(&s);
}
END_TEST

/* Where needle[0..n) first occurs in hay[0..len), NULL when nowhere (memmem is a GNU
 * extension). */
static unsigned char *find_bytes(unsigned char *hay, size_t len, const char *needle, size_t n) {
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(hay + i, needle, n) == 0) return hay + i;
    return NULL;
}

/* A vocabulary that disagrees with the subwords flag: under subwords every token is a piece,
 * and no piece is "@@" or ends in a single '@'. One such token in a forged vocabulary (the
 * checksum made to match) is refused by name; the word-level vocabulary of the same corpus
 * holds whole words, which are also pieces, so that mismatch cannot be told apart and is
 * not refused (documented in docs/reliability.md). */
START_TEST(test_vocabulary_that_disagrees_with_subwords_is_refused) {
    Scratch s;
    scratch_make(&s);
    train_bpe_model(&s);
    char model[512], bad[512];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    scratch_path(&s, "bad.ckpt", bad, sizeof bad);
    NmtModel nm;
    Error err = {{0}};
    ck_assert_msg(checkpoint_load(model, &nm, NULL, NULL, &err) == 0, "%s", err.msg);
    /* a final piece of two or more bytes, spelled nowhere else in the file */
    size_t len, id = 0;
    unsigned char *bytes = slurp_file(model, &len);
    ck_assert_ptr_nonnull(bytes);
    for (size_t i = 4; i < nm.tgt_vocab.size && !id; i++) {
        const char *t = nm.tgt_vocab.tokens[i];
        size_t n = strlen(t);
        if (n >= 3 && t[n - 1] != '@' && (unsigned char)t[n - 1] < 0x80) id = i;
    }
    ck_assert_uint_gt(id, 0);
    char token[64], message[160];
    snprintf(token, sizeof token, "%s", nm.tgt_vocab.tokens[id]);
    nmt_model_free(&nm);
    size_t pos = 64, n0;
    memcpy(&n0, bytes + pos, 8);
    pos += 8 + n0 + 8; /* the target vocabulary's bytes */
    unsigned char *at = find_bytes(bytes + pos, len - pos, token, strlen(token));
    ck_assert_ptr_nonnull(at);
    at[strlen(token) - 1] = '@';
    uint64_t sum = checkpoint_checksum(bytes, len - 8);
    memcpy(bytes + len - 8, &sum, 8);
    scratch_write(&s, "bad.ckpt", bytes, len);
    token[strlen(token) - 1] = '@';
    snprintf(message, sizeof message, "target vocabulary token %zu \"%s\" ends in '@'", id, token);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/translate", "-m", bad, "Paris", NULL}, NULL,
                60, NULL);
    assert_one_line_error(
        &r, "translate", 1,
        (const char *const[]){bad, message, "disagrees with the subwords flag", NULL});
    free(bytes);
    scratch_free(&s);
}
END_TEST

/* Corpora a BPE model is trained on, through bin/train with [data] subwords = bpe, each
 * then used by bin/translate: none may fail, hang or take long. */
START_TEST(test_hostile_corpora_train_with_subwords) {
    enum { BIG = 1 << 20 };
    char *big = malloc(BIG + 256);
    ck_assert_ptr_nonnull(big);
    strcpy(big, "the cat\tle chat\nthe dog\tle chien\nx");
    size_t at = strlen(big);
    uint32_t x = 7;
    for (int i = 0; i < BIG; i++, x = x * 1664525u + 1013904223u) big[at++] = 'a' + (x >> 24) % 26;
    strcpy(big + at, "\tz\n");
    static const struct {
        const char *name, *merges, *sentence;
    } cases[] = {
        {"one enormous word (1 MiB without a space)", "8000", "the cat"},
        {"only punctuation", "8000", "!!! ?"},
        {"one distinct character", "8000", "aaaa aa"},
        {"characters beyond the BMP", "8000", "😀😀 𝄞"},
        {"more merges than pairs", "1000000", "the cat"},
    };
    const char *corpora[] = {
        big,
        "!!! ?\t... !\n?? !\t!! ...\n... ?!\t?! ...\n",
        "aaaa\taaaa aa\naa aaa\ta aaaaaaaa\naaaaaaa a\taaa\n",
        "😀😀 𝄞\t𝄞𝄞 😀\n😀 𝄞𝄞𝄞\t😀😀😀 𝄞\n𝄞😀 😀\t😀𝄞\n",
        "the cat\tle chat\nthe dog\tle chien\na cat\tun chat\n",
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        Scratch s;
        scratch_make(&s);
        scratch_write_text(&s, "train.tsv", corpora[k]);
        scratch_write_text(&s, "dev.tsv", corpora[k == 0 ? 4 : k]);
        char config[1024], path[512], model[512];
        snprintf(config, sizeof config, "%.*ssrc_merges = %s\ntgt_merges = %s\n%s",
                 (int)(strstr(BPE_CONFIG, "src_merges") - BPE_CONFIG), BPE_CONFIG, cases[k].merges,
                 cases[k].merges, strstr(BPE_CONFIG, "[model]"));
        scratch_write_text(&s, "bpe.ini", config);
        scratch_path(&s, "bpe.ini", path, sizeof path);
        RunResult r;
        run_program(&r, &s, (const char *const[]){"../bin/train", path, NULL}, NULL, 120, NULL);
        ck_assert_msg(!r.timed_out && r.status == 0, "%s: training failed (%d): %s", cases[k].name,
                      r.status, r.err);
        scratch_path(&s, "run/best.ckpt", model, sizeof model);
        run_program(&r, &s,
                    (const char *const[]){"../bin/translate", "-m", model, cases[k].sentence, NULL},
                    NULL, 60, NULL);
        ck_assert_msg(r.status == 0, "%s: translate failed (%d): %s", cases[k].name, r.status,
                      r.err);
        scratch_free(&s);
    }
    free(big);
}
END_TEST

Suite *subwords_suite(void) {
    Suite *suite = suite_create("subwords");
    TCase *library = tcase_create("library");
    tcase_set_timeout(library, 120);
    tcase_add_test(library, test_every_training_sentence_round_trips);
    tcase_add_test(library, test_merges_are_deterministic);
    tcase_add_test(library, test_without_subwords_nothing_changes);
    tcase_add_test(library, test_unseen_characters_empty_and_long_words);
    tcase_add_test(library, test_checkpoint_keeps_merges);
    tcase_add_loop_test(library, test_a_sentence_is_tokenized_once, 0, 3);
    tcase_add_test(library, test_programs_call_no_tokenizer);
    tcase_add_test(library, test_translations_do_not_depend_on_the_threads);
    tcase_add_test(library, test_unknown_words_named_as_written);
    tcase_add_loop_test(library, test_unfamiliar_text_is_flagged, 0, 3);
    tcase_add_loop_test(library, test_lossless_round_trips_text_as_written, 0, 2);
    tcase_add_test(library, test_lossless_pieces_and_bytes);
    tcase_add_test(library, test_lossless_join_writes_valid_text);
    tcase_add_test(library, test_lossless_checkpoint_and_translation);
    suite_add_tcase(suite, library);
    TCase *unk = tcase_create("unk and case");
    tcase_add_test(unk, test_unk_replace_by_hand);
    tcase_add_test(unk, test_decode_hypothesis_replaces_unk);
    tcase_add_test(unk, test_cased_units_stay_cased);
    tcase_add_test(unk, test_word_map_of_pieces);
    suite_add_tcase(suite, unk);
    TCase *programs = tcase_create("programs");
    tcase_set_timeout(programs, 300);
    tcase_add_test(programs, test_programs_run_on_a_bpe_model);
    tcase_add_test(programs, test_resume_keeps_merges);
    tcase_add_test(programs, test_damaged_bpe_table_is_an_error);
    tcase_add_test(programs, test_keep_unk_option);
    suite_add_tcase(suite, programs);
    TCase *hostile = tcase_create("hostile");
    tcase_set_timeout(hostile, 600);
    tcase_add_test(hostile, test_forged_merge_tables_are_refused);
    tcase_add_test(hostile, test_vocabulary_that_disagrees_with_subwords_is_refused);
    tcase_add_test(hostile, test_hostile_corpora_train_with_subwords);
    suite_add_tcase(suite, hostile);
    return suite;
}

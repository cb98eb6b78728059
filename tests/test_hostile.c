/*
 * test_hostile.c: every input path fed hostile input, end to end through the programs a user
 * runs (bin/train, bin/evaluate, bin/translate, bin/align) and, for checkpoints, through the
 * loader itself. Each bad input must give ONE line on stderr naming the file and line, the
 * argument or the value, and a non-zero exit status; each odd but valid input (CRLF, a
 * byte-order mark, empty lines, unknown words, a 10,000-word sentence) must be handled. No run
 * may crash or hang (every program runs under a time limit, and under the sanitizers with
 * `make SANITIZE=1 test`).
 *
 * The unit-level cases of the INI reader and the corpus reader live in test_config.c and
 * test_text.c; here they are checked once more through the programs. Faults while training
 * (signals, divergence, full disks, memory) are in test_faults.c.
 */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/files.h"
#include "data/tokenizer.h"
#include "tests/harness.h"
#include "tests/suites.h"
#include "train/adam.h"
#include "nmt/formats/checkpoint.h"
#include "train/config.h"
#include "nmt/pictures/align_write.h"
#include "nmt/metrics/scoring.h"
#include "nmt/translator.h"

/* ---- configs through bin/train ---------------------------------------------------------- */

/* Runs bin/train on a config made of `text` (with the setup's corpora beside it) and expects
 * one line "train: DIR/bad.ini:LINE: ..." holding every fragment. */
static void expect_config_error(const char *text, size_t len, int line,
                                const char *const *fragments) {
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    scratch_write(&s, "bad.ini", text, len);
    char config[512], location[600];
    scratch_path(&s, "bad.ini", config, sizeof config);
    snprintf(location, sizeof location, "train: %s:%d: ", config, line);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/train", config, NULL}, NULL, 30, NULL);
    scratch_free(&s);
    assert_one_line_error(&r, "train", 1, fragments);
    ck_assert_msg(strncmp(r.err, location, strlen(location)) == 0, "'%s' does not start with '%s'",
                  r.err, location);
}

static void expect_config_text_error(const char *text, int line, const char *const *fragments) {
    expect_config_error(text, strlen(text), line, fragments);
}

#define SETUP_DATA "[data]\ntrain = train.tsv\ndev = dev.tsv\n"

START_TEST(hostile_config_unknown_section) {
    expect_config_text_error(
        SETUP_DATA "[trian]\nbatch_size = 2\n", 4,
        (const char *const[]){"unknown section [trian]", "; did you mean [train]?", NULL});
}
END_TEST

START_TEST(hostile_config_unknown_key) {
    expect_config_text_error(SETUP_DATA "[train]\nbatch_sise = 2\n", 5,
                             (const char *const[]){"unknown key [train] batch_sise",
                                                   "; did you mean batch_size?", NULL});
}
END_TEST

START_TEST(hostile_config_duplicate_key) {
    expect_config_text_error(
        SETUP_DATA "[train]\nbatch_size = 2\nbatch_size = 3\n", 6,
        (const char *const[]){"duplicate key [train] batch_size", "first set on line 5", NULL});
}
END_TEST

START_TEST(hostile_config_missing_equals) {
    expect_config_text_error(SETUP_DATA "[train]\nbatch_size 2\n", 5,
                             (const char *const[]){"'batch_size 2' has no '='", NULL});
}
END_TEST

START_TEST(hostile_config_value_out_of_range) {
    expect_config_text_error(
        SETUP_DATA "[model]\nemb_size = 100000\n", 5,
        (const char *const[]){"[model] emb_size = '100000': out of range", "[1, 4096]", NULL});
    /* the same through --set, where the argument is what gets named */
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    char config[512];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/train", config, "--set", "optim.lr=-1", NULL},
                NULL, 30, NULL);
    scratch_free(&s);
    assert_one_line_error(
        &r, "train", 1,
        (const char *const[]){"--set optim.lr=-1: [optim] lr = '-1': out of range", NULL});
}
END_TEST

START_TEST(hostile_config_value_of_wrong_type) {
    expect_config_text_error(
        SETUP_DATA "[train]\nbatch_size = two\n", 5,
        (const char *const[]){"[train] batch_size = 'two': not an integer", NULL});
    expect_config_text_error(SETUP_DATA "[model]\nbidirectional = 2\n", 5,
                             (const char *const[]){"[model] bidirectional = '2'", NULL});
}
END_TEST

START_TEST(hostile_config_overlong_line) {
    size_t len = strlen(SETUP_DATA) + 10000;
    char *text = malloc(len + 1);
    ck_assert_ptr_nonnull(text);
    strcpy(text, SETUP_DATA);
    memset(text + strlen(SETUP_DATA), '#', 10000);
    text[len] = '\0';
    expect_config_error(text, len, 4,
                        (const char *const[]){"line is longer than 8192 bytes", NULL});
    free(text);
}
END_TEST

START_TEST(hostile_config_binary_file) {
    /* a real binary: the ELF header has a NUL byte on its first "line" */
    Scratch s;
    scratch_make(&s);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/train", "../bin/translate", NULL}, NULL, 30,
                NULL);
    scratch_free(&s);
    assert_one_line_error(&r, "train", 1,
                          (const char *const[]){"../bin/translate:1: NUL byte", NULL});
    /* binary data without a NUL is refused as invalid UTF-8 */
    unsigned char noise[600];
    for (size_t i = 0; i < sizeof noise; i++) noise[i] = (unsigned char)(0x80 + (i * 37) % 120);
    for (size_t i = 64; i < sizeof noise; i += 64) noise[i] = '\n';
    expect_config_error((const char *)noise, sizeof noise, 1,
                        (const char *const[]){"invalid UTF-8: this is a binary file", NULL});
}
END_TEST

START_TEST(hostile_config_missing_or_directory) {
    Scratch s;
    scratch_make(&s);
    char missing[512];
    scratch_path(&s, "missing.ini", missing, sizeof missing);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/train", missing, NULL}, NULL, 30, NULL);
    assert_one_line_error(&r, "train", 1,
                          (const char *const[]){missing, "No such file or directory", NULL});
    run_program(&r, &s, (const char *const[]){"../bin/train", s.dir, NULL}, NULL, 30, NULL);
    scratch_free(&s);
    assert_one_line_error(&r, "train", 1, (const char *const[]){s.dir, "Is a directory", NULL});
}
END_TEST

/* ---- corpora through bin/train and bin/evaluate ----------------------------------------- */

/* A scratch folder with the setup, whose `which` corpus ("train.tsv" or "dev.tsv") is replaced
 * by bytes; *path gets the corpus's path. */
static void setup_with_corpus(Scratch *s, const char *which, const void *bytes, size_t len,
                              char *path, size_t size) {
    scratch_make(s);
    scratch_write_setup(s);
    scratch_write(s, which, bytes, len);
    scratch_path(s, which, path, size);
}

static void run_train(RunResult *r, const Scratch *s) {
    char config[512];
    scratch_path(s, "tiny.ini", config, sizeof config);
    run_program(r, s, (const char *const[]){"../bin/train", config, "--overwrite", NULL}, NULL, 60,
                NULL);
}

/* bin/evaluate of the setup's trained model on the corpus at path. */
static void run_evaluate(RunResult *r, const Scratch *s, const char *path) {
    char model[512];
    scratch_path(s, "run/best.ckpt", model, sizeof model);
    run_program(r, s, (const char *const[]){"../bin/evaluate", "-m", model, "--test", path, NULL},
                NULL, 60, NULL);
}

/* The bad corpus fails as training data, as dev data and as a test file, each time with one
 * line naming the file (and line, when `line` > 0) and holding `fragment`. */
static void expect_corpus_error(const char *bytes, size_t len, int line, const char *fragment) {
    const char *const which[] = {"train.tsv", "dev.tsv"};
    for (int k = 0; k < 2; k++) {
        Scratch s;
        char path[512], location[600];
        setup_with_corpus(&s, which[k], bytes, len, path, sizeof path);
        if (line > 0)
            snprintf(location, sizeof location, "%s:%d: ", path, line);
        else
            snprintf(location, sizeof location, "%s: ", path);
        RunResult r;
        run_train(&r, &s);
        assert_one_line_error(&r, "train", 1, (const char *const[]){location, fragment, NULL});
        if (k == 1) { /* a model to evaluate with, then the same bytes as its test file */
            Scratch good;
            scratch_make(&good);
            scratch_train_model(&good);
            char model[512];
            scratch_path(&good, "run/best.ckpt", model, sizeof model);
            run_program(&r, &s,
                        (const char *const[]){"../bin/evaluate", "-m", model, "--test", path, NULL},
                        NULL, 60, NULL);
            scratch_free(&good);
            assert_one_line_error(&r, "evaluate", 1,
                                  (const char *const[]){location, fragment, NULL});
        }
        scratch_free(&s);
    }
}

START_TEST(hostile_corpus_invalid_utf8) {
    static const char bytes[] = "I love cats\tj'aime les chats\n"
                                "the black cat\tle chat noir\n"
                                "I \xC0\xAF cats\tj'aime\n";
    expect_corpus_error(bytes, sizeof bytes - 1, 3, "invalid UTF-8 at column 3: overlong");
}
END_TEST

START_TEST(hostile_corpus_missing_tab) {
    static const char bytes[] = "I love cats\tj'aime les chats\n"
                                "the black cat le chat noir\n";
    expect_corpus_error(bytes, sizeof bytes - 1, 2, "no tab between source and target");
}
END_TEST

START_TEST(hostile_corpus_empty_file) {
    expect_corpus_error("", 0, 0, "no sentence pairs (empty input)");
    expect_corpus_error("\n\r\n\n", 4, 0, "no sentence pairs, only 3 empty lines");
}
END_TEST

START_TEST(hostile_corpus_control_characters) {
    static const char bytes[] = "I love cats\tj'aime les chats\n"
                                "the \x1B[2Jblack cat\tle chat noir\n";
    expect_corpus_error(bytes, sizeof bytes - 1, 2, "control character U+001B at column 5");
}
END_TEST

START_TEST(hostile_corpus_missing_or_directory) {
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    char config[512], dev[512];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "dev.tsv", dev, sizeof dev);
    remove(dev);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/train", config, NULL}, NULL, 30, NULL);
    assert_one_line_error(&r, "train", 1,
                          (const char *const[]){"[data] dev: ", dev, "No such file", NULL});
    char out_dir[512];
    scratch_path(&s, "run", out_dir, sizeof out_dir);
    ck_assert_msg(access(out_dir, F_OK) != 0, "the failed start created %s", out_dir);
    char set[600];
    snprintf(set, sizeof set, "data.dev=%s", s.dir);
    run_program(&r, &s, (const char *const[]){"../bin/train", config, "--set", set, NULL}, NULL, 30,
                NULL);
    scratch_free(&s);
    assert_one_line_error(&r, "train", 1, (const char *const[]){s.dir, "Is a directory", NULL});
}
END_TEST

/* A corpus without line ends (/dev/zero as the dev set; a binary file; text ending its lines
 * in \r alone) was read into memory whole: the training grew to the machine's 24 GB until
 * the system killed it. A line stops at LINE_MOST_BYTES, with one line naming the file. */
START_TEST(hostile_corpus_without_line_ends) {
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    char config[512];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    RunResult r;
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--set", "data.dev=/dev/zero", NULL},
                NULL, 60, NULL);
    scratch_free(&s);
    assert_one_line_error(&r, "train", 1,
                          (const char *const[]){"/dev/zero:1: longer than 16 MiB", NULL});
}
END_TEST

/* Valid corpora in odd shapes train and evaluate; the vocabulary must not hold stray bytes
 * of them (a \r at a token's end, a byte-order mark glued to the first word). */
static void expect_corpus_accepted(const char *bytes, size_t len, const char *stray) {
    Scratch s;
    char path[512], model[512];
    setup_with_corpus(&s, "train.tsv", bytes, len, path, sizeof path);
    scratch_write(&s, "dev.tsv", bytes, len);
    RunResult r;
    run_train(&r, &s);
    ck_assert_msg(r.status == 0, "training on %s failed: %s", path, r.err);
    run_evaluate(&r, &s, path);
    ck_assert_msg(r.status == 0, "evaluate on %s failed: %s", path, r.err);
    assert_contains(r.out, "BLEU");
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    NmtModel nm;
    Error err;
    ck_assert_msg(checkpoint_load(model, &nm, NULL, NULL, &err) == 0, "%s", err.msg);
    const Vocab *vocabs[2] = {&nm.src_vocab, &nm.tgt_vocab};
    for (int k = 0; k < 2; k++)
        for (size_t id = 0; id < vocabs[k]->size; id++)
            ck_assert_msg(strstr(vocab_token(vocabs[k], (int)id), stray) == NULL,
                          "token '%s' holds a stray byte", vocab_token(vocabs[k], (int)id));
    nmt_model_free(&nm);
    scratch_free(&s);
}

START_TEST(hostile_corpus_crlf_line_ends) {
    static const char bytes[] = "I love cats\tj'aime les chats\r\n"
                                "the black cat\tle chat noir\r\n"
                                "we see the dog\tnous voyons le chien\r\n";
    expect_corpus_accepted(bytes, sizeof bytes - 1, "\r");
}
END_TEST

START_TEST(hostile_corpus_byte_order_mark) {
    static const char bytes[] = "\xEF\xBB\xBFI love cats\tj'aime les chats\n"
                                "the black cat\tle chat noir\n";
    expect_corpus_accepted(bytes, sizeof bytes - 1, "\xEF\xBB\xBF");
}
END_TEST

START_TEST(hostile_corpus_empty_lines) {
    static const char bytes[] = "\nI love cats\tj'aime les chats\n\n\n"
                                "the black cat\tle chat noir\n\n";
    expect_corpus_accepted(bytes, sizeof bytes - 1, "\n");
    /* and they are counted, not silently dropped */
    Scratch s;
    char path[512];
    setup_with_corpus(&s, "train.tsv", bytes, sizeof bytes - 1, path, sizeof path);
    RunResult r;
    run_train(&r, &s);
    scratch_free(&s);
    ck_assert_int_eq(r.status, 0);
    assert_contains(r.out, "4 empty lines");
}
END_TEST

/* A pair whose source is a 1 MiB line of words (a file that lost its line ends). */
static char *mebibyte_corpus(size_t *len) {
    size_t words = (1 << 20) / 4;
    char *text = malloc(words * 4 + 200);
    ck_assert_ptr_nonnull(text);
    size_t used = (size_t)sprintf(text, "I love cats\tj'aime les chats\n");
    for (size_t i = 0; i < words; i++) memcpy(text + used + 4 * i, "cat ", 4);
    used += words * 4;
    used += (size_t)sprintf(text + used, "\tle chat\nthe black cat\tle chat noir\n");
    *len = used;
    return text;
}

START_TEST(hostile_corpus_mebibyte_line) {
    size_t len;
    char *text = mebibyte_corpus(&len);
    /* as training data: skipped as longer than max_len, and counted */
    Scratch s;
    char path[512];
    setup_with_corpus(&s, "train.tsv", text, len, path, sizeof path);
    RunResult r;
    run_train(&r, &s);
    ck_assert_msg(r.status == 0, "%s", r.err);
    assert_contains(r.out, "1 longer than max_len = 50 skipped");
    /* as a test file: refused by line, not by running out of memory */
    run_evaluate(&r, &s, path);
    char location[600];
    snprintf(location, sizeof location, "%s:2: ", path);
    assert_one_line_error(
        &r, "evaluate", 1,
        (const char *const[]){location, "the source has 262144 tokens", "more than the 250", NULL});
    /* as dev data: refused before training starts */
    scratch_write(&s, "dev.tsv", text, len);
    scratch_path(&s, "dev.tsv", path, sizeof path);
    snprintf(location, sizeof location, "%s:2: ", path);
    run_train(&r, &s);
    scratch_free(&s);
    free(text);
    assert_one_line_error(&r, "train", 1,
                          (const char *const[]){location, "the source has 262144 tokens", NULL});
    ck_assert_msg(strstr(r.out, "step") == NULL, "it trained before refusing: %s", r.out);
}
END_TEST

/* ---- checkpoints ------------------------------------------------------------------------ */

static uint32_t get_u32(const unsigned char *at) {
    uint32_t x;
    memcpy(&x, at, 4);
    return x;
}

static void put_u32(unsigned char *at, uint32_t x) {
    memcpy(at, &x, 4);
}

/* Rewrites the last 8 bytes to the checksum of the rest: a forged file that passes the
 * checksum, so the checks behind it are the ones tested. */
static void fix_checksum(unsigned char *data, size_t size) {
    uint64_t sum = checkpoint_checksum(data, size - 8);
    memcpy(data + size - 8, &sum, 8);
}

/* Where the parameters start: after the header and both vocabularies. */
static size_t params_offset(const unsigned char *data) {
    size_t at = AT_VOCABS;
    for (int k = 0; k < 2; k++) {
        uint64_t len;
        memcpy(&len, data + at, 8);
        at += 8 + (size_t)len;
    }
    return at;
}

/* Loads data as a checkpoint (with an optimiser to fill) and returns the status; frees
 * whatever was loaded. */
static int load_bytes(const unsigned char *data, size_t size, Error *err) {
    NmtModel nm;
    TrainState state = {0};
    bool has_state;
    int rc = checkpoint_load_memory(data, size, "forged.ckpt", &nm, &state, &has_state, err);
    if (rc == 0) nmt_model_free(&nm);
    free(state.adam_m), free(state.adam_v);
    return rc;
}

/* bin/translate -m on the bytes fails with one line naming the file and holding fragment. */
static void expect_translate_refuses(const Scratch *s, const unsigned char *data, size_t size,
                                     const char *fragment) {
    scratch_write(s, "forged.ckpt", data, size);
    char path[512];
    scratch_path(s, "forged.ckpt", path, sizeof path);
    RunResult r;
    run_program(&r, s, (const char *const[]){"../bin/translate", "-m", path, "I love cats", NULL},
                NULL, 30, NULL);
    assert_one_line_error(&r, "translate", 1, (const char *const[]){path, fragment, NULL});
}

/* A fresh scratch folder with a trained toy model; the bytes of its checkpoint `name` (run/...),
 * whose path goes into path. */
static unsigned char *trained_checkpoint(Scratch *s, const char *name, char *path, size_t path_size,
                                         size_t *size) {
    scratch_make(s);
    scratch_train_model(s);
    scratch_path(s, name, path, path_size);
    return slurp_file(path, size);
}

START_TEST(hostile_checkpoint_wrong_magic) {
    Scratch s;
    char path[512];
    size_t size;
    unsigned char *data = trained_checkpoint(&s, "run/best.ckpt", path, sizeof path, &size);
    memcpy(data, "NMTCKPT2", 8);
    fix_checksum(data, size);
    expect_translate_refuses(&s, data, size, "not a checkpoint (bad magic)");
    /* a text file is not a checkpoint either */
    expect_translate_refuses(&s, (const unsigned char *)"I love cats\tj'aime les chats\n", 29,
                             "not a checkpoint");
    free(data);
    scratch_free(&s);
}
END_TEST

/* A large file that is not a checkpoint (a corpus given as the model) is refused by its first
 * bytes, before the loader allocates for the rest: 4 GiB (sparse) under a 1 GiB address-space
 * limit, which reading it whole would exceed. */
START_TEST(hostile_checkpoint_large_text_is_refused_by_its_start) {
    if (under_address_sanitizer()) {
        test_skip("hostile_checkpoint_large_text_is_refused_by_its_start",
                  "needs an address-space limit");
        return;
    }
    Scratch s;
    scratch_make(&s);
    scratch_write_text(&s, "corpus.tsv", "I love cats\tj'aime les chats\n");
    char path[512];
    scratch_path(&s, "corpus.tsv", path, sizeof path);
    ck_assert_int_eq(truncate(path, (off_t)4 << 30), 0);
    RunResult r;
    RunLimits limits = {.address_space = (rlim_t)1 << 30};
    run_program(&r, &s, (const char *const[]){"../bin/translate", "-m", path, "I love cats", NULL},
                NULL, 30, &limits);
    scratch_free(&s); /* the 4 GiB file goes even when the assertion fails */
    assert_one_line_error(&r, "translate", 1,
                          (const char *const[]){path, "not a checkpoint (bad magic)", NULL});
}
END_TEST

START_TEST(hostile_checkpoint_other_version) {
    Scratch s;
    char path[512];
    size_t size;
    unsigned char *data = trained_checkpoint(&s, "run/best.ckpt", path, sizeof path, &size);
    put_u32(data + AT_VERSION, 5);
    fix_checksum(data, size);
    expect_translate_refuses(&s, data, size,
                             "format version 5 is not supported (this program reads 1 to 4)");
    /* version 2 (before the checksum in lanes) is the one with subwords: without its flag it is
     * damaged, not newer */
    put_u32(data + AT_VERSION, 2);
    fix_checksum(data, size);
    expect_translate_refuses(&s, data, size,
                             "format version 2 has subwords, but the flags say none");
    free(data);
    scratch_free(&s);
}
END_TEST

/* One field of the header forged (checksum fixed) and the message its check must give. */
static const struct {
    size_t offset;
    uint32_t value;
    const char *fragment;
} HEADER_FORGERIES[] = {
    {AT_WIDTH, 3, "invalid real size 3"},
    {AT_FLAGS, 1u << 10, "unknown flags 0x400"},
    /* an option of a newer build is named by its bit, apart from the ones this build knows */
    {AT_FLAGS, 1u << 11 | 128 | 64 | 1, "unknown flags 0x800 (options this program does not have"},
    /* lossless subwords need the subwords flag and its sections; merges across spaces, lossless */
    {AT_FLAGS, 1u << 8, "lossless subwords without subwords"},
    {AT_FLAGS, 1u << 9 | 1u << 2, "merges across spaces without lossless subwords"},
    /* layer-normalised: the gains are then expected, so the parameter count disagrees */
    {AT_FLAGS, 128 | 1, "parameters stored, but the sizes need"},
    /* tied (E = O = 4 here): out.w is then not stored, so the parameter count disagrees */
    {AT_FLAGS, 64 | 1, "parameters stored, but the sizes need"},
    {AT_RESERVED, 9, "unknown attention score 9"},
    {AT_SIZES + 4 * 4, 2, "invalid bidirectional flag 2"},
    {AT_SIZES + 2 * 4, (uint32_t)-4, "emb_size = -4 is out of range"},
    {AT_SIZES + 2 * 4, 0, "emb_size = 0 is out of range"},
    /* 2^24 passes the range check; as H, enc.fwd.w_hh [3H, H] breaks the tensor-size limit */
    {AT_SIZES + 3 * 4, 1u << 24, "enc.fwd.w_hh would have 844424930131968 elements (too many)"},
    /* as E it is a valid size, but not the one the stored parameter count was made with */
    {AT_SIZES + 2 * 4, 1u << 24, "parameters stored, but the sizes need"},
    /* a plausible size that does not match the stored parameter count */
    {AT_SIZES + 3 * 4, 5, "parameters stored, but the sizes need"},
    {AT_COUNT, 7, "7 parameters stored"},
};
enum { N_HEADER_FORGERIES = sizeof HEADER_FORGERIES / sizeof HEADER_FORGERIES[0] };

START_TEST(hostile_checkpoint_header_field) {
    Scratch s;
    char path[512];
    size_t size;
    unsigned char *data = trained_checkpoint(&s, "run/last.ckpt", path, sizeof path, &size);
    put_u32(data + HEADER_FORGERIES[_i].offset, HEADER_FORGERIES[_i].value);
    fix_checksum(data, size);
    expect_translate_refuses(&s, data, size, HEADER_FORGERIES[_i].fragment);
    free(data);
    scratch_free(&s);
}
END_TEST

/* Sizes and parameter count that agree, forged to claim a model of gigabytes in a file of a
 * few kilobytes: refused from the file size, before anything that large is allocated (under
 * the sanitizers an attempt would be reported as an allocation far beyond the limit). */
START_TEST(hostile_checkpoint_huge_sizes_are_not_allocated) {
    Scratch s;
    char path[512];
    size_t size;
    unsigned char *data = trained_checkpoint(&s, "run/best.ckpt", path, sizeof path, &size);
    int32_t sizes[8];
    memcpy(sizes, data + AT_SIZES, sizeof sizes);
    ModelDims dims = {sizes[0], sizes[1], 1 << 24,        sizes[3], sizes[4], sizes[5],
                      sizes[6], sizes[7], SCORE_ADDITIVE, 0,        0};
    ParamTable table;
    param_table_build(&table, &dims);
    ck_assert_uint_gt(table.total, (size_t)1 << 28); /* over a gigabyte of reals */
    put_u32(data + AT_SIZES + 2 * 4, 1u << 24);
    uint64_t count = table.total;
    memcpy(data + AT_COUNT, &count, 8);
    fix_checksum(data, size);
    char expected[64];
    snprintf(expected, sizeof expected, "parameters of %zu bytes do not fit", sizeof(real));
    expect_translate_refuses(&s, data, size, expected);
    free(data);
    scratch_free(&s);
}
END_TEST

/* A checkpoint's bytes cut at every length are refused in one line: as the file would be (the
 * checksum catches it), and with a valid checksum over what is left (the field and size checks
 * catch it). */
static void assert_refused_when_cut(const unsigned char *data, size_t size) {
    unsigned char *cut = malloc(size);
    ck_assert_ptr_nonnull(cut);
    Error err;
    for (size_t len = 0; len < size; len++) {
        ck_assert_msg(load_bytes(data, len, &err) == -1, "%zu of %zu bytes loaded", len, size);
        if (len >= 16) {
            memcpy(cut, data, len);
            fix_checksum(cut, len);
            ck_assert_msg(load_bytes(cut, len, &err) == -1, "forged %zu of %zu bytes loaded", len,
                          size);
            ck_assert_ptr_null(strchr(err.msg, '\n'));
        }
    }
    free(cut);
}

START_TEST(hostile_checkpoint_truncated_at_every_byte) {
    Scratch s;
    char path[512];
    size_t size;
    unsigned char *data = trained_checkpoint(&s, "run/last.ckpt", path, sizeof path, &size);
    assert_refused_when_cut(data, size);
    expect_translate_refuses(&s, data, size / 2, "checksum mismatch");
    free(data);
    scratch_free(&s);
}
END_TEST

START_TEST(hostile_checkpoint_flipped_bit) {
    Scratch s;
    char path[512];
    size_t size;
    unsigned char *data = trained_checkpoint(&s, "run/last.ckpt", path, sizeof path, &size);
    Error err;
    /* every single bit of the file: the checksum catches each one */
    for (size_t bit = 0; bit < 8 * size; bit++) {
        data[bit / 8] ^= (unsigned char)(1u << bit % 8);
        ck_assert_msg(load_bytes(data, size, &err) == -1, "flipped bit %zu loaded", bit);
        data[bit / 8] ^= (unsigned char)(1u << bit % 8);
    }
    /* every bit of the header and vocabularies with the checksum forged: refused or loaded
     * whole (a flipped lower-casing flag is still a valid file), never misread */
    size_t forged_bits = 8 * params_offset(data);
    for (size_t bit = 0; bit < forged_bits; bit++) {
        data[bit / 8] ^= (unsigned char)(1u << bit % 8);
        fix_checksum(data, size);
        if (load_bytes(data, size, &err) == -1) ck_assert_ptr_null(strchr(err.msg, '\n'));
        data[bit / 8] ^= (unsigned char)(1u << bit % 8);
    }
    data[size / 2] ^= 4;
    expect_translate_refuses(&s, data, size, "checksum mismatch");
    free(data);
    scratch_free(&s);
}
END_TEST

START_TEST(hostile_checkpoint_vocabulary_mismatch) {
    Scratch s;
    char path[512];
    size_t size;
    unsigned char *data = trained_checkpoint(&s, "run/best.ckpt", path, sizeof path, &size);
    /* claim one more source token, with a parameter count to match: the vocabulary stored has
     * one token fewer than the sizes say */
    ModelDims dims;
    int32_t sizes[8];
    memcpy(sizes, data + AT_SIZES, sizeof sizes);
    dims = (ModelDims){sizes[0] + 1, sizes[1], sizes[2],       sizes[3], sizes[4], sizes[5],
                       sizes[6],     sizes[7], SCORE_ADDITIVE, 0,        0};
    ParamTable table;
    param_table_build(&table, &dims);
    put_u32(data + AT_SIZES, (uint32_t)dims.src_vocab);
    uint64_t count = table.total;
    memcpy(data + AT_COUNT, &count, 8);
    fix_checksum(data, size);
    expect_translate_refuses(&s, data, size, "vocabularies have");
    /* a vocabulary whose reserved ids are wrong */
    free(data);
    data = slurp_file(path, &size);
    size_t first_token = AT_VOCABS + 8 + 4 + 4; /* after the length, the count, the length */
    ck_assert(memcmp(data + first_token, "<pad>", 5) == 0);
    memcpy(data + first_token, "<PAD>", 5);
    fix_checksum(data, size);
    expect_translate_refuses(&s, data, size, "not the reserved \"<pad>\"");
    free(data);
    scratch_free(&s);
}
END_TEST

START_TEST(hostile_checkpoint_non_finite_values) {
    Scratch s;
    char path[512];
    size_t size;
    unsigned char *data = trained_checkpoint(&s, "run/last.ckpt", path, sizeof path, &size);
    size_t params = params_offset(data);
    uint64_t count;
    memcpy(&count, data + AT_COUNT, 8);
    ck_assert_uint_eq(get_u32(data + AT_WIDTH), sizeof(real));
    /* a NaN parameter, then a negative second moment of Adam */
    real nan_value = NAN, negative = -1;
    memcpy(data + params + sizeof(real) * 3, &nan_value, sizeof nan_value);
    fix_checksum(data, size);
    expect_translate_refuses(&s, data, size, "parameter src_emb[3] is nan");
    free(data);
    data = slurp_file(path, &size);
    /* after the parameters, the state and the first moments */
    size_t second_moments = params + 2 * sizeof(real) * count + CKPT_STATE_BYTES;
    memcpy(data + second_moments, &negative, sizeof negative);
    fix_checksum(data, size);
    Error err;
    ck_assert_int_eq(load_bytes(data, size, &err), -1);
    assert_contains(err.msg, "Adam second moment of src_emb[0] is -1");
    free(data);
    scratch_free(&s);
}
END_TEST

START_TEST(hostile_checkpoint_trailing_bytes) {
    Scratch s;
    char path[512];
    size_t size;
    unsigned char *data = trained_checkpoint(&s, "run/best.ckpt", path, sizeof path, &size);
    unsigned char *longer = calloc(size + 5, 1);
    ck_assert_ptr_nonnull(longer);
    memcpy(longer, data, size - 8);
    fix_checksum(longer, size + 5);
    expect_translate_refuses(&s, longer, size + 5, "5 unexpected bytes after the data");
    free(longer);
    free(data);
    scratch_free(&s);
}
END_TEST

START_TEST(hostile_checkpoint_directory) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/translate", "-m", s.dir, "I love cats", NULL},
                NULL, 30, NULL);
    assert_one_line_error(&r, "translate", 1,
                          (const char *const[]){s.dir, "not a regular file", NULL});
    char config[512], resume[600];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    snprintf(resume, sizeof resume, "--resume=%s", s.dir);
    run_program(&r, &s, (const char *const[]){"../bin/train", config, resume, NULL}, NULL, 30,
                NULL);
    scratch_free(&s);
    assert_one_line_error(&r, "train", 1, (const char *const[]){s.dir, "not a regular file", NULL});
}
END_TEST

/* Resuming with a config that describes another model: each mismatch is named with both
 * values; a translation-only checkpoint cannot be resumed at all. */
START_TEST(hostile_checkpoint_resume_size_mismatch) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char config[512], best[512], resume_best[600], last[512];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "run/last.ckpt", last, sizeof last);
    static const struct {
        const char *set, *fragment;
    } mismatches[] = {
        {"model.emb_size=8", "it has [model] emb_size = 4, the config 8"},
        {"model.bidirectional=false", "it has [model] bidirectional = 1, the config 0"},
        {"model.tie_embeddings=true", "it has [model] tie_embeddings = 0, the config 1"},
        {"data.lowercase=false", "it has [data] lowercase = 1, the config 0"},
        {"data.src_vocab_size=5", "more than [data] src_vocab_size/tgt_vocab_size = 5/8000"},
    };
    RunResult r;
    for (size_t k = 0; k < sizeof mismatches / sizeof mismatches[0]; k++) {
        run_program(&r, &s,
                    (const char *const[]){"../bin/train", config, "--resume", "--set",
                                          mismatches[k].set, "--set", "train.max_steps=6", NULL},
                    NULL, 30, NULL);
        assert_one_line_error(
            &r, "train", 1,
            (const char *const[]){"cannot resume", last, mismatches[k].fragment, NULL});
    }
    scratch_path(&s, "run/best.ckpt", best, sizeof best);
    snprintf(resume_best, sizeof resume_best, "--resume=%s", best);
    run_program(&r, &s, (const char *const[]){"../bin/train", config, resume_best, NULL}, NULL, 30,
                NULL);
    scratch_free(&s);
    assert_one_line_error(&r, "train", 1, (const char *const[]){"has no optimiser state", NULL});
}
END_TEST

/* ---- int8 checkpoints (bin/quantize, format 4) ------------------------------------------- */

/* The scratch model quantized by bin/quantize into run/q.ckpt; its bytes in *size. */
static unsigned char *quantized_model(const Scratch *s, size_t *size) {
    char in[512], out[512];
    scratch_path(s, "run/best.ckpt", in, sizeof in);
    scratch_path(s, "run/q.ckpt", out, sizeof out);
    RunResult r;
    run_program(&r, s, (const char *const[]){"../bin/quantize", in, out, NULL}, NULL, 30, NULL);
    ck_assert_msg(r.status == 0, "bin/quantize failed: %s", r.err);
    unsigned char *data = slurp_file(out, size);
    ck_assert_uint_eq(get_u32(data + AT_VERSION), 4);
    return data;
}

/* Every checkpoint case above, on an int8 file: magic, version, each header field, sizes that
 * claim gigabytes, an int8 file with a training state, the vocabularies, a NaN, negative or
 * overflowing scale and the value -128 (which quantizing never writes), trailing bytes; and
 * the file still translates, and bin/train --resume refuses it by name. */
START_TEST(hostile_quantized_checkpoint_fields) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    size_t size;
    unsigned char *good = quantized_model(&s, &size), *data = malloc(size + 5);
    ck_assert_ptr_nonnull(data);
    char path[512];
    scratch_path(&s, "run/q.ckpt", path, sizeof path);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/translate", "-m", path, "I love cats", NULL},
                NULL, 30, NULL);
    ck_assert_msg(r.status == 0 && r.out[0] != '\0', "the int8 file does not translate: %s", r.err);

    memcpy(data, good, size);
    memcpy(data, "NMTCKPT2", 8);
    fix_checksum(data, size);
    expect_translate_refuses(&s, data, size, "not a checkpoint (bad magic)");
    memcpy(data, good, size);
    put_u32(data + AT_VERSION, 5);
    fix_checksum(data, size);
    expect_translate_refuses(&s, data, size, "format version 5 is not supported");
    for (int k = 0; k < N_HEADER_FORGERIES; k++) {
        memcpy(data, good, size);
        put_u32(data + HEADER_FORGERIES[k].offset, HEADER_FORGERIES[k].value);
        fix_checksum(data, size);
        expect_translate_refuses(&s, data, size, HEADER_FORGERIES[k].fragment);
    }
    memcpy(data, good, size);
    put_u32(data + AT_FLAGS, get_u32(data + AT_FLAGS) | 2);
    fix_checksum(data, size);
    expect_translate_refuses(&s, data, size, "an int8 checkpoint with a training state");

    /* sizes and count that agree, claiming gigabytes */
    memcpy(data, good, size);
    int32_t sizes[8];
    memcpy(sizes, data + AT_SIZES, sizeof sizes);
    ModelDims dims = {sizes[0], sizes[1], 1 << 24,        sizes[3], sizes[4], sizes[5],
                      sizes[6], sizes[7], SCORE_ADDITIVE, 0,        0};
    ParamTable table;
    param_table_build(&table, &dims);
    put_u32(data + AT_SIZES + 2 * 4, 1u << 24);
    uint64_t count = table.total;
    memcpy(data + AT_COUNT, &count, 8);
    fix_checksum(data, size);
    expect_translate_refuses(&s, data, size, "bytes of int8 parameters do not fit");

    /* one source token more than the vocabulary holds; a wrong reserved id */
    memcpy(data, good, size);
    dims = (ModelDims){sizes[0] + 1, sizes[1], sizes[2],       sizes[3], sizes[4], sizes[5],
                       sizes[6],     sizes[7], SCORE_ADDITIVE, 0,        0};
    param_table_build(&table, &dims);
    put_u32(data + AT_SIZES, (uint32_t)dims.src_vocab);
    count = table.total;
    memcpy(data + AT_COUNT, &count, 8);
    fix_checksum(data, size);
    expect_translate_refuses(&s, data, size, "vocabularies have");
    memcpy(data, good, size);
    size_t first_token = AT_VOCABS + 8 + 4 + 4;
    memcpy(data + first_token, "<PAD>", 5);
    fix_checksum(data, size);
    expect_translate_refuses(&s, data, size, "not the reserved \"<pad>\"");

    /* src_emb comes first: its row scales, then its int8 rows */
    size_t params = params_offset(good);
    const struct {
        float scale;
        const char *fragment;
    } scales[] = {{NAN, "the scale of src_emb row 1 is nan"},
                  {-0.5f, "the scale of src_emb row 1 is -0.5"},
                  {3e38f, "parameter src_emb["}};
    for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
        memcpy(data, good, size);
        memcpy(data + params + sizeof(float), &scales[k].scale, sizeof(float));
        fix_checksum(data, size);
        expect_translate_refuses(&s, data, size, scales[k].fragment);
    }
    memcpy(data, good, size);
    data[params + sizeof(float) * sizes[0] + 5] = 0x80;
    fix_checksum(data, size);
    expect_translate_refuses(&s, data, size, "src_emb[5] is -128");

    memcpy(data, good, size - 8);
    memset(data + size - 8, 0, 5);
    fix_checksum(data, size + 5);
    expect_translate_refuses(&s, data, size + 5, "5 unexpected bytes after the data");

    char config[512], resume[600];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    snprintf(resume, sizeof resume, "--resume=%s", path);
    run_program(&r, &s, (const char *const[]){"../bin/train", config, resume, NULL}, NULL, 30,
                NULL);
    assert_one_line_error(&r, "train", 1,
                          (const char *const[]){path, "is an int8 checkpoint", NULL});
    free(data);
    free(good);
    scratch_free(&s);
}
END_TEST

/* An int8 file cut at every length (as is, and with the checksum forged over what is left),
 * and every bit flipped (and, checksum forged, every bit of its header, vocabularies and
 * scales and values): refused with one line, or (forged) loaded whole, never misread. */
START_TEST(hostile_quantized_checkpoint_damage) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    size_t size;
    unsigned char *data = quantized_model(&s, &size);
    Error err;
    assert_refused_when_cut(data, size);
    for (size_t bit = 0; bit < 8 * size; bit++) {
        data[bit / 8] ^= (unsigned char)(1u << bit % 8);
        ck_assert_msg(load_bytes(data, size, &err) == -1, "flipped bit %zu loaded", bit);
        data[bit / 8] ^= (unsigned char)(1u << bit % 8);
    }
    for (size_t bit = 0; bit < 8 * (size - 8); bit++) {
        data[bit / 8] ^= (unsigned char)(1u << bit % 8);
        fix_checksum(data, size);
        if (load_bytes(data, size, &err) == -1) ck_assert_ptr_null(strchr(err.msg, '\n'));
        data[bit / 8] ^= (unsigned char)(1u << bit % 8);
    }
    free(data);
    scratch_free(&s);
}
END_TEST

/* ---- translation input through bin/translate and bin/align ------------------------------ */

/* A scratch folder with the trained test model (its path in model) and input.txt holding
 * before, input and after on their own lines (its path in lines). */
static void input_scratch(Scratch *s, const char *before, const char *input, const char *after,
                          char model[512], char lines[512]) {
    scratch_make(s);
    scratch_train_model(s);
    scratch_path(s, "run/best.ckpt", model, 512);
    scratch_path(s, "input.txt", lines, 512);
    size_t size = strlen(before) + strlen(input) + strlen(after) + 8;
    char *text = malloc(size);
    ck_assert_ptr_nonnull(text);
    snprintf(text, size, "%s%s\n%s", before, input, after);
    scratch_write_text(s, "input.txt", text);
    free(text);
}

/* Translates {"I love cats", input, "the black cat"} as arguments and as lines of standard
 * input with the setup's model. When fragment is NULL the input must be translated (exit 0,
 * three output lines); otherwise it must be refused with one line naming argument 2 / line 2
 * and holding the fragment, the other two still translated, exit 1. `warning`, when not
 * NULL, is a line a translated input must get on stderr. */
static void expect_translate_input(const char *input, const char *fragment, const char *warning) {
    Scratch s;
    char model[512], lines[512];
    input_scratch(&s, "I love cats\n", input, "the black cat\n", model, lines);
    for (int from_stdin = 0; from_stdin < 2; from_stdin++) {
        RunResult r;
        if (from_stdin)
            run_program(&r, &s, (const char *const[]){"../bin/translate", "-m", model, NULL}, lines,
                        60, NULL);
        else
            run_program(&r, &s,
                        (const char *const[]){"../bin/translate", "-m", model, "I love cats", input,
                                              "the black cat", NULL},
                        NULL, 60, NULL);
        /* output stays aligned with the input: one line each, an empty one for a refusal */
        int newlines = 0;
        for (const char *p = r.out; *p; p++) newlines += *p == '\n';
        ck_assert_msg(newlines == 3, "%d output lines: '%s'", newlines, r.out);
        const char *name = from_stdin ? "translate: line 2: " : "translate: argument 2: ";
        if (fragment) {
            assert_one_line_error(&r, "translate", 1, (const char *const[]){name, fragment, NULL});
        } else {
            ck_assert_msg(r.status == 0 && !r.timed_out, "status %d: %s", r.status, r.err);
            if (warning)
                assert_one_line_error(&r, "translate", 0,
                                      (const char *const[]){name, warning, NULL});
            else
                ck_assert_str_eq(r.err, "");
        }
    }
    scratch_free(&s);
}

/* input as argument 2 of bin/translate is refused with one line holding fragment, and the
 * arguments around it are translated. */
static void expect_translate_argument(const char *input, const char *fragment) {
    Scratch s;
    char model[512], lines[512];
    input_scratch(&s, "", input, "", model, lines);
    RunResult r;
    run_program(&r, &s,
                (const char *const[]){"../bin/translate", "-m", model, "I love cats", input,
                                      "the black cat", NULL},
                NULL, 60, NULL);
    scratch_free(&s);
    assert_one_line_error(&r, "translate", 1,
                          (const char *const[]){"translate: argument 2: ", fragment, NULL});
}

/* A blank line of standard input (input: nothing but spaces) made bin/translate exit 1 after
 * translating the rest (issue #45). It is a blank translation: an empty output line in its
 * place, one line on stderr however many blank lines there are, exit 0. */
static void expect_translate_blank_lines(const char *input) {
    Scratch s;
    char model[512], lines[512];
    size_t size = 2 * strlen(input) + 64;
    char *after = malloc(size);
    ck_assert_ptr_nonnull(after);
    snprintf(after, size, "the black cat\n%s\n", input);
    input_scratch(&s, "I love cats\n", input, after, model, lines);
    free(after);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/translate", "-m", model, NULL}, lines, 60,
                NULL);
    scratch_free(&s);
    assert_one_line_error(&r, "translate", 0,
                          (const char *const[]){"translate: line 2: blank", NULL});
    char first[256] = "", third[256] = "";
    int n = sscanf(r.out, "%255[^\n]\n", first);
    const char *rest = strchr(r.out, '\n');
    ck_assert_msg(n == 1 && rest && rest[1] == '\n', "line 2 is not blank: '%s'", r.out);
    ck_assert(sscanf(rest + 2, "%255[^\n]", third) == 1);
    ck_assert_msg(strcmp(rest + 2 + strlen(third), "\n\n") == 0, "line 4 is not blank: '%s'",
                  r.out);
}

/* The same input given to bin/align (as argument 1 and as line 1 of standard input) is
 * refused with one line holding fragment, or aligned when fragment is NULL. */
static void expect_align_input(const char *input, const char *fragment) {
    Scratch s;
    char model[512], lines[512];
    input_scratch(&s, "", input, "", model, lines);
    for (int from_stdin = 0; from_stdin < 2; from_stdin++) {
        RunResult r;
        if (from_stdin)
            run_program(&r, &s,
                        (const char *const[]){"../bin/align", "-m", model, "--format", "tsv", NULL},
                        lines, 60, NULL);
        else
            run_program(
                &r, &s,
                (const char *const[]){"../bin/align", "-m", model, "--format", "tsv", input, NULL},
                NULL, 60, NULL);
        const char *name = from_stdin ? "align: line 1: " : "align: argument 1: ";
        if (fragment)
            assert_one_line_error(&r, "align", 1, (const char *const[]){name, fragment, NULL});
        else
            ck_assert_msg(r.status == 0 && !r.timed_out, "status %d: %s", r.status, r.err);
    }
    scratch_free(&s);
}

START_TEST(hostile_input_empty_string) {
    expect_translate_argument("", "empty sentence, nothing to translate");
    expect_translate_blank_lines("");
    expect_align_input("", "empty sentence, nothing to translate");
}
END_TEST

START_TEST(hostile_input_only_spaces) {
    expect_translate_argument("    \t  ", "empty sentence, nothing to translate");
    expect_translate_blank_lines("    \t  ");
    expect_align_input("    \t  ", "empty sentence, nothing to translate");
}
END_TEST

/* A NUL byte in a line of standard input ended the C string the line became, so the first
 * part was translated (or aligned) as if it were the whole, silently, exit 0 (issue #45). It
 * is refused as other control characters are: one line naming the line and the byte, an
 * empty output line, exit 1. */
START_TEST(hostile_input_nul_byte) {
    static const char input[] = "I love cats\nI love machine learning\0 the black dog\nthe "
                                "black cat\n";
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    scratch_write(&s, "nul.txt", input, sizeof input - 1);
    char model[512], lines[512];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    scratch_path(&s, "nul.txt", lines, sizeof lines);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/translate", "-m", model, NULL}, lines, 60,
                NULL);
    assert_one_line_error(&r, "translate", 1,
                          (const char *const[]){"translate: line 2: ",
                                                "control character U+0000 (NUL) at byte 23", NULL});
    const char *second = strchr(r.out, '\n');
    ck_assert_msg(second && second[1] == '\n' && strchr(second + 2, '\n'),
                  "not three lines, the second empty: '%s'", r.out);
    run_program(&r, &s, (const char *const[]){"../bin/align", "-m", model, "--format", "tsv", NULL},
                lines, 60, NULL);
    scratch_free(&s);
    assert_one_line_error(&r, "align", 1,
                          (const char *const[]){"align: line 2: ",
                                                "control character U+0000 (NUL) at byte 23", NULL});
}
END_TEST

/* A line of stdin longer than LINE_MOST_BYTES is refused as a line, and its rest skipped: the
 * lines around it are translated, each in its place. */
START_TEST(hostile_input_line_longer_than_the_most) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    size_t long_len = LINE_MOST_BYTES + 100;
    char *input = malloc(long_len + 64);
    ck_assert_ptr_nonnull(input);
    size_t n = (size_t)sprintf(input, "I love cats\n");
    memset(input + n, 'a', long_len);
    n += long_len;
    n += (size_t)sprintf(input + n, "\nthe black cat\n");
    scratch_write(&s, "long.txt", input, n);
    free(input);
    char model[512], lines[512];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    scratch_path(&s, "long.txt", lines, sizeof lines);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/translate", "-m", model, NULL}, lines, 60,
                NULL);
    scratch_free(&s);
    assert_one_line_error(&r, "translate", 1,
                          (const char *const[]){"translate: line 2: longer than 16 MiB", NULL});
    const char *second = strchr(r.out, '\n');
    ck_assert_msg(r.out[0] != '\n' && second && second[1] == '\n' && second[2] != '\0' &&
                      second[2] != '\n',
                  "not three lines, only the second empty: '%s'", r.out);
}
END_TEST

/* A lossless vocabulary too small for its 261 reserved tokens (the bytes and the specials)
 * was refused as "building vocabularies: vocabulary size 5 leaves no room ...", naming neither
 * the side nor the key. */
START_TEST(hostile_vocabulary_too_small_names_its_key) {
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    char config[512];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    RunResult r;
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--set", "data.subwords=lossless",
                                      "--set", "data.tgt_vocab_size=100", NULL},
                NULL, 60, NULL);
    scratch_free(&s);
    assert_one_line_error(&r, "train", 1,
                          (const char *const[]){"building the target vocabulary ([data] "
                                                "tgt_vocab_size = 100)",
                                                "leaves no room", NULL});
}
END_TEST

/* Lines ended by \r alone (an old Mac's text) were read as one line, the carriage returns
 * spaces to the tokenizer: one pair of every line's text, silently (translate: one sentence
 * of all of them). Refused, naming the line and column, and on translate's stdin as a line. */
START_TEST(hostile_corpus_carriage_returns_alone) {
    static const char bytes[] = "I love cats\tj'aime les chats\rthe black cat\tle chat noir\r";
    expect_corpus_error(bytes, sizeof bytes - 1, 1, "carriage return at column 29 inside the line");
    Scratch s;
    char model[512], lines[512];
    input_scratch(&s, "I love cats\n", "the black dog\rthe cat", "the black cat\n", model, lines);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/translate", "-m", model, NULL}, lines, 60,
                NULL);
    scratch_free(&s);
    assert_one_line_error(&r, "translate", 1,
                          (const char *const[]){"line 2: carriage return at byte 13", NULL});
    const char *second = strchr(r.out, '\n');
    ck_assert_msg(second && second[1] == '\n', "line 2's output is not empty: '%s'", r.out);
}
END_TEST

/* Text as an editor writes it: a byte-order mark before the first line (glued to the first
 * word, a lossless model spelled it in bytes and translated another sentence), and lines of
 * spaces other than ASCII's (U+3000, U+00A0: the run failed, "empty sentence", where a line of
 * ASCII spaces is a blank line). The mark is dropped as corpora drop it; such lines are blank
 * lines. */
START_TEST(hostile_input_byte_order_mark_and_wide_spaces) {
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    char config[512], model[512], lines[512];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    RunResult r;
    run_program(
        &r, &s,
        (const char *const[]){"../bin/train", config, "--set", "data.subwords=lossless", NULL},
        NULL, 60, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    static const char input[] = "\xEF\xBB\xBFI love cats\n\xE3\x80\x80\n\xC2\xA0 \nI love cats\n";
    scratch_write(&s, "marked.txt", input, sizeof input - 1);
    scratch_path(&s, "marked.txt", lines, sizeof lines);
    run_program(&r, &s, (const char *const[]){"../bin/translate", "-m", model, NULL}, lines, 60,
                NULL);
    scratch_free(&s);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "spelled in bytes") == NULL, "the mark was read: %s", r.err);
    assert_contains(r.err, "line 2: blank");
    char first[256] = "", last[256] = "";
    const char *second = strchr(r.out, '\n');
    ck_assert_msg(second && second[1] == '\n' && second[2] == '\n', "not two blank lines: '%s'",
                  r.out);
    snprintf(first, sizeof first, "%.*s", (int)(second - r.out), r.out);
    snprintf(last, sizeof last, "%s", second + 3);
    last[strcspn(last, "\n")] = '\0';
    ck_assert_str_eq(first, last);
}
END_TEST

START_TEST(hostile_input_only_unknown_words) {
    expect_translate_input("zorglub blorf quux", NULL, "no word of it is known to the model");
    expect_align_input("zorglub blorf quux", NULL);
}
END_TEST

/* "cat cat cat ...": n words; free() the result. */
static char *many_words(size_t n) {
    char *text = malloc(4 * n + 1);
    ck_assert_ptr_nonnull(text);
    for (size_t i = 0; i < n; i++) memcpy(text + 4 * i, "cat ", 4);
    text[4 * n - 1] = '\0';
    return text;
}

START_TEST(hostile_input_ten_thousand_tokens) {
    char *text = many_words(10000);
    expect_translate_input(text, "10000 tokens, more than the 250 a sentence may have", NULL);
    expect_align_input(text, "10000 tokens, more than the 250 a sentence may have");
    /* and as the target of a force-decoding */
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char model[512];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    RunResult r;
    run_program(&r, &s,
                (const char *const[]){"../bin/align", "-m", model, "--format", "tsv", "--ref", text,
                                      "I love cats", NULL},
                NULL, 60, NULL);
    scratch_free(&s);
    free(text);
    assert_one_line_error(&r, "align", 1,
                          (const char *const[]){"argument 1: the target has 10000 tokens", NULL});
}
END_TEST

START_TEST(hostile_input_invalid_utf8) {
    expect_translate_input("I \xFF cats", "invalid UTF-8 at byte 2", NULL);
    expect_translate_input("caf\xC3", "invalid UTF-8 at byte 3: truncated sequence", NULL);
    expect_align_input("I \xED\xA0\x80 cats", "invalid UTF-8 at byte 2: UTF-16 surrogate");
}
END_TEST

START_TEST(hostile_input_control_characters) {
    expect_translate_input("I love \x1B[31mcats", "control character U+001B at byte 7", NULL);
    expect_translate_input("bell\x07", "control character U+0007 at byte 4", NULL);
    expect_translate_input("I love \xC2\x9B cats", "control character U+009B at byte 7", NULL);
    expect_align_input("I\x7F love cats", "control character U+007F at byte 1");
    /* tab and the other whitespace controls are spaces, not errors */
    expect_translate_input("I\tlove\vcats", NULL, NULL);
}
END_TEST

/* ---- what fuzzing found (tests/fuzz, docs/reliability.md) ------------------------------- */

/* fuzz_config: an override holding a line break was echoed as it was, so the error took two
 * lines (and any control character reached the terminal). The crashing input, replayed. */
START_TEST(hostile_fuzz_override_with_line_break) {
    static const char file[] = "\xEF\xBB\xBF[data]\n[optim]\nschedule = plateau  # reduce on "
                               "plateau\nlr = 3e-4\n";
    Scratch s;
    scratch_make(&s);
    scratch_write_text(&s, "fuzz.ini", file);
    char config[512];
    scratch_path(&s, "fuzz.ini", config, sizeof config);
    Config cfg;
    Error err;
    const char *const overrides[] = {"train.maxns/x\r\n"};
    ck_assert_int_eq(config_load(&cfg, config, overrides, 1, &err), -1);
    ck_assert_str_eq(err.msg, "--set train.maxns/x\\r\\n: expected section.key=value");
    /* and through the program, with a value that holds an escape sequence */
    RunResult r;
    run_program(
        &r, &s,
        (const char *const[]){"../bin/train", config, "--set", "model.emb_size=8\n\x1B[2J", NULL},
        NULL, 30, NULL);
    scratch_free(&s);
    assert_one_line_error(
        &r, "train", 1,
        (const char *const[]){"[model] emb_size = '8\\n\\x1B[2J': not an integer", NULL});
}
END_TEST

/* fuzz_config: a --set value holding line breaks loaded, but the settings then printed (as
 * OUT/config.ini) could not be read back: "data.dev=0\n[optim]\nlr =lowercase=no" even
 * injected a section. Text a config file cannot hold is now refused; text it can hold prints
 * and reloads to the same settings. */
START_TEST(hostile_fuzz_printed_config_reloads) {
    Scratch s;
    scratch_make(&s);
    scratch_write_text(&s, "fuzz.ini", "[data]\ntrain = ../dt eforing\ndev = ../niezing\n");
    char config[512], printed[512];
    scratch_path(&s, "fuzz.ini", config, sizeof config);
    scratch_path(&s, "printed.ini", printed, sizeof printed);
    Config cfg, again;
    Error err;
    const char *const injected[] = {"train.max_steps=5", "data.dev=0\n[optim]\nlr =lowercase=no"};
    ck_assert_int_eq(config_load(&cfg, config, injected, 2, &err), -1);
    ck_assert_str_eq(err.msg, "--set data.dev=0\\n[optim]\\nlr =lowercase=no: [data] dev = "
                              "'0\\n[optim]\\nlr =lowercase=no': holds a control character "
                              "(expected a path of at most 4095 bytes)");
    static const char *const unwritable[][2] = {
        {"data.train= lead.tsv", "starts or ends with a space"},
        {"data.train=trail.tsv ", "starts or ends with a space"},
        {"data.test=my #1.tsv", "holds ' #', which starts a comment"},
        {"train.out_dir=runs/\x1B[2J", "holds a control character"},
    };
    for (size_t k = 0; k < sizeof unwritable / sizeof unwritable[0]; k++) {
        ck_assert_int_eq(config_load(&cfg, config, &unwritable[k][0], 1, &err), -1);
        assert_contains(err.msg, unwritable[k][1]);
    }
    /* what a config can hold goes through config_print and back unchanged */
    const char *const writable[] = {"data.test=/data/my set#1/test 2.tsv", "train.seed=99"};
    ck_assert_msg(config_load(&cfg, config, writable, 2, &err) == 0, "%s", err.msg);
    FILE *out = fopen(printed, "w");
    ck_assert_ptr_nonnull(out);
    config_print(&cfg, out);
    ck_assert_int_eq(fclose(out), 0);
    ck_assert_msg(config_load(&again, printed, NULL, 0, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(again.data.test, "/data/my set#1/test 2.tsv");
    ck_assert_str_eq(again.data.train, cfg.data.train);
    ck_assert_uint_eq(again.train.seed, 99);
    /* through the program: one line, the line breaks shown as \n */
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/train", config, "--set", injected[1], NULL},
                NULL, 30, NULL);
    scratch_free(&s);
    assert_one_line_error(
        &r, "train", 1,
        (const char *const[]){"[data] dev = '0\\n[optim]\\nlr =lowercase=no'", NULL});
}
END_TEST

/* fuzz_checkpoint: a vocabulary token holding a line break was echoed in the error about the
 * reserved ids, which then took two lines. Tokens can hold no space or control character at
 * all (the tokenizer splits at spaces, the corpus reader refuses control characters), so such
 * a vocabulary is refused as it is read. */
START_TEST(hostile_fuzz_vocabulary_token_with_line_break) {
    Scratch s;
    char path[512];
    size_t size;
    unsigned char *data = trained_checkpoint(&s, "run/best.ckpt", path, sizeof path, &size);
    size_t second_token = AT_VOCABS + 8 + 4 + 4 + 5 + 4; /* after "<pad>" and its length */
    ck_assert(memcmp(data + second_token, "<unk>", 5) == 0);
    memcpy(data + second_token, "<un\n>", 5);
    fix_checksum(data, size);
    expect_translate_refuses(&s, data, size,
                             "source vocabulary: vocabulary: token 1 holds a space or a control "
                             "character");
    free(data);
    scratch_free(&s);
}
END_TEST

/* What every echo of user text goes through: one line, no control characters, cut marked. */
START_TEST(hostile_messages_quote_user_text) {
    char buf[64];
    ck_assert_str_eq(text_for_message(buf, sizeof buf, "plain café", 60), "plain café");
    ck_assert_str_eq(text_for_message(buf, sizeof buf, "a\nb\rc\td", 60), "a\\nb\\rc\\td");
    ck_assert_str_eq(text_for_message(buf, sizeof buf, "\x1B[31m\x7F", 60), "\\x1B[31m\\x7F");
    ck_assert_str_eq(text_for_message(buf, sizeof buf, "\xC2\x85\xC2\x9B", 60), "\\u0085\\u009B");
    ck_assert_str_eq(text_for_message(buf, sizeof buf, "bad \xFF\xC0", 60), "bad \\xFF\\xC0");
    ck_assert_str_eq(text_for_message(buf, sizeof buf, "abcdefgh", 5), "abcde...");
    /* cut at a character, never inside one, when the buffer is what runs out */
    char small[10];
    ck_assert_str_eq(text_for_message(small, sizeof small, "ééééé", 60), "ééé...");
    ck_assert_str_eq(text_for_message(small, sizeof small, "\n\n\n\n", 60), "\\n\\n\\n...");
}
END_TEST

/* ---- the surfaces of issue #36 ------------------------------------------------------------ */

/* Two trainings into one out_dir: the second is refused at its start, naming the folder and
 * the process that has it, and leaves the first run's files alone; so is bin/reference-train
 * (issue #45: it ignored the lock and replaced the running job's best.ckpt). */
START_TEST(hostile_two_trainings_one_folder) {
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    char config[128], lock[128], last[128];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "run/.lock", lock, sizeof lock);
    scratch_path(&s, "run/last.ckpt", last, sizeof last);
    Conversation first;
    conversation_start(&first, (const char *const[]){
                                   "../bin/train", config, "--set", "train.max_steps=0", "--set",
                                   "train.epochs=0", "--set", "train.max_minutes=1", "--set",
                                   "train.log_every=1000000", "--set", "train.patience=0", NULL});
    /* the first run has the folder once its process id is in the lock file, and keeps it for
     * its minute: no step budget and no early stop end it sooner */
    char holder[32] = "";
    for (int waited = 0; waited < 1000 && !holder[0]; waited++) {
        FILE *f = fopen(lock, "r");
        if (!f || !fgets(holder, sizeof holder, f)) holder[0] = '\0';
        if (f) fclose(f);
        struct timespec pause = {0, 20 * 1000 * 1000};
        if (!holder[0]) nanosleep(&pause, NULL);
    }
    ck_assert_msg(holder[0], "the first training never locked its folder");
    holder[strcspn(holder, "\n")] = '\0';
    char who[64];
    snprintf(who, sizeof who, "(process %d, see", first.pid);
    ck_assert_int_eq(strtol(holder, NULL, 10), first.pid);
    RunResult r;
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--set", "train.seed=7", NULL}, NULL,
                60, NULL);
    assert_one_line_error(&r, "train", 1,
                          (const char *const[]){"run is in use by another training", who, NULL});
    char dir[128], run_dir[160]; /* --set paths are read from the working folder */
    scratch_path(&s, "run", dir, sizeof dir);
    snprintf(run_dir, sizeof run_dir, "train.out_dir=%s", dir);
    run_program(&r, &s,
                (const char *const[]){"../bin/reference-train", config, "--set", run_dir, NULL},
                NULL, 60, NULL);
    assert_one_line_error(&r, "reference-train", 1,
                          (const char *const[]){"run is in use by another training", who, NULL});
    kill(first.pid, SIGTERM); /* it saves last.ckpt and ends */
    ck_assert_int_eq(conversation_end(&first, 30), 128 + SIGTERM);
    ck_assert(!temporary_file_beside(last));
    /* the folder is free again: a new run (resuming the first) may use it */
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--resume", "--set",
                                      "train.max_steps=2", "--set", "train.epochs=0", NULL},
                NULL, 60, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    scratch_free(&s);
}
END_TEST

/* Issue #45: OUT_DIR/.lock that is a symbolic link, a second name of another file or a FIFO
 * is refused in one line, and the file it leads to is left as it was (the lock followed the
 * link and wrote its process id into the target). */
START_TEST(hostile_lock_file_that_is_not_a_lock) {
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    char config[128], dir[128], lock[128], victim[128];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "run", dir, sizeof dir);
    scratch_path(&s, "run/.lock", lock, sizeof lock);
    scratch_path(&s, "victim.txt", victim, sizeof victim);
    static const char kept[] = "another program's file\n";
    static const struct {
        const char *kind, *fragment;
    } cases[] = {{"symbolic link", "is a symbolic link"},
                 {"hard link", "is not a lock file"},
                 {"fifo", "is not a lock file"}};
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        scratch_write_text(&s, "victim.txt", kept);
        unlink(lock);
        if (strcmp(cases[k].kind, "symbolic link") == 0) ck_assert_int_eq(symlink(victim, lock), 0);
        if (strcmp(cases[k].kind, "hard link") == 0) ck_assert_int_eq(link(victim, lock), 0);
        if (strcmp(cases[k].kind, "fifo") == 0) ck_assert_int_eq(mkfifo(lock, 0666), 0);
        RunResult r;
        run_program(&r, &s, (const char *const[]){"../bin/train", config, NULL}, NULL, 60, NULL);
        assert_one_line_error(&r, "train", 1, (const char *const[]){lock, cases[k].fragment, NULL});
        size_t len;
        char *text = (char *)slurp_file(victim, &len);
        ck_assert_ptr_nonnull(text);
        ck_assert_msg(len == strlen(kept) && memcmp(text, kept, len) == 0,
                      "%s: the file behind the lock became '%.*s'", cases[k].kind, (int)len, text);
        free(text);
    }
    scratch_free(&s);
}
END_TEST

/* A word of 1 MiB in the dev or test file of a model with subwords is one token, but a
 * million pieces: it was refused for needing 139 GiB of activations, naming no file. It is
 * refused by its file and line, before training starts, and by bin/evaluate. */
START_TEST(hostile_bpe_mebibyte_word_in_dev_and_test) {
    enum { WORD = 1 << 20 };
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    char *text = malloc(WORD + 64);
    ck_assert_ptr_nonnull(text);
    strcpy(text, "I love cats\tj'aime les chats\n");
    size_t at = strlen(text);
    memset(text + at, 'q', WORD);
    at += WORD;
    strcpy(text + at, "\tle chat\n");
    scratch_write(&s, "long.tsv", text, strlen(text));
    free(text);
    char config[128], dev[128], location[256];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "long.tsv", dev, sizeof dev);
    snprintf(location, sizeof location, "%s:2: the source has %d subword pieces", dev, WORD);
    char dev_override[160];
    snprintf(dev_override, sizeof dev_override, "data.dev=%s", dev);
    RunResult r;
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--set", "data.subwords=bpe", "--set",
                                      dev_override, NULL},
                NULL, 60, NULL);
    assert_one_line_error(&r, "train", 1,
                          (const char *const[]){location, "more than the 250", NULL});
    ck_assert_msg(strstr(r.out, "step") == NULL, "it trained before refusing: %s", r.out);
    /* as a test file of a trained model with subwords */
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--set", "data.subwords=bpe", NULL},
                NULL, 60, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    char model[128];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    run_program(&r, &s, (const char *const[]){"../bin/evaluate", "-m", model, "--test", dev, NULL},
                NULL, 60, NULL);
    assert_one_line_error(&r, "evaluate", 1, (const char *const[]){location, NULL});
    scratch_free(&s);
}
END_TEST

/* ---- the surfaces of issue #45 ------------------------------------------------------------ */

/* bin/quantize M.ckpt M.ckpt renamed the int8 copy over the float model it read. An output
 * that is the input's file, however spelt (another path, a symbolic link, a hard link), is
 * refused with one line, and the input keeps every byte. */
START_TEST(hostile_quantize_onto_its_input) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char model[512], dotted[600], symbolic[512], hard[512], copy[512];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    snprintf(dotted, sizeof dotted, "%s/run/../run/./best.ckpt", s.dir);
    scratch_path(&s, "link.ckpt", symbolic, sizeof symbolic);
    scratch_path(&s, "hard.ckpt", hard, sizeof hard);
    scratch_path(&s, "int8.ckpt", copy, sizeof copy);
    ck_assert_int_eq(symlink(model, symbolic), 0);
    ck_assert_int_eq(link(model, hard), 0);
    size_t before_size, after_size;
    unsigned char *before = slurp_file(model, &before_size);
    const char *const outputs[] = {model, dotted, symbolic, hard};
    for (size_t k = 0; k < sizeof outputs / sizeof outputs[0]; k++) {
        RunResult r;
        run_program(&r, &s, (const char *const[]){"../bin/quantize", model, outputs[k], NULL}, NULL,
                    60, NULL);
        assert_one_line_error(&r, "quantize", 1, (const char *const[]){"the same file", NULL});
        unsigned char *after = slurp_file(model, &after_size);
        ck_assert_msg(after_size == before_size && memcmp(before, after, after_size) == 0,
                      "quantize onto %s changed its input", outputs[k]);
        free(after);
    }
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/quantize", model, copy, NULL}, NULL, 60,
                NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    free(before);
    scratch_free(&s);
}
END_TEST

/* bin/plot LOG -o LOG and bin/attend FILE -o FILE renamed their output over the input they
 * had read (exit 0, the log or the worked example gone). Refused with one line, the input
 * unchanged, whatever the spelling; another name is written. */
START_TEST(hostile_plot_and_attend_onto_their_input) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char log[512], linked[512], example[512], svg[512], text[512];
    scratch_path(&s, "run/train_log.tsv", log, sizeof log);
    scratch_path(&s, "log-link.tsv", linked, sizeof linked);
    scratch_path(&s, "example.txt", example, sizeof example);
    scratch_path(&s, "curves.svg", svg, sizeof svg);
    scratch_path(&s, "attention.txt", text, sizeof text);
    ck_assert_int_eq(symlink(log, linked), 0);
    size_t size;
    unsigned char *original =
        slurp_file("../docs/examples/000-self-attention-wo-ai-mao.txt", &size);
    FILE *copy = fopen(example, "wb");
    ck_assert(copy && fwrite(original, 1, size, copy) == size && fclose(copy) == 0);
    free(original);
    struct {
        const char *program, *const *argv, *input;
        int status;
    } cases[] = {
        {"plot", (const char *const[]){"../bin/plot", log, "-o", log, NULL}, log, 1},
        {"plot", (const char *const[]){"../bin/plot", log, "-o", linked, NULL}, log, 1},
        {"attend", (const char *const[]){"../bin/attend", example, "-o", example, NULL}, example,
         2},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t before_size, after_size;
        unsigned char *before = slurp_file(cases[k].input, &before_size);
        RunResult r;
        run_program(&r, &s, cases[k].argv, NULL, 60, NULL);
        assert_one_line_error(&r, cases[k].program, cases[k].status,
                              (const char *const[]){"the same file", NULL});
        unsigned char *after = slurp_file(cases[k].input, &after_size);
        ck_assert_msg(after_size == before_size && memcmp(before, after, after_size) == 0,
                      "%s onto its input changed it", cases[k].program);
        free(before), free(after);
    }
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/plot", log, "-o", svg, NULL}, NULL, 60, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_program(&r, &s, (const char *const[]){"../bin/attend", example, "-o", text, NULL}, NULL, 60,
                NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    scratch_free(&s);
}
END_TEST

/* An output that was not a plain new file. The rename that finishes a file put a regular
 * file in place of a device (as root: /dev/full, /dev/null), a pipe or a symbolic link, and
 * over the model or the input read (--align where -m was meant); with stdout closed the
 * output took its descriptor and the translations landed in it. Now: devices and pipes are
 * written in place, a link's file is replaced and the link kept, the model and stdin's file
 * are refused, a closed stdout is a failed write, and a folder or an empty name is refused
 * before anything is translated. */
START_TEST(hostile_outputs_that_are_not_plain_new_files) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char model[512], to_null[512], target[512], linked[512], input[512], dir[512], out[512];
    char script[2048];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    scratch_path(&s, "null-link", to_null, sizeof to_null);
    scratch_path(&s, "target.txt", target, sizeof target);
    scratch_path(&s, "link.txt", linked, sizeof linked);
    scratch_path(&s, "input.txt", input, sizeof input);
    scratch_path(&s, "run", dir, sizeof dir);
    scratch_path(&s, "closed.txt", out, sizeof out);
    ck_assert_int_eq(symlink("/dev/null", to_null), 0);
    scratch_write_text(&s, "target.txt", "old\n");
    ck_assert_int_eq(symlink(target, linked), 0);
    scratch_write_text(&s, "input.txt", "the black cat\n");
    RunResult r;
    struct stat st;
    run_program(&r, &s,
                (const char *const[]){"../bin/translate", "-m", model, "--align", to_null,
                                      "the black cat", NULL},
                NULL, 60, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(lstat(to_null, &st) == 0 && S_ISLNK(st.st_mode), "the link to /dev/null went");
    run_program(&r, &s,
                (const char *const[]){"../bin/align", "-m", model, "--format", "pharaoh", "-o",
                                      linked, "the black cat", NULL},
                NULL, 60, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    size_t size;
    char *written = (char *)slurp_file(target, &size);
    ck_assert_msg(lstat(linked, &st) == 0 && S_ISLNK(st.st_mode) && size > 0 &&
                      strncmp(written, "old", 3) != 0,
                  "the link was replaced, or its file not written");
    free(written);
    size_t model_size, after_size;
    unsigned char *before = slurp_file(model, &model_size);
    run_program(&r, &s,
                (const char *const[]){"../bin/translate", "-m", model, "--align", model,
                                      "the black cat", NULL},
                NULL, 60, NULL);
    assert_one_line_error(&r, "translate", 1, (const char *const[]){"the same file", NULL});
    run_program(
        &r, &s,
        (const char *const[]){"../bin/align", "-m", model, "-o", model, "the black cat", NULL},
        NULL, 60, NULL);
    assert_one_line_error(&r, "align", 1, (const char *const[]){"the same file", NULL});
    unsigned char *after = slurp_file(model, &after_size);
    ck_assert_msg(after_size == model_size && memcmp(before, after, after_size) == 0,
                  "the model changed");
    free(before), free(after);
    run_program(&r, &s,
                (const char *const[]){"../bin/translate", "-m", model, "--align", input, NULL},
                input, 60, NULL);
    assert_one_line_error(&r, "translate", 1,
                          (const char *const[]){"the file standard input reads", NULL});
    written = (char *)slurp_file(input, &size);
    ck_assert_msg(strcmp(written, "the black cat\n") == 0, "the input changed: '%s'", written);
    free(written);
    const char *const refused[][2] = {{"", "an empty file name"}, {dir, "is a folder"}};
    for (size_t k = 0; k < 2; k++) {
        run_program(&r, &s,
                    (const char *const[]){"../bin/translate", "-m", model, "--align", refused[k][0],
                                          "the black cat", NULL},
                    NULL, 60, NULL);
        assert_one_line_error(&r, "translate", 1, (const char *const[]){refused[k][1], NULL});
        ck_assert_msg(r.out[0] == '\0', "translated before refusing: '%s'", r.out);
    }
    snprintf(script, sizeof script, "../bin/translate -m '%s' --align '%s' 'the black cat' >&-",
             model, out);
    run_program(&r, &s, (const char *const[]){"/bin/sh", "-c", script, NULL}, NULL, 60, NULL);
    assert_one_line_error(&r, "translate", 1,
                          (const char *const[]){"cannot write to standard output", NULL});
    ck_assert_msg(access(out, F_OK) != 0, "the alignments were written with stdout closed");
    scratch_free(&s);
}
END_TEST

/* Output that stdout could not take, and a --compute typo. --help > /dev/full exited 0 in
 * every program; bin/align's explanation and --eval-gold scores, and quantize --check, went
 * nowhere with exit 0 or without a word; --compute garbage was found only when the model was
 * loaded (exit 1, no "see --help"). NMT_ISA's value was printed raw, line ends and escapes. */
START_TEST(hostile_stdout_failures_and_option_values) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char model[512], script[2048];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    static const char *const programs[] = {"train",    "translate", "align",          "evaluate",
                                           "quantize", "plot",      "attend",         "gradcheck",
                                           "gradref",  "gencorpus", "reference-train"};
    RunResult r;
    for (size_t k = 0; k < sizeof programs / sizeof programs[0]; k++) {
        snprintf(script, sizeof script, "../bin/%s --help > /dev/full", programs[k]);
        run_program(&r, &s, (const char *const[]){"/bin/sh", "-c", script, NULL}, NULL, 60, NULL);
        assert_one_line_error(&r, programs[k], 1,
                              (const char *const[]){"cannot write to standard output", NULL});
    }
    const char *const commands[][2] = {
        {"align", "../bin/align -m '%s' --explain 'the black cat' > /dev/full"},
        {"align", "../bin/align -m '%s' --eval-gold ../data/toy/test.align --pairs "
                  "../data/toy/test.tsv > /dev/full"},
        {"quantize", "../bin/quantize --check '%s' > /dev/full"},
    };
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++) {
        snprintf(script, sizeof script, commands[k][1], model);
        run_program(&r, &s, (const char *const[]){"/bin/sh", "-c", script, NULL}, NULL, 60, NULL);
        assert_one_line_error(
            &r, commands[k][0], 1,
            (const char *const[]){"cannot write", "No space left on device", NULL});
    }
    /* empty names, and a picture named for another format */
    char config[512], log[512], png[512];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "run/train_log.tsv", log, sizeof log);
    scratch_path(&s, "curves.png", png, sizeof png);
    run_program(&r, &s, (const char *const[]){"../bin/translate", "-m", "", "the cat", NULL}, NULL,
                60, NULL);
    assert_one_line_error(&r, "translate", 1,
                          (const char *const[]){"-m: an empty file name", NULL});
    run_program(&r, &s, (const char *const[]){"../bin/train", config, "--resume=", NULL}, NULL, 60,
                NULL);
    assert_one_line_error(&r, "train", 2,
                          (const char *const[]){"--resume= names no checkpoint", NULL});
    run_program(&r, &s, (const char *const[]){"../bin/plot", log, "-o", png, NULL}, NULL, 60, NULL);
    assert_one_line_error(&r, "plot", 2, (const char *const[]){"plot writes SVG", NULL});
    ck_assert_msg(access(png, F_OK) != 0, "plot wrote SVG into %s", png);
    static const char *const computing[] = {"translate", "align", "evaluate"};
    for (size_t k = 0; k < 3; k++) {
        char program[64];
        snprintf(program, sizeof program, "../bin/%s", computing[k]);
        run_program(&r, &s,
                    (const char *const[]){program, "-m", "no-such-model.ckpt", "--compute", "int4",
                                          "--test", "x.tsv", NULL},
                    NULL, 60, NULL);
        if (k < 2) /* translate and align take no --test: leave it out */
            run_program(&r, &s,
                        (const char *const[]){program, "-m", "no-such-model.ckpt", "--compute",
                                              "int4", "the cat", NULL},
                        NULL, 60, NULL);
        assert_one_line_error(
            &r, computing[k], 2,
            (const char *const[]){"--compute: unknown compute type 'int4'", "see", NULL});
    }
    snprintf(script, sizeof script,
             "NMT_ISA=\"$(printf 'x\\nevil\\033[31m')\" ../bin/translate -m '%s' 'the cat'", model);
    run_program(&r, &s, (const char *const[]){"/bin/sh", "-c", script, NULL}, NULL, 60, NULL);
    scratch_free(&s);
    ck_assert_msg(r.status == 0, "%s", r.err);
#ifndef REAL_DOUBLE /* the double build runs the portable code alone and never reads NMT_ISA */
    ck_assert_msg(strstr(r.err, "NMT_ISA='x\\nevil\\x1B[31m'") && !strchr(r.err, '\033') &&
                      strchr(r.err, '\n') == r.err + strlen(r.err) - 1,
                  "NMT_ISA's value not quoted on one line: %s", r.err);
#endif
}
END_TEST

/* Under a file-size limit (ulimit -f) a program was killed by SIGXFSZ in the middle of its
 * write: exit 153, no word, its temporary file left beside the output. Now the write fails
 * as on a full disk: one line naming the output, no temporary file, no output. */
START_TEST(hostile_file_size_limit_fails_a_write_cleanly) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char log[512], svg[512], corpus[512], dumped[512];
    scratch_path(&s, "run/train_log.tsv", log, sizeof log);
    scratch_path(&s, "curves.svg", svg, sizeof svg);
    scratch_path(&s, "corpus", corpus, sizeof corpus);
    scratch_path(&s, "corpus/train.tsv", dumped, sizeof dumped);
    RunLimits limits = {.file_size = 1024};
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/plot", log, "-o", svg, NULL}, NULL, 60,
                &limits);
    assert_one_line_error(&r, "plot", 1, (const char *const[]){svg, "File too large", NULL});
    ck_assert_msg(access(svg, F_OK) != 0 && !temporary_file_beside(svg),
                  "plot left its picture or a temporary file");
    run_program(&r, &s, (const char *const[]){"../bin/gencorpus", "-o", corpus, NULL}, NULL, 60,
                &limits);
    assert_one_line_error(&r, "gencorpus", 1,
                          (const char *const[]){dumped, "File too large", NULL});
    ck_assert_msg(access(dumped, F_OK) != 0 && !temporary_file_beside(dumped),
                  "gencorpus left its corpus or a temporary file");
    scratch_free(&s);
}
END_TEST

/* bin/gradref stopped half way by the file-size limit, over an earlier whole dump: one line
 * naming the file and the dump, and no config.json, so that the mixed files cannot pass for a
 * whole dump. */
START_TEST(hostile_gradref_half_written_dump_has_no_config) {
    Scratch s;
    scratch_make(&s);
    char pairs[512], dump[512], config[512], cmd[2048];
    scratch_path(&s, "pairs.tsv", pairs, sizeof pairs);
    scratch_path(&s, "dump", dump, sizeof dump);
    scratch_path(&s, "dump/config.json", config, sizeof config);
    snprintf(cmd, sizeof cmd, "head -n 4 ../data/toy/dev.tsv > %s", pairs);
    ck_assert_int_eq(system(cmd), 0);
    const char *const gradref[] = {
        "../bin/gradref", "-c", "../configs/tiny.ini", "--pairs", pairs, "-o", dump, NULL};
    RunResult r;
    run_program(&r, &s, gradref, NULL, 60, NULL);
    ck_assert_msg(r.status == 0, "gradref failed (%d): %s", r.status, r.err);
    ck_assert_int_eq(access(config, F_OK), 0);
    run_program(&r, &s, gradref, NULL, 60, &(RunLimits){.file_size = 1024});
    assert_one_line_error(&r, "gradref", 1,
                          (const char *const[]){"File too large", dump, "no config.json", NULL});
    ck_assert_msg(access(config, F_OK) != 0, "the half-written dump kept the earlier config.json");
    scratch_free(&s);
}
END_TEST

/* bin/align --format npy with an input it refuses, over an earlier run's files of that index:
 * they go, and the refusal's one line says so (before, they stayed as if this run's). */
START_TEST(hostile_align_npy_refused_input_keeps_no_earlier_files) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char model[512], base[512], second[512], tokens[512], third[512], named[512];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    scratch_path(&s, "a.npy", base, sizeof base);
    scratch_path(&s, "a.1.npy", second, sizeof second);
    scratch_path(&s, "a.1.src.txt", tokens, sizeof tokens);
    scratch_path(&s, "a.2.npy", third, sizeof third);
    scratch_path(&s, "a.1.*", named, sizeof named);
    RunResult r;
    run_program(&r, &s,
                (const char *const[]){"../bin/align", "-m", model, "--format", "npy", "-o", base,
                                      "the cat", "the dog", "the cat", NULL},
                NULL, 60, NULL);
    ck_assert_msg(r.status == 0, "align failed (%d): %s", r.status, r.err);
    ck_assert_int_eq(access(second, F_OK), 0);
    run_program(&r, &s,
                (const char *const[]){"../bin/align", "-m", model, "--format", "npy", "-o", base,
                                      "the cat", "", "the cat", NULL},
                NULL, 60, NULL);
    assert_one_line_error(&r, "align", 1,
                          (const char *const[]){"argument 2", "empty", named, "removed", NULL});
    ck_assert_msg(access(second, F_OK) != 0 && access(tokens, F_OK) != 0,
                  "the refused input's earlier files stayed");
    ck_assert_int_eq(access(third, F_OK), 0);
    scratch_free(&s);
}
END_TEST

/* Sets every value of tensor p of the trained model to `value` (or, for an int8 model, every
 * row scale of p) and saves it as path. */
static void forge_huge_weights(const char *trained, const char *path, ParamId p, double value,
                               bool int8) {
    NmtModel nm;
    Error err;
    ck_assert_msg(checkpoint_load(trained, &nm, NULL, NULL, &err) == 0, "%s", err.msg);
    if (int8) ck_assert_msg(model_quantize(&nm.model, &err) == 0, "%s", err.msg);
    const ParamInfo *info = &nm.model.table.info[p];
    ck_assert_uint_gt(info->size, 0);
    if (int8)
        for (int r = 0; r < nm.model.quant->m[p].rows; r++) nm.model.quant->m[p].scale[r] = value;
    else
        for (size_t i = 0; i < info->size; i++) nm.model.params[info->offset + i] = value;
    ck_assert_msg(checkpoint_save(path, &nm, NULL, &err) == 0, "%s", err.msg);
    nmt_model_free(&nm);
}

/* Finite weights large enough to overflow (float out.w at 3e38, int8 row scales of 2.6e36) made
 * every probability NaN: bin/translate printed blank lines with exit 0 and bin/align --format json
 * wrote bare -nan (issue #45). The model is refused when it is opened, naming the file; a
 * search whose probabilities are not finite is refused, never a blank; JSON writes null. */
START_TEST(hostile_checkpoint_overflowing_weights) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char trained[512], path[512];
    scratch_path(&s, "run/best.ckpt", trained, sizeof trained);
    scratch_path(&s, "huge.ckpt", path, sizeof path);
    /* finite in the build's reals, and within a factor of the largest, so they overflow; the
     * int8 row scales are floats, whose largest a double build's arithmetic absorbs */
    bool float_build = sizeof(real) == sizeof(float);
    const double huge = float_build ? 3e38 : 1.5e308;
    const struct {
        double value;
        bool int8;
    } cases[] = {{huge, false}, {-huge, false}, {2.6e36, true}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0] - !float_build; k++) {
        forge_huge_weights(trained, path, P_OUT_W, cases[k].value, cases[k].int8);
        const char *const programs[][9] = {
            {"../bin/translate", "-m", path, "I love cats", NULL},
            {"../bin/align", "-m", path, "--format", "json", "I love cats", NULL},
            {"../bin/align", "-m", path, "--format", "json", "--ref", "j'aime les chats",
             "I love cats", NULL}};
        for (size_t p = 0; p < 3; p++) {
            RunResult r;
            run_program(&r, &s, programs[p], NULL, 60, NULL);
            assert_one_line_error(
                &r, p == 0 ? "translate" : "align", 1,
                (const char *const[]){path, "overflows on a probe sentence", NULL});
            ck_assert_ptr_null(strstr(r.out, "nan"));
        }
    }
    /* past the probe (a caller that loads the model itself): the search of the probe's
     * sentence (the first source words, greedy), whose probabilities overflow, is refused */
    forge_huge_weights(trained, path, P_OUT_W, huge, false);
    NmtModel nm;
    Error err;
    ck_assert_int_eq(checkpoint_load(path, &nm, NULL, NULL, &err), 0);
    char probe[512] = "";
    for (int id = TOK_SPECIALS; id < TOK_SPECIALS + 8 && id < (int)nm.src_vocab.size; id++)
        snprintf(probe + strlen(probe), sizeof probe - strlen(probe), "%s%s", probe[0] ? " " : "",
                 vocab_token(&nm.src_vocab, id));
    Translator t;
    SearchOptions opt = {.beam = 1, .nbest = 1, .len_norm = 1.0, .max_len = 8};
    ck_assert_int_eq(translator_init(&t, &nm, 1, &opt, &err), 0);
    TranslatedText out;
    const char *texts[1] = {probe};
    ck_assert_int_eq(translator_run(&t, texts, 1, &out, &err), 0);
    ck_assert_int_eq(out.refused, 1);
    assert_contains(out.error.msg, "not finite numbers");
    translated_free(&out, 1);
    translator_free(&t);
    nmt_model_free(&nm);
    /* JSON has no NaN: a non-finite probability or weight is written as null */
    real alpha[2] = {NAN, 1}, prob[1] = {INFINITY};
    char *src_tokens[2] = {"cats", "</s>"}, *tgt_tokens[1] = {"</s>"};
    Alignment a = {.rows = 1,
                   .cols = 2,
                   .complete = 1,
                   .alpha = alpha,
                   .energy = alpha,
                   .prob = prob,
                   .src_tokens = src_tokens,
                   .tgt_tokens = tgt_tokens,
                   .source = "cats",
                   .translation = ""};
    char json[1024] = "";
    FILE *f = fmemopen(json, sizeof json - 1, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(alignment_write(f, ALIGN_JSON, &a, &err), 0);
    fclose(f);
    assert_contains(json, "\"alpha\": [[null, 1]], \"prob\": [null]}");
    scratch_free(&s);
}
END_TEST

Suite *hostile_suite(void) {
    Suite *s = suite_create("hostile");
    TCase *config = tcase_create("config");
    tcase_set_timeout(config, 120);
    tcase_add_test(config, hostile_config_unknown_section);
    tcase_add_test(config, hostile_config_unknown_key);
    tcase_add_test(config, hostile_config_duplicate_key);
    tcase_add_test(config, hostile_config_missing_equals);
    tcase_add_test(config, hostile_config_value_out_of_range);
    tcase_add_test(config, hostile_config_value_of_wrong_type);
    tcase_add_test(config, hostile_config_overlong_line);
    tcase_add_test(config, hostile_config_binary_file);
    tcase_add_test(config, hostile_config_missing_or_directory);
    suite_add_tcase(s, config);

    TCase *corpus = tcase_create("corpus");
    tcase_set_timeout(corpus, 120);
    tcase_add_test(corpus, hostile_corpus_invalid_utf8);
    tcase_add_test(corpus, hostile_corpus_missing_tab);
    tcase_add_test(corpus, hostile_corpus_empty_file);
    tcase_add_test(corpus, hostile_corpus_control_characters);
    tcase_add_test(corpus, hostile_corpus_carriage_returns_alone);
    tcase_add_test(corpus, hostile_vocabulary_too_small_names_its_key);
    tcase_add_test(corpus, hostile_corpus_missing_or_directory);
    tcase_add_test(corpus, hostile_corpus_without_line_ends);
    tcase_add_test(corpus, hostile_corpus_crlf_line_ends);
    tcase_add_test(corpus, hostile_corpus_byte_order_mark);
    tcase_add_test(corpus, hostile_corpus_empty_lines);
    tcase_add_test(corpus, hostile_corpus_mebibyte_line);
    suite_add_tcase(s, corpus);

    TCase *checkpoint = tcase_create("checkpoint");
    tcase_set_timeout(checkpoint, 120);
    tcase_add_test(checkpoint, hostile_checkpoint_wrong_magic);
    tcase_add_test(checkpoint, hostile_checkpoint_other_version);
    tcase_add_test(checkpoint, hostile_checkpoint_large_text_is_refused_by_its_start);
    tcase_add_loop_test(checkpoint, hostile_checkpoint_header_field, 0, N_HEADER_FORGERIES);
    tcase_add_test(checkpoint, hostile_checkpoint_huge_sizes_are_not_allocated);
    tcase_add_test(checkpoint, hostile_checkpoint_truncated_at_every_byte);
    tcase_add_test(checkpoint, hostile_checkpoint_flipped_bit);
    tcase_add_test(checkpoint, hostile_checkpoint_vocabulary_mismatch);
    tcase_add_test(checkpoint, hostile_checkpoint_non_finite_values);
    tcase_add_test(checkpoint, hostile_checkpoint_trailing_bytes);
    tcase_add_test(checkpoint, hostile_checkpoint_directory);
    tcase_add_test(checkpoint, hostile_checkpoint_resume_size_mismatch);
    tcase_add_test(checkpoint, hostile_quantized_checkpoint_fields);
    tcase_add_test(checkpoint, hostile_quantized_checkpoint_damage);
    suite_add_tcase(s, checkpoint);

    TCase *input = tcase_create("translation input");
    tcase_set_timeout(input, 120);
    tcase_add_test(input, hostile_input_empty_string);
    tcase_add_test(input, hostile_input_only_spaces);
    tcase_add_test(input, hostile_input_only_unknown_words);
    tcase_add_test(input, hostile_input_ten_thousand_tokens);
    tcase_add_test(input, hostile_input_invalid_utf8);
    tcase_add_test(input, hostile_input_control_characters);
    tcase_add_test(input, hostile_input_nul_byte);
    tcase_add_test(input, hostile_input_line_longer_than_the_most);
    tcase_add_test(input, hostile_input_byte_order_mark_and_wide_spaces);
    suite_add_tcase(s, input);

    TCase *found = tcase_create("fuzz findings");
    tcase_set_timeout(found, 120);
    tcase_add_test(found, hostile_fuzz_override_with_line_break);
    tcase_add_test(found, hostile_fuzz_printed_config_reloads);
    tcase_add_test(found, hostile_fuzz_vocabulary_token_with_line_break);
    tcase_add_test(found, hostile_messages_quote_user_text);
    suite_add_tcase(s, found);

    TCase *surfaces = tcase_create("new surfaces");
    tcase_set_timeout(surfaces, 120);
    tcase_add_test(surfaces, hostile_two_trainings_one_folder);
    tcase_add_test(surfaces, hostile_lock_file_that_is_not_a_lock);
    tcase_add_test(surfaces, hostile_bpe_mebibyte_word_in_dev_and_test);
    tcase_add_test(surfaces, hostile_quantize_onto_its_input);
    tcase_add_test(surfaces, hostile_plot_and_attend_onto_their_input);
    tcase_add_test(surfaces, hostile_file_size_limit_fails_a_write_cleanly);
    tcase_add_test(surfaces, hostile_gradref_half_written_dump_has_no_config);
    tcase_add_test(surfaces, hostile_align_npy_refused_input_keeps_no_earlier_files);
    tcase_add_test(surfaces, hostile_outputs_that_are_not_plain_new_files);
    tcase_add_test(surfaces, hostile_stdout_failures_and_option_values);
    tcase_add_test(surfaces, hostile_checkpoint_overflowing_weights);
    suite_add_tcase(s, surfaces);
    return s;
}

/*
 * test_config.c: the INI reader and the training configuration.
 *
 * Covers the defaults, the real files in configs/, path resolution, command-line overrides,
 * printing and --help, and every way a file can be wrong: each error must name the file, the
 * line and the key so a user can fix it without guessing. Fixture files are written into a
 * fresh mkdtemp folder per test and removed afterwards. Run from tests/ (../configs/...).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/suites.h"
#include "train/config.h"
#include "train/ini.h"

/* The two required keys, for tests about something else. */
#define REQUIRED_KEYS "[data]\ntrain = t.tsv\ndev = d.tsv\n"

/* A scratch folder holding one config file, test.ini. */
typedef struct {
    char dir[64];
    char ini[128];
} Scratch;

static void scratch_make(Scratch *scratch) {
    snprintf(scratch->dir, sizeof scratch->dir, "/tmp/nmt-config-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(scratch->dir));
    snprintf(scratch->ini, sizeof scratch->ini, "%s/test.ini", scratch->dir);
}

static void write_bytes(const char *path, const void *bytes, size_t length) {
    FILE *out = fopen(path, "wb");
    ck_assert_msg(out != NULL, "cannot write %s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(bytes, 1, length, out), length);
    ck_assert_int_eq(fclose(out), 0);
}

static void scratch_remove(const Scratch *scratch) {
    remove(scratch->ini);
    rmdir(scratch->dir);
}

/* Writes `length` bytes as test.ini in a fresh folder and loads it with the overrides.
 * The folder is gone afterwards; scratch->ini still names the file for checking messages. */
static int load_bytes(Scratch *scratch, const char *bytes, size_t length,
                      const char *const *overrides, int n_overrides, Config *cfg, Error *err) {
    scratch_make(scratch);
    write_bytes(scratch->ini, bytes, length);
    int status = config_load(cfg, scratch->ini, overrides, n_overrides, err);
    scratch_remove(scratch);
    return status;
}

static int load_text(Scratch *scratch, const char *text, Config *cfg, Error *err) {
    return load_bytes(scratch, text, strlen(text), NULL, 0, cfg, err);
}

static void assert_mentions(const char *message, const char *expected) {
    ck_assert_msg(strstr(message, expected) != NULL, "message '%s' does not mention '%s'", message,
                  expected);
}

/* Asserts that loading these bytes fails with a message that starts with "FILE:LINE: " and
 * mentions `what` (typically the section and key). */
static void expect_failure_bytes(const char *bytes, size_t length, int line, const char *what) {
    Scratch scratch;
    Config cfg;
    Error err = {""};
    ck_assert_int_eq(load_bytes(&scratch, bytes, length, NULL, 0, &cfg, &err), -1);
    char location[160];
    snprintf(location, sizeof location, "%s:%d: ", scratch.ini, line);
    ck_assert_msg(strncmp(err.msg, location, strlen(location)) == 0,
                  "message '%s' does not start with '%s'", err.msg, location);
    assert_mentions(err.msg, what);
    ck_assert_ptr_null(strchr(err.msg, '\n')); /* one line */
}

static void expect_failure(const char *text, int line, const char *what) {
    expect_failure_bytes(text, strlen(text), line, what);
}

/* Everything config_print writes for cfg, as a malloc'ed string. */
static char *printed(const Config *cfg) {
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    ck_assert_ptr_nonnull(out);
    config_print(cfg, out);
    ck_assert_int_eq(fclose(out), 0);
    return text;
}

START_TEST(test_defaults) {
    Config cfg;
    config_defaults(&cfg);
    ck_assert_str_eq(cfg.data.train, "");
    ck_assert_str_eq(cfg.data.dev, "");
    ck_assert_str_eq(cfg.data.test, "");
    ck_assert(cfg.data.lowercase);
    ck_assert_int_eq(cfg.data.max_len, 50);
    ck_assert_int_eq(cfg.data.src_vocab_size, 8000);
    ck_assert_int_eq(cfg.data.tgt_vocab_size, 8000);
    ck_assert_int_eq(cfg.data.min_count, 1);

    ck_assert_int_eq(cfg.model.emb_size, 64);
    ck_assert_int_eq(cfg.model.enc_hidden, 128);
    ck_assert(cfg.model.bidirectional);
    ck_assert_int_eq(cfg.model.dec_hidden, 128);
    ck_assert_int_eq(cfg.model.att_size, 128);
    ck_assert_int_eq(cfg.model.readout_size, 128);
    ck_assert_int_eq(cfg.model.score, SCORE_ADDITIVE);

    ck_assert_double_eq(cfg.optim.lr, 0.001);
    ck_assert_double_eq(cfg.optim.beta1, 0.9);
    ck_assert_double_eq(cfg.optim.beta2, 0.999);
    ck_assert_double_eq(cfg.optim.eps, 1e-8);
    ck_assert_double_eq(cfg.optim.clip_norm, 1.0);
    ck_assert_int_eq(cfg.optim.schedule, LR_SCHEDULE_CONSTANT);
    ck_assert_int_eq(cfg.optim.warmup_steps, 0);
    ck_assert_double_eq(cfg.optim.decay_rate, 0.5);
    ck_assert_int_eq(cfg.optim.decay_steps, 1000);
    ck_assert_double_eq(cfg.optim.plateau_factor, 0.5);
    ck_assert_int_eq(cfg.optim.plateau_patience, 2);
    ck_assert_double_eq(cfg.optim.min_lr, 1e-5);

    ck_assert_int_eq(cfg.train.batch_size, 32);
    ck_assert_int_eq(cfg.train.epochs, 10);
    ck_assert_int_eq(cfg.train.max_steps, 0);
    ck_assert_double_eq(cfg.train.dropout, 0.0);
    ck_assert_double_eq(cfg.train.word_dropout, 0.0);
    ck_assert_double_eq(cfg.train.label_smoothing, 0.0);
    ck_assert_uint_eq(cfg.train.seed, 1);
    ck_assert_int_eq(cfg.train.threads, 0);
    ck_assert_int_eq(cfg.train.valid_every, 500);
    ck_assert_int_eq(cfg.train.patience, 5);
    ck_assert_int_eq(cfg.train.log_every, 100);
    ck_assert_str_eq(cfg.train.out_dir, "runs/model");
}
END_TEST

START_TEST(test_toy_config) {
    Config cfg;
    Error err = {""};
    ck_assert_msg(config_load(&cfg, "../configs/toy.ini", NULL, 0, &err) == 0, "%s", err.msg);
    /* Paths in the file are relative to configs/, so they come out relative to tests/, and
     * normalised: "../data/toy/train.tsv", not "../configs/../data/toy/train.tsv". */
    ck_assert_str_eq(cfg.data.train, "../data/toy/train.tsv");
    ck_assert_str_eq(cfg.data.dev, "../data/toy/dev.tsv");
    ck_assert_str_eq(cfg.data.test, "../data/toy/test.tsv");
    ck_assert_str_eq(cfg.train.out_dir, "../runs/toy");
    ck_assert_int_eq(cfg.model.emb_size, 64);
    ck_assert_int_eq(cfg.model.enc_hidden, 128);
    ck_assert(cfg.model.bidirectional);
    ck_assert_int_eq(cfg.model.dec_hidden, 128);
    ck_assert_int_eq(cfg.model.att_size, 128);
    ck_assert_int_eq(cfg.model.readout_size, 128);
    ck_assert_int_eq(cfg.train.batch_size, 32);
    ck_assert_double_eq(cfg.optim.lr, 0.002);
    ck_assert_int_eq(cfg.optim.schedule, LR_SCHEDULE_PLATEAU);
    ck_assert_double_eq(cfg.optim.clip_norm, 1.0);
    ck_assert_int_eq(cfg.train.epochs, 20);
    ck_assert_int_eq(cfg.train.valid_every, 400);
    ck_assert_int_eq(cfg.train.patience, 4);
    ck_assert_double_eq(cfg.train.dropout, 0.1);
    ck_assert_double_eq(cfg.train.label_smoothing, 0.1);
    ck_assert_uint_eq(cfg.train.seed, 1);
    ck_assert_int_eq(cfg.train.threads, 0);
}
END_TEST

START_TEST(test_tiny_config) {
    Config cfg;
    Error err = {""};
    ck_assert_msg(config_load(&cfg, "../configs/tiny.ini", NULL, 0, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(cfg.data.train, "../data/toy/train.tsv");
    ck_assert_str_eq(cfg.data.dev, "../data/toy/dev.tsv");
    ck_assert_int_eq(cfg.model.emb_size, 8);
    ck_assert_int_eq(cfg.model.enc_hidden, 8);
    ck_assert_int_eq(cfg.model.dec_hidden, 8);
    ck_assert_int_eq(cfg.model.att_size, 8);
    ck_assert_int_eq(cfg.model.readout_size, 8);
    ck_assert_int_eq(cfg.train.batch_size, 8);
    ck_assert_int_eq(cfg.train.epochs, 1);
}
END_TEST

/* base.ini, the recommended settings for a real corpus, loads and says what its comments say. */
START_TEST(test_base_config) {
    Config cfg;
    Error err = {""};
    ck_assert_msg(config_load(&cfg, "../configs/base.ini", NULL, 0, &err) == 0, "%s", err.msg);
    ck_assert(cfg.data.subwords == SUBWORDS_BPE && !cfg.data.lowercase);
    ck_assert_int_eq(cfg.data.src_merges, 8000);
    ck_assert_int_eq(cfg.data.tgt_merges, 8000);
    ck_assert_int_eq(cfg.model.emb_size, 256);
    ck_assert_int_eq(cfg.model.dec_hidden, 256);
    ck_assert_int_eq(cfg.train.batch_tokens, 1500);
    ck_assert(cfg.model.tie_embeddings && cfg.model.layer_norm);
    ck_assert_double_eq(cfg.train.word_dropout, 0);
    ck_assert_double_eq(cfg.optim.lr, 0.004);
    ck_assert_double_eq(cfg.train.ema, 0.9999);
    ck_assert_int_eq(cfg.optim.schedule, LR_SCHEDULE_BUDGET);
    ck_assert_double_eq(cfg.optim.decay_share, 0.5);
    ck_assert_int_eq(cfg.train.epochs, 0);
    ck_assert_double_eq(cfg.train.max_minutes, 60);
    ck_assert_str_eq(cfg.train.out_dir, "../runs/base");
}
END_TEST

/* toy.ini is meant to show every key: it must set exactly the keys --help lists. */
START_TEST(test_toy_config_lists_every_key) {
    char *help = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&help, &size);
    ck_assert_ptr_nonnull(out);
    config_help(out);
    ck_assert_int_eq(fclose(out), 0);

    FILE *toy = fopen("../configs/toy.ini", "r");
    ck_assert_ptr_nonnull(toy);
    char line[1100], section[64] = "", key[64];
    int keys_in_file = 0;
    while (fgets(line, sizeof line, toy)) {
        if (sscanf(line, "[%63[^]]]", section) == 1) continue;
        if (line[0] == '#' || sscanf(line, "%63s =", key) != 1) continue;
        char name[140];
        snprintf(name, sizeof name, "\n  %s.%s ", section, key);
        assert_mentions(help, name);
        keys_in_file++;
    }
    fclose(toy);

    int keys_in_help = 0;
    for (const char *p = help; (p = strstr(p, "\n  ")) != NULL; p++)
        if (p[3] != ' ') keys_in_help++; /* a key's line, not the doc line under it */
    ck_assert_int_eq(keys_in_file, keys_in_help);
    free(help);
}
END_TEST

START_TEST(test_help_describes_keys) {
    char *help = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&help, &size);
    ck_assert_ptr_nonnull(out);
    config_help(out);
    ck_assert_int_eq(fclose(out), 0);
    assert_mentions(help, "data.train");
    assert_mentions(help, "required");
    assert_mentions(help, "default 0.001, in (0, 10]");
    assert_mentions(help, "default 50, in [1, 1000]");
    assert_mentions(help, "default 1.0, >= 0");
    assert_mentions(help, "one of constant|warmup_decay|plateau|budget");
    assert_mentions(help, "base learning rate of Adam");
    free(help);
}
END_TEST

START_TEST(test_paths_resolved_against_config_folder) {
    Scratch scratch;
    Config cfg;
    Error err = {""};
    const char *text = "[data]\ntrain = corpus/train.tsv\ndev = /abs/dev.tsv\n";
    ck_assert_msg(load_text(&scratch, text, &cfg, &err) == 0, "%s", err.msg);
    char expected[256];
    snprintf(expected, sizeof expected, "%s/corpus/train.tsv", scratch.dir);
    ck_assert_str_eq(cfg.data.train, expected);
    ck_assert_str_eq(cfg.data.dev, "/abs/dev.tsv"); /* absolute paths are kept */
    ck_assert_str_eq(cfg.data.test, "");            /* optional and not given */
    snprintf(expected, sizeof expected, "%s/runs/model", scratch.dir);
    ck_assert_str_eq(cfg.train.out_dir, expected); /* the default, like the file's paths */
}
END_TEST

START_TEST(test_syntax_accepted) {
    Scratch scratch;
    Config cfg;
    Error err = {""};
    /* The last line has no line end: reading its value proves it is not dropped. */
    const char *text = "# a comment\n"
                       "; another comment\n"
                       "\n"
                       "   [ data ]   # a header comment\n"
                       "train=t.tsv\n"
                       "\tdev   =   d.tsv   # inline comment\n"
                       "test = a#b.tsv\n"
                       "[model]\n"
                       "emb_size = 16 # E\n"
                       "bidirectional = off\n"
                       "[optim]\n"
                       "schedule = warmup_decay\n"
                       "lr = 2.5e-3\n"
                       "[train]\n"
                       "seed = 18446744073709551615";
    ck_assert_msg(load_text(&scratch, text, &cfg, &err) == 0, "%s", err.msg);
    ck_assert(strstr(cfg.data.train, "/t.tsv") != NULL);
    char expected[256];
    snprintf(expected, sizeof expected, "%s/d.tsv", scratch.dir);
    ck_assert_str_eq(cfg.data.dev, expected);
    snprintf(expected, sizeof expected, "%s/a#b.tsv", scratch.dir);
    ck_assert_str_eq(cfg.data.test, expected);
    ck_assert_int_eq(cfg.model.emb_size, 16);
    ck_assert(!cfg.model.bidirectional);
    ck_assert_int_eq(cfg.optim.schedule, LR_SCHEDULE_WARMUP_DECAY);
    ck_assert_double_eq(cfg.optim.lr, 2.5e-3);
    ck_assert_uint_eq(cfg.train.seed, UINT64_MAX);
}
END_TEST

START_TEST(test_bool_words) {
    static const struct {
        const char *word;
        bool value;
    } cases[] = {{"true", true}, {"false", false}, {"yes", true}, {"no", false},  {"on", true},
                 {"off", false}, {"1", true},      {"0", false},  {"TRUE", true}, {"No", false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Scratch scratch;
        Config cfg;
        Error err = {""};
        char text[128];
        snprintf(text, sizeof text, REQUIRED_KEYS "lowercase = %s\n", cases[i].word);
        ck_assert_msg(load_text(&scratch, text, &cfg, &err) == 0, "%s", err.msg);
        ck_assert_msg(cfg.data.lowercase == cases[i].value, "'%s' read wrong", cases[i].word);
    }
}
END_TEST

START_TEST(test_crlf_and_bom) {
    Scratch scratch;
    Config cfg;
    Error err = {""};
    const char *crlf = "[data]\r\ntrain = t.tsv\r\ndev = d.tsv\r\n[model]\r\nemb_size = 12\r\n";
    ck_assert_msg(load_text(&scratch, crlf, &cfg, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(cfg.model.emb_size, 12);
    ck_assert_msg(strstr(cfg.data.dev, "\r") == NULL, "CR kept in '%s'", cfg.data.dev);

    const char *bom = "\xEF\xBB\xBF[data]\ntrain = t.tsv\ndev = d.tsv\n[model]\nemb_size = 13\n";
    ck_assert_msg(load_text(&scratch, bom, &cfg, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(cfg.model.emb_size, 13);

    const char *both = "\xEF\xBB\xBF[data]\r\ntrain = t.tsv\r\ndev = d.tsv\r\n";
    ck_assert_msg(load_text(&scratch, both, &cfg, &err) == 0, "%s", err.msg);

    /* A byte-order mark anywhere but the start of the file is not one. */
    expect_failure(REQUIRED_KEYS "\xEF\xBB\xBF[model]\n", 4, "no '='");
}
END_TEST

START_TEST(test_unknown_section) {
    expect_failure(REQUIRED_KEYS "[bogus]\nx = 1\n", 4, "unknown section [bogus]");
    expect_failure(REQUIRED_KEYS "[modle]\nx = 1\n", 4, "; did you mean [model]?");
}
END_TEST

START_TEST(test_unknown_key) {
    expect_failure(REQUIRED_KEYS "[model]\nemb_szie = 8\n", 5,
                   "unknown key [model] emb_szie; did you mean emb_size?");
    /* a slip of one word of a key, which two keys share: both are named */
    expect_failure(REQUIRED_KEYS "[model]\nhiden = 8\n", 5,
                   "unknown key [model] hiden; did you mean enc_hidden or dec_hidden?");
    /* A key of another section is unknown in this one. */
    expect_failure(REQUIRED_KEYS "[model]\nlr = 0.1\n", 5, "unknown key [model] lr");
}
END_TEST

START_TEST(test_duplicate_key) {
    expect_failure("[data]\ntrain = a.tsv\ndev = d.tsv\ntrain = b.tsv\n", 4,
                   "duplicate key [data] train (first set on line 2)");
    /* Reopening a section does not make a key new again. */
    expect_failure(REQUIRED_KEYS "[model]\natt_size = 4\n[data]\n[model]\natt_size = 4\n", 8,
                   "duplicate key [model] att_size");
}
END_TEST

START_TEST(test_missing_equals) {
    expect_failure(REQUIRED_KEYS "[model]\nemb_size 8\n", 5, "'emb_size 8' has no '='");
}
END_TEST

START_TEST(test_bad_section_header) {
    expect_failure(REQUIRED_KEYS "[model\n", 4, "no closing ']'");
    expect_failure(REQUIRED_KEYS "[]\n", 4, "the name is empty");
    expect_failure(REQUIRED_KEYS "[model] extra\n", 4, "text after ']'");
    expect_failure(REQUIRED_KEYS "[[model]]\n", 4, "bad section header");
}
END_TEST

START_TEST(test_empty_key_and_key_before_section) {
    expect_failure(REQUIRED_KEYS "[model]\n = 8\n", 5, "empty key");
    expect_failure("# header\ntrain = t.tsv\n[data]\n", 2,
                   "key 'train' comes before any [section]");
}
END_TEST

START_TEST(test_value_out_of_range) {
    expect_failure(REQUIRED_KEYS "max_len = 0\n", 4,
                   "[data] max_len = '0': out of range (expected an integer in [1, 1000])");
    expect_failure(REQUIRED_KEYS "max_len = 1001\n", 4, "[data] max_len = '1001': out of range");
    expect_failure(REQUIRED_KEYS "max_len = 99999999999999999999\n", 4,
                   "[data] max_len = '99999999999999999999': out of range");
    /* Open ends: lr must be above 0, beta1 below 1. */
    expect_failure(REQUIRED_KEYS "[optim]\nlr = 0\n", 5,
                   "[optim] lr = '0': out of range (expected a number in (0, 10])");
    expect_failure(REQUIRED_KEYS "[optim]\nbeta1 = 1\n", 5, "[optim] beta1 = '1': out of range");
    expect_failure(REQUIRED_KEYS "[optim]\nclip_norm = -0.5\n", 5,
                   "[optim] clip_norm = '-0.5': out of range (expected a number >= 0)");
    expect_failure(REQUIRED_KEYS "[optim]\nmin_lr = 1e999\n", 5, "[optim] min_lr = '1e999'");
    expect_failure(REQUIRED_KEYS "[optim]\nmin_lr = inf\n", 5, "[optim] min_lr = 'inf'");
    expect_failure(REQUIRED_KEYS "[train]\nepochs = -1\n", 5, "[train] epochs = '-1'");
    expect_failure(REQUIRED_KEYS "[train]\nthreads = 1025\n", 5, "[train] threads = '1025'");
}
END_TEST

START_TEST(test_value_of_wrong_type) {
    expect_failure(REQUIRED_KEYS "[optim]\nlr = abc\n", 5,
                   "[optim] lr = 'abc': not a number (expected a number in (0, 10])");
    expect_failure(REQUIRED_KEYS "[optim]\nlr = nan\n", 5, "[optim] lr = 'nan'");
    expect_failure(REQUIRED_KEYS "[model]\nbidirectional = maybe\n", 5,
                   "[model] bidirectional = 'maybe': not a yes/no value (expected true/false");
    expect_failure(REQUIRED_KEYS "max_len = 12x\n", 4, "[data] max_len = '12x': not an integer");
    expect_failure(REQUIRED_KEYS "max_len = 1.5\n", 4, "[data] max_len = '1.5': not an integer");
    expect_failure(REQUIRED_KEYS "max_len = 0x10\n", 4, "[data] max_len = '0x10': not an integer");
    expect_failure(REQUIRED_KEYS "[optim]\nschedule = linear\n", 5,
                   "[optim] schedule = 'linear': not one of the choices "
                   "(expected one of constant|warmup_decay|plateau|budget)");
    expect_failure(REQUIRED_KEYS "[train]\nseed = -1\n", 5, "[train] seed = '-1': not an integer");
    expect_failure(REQUIRED_KEYS "[train]\nseed = 18446744073709551616\n", 5,
                   "[train] seed = '18446744073709551616': out of range");
}
END_TEST

START_TEST(test_empty_value) {
    expect_failure(REQUIRED_KEYS "[model]\nemb_size =\n", 5, "[model] emb_size = '': empty value");
    expect_failure("[data]\ntrain = t.tsv\ndev = # nothing but a comment\n", 3,
                   "[data] dev = '': empty value");
}
END_TEST

START_TEST(test_overlong_line) {
    /* A comment of exactly INI_MAX_LINE bytes is fine, even with CRLF; one more byte is not. */
    char text[INI_MAX_LINE + 200];
    char *end = text + sprintf(text, REQUIRED_KEYS);
    end[0] = '#';
    memset(end + 1, 'x', INI_MAX_LINE - 1);
    memcpy(end + INI_MAX_LINE, "\r\n", 3);
    Scratch scratch;
    Config cfg;
    Error err = {""};
    ck_assert_msg(load_text(&scratch, text, &cfg, &err) == 0, "%s", err.msg);

    memset(end + 1, 'x', INI_MAX_LINE);
    memcpy(end + INI_MAX_LINE + 1, "\n", 2);
    expect_failure(text, 4, "line is longer than 8192 bytes");

    /* A megabyte without a line end is read just as safely. */
    size_t huge = 1 << 20;
    char *blob = malloc(huge);
    ck_assert_ptr_nonnull(blob);
    memset(blob, 'k', huge);
    expect_failure_bytes(blob, huge, 1, "line is longer than 8192 bytes");
    free(blob);
}
END_TEST

START_TEST(test_binary_file_with_nul) {
    static const char bytes[] = "[data]\ntrain = t\0.tsv\ndev = d.tsv\n";
    expect_failure_bytes(bytes, sizeof bytes - 1, 2, "NUL byte");
}
END_TEST

START_TEST(test_invalid_utf8) {
    expect_failure(REQUIRED_KEYS "# stray byte \xFF\n", 4, "invalid UTF-8");
    expect_failure(REQUIRED_KEYS "# overlong slash \xC0\xAF\n", 4, "invalid UTF-8");
    expect_failure(REQUIRED_KEYS "# surrogate \xED\xA0\x80\n", 4, "invalid UTF-8");
    expect_failure(REQUIRED_KEYS "# cut short \xE2\x82\n", 4, "invalid UTF-8");
    expect_failure(REQUIRED_KEYS "# past U+10FFFF \xF4\x90\x80\x80\n", 4, "invalid UTF-8");

    /* Real UTF-8 text is welcome, in comments and values alike. */
    Scratch scratch;
    Config cfg;
    Error err = {""};
    const char *text = "# café 猫 😀\n[data]\ntrain = données/train.tsv\ndev = d.tsv\n";
    ck_assert_msg(load_text(&scratch, text, &cfg, &err) == 0, "%s", err.msg);
    assert_mentions(cfg.data.train, "données/train.tsv");
}
END_TEST

START_TEST(test_missing_required_key) {
    Scratch scratch;
    Config cfg;
    Error err = {""};
    ck_assert_int_eq(load_text(&scratch, "[data]\ndev = d.tsv\n[model]\n", &cfg, &err), -1);
    char expected[256];
    snprintf(expected, sizeof expected, "%s: missing required key [data] train", scratch.ini);
    ck_assert_str_eq(err.msg, expected);

    ck_assert_int_eq(load_text(&scratch, "[data]\ntrain = t.tsv\n", &cfg, &err), -1);
    snprintf(expected, sizeof expected, "%s: missing required key [data] dev", scratch.ini);
    ck_assert_str_eq(err.msg, expected);

    ck_assert_int_eq(load_text(&scratch, "", &cfg, &err), -1);
    assert_mentions(err.msg, "missing required key [data] train");
}
END_TEST

START_TEST(test_missing_file) {
    Config cfg;
    Error err = {""};
    ck_assert_int_eq(config_load(&cfg, "no/such/file.ini", NULL, 0, &err), -1);
    assert_mentions(err.msg, "no/such/file.ini");
    assert_mentions(err.msg, strerror(ENOENT));
}
END_TEST

START_TEST(test_directory) {
    Scratch scratch;
    scratch_make(&scratch);
    Config cfg;
    Error err = {""};
    int status = config_load(&cfg, scratch.dir, NULL, 0, &err);
    scratch_remove(&scratch);
    ck_assert_int_eq(status, -1);
    assert_mentions(err.msg, scratch.dir);
    assert_mentions(err.msg, strerror(EISDIR));
}
END_TEST

START_TEST(test_training_must_stop) {
    Scratch scratch;
    Config cfg;
    Error err = {""};
    const char *never_stops = REQUIRED_KEYS "[train]\nepochs = 0\nmax_steps = 0\n";
    ck_assert_int_eq(load_text(&scratch, never_stops, &cfg, &err), -1);
    assert_mentions(err.msg, scratch.ini);
    assert_mentions(err.msg, "epochs = 0, max_steps = 0 and max_minutes = 0");

    /* Any limit alone is enough. */
    const char *time_only = REQUIRED_KEYS "[train]\nepochs = 0\nmax_minutes = 20\n";
    ck_assert_msg(load_text(&scratch, time_only, &cfg, &err) == 0, "%s", err.msg);
    ck_assert_double_eq(cfg.train.max_minutes, 20);
    const char *steps_only = REQUIRED_KEYS "[train]\nepochs = 0\nmax_steps = 100\n";
    ck_assert_msg(load_text(&scratch, steps_only, &cfg, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(cfg.train.epochs, 0);
    ck_assert_int_eq(cfg.train.max_steps, 100);

    /* The budget schedule decays over epochs, max_steps or max_minutes: epochs alone are a
     * budget too (and a config with none of the three is refused above, for any schedule). */
    const char *budget_by_epochs =
        REQUIRED_KEYS "[optim]\nschedule = budget\ndecay_share = 0.3\n[train]\nepochs = 5\n";
    ck_assert_msg(load_text(&scratch, budget_by_epochs, &cfg, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(cfg.optim.schedule, LR_SCHEDULE_BUDGET);
    const char *budget_by_time = REQUIRED_KEYS
        "[optim]\nschedule = budget\ndecay_share = 0.3\n[train]\nepochs = 5\nmax_minutes = 9\n";
    ck_assert_msg(load_text(&scratch, budget_by_time, &cfg, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(cfg.optim.schedule, LR_SCHEDULE_BUDGET);
    ck_assert_double_eq(cfg.optim.decay_share, 0.3);

    /* An override can rescue the file, since the check runs after overrides. */
    const char *const rescue[] = {"train.epochs=3"};
    ck_assert_msg(load_bytes(&scratch, never_stops, strlen(never_stops), rescue, 1, &cfg, &err) ==
                      0,
                  "%s", err.msg);
    ck_assert_int_eq(cfg.train.epochs, 3);
}
END_TEST

/* [model] score: each name of the spec, the same words score_name prints; anything else is an
 * error listing them; dot needs dec_hidden = K, and the error names both values. */
START_TEST(test_attention_score) {
    Scratch scratch;
    Config cfg;
    Error err = {""};
    for (int score = 0; score < SCORE_COUNT; score++) {
        char text[256];
        /* K = 2 x 64 = dec_hidden, so dot is valid too */
        snprintf(text, sizeof text,
                 REQUIRED_KEYS "[model]\nenc_hidden = 64\ndec_hidden = 128\nscore = %s\n",
                 score_name((AttentionScore)score));
        ck_assert_msg(load_text(&scratch, text, &cfg, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(cfg.model.score, score);
        char *out = printed(&cfg);
        char line[64];
        snprintf(line, sizeof line, "\nscore = %s\n", score_name((AttentionScore)score));
        assert_mentions(out, line);
        free(out);
    }
    expect_failure(REQUIRED_KEYS "[model]\nscore = luong\n", 5,
                   "[model] score = 'luong': not one of the choices (expected one of "
                   "additive|dot|general|scaled_dot)");
    expect_failure(REQUIRED_KEYS "[model]\nscore = Dot\n", 5, "[model] score = 'Dot'");
    /* dot with D != K: the defaults have D = 128 and K = 2 x 128 */
    const char *dot = REQUIRED_KEYS "[model]\nscore = dot\n";
    ck_assert_int_eq(load_text(&scratch, dot, &cfg, &err), -1);
    assert_mentions(err.msg, scratch.ini);
    assert_mentions(err.msg, "score = dot needs dec_hidden = K");
    assert_mentions(err.msg, "dec_hidden = 128 and K = 256");
    ck_assert_ptr_null(strchr(err.msg, '\n'));
    const char *uni = REQUIRED_KEYS "[model]\nscore = dot\nbidirectional = false\n";
    ck_assert_msg(load_text(&scratch, uni, &cfg, &err) == 0, "%s", err.msg); /* K = H = D */
    const char *const fix[] = {"model.dec_hidden=256"};
    ck_assert_msg(load_bytes(&scratch, dot, strlen(dot), fix, 1, &cfg, &err) == 0, "%s", err.msg);
    const char *const bad[] = {"model.score=dot", "model.enc_hidden=32"};
    ck_assert_int_eq(load_bytes(&scratch, REQUIRED_KEYS, strlen(REQUIRED_KEYS), bad, 2, &cfg, &err),
                     -1);
    assert_mentions(err.msg, "dec_hidden = 128 and K = 64");
}
END_TEST

/* Settings each in range that together train wrongly: min_lr above lr raised the rate to
 * min_lr at every step (dev perplexity near 5 million), and an eps that is 0 in float gave
 * 0 / 0 for an untouched parameter, blamed on "the Adam update overflowed". Both refused
 * when the config is read, naming the keys and values. */
START_TEST(test_optimiser_settings_that_disagree) {
    Scratch scratch;
    Config cfg;
    Error err = {""};
    const char *const floor_above[] = {"optim.min_lr=0.01"};
    ck_assert_int_eq(
        load_bytes(&scratch, REQUIRED_KEYS, strlen(REQUIRED_KEYS), floor_above, 1, &cfg, &err), -1);
    assert_mentions(err.msg, "[optim] min_lr = 0.01 is above lr = 0.001");
    ck_assert_ptr_null(strchr(err.msg, '\n'));
    const char *const floor_equal[] = {"optim.min_lr=0.001"};
    ck_assert_msg(
        load_bytes(&scratch, REQUIRED_KEYS, strlen(REQUIRED_KEYS), floor_equal, 1, &cfg, &err) == 0,
        "%s", err.msg);
    const char *const tiny_eps[] = {"optim.eps=1e-300"};
    int tiny = load_bytes(&scratch, REQUIRED_KEYS, strlen(REQUIRED_KEYS), tiny_eps, 1, &cfg, &err);
    if (sizeof(real) == sizeof(float)) {
        ck_assert_int_eq(tiny, -1);
        assert_mentions(err.msg, "[optim] eps = 1e-300 is 0 in this build's float precision");
    } else
        ck_assert_msg(tiny == 0, "%s", err.msg); /* 1e-300 is a double */
}
END_TEST

/* The extensions' keys: tie_embeddings needs readout_size = emb_size, and the error names both
 * values; word_dropout is a probability below 1 (1 would drop every token); layer_norm is a
 * yes/no value, off unless set. */
START_TEST(test_extension_keys) {
    Scratch scratch;
    Config cfg;
    Error err = {""};
    const char *tied = REQUIRED_KEYS "[model]\ntie_embeddings = true\n";
    ck_assert_int_eq(load_text(&scratch, tied, &cfg, &err), -1);
    assert_mentions(err.msg, scratch.ini);
    assert_mentions(err.msg,
                    "model.tie_embeddings needs model.readout_size (128) = model.emb_size (64)");
    ck_assert_ptr_null(strchr(err.msg, '\n'));
    const char *const fix[] = {"model.readout_size=64"};
    ck_assert_msg(load_bytes(&scratch, tied, strlen(tied), fix, 1, &cfg, &err) == 0, "%s", err.msg);
    ck_assert(cfg.model.tie_embeddings);
    expect_failure(REQUIRED_KEYS "[train]\nword_dropout = 1\n", 5,
                   "[train] word_dropout = '1': out of range (expected a number in [0, 1))");
    expect_failure(REQUIRED_KEYS "[train]\nword_dropout = -0.1\n", 5,
                   "[train] word_dropout = '-0.1': out of range");
    const char *const half[] = {"train.word_dropout=0.5"};
    ck_assert_msg(load_bytes(&scratch, REQUIRED_KEYS, strlen(REQUIRED_KEYS), half, 1, &cfg, &err) ==
                      0,
                  "%s", err.msg);
    ck_assert_double_eq(cfg.train.word_dropout, 0.5);
    ck_assert(!cfg.model.layer_norm);
    const char *const normalised[] = {"model.layer_norm=true"};
    ck_assert_msg(
        load_bytes(&scratch, REQUIRED_KEYS, strlen(REQUIRED_KEYS), normalised, 1, &cfg, &err) == 0,
        "%s", err.msg);
    ck_assert(cfg.model.layer_norm);
    expect_failure(REQUIRED_KEYS "[model]\nlayer_norm = 2\n", 5,
                   "[model] layer_norm = '2': not a yes/no value");
}
END_TEST

START_TEST(test_overrides_win) {
    Scratch scratch;
    Config cfg;
    Error err = {""};
    const char *text = REQUIRED_KEYS "[optim]\nlr = 0.5\n[model]\nbidirectional = yes\n";
    const char *const overrides[] = {
        "optim.lr=0.25", "model.bidirectional=no", "data.train=rel/x.tsv",
        "train.seed=7",  "train.seed=8", /* the last of several wins */
    };
    ck_assert_msg(load_bytes(&scratch, text, strlen(text), overrides, 5, &cfg, &err) == 0, "%s",
                  err.msg);
    ck_assert_double_eq(cfg.optim.lr, 0.25);
    ck_assert(!cfg.model.bidirectional);
    ck_assert_str_eq(cfg.data.train, "rel/x.tsv"); /* relative to the current directory */
    ck_assert_uint_eq(cfg.train.seed, 8);
    ck_assert(strstr(cfg.data.dev, scratch.dir) == cfg.data.dev); /* the file's own path */

    /* An override can supply a required key the file lacks. */
    const char *no_train = "[data]\ndev = d.tsv\n";
    const char *const train[] = {"data.train=/corpus/t.tsv"};
    ck_assert_msg(load_bytes(&scratch, no_train, strlen(no_train), train, 1, &cfg, &err) == 0, "%s",
                  err.msg);
    ck_assert_str_eq(cfg.data.train, "/corpus/t.tsv");
}
END_TEST

static void expect_override_failure(const char *override, const char *what) {
    Scratch scratch;
    Config cfg;
    Error err = {""};
    const char *const overrides[] = {"model.emb_size=8", override};
    ck_assert_int_eq(
        load_bytes(&scratch, REQUIRED_KEYS, strlen(REQUIRED_KEYS), overrides, 2, &cfg, &err), -1);
    char prefix[256]; /* the argument is quoted up to 200 bytes, a longer one marked as cut */
    snprintf(prefix, sizeof prefix, "--set %.200s%s: ", override,
             strlen(override) > 200 ? "..." : "");
    ck_assert_msg(strncmp(err.msg, prefix, strlen(prefix)) == 0,
                  "message '%s' does not start with '%s'", err.msg, prefix);
    assert_mentions(err.msg, what);
}

/* An optional key is cleared by an empty value (issue #36); a required one is not. */
START_TEST(test_empty_override_clears_an_optional_key) {
    Config cfg;
    Error err = {""};
    const char *const overrides[] = {"data.test="};
    ck_assert_msg(config_load(&cfg, "../configs/toy.ini", overrides, 1, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(cfg.data.test, "");
    ck_assert_str_eq(cfg.data.train, "../data/toy/train.tsv");
}
END_TEST

/* Printed with absolute paths, the settings reload to the same files from anywhere: what
 * bin/train writes as OUT_DIR/config.ini, so that the file reruns the run (issue #36). */
START_TEST(test_absolute_paths_reload_anywhere) {
    Config cfg, again;
    Error err = {""};
    ck_assert_msg(config_load(&cfg, "../configs/toy.ini", NULL, 0, &err) == 0, "%s", err.msg);
    ck_assert_msg(config_absolute_paths(&cfg, &err) == 0, "%s", err.msg);
    char cwd[CONFIG_PATH_MAX], expected[2 * CONFIG_PATH_MAX];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    char *slash = strrchr(cwd, '/'); /* tests/.. */
    ck_assert_ptr_nonnull(slash);
    *slash = '\0';
    snprintf(expected, sizeof expected, "%s/data/toy/train.tsv", cwd);
    ck_assert_str_eq(cfg.data.train, expected);
    snprintf(expected, sizeof expected, "%s/runs/toy", cwd);
    ck_assert_str_eq(cfg.train.out_dir, expected);
    char dir[] = "/tmp/nmt-config-XXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/config.ini", dir);
    FILE *out = fopen(path, "w");
    ck_assert_ptr_nonnull(out);
    config_print(&cfg, out);
    ck_assert_int_eq(fclose(out), 0);
    ck_assert_msg(config_load(&again, path, NULL, 0, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(again.data.train, cfg.data.train);
    ck_assert_str_eq(again.data.test, cfg.data.test);
    ck_assert_str_eq(again.train.out_dir, cfg.train.out_dir);
    remove(path);
    rmdir(dir);
}
END_TEST

START_TEST(test_bad_overrides) {
    expect_override_failure("optim.lr=abc", "[optim] lr = 'abc': not a number");
    expect_override_failure("optim.lr=11", "[optim] lr = '11': out of range");
    expect_override_failure("model.bidirectional=maybe", "[model] bidirectional = 'maybe'");
    expect_override_failure("data.train=", "[data] train = '': empty value");
    expect_override_failure("optim.bogus=1", "unknown key [optim] bogus");
    expect_override_failure("train.batch_sise=2", "[train] batch_sise; did you mean batch_size?");
    expect_override_failure("bogus.lr=1", "unknown section [bogus] (expected one of [data]");
    expect_override_failure(".=", "expected section.key=value"); /* was "unknown key [] " */
    expect_override_failure("a.b.c=1", "expected section.key=value");
    expect_override_failure("train.=1", "expected section.key=value");
    expect_override_failure("optim.lr", "expected section.key=value");
    expect_override_failure("lr=1", "expected section.key=value");
    /* strtol skipped a leading space, strtoull did not: ' 5' passed for one key, not another;
     * an int's bound was its own and unsaid ("an integer >= 0" for 9223372036854775807) */
    expect_override_failure("train.max_steps= 5", "[train] max_steps = ' 5': starts with a space");
    expect_override_failure("optim.lr= 0.1", "[optim] lr = ' 0.1': starts with a space");
    expect_override_failure("train.max_steps=9223372036854775807",
                            "out of range (expected an integer in [0, 2147483647])");

    /* A path that does not fit is refused, not cut short. */
    char override[CONFIG_PATH_MAX + 32];
    int n = snprintf(override, sizeof override, "data.train=");
    memset(override + n, 'p', CONFIG_PATH_MAX);
    override[n + CONFIG_PATH_MAX] = '\0';
    expect_override_failure(override, "too long");
}
END_TEST

START_TEST(test_print_reads_back) {
    Scratch scratch;
    Config cfg, reloaded;
    Error err = {""};
    /* mkdtemp's folder is absolute, so the resolved paths mean the same from anywhere. */
    const char *text = REQUIRED_KEYS "[optim]\nlr = 0.002\nschedule = plateau\neps = 3e-9\n"
                                     "[train]\nseed = 12345678901234\ndropout = 0.1\n";
    ck_assert_msg(load_text(&scratch, text, &cfg, &err) == 0, "%s", err.msg);
    char *first = printed(&cfg);
    assert_mentions(first, "[optim]\nlr = 0.002\n"); /* the shortest exact form */
    assert_mentions(first, "schedule = plateau\n");
    assert_mentions(first, "eps = 3e-09\n");
    assert_mentions(first, "seed = 12345678901234\n");
    assert_mentions(first, "# test is not set\n");

    ck_assert_msg(load_text(&scratch, first, &reloaded, &err) == 0, "%s", err.msg);
    char *second = printed(&reloaded);
    ck_assert_str_eq(first, second);
    ck_assert_double_eq(reloaded.optim.eps, 3e-9);
    ck_assert_double_eq(reloaded.train.dropout, 0.1);
    free(first);
    free(second);
}
END_TEST

/* What the INI reader reports, in order, for test_ini_reader_events. */
typedef struct {
    char events[512];
    int stop_at_line; /* the handler refuses this line; 0 = never */
} EventLog;

static int log_event(void *user, const IniEntry *entry, Error *err) {
    EventLog *log = user;
    size_t used = strlen(log->events);
    if (entry->key)
        snprintf(log->events + used, sizeof log->events - used, "%d:%s.%s=%s|", entry->line,
                 entry->section, entry->key, entry->value);
    else
        snprintf(log->events + used, sizeof log->events - used, "%d:[%s]|", entry->line,
                 entry->section);
    if (entry->line == log->stop_at_line) return error_set(err, "refused by the handler");
    return 0;
}

START_TEST(test_ini_reader_events) {
    Scratch scratch;
    scratch_make(&scratch);
    const char *text = "; any sections and keys are fine here\n"
                       "[one]\n"
                       "a = 1\n"
                       "b =\n"
                       "\n"
                       "[two words]\n"
                       "c = x = y # comment\n";
    write_bytes(scratch.ini, text, strlen(text));

    EventLog log = {"", 0};
    Error err = {""};
    int status = ini_parse_file(scratch.ini, log_event, &log, &err);
    ck_assert_msg(status == 0, "%s", err.msg);
    ck_assert_str_eq(log.events, "2:[one]|3:one.a=1|4:one.b=|6:[two words]|7:two words.c=x = y|");

    /* A handler's refusal stops the reader and gets the location in front. */
    EventLog stopping = {"", 4};
    ck_assert_int_eq(ini_parse_file(scratch.ini, log_event, &stopping, &err), -1);
    scratch_remove(&scratch);
    char expected[256];
    snprintf(expected, sizeof expected, "%s:4: refused by the handler", scratch.ini);
    ck_assert_str_eq(err.msg, expected);
    ck_assert_str_eq(stopping.events, "2:[one]|3:one.a=1|4:one.b=|");
}
END_TEST

Suite *config_suite(void) {
    Suite *suite = suite_create("config");
    TCase *valid = tcase_create("valid");
    tcase_add_test(valid, test_defaults);
    tcase_add_test(valid, test_toy_config);
    tcase_add_test(valid, test_tiny_config);
    tcase_add_test(valid, test_base_config);
    tcase_add_test(valid, test_toy_config_lists_every_key);
    tcase_add_test(valid, test_help_describes_keys);
    tcase_add_test(valid, test_paths_resolved_against_config_folder);
    tcase_add_test(valid, test_syntax_accepted);
    tcase_add_test(valid, test_bool_words);
    tcase_add_test(valid, test_crlf_and_bom);
    tcase_add_test(valid, test_overrides_win);
    tcase_add_test(valid, test_attention_score);
    tcase_add_test(valid, test_extension_keys);
    tcase_add_test(valid, test_print_reads_back);
    tcase_add_test(valid, test_ini_reader_events);
    suite_add_tcase(suite, valid);

    TCase *invalid = tcase_create("errors");
    tcase_add_test(invalid, test_unknown_section);
    tcase_add_test(invalid, test_unknown_key);
    tcase_add_test(invalid, test_duplicate_key);
    tcase_add_test(invalid, test_missing_equals);
    tcase_add_test(invalid, test_bad_section_header);
    tcase_add_test(invalid, test_empty_key_and_key_before_section);
    tcase_add_test(invalid, test_value_out_of_range);
    tcase_add_test(invalid, test_value_of_wrong_type);
    tcase_add_test(invalid, test_empty_value);
    tcase_add_test(invalid, test_overlong_line);
    tcase_add_test(invalid, test_binary_file_with_nul);
    tcase_add_test(invalid, test_invalid_utf8);
    tcase_add_test(invalid, test_missing_required_key);
    tcase_add_test(invalid, test_missing_file);
    tcase_add_test(invalid, test_directory);
    tcase_add_test(invalid, test_training_must_stop);
    tcase_add_test(invalid, test_bad_overrides);
    tcase_add_test(invalid, test_optimiser_settings_that_disagree);
    tcase_add_test(invalid, test_empty_override_clears_an_optional_key);
    tcase_add_test(invalid, test_absolute_paths_reload_anywhere);
    suite_add_tcase(suite, invalid);
    return suite;
}

/*
 * test_install.c: the library as an embedding program sees it: `make install` into a
 * temporary DESTDIR (nmt.pc with nmt.h's version), docs/example.c compiled with
 * `pkg-config --cflags --libs nmt`, its output equal to bin/translate's, `make uninstall`
 * leaving nothing behind; and the public API's answers to bad arguments and bad input.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"
#include "nmt/nmt.h"
#include "tests/suites.h"

/* The inputs both programs translate: two sentences and one refused (empty) input. */
static const char *const INPUTS[] = {"I love cats", "", "the black cat"};
enum { N_INPUTS = 3 };

START_TEST(installed_library_builds_the_example) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    const char *make_flags = getenv("NMT_MAKE_FLAGS"), *example_flags = getenv("NMT_EXAMPLE_FLAGS");
    /* the compiler that built the library: another one's OpenMP runtime does not link with it
     * (clang's libomp calls against gcc's libgomp) */
    const char *cc = getenv("NMT_CC");
    char script[4096], model[512];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    /* the same build settings as the suite's, so make reuses its objects */
    snprintf(script, sizeof script,
             "set -e; root=%s/root; make -s -C .. %s install DESTDIR=$root PREFIX=/usr/local "
             ">/dev/null; test -x $root/usr/local/bin/nmt-translate; "
             "export PKG_CONFIG_PATH=$root/usr/local/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root; "
             "%s -std=c17 -Wall -Wextra -Werror ../docs/example.c $(pkg-config --cflags --libs "
             "nmt) %s -o %s/example; test \"$(pkg-config --modversion nmt)\" = %s",
             s.dir, make_flags ? make_flags : "", cc && *cc ? cc : "cc",
             example_flags ? example_flags : "", s.dir, NMT_VERSION);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"/bin/sh", "-c", script, NULL}, NULL, 300, NULL);
    /* the end of stderr, where `set -e` stopped: check refuses a message of 8 KB */
    size_t said = strlen(r.err);
    ck_assert_msg(r.status == 0 && !r.timed_out, "install and build failed (%d): ...%s", r.status,
                  r.err + (said > 1500 ? said - 1500 : 0));

    char example[512];
    scratch_path(&s, "example", example, sizeof example);
    RunResult ours, theirs;
    run_program(&ours, &s,
                (const char *const[]){example, model, INPUTS[0], INPUTS[1], INPUTS[2], NULL}, NULL,
                60, NULL);
    run_program(&theirs, &s,
                (const char *const[]){"../bin/translate", "-m", model, INPUTS[0], INPUTS[1],
                                      INPUTS[2], NULL},
                NULL, 60, NULL);
    /* both refuse the empty input (status 1, an empty line in its place) */
    ck_assert_int_eq(ours.status, 1);
    ck_assert_int_eq(theirs.status, 1);
    ck_assert_msg(strstr(ours.err, "argument 2: empty sentence"), "%s", ours.err);
    int lines = 0;
    for (const char *p = ours.out; *p; p++) lines += *p == '\n';
    ck_assert_int_eq(lines, N_INPUTS);
    ck_assert_str_eq(ours.out, theirs.out);

    /* an installed program has no default model beside it: it asks for -m MODEL instead of
     * naming PREFIX/bin/../runs/toy and a checkout's bin/train */
    char installed[512];
    scratch_path(&s, "root/usr/local/bin/nmt-translate", installed, sizeof installed);
    RunResult bare;
    run_program(&bare, &s, (const char *const[]){installed, "I love cats", NULL}, NULL, 60, NULL);
    assert_one_line_error(&bare, "translate", 1, (const char *const[]){"-m MODEL", NULL});
    ck_assert_msg(!strstr(bare.err, "runs/toy") && !strstr(bare.err, "bin/train configs"), "%s",
                  bare.err);

    snprintf(script, sizeof script,
             "set -e; root=%s/root; make -s -C .. %s uninstall DESTDIR=$root PREFIX=/usr/local "
             ">/dev/null; test -z \"$(find $root -type f)\"",
             s.dir, make_flags ? make_flags : "");
    run_program(&r, &s, (const char *const[]){"/bin/sh", "-c", script, NULL}, NULL, 120, NULL);
    ck_assert_msg(r.status == 0, "uninstall left files or failed: %s", r.err);
    scratch_free(&s);
}
END_TEST

/* Every entry point refuses NULL arguments with a message, and bad input is a per-input
 * refusal, not a failed call. */
START_TEST(api_refuses_bad_arguments_and_input) {
    nmt_error err = {{0}};
    ck_assert_ptr_null(nmt_open(NULL, &err));
    ck_assert(strstr(err.message, "no path"));
    ck_assert_ptr_null(nmt_open("no/such/model.ckpt", &err));
    ck_assert_msg(strstr(err.message, "no/such/model.ckpt"), "%s", err.message);
    ck_assert_ptr_null(nmt_open("no/such/model.ckpt", NULL)); /* err may be NULL */
    nmt_close(NULL);

    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char model[512];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    nmt_model *m = nmt_open(model, &err);
    ck_assert_msg(m != NULL, "%s", err.message);
    /* the file may go away: the handle read it whole */
    ck_assert(remove(model) == 0);
    nmt_translation out[3];
    ck_assert_int_eq(nmt_translate(NULL, INPUTS, 1, NULL, out, &err), -1);
    ck_assert_int_eq(nmt_translate(m, NULL, 1, NULL, out, &err), -1);
    const char *with_null[] = {"a cat", NULL};
    ck_assert_int_eq(nmt_translate(m, with_null, 2, NULL, out, &err), -1);
    ck_assert(strstr(err.message, "source 1 is NULL"));
    const char *bad[] = {"\xff\xfe", "", "the cat"};
    ck_assert_msg(nmt_translate(m, bad, 3, NULL, out, &err) == 0, "%s", err.message);
    ck_assert(out[0].refused && strstr(out[0].reason, "invalid UTF-8"));
    ck_assert(out[1].refused && strstr(out[1].reason, "empty sentence"));
    ck_assert(!out[2].refused && out[2].count == 1);
    /* the alignment rows sum to 1 and end with the source's </s> column */
    const nmt_hypothesis *h = &out[2].hyps[0];
    ck_assert_str_eq(h->src_tokens[h->cols - 1], "</s>");
    for (int t = 0; t < h->rows; t++) {
        double sum = 0;
        for (int i = 0; i < h->cols; i++) sum += h->alignment[t * h->cols + i];
        ck_assert_double_eq_tol(sum, 1.0, 1e-4);
    }
    nmt_translation_free(out, 3);
    nmt_options beam = {.beam = 3, .nbest = 4};
    ck_assert_int_eq(nmt_translate(m, INPUTS, 1, &beam, out, &err), -1);
    ck_assert_msg(strstr(err.message, "beam"), "%s", err.message);
    /* beam and max_len are bounded as nmt.h says (issue #36: INT_MAX was refused only because
     * the allocation failed), and the bounds themselves are accepted */
    const struct {
        nmt_options options;
        const char *message;
    } out_of_bounds[] = {
        {{.beam = INT_MAX}, "beam 2147483647 is outside 0..100"},
        {{.beam = NMT_MAX_BEAM + 1}, "beam 101 is outside 0..100"},
        {{.beam = -1}, "beam -1 is outside"},
        {{.nbest = INT_MAX}, "nbest 2147483647 is outside"},
        {{.max_len = INT_MAX}, "max_len 2147483647 is outside 0..1000"},
        {{.max_len = -5}, "max_len -5 is outside"},
        /* every score was -0, the n best in no order, and NaN read as 1 */
        {{.len_norm = INFINITY}, "len_norm inf is not a number of at most 10"},
        {{.len_norm = NAN}, "len_norm nan is not a number"},
        {{.len_norm = NMT_MAX_LEN_NORM + 0.5}, "len_norm 10.5 is not a number of at most 10"},
        {{.beam = 3, .nbest = 4}, "nmt_translate: 4 best translations need a beam of at least 4"},
    };
    for (size_t k = 0; k < sizeof out_of_bounds / sizeof out_of_bounds[0]; k++) {
        ck_assert_int_eq(nmt_translate(m, INPUTS, 1, &out_of_bounds[k].options, out, &err), -1);
        ck_assert_msg(strstr(err.message, out_of_bounds[k].message), "%s", err.message);
    }
    nmt_options widest = {
        .beam = NMT_MAX_BEAM, .max_len = NMT_MAX_OUTPUT_LEN, .len_norm = NMT_MAX_LEN_NORM};
    ck_assert_msg(nmt_translate(m, INPUTS, 1, &widest, out, &err) == 0, "%s", err.message);
    nmt_translation_free(out, 1);

    /* zeroed options search with a beam of NMT_DEFAULT_BEAM: two best without a beam given
     * (greedy search has one), and NULL the same hypothesis as that beam asked for */
    ck_assert_int_gt(NMT_DEFAULT_BEAM, 1);
    nmt_options two_best = {.nbest = 2}, explicit = {.beam = NMT_DEFAULT_BEAM};
    ck_assert_msg(nmt_translate(m, INPUTS + 2, 1, &two_best, out, &err) == 0, "%s", err.message);
    ck_assert_int_eq(out[0].count, 2);
    ck_assert_msg(nmt_translate(m, INPUTS + 2, 1, NULL, out + 1, &err) == 0, "%s", err.message);
    ck_assert_msg(nmt_translate(m, INPUTS + 2, 1, &explicit, out + 2, &err) == 0, "%s",
                  err.message);
    ck_assert_str_eq(out[1].hyps[0].text, out[2].hyps[0].text);
    ck_assert_double_eq(out[1].hyps[0].score, out[2].hyps[0].score);
    ck_assert_str_eq(out[0].hyps[0].text, out[1].hyps[0].text);
    /* len_norm 0 is the default 1 (score = logprob / rows), a negative one none at all */
    ck_assert_double_eq_tol(out[1].hyps[0].score, out[1].hyps[0].logprob / out[1].hyps[0].rows,
                            1e-9);
    nmt_translation_free(out, 3);
    nmt_options unnormalised = {.len_norm = -1};
    ck_assert_msg(nmt_translate(m, INPUTS + 2, 1, &unnormalised, out, &err) == 0, "%s",
                  err.message);
    ck_assert_double_eq(out[0].hyps[0].score, out[0].hyps[0].logprob);
    nmt_translation_free(out, 1);

    nmt_score_result scored[2];
    const char *src[] = {"the cat", "the cat"}, *tgt[] = {"le chat", ""};
    ck_assert_int_eq(nmt_score(m, NULL, tgt, 2, scored, &err), -1);
    ck_assert_msg(nmt_score(m, src, tgt, 2, scored, &err) == 0, "%s", err.message);
    ck_assert(!scored[0].refused && scored[0].logprob < 0);
    ck_assert_int_eq(scored[0].forced.rows, 3); /* le chat </s> */
    ck_assert(scored[1].refused && strstr(scored[1].reason, "empty target"));
    nmt_score_free(scored, 2);
    nmt_close(m);
    scratch_free(&s);
}
END_TEST

/* The rest of the NULL and zero-count cases of every entry point (issue #16), and a model file
 * overwritten with garbage, then truncated, while a handle is open: the handle read the file
 * whole in nmt_open, so it translates exactly as before. (A closed handle cannot be detected:
 * nmt.h says so.) */
START_TEST(api_null_arguments_and_a_replaced_model_file) {
    nmt_error err = {{0}};
    /* freeing: NULL arrays, zero and negative counts */
    nmt_translation_free(NULL, 3);
    nmt_score_free(NULL, 3);
    nmt_translation unused_t[1] = {{0}};
    nmt_score_result unused_s[1] = {{0}};
    nmt_translation_free(unused_t, 0);
    nmt_translation_free(unused_t, -1);
    nmt_score_free(unused_s, 0);
    nmt_score_free(unused_s, -1);
    nmt_translation_free(unused_t, 1); /* zeroed: nothing to free */
    nmt_score_free(unused_s, 1);

    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char model[512];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    nmt_model *m = nmt_open(model, &err);
    ck_assert_msg(m != NULL, "%s", err.message);
    const char *one[] = {"the cat"}, *tgt[] = {"le chat"};
    nmt_translation out[1], again[1];
    nmt_score_result scored[1];
    /* NULL arguments: -1 and a message, with or without err */
    ck_assert_int_eq(nmt_translate(m, one, 1, NULL, NULL, &err), -1);
    ck_assert_msg(strstr(err.message, "NULL argument"), "%s", err.message);
    ck_assert_int_eq(nmt_translate(NULL, one, 1, NULL, out, NULL), -1);
    ck_assert_int_eq(nmt_translate(m, one, -1, NULL, out, &err), -1);
    ck_assert_msg(strstr(err.message, "-1 sentences"), "%s", err.message);
    ck_assert_int_eq(nmt_score(NULL, one, tgt, 1, scored, &err), -1);
    ck_assert_int_eq(nmt_score(m, one, NULL, 1, scored, &err), -1);
    ck_assert_int_eq(nmt_score(m, one, tgt, 1, NULL, &err), -1);
    ck_assert_int_eq(nmt_score(m, one, tgt, -2, scored, NULL), -1);
    const char *null_target[] = {NULL};
    ck_assert_int_eq(nmt_score(m, one, null_target, 1, scored, &err), -1);
    ck_assert_msg(strstr(err.message, "pair 0 has a NULL side"), "%s", err.message);
    /* n = 0: nothing to do, and the arrays may then be NULL */
    ck_assert_int_eq(nmt_translate(m, NULL, 0, NULL, NULL, &err), 0);
    ck_assert_int_eq(nmt_score(m, NULL, NULL, 0, NULL, &err), 0);

    ck_assert_msg(nmt_translate(m, one, 1, NULL, out, &err) == 0, "%s", err.message);
    ck_assert_msg(nmt_score(m, one, tgt, 1, scored, &err) == 0, "%s", err.message);
    double logprob = scored[0].logprob;
    nmt_score_free(scored, 1);
    /* the file replaced by garbage of the same size, then cut to 10 bytes */
    size_t len;
    unsigned char *bytes = slurp_file(model, &len);
    ck_assert_ptr_nonnull(bytes);
    memset(bytes, 0xA5, len);
    scratch_write(&s, "run/best.ckpt", bytes, len);
    free(bytes);
    for (int round = 0; round < 2; round++) {
        ck_assert_msg(nmt_translate(m, one, 1, NULL, again, &err) == 0, "%s", err.message);
        ck_assert(!again[0].refused && again[0].count == 1);
        ck_assert_str_eq(again[0].hyps[0].text, out[0].hyps[0].text);
        ck_assert_double_eq(again[0].hyps[0].logprob, out[0].hyps[0].logprob);
        nmt_translation_free(again, 1);
        ck_assert_msg(nmt_score(m, one, tgt, 1, scored, &err) == 0, "%s", err.message);
        ck_assert_double_eq(scored[0].logprob, logprob);
        nmt_score_free(scored, 1);
        ck_assert_int_eq(truncate(model, 10), 0);
    }
    /* while a new handle on the damaged file is refused */
    ck_assert_ptr_null(nmt_open(model, &err));
    ck_assert_msg(strstr(err.message, model), "%s", err.message);
    nmt_translation_free(out, 1);
    nmt_close(m);
    scratch_free(&s);
}
END_TEST

Suite *install_suite(void) {
    Suite *s = suite_create("install");
    TCase *tc = tcase_create("install");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, installed_library_builds_the_example);
    tcase_add_test(tc, api_refuses_bad_arguments_and_input);
    tcase_add_test(tc, api_null_arguments_and_a_replaced_model_file);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * main.c: runs every test suite; the exit status is the verdict (0 only when all pass).
 * Tests run from the tests/ folder so fixtures are found as fixtures/...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/usage.h"
#include "base/utf8.h"
#include "tests/suites.h"

static void usage(FILE *out) {
    fputs("usage: run_tests [-h | --help]\n"
          "Runs every test suite from the tests/ folder (make test does that); the exit status\n"
          "is 0 only when every test passed. Skipped tests are listed after the results.\n"
          "check's environment variables choose what runs:\n"
          "  CK_RUN_SUITE=NAME  only the suite NAME (e.g. hostile, tools, train)\n"
          "  CK_RUN_CASE=NAME   only the test case NAME of each suite\n"
          "  CK_FORK=no         run the tests in this process (for a debugger)\n",
          out);
}

int main(int argc, char **argv) {
    if (argc > 1) {
        if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
            usage(stdout);
            return EXIT_SUCCESS;
        }
        char quoted[96];
        return usage_error("run_tests", "%s '%s'",
                           argv[1][0] == '-' ? "unknown option" : "unexpected argument",
                           text_for_message(quoted, sizeof quoted, argv[1], 60));
    }
    Suite *(*const suites[])(void) = {
        layers_suite, model_suite,   tokenizer_suite, config_suite,   metrics_suite,
        train_suite,  tools_suite,   corpus_suite,    vocab_suite,    align_suite,
        gemm_suite,   hostile_suite, faults_suite,    install_suite,  attend_suite,
        bpe_suite,    data_suite,    pictures_suite,  subwords_suite, batching_suite,
        ema_suite,    docs_suite,    reference_suite, quant_suite,    rooms_suite,
    };
    SRunner *runner = srunner_create(NULL);
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
        srunner_add_suite(runner, suites[i]());
    /* tests that cannot run here say so in this file (test_skip) */
    char skip_log[] = "/tmp/nmt-skips-XXXXXX";
    int fd = mkstemp(skip_log);
    if (fd < 0) {
        perror("run_tests: cannot create the skip log");
        return EXIT_FAILURE;
    }
    close(fd);
    setenv("NMT_TEST_SKIP_LOG", skip_log, 1);
    srunner_run_all(runner, CK_NORMAL);
    int run = srunner_ntests_run(runner), failed = srunner_ntests_failed(runner), skipped = 0;
    srunner_free(runner);
    FILE *log = fopen(skip_log, "r");
    char line[1024];
    while (log && fgets(line, sizeof line, log)) printf("skipped %s", line), skipped++;
    if (log) fclose(log);
    remove(skip_log);
    /* the closing line: a skipped test returned early, it did not pass */
    printf("%d passed, %d failed, %d skipped\n", run - failed - skipped, failed, skipped);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

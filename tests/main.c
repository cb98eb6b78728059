/*
 * main.c: runs every test suite; the exit status is the verdict (0 only when all pass).
 * Tests run from the tests/ folder so fixtures are found as fixtures/...
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "suites.h"

int main(void) {
    Suite *(*const suites[])(void) = {
        layers_suite, model_suite,   tokenizer_suite, config_suite,   metrics_suite,
        train_suite,  tools_suite,   corpus_suite,    vocab_suite,    align_suite,
        gemm_suite,   hostile_suite, faults_suite,    install_suite,  attend_suite,
        bpe_suite,    data_suite,    pictures_suite,  subwords_suite, batching_suite,
        ema_suite,    quant_suite,
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

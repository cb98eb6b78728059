/*
 * main.c: runs every test suite; the exit status is the verdict (0 only when all pass).
 * Tests run from the tests/ folder so fixtures are found as fixtures/...
 */
#include <stdlib.h>

#include "suites.h"

int main(void) {
    Suite *(*const suites[])(void) = {
        layers_suite, model_suite,   tokenizer_suite, config_suite, metrics_suite,  train_suite,
        tools_suite,  corpus_suite,  vocab_suite,     align_suite,  gemm_suite,     hostile_suite,
        faults_suite, install_suite, attend_suite,    bpe_suite,    batching_suite, ema_suite,
    };
    SRunner *runner = srunner_create(NULL);
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
        srunner_add_suite(runner, suites[i]());
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

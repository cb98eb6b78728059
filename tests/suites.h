/*
 * suites.h: one check Suite per module; tests/main.c runs them all.
 */
#ifndef NMT_TEST_SUITES_H
#define NMT_TEST_SUITES_H

#include <check.h>

/* ck_assert_msg for a check repeated over many elements: check is called only when the
 * condition fails. A passing ck_assert still sends its line to the parent process (a system
 * call): a million of them took a minute under the sanitizers. */
#define EXPECT_MSG(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) ck_abort_msg(__VA_ARGS__);                                                    \
    } while (0)

Suite *layers_suite(void);
Suite *model_suite(void);
Suite *tokenizer_suite(void);
Suite *corpus_suite(void);
Suite *vocab_suite(void);
Suite *config_suite(void);
Suite *metrics_suite(void);
Suite *align_suite(void);
Suite *train_suite(void);
Suite *tools_suite(void);
Suite *gemm_suite(void);
Suite *hostile_suite(void);
Suite *faults_suite(void);
Suite *install_suite(void);
Suite *attend_suite(void);
Suite *bpe_suite(void);
Suite *data_suite(void);
Suite *pictures_suite(void);
Suite *subwords_suite(void);
Suite *batching_suite(void);
Suite *ema_suite(void);
Suite *docs_suite(void);
Suite *reference_suite(void);
Suite *quant_suite(void);
Suite *rooms_suite(void);

#endif

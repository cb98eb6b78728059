/*
 * fuzz_worked.c: libFuzzer target for the worked-example reader and computation behind
 * bin/attend (notes/worked.c): worked_parse on the input, then worked_run with each score a
 * command line can ask for, then worked_check.
 *
 * Besides crashes, it checks what a success promises: every step finite, every published
 * result mapped to a step, and no more differences than published numbers; and that a
 * failure leaves a one-line message naming the file. Build and run with `make fuzz`, or
 * alone with
 *   make bin/fuzz_worked && bin/fuzz_worked tests/fuzz/corpus/worked
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "notes/worked.h"

static void check_error(const Error *err) {
    if (strncmp(err->msg, "in.txt:", 7) != 0 || strchr(err->msg, '\n')) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    WorkedFile wf;
    Error err = {{0}};
    if (worked_parse(&wf, "in.txt", (const char *)data, size, &err)) {
        check_error(&err);
        return 0;
    }
    static const WorkedScore requests[] = {WORKED_SCORE_NONE, WORKED_DOT, WORKED_SCALED_DOT,
                                           WORKED_GENERAL};
    for (size_t r = 0; r < sizeof requests / sizeof requests[0]; r++) {
        WorkedRun run;
        if (worked_run(&run, &wf, requests[r], &err)) {
            check_error(&err);
            continue;
        }
        for (int k = 0; k < run.n_steps; k++)
            for (int i = 0; i < run.steps[k].m.rows * run.steps[k].m.cols; i++)
                if (!isfinite(run.steps[k].m.v[i])) abort();
        int total = 0;
        for (int i = 0; i < wf.n_expects; i++) {
            if (run.expect_step[i] < 0 || run.expect_step[i] >= run.n_steps) abort();
            total += wf.expects[i].m.rows * wf.expects[i].m.cols;
        }
        WorkedCheck chk;
        if (worked_check(&chk, &run, &wf, 0.005, &err) == 0) {
            if (chk.count > total) abort();
            worked_check_free(&chk);
        }
        worked_run_free(&run);
    }
    worked_file_free(&wf);
    return 0;
}

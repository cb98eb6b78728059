/*
 * fuzz_checkpoint.c: libFuzzer target for the checkpoint loader (nmt/formats/checkpoint.c), through
 * checkpoint_load_memory, which checkpoint_load calls with a file's bytes.
 *
 * Each input is loaded twice: as it is (which mostly exercises the checksum), and with its
 * last 8 bytes replaced by the correct checksum of the rest, so that mutations reach every
 * field check behind it. When a forged input loads, the model is used the way bin/translate
 * uses it: one sentence is encoded and translated (greedy and beam 2), so parameters that
 * pass the loader but break the arithmetic are found too (tests/fuzz/checkpoint_bytes.c). Build
 * and run with `make fuzz`.
 */
#include <stdlib.h>

#include "nmt/formats/checkpoint.h"
#include "tests/fuzz/checkpoint_bytes.h"

static void load(const uint8_t *data, size_t size, bool use_model) {
    NmtModel nm;
    TrainState state = {0};
    bool has_state;
    Error err;
    if (checkpoint_load_memory(data, size, "fuzz.ckpt", &nm, &state, &has_state, &err) == 0) {
        if (use_model && nm.model.table.total <= 200000) /* keep each input fast */
            translate_one_sentence(&nm);
        nmt_model_free(&nm);
    } else {
        check_one_line(&err);
    }
    free(state.adam_m), free(state.adam_v), free(state.ema);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    load_as_is_and_forged(data, size, load);
    return 0;
}

/*
 * fuzz_quantized.c: libFuzzer target for int8 checkpoints (format 4, bin/quantize) through
 * checkpoint_load_memory, and for int8 decoding of whatever loads.
 *
 * As fuzz_checkpoint, each input is loaded as it is and with its checksum forged to match, so
 * that mutations reach the int8 section's checks (scales, the value -128, its size). A model
 * that loads is translated as bin/translate would (greedy and beam 2) with int8 products: an
 * int8 file as it is, a float one after quantizing it (--compute int8), so that scales and
 * values that pass the loader but break the kernels or the search are found too. Seeds
 * (tests/fuzz/corpus/quantized/) are the checkpoint seeds written by bin/quantize. Build and
 * run with `make fuzz`.
 */
#include "nmt/formats/checkpoint.h"
#include "tests/fuzz/checkpoint_bytes.h"

static void load(const uint8_t *data, size_t size, bool use_model) {
    NmtModel nm;
    Error err;
    if (checkpoint_load_memory(data, size, "fuzz.ckpt", &nm, NULL, NULL, &err) == 0) {
        /* keep each input fast; a float model becomes an int8 one as --compute int8 makes it */
        if (use_model && nm.model.table.total <= 200000 &&
            nmt_model_set_compute(&nm, COMPUTE_INT8, &err) == 0)
            translate_one_sentence(&nm);
        nmt_model_free(&nm);
    } else {
        check_one_line(&err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    load_as_is_and_forged(data, size, load);
    return 0;
}

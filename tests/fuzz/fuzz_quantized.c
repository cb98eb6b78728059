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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/search.h"
#include "nmt/text.h"

/* Translates a fixed sentence with the loaded model, as bin/translate would. */
static void translate(const NmtModel *nm) {
    int *ids, n, unknown;
    Error err;
    if (encode_source(nm, "i love cats", &ids, &n, &unknown, &err) != 0) abort();
    for (int beam = 1; beam <= 2; beam++) {
        Searcher searcher;
        if (search_init(&searcher, &nm->model.dims, 1, n, beam, 12, &err) != 0) continue;
        SearchOptions opt = {.beam = beam, .nbest = beam, .max_len = 12, .len_norm = 1};
        Translation tr;
        const int *src[1] = {ids};
        if (search_translate(&searcher, &nm->model, src, &n, 1, &opt, &tr, &err) == 0) {
            for (int h = 0; h < tr.count; h++) {
                char *text = decode_target(nm, tr.hyps[h].tokens, tr.hyps[h].len, &err);
                if (!text) abort();
                free(text);
            }
            translation_free(&tr);
        }
        search_free(&searcher);
    }
    free(ids);
}

static void load(const uint8_t *data, size_t size, bool use_model) {
    NmtModel nm;
    Error err;
    if (checkpoint_load_memory(data, size, "fuzz.ckpt", &nm, NULL, NULL, &err) == 0) {
        /* keep each input fast; a float model becomes an int8 one as --compute int8 makes it */
        if (use_model && nm.model.table.total <= 200000 &&
            nmt_model_set_compute(&nm, COMPUTE_INT8, &err) == 0)
            translate(&nm);
        nmt_model_free(&nm);
    } else if (memchr(err.msg, '\n', strnlen(err.msg, sizeof err.msg))) {
        fprintf(stderr, "error is not one line: %s\n", err.msg);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    load(data, size, false);
    if (size < 8) return 0;
    uint8_t *forged = malloc(size);
    if (!forged) return 0;
    memcpy(forged, data, size);
    uint64_t sum = checkpoint_checksum(forged, size - 8);
    memcpy(forged + size - 8, &sum, 8);
    load(forged, size, true);
    free(forged);
    return 0;
}

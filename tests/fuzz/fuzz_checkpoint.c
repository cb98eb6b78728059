/*
 * fuzz_checkpoint.c: libFuzzer target for the checkpoint loader (train/checkpoint.c), through
 * checkpoint_load_memory, which checkpoint_load calls with a file's bytes.
 *
 * Each input is loaded twice: as it is (which mostly exercises the checksum), and with its
 * last 8 bytes replaced by the correct checksum of the rest, so that mutations reach every
 * field check behind it. When a forged input loads, the model is used the way bin/translate
 * uses it: one sentence is encoded and translated (greedy and beam 2), so parameters that
 * pass the loader but break the arithmetic are found too. Build and run with `make fuzz`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/search.h"
#include "nmt/text.h"

/* Translates a fixed sentence with the loaded model, as bin/translate would. */
static void translate(const NmtModel *nm) {
    if (nm->model.table.total > 200000) return; /* keep each input fast */
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
    TrainState state = {0};
    bool has_state;
    Error err;
    if (checkpoint_load_memory(data, size, "fuzz.ckpt", &nm, &state, &has_state, &err) == 0) {
        if (use_model) translate(&nm);
        nmt_model_free(&nm);
    } else if (memchr(err.msg, '\n', strnlen(err.msg, sizeof err.msg))) {
        fprintf(stderr, "error is not one line: %s\n", err.msg);
        abort();
    }
    free(state.adam_m), free(state.adam_v), free(state.ema);
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

/*
 * checkpoint_bytes.c: see checkpoint_bytes.h.
 */
#include "tests/fuzz/checkpoint_bytes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/search.h"
#include "nmt/formats/checkpoint.h"

void load_as_is_and_forged(const uint8_t *data, size_t size, LoadInput *load) {
    load(data, size, false);
    if (size < 8) return;
    uint8_t *forged = malloc(size);
    if (!forged) return;
    memcpy(forged, data, size);
    uint64_t sum = checkpoint_checksum(forged, size - 8);
    memcpy(forged + size - 8, &sum, 8);
    load(forged, size, true);
    free(forged);
}

void translate_one_sentence(const NmtModel *nm) {
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

void check_one_line(const Error *err) {
    if (memchr(err->msg, '\n', strnlen(err->msg, sizeof err->msg))) {
        fprintf(stderr, "error is not one line: %s\n", err->msg);
        abort();
    }
}

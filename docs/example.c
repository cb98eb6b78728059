/*
 * example.c: translates its arguments through the library's public API (nmt.h), one line
 * each, like `bin/translate -m MODEL TEXT...`.
 *
 *     make install PREFIX=$HOME/.local
 *     cc docs/example.c $(pkg-config --cflags --libs nmt) -o example
 *     ./example runs/toy/best.ckpt "I love machine learning"
 */
#include <nmt.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL TEXT...\n", argv[0]);
        return 2;
    }
    nmt_error err;
    nmt_model *model = nmt_open(argv[1], &err);
    if (!model) {
        fprintf(stderr, "example: %s\n", err.message);
        return 1;
    }
    int n = argc - 2, status = 0;
    nmt_translation *out = calloc((size_t)n, sizeof *out);
    if (!out || nmt_translate(model, (const char *const *)argv + 2, n, NULL, out, &err)) {
        fprintf(stderr, "example: %s\n", out ? err.message : "out of memory");
        n = 0, status = 1;
    }
    for (int i = 0; i < n; i++) {
        if (out[i].refused) {
            fprintf(stderr, "example: argument %d: %s\n", i + 1, out[i].reason);
            status = 1;
        }
        printf("%s\n", out[i].count ? out[i].hyps[0].text : "");
    }
    nmt_translation_free(out, n);
    free(out);
    nmt_close(model);
    return status;
}

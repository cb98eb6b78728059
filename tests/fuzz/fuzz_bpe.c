/*
 * fuzz_bpe.c: libFuzzer target for the BPE merge table as a checkpoint stores it (data/bpe.c):
 * bytes -> bpe_read through fmemopen; what follows the table in the input is taken as text.
 *
 * Besides crashes, it checks what bpe.h promises: a failure is one line starting "bpe: ";
 * a table that reads is written back byte for byte as it was read; every token of the text
 * (and the text of each merge's result, so the merges are used) is cut by bpe_apply into
 * non-empty pieces, all but the last ending in "@@", that bpe_join joins back into exactly
 * the token; and a table learned from those tokens writes, reads and writes the same bytes.
 * Build and run with `make fuzz`.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "data/bpe.h"

enum { MAX_TOKENS = 32, MAX_LEARN = 50 };

static void fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_bpe: %s: %s\n", what, detail);
    abort();
}

static void check_error(const Error *err) {
    if (strncmp(err->msg, "bpe: ", 5) != 0 || strchr(err->msg, '\n')) fail("bad error", err->msg);
}

/* A tokenizer's token: non-empty UTF-8 without spaces or control characters. */
static bool is_token(const char *s, size_t len) {
    size_t offset;
    uint32_t cp;
    if (len == 0 || memchr(s, '\0', len) || utf8_find_error(s, len, &offset)) return false;
    for (size_t i = 0; i < len; i++)
        if (strchr(" \t\n\v\f\r", s[i])) return false;
    return !utf8_find_control(s, len, &offset, &cp);
}

/* bpe_apply then bpe_join must give back the token. */
static void round_trip(const Bpe *bpe, const char *token) {
    TokenList pieces = {0}, joined = {0};
    Error err;
    if (bpe_apply(bpe, token, &pieces, &err) != 0) fail("apply failed", err.msg);
    for (size_t i = 0; i < pieces.count; i++) {
        size_t n = strlen(pieces.tokens[i]);
        bool marked = n >= 2 && pieces.tokens[i][n - 1] == '@' && pieces.tokens[i][n - 2] == '@';
        if (n == 0 || (i + 1 < pieces.count) != marked) fail("bad piece", pieces.tokens[i]);
    }
    if (bpe_join((const char *const *)pieces.tokens, pieces.count, &joined, &err) != 0)
        fail("join failed", err.msg);
    if (joined.count != 1 || strcmp(joined.tokens[0], token) != 0) fail("no round trip", token);
    token_list_free(&pieces);
    token_list_free(&joined);
}

/* bpe_write into memory; free() the result. */
static char *written(const Bpe *bpe, size_t *size) {
    char *bytes = NULL;
    FILE *out = open_memstream(&bytes, size);
    if (!out) return NULL;
    if (bpe_write(bpe, out) != 0) fail("write failed", "");
    fclose(out);
    return bytes;
}

/* A learned table must write, read back and write the same bytes again. */
static void learn_round_trip(const TokenList *tokens) {
    Bpe learned, reread;
    Error err;
    if (bpe_learn(tokens, 1, MAX_LEARN, &learned, &err) != 0) fail("learn failed", err.msg);
    size_t size, size2;
    char *bytes = written(&learned, &size);
    if (!bytes) return;
    FILE *in = fmemopen(bytes, size, "rb");
    if (!in) {
        free(bytes);
        return;
    }
    if (bpe_read(&reread, in, size, &err) != 0) fail("learned table does not read", err.msg);
    fclose(in);
    char *bytes2 = written(&reread, &size2);
    if (bytes2 && (size2 != size || memcmp(bytes, bytes2, size) != 0))
        fail("learned table", "written differently after reading");
    for (size_t i = 0; i < tokens->count; i++) round_trip(&learned, tokens->tokens[i]);
    free(bytes2);
    free(bytes);
    bpe_free(&learned);
    bpe_free(&reread);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    FILE *in = fmemopen((void *)data, size, "rb");
    if (!in) return 0;
    Bpe bpe;
    Error err;
    if (bpe_read(&bpe, in, size, &err) != 0) {
        check_error(&err);
        fclose(in);
        return 0;
    }
    long used = ftell(in);
    fclose(in);
    if (used < 0 || (size_t)used > size) fail("ftell", "past the input");

    size_t out_size;
    char *out = written(&bpe, &out_size);
    if (out && (out_size != (size_t)used || memcmp(out, data, out_size) != 0))
        fail("table", "not written back as it was read");
    free(out);

    /* the merges' results, and the rest of the input split at spaces, as tokens */
    TokenList tokens = {0};
    char **slots = calloc(MAX_TOKENS, sizeof *slots);
    if (!slots) goto done;
    tokens.tokens = slots;
    tokens.capacity = MAX_TOKENS;
    for (size_t m = 0; m < bpe.merge_count && tokens.count < MAX_TOKENS / 2; m++) {
        const char *s = bpe.symbols.strings[bpe.merges[m].result];
        size_t n = bpe.symbols.lengths[bpe.merges[m].result];
        if (n >= 2 && s[n - 1] == '@' && s[n - 2] == '@') n -= 2; /* a piece inside a word */
        if (!is_token(s, n)) continue;
        if (!(tokens.tokens[tokens.count] = strndup(s, n))) goto done;
        tokens.count++;
    }
    const char *text = (const char *)data + used, *end = (const char *)data + size;
    while (text < end && tokens.count < MAX_TOKENS) {
        const char *stop = text;
        while (stop < end && *stop != ' ' && *stop != '\n') stop++;
        if (is_token(text, (size_t)(stop - text))) {
            if (!(tokens.tokens[tokens.count] = strndup(text, (size_t)(stop - text)))) goto done;
            tokens.count++;
        }
        text = stop + 1;
    }
    for (size_t i = 0; i < tokens.count; i++) round_trip(&bpe, tokens.tokens[i]);
    if (tokens.count > 0) learn_round_trip(&tokens);
done:
    token_list_free(&tokens);
    bpe_free(&bpe);
    return 0;
}

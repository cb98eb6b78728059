/*
 * fuzz_corpus.c: libFuzzer target for the text pipeline: the TSV corpus reader
 * (data/corpus.c), the UTF-8 checks and tokenizer (data/tokenizer.c), vocabularies and their
 * serialised form (data/vocab.c), and datasets and epoch plans (data/dataset.c), in the order
 * bin/train uses them.
 *
 * The input is a corpus file. Besides crashes it checks the promises these functions make:
 * tokens are non-empty valid UTF-8 without whitespace; a vocabulary reads back exactly as it
 * was written; an epoch plan visits every pair exactly once. The whole input is also tokenized
 * as one text, invalid bytes included. Build and run with `make fuzz`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"

static void fail(const char *what) {
    fprintf(stderr, "broken promise: %s\n", what);
    abort();
}

static void check_tokens(const TokenList *list) {
    for (size_t i = 0; i < list->count; i++) {
        const char *token = list->tokens[i];
        size_t len = strlen(token);
        if (len == 0) fail("an empty token");
        if (utf8_find_error(token, len, NULL)) fail("a token of invalid UTF-8");
        if (strpbrk(token, " \t\n\r\v\f")) fail("whitespace inside a token");
    }
}

/* A vocabulary written and read back is the same vocabulary. */
static void check_round_trip(const Vocab *vocab) {
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) return;
    int bad = vocab_write(vocab, mem);
    if (fclose(mem) != 0 || bad) {
        free(buf);
        return;
    }
    FILE *in = fmemopen(buf, len, "rb");
    Vocab back;
    Error err;
    if (in && vocab_read(&back, in, len, &err) != 0) fail(err.msg);
    if (in) {
        if (back.size != vocab->size) fail("vocabulary size changed in a round trip");
        for (size_t id = 0; id < back.size; id++)
            if (strcmp(back.tokens[id], vocab->tokens[id]) != 0) fail("token changed");
        vocab_free(&back);
        fclose(in);
    }
    free(buf);
}

/* Every pair of the dataset appears in exactly one batch of the plan. */
static void check_plan(const Dataset *ds) {
    EpochPlan plan;
    Error err;
    if (epoch_plan_make(&plan, ds, 3, 7, 1, &err) != 0) return;
    unsigned char *seen = calloc(ds->count + 1, 1);
    if (seen) {
        if (plan.start[plan.n_batches] != ds->count) fail("the plan does not cover the data");
        for (size_t i = 0; i < ds->count; i++) {
            if (plan.order[i] >= ds->count || seen[plan.order[i]]++) fail("a pair twice");
        }
        free(seen);
    }
    epoch_plan_free(&plan);
}

/* The whole input as one text: tokenized, or refused as invalid UTF-8 at a valid offset. */
static void tokenize_raw(const uint8_t *data, size_t size, bool lowercase) {
    char *text = malloc(size + 1);
    if (!text) return;
    memcpy(text, data, size);
    text[size] = '\0';
    TokenList tokens;
    Error err;
    if (tokenize(text, lowercase, &tokens, &err) == 0) {
        check_tokens(&tokens);
        char *joined = detokenize((const char *const *)tokens.tokens, tokens.count, &err);
        if (!joined) fail("detokenize failed");
        free(joined);
        token_list_free(&tokens);
    }
    size_t offset, len = strlen(text);
    uint32_t control;
    if (utf8_find_error(text, len, &offset) && offset >= len) fail("error offset out of range");
    if (utf8_find_control(text, len, &offset, &control) && offset >= len)
        fail("control offset out of range");
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bool lowercase = size > 0 && (data[size - 1] & 1);
    tokenize_raw(data, size, lowercase);
    Corpus corpus;
    Error err;
    if (corpus_read_string((const char *)data, size, "fuzz.tsv", &corpus, &err) != 0) {
        if (memchr(err.msg, '\n', strnlen(err.msg, sizeof err.msg))) fail("two-line error");
        return 0;
    }
    TokenizedCorpus tc;
    if (tokenized_corpus_make(&tc, &corpus, "fuzz.tsv", lowercase, &err) == 0) {
        for (size_t i = 0; i < tc.count; i++) check_tokens(&tc.src[i]), check_tokens(&tc.tgt[i]);
        Vocab src, tgt;
        if (vocab_build(tc.src, tc.count, 1, 64, &src, &err) == 0) {
            if (vocab_build(tc.tgt, tc.count, 1, SIZE_MAX, &tgt, &err) == 0) {
                check_round_trip(&src);
                check_round_trip(&tgt);
                Dataset ds;
                if (dataset_make(&ds, &tc, &corpus, &src, &tgt, 50, &err) == 0) {
                    if (ds.count + ds.skipped != corpus.count) fail("pairs lost");
                    check_plan(&ds);
                    dataset_free(&ds);
                }
                vocab_free(&tgt);
            }
            vocab_free(&src);
        }
        tokenized_corpus_free(&tc);
    }
    corpus_free(&corpus);
    return 0;
}

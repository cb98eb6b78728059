/*
 * text.c: corpus loading and encoding, sentence encoding and decoding (see text.h).
 */
#include "text.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int corpus_load(const char *path, bool lowercase, Corpus *corpus, TokenizedCorpus *tokens,
                Error *err) {
    if (corpus_read_file(path, corpus, err)) return -1;
    if (tokenized_corpus_make(tokens, corpus, path, lowercase, err)) {
        corpus_free(corpus);
        return -1;
    }
    return 0;
}

int nmt_dataset(Dataset *ds, const NmtModel *nm, const TokenizedCorpus *tc, const Corpus *corpus,
                int max_len, Error *err) {
    return dataset_make(ds, tc, corpus, &nm->src_vocab, &nm->tgt_vocab, max_len, err);
}

int encode_source(const NmtModel *nm, const char *text, int **ids, int *n, int *unknown,
                  Error *err) {
    TokenList tokens = {0};
    *ids = NULL;
    size_t offset;
    uint32_t control;
    if (utf8_validate(text, strlen(text), err)) return -1;
    if (utf8_find_control(text, strlen(text), &offset, &control))
        return error_set(err, "control character U+%04X at byte %zu", (unsigned)control, offset);
    if (tokenize(text, nm->lowercase, &tokens, err)) return -1;
    if (tokens.count >= INT_MAX) {
        token_list_free(&tokens);
        return error_set(err, "%zu tokens are more than any sentence can have", tokens.count);
    }
    *ids = checked_calloc(tokens.count + 1, sizeof(int), "source ids", err);
    if (!*ids) {
        token_list_free(&tokens);
        return -1;
    }
    vocab_encode(&nm->src_vocab, &tokens, *ids);
    *n = (int)tokens.count + 1;
    (*ids)[tokens.count] = TOK_EOS;
    *unknown = 0;
    for (size_t i = 0; i < tokens.count; i++) *unknown += (*ids)[i] == TOK_UNK;
    token_list_free(&tokens);
    return 0;
}

char *decode_target(const NmtModel *nm, const int *ids, int n, Error *err) {
    const char **tokens = checked_calloc((size_t)n + 1, sizeof(char *), "target tokens", err);
    if (!tokens) return NULL;
    for (int i = 0; i < n; i++) tokens[i] = vocab_token(&nm->tgt_vocab, ids[i]);
    char *text = detokenize(tokens, (size_t)n, err);
    free(tokens);
    return text;
}

/*
 * new_model.c: a fresh model from a config (see new_model.h).
 */
#include "train/new_model.h"

#include <stdlib.h>
#include <string.h>

/* Subwords: each side's merges are learned from its training tokens (bpe_learn is
 * deterministic and ignores the corpus's order), then the vocabularies count the pieces. */
static int learn_subwords(NmtModel *nm, const Config *cfg, const TokenizedCorpus *train,
                          TokenizedCorpus *pieces, Error *err) {
    nm->subwords = true;
    if (bpe_learn(train->src, train->count, (size_t)cfg->data.src_merges, &nm->src_bpe, err))
        return error_prefix(err, "learning the source BPE merges: ");
    if (bpe_learn(train->tgt, train->count, (size_t)cfg->data.tgt_merges, &nm->tgt_bpe, err))
        return error_prefix(err, "learning the target BPE merges: ");
    return nmt_subword_corpus(nm, train, pieces, err);
}

/* Lossless subwords: the merges are learned from each side's segments of the text as written,
 * then the vocabularies count the pieces (data/lossless.h). */
static int learn_lossless(NmtModel *nm, const Config *cfg, const TokenizedCorpus *train,
                          TokenizedCorpus *pieces, Error *err) {
    nm->subwords = nm->lossless = true;
    nm->across_spaces = cfg->data.merge_across_spaces;
    if (!train->src_text || !train->tgt_text)
        return error_set(err, "lossless subwords need the training sentences as written");
    TokenList *segments = checked_calloc(2 * train->count + 1, sizeof *segments, "segments", err);
    int rc = segments ? 0 : -1;
    for (size_t i = 0; i < train->count && rc == 0; i++)
        rc = nmt_segments(nm, train->src_text[i], &segments[i], err) ||
             nmt_segments(nm, train->tgt_text[i], &segments[train->count + i], err);
    if (rc == 0 &&
        lossless_learn(segments, train->count, (size_t)cfg->data.src_merges, &nm->src_bpe, err))
        rc = error_prefix(err, "learning the source BPE merges: ");
    if (rc == 0 && lossless_learn(segments + train->count, train->count,
                                  (size_t)cfg->data.tgt_merges, &nm->tgt_bpe, err))
        rc = error_prefix(err, "learning the target BPE merges: ");
    for (size_t i = 0; segments && i < 2 * train->count; i++) token_list_free(&segments[i]);
    free(segments);
    return rc ? -1 : nmt_subword_corpus(nm, train, pieces, err);
}

/* One side's vocabulary of at most `size` units; its error names the side and its key
 * ("vocabulary size 5 leaves no room ..." is the key's value). */
static int build_side(bool lossless, const TokenList *units, size_t count, size_t min_count,
                      int size, const char *side, const char *key, Vocab *out, Error *err) {
    if (lossless ? lossless_vocab_build(units, count, min_count, (size_t)size, out, err)
                 : vocab_build(units, count, min_count, (size_t)size, out, err))
        return error_prefix(err, "building the %s vocabulary ([data] %s = %d): ", side, key, size);
    return 0;
}

static int build_vocabularies(NmtModel *nm, const Config *cfg, const TokenizedCorpus *train,
                              Error *err) {
    TokenizedCorpus pieces = {0};
    const TokenizedCorpus *units = train;
    bool lossless = cfg->data.subwords == SUBWORDS_LOSSLESS;
    if (cfg->data.subwords == SUBWORDS_BPE) {
        if (learn_subwords(nm, cfg, train, &pieces, err)) return -1;
        units = &pieces;
    } else if (lossless) {
        if (learn_lossless(nm, cfg, train, &pieces, err)) return -1;
        units = &pieces;
    }
    size_t min_count = (size_t)cfg->data.min_count;
    int rc = build_side(lossless, units->src, units->count, min_count, cfg->data.src_vocab_size,
                        "source", "src_vocab_size", &nm->src_vocab, err) ||
             build_side(lossless, units->tgt, units->count, min_count, cfg->data.tgt_vocab_size,
                        "target", "tgt_vocab_size", &nm->tgt_vocab, err);
    tokenized_corpus_free(&pieces);
    return rc ? -1 : 0;
}

int nmt_model_from_config(NmtModel *nm, const Config *cfg, const TokenizedCorpus *train,
                          uint64_t seed, Error *err) {
    memset(nm, 0, sizeof *nm);
    nm->lowercase = cfg->data.lowercase;
    if (build_vocabularies(nm, cfg, train, err)) {
        nmt_model_free(nm);
        return -1;
    }
    ModelDims dims = {.src_vocab = (int)nm->src_vocab.size,
                      .tgt_vocab = (int)nm->tgt_vocab.size,
                      .emb = cfg->model.emb_size,
                      .enc_hidden = cfg->model.enc_hidden,
                      .bidirectional = cfg->model.bidirectional,
                      .dec_hidden = cfg->model.dec_hidden,
                      .att = cfg->model.att_size,
                      .readout = cfg->model.readout_size,
                      .score = cfg->model.score,
                      .tie_embeddings = cfg->model.tie_embeddings,
                      .layer_norm = cfg->model.layer_norm};
    ParamTable table;
    if (dims_validate(&dims, err)) {
        nmt_model_free(nm);
        return -1;
    }
    param_table_build(&table, &dims);
    if (memory_check(2.0 * sizeof(real) * (double)table.total,
                     "the model's parameters and gradients", err) ||
        model_init(&nm->model, &dims, err)) {
        nmt_model_free(nm);
        return -1;
    }
    params_init(nm->model.params, &nm->model.table, seed);
    return 0;
}

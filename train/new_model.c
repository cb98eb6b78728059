/*
 * new_model.c: a fresh model from a config (see new_model.h).
 */
#include "train/new_model.h"

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

static int build_vocabularies(NmtModel *nm, const Config *cfg, const TokenizedCorpus *train,
                              Error *err) {
    TokenizedCorpus pieces = {0};
    const TokenizedCorpus *units = train;
    if (cfg->data.subwords == SUBWORDS_BPE) {
        if (learn_subwords(nm, cfg, train, &pieces, err)) return -1;
        units = &pieces;
    }
    int rc = vocab_build(units->src, units->count, (size_t)cfg->data.min_count,
                         (size_t)cfg->data.src_vocab_size, &nm->src_vocab, err) ||
                     vocab_build(units->tgt, units->count, (size_t)cfg->data.min_count,
                                 (size_t)cfg->data.tgt_vocab_size, &nm->tgt_vocab, err)
                 ? error_prefix(err, "building vocabularies: ")
                 : 0;
    tokenized_corpus_free(&pieces);
    return rc;
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

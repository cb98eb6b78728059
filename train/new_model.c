/*
 * new_model.c: a fresh model from a config (see new_model.h).
 */
#include "new_model.h"

#include <string.h>

int nmt_model_from_config(NmtModel *nm, const Config *cfg, const TokenizedCorpus *train,
                          uint64_t seed, Error *err) {
    memset(nm, 0, sizeof *nm);
    nm->lowercase = cfg->data.lowercase;
    if (vocab_build(train->src, train->count, (size_t)cfg->data.min_count,
                    (size_t)cfg->data.src_vocab_size, &nm->src_vocab, err) ||
        vocab_build(train->tgt, train->count, (size_t)cfg->data.min_count,
                    (size_t)cfg->data.tgt_vocab_size, &nm->tgt_vocab, err)) {
        nmt_model_free(nm);
        return error_prefix(err, "building vocabularies: ");
    }
    ModelDims dims = {.src_vocab = (int)nm->src_vocab.size,
                      .tgt_vocab = (int)nm->tgt_vocab.size,
                      .emb = cfg->model.emb_size,
                      .enc_hidden = cfg->model.enc_hidden,
                      .bidirectional = cfg->model.bidirectional,
                      .dec_hidden = cfg->model.dec_hidden,
                      .att = cfg->model.att_size,
                      .readout = cfg->model.readout_size,
                      .score = cfg->model.score};
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

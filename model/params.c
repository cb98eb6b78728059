/*
 * params.c: the parameter table, named views and initialisation (see params.h).
 */
#include "model/params.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "base/rng.h"

/* Spec names in table order, with where each tensor's pointer lives in Weights. */
static const struct {
    const char *name;
    size_t field;
} PARAM_NAMES[PARAM_COUNT] = {
    [P_SRC_EMB] = {"src_emb", offsetof(Weights, src_emb)},
    [P_TGT_EMB] = {"tgt_emb", offsetof(Weights, tgt_emb)},
    [P_ENC_FWD_W_IH] = {"enc.fwd.w_ih", offsetof(Weights, enc_fwd.w_ih)},
    [P_ENC_FWD_W_HH] = {"enc.fwd.w_hh", offsetof(Weights, enc_fwd.w_hh)},
    [P_ENC_FWD_B_IH] = {"enc.fwd.b_ih", offsetof(Weights, enc_fwd.b_ih)},
    [P_ENC_FWD_B_HH] = {"enc.fwd.b_hh", offsetof(Weights, enc_fwd.b_hh)},
    [P_ENC_FWD_G_IH] = {"enc.fwd.g_ih", offsetof(Weights, enc_fwd.g_ih)},
    [P_ENC_FWD_G_HH] = {"enc.fwd.g_hh", offsetof(Weights, enc_fwd.g_hh)},
    [P_ENC_BWD_W_IH] = {"enc.bwd.w_ih", offsetof(Weights, enc_bwd.w_ih)},
    [P_ENC_BWD_W_HH] = {"enc.bwd.w_hh", offsetof(Weights, enc_bwd.w_hh)},
    [P_ENC_BWD_B_IH] = {"enc.bwd.b_ih", offsetof(Weights, enc_bwd.b_ih)},
    [P_ENC_BWD_B_HH] = {"enc.bwd.b_hh", offsetof(Weights, enc_bwd.b_hh)},
    [P_ENC_BWD_G_IH] = {"enc.bwd.g_ih", offsetof(Weights, enc_bwd.g_ih)},
    [P_ENC_BWD_G_HH] = {"enc.bwd.g_hh", offsetof(Weights, enc_bwd.g_hh)},
    [P_DEC_INIT_W] = {"dec.init.w", offsetof(Weights, init_w)},
    [P_DEC_INIT_B] = {"dec.init.b", offsetof(Weights, init_b)},
    [P_ATT_W_K] = {"att.w_k", offsetof(Weights, att_w_k)},
    [P_ATT_W_Q] = {"att.w_q", offsetof(Weights, att_w_q)},
    [P_ATT_B] = {"att.b", offsetof(Weights, att_b)},
    [P_ATT_V] = {"att.v", offsetof(Weights, att_v)},
    [P_ATT_W_A] = {"att.w_a", offsetof(Weights, att_w_a)},
    [P_DEC_GRU_W_IH] = {"dec.gru.w_ih", offsetof(Weights, dec_gru.w_ih)},
    [P_DEC_GRU_W_HH] = {"dec.gru.w_hh", offsetof(Weights, dec_gru.w_hh)},
    [P_DEC_GRU_B_IH] = {"dec.gru.b_ih", offsetof(Weights, dec_gru.b_ih)},
    [P_DEC_GRU_B_HH] = {"dec.gru.b_hh", offsetof(Weights, dec_gru.b_hh)},
    [P_DEC_GRU_G_IH] = {"dec.gru.g_ih", offsetof(Weights, dec_gru.g_ih)},
    [P_DEC_GRU_G_HH] = {"dec.gru.g_hh", offsetof(Weights, dec_gru.g_hh)},
    [P_OUT_W_O] = {"out.w_o", offsetof(Weights, out_w_o)},
    [P_OUT_B_O] = {"out.b_o", offsetof(Weights, out_b_o)},
    [P_OUT_W] = {"out.w", offsetof(Weights, out_w)},
    [P_OUT_B] = {"out.b", offsetof(Weights, out_b)},
};

static const char *const SCORE_NAMES[SCORE_COUNT] = {
    [SCORE_ADDITIVE] = "additive",
    [SCORE_DOT] = "dot",
    [SCORE_GENERAL] = "general",
    [SCORE_SCALED_DOT] = "scaled_dot",
};

const char *score_name(AttentionScore score) {
    return score >= 0 && score < SCORE_COUNT ? SCORE_NAMES[score] : "?";
}

int score_from_name(const char *name, AttentionScore *score, Error *err) {
    for (int s = 0; s < SCORE_COUNT; s++)
        if (strcmp(name, SCORE_NAMES[s]) == 0) {
            *score = (AttentionScore)s;
            return 0;
        }
    return error_set(err,
                     "unknown attention score '%.60s' (expected additive, dot, general or "
                     "scaled_dot)",
                     name);
}

int dims_enc_state(const ModelDims *d) {
    return d->bidirectional ? 2 * d->enc_hidden : d->enc_hidden;
}

int dims_att_features(const ModelDims *d) {
    return d->score == SCORE_DOT || d->score == SCORE_GENERAL ? d->dec_hidden : d->att;
}

int dims_validate(const ModelDims *d, Error *err) {
    const struct {
        const char *name;
        int value;
    } sizes[] = {{"source vocabulary", d->src_vocab},
                 {"target vocabulary", d->tgt_vocab},
                 {"emb_size", d->emb},
                 {"enc_hidden", d->enc_hidden},
                 {"dec_hidden", d->dec_hidden},
                 {"att_size", d->att},
                 {"readout_size", d->readout}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].value < 1 || sizes[i].value > (1 << 24))
            return error_set(err, "%s = %d is out of range (1..%d)", sizes[i].name, sizes[i].value,
                             1 << 24);
    if (d->src_vocab < 4 || d->tgt_vocab < 4)
        return error_set(err, "vocabularies need at least the 4 reserved tokens");
    if (d->score < 0 || d->score >= SCORE_COUNT)
        return error_set(err, "unknown attention score %d", (int)d->score);
    if (d->score == SCORE_DOT && d->dec_hidden != dims_enc_state(d))
        return error_set(err,
                         "score = dot needs dec_hidden (D = %d) equal to the encoder state size "
                         "(K = %d, enc_hidden = %d, %s)",
                         d->dec_hidden, dims_enc_state(d), d->enc_hidden,
                         d->bidirectional ? "bidirectional: K = 2 x enc_hidden"
                                          : "unidirectional: K = enc_hidden");
    if (d->tie_embeddings != 0 && d->tie_embeddings != 1)
        return error_set(err, "invalid tie_embeddings flag %d", d->tie_embeddings);
    if (d->layer_norm != 0 && d->layer_norm != 1)
        return error_set(err, "invalid layer_norm flag %d", d->layer_norm);
    if (d->tie_embeddings && d->readout != d->emb)
        return error_set(err, "tie_embeddings needs readout_size (%d) = emb_size (%d)", d->readout,
                         d->emb);
    ParamTable table;
    param_table_build(&table, d);
    for (int p = 0; p < PARAM_COUNT; p++)
        if (table.info[p].size >= (size_t)1 << 31)
            return error_set(err, "parameter %s would have %zu elements (too many)",
                             table.info[p].name, table.info[p].size);
    return 0;
}

/* Whether the score has the att.* tensor id (the spec's table of scores). */
static int score_uses(AttentionScore score, ParamId id) {
    switch (score) {
    case SCORE_ADDITIVE:
        return id != P_ATT_W_A;
    case SCORE_GENERAL:
        return id == P_ATT_W_A;
    case SCORE_SCALED_DOT:
        return id == P_ATT_W_Q || id == P_ATT_W_K;
    default:
        return 0;
    }
}

int param_is_gain(ParamId id) {
    return id == P_ENC_FWD_G_IH || id == P_ENC_FWD_G_HH || id == P_ENC_BWD_G_IH ||
           id == P_ENC_BWD_G_HH || id == P_DEC_GRU_G_IH || id == P_DEC_GRU_G_HH;
}

/* The spec's shape table. */
static void param_shape(ParamId id, const ModelDims *d, int *ndim, int shape[2]) {
    int E = d->emb, H = d->enc_hidden, K = dims_enc_state(d), D = d->dec_hidden, A = d->att,
        O = d->readout;
    int rows = 0, cols = 0;
    switch (id) {
    case P_SRC_EMB:
        rows = d->src_vocab, cols = E;
        break;
    case P_TGT_EMB:
        rows = d->tgt_vocab, cols = E;
        break;
    case P_ENC_FWD_W_IH:
    case P_ENC_BWD_W_IH:
        rows = 3 * H, cols = E;
        break;
    case P_ENC_FWD_W_HH:
    case P_ENC_BWD_W_HH:
        rows = 3 * H, cols = H;
        break;
    case P_ENC_FWD_B_IH:
    case P_ENC_FWD_B_HH:
    case P_ENC_FWD_G_IH:
    case P_ENC_FWD_G_HH:
    case P_ENC_BWD_B_IH:
    case P_ENC_BWD_B_HH:
    case P_ENC_BWD_G_IH:
    case P_ENC_BWD_G_HH:
        rows = 3 * H;
        break;
    case P_DEC_INIT_W:
        rows = D, cols = K;
        break;
    case P_DEC_INIT_B:
        rows = D;
        break;
    case P_ATT_W_K:
        rows = A, cols = K;
        break;
    case P_ATT_W_Q:
        rows = A, cols = D;
        break;
    case P_ATT_B:
    case P_ATT_V:
        rows = A;
        break;
    case P_ATT_W_A:
        rows = D, cols = K;
        break;
    case P_DEC_GRU_W_IH:
        rows = 3 * D, cols = E + K;
        break;
    case P_DEC_GRU_W_HH:
        rows = 3 * D, cols = D;
        break;
    case P_DEC_GRU_B_IH:
    case P_DEC_GRU_B_HH:
    case P_DEC_GRU_G_IH:
    case P_DEC_GRU_G_HH:
        rows = 3 * D;
        break;
    case P_OUT_W_O:
        rows = O, cols = D + K + E;
        break;
    case P_OUT_B_O:
        rows = O;
        break;
    case P_OUT_W:
        rows = d->tgt_vocab, cols = O;
        break;
    case P_OUT_B:
        rows = d->tgt_vocab;
        break;
    case PARAM_COUNT:
        break;
    }
    int absent = (!d->bidirectional && id >= P_ENC_BWD_W_IH && id <= P_ENC_BWD_G_HH) ||
                 (id >= P_ATT_W_K && id <= P_ATT_W_A && !score_uses(d->score, id)) ||
                 (id == P_OUT_W && d->tie_embeddings) || (param_is_gain(id) && !d->layer_norm);
    *ndim = absent ? 0 : cols ? 2 : 1;
    shape[0] = absent ? 0 : rows;
    shape[1] = absent ? 0 : cols ? cols : 1;
}

void param_table_build(ParamTable *table, const ModelDims *d) {
    size_t offset = 0;
    for (int p = 0; p < PARAM_COUNT; p++) table->order[p] = (ParamId)p;
    /* the spec lists scaled_dot's tensors as att.w_q, att.w_k (additive's as att.w_k, att.w_q) */
    if (d->score == SCORE_SCALED_DOT)
        table->order[P_ATT_W_K] = P_ATT_W_Q, table->order[P_ATT_W_Q] = P_ATT_W_K;
    for (int n = 0; n < PARAM_COUNT; n++) {
        ParamId p = table->order[n];
        ParamInfo *info = &table->info[p];
        info->name = PARAM_NAMES[p].name;
        param_shape(p, d, &info->ndim, info->shape);
        info->size = (size_t)info->shape[0] * (size_t)info->shape[1];
        info->offset = offset;
        offset += info->size;
    }
    table->total = offset;
    table->tied = d->tie_embeddings != 0;
    table->layer_norm = d->layer_norm != 0;
}

void weights_view(Weights *w, const ParamTable *table, real *block) {
    for (int p = 0; p < PARAM_COUNT; p++) {
        const ParamInfo *info = &table->info[p];
        real **slot = (real **)((char *)w + PARAM_NAMES[p].field);
        *slot = info->size ? block + info->offset : NULL;
    }
    /* tied: the output layer reads tgt_emb, and its gradient accumulates into tgt_emb's */
    if (table->tied) w->out_w = w->tgt_emb;
}

/* The bound of PyTorch's default uniform initialisation for each tensor (0: normal). */
static double init_bound(ParamId id, const ParamTable *table) {
    const ParamInfo *info = table->info;
    switch (id) {
    case P_TGT_EMB:
        /* tied, tgt_emb is also W_out: drawn as out.w would be, not N(0, 1), which would
         * start the logits with a spread of about sqrt(O) */
        return table->tied ? 1 / sqrt(info[P_OUT_W_O].shape[0]) : 0;
    case P_SRC_EMB:
        return 0;
    case P_ENC_FWD_W_IH:
    case P_ENC_FWD_W_HH:
    case P_ENC_FWD_B_IH:
    case P_ENC_FWD_B_HH:
    case P_ENC_BWD_W_IH:
    case P_ENC_BWD_W_HH:
    case P_ENC_BWD_B_IH:
    case P_ENC_BWD_B_HH:
        return 1 / sqrt(info[P_ENC_FWD_W_HH].shape[1]);
    case P_DEC_GRU_W_IH:
    case P_DEC_GRU_W_HH:
    case P_DEC_GRU_B_IH:
    case P_DEC_GRU_B_HH:
        return 1 / sqrt(info[P_DEC_GRU_W_HH].shape[1]);
    case P_DEC_INIT_B:
        return 1 / sqrt(info[P_DEC_INIT_W].shape[1]);
    case P_ATT_B:
        return 1 / sqrt(info[P_ATT_W_K].shape[1]);
    case P_ATT_V:
        return 1 / sqrt(info[P_ATT_V].shape[0]);
    case P_OUT_B_O:
        return 1 / sqrt(info[P_OUT_W_O].shape[1]);
    case P_OUT_B:
        return 1 / sqrt(info[P_OUT_W_O].shape[0]); /* out.w's columns, O, tied or not */
    default:
        return 1 / sqrt(info[id].shape[1]); /* a matrix: 1/sqrt(in) */
    }
}

void params_init(real *block, const ParamTable *table, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed, 0);
    for (int n = 0; n < PARAM_COUNT; n++) {
        ParamId p = table->order[n];
        const ParamInfo *info = &table->info[p];
        real *x = block + info->offset;
        if (param_is_gain(p)) { /* 1, drawing nothing: the other tensors come out as without */
            for (size_t i = 0; i < info->size; i++) x[i] = 1;
            continue;
        }
        double bound = init_bound(p, table);
        for (size_t i = 0; i < info->size; i++)
            x[i] = (real)(bound == 0 ? rng_normal(&rng) : bound * (2 * rng_uniform(&rng) - 1));
    }
}

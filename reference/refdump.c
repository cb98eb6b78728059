/*
 * refdump.c: the gradient reference dump of the model spec (see refdump.h).
 */
#include "reference/refdump.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/files.h"
#include "nmt/formats/npy.h"
#include "reference/reference.h"

/* dir/name + ext into buf, or an error when it does not fit. */
static int join_path(char *buf, size_t size, const char *dir, const char *name, const char *ext,
                     Error *err) {
    int n = snprintf(buf, size, "%s/%s%s", dir, name, ext);
    if (n < 0 || (size_t)n >= size) return error_set(err, "%s/%s%s: path too long", dir, name, ext);
    return 0;
}

static int write_real(const char *dir, const char *name, int ndim, size_t d0, size_t d1, size_t d2,
                      const real *data, Error *err) {
    char path[4096];
    const size_t shape[3] = {d0, d1, d2};
    if (join_path(path, sizeof path, dir, name, ".npy", err)) return -1;
    return npy_write_real(path, ndim, shape, data, err);
}

static int write_ints(const char *dir, const char *name, int ndim, size_t d0, size_t d1,
                      const int *data, Error *err) {
    char path[4096];
    const size_t shape[2] = {d0, d1};
    if (join_path(path, sizeof path, dir, name, ".npy", err)) return -1;
    return npy_write(path, NPY_I4, ndim, shape, data, err);
}

/* params/ or grads/: one file per tensor, by the table */
static int write_tensors(const char *dir, const Model *m, const real *block, Error *err) {
    for (int p = 0; p < PARAM_COUNT; p++) {
        const ParamInfo *info = &m->table.info[p];
        if (!info->size) continue;
        if (write_real(dir, info->name, info->ndim, (size_t)info->shape[0], (size_t)info->shape[1],
                       0, block + info->offset, err))
            return -1;
    }
    return 0;
}

/* Copies a time-major [T, B, X] activation into the dump's sentence-major [B, T, X]. */
static void to_batch_major(real *dst, const real *src, int T, int B, int X) {
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++)
            memcpy(dst + ((size_t)b * T + t) * X, src + ((size_t)t * B + b) * X,
                   sizeof(real) * (size_t)X);
}

static int write_config(const char *out, const ModelDims *d, Error *err) {
    char path[4096];
    OutputFile f;
    if (join_path(path, sizeof path, out, "config", ".json", err)) return -1;
    if (output_file_open(&f, path, false, err)) return -1;
    fprintf(f.file,
            "{\"E\": %d, \"H\": %d, \"K\": %d, \"D\": %d, \"A\": %d, \"O\": %d, \"Vs\": %d, "
            "\"Vt\": %d, \"bidirectional\": %s, \"score\": \"%s\", \"label_smoothing\": 0, "
            "\"dropout\": 0, \"word_dropout\": 0, \"tie_embeddings\": %s, \"layer_norm\": %s, "
            "\"dtype\": \"%s\"}\n",
            d->emb, d->enc_hidden, dims_enc_state(d), d->dec_hidden, d->att, d->readout,
            d->src_vocab, d->tgt_vocab, d->bidirectional ? "true" : "false", score_name(d->score),
            d->tie_embeddings ? "true" : "false", d->layer_norm ? "true" : "false",
            sizeof(real) == 8 ? "float64" : "float32");
    return output_file_commit(&f, err);
}

/* The activations and the loss a dump writes, in its layout, from either path. */
typedef struct {
    real *alpha;  /* [B, T, S] */
    real *enc_h;  /* [B, S, K] */
    real *dec_s;  /* [B, T, D] */
    real *logits; /* [B, T, Vt] */
    double loss;
} DumpActs;

/* The engine: a forward_only pass keeps every row's logits; backward then recomputes the
 * output layer's gradients into m->grads. */
static int engine_pass(Model *m, const Batch *batch, DumpActs *out, Error *err) {
    const ModelDims *d = &m->dims;
    int B = batch->B, S = batch->S, T = batch->T, K = dims_enc_state(d);
    Acts acts;
    ActsPlan plan = {.logit_rows = ACTS_ALL_ROWS};
    if (acts_init_plan(&acts, d, B, S, T, &plan, err)) return -1;
    if (model_forward(m, &acts, batch, &(ForwardOptions){.forward_only = 1}, &out->loss, err)) {
        acts_free(&acts);
        return -1;
    }
    /* activations first: the backward pass reuses the logits' memory */
    to_batch_major(out->alpha, acts.alpha, T, B, S);
    memcpy(out->enc_h, acts.enc_h, sizeof(real) * (size_t)B * S * K);
    to_batch_major(out->dec_s, acts.dec_state + (size_t)B * d->dec_hidden, T, B, d->dec_hidden);
    to_batch_major(out->logits, acts.logits, T, B, d->tgt_vocab);
    model_zero_grad(m);
    model_backward(m, &acts);
    acts_free(&acts);
    return 0;
}

/* The plain reference (reference/reference.h): the same arrays, from its double ones; at
 * padding steps its alpha, s_t and z_t are zero. */
static int reference_pass(Model *m, const Batch *batch, DumpActs *out, Error *err) {
    const ModelDims *d = &m->dims;
    int B = batch->B, S = batch->S, T = batch->T, K = dims_enc_state(d), D = d->dec_hidden;
    RefActs ref;
    if (ref_acts_init(&ref, d, B, S, T, err)) return -1;
    if (ref_forward(&ref, m->params, batch, &(RefOptions){0}, &out->loss, err)) {
        ref_acts_free(&ref);
        return -1;
    }
    for (size_t i = 0; i < (size_t)B * T * S; i++) out->alpha[i] = (real)ref.alpha[i];
    for (size_t i = 0; i < (size_t)B * S * K; i++) out->enc_h[i] = (real)ref.enc_h[i];
    for (int b = 0; b < B; b++) /* s_1 .. s_T of [B, T+1, D] */
        for (size_t j = 0; j < (size_t)T * D; j++)
            out->dec_s[(size_t)b * T * D + j] = (real)ref.s[((size_t)b * (T + 1) + 1) * D + j];
    for (size_t i = 0; i < (size_t)B * T * d->tgt_vocab; i++) out->logits[i] = (real)ref.logits[i];
    model_zero_grad(m);
    ref_backward(&ref, m->params, m->grads);
    ref_acts_free(&ref);
    return 0;
}

int reference_dump(NmtModel *nm, const Dataset *ds, const char *out, DumpPath path,
                   RefDumpSummary *summary, Error *err) {
    BatchBuffer bb = {0};
    real *scratch = NULL;
    int rc = -1;
    bool writing = false;
    Model *m = &nm->model;
    const ModelDims *d = &m->dims;
    int B = (int)ds->count;
    size_t *idx = checked_calloc(ds->count, sizeof(size_t), "batch order", err);
    if (!idx || batch_buffer_init(&bb, B, ds->max_src, ds->max_tgt, err)) {
        free(idx);
        goto done;
    }
    for (size_t i = 0; i < ds->count; i++) idx[i] = i;
    const Batch *batch = batch_fill(&bb, ds, idx, B);
    free(idx);
    int S = batch->S, T = batch->T, K = dims_enc_state(d), V = d->tgt_vocab, D = d->dec_hidden;
    if (batch_validate(batch, d, err)) goto done;
    size_t n_alpha = (size_t)B * T * S, n_enc = (size_t)B * S * K, n_dec = (size_t)B * T * D;
    scratch = checked_calloc(n_alpha + n_enc + n_dec + (size_t)B * T * V, sizeof(real),
                             "dump buffer", err);
    if (!scratch) goto done;
    DumpActs acts = {scratch, scratch + n_alpha, scratch + n_alpha + n_enc,
                     scratch + n_alpha + n_enc + n_dec, 0};
    if ((path == DUMP_REFERENCE ? reference_pass : engine_pass)(m, batch, &acts, err)) goto done;

    char dir[4096], config[4096];
    const char *subdirs[] = {".", "params", "grads", "batch", "acts"};
    for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
        if (join_path(dir, sizeof dir, out, subdirs[i], "", err) || make_dirs(dir, err)) goto done;
    }
    /* config.json is written last and an earlier dump's goes first: a dump that stops half
     * way (a full disk) cannot pass for a whole one, its files mixed with an earlier one's */
    if (join_path(config, sizeof config, out, "config", ".json", err)) goto done;
    if (unlink(config) != 0 && errno != ENOENT) {
        error_set(err, "cannot remove the earlier dump's %s: %s", config, strerror(errno));
        goto done;
    }
    writing = true;
    join_path(dir, sizeof dir, out, "acts", "", err); /* fits: checked above */
    if (write_real(dir, "alpha", 3, B, T, S, acts.alpha, err) ||
        write_real(dir, "enc_h", 3, B, S, K, acts.enc_h, err) ||
        write_real(dir, "dec_s", 3, B, T, D, acts.dec_s, err) ||
        write_real(dir, "logits", 3, B, T, V, acts.logits, err))
        goto done;
    real loss_value = (real)acts.loss;
    join_path(dir, sizeof dir, out, "params", "", err); /* fits: checked above */
    if (write_tensors(dir, m, m->params, err)) goto done;
    join_path(dir, sizeof dir, out, "grads", "", err); /* fits: checked above */
    if (write_tensors(dir, m, m->grads, err)) goto done;
    join_path(dir, sizeof dir, out, "batch", "", err); /* fits: checked above */
    if (write_ints(dir, "src", 2, B, S, batch->src, err) ||
        write_ints(dir, "src_len", 1, B, 0, batch->src_len, err) ||
        write_ints(dir, "tgt_in", 2, B, T, batch->tgt_in, err) ||
        write_ints(dir, "tgt_out", 2, B, T, batch->tgt_out, err) ||
        write_ints(dir, "tgt_len", 1, B, 0, batch->tgt_len, err) ||
        write_real(out, "loss", 0, 0, 0, 0, &loss_value, err) || write_config(out, d, err))
        goto done;
    *summary = (RefDumpSummary){.pairs = B, .S = S, .T = T, .loss = acts.loss};
    rc = 0;
done:
    if (rc != 0 && writing) error_append(err, " (%s is incomplete: it has no config.json)", out);
    free(scratch);
    batch_buffer_free(&bb);
    return rc;
}

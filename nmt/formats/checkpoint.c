/*
 * checkpoint.c: saving and loading checkpoints (see checkpoint.h for the format).
 */
#include "nmt/formats/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/files.h"
#include "data/lossless.h"
#include <sys/stat.h>
#include <unistd.h>

static const char MAGIC[8] = {'N', 'M', 'T', 'C', 'K', 'P', 'T', '1'};
/* Version 3 has the checksum in lanes; versions 1 (no subwords) and 2 (subwords), written
 * until 2026-11-26, have a byte-serial one and still load. */
enum {
    VERSION = 3,
    VERSION_INT8 = 4, /* version 3 with 8-bit parameters (bin/quantize), no training state */
    VERSION_SUBWORDS_SERIAL = 2,
    VERSION_PLAIN_SERIAL = 1,
    FLAG_LOWERCASE = 1,
    FLAG_TRAIN_STATE = 2,
    FLAG_SUBWORDS = 4,
    FLAG_EMA = 8,          /* the training state ends with the parameter average */
    FLAG_SECONDS = 16,     /* the training state holds the time trained */
    FLAG_BATCHES = 32,     /* the training state holds the batches' fingerprint */
    FLAG_TIED = 64,        /* tied embeddings (the spec's extension): out.w is tgt_emb, not stored.
                              A build without the option refuses the file, naming the flag. */
    FLAG_LAYER_NORM = 128, /* layer-normalised GRUs (the spec's extension): the gains g_ih, g_hh
                             are stored after each GRU's b_hh. Refused likewise by older builds. */
    FLAG_LOSSLESS = 256,   /* the subwords are lossless (data/lossless.h); older builds refuse */
    FLAG_ACROSS_SPACES = 512, /* lossless segments are not cut at spaces */
};
/* A checkpoint larger than this is refused before reading (64 GiB). */
static const uint64_t MAX_FILE = (uint64_t)64 << 30;

void nmt_model_free(NmtModel *nm) {
    model_free(&nm->model);
    vocab_free(&nm->src_vocab);
    vocab_free(&nm->tgt_vocab);
    bpe_free(&nm->src_bpe);
    bpe_free(&nm->tgt_bpe);
    memset(nm, 0, sizeof *nm);
}

int compute_type_parse(const char *name, ComputeType *type, Error *err) {
    char quoted[96];
    if (!name)
        *type = COMPUTE_AS_STORED;
    else if (!strcmp(name, "float"))
        *type = COMPUTE_FLOAT;
    else if (!strcmp(name, "int8"))
        *type = COMPUTE_INT8;
    else
        return error_set(err, "unknown compute type '%s' (expected float or int8)",
                         text_for_message(quoted, sizeof quoted, name, 60));
    return 0;
}

int nmt_model_set_compute(NmtModel *nm, ComputeType type, Error *err) {
    Model *m = &nm->model;
    if (type == COMPUTE_INT8) return model_quantize(m, err);
    if (type == COMPUTE_FLOAT && m->quant) {
        quant_weights_free(m->quant);
        free(m->quant);
        m->quant = NULL;
    }
    return 0;
}

/* FNV-1a in 8 lanes: byte i goes to lane i mod 8. Eight independent chains of
 * multiplications instead of one, which overlap where one chain waits on each multiplication
 * (docs/performance.md has the rates). */
typedef struct {
    uint64_t lane[8];
    uint64_t bytes;
} LaneHash;

static LaneHash lane_hash_start(void) {
    LaneHash h = {.bytes = 0};
    for (int j = 0; j < 8; j++) h.lane[j] = FNV1A_START;
    return h;
}

/* Bytes p[0..n), n a multiple of 8, into the lanes: a loop of its own, so that the lanes
 * stay in registers (indexed by a variable, as around it, they went through memory, and each
 * chain waited on a store: as slow as one chain). */
static void lane_hash_blocks(uint64_t *restrict lanes, const unsigned char *restrict p, size_t n) {
    uint64_t v[8];
    memcpy(v, lanes, sizeof v);
    for (size_t i = 0; i < n; i += 8)
        for (int j = 0; j < 8; j++) v[j] = (v[j] ^ p[i + j]) * FNV1A_PRIME;
    memcpy(lanes, v, sizeof v);
}

/* Bytes one at a time: up to a multiple of 8 in the stream, and the last few. */
static void lane_hash_bytes(LaneHash *h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++, h->bytes++)
        h->lane[h->bytes % 8] = (h->lane[h->bytes % 8] ^ p[i]) * FNV1A_PRIME;
}

static void lane_hash_add(LaneHash *h, const void *data, size_t n) {
    const unsigned char *p = data;
    size_t head = (8 - h->bytes % 8) % 8;
    head = head < n ? head : n;
    lane_hash_bytes(h, p, head);
    size_t blocks = (n - head) / 8 * 8;
    lane_hash_blocks(h->lane, p + head, blocks);
    h->bytes += blocks;
    lane_hash_bytes(h, p + head + blocks, n - head - blocks);
}

/* The lanes, each as 8 bytes little-endian, hashed in order by plain FNV-1a. */
static uint64_t lane_hash_end(const LaneHash *h) {
    unsigned char bytes[64];
    for (int j = 0; j < 8; j++)
        for (int b = 0; b < 8; b++) bytes[8 * j + b] = (unsigned char)(h->lane[j] >> (8 * b));
    return fnv1a(FNV1A_START, bytes, sizeof bytes);
}

static bool serial_checksum(uint32_t version) {
    return version == VERSION_PLAIN_SERIAL || version == VERSION_SUBWORDS_SERIAL;
}

uint64_t checkpoint_checksum(const void *data, size_t size) {
    uint32_t version = 0;
    if (size >= sizeof MAGIC + 4) memcpy(&version, (const char *)data + sizeof MAGIC, 4);
    if (serial_checksum(version)) return fnv1a(FNV1A_START, data, size);
    LaneHash h = lane_hash_start();
    lane_hash_add(&h, data, size);
    return lane_hash_end(&h);
}

/* ---- saving ------------------------------------------------------------------------- */

typedef struct {
    FILE *f;
    LaneHash hash;
    int failed, failed_errno;
} Writer;

static void put(Writer *w, const void *data, size_t n) {
    if (w->failed || n == 0) return;
    if (fwrite(data, 1, n, w->f) != n) w->failed = 1, w->failed_errno = errno;
    lane_hash_add(&w->hash, data, n);
}
static void put_u32(Writer *w, uint32_t x) {
    put(w, &x, 4);
}
static void put_u64(Writer *w, uint64_t x) {
    put(w, &x, 8);
}

/* A vocabulary or a BPE table goes through a memory buffer first, so its length can precede
 * it; exactly one of v and bpe is given. */
static int put_section(Writer *w, const Vocab *v, const Bpe *bpe, Error *err) {
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) return error_set(err, "out of memory serialising a table");
    int bad = v ? vocab_write(v, mem) : bpe_write(bpe, mem);
    bad = fclose(mem) || bad;
    if (bad) {
        free(buf);
        return error_set(err, "out of memory serialising a table");
    }
    put_u64(w, len);
    put(w, buf, len);
    free(buf);
    return 0;
}

/* The parameters of an int8 model as version 4 stores them: tensor by tensor in table order,
 * a quantized one as its row scales (float) then its int8 rows, any other as reals. */
static void put_int8_params(Writer *w, const Model *m) {
    for (int k = 0; k < PARAM_COUNT; k++) {
        ParamId p = m->table.order[k];
        const ParamInfo *info = &m->table.info[p];
        const QMatrix *q = &m->quant->m[p];
        if (info->size == 0) continue;
        if (q->rows) {
            put(w, q->scale, sizeof(float) * (size_t)q->rows);
            put(w, q->q, info->size);
        } else {
            put(w, m->params + info->offset, sizeof(real) * info->size);
        }
    }
}

int checkpoint_save(const char *path, const NmtModel *nm, const TrainState *state, Error *err) {
    if (nm->model.quant && state)
        return error_set(err, "cannot save %s: an int8 model has no training state to save", path);
    OutputFile out;
    if (output_file_open(&out, path, true, err))
        return error_prefix(err, "cannot save %s: ", path),
               error_append(err, " (the previous checkpoint, if any, is intact)");
    FILE *f = out.file;
    const ModelDims *d = &nm->model.dims;
    const Model *m = &nm->model;
    Writer w = {.f = f, .hash = lane_hash_start()};
    put(&w, MAGIC, sizeof MAGIC);
    put_u32(&w, m->quant ? VERSION_INT8 : VERSION);
    put_u32(&w, sizeof(real));
    const int32_t sizes[8] = {d->src_vocab,     d->tgt_vocab,  d->emb, d->enc_hidden,
                              d->bidirectional, d->dec_hidden, d->att, d->readout};
    put(&w, sizes, sizeof sizes);
    put_u32(&w, (nm->lowercase ? FLAG_LOWERCASE : 0) | (state ? FLAG_TRAIN_STATE : 0) |
                    (nm->subwords ? FLAG_SUBWORDS : 0) | (state && state->ema ? FLAG_EMA : 0) |
                    (state ? FLAG_SECONDS | FLAG_BATCHES : 0) |
                    (d->tie_embeddings ? FLAG_TIED : 0) | (d->layer_norm ? FLAG_LAYER_NORM : 0) |
                    (nm->subwords && nm->lossless ? FLAG_LOSSLESS : 0) |
                    (nm->subwords && nm->lossless && nm->across_spaces ? FLAG_ACROSS_SPACES : 0));
    put_u32(&w, (uint32_t)d->score); /* the reserved field of old files: 0 is additive */
    put_u64(&w, m->table.total);
    int rc = put_section(&w, &nm->src_vocab, NULL, err);
    if (!rc) rc = put_section(&w, &nm->tgt_vocab, NULL, err);
    if (!rc && nm->subwords) rc = put_section(&w, NULL, &nm->src_bpe, err);
    if (!rc && nm->subwords) rc = put_section(&w, NULL, &nm->tgt_bpe, err);
    if (m->quant)
        put_int8_params(&w, m);
    else
        put(&w, m->params, sizeof(real) * m->table.total);
    if (state) {
        put_u64(&w, state->step);
        put_u64(&w, state->epoch);
        put_u64(&w, state->batch_in_epoch);
        put_u64(&w, state->adam_t);
        put(&w, &state->lr_scale, 8);
        put(&w, &state->best_bleu, 8);
        put(&w, &state->best_dev_loss, 8);
        put(&w, &state->bad_validations, 4);
        put(&w, &state->plateau_bad, 4);
        put(&w, state->dropout_rng, sizeof state->dropout_rng);
        put(&w, &state->seconds, 8);
        put_u64(&w, state->batches_fingerprint);
        put(&w, state->adam_m, sizeof(real) * m->table.total);
        put(&w, state->adam_v, sizeof(real) * m->table.total);
        if (state->ema) {
            put_u64(&w, state->ema_updates);
            put(&w, state->ema, sizeof(real) * m->table.total);
        }
    }
    uint64_t checksum = lane_hash_end(&w.hash);
    put(&w, &checksum, 8);
    if (rc || w.failed) {
        output_file_abort(&out);
        if (rc) return error_prefix(err, "cannot save %s: ", path);
        return error_set(err, "cannot save %s: %s (the previous checkpoint, if any, is intact)",
                         path, strerror(w.failed_errno ? w.failed_errno : EIO));
    }
    if (output_file_commit(&out, err))
        return error_prefix(err, "cannot save %s: ", path),
               error_append(err, " (the previous checkpoint, if any, is intact)");
    return 0;
}

/* ---- loading ------------------------------------------------------------------------ */

typedef struct {
    const unsigned char *data;
    size_t size, pos;
} Reader;

static int take(Reader *r, void *out, size_t n) {
    if (n > r->size - r->pos) return -1;
    memcpy(out, r->data + r->pos, n);
    r->pos += n;
    return 0;
}

/* Reads n reals stored with `width` bytes each into dst, converting float <-> double. */
static int take_reals(Reader *r, real *dst, size_t n, uint32_t width) {
    if (n > (r->size - r->pos) / width) return -1;
    const unsigned char *p = r->data + r->pos;
    if (width == sizeof(real)) {
        memcpy(dst, p, n * width);
    } else if (width == 4) {
        for (size_t i = 0; i < n; i++) {
            float x;
            memcpy(&x, p + 4 * i, 4);
            dst[i] = (real)x;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            double x;
            memcpy(&x, p + 8 * i, 8);
            dst[i] = (real)x;
        }
    }
    r->pos += n * width;
    return 0;
}

/* One side's BPE merges: u64 length, then that many bytes, which bpe_read checks field by
 * field and must consume exactly. */
static int take_bpe(Reader *r, Bpe *bpe, const char *which, const char *path, Error *err) {
    uint64_t len;
    if (take(r, &len, 8) || len > r->size - r->pos)
        return error_set(err, "%s: truncated %s BPE merges", path, which);
    /* fmemopen refuses a zero-sized buffer; a table without merges still holds its count */
    if (len == 0) return error_set(err, "%s: the %s BPE merges are empty", path, which);
    FILE *mem = fmemopen((void *)(r->data + r->pos), len, "rb");
    if (!mem)
        return error_set(err, "%s: cannot read the %s BPE merges: %s", path, which,
                         strerror(errno));
    int rc = bpe_read(bpe, mem, len, err);
    if (rc == 0 && ftell(mem) != (long)len)
        rc = error_set(err, "the merges end at byte %ld of the %llu the section holds", ftell(mem),
                       (unsigned long long)len);
    fclose(mem);
    if (rc) {
        bpe_free(bpe);
        return error_prefix(err, "%s: %s BPE merges: ", path, which);
    }
    r->pos += len;
    return 0;
}

/* With subwords the vocabulary holds pieces (bpe.h's marker rule), and some strings can never
 * be one: "@@" (a marker without text) and anything ending in '@' but not in "@@" (a final
 * piece never does: tokens are escaped). Such a token says the vocabulary was not built from
 * these pieces (a word-level vocabulary under the subwords flag, or damage). Pieces that the
 * merges cannot produce are fine: a model may keep pieces its merges no longer make. */
static int check_pieces(const Vocab *v, const char *which, const char *path, Error *err) {
    char quoted[128];
    for (size_t id = TOK_SPECIALS; id < v->size; id++) {
        const char *t = v->tokens[id];
        size_t n = strlen(t);
        bool marked = n >= 2 && t[n - 1] == '@' && t[n - 2] == '@';
        if (n == 2 && marked)
            return error_set(err, "%s: %s vocabulary token %zu is \"@@\", a marker without text",
                             path, which, id);
        if (!marked && n > 0 && t[n - 1] == '@')
            return error_set(err,
                             "%s: %s vocabulary token %zu \"%s\" ends in '@', which no BPE piece "
                             "does (the vocabulary disagrees with the subwords flag)",
                             path, which, id, text_for_message(quoted, sizeof quoted, t, 80));
    }
    return 0;
}

static int take_vocab(Reader *r, Vocab *v, const char *which, const char *path, Error *err) {
    uint64_t len;
    if (take(r, &len, 8) || len > r->size - r->pos)
        return error_set(err, "%s: truncated %s vocabulary", path, which);
    /* fmemopen refuses a zero-sized buffer; an empty vocabulary is malformed anyway */
    if (len == 0) return error_set(err, "%s: the %s vocabulary is empty", path, which);
    FILE *mem = fmemopen((void *)(r->data + r->pos), len, "rb");
    if (!mem)
        return error_set(err, "%s: cannot read the %s vocabulary: %s", path, which,
                         strerror(errno));
    int rc = vocab_read(v, mem, len, err);
    fclose(mem);
    if (rc) return error_prefix(err, "%s: %s vocabulary: ", path, which);
    r->pos += len;
    return 0;
}

/* Names the first non-finite value of block (laid out by table) in err, if there is one;
 * `what` says whose values they are ("parameter", "Adam first moment of", ...). With
 * non_negative set, negative values are refused too (Adam's second moments are averages of
 * squares). Training stops before it would save such values, so they mean damage. */
static int check_values(const real *block, const ParamTable *table, const char *what,
                        bool non_negative, const char *path, Error *err) {
    for (int p = 0; p < PARAM_COUNT; p++) {
        const ParamInfo *info = &table->info[p];
        for (size_t i = 0; i < info->size; i++) {
            real x = block[info->offset + i];
            if (!isfinite(x) || (non_negative && x < 0))
                return error_set(err, "%s: %s %s[%zu] is %g: the checkpoint is damaged", path, what,
                                 info->name, i, (double)x);
        }
    }
    return 0;
}

/* The training state's own fields, which resuming uses as they are. */
static int check_state(const TrainState *s, const char *path, Error *err) {
    if (!(isfinite(s->lr_scale) && s->lr_scale >= 0)) /* plateau reductions may reach 0 */
        return error_set(err, "%s: learning-rate scale %g is not a number >= 0", path, s->lr_scale);
    if (!isfinite(s->best_bleu) || isnan(s->best_dev_loss))
        return error_set(err, "%s: best dev scores %g / %g are not numbers", path, s->best_bleu,
                         s->best_dev_loss);
    if (s->bad_validations < 0 || s->plateau_bad < 0)
        return error_set(err, "%s: negative validation counters %d / %d", path,
                         (int)s->bad_validations, (int)s->plateau_bad);
    if ((s->dropout_rng[0] | s->dropout_rng[1] | s->dropout_rng[2] | s->dropout_rng[3]) == 0)
        return error_set(err, "%s: the dropout stream's state is all zero", path);
    if (!(isfinite(s->seconds) && s->seconds >= 0))
        return error_set(err, "%s: training time %g s is not a number >= 0", path, s->seconds);
    return 0;
}

/* Reads the parameter average (flag bit 2) into s->ema_updates and a new s->ema. */
static int take_ema(Reader *r, TrainState *s, const ParamTable *table, uint64_t count,
                    uint32_t width, const char *path, Error *err) {
    if (take(r, &s->ema_updates, 8) || count > (r->size - r->pos) / width)
        return error_set(err, "%s: truncated parameter average", path);
    s->ema = checked_calloc(count, sizeof(real), "parameter average", err);
    if (!s->ema) return error_prefix(err, "%s: ", path);
    advise_huge_pages(s->ema, sizeof(real) * count); /* training streams it, as ema_init's */
    if (take_reals(r, s->ema, count, width) ||
        check_values(s->ema, table, "averaged parameter", false, path, err)) {
        free(s->ema);
        s->ema = NULL;
        return -1;
    }
    return 0;
}

/* The bytes of version 4's parameters (put_int8_params) with reals of `width` bytes. */
static uint64_t int8_params_bytes(const ParamTable *table, uint32_t width) {
    uint64_t bytes = 0;
    for (int p = 0; p < PARAM_COUNT; p++) {
        const ParamInfo *info = &table->info[p];
        if (param_is_quantized((ParamId)p) && info->size)
            bytes += sizeof(float) * (uint64_t)info->shape[0] + info->size;
        else
            bytes += (uint64_t)width * info->size;
    }
    return bytes;
}

/* Reads version 4's parameters into the model (whose size the caller has checked against the
 * bytes left), refusing scales that are not finite and >= 0 and the value -128, which
 * quantizing never writes (quant.h: values are in [-127, 127]). */
static int take_int8_params(Reader *r, Model *m, uint32_t width, const char *path, Error *err) {
    QuantWeights *qw = checked_calloc(1, sizeof *qw, "int8 weights", err);
    if (!qw || quant_weights_alloc(qw, &m->table, err)) {
        free(qw);
        return error_prefix(err, "%s: ", path);
    }
    for (int k = 0; k < PARAM_COUNT; k++) {
        ParamId p = m->table.order[k];
        const ParamInfo *info = &m->table.info[p];
        QMatrix *q = &qw->m[p];
        if (info->size == 0) continue;
        if (!q->rows) {
            if (take_reals(r, m->params + info->offset, info->size, width)) goto truncated;
            continue;
        }
        if (take(r, q->scale, sizeof(float) * (size_t)q->rows) || take(r, q->q, info->size))
            goto truncated;
        for (int row = 0; row < q->rows; row++)
            if (!(isfinite(q->scale[row]) && q->scale[row] >= 0)) {
                error_set(err, "%s: the scale of %s row %d is %g: the checkpoint is damaged", path,
                          info->name, row, (double)q->scale[row]);
                goto fail;
            }
        for (size_t i = 0; i < info->size; i++)
            if (q->q[i] == -128) {
                error_set(err,
                          "%s: %s[%zu] is -128, which bin/quantize never writes: the checkpoint "
                          "is damaged",
                          path, info->name, i);
                goto fail;
            }
    }
    return model_set_quant(m, qw, err) ? error_prefix(err, "%s: ", path) : 0;
truncated:
    error_set(err, "%s: truncated int8 parameters", path);
fail:
    quant_weights_free(qw);
    free(qw);
    return -1;
}

/* Reads the whole file, refusing directories, absurd sizes and, before allocating for the
 * rest, a start that is not a checkpoint's (a corpus given as the model is not read whole). */
static unsigned char *read_file(const char *path, size_t *size, Error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        error_set(err, "cannot open checkpoint %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        error_set(err, "%s: not a regular file", path);
        fclose(f);
        return NULL;
    }
    if ((uint64_t)st.st_size > MAX_FILE) {
        error_set(err, "%s: %lld bytes is too large for a checkpoint", path, (long long)st.st_size);
        fclose(f);
        return NULL;
    }
    char magic[sizeof MAGIC];
    if (fread(magic, 1, sizeof magic, f) == sizeof magic &&
        memcmp(magic, MAGIC, sizeof magic) != 0) {
        error_set(err, "%s: not a checkpoint (bad magic)", path);
        fclose(f);
        return NULL;
    }
    rewind(f);
    unsigned char *data = checked_calloc_pages((size_t)st.st_size, path, err);
    if (data && fread(data, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
        error_set(err, "%s: read error: %s", path,
                  ferror(f) ? strerror(errno) : "the file shrank while being read");
        free(data);
        data = NULL;
    }
    fclose(f);
    *size = (size_t)st.st_size;
    return data;
}

/* Every flag this build knows and the flag it needs beside it: the one list that both the
 * check for unknown flags and the check of their combinations read. */
static const struct {
    uint32_t flag;
    const char *what; /* for "a ... without subwords" */
    uint32_t needs;
} KNOWN_FLAGS[] = {
    {FLAG_LOWERCASE, "lowercasing", 0},
    {FLAG_TRAIN_STATE, "a training state", 0},
    {FLAG_SUBWORDS, "subwords", 0},
    {FLAG_EMA, "a parameter average", FLAG_TRAIN_STATE},
    {FLAG_SECONDS, "a training time", FLAG_TRAIN_STATE},
    {FLAG_BATCHES, "a batches' fingerprint", FLAG_TRAIN_STATE},
    {FLAG_TIED, "tied embeddings", 0},
    {FLAG_LAYER_NORM, "layer-normalised GRUs", 0},
    {FLAG_LOSSLESS, "lossless subwords", FLAG_SUBWORDS},
    {FLAG_ACROSS_SPACES, "merges across spaces", FLAG_LOSSLESS},
};

/* What KNOWN_FLAGS calls a flag. */
static const char *flag_name(uint32_t flag) {
    for (size_t i = 0; i < sizeof KNOWN_FLAGS / sizeof KNOWN_FLAGS[0]; i++)
        if (KNOWN_FLAGS[i].flag == flag) return KNOWN_FLAGS[i].what;
    return "an unknown flag";
}

/* The fixed-size start of a checkpoint, after the magic. */
typedef struct {
    uint32_t version, width, flags, score;
    int32_t sizes[8]; /* the ModelDims fields, in checkpoint_save's order */
    uint64_t count;   /* parameters stored */
} Header;

static int take_header(Reader *r, const char *path, Header *h, Error *err) {
    char magic[8];
    if (take(r, magic, 8) || memcmp(magic, MAGIC, 8) != 0)
        return error_set(err, "%s: not a checkpoint (bad magic)", path);
    if (take(r, &h->version, 4) || take(r, &h->width, 4) || take(r, h->sizes, sizeof h->sizes) ||
        take(r, &h->flags, 4) || take(r, &h->score, 4) || take(r, &h->count, 8))
        return error_set(err, "%s: truncated header", path);
    if (h->version != VERSION && h->version != VERSION_INT8 && !serial_checksum(h->version))
        return error_set(err,
                         "%s: format version %u is not supported (this program reads %d to %d)",
                         path, h->version, VERSION_PLAIN_SERIAL, VERSION_INT8);
    if (h->version == VERSION_INT8 && (h->flags & FLAG_TRAIN_STATE))
        return error_set(err, "%s: an int8 checkpoint with a training state", path);
    if (h->width != 4 && h->width != 8)
        return error_set(err, "%s: invalid real size %u", path, h->width);
    return 0;
}

/* The flags against KNOWN_FLAGS, the format version and each other. */
static int check_flags(const Header *h, const char *path, Error *err) {
    uint32_t known = 0;
    for (size_t i = 0; i < sizeof KNOWN_FLAGS / sizeof KNOWN_FLAGS[0]; i++)
        known |= KNOWN_FLAGS[i].flag;
    if (h->flags & ~known)
        return error_set(err,
                         "%s: unknown flags %#x (options this program does not have: a newer "
                         "build's file?)",
                         path, h->flags & ~known);
    if (serial_checksum(h->version) &&
        ((h->flags & FLAG_SUBWORDS) != 0) != (h->version == VERSION_SUBWORDS_SERIAL))
        return error_set(err, "%s: format version %u %s subwords, but the flags say %s", path,
                         h->version, h->version == VERSION_SUBWORDS_SERIAL ? "has" : "has no",
                         h->flags & FLAG_SUBWORDS ? "subwords" : "none");
    if (h->score >= SCORE_COUNT)
        return error_set(err,
                         "%s: unknown attention score %u (known: 0 additive, 1 dot, 2 general, 3 "
                         "scaled_dot)",
                         path, h->score);
    for (size_t i = 0; i < sizeof KNOWN_FLAGS / sizeof KNOWN_FLAGS[0]; i++)
        if ((h->flags & KNOWN_FLAGS[i].flag) && KNOWN_FLAGS[i].needs &&
            !(h->flags & KNOWN_FLAGS[i].needs))
            return error_set(err, "%s: %s without %s", path, KNOWN_FLAGS[i].what,
                             flag_name(KNOWN_FLAGS[i].needs));
    return 0;
}

/* The model's sizes from the header, checked against the parameter count: they decide how
 * much model_init allocates, so a forged header must not make a small file claim gigabytes
 * (take_params checks the count against the bytes present). */
static int dims_of_header(const Header *h, const char *path, ModelDims *dims, ParamTable *table,
                          Error *err) {
    *dims = (ModelDims){.src_vocab = h->sizes[0],
                        .tgt_vocab = h->sizes[1],
                        .emb = h->sizes[2],
                        .enc_hidden = h->sizes[3],
                        .bidirectional = h->sizes[4],
                        .dec_hidden = h->sizes[5],
                        .att = h->sizes[6],
                        .readout = h->sizes[7],
                        .score = (AttentionScore)h->score,
                        .tie_embeddings = (h->flags & FLAG_TIED) != 0,
                        .layer_norm = (h->flags & FLAG_LAYER_NORM) != 0};
    if (h->sizes[4] != 0 && h->sizes[4] != 1)
        return error_set(err, "%s: invalid bidirectional flag %d", path, h->sizes[4]);
    if (dims_validate(dims, err)) return error_prefix(err, "%s: ", path);
    param_table_build(table, dims);
    if (h->count != table->total)
        return error_set(err, "%s: %llu parameters stored, but the sizes need %zu", path,
                         (unsigned long long)h->count, table->total);
    return 0;
}

/* The vocabularies and, with FLAG_SUBWORDS, the subword merges, matched to the sizes. */
static int take_vocabularies(Reader *r, const Header *h, const ModelDims *dims, NmtModel *nm,
                             const char *path, Error *err) {
    nm->lowercase = h->flags & FLAG_LOWERCASE;
    if (take_vocab(r, &nm->src_vocab, "source", path, err) ||
        take_vocab(r, &nm->tgt_vocab, "target", path, err))
        return -1;
    nm->subwords = h->flags & FLAG_SUBWORDS;
    if (nm->subwords && (take_bpe(r, &nm->src_bpe, "source", path, err) ||
                         take_bpe(r, &nm->tgt_bpe, "target", path, err)))
        return -1;
    nm->lossless = h->flags & FLAG_LOSSLESS;
    nm->across_spaces = h->flags & FLAG_ACROSS_SPACES;
    if (nm->subwords && !nm->lossless &&
        (check_pieces(&nm->src_vocab, "source", path, err) ||
         check_pieces(&nm->tgt_vocab, "target", path, err)))
        return -1;
    if (nm->lossless && lossless_vocab_check(&nm->src_vocab, err))
        return error_prefix(err, "%s: source vocabulary: ", path);
    if (nm->lossless && lossless_vocab_check(&nm->tgt_vocab, err))
        return error_prefix(err, "%s: target vocabulary: ", path);
    if (nm->src_vocab.size != (size_t)dims->src_vocab ||
        nm->tgt_vocab.size != (size_t)dims->tgt_vocab)
        return error_set(err, "%s: vocabularies have %zu/%zu tokens but the model expects %d/%d",
                         path, nm->src_vocab.size, nm->tgt_vocab.size, dims->src_vocab,
                         dims->tgt_vocab);
    return 0;
}

/* The model, its parameters read as stored (reals of the file's width, or int8). */
static int take_params(Reader *r, const Header *h, const ModelDims *dims, const ParamTable *table,
                       NmtModel *nm, const char *path, Error *err) {
    bool int8 = h->version == VERSION_INT8;
    if (int8 && int8_params_bytes(table, h->width) > r->size - r->pos)
        return error_set(err,
                         "%s: truncated: %llu bytes of int8 parameters do not fit in the %zu "
                         "bytes left",
                         path, (unsigned long long)int8_params_bytes(table, h->width),
                         r->size - r->pos);
    if (!int8 && h->count > (r->size - r->pos) / h->width)
        return error_set(err,
                         "%s: truncated: %llu parameters of %u bytes do not fit in the %zu "
                         "bytes left",
                         path, (unsigned long long)h->count, h->width, r->size - r->pos);
    if (model_init(&nm->model, dims, err)) return error_prefix(err, "%s: ", path);
    if (int8 && take_int8_params(r, &nm->model, h->width, path, err)) return -1;
    if (!int8 && take_reals(r, nm->model.params, h->count, h->width))
        return error_set(err, "%s: truncated parameters", path);
    return check_values(nm->model.params, table, "parameter", false, path, err);
}

/* The training state into *state when state is given, else stepped over. */
static int take_train_state(Reader *r, const Header *h, const ParamTable *table, TrainState *state,
                            bool *has_state, const char *path, Error *err) {
    uint64_t count = h->count;
    uint32_t flags = h->flags, width = h->width;
    TrainState s = {0};
    if (take(r, &s.step, 8) || take(r, &s.epoch, 8) || take(r, &s.batch_in_epoch, 8) ||
        take(r, &s.adam_t, 8) || take(r, &s.lr_scale, 8) || take(r, &s.best_bleu, 8) ||
        take(r, &s.best_dev_loss, 8) || take(r, &s.bad_validations, 4) ||
        take(r, &s.plateau_bad, 4) || take(r, s.dropout_rng, sizeof s.dropout_rng) ||
        ((flags & FLAG_SECONDS) && take(r, &s.seconds, 8)) ||
        ((flags & FLAG_BATCHES) && take(r, &s.batches_fingerprint, 8)))
        return error_set(err, "%s: truncated training state", path);
    if (check_state(&s, path, err)) return -1;
    if (count > (r->size - r->pos) / (2 * (size_t)width))
        return error_set(err, "%s: truncated optimiser state", path);
    if (!state) {
        r->pos += 2 * (size_t)width * count;
        if (flags & FLAG_EMA) {
            uint64_t updates;
            if (take(r, &updates, 8) || count > (r->size - r->pos) / width)
                return error_set(err, "%s: truncated parameter average", path);
            r->pos += (size_t)width * count;
        }
        return 0;
    }
    /* the bytes are known to be there (checked above) */
    s.adam_m = checked_calloc(count, sizeof(real), "Adam first moments", err);
    s.adam_v = checked_calloc(count, sizeof(real), "Adam second moments", err);
    int bad = !s.adam_m || !s.adam_v;
    if (bad) error_prefix(err, "%s: ", path);
    /* Adam streams them every step, as it does adam_init's (NULL: nothing) */
    advise_huge_pages(s.adam_m, sizeof(real) * count);
    advise_huge_pages(s.adam_v, sizeof(real) * count);
    bad = bad || take_reals(r, s.adam_m, count, width) || take_reals(r, s.adam_v, count, width) ||
          check_values(s.adam_m, table, "Adam first moment of", false, path, err) ||
          check_values(s.adam_v, table, "Adam second moment of", true, path, err) ||
          ((flags & FLAG_EMA) && take_ema(r, &s, table, count, width, path, err));
    if (bad) {
        free(s.adam_m), free(s.adam_v);
        return -1;
    }
    *state = s;
    *has_state = true;
    return 0;
}

static int parse(Reader *r, const char *path, NmtModel *nm, TrainState *state, bool *has_state,
                 Error *err) {
    Header h;
    ModelDims dims;
    ParamTable table;
    *has_state = false;
    if (take_header(r, path, &h, err) || check_flags(&h, path, err) ||
        dims_of_header(&h, path, &dims, &table, err) ||
        take_vocabularies(r, &h, &dims, nm, path, err) ||
        take_params(r, &h, &dims, &table, nm, path, err))
        return -1;
    if ((h.flags & FLAG_TRAIN_STATE) &&
        take_train_state(r, &h, &table, state, has_state, path, err))
        return -1;
    if (r->pos != r->size)
        return error_set(err, "%s: %zu unexpected bytes after the data", path, r->size - r->pos);
    return 0;
}

int checkpoint_load_memory(const void *data, size_t size, const char *name, NmtModel *nm,
                           TrainState *state, bool *has_state, Error *err) {
    memset(nm, 0, sizeof *nm);
    bool state_flag = false;
    if (!has_state) has_state = &state_flag;
    *has_state = false;
    const unsigned char *bytes = data;
    uint64_t stored;
    if (size < sizeof MAGIC + 8 || memcmp(bytes, MAGIC, sizeof MAGIC) != 0)
        return error_set(err, "%s: not a checkpoint (%s)", name,
                         size < sizeof MAGIC + 8 ? "file too short" : "bad magic");
    memcpy(&stored, bytes + size - 8, 8);
    if (stored != checkpoint_checksum(bytes, size - 8))
        return error_set(err, "%s: checksum mismatch: the file is corrupt or truncated", name);
    Reader r = {.data = bytes, .size = size - 8, .pos = 0}; /* the checksum is not data */
    int rc = parse(&r, name, nm, state, has_state, err);
    if (rc) {
        nmt_model_free(nm);
        *has_state = false;
    }
    return rc;
}

int checkpoint_load(const char *path, NmtModel *nm, TrainState *state, bool *has_state,
                    Error *err) {
    memset(nm, 0, sizeof *nm);
    if (has_state) *has_state = false;
    size_t size;
    unsigned char *data = read_file(path, &size, err);
    if (!data) return -1;
    int rc = checkpoint_load_memory(data, size, path, nm, state, has_state, err);
    free(data);
    return rc;
}

/*
 * checkpoint.h: a trained model on disk: sizes, options, vocabularies, parameters and,
 * optionally, the optimiser state to resume training.
 *
 * Format (version 3, all integers little-endian):
 *   "NMTCKPT1"                          8 bytes magic
 *   u32 version (3; 1, 2 and 4 load)     u32 bytes per real (4 float, 8 double)
 *   i32 x 8 sizes: Vs Vt E H bidirectional D A O
 *   u32 flags: bit 0 lowercase, bit 1 training state present, bit 2 subwords, bit 3
 *              parameter average present, bit 4 training time present, bit 5 batches'
 *              fingerprint present (3, 4 and 5 only with 1), bit 6 tied embeddings, bit 7
 *              layer norm, bit 8 lossless subwords (only with 2: data/lossless.h; the
 *              vocabularies then hold the 256 byte pieces and "▁" after the specials), bit 9 merges
 *              across spaces (only with 8)
 *   u32 attention score: 0 additive, 1 dot, 2 general, 3 scaled_dot (a reserved 0 before
 *       there were scores, so older files read as additive)
 *   u64 parameter count P (must match the sizes)
 *   u64 n, then n bytes: source vocabulary (vocab_write layout)
 *   u64 n, then n bytes: target vocabulary
 *   [subwords (flag bit 2): u64 n, then n bytes: source BPE merges (bpe_write
 *    layout); u64 n, then n bytes: target BPE merges]
 *   P reals: parameters in the spec's table order
 *   [training state: u64 step, epoch, batch_in_epoch, adam_t; f64 lr_scale, best_bleu,
 *    best_dev_loss; i32 bad_validations, plateau_bad; u64 x 4 dropout stream; with flag bit 4:
 *    f64 seconds trained; with flag bit 5: u64 batches' fingerprint; P reals Adam m; P reals
 *    Adam v; with flag bit 3: u64 average updates, P reals averaged parameters]
 *   u64 checksum of every byte before it: FNV-1a 64 in 8 lanes (byte i goes to lane i mod 8,
 *       each lane from the FNV-1a offset basis; then plain FNV-1a 64 over the 8 lanes, each as 8
 *       bytes little-endian): eight independent chains, several times as fast as one
 * Version 4 (bin/quantize, an int8 model: model/quant.h) is version 3 without a training state
 * and with the parameters stored tensor by tensor in table order: each quantized tensor as its
 * row scales (f32 x rows) then its int8 values (rows x cols bytes), every other one as P's
 * reals; loading it gives an int8 model. Programs before it refuse it by its version.
 * Versions 1 and 2 (until 2026-11-26) differ only in the checksum, plain FNV-1a 64 over every
 * byte, and in the version saying whether there are subwords (2) or not (1); they still load.
 * Flag bits 3, 4 and 5 came later: files without them load as before (bit 4 missing: no time
 * trained; bit 5 missing: fingerprint 0, unknown), and a program that predates one refuses
 * files with it (unknown flag) rather than misread them.
 * Saving writes PATH.tmp, flushes and syncs it, then renames it over PATH: a crash or a full
 * disk never leaves a broken file in place of a good one. Loading checks the size, checksum
 * and every field before using any of it, and converts between float and double builds.
 * A file is untrusted input: no field is used to size an allocation before the bytes it
 * implies are known to be there, and non-finite parameters or optimiser moments are refused.
 */
#ifndef NMT_CHECKPOINT_H
#define NMT_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>

#include "data/bpe.h"
#include "data/vocab.h"
#include "model/seq2seq.h"

/* A model with what it needs to read and write text. */
typedef struct {
    Model model;
    Vocab src_vocab;
    Vocab tgt_vocab;
    bool lowercase;
    /* Subwords: each side's tokens are cut into BPE pieces before they meet the vocabulary,
     * and output pieces are joined back before detokenizing. Without, both Bpe are empty. */
    bool subwords;
    Bpe src_bpe, tgt_bpe;
    /* Lossless subwords (with subwords set): the pieces are of the text as written, spaces
     * marked, with byte fallback (data/lossless.h); across_spaces: segments are not cut at
     * spaces. Without lossless, subwords are of the tokenizer's tokens. */
    bool lossless, across_spaces;
    /* Not stored: a decoding choice. Unless set, an output <unk> of a model without subwords
     * is replaced by the source token it attends to most (text.h, decode_hypothesis). */
    bool keep_unk;
} NmtModel;

void nmt_model_free(NmtModel *nm);

/* How a model multiplies when it translates: as its file says (float, or int8 for a file
 * that bin/quantize wrote), in float, or with 8-bit weights (model/quant.h). */
typedef enum { COMPUTE_AS_STORED = 0, COMPUTE_FLOAT = 1, COMPUTE_INT8 = 2 } ComputeType;

/* "float" or "int8" (NULL: COMPUTE_AS_STORED); an error naming the text otherwise. */
int compute_type_parse(const char *name, ComputeType *type, Error *err);
/* Quantizes nm for COMPUTE_INT8 (its float weights become the dequantized ones); for
 * COMPUTE_FLOAT, an int8 model keeps its dequantized weights and multiplies them in float. */
int nmt_model_set_compute(NmtModel *nm, ComputeType type, Error *err);

/* Where training stands, saved to resume it exactly. */
typedef struct {
    uint64_t step;           /* optimiser steps done */
    uint64_t epoch;          /* current epoch (0-based) */
    uint64_t batch_in_epoch; /* batches of this epoch already done */
    double lr_scale;         /* the plateau schedule's current factor */
    double best_bleu;        /* best dev BLEU so far (-1: none yet) */
    double best_dev_loss;
    int32_t bad_validations; /* validations since the best, for early stopping */
    int32_t plateau_bad;     /* validations since the last improvement or reduction */
    uint64_t dropout_rng[4];
    double seconds; /* wall time spent in the training loop, over every run ([train] max_minutes
                     * and the budget schedule count it) */
    /* which pairs make the current epoch's batches, in what order, hashed (0: unknown): a run
     * resumed with other batches (another batch size, seed or corpus) cannot take up the epoch
     * at batch_in_epoch, and starts it again */
    uint64_t batches_fingerprint;
    /* the optimiser's state, which mirrors the parameters: Adam's step count and moments.
     * Saving reads adam_m and adam_v (the trainer's own arrays); loading allocates them
     * (free() them, or hand them to the optimiser). */
    uint64_t adam_t;
    real *adam_m, *adam_v; /* [parameters] */
    /* the parameters' moving average ([train] ema), NULL when training keeps none; saved
     * and loaded like the moments */
    uint64_t ema_updates;
    real *ema; /* [parameters] */
} TrainState;

/* Saves nm; with state (NULL: a model for translation only) also the training state. */
int checkpoint_save(const char *path, const NmtModel *nm, const TrainState *state, Error *err);

/* Loads a checkpoint into nm (initialised here). When state is not NULL and the file has a
 * training state, *state is filled (its moments, and the average when the file has one,
 * allocated) and *has_state set; otherwise
 * *has_state is false. has_state may be NULL. */
int checkpoint_load(const char *path, NmtModel *nm, TrainState *state, bool *has_state, Error *err);

/* The same from the bytes of a whole checkpoint file, data[0..size) (checksum included); name
 * is used in messages. The file reader, the fuzzer and tests share it. */
int checkpoint_load_memory(const void *data, size_t size, const char *name, NmtModel *nm,
                           TrainState *state, bool *has_state, Error *err);

/* The checksum that a file whose bytes before it are data[0..size) carries in its last 8
 * bytes (little-endian): of the kind its version (data[8..12)) calls for, the lanes' unless it
 * is 1 or 2. */
uint64_t checkpoint_checksum(const void *data, size_t size);

#endif

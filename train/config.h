/*
 * config.h: the training configuration, read from an INI file plus command-line overrides.
 *
 * Every setting is one field of Config, named like its INI key and grouped by section. One
 * table in config.c describes each key (type, default, allowed range, one-line doc) and drives
 * defaults, parsing, validation, printing and the --help listing alike. Bad input is rejected
 * with a message naming the file, line and key; nothing is clamped or guessed.
 * Model sizes use the letters of the model spec: E, H, D, A, O.
 */
#ifndef NMT_CONFIG_H
#define NMT_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/base.h"
#include "model/params.h"
#include "nmt/metrics/metrics.h"

/* Room for one path, including its terminating NUL; longer paths are rejected. */
#define CONFIG_PATH_MAX 4096

/* The units the vocabularies hold. */
typedef enum {
    SUBWORDS_NONE,     /* the tokenizer's tokens (words and punctuation) */
    SUBWORDS_BPE,      /* byte-pair-encoding pieces of them (data/bpe.h), merges learned per side */
    SUBWORDS_LOSSLESS, /* pieces of the text as written, space marked, bytes as fallback
                        * (data/lossless.h) */
} SubwordMode;

/* How the learning rate changes over training (after the warm-up every schedule has). */
typedef enum {
    LR_SCHEDULE_CONSTANT,     /* stays at lr */
    LR_SCHEDULE_WARMUP_DECAY, /* lr * decay_rate^((step - warmup_steps) / decay_steps) */
    LR_SCHEDULE_PLATEAU,      /* times plateau_factor after plateau_patience bad validations */
    LR_SCHEDULE_BUDGET,       /* falls linearly to min_lr over the last decay_share of the budget */
} LrSchedule;

typedef struct {
    char train[CONFIG_PATH_MAX]; /* training pairs (TSV); required */
    char dev[CONFIG_PATH_MAX];   /* development pairs for validation and early stopping; required */
    char test[CONFIG_PATH_MAX];  /* test pairs, "" when not given */
    bool lowercase;              /* lowercase both sides before tokenizing */
    int max_len;                 /* pairs with a longer side (tokens, or pieces) are skipped */
    int src_vocab_size;          /* Vs, including the 4 special tokens */
    int tgt_vocab_size;          /* Vt, including the 4 special tokens */
    int min_count;               /* words seen fewer times than this become <unk> */
    SubwordMode subwords;        /* none: words; bpe: pieces of words; lossless: pieces of text */
    int src_merges;              /* bpe: most merges learned on the source side */
    int tgt_merges;              /* bpe: most merges learned on the target side */
    bool merge_across_spaces;    /* lossless: merges may join pieces across a space */
    ScoreOptions scores;         /* dev and test BLEU's tokenizer (bleu_tokenize) and -lc
                                    (score_lowercase), as sacreBLEU's options */
} ConfigData;

typedef struct {
    int emb_size;         /* E: word embedding size (source and target) */
    int enc_hidden;       /* H: encoder GRU state size per direction */
    bool bidirectional;   /* encoder runs both directions, K = 2H (else K = H) */
    int dec_hidden;       /* D: decoder GRU state size */
    int att_size;         /* A: attention size */
    int readout_size;     /* O: readout layer size */
    AttentionScore score; /* e_ti: additive, dot, general or scaled_dot (dot needs D = K) */
    bool tie_embeddings;  /* the output layer's W_out is tgt_emb (needs O = E) */
    bool layer_norm;      /* layer-normalised GRUs (the spec's extension) */
} ConfigModel;

typedef struct {
    double lr;             /* Adam's base learning rate */
    double beta1;          /* Adam's first-moment decay */
    double beta2;          /* Adam's second-moment decay */
    double eps;            /* Adam's denominator epsilon */
    double clip_norm;      /* global gradient-norm clip; 0 = no clipping */
    LrSchedule schedule;   /* learning-rate schedule */
    int warmup_steps;      /* linear warm-up from 0 to lr over this many steps (all schedules) */
    double decay_rate;     /* warmup_decay: factor per decay_steps steps */
    int decay_steps;       /* warmup_decay: steps per decay_rate factor */
    double plateau_factor; /* plateau: lr is multiplied by this when dev BLEU stalls */
    int plateau_patience;  /* plateau: validations without improvement before reducing */
    double decay_share;    /* budget: the last share of the training budget that decays */
    double min_lr;         /* no schedule goes below this learning rate */
} ConfigOptim;

typedef struct {
    int batch_size;         /* sentence pairs per step (B) */
    int batch_tokens;       /* target tokens per step instead of batch_size pairs; 0 = off */
    int epochs;             /* passes over the training data; 0 = no limit */
    int max_steps;          /* optimizer steps; 0 = no limit */
    double max_minutes;     /* wall time of the training loop; 0 = no limit */
    double dropout;         /* inverted-dropout probability; 0 = off */
    double word_dropout;    /* probability of dropping a whole token's embedding; 0 = off */
    double label_smoothing; /* label-smoothing epsilon; 0 = off */
    double ema;             /* decay of the parameters' moving average; 0 = off */
    uint64_t seed;          /* seeds every random stream */
    int threads;            /* OpenMP threads; 0 = all cores */
    int valid_every;        /* steps between validations on dev */
    int patience;           /* validations without dev BLEU gain before stopping; 0 = never */
    int log_every;          /* steps between training-loss log lines */
    char out_dir[CONFIG_PATH_MAX]; /* checkpoints and logs go here */
} ConfigTrain;

/* The whole configuration. Holds no pointers, so it can be copied and needs no freeing.
 * Paths are stored resolved: usable from the current directory as they are. */
typedef struct {
    ConfigData data;
    ConfigModel model;
    ConfigOptim optim;
    ConfigTrain train;
} Config;

/* Fills cfg with every key's default; required paths are left "". Relative default paths
 * (out_dir) stay relative to the current directory. */
void config_defaults(Config *cfg);

/* Loads the INI file at path over the defaults, then applies the overrides in order, each
 * "section.key=value" (the text after --set); they win over the file. Relative paths in the
 * file (and the default out_dir) are resolved against the file's folder, relative paths in
 * overrides against the current directory. Checks that required keys are set and that the
 * settings fit together. Returns 0, or -1 with err naming FILE:LINE (or the --set argument)
 * and the key; cfg is then filled only partly but still safe to print or reload into. */
int config_load(Config *cfg, const char *path, const char *const *overrides, int n_overrides,
                Error *err);

/* Writes every setting as INI, in a form config_load reads back to the same values: what a
 * run's log should record. Unset optional paths are written as comments. */
void config_print(const Config *cfg, FILE *out);

/* Makes every relative path of cfg absolute (against the working directory, normalised), so
 * that a printed config names the same files wherever it is read from. */
int config_absolute_paths(Config *cfg, Error *err);

/* Lists every key with its type, default, allowed range and what it does, for --help. */
void config_help(FILE *out);

#endif

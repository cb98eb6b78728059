/*
 * config.c: the training configuration (see config.h).
 *
 * Everything about a key lives in one row of config_keys below: adding a setting means adding
 * a field to Config and a row here, nothing else. Defaults are written as the text a user
 * would put in the file and go through the same parser, so they are checked like user input.
 * The INI syntax itself is ini.c's business; this file only knows what the keys mean.
 */
#include "train/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/files.h"
#include "base/usage.h"
#include "base/utf8.h"
#include "train/ini.h"

typedef enum {
    KEY_INT,    /* int, decimal */
    KEY_UINT64, /* uint64_t, decimal, no sign */
    KEY_REAL,   /* double, finite */
    KEY_BOOL,   /* bool: true/false, yes/no, on/off, 1/0 */
    KEY_STRING, /* char[CONFIG_PATH_MAX], non-empty */
    KEY_PATH,   /* char[CONFIG_PATH_MAX], resolved against the config file's folder */
    KEY_ENUM,   /* an enum stored as int: the index of the word in `choices` */
} KeyType;

/* Which ends of [min, max] are allowed, for KEY_INT and KEY_REAL; max = INFINITY for none. */
typedef enum {
    NO_RANGE,  /* any value of the type */
    CLOSED,    /* min <= x <= max */
    OPEN_MIN,  /* min <  x <= max */
    OPEN_MAX,  /* min <= x <  max */
    OPEN_BOTH, /* min <  x <  max */
} RangeKind;

typedef struct {
    const char *section;
    const char *key;
    KeyType type;
    const char *default_text; /* as written in a file; "" = unset; REQUIRED = must be given */
    double min, max;          /* KEY_INT and KEY_REAL: the bounds, whose ends `range` says */
    RangeKind range;
    size_t offset;       /* where the value lives in Config */
    const char *doc;     /* one line for --help */
    const char *choices; /* KEY_ENUM only: the accepted words, '|'-separated, in enum order */
} ConfigKey;

#define REQUIRED NULL

/* Enum fields are written as int; this holds for every enum with small non-negative values on
 * the platforms we build for, and is checked here rather than assumed. */
_Static_assert(sizeof(LrSchedule) == sizeof(int), "enum keys are stored as int");
_Static_assert(sizeof(SubwordMode) == sizeof(int), "enum keys are stored as int");
_Static_assert(sizeof(AttentionScore) == sizeof(int), "enum keys are stored as int");
_Static_assert(sizeof(BleuTokenize) == sizeof(int), "enum keys are stored as int");
/* config_print writes "key = value" lines that config_load must be able to read back. */
_Static_assert(INI_MAX_LINE >= CONFIG_PATH_MAX + 64, "a printed path fits on an INI line");

/* One row per key, in the order config_print and config_help list them: section, key, type,
 * default, min, max, which ends are allowed, where the field is, what it does (and, for an
 * enum, its words). String and path fields are all char[CONFIG_PATH_MAX]. */
static const ConfigKey config_keys[] = {
    {"data", "train", KEY_PATH, REQUIRED, 0, 0, NO_RANGE, offsetof(Config, data.train),
     "training sentence pairs, one per line: source TAB target", NULL},
    {"data", "dev", KEY_PATH, REQUIRED, 0, 0, NO_RANGE, offsetof(Config, data.dev),
     "development pairs, for validation (dev BLEU) and early stopping", NULL},
    {"data", "test", KEY_PATH, "", 0, 0, NO_RANGE, offsetof(Config, data.test),
     "test pairs, translated and scored after training (optional)", NULL},
    {"data", "lowercase", KEY_BOOL, "true", 0, 0, NO_RANGE, offsetof(Config, data.lowercase),
     "lowercase both sides before tokenizing", NULL},
    {"data", "max_len", KEY_INT, "50", 1, 1000, CLOSED, offsetof(Config, data.max_len),
     "skip training pairs with a side longer than this many tokens (pieces with subwords)", NULL},
    {"data", "src_vocab_size", KEY_INT, "8000", 5, 1000000, CLOSED,
     offsetof(Config, data.src_vocab_size),
     "source vocabulary size (Vs), including the 4 special tokens", NULL},
    {"data", "tgt_vocab_size", KEY_INT, "8000", 5, 1000000, CLOSED,
     offsetof(Config, data.tgt_vocab_size),
     "target vocabulary size (Vt), including the 4 special tokens", NULL},
    {"data", "min_count", KEY_INT, "1", 1, 1000000000, CLOSED, offsetof(Config, data.min_count),
     "words seen fewer times than this in the training data become <unk>", NULL},
    {"data", "subwords", KEY_ENUM, "none", 0, 0, NO_RANGE, offsetof(Config, data.subwords),
     "units of the vocabularies: none (tokens), bpe (pieces of the tokens) or lossless (pieces of "
     "the text as written, unseen characters as UTF-8 bytes)",
     "none|bpe|lossless"},
    {"data", "src_merges", KEY_INT, "8000", 0, 1000000, CLOSED, offsetof(Config, data.src_merges),
     "bpe, lossless: most merges learned on the source side (0: characters)", NULL},
    {"data", "tgt_merges", KEY_INT, "8000", 0, 1000000, CLOSED, offsetof(Config, data.tgt_merges),
     "bpe, lossless: most merges learned on the target side (0: characters)", NULL},
    {"data", "merge_across_spaces", KEY_BOOL, "false", 0, 0, NO_RANGE,
     offsetof(Config, data.merge_across_spaces),
     "lossless: let merges join pieces across a space (a piece may then hold several words)", NULL},
    {"data", "bleu_tokenize", KEY_ENUM, "13a", 0, 0, NO_RANGE,
     offsetof(Config, data.scores.tokenize),
     "dev and test BLEU's tokenizer, as sacreBLEU's --tokenize: 13a, zh (Chinese), intl or none",
     BLEU_TOKENIZE_WORDS},
    {"data", "score_lowercase", KEY_BOOL, "false", 0, 0, NO_RANGE,
     offsetof(Config, data.scores.lowercase),
     "score dev and test BLEU and chrF on lower-cased text (sacreBLEU -lc); references are "
     "otherwise scored as written, whatever lowercase says",
     NULL},

    {"model", "emb_size", KEY_INT, "64", 1, 4096, CLOSED, offsetof(Config, model.emb_size),
     "E: word embedding size, shared by source and target", NULL},
    {"model", "enc_hidden", KEY_INT, "128", 1, 4096, CLOSED, offsetof(Config, model.enc_hidden),
     "H: encoder GRU state size per direction", NULL},
    {"model", "bidirectional", KEY_BOOL, "true", 0, 0, NO_RANGE,
     offsetof(Config, model.bidirectional),
     "run the encoder in both directions (K = 2H, otherwise K = H)", NULL},
    {"model", "dec_hidden", KEY_INT, "128", 1, 4096, CLOSED, offsetof(Config, model.dec_hidden),
     "D: decoder GRU state size", NULL},
    {"model", "att_size", KEY_INT, "128", 1, 4096, CLOSED, offsetof(Config, model.att_size),
     "A: attention size (additive's hidden layer, scaled_dot's query and keys)", NULL},
    {"model", "readout_size", KEY_INT, "128", 1, 4096, CLOSED, offsetof(Config, model.readout_size),
     "O: size of the readout layer before the softmax", NULL},
    {"model", "score", KEY_ENUM, "additive", 0, 0, NO_RANGE, offsetof(Config, model.score),
     "attention score e_ti (see the model spec); dot needs dec_hidden = K",
     "additive|dot|general|scaled_dot"},
    {"model", "tie_embeddings", KEY_BOOL, "false", 0, 0, NO_RANGE,
     offsetof(Config, model.tie_embeddings),
     "the output layer's weights are the target embeddings (no out.w); needs readout_size = "
     "emb_size",
     NULL},
    {"model", "layer_norm", KEY_BOOL, "false", 0, 0, NO_RANGE, offsetof(Config, model.layer_norm),
     "layer-normalised GRUs: each GRU's input and recurrent pre-activations normalised "
     "separately, with gains g_ih, g_hh (see the model spec)",
     NULL},

    {"optim", "lr", KEY_REAL, "0.001", 0, 10, OPEN_MIN, offsetof(Config, optim.lr),
     "base learning rate of Adam", NULL},
    {"optim", "beta1", KEY_REAL, "0.9", 0, 1, OPEN_MAX, offsetof(Config, optim.beta1),
     "Adam's decay rate for the running mean of gradients", NULL},
    {"optim", "beta2", KEY_REAL, "0.999", 0, 1, OPEN_MAX, offsetof(Config, optim.beta2),
     "Adam's decay rate for the running mean of squared gradients", NULL},
    {"optim", "eps", KEY_REAL, "1e-8", 0, 1, OPEN_MIN, offsetof(Config, optim.eps),
     "Adam's epsilon, added to the denominator so it never divides by zero", NULL},
    {"optim", "clip_norm", KEY_REAL, "1.0", 0, INFINITY, CLOSED, offsetof(Config, optim.clip_norm),
     "scale gradients down when their global L2 norm exceeds this; 0 = no clipping", NULL},
    {"optim", "schedule", KEY_ENUM, "constant", 0, 0, NO_RANGE, offsetof(Config, optim.schedule),
     "how the learning rate changes after warm-up", "constant|warmup_decay|plateau|budget"},
    {"optim", "warmup_steps", KEY_INT, "0", 0, INFINITY, CLOSED,
     offsetof(Config, optim.warmup_steps),
     "raise the learning rate linearly from 0 to lr over this many steps (every schedule)", NULL},
    {"optim", "decay_rate", KEY_REAL, "0.5", 0, 1, OPEN_MIN, offsetof(Config, optim.decay_rate),
     "warmup_decay: lr * decay_rate^((step - warmup_steps) / decay_steps)", NULL},
    {"optim", "decay_steps", KEY_INT, "1000", 1, INFINITY, CLOSED,
     offsetof(Config, optim.decay_steps),
     "warmup_decay: steps over which the rate shrinks by one factor of decay_rate", NULL},
    {"optim", "plateau_factor", KEY_REAL, "0.5", 0, 1, OPEN_BOTH,
     offsetof(Config, optim.plateau_factor),
     "plateau: multiply the rate by this when dev BLEU stops improving", NULL},
    {"optim", "plateau_patience", KEY_INT, "2", 1, INFINITY, CLOSED,
     offsetof(Config, optim.plateau_patience),
     "plateau: validations without improvement before the rate is reduced", NULL},
    {"optim", "decay_share", KEY_REAL, "0.5", 0, 1, OPEN_MIN, offsetof(Config, optim.decay_share),
     "budget: the last share of the training budget ([train] epochs, max_steps or "
     "max_minutes, the first to run out) over which the rate falls linearly to min_lr",
     NULL},
    {"optim", "min_lr", KEY_REAL, "1e-5", 0, INFINITY, CLOSED, offsetof(Config, optim.min_lr),
     "no schedule takes the learning rate below this", NULL},

    {"train", "batch_size", KEY_INT, "32", 1, 65536, CLOSED, offsetof(Config, train.batch_size),
     "sentence pairs per optimizer step (B)", NULL},
    {"train", "batch_tokens", KEY_INT, "0", 0, 10000000, CLOSED,
     offsetof(Config, train.batch_tokens),
     "batches of about this many target tokens (pairs of similar length, their number varies) "
     "instead of batch_size pairs; 0 = off",
     NULL},
    {"train", "epochs", KEY_INT, "10", 0, 1000000, CLOSED, offsetof(Config, train.epochs),
     "passes over the training data; 0 = no limit (then max_steps must be set)", NULL},
    {"train", "max_steps", KEY_INT, "0", 0, INFINITY, CLOSED, offsetof(Config, train.max_steps),
     "stop after this many optimizer steps; 0 = no limit", NULL},
    {"train", "max_minutes", KEY_REAL, "0", 0, INFINITY, CLOSED,
     offsetof(Config, train.max_minutes),
     "stop after this many minutes of training, then validate and score the test set as at the "
     "end; 0 = no limit",
     NULL},
    {"train", "dropout", KEY_REAL, "0", 0, 1, OPEN_MAX, offsetof(Config, train.dropout),
     "inverted-dropout probability on embeddings and readout; 0 = off", NULL},
    {"train", "word_dropout", KEY_REAL, "0", 0, 1, OPEN_MAX, offsetof(Config, train.word_dropout),
     "probability of dropping a whole source or target token's embedding (the kept ones scaled "
     "by 1/(1-p)), independently of dropout; 0 = off",
     NULL},
    {"train", "label_smoothing", KEY_REAL, "0", 0, 1, OPEN_MAX,
     offsetof(Config, train.label_smoothing), "label-smoothing epsilon of the loss; 0 = off", NULL},
    {"train", "ema", KEY_REAL, "0", 0, 1, OPEN_MAX, offsetof(Config, train.ema),
     "decay d of a moving average of the parameters (avg = d avg + (1-d) params after each "
     "step, warmed up), used for validation, best.ckpt and the test score; 0 = off",
     NULL},
    {"train", "seed", KEY_UINT64, "1", 0, 0, NO_RANGE, offsetof(Config, train.seed),
     "seed of every random stream (initialization, shuffling, dropout)", NULL},
    {"train", "threads", KEY_INT, "0", 0, 1024, CLOSED, offsetof(Config, train.threads),
     "OpenMP threads, at most: fewer while other programs keep cores busy, with the same "
     "results bit for bit; 0 = all cores",
     NULL},
    {"train", "valid_every", KEY_INT, "500", 1, INFINITY, CLOSED,
     offsetof(Config, train.valid_every), "validate on the dev set every this many steps", NULL},
    {"train", "patience", KEY_INT, "5", 0, INFINITY, CLOSED, offsetof(Config, train.patience),
     "stop after this many validations without dev BLEU improvement; 0 = never", NULL},
    {"train", "log_every", KEY_INT, "100", 1, INFINITY, CLOSED, offsetof(Config, train.log_every),
     "log the training loss every this many steps", NULL},
    {"train", "out_dir", KEY_PATH, "runs/model", 0, 0, NO_RANGE, offsetof(Config, train.out_dir),
     "folder for checkpoints and logs", NULL},
};

#define KEY_COUNT (sizeof config_keys / sizeof config_keys[0])

/* The words a bool accepts, with their meaning. */
static const struct {
    const char *word;
    bool value;
} bool_words[] = {
    {"true", true}, {"false", false}, {"yes", true}, {"no", false},
    {"on", true},   {"off", false},   {"1", true},   {"0", false},
};

static const ConfigKey *find_key(const char *section, size_t section_length, const char *key,
                                 size_t key_length) {
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const ConfigKey *entry = &config_keys[i];
        if (strlen(entry->section) == section_length &&
            memcmp(entry->section, section, section_length) == 0 &&
            strlen(entry->key) == key_length && memcmp(entry->key, key, key_length) == 0)
            return entry;
    }
    return NULL;
}

static bool is_known_section(const char *section) {
    for (size_t i = 0; i < KEY_COUNT; i++)
        if (strcmp(config_keys[i].section, section) == 0) return true;
    return false;
}

/* Writes "[data] [model] ..." (each section once, in table order) into buf. */
static void list_sections(char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < KEY_COUNT; i++) {
        if (i > 0 && strcmp(config_keys[i].section, config_keys[i - 1].section) == 0) continue;
        int n =
            snprintf(buf + used, size - used, "%s[%s]", used ? " " : "", config_keys[i].section);
        if (n < 0 || (size_t)n >= size - used) return;
        used += (size_t)n;
    }
}

/* "; did you mean NAME?" for the key of `section` (or with key NULL, the section) that the
 * typed name is a slip of, into buf; "" when none is near (base/usage.h, near_names). */
static const char *did_you_mean(char *buf, size_t size, const char *section, size_t section_length,
                                const char *typed, size_t typed_length) {
    const char *names[KEY_COUNT];
    size_t count = 0;
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const ConfigKey *k = &config_keys[i];
        if (!section && (i == 0 || strcmp(k->section, config_keys[i - 1].section) != 0))
            names[count++] = k->section;
        else if (section && strlen(k->section) == section_length &&
                 memcmp(k->section, section, section_length) == 0)
            names[count++] = k->key;
    }
    static const char intro[] = "; did you mean ";
    size_t at = sizeof intro - 1; /* the names go after it, with a byte left for the '?' */
    if (size > at + 1 && near_names(typed, typed_length, names, count, section ? "" : "[",
                                    section ? "" : "]", buf + at, size - at - 1)) {
        memcpy(buf, intro, at);
        strcat(buf, "?");
    } else {
        buf[0] = '\0';
    }
    return buf;
}

static bool in_range(const ConfigKey *key, double x) {
    switch (key->range) {
    case NO_RANGE:
        return true;
    case CLOSED:
        return x >= key->min && x <= key->max;
    case OPEN_MIN:
        return x > key->min && x <= key->max;
    case OPEN_MAX:
        return x >= key->min && x < key->max;
    case OPEN_BOTH:
        return x > key->min && x < key->max;
    }
    return false;
}

/* Writes the allowed range as text: "in [1, 1000]", "in (0, 10]", ">= 0", "> 0", or "". */
static void describe_range(const ConfigKey *key, char *buf, size_t size) {
    /* Integer bounds print as integers: 1000000000, not 1e+09. */
    const char *format = key->type == KEY_INT ? "%.0f" : "%g";
    char low[32], high[32];
    snprintf(low, sizeof low, format, key->min);
    snprintf(high, sizeof high, format, key->max);
    bool open_min = key->range == OPEN_MIN || key->range == OPEN_BOTH;
    bool open_max = key->range == OPEN_MAX || key->range == OPEN_BOTH;
    if (key->range == NO_RANGE)
        buf[0] = '\0';
    else if (isinf(key->max) && key->type == KEY_INT) /* an int's own bound is the bound */
        snprintf(buf, size, "in %c%s, %d]", open_min ? '(' : '[', low, INT_MAX);
    else if (isinf(key->max))
        snprintf(buf, size, "%s %s", open_min ? ">" : ">=", low);
    else
        snprintf(buf, size, "in %c%s, %s%c", open_min ? '(' : '[', low, high, open_max ? ')' : ']');
}

/* Writes what a valid value of key looks like, for error messages. */
static void describe_expected(const ConfigKey *key, char *buf, size_t size) {
    char range[96];
    describe_range(key, range, sizeof range);
    switch (key->type) {
    case KEY_INT:
        snprintf(buf, size, "an integer %s", range);
        break;
    case KEY_UINT64:
        snprintf(buf, size, "an integer from 0 to %llu", (unsigned long long)UINT64_MAX);
        break;
    case KEY_REAL:
        snprintf(buf, size, "a number %s", range);
        break;
    case KEY_BOOL:
        snprintf(buf, size, "true/false, yes/no, on/off or 1/0");
        break;
    case KEY_STRING:
        snprintf(buf, size, "text of at most %d bytes", CONFIG_PATH_MAX - 1);
        break;
    case KEY_PATH:
        snprintf(buf, size, "a path of at most %d bytes", CONFIG_PATH_MAX - 1);
        break;
    case KEY_ENUM:
        snprintf(buf, size, "one of %s", key->choices);
        break;
    }
}

/* Sets err to "[section] key = 'text': why (expected ...)" and returns -1. */
static int reject(const ConfigKey *key, const char *text, const char *why, Error *err) {
    char expected[160], quoted[128];
    describe_expected(key, expected, sizeof expected);
    return error_set(err, "[%s] %s = '%s': %s (expected %s)", key->section, key->key,
                     text_for_message(quoted, sizeof quoted, text, 100), why, expected);
}

/* Why text could not be written to a config file and read back as it is (NULL when it can):
 * config_print must record every setting faithfully, and only --set can supply such text (the
 * INI reader trims values, cuts comments and splits lines before any value is seen). */
static const char *unwritable(const char *text) {
    size_t len = strlen(text), offset;
    uint32_t control;
    if (strpbrk(text, "\t\n\v\f\r") || utf8_find_control(text, len, &offset, &control))
        return "holds a control character";
    if (isspace((unsigned char)text[0]) || isspace((unsigned char)text[len - 1]))
        return "starts or ends with a space, which a config file cannot keep";
    for (size_t i = 1; i < len; i++)
        if (text[i] == '#' && isspace((unsigned char)text[i - 1]))
            return "holds ' #', which starts a comment in a config file";
    return NULL;
}

/* Stores a string, or a path prefixed with base unless it is absolute, into a
 * char[CONFIG_PATH_MAX] field; refuses rather than truncates, and refuses text a config file
 * could not hold. */
static int store_text(const ConfigKey *key, char *field, const char *text, const char *base,
                      Error *err) {
    const char *problem = unwritable(text);
    if (problem) return reject(key, text, problem, err);
    const char *prefix = (text[0] == '/' || key->type == KEY_STRING) ? "" : base;
    size_t prefix_length = strlen(prefix), text_length = strlen(text);
    if (prefix_length + text_length >= CONFIG_PATH_MAX) return reject(key, text, "too long", err);
    memcpy(field, prefix, prefix_length);
    memcpy(field + prefix_length, text, text_length + 1);
    /* messages name "runs/toy", not "configs/../runs/toy" */
    if (key->type == KEY_PATH) path_normalise(field);
    return 0;
}

/* Parses text as the value of key and stores it in cfg; base is the folder relative paths
 * are resolved against ("" for the current directory). On error cfg is unchanged. */
static int set_value(Config *cfg, const ConfigKey *key, const char *text, const char *base,
                     Error *err) {
    void *field = (char *)cfg + key->offset;
    /* an optional key (no default) is cleared by an empty value: --set data.test= */
    if (text[0] == '\0' && key->default_text && key->default_text[0] == '\0' &&
        (key->type == KEY_PATH || key->type == KEY_STRING)) {
        *(char *)field = '\0';
        return 0;
    }
    if (text[0] == '\0') return reject(key, text, "empty value", err);
    /* strtol and strtod skip leading spaces, which a number read back from a file cannot have */
    if (key->type != KEY_STRING && key->type != KEY_PATH && isspace((unsigned char)text[0]))
        return reject(key, text, "starts with a space", err);
    char *end = NULL;
    switch (key->type) {
    case KEY_INT: {
        errno = 0;
        long value = strtol(text, &end, 10);
        if (end == text || *end != '\0') return reject(key, text, "not an integer", err);
        if (errno == ERANGE || value < INT_MIN || value > INT_MAX || !in_range(key, (double)value))
            return reject(key, text, "out of range", err);
        *(int *)field = (int)value;
        return 0;
    }
    case KEY_UINT64: {
        /* strtoull would quietly turn "-1" into 2^64 - 1, so a sign is refused up front. */
        if (text[0] < '0' || text[0] > '9') return reject(key, text, "not an integer", err);
        errno = 0;
        unsigned long long value = strtoull(text, &end, 10);
        if (*end != '\0') return reject(key, text, "not an integer", err);
        if (errno == ERANGE || value > UINT64_MAX) return reject(key, text, "out of range", err);
        *(uint64_t *)field = (uint64_t)value;
        return 0;
    }
    case KEY_REAL: {
        errno = 0;
        double value = strtod(text, &end);
        if (end == text || *end != '\0') return reject(key, text, "not a number", err);
        if (errno == ERANGE || !isfinite(value) || !in_range(key, value))
            return reject(key, text, "out of range", err);
        *(double *)field = value;
        return 0;
    }
    case KEY_BOOL:
        for (size_t i = 0; i < sizeof bool_words / sizeof bool_words[0]; i++) {
            if (strcasecmp(text, bool_words[i].word) == 0) {
                *(bool *)field = bool_words[i].value;
                return 0;
            }
        }
        return reject(key, text, "not a yes/no value", err);
    case KEY_STRING:
    case KEY_PATH:
        return store_text(key, field, text, base, err);
    case KEY_ENUM: {
        size_t text_length = strlen(text);
        int index = 0;
        for (const char *word = key->choices; *word; index++) {
            size_t word_length = strcspn(word, "|");
            if (word_length == text_length && memcmp(word, text, word_length) == 0) {
                memcpy(field, &index, sizeof index);
                return 0;
            }
            word += word_length;
            if (*word == '|') word++;
        }
        return reject(key, text, "not one of the choices", err);
    }
    }
    return reject(key, text, "unsupported type", err);
}

/* Writes the current value of key in cfg as config_load would read it; "" for an unset
 * string. Reals use the fewest digits that read back to the same double. */
static void format_value(const Config *cfg, const ConfigKey *key, char *buf, size_t size) {
    const void *field = (const char *)cfg + key->offset;
    switch (key->type) {
    case KEY_INT:
        snprintf(buf, size, "%d", *(const int *)field);
        return;
    case KEY_UINT64:
        snprintf(buf, size, "%llu", (unsigned long long)*(const uint64_t *)field);
        return;
    case KEY_REAL: {
        double value = *(const double *)field;
        for (int digits = 1; digits <= 17; digits++) {
            snprintf(buf, size, "%.*g", digits, value);
            if (strtod(buf, NULL) == value) return;
        }
        return;
    }
    case KEY_BOOL:
        snprintf(buf, size, "%s", *(const bool *)field ? "true" : "false");
        return;
    case KEY_STRING:
    case KEY_PATH:
        snprintf(buf, size, "%s", (const char *)field);
        return;
    case KEY_ENUM: {
        int index;
        memcpy(&index, field, sizeof index);
        const char *word = key->choices;
        for (int i = 0; i < index && *word; i++) {
            word += strcspn(word, "|");
            if (*word == '|') word++;
        }
        snprintf(buf, size, "%.*s", (int)strcspn(word, "|"), word);
        return;
    }
    }
}

/* Sets every key with a default; keys without one (required or optional) stay zero/"". */
static int apply_defaults(Config *cfg, const char *base, Error *err) {
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const ConfigKey *key = &config_keys[i];
        if (key->default_text == REQUIRED || key->default_text[0] == '\0') continue;
        if (set_value(cfg, key, key->default_text, base, err) != 0) return -1;
    }
    return 0;
}

void config_defaults(Config *cfg) {
    /* With no folder to prefix, every default is one of the constants above, all of which
     * parse (tests/test_config.c checks each value), so this cannot fail. */
    apply_defaults(cfg, "", NULL);
}

/* What config_load knows while it reads. */
typedef struct {
    Config *cfg;
    char base[CONFIG_PATH_MAX]; /* the config file's folder with a trailing '/', or "" */
    int file_line[KEY_COUNT];   /* line where the file set each key; 0 = not in the file */
    bool is_set[KEY_COUNT];     /* set by the file or an override */
} LoadState;

static int handle_ini_entry(void *user, const IniEntry *entry, Error *err) {
    LoadState *state = user;
    char quoted[96];
    if (!entry->key) {
        if (is_known_section(entry->section)) return 0;
        char sections[128], near[96];
        list_sections(sections, sizeof sections);
        return error_set(
            err, "unknown section [%s] (expected one of %s)%s",
            text_for_message(quoted, sizeof quoted, entry->section, 60), sections,
            did_you_mean(near, sizeof near, NULL, 0, entry->section, strlen(entry->section)));
    }
    const ConfigKey *key =
        find_key(entry->section, strlen(entry->section), entry->key, strlen(entry->key));
    char near[96];
    if (!key)
        return error_set(err, "unknown key [%s] %s%s", entry->section,
                         text_for_message(quoted, sizeof quoted, entry->key, 60),
                         did_you_mean(near, sizeof near, entry->section, strlen(entry->section),
                                      entry->key, strlen(entry->key)));
    size_t index = (size_t)(key - config_keys);
    if (state->file_line[index] != 0)
        return error_set(err, "duplicate key [%s] %s (first set on line %d)", key->section,
                         key->key, state->file_line[index]);
    state->file_line[index] = entry->line;
    state->is_set[index] = true;
    return set_value(state->cfg, key, entry->value, state->base, err);
}

/* Applies one "section.key=value" override; relative paths stay relative to the current
 * directory, since that is where the user typed them. */
static int apply_override(LoadState *state, const char *override, Error *err) {
    char quoted[256];
    text_for_message(quoted, sizeof quoted, override, 200);
    const char *equals = strchr(override, '=');
    const char *dot = equals ? memchr(override, '.', (size_t)(equals - override)) : NULL;
    /* one dot between a section and a key, neither empty: ".=" and "a.b.c=1" are no keys */
    if (!dot || dot == override || dot + 1 == equals ||
        memchr(dot + 1, '.', (size_t)(equals - dot - 1)))
        return error_set(err, "--set %s: expected section.key=value", quoted);
    const char *name = dot + 1;
    const ConfigKey *key =
        find_key(override, (size_t)(dot - override), name, (size_t)(equals - name));
    char section[64], near[96], sections[128], quoted_section[96];
    snprintf(section, sizeof section, "%.*s", (int)(dot - override < 60 ? dot - override : 60),
             override);
    if (!key && !is_known_section(section)) { /* as the file's unknown section is said */
        list_sections(sections, sizeof sections);
        return error_set(err, "--set %s: unknown section [%s] (expected one of %s)%s", quoted,
                         text_for_message(quoted_section, sizeof quoted_section, section, 60),
                         sections,
                         did_you_mean(near, sizeof near, NULL, 0, section, strlen(section)));
    }
    if (!key) {
        char key_name[64], quoted_key[96];
        snprintf(key_name, sizeof key_name, "%.*s", (int)(equals - name < 60 ? equals - name : 60),
                 name);
        return error_set(err, "--set %s: unknown key [%s] %s%s", quoted,
                         text_for_message(quoted_section, sizeof quoted_section, section, 60),
                         text_for_message(quoted_key, sizeof quoted_key, key_name, 60),
                         did_you_mean(near, sizeof near, override, (size_t)(dot - override), name,
                                      (size_t)(equals - name)));
    }
    state->is_set[key - config_keys] = true;
    if (set_value(state->cfg, key, equals + 1, "", err) != 0)
        return error_prefix(err, "--set %s: ", quoted);
    return 0;
}

/* Writes path's folder with its trailing '/' into base ("" when path has no folder). */
static int folder_of(const char *path, char *base, size_t size, Error *err) {
    if (path_beside(base, size, path, ""))
        return error_set(err, "%s: the folder name is too long", path);
    return 0;
}

int config_load(Config *cfg, const char *path, const char *const *overrides, int n_overrides,
                Error *err) {
    LoadState state = {.cfg = cfg};
    config_defaults(cfg); /* so cfg is well-formed even if the folder name is refused */
    if (folder_of(path, state.base, sizeof state.base, err) != 0) return -1;
    if (apply_defaults(cfg, state.base, err) != 0) return error_prefix(err, "%s: default ", path);
    if (ini_parse_file(path, handle_ini_entry, &state, err) != 0) return -1;
    for (int i = 0; i < n_overrides; i++)
        if (apply_override(&state, overrides[i], err) != 0) return -1;

    for (size_t i = 0; i < KEY_COUNT; i++)
        if (config_keys[i].default_text == REQUIRED && !state.is_set[i])
            return error_set(err, "%s: missing required key [%s] %s", path, config_keys[i].section,
                             config_keys[i].key);
    if (cfg->train.epochs == 0 && cfg->train.max_steps == 0 && cfg->train.max_minutes == 0)
        return error_set(err,
                         "%s: [train] epochs = 0, max_steps = 0 and max_minutes = 0 would train "
                         "forever (set at least one of them above 0)",
                         path);
    if (cfg->optim.min_lr > cfg->optim.lr)
        return error_set(err,
                         "%s: [optim] min_lr = %g is above lr = %g: the floor would raise the "
                         "rate above lr at every step",
                         path, cfg->optim.min_lr, cfg->optim.lr);
    if ((real)cfg->optim.eps == 0) /* then 0 / 0 for a parameter whose gradient is zero */
        return error_set(err, "%s: [optim] eps = %g is 0 in this build's %s precision", path,
                         cfg->optim.eps, sizeof(real) == sizeof(float) ? "float" : "double");
    const ConfigModel *model = &cfg->model;
    int K = model->bidirectional ? 2 * model->enc_hidden : model->enc_hidden;
    if (model->score == SCORE_DOT && model->dec_hidden != K)
        return error_set(err,
                         "%s: [model] score = dot needs dec_hidden = K, the encoder state size, "
                         "but dec_hidden = %d and K = %d (enc_hidden = %d, %s)",
                         path, model->dec_hidden, K, model->enc_hidden,
                         model->bidirectional ? "bidirectional: K = 2 x enc_hidden"
                                              : "unidirectional: K = enc_hidden");
    if (model->tie_embeddings && model->readout_size != model->emb_size)
        return error_set(err,
                         "%s: model.tie_embeddings needs model.readout_size (%d) = "
                         "model.emb_size (%d)",
                         path, model->readout_size, model->emb_size);
    return 0;
}

int config_absolute_paths(Config *cfg, Error *err) {
    char cwd[CONFIG_PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return error_set(err, "cannot tell the working directory: %s", strerror(errno));
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const ConfigKey *key = &config_keys[i];
        char *field = (char *)cfg + key->offset, joined[2 * CONFIG_PATH_MAX + 2];
        if (key->type != KEY_PATH || field[0] == '\0' || field[0] == '/') continue;
        snprintf(joined, sizeof joined, "%s/%s", cwd, field);
        path_normalise(joined);
        if (strlen(joined) >= CONFIG_PATH_MAX)
            return error_set(err, "[%s] %s: %s/%s is longer than %d bytes", key->section, key->key,
                             cwd, field, CONFIG_PATH_MAX - 1);
        memcpy(field, joined, strlen(joined) + 1);
    }
    return 0;
}

void config_print(const Config *cfg, FILE *out) {
    fprintf(out, "# The settings in effect; relative paths are relative to the working "
                 "directory (bin/train\n# writes OUT_DIR/config.ini with absolute ones, so it "
                 "reruns the run it records).\n");
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const ConfigKey *key = &config_keys[i];
        if (i == 0 || strcmp(key->section, config_keys[i - 1].section) != 0)
            fprintf(out, "%s[%s]\n", i == 0 ? "" : "\n", key->section);
        char value[CONFIG_PATH_MAX];
        format_value(cfg, key, value, sizeof value);
        if (value[0] == '\0')
            fprintf(out, "# %s is not set\n", key->key); /* an empty value would not reload */
        else
            fprintf(out, "%s = %s\n", key->key, value);
    }
}

static const char *type_name(KeyType type) {
    switch (type) {
    case KEY_INT:
        return "int";
    case KEY_UINT64:
        return "uint64";
    case KEY_REAL:
        return "real";
    case KEY_BOOL:
        return "bool";
    case KEY_STRING:
        return "string";
    case KEY_PATH:
        return "path";
    case KEY_ENUM:
        return "enum";
    }
    return "?";
}

void config_help(FILE *out) {
    fprintf(out, "Configuration keys: set them in the INI file under [section] as key = value, or "
                 "on the\ncommand line with --set section.key=value (which wins over the file). "
                 "Relative paths\nin the file are relative to the file's folder, those given "
                 "with --set to the current one.\n");
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const ConfigKey *key = &config_keys[i];
        if (i == 0 || strcmp(key->section, config_keys[i - 1].section) != 0)
            fprintf(out, "\n[%s]\n", key->section);
        char name[64], range[96];
        snprintf(name, sizeof name, "%s.%s", key->section, key->key);
        describe_range(key, range, sizeof range);
        fprintf(out, "  %-22s %-6s ", name, type_name(key->type));
        if (key->default_text == REQUIRED)
            fprintf(out, "required");
        else if (key->default_text[0] == '\0')
            fprintf(out, "optional, no default; an empty value clears it");
        else
            fprintf(out, "default %s", key->default_text);
        if (range[0]) fprintf(out, ", %s", range);
        if (key->type == KEY_ENUM) fprintf(out, ", one of %s", key->choices);
        fprintf(out, "\n      %s\n", key->doc);
    }
}

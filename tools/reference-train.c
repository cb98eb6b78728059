/*
 * reference-train.c: trains a translator with the plain reference alone (reference/
 * reference.c): its forward and backward passes, its Adam with clipping, its greedy decoding
 * for validation. Slow, one thread; for reading and for checking, not for production.
 *
 * The loop, the data side and the folder are the engine's (train/trainer.c: vocabularies,
 * batches, the epoch plans of [train] batch_size or batch_tokens, the learning-rate schedules,
 * checkpoint files, the log, curves and the folder's lock), so the checkpoint it writes,
 * OUT_DIR/best.ckpt, is one bin/translate reads. Its folder is [train] out_dir + "-reference"
 * unless --set train.out_dir names one, so that it never replaces bin/train's model. Keys whose
 * feature the reference does not have ([train] ema) are refused by name; there is no resuming.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer.h"
#include "nmt/metrics/metrics.h"
#include "nmt/text.h"
#include "nmt/translator.h"
#include "reference/reference.h"
#include "train/trainer.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: reference-train CONFIG [--set section.key=value ...] [--overwrite]\n"
            "Trains with the plain reference of the model spec (reference/reference.c): one\n"
            "thread, plain loops, double precision inside; far slower than bin/train, and the\n"
            "same model, so its checkpoint is one bin/translate -m reads.\n"
            "  CONFIG                   INI file as for bin/train (see bin/train --help)\n"
            "  --set section.key=value  override one key (may be repeated)\n"
            "  --overwrite              train anew in a folder that holds a trained model\n"
            "  -h, --help               this text\n"
            "It uses every [data] and [model] key, [optim] (Adam, clip_norm, every schedule),\n"
            "and [train] batch_size, batch_tokens, epochs, max_steps, max_minutes, dropout,\n"
            "word_dropout, label_smoothing, seed, valid_every, patience, log_every, out_dir;\n"
            "[train] threads is ignored (one thread). It refuses [train] ema other than 0.\n"
            "Writes OUT_DIR-reference/ (OUT_DIR given by --set train.out_dir: that folder):\n"
            "best.ckpt (best dev BLEU, greedy decoding by the reference), train_log.tsv,\n"
            "curves.svg and config.ini; when [data] test is set, scores the best model on it\n"
            "at the end. The folder is locked while it runs, as bin/train locks its own, and a\n"
            "folder whose checkpoints bin/train or other settings made is refused.\n");
}

/* The keys of features the reference does not have, when set to anything but off. */
static int refuse_unimplemented(const Config *cfg, Error *err) {
    if (cfg->train.ema != 0)
        return error_set(err,
                         "[train] ema = %g: the reference has no parameter average (set it to "
                         "0: --set train.ema=0)",
                         cfg->train.ema);
    return 0;
}

/* The reference's state beside the trainer's: its activations and its optimiser. */
typedef struct {
    RefActs acts;   /* training batches */
    RefActs decode; /* one sentence at a time */
    int decode_max_src, decode_max_len;
    RefAdam adam;
} Reference;

/* The longest source of a corpus, in model units with </s>. */
static int longest_source(const NmtModel *nm, const Corpus *c, int longest, Error *err) {
    for (size_t i = 0; i < c->count; i++) {
        int *ids, n, unknown;
        if (encode_source(nm, c->src[i], &ids, &n, &unknown, err)) return -1;
        free(ids);
        if (n > longest) longest = n;
    }
    return longest;
}

static int reference_prepare(Trainer *tr, int max_pairs, bool resumed, Error *err) {
    (void)resumed; /* the reference has no --resume */
    const Config *cfg = tr->cfg;
    Reference *r = tr->own;
    const ModelDims *d = &tr->nm.model.dims;
    int longest = longest_source(&tr->nm, &tr->dev_corpus, 1, err);
    if (longest > 0) longest = longest_source(&tr->nm, &tr->test_corpus, longest, err);
    if (longest < 0) return -1;
    r->decode_max_src = longest, r->decode_max_len = nmt_max_output_len(longest);
    if (ref_acts_init(&r->acts, d, max_pairs, tr->train.max_src + 1, tr->train.max_tgt + 1, err) ||
        ref_acts_init(&r->decode, d, 1, r->decode_max_src, r->decode_max_len, err))
        return -1;
    return ref_adam_init(&r->adam, tr->nm.model.table.total, cfg->optim.beta1, cfg->optim.beta2,
                         cfg->optim.eps, err);
}

static void reference_free(Trainer *tr) {
    Reference *r = tr->own;
    ref_adam_free(&r->adam);
    ref_acts_free(&r->decode);
    ref_acts_free(&r->acts);
}

static int reference_gradients(Trainer *tr, const Batch *batch, Rng *dropout, double *loss,
                               long *n_tokens, Error *err) {
    Reference *r = tr->own;
    const ConfigTrain *ct = &tr->cfg->train;
    Model *m = &tr->nm.model;
    RefOptions opt = {(real)ct->dropout, (real)ct->label_smoothing, dropout,
                      (real)ct->word_dropout};
    if (ref_forward(&r->acts, m->params, batch, &opt, loss, err)) return -1;
    memset(m->grads, 0, sizeof(real) * m->table.total);
    ref_backward(&r->acts, m->params, m->grads);
    *n_tokens = r->acts.n_tokens;
    return 0;
}

static int reference_update(Trainer *tr, double loss, double lr, Error *err) {
    Reference *r = tr->own;
    Model *m = &tr->nm.model;
    if (!isfinite(loss) ||
        ref_adam_step(&r->adam, m->params, m->grads, tr->cfg->optim.clip_norm, lr)) {
        char what[64];
        snprintf(what, sizeof what, "the loss (%g) or a parameter is not finite", loss);
        return trainer_diverged(tr, what, err);
    }
    return 0;
}

/* Corpus BLEU and chrF of the reference's greedy translations (as bin/evaluate scores:
 * detokenized text against the references as the file has them, with [data] bleu_tokenize
 * and score_lowercase); no loss. */
static int reference_score(const Trainer *tr, const NmtModel *nm, const Corpus *c,
                           const TokenizedCorpus *tc, const char *path, Scores *sc, Error *err) {
    (void)path, (void)tc;
    Reference *r = tr->own;
    BleuStats bleu;
    ChrfStats chrf;
    bleu_stats_init(&bleu, &tr->cfg->data.scores);
    chrf_stats_init(&chrf, &tr->cfg->data.scores);
    int *words = checked_calloc((size_t)r->decode_max_len, sizeof(int), "translation", err);
    if (!words) return -1;
    int rc = 0;
    for (size_t i = 0; i < c->count && rc == 0; i++) {
        int *ids, n, unknown, len;
        if (encode_source(nm, c->src[i], &ids, &n, &unknown, err)) {
            rc = -1;
            break;
        }
        rc = ref_greedy(&r->decode, nm->model.params, ids, n, nmt_max_output_len(n), words, &len,
                        err);
        free(ids);
        char *hyp = rc ? NULL : decode_target(nm, words, len, err);
        if (!hyp || bleu_add(&bleu, hyp, c->tgt[i], err) || chrf_add(&chrf, hyp, c->tgt[i], err))
            rc = -1;
        free(hyp);
    }
    free(words);
    *sc = (Scores){.loss = NAN,
                   .perplexity = NAN,
                   .bleu = bleu_score(&bleu),
                   .chrf = chrf_score(&chrf),
                   .sentences = c->count};
    return rc;
}

static void reference_describe(const Trainer *tr, char *buf, size_t size) {
    (void)tr;
    snprintf(buf, size, "the plain reference (double inside, one thread)");
}

int main(int argc, char **argv) {
    static const TrainerProgram reference = {.name = "reference-train",
                                             .folder_suffix = "-reference",
                                             .usage = usage,
                                             .own_size = sizeof(Reference),
                                             .check_config = refuse_unimplemented,
                                             .prepare = reference_prepare,
                                             .gradients = reference_gradients,
                                             .update = reference_update,
                                             .score = reference_score,
                                             .describe = reference_describe,
                                             .free_own = reference_free};
    return trainer_main(argc, argv, &reference);
}

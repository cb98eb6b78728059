/*
 * reference-train.c: trains a translator with the plain reference alone (reference/
 * reference.c): its forward and backward passes, its Adam with clipping, its greedy decoding
 * for validation. Slow, one thread; for reading and for checking, not for production.
 *
 * The data side is the engine's (vocabularies, batches, the epoch plans of [train] batch_size
 * or batch_tokens, the learning-rate schedules of train/adam.h, checkpoint files), so the
 * checkpoint it writes, OUT_DIR/best.ckpt, is one bin/translate reads. Keys whose feature the
 * reference does not have ([train] ema) are refused by name; there is no resuming.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/files.h"
#include "base/usage.h"
#include "base/utf8.h"
#include "data/tokenizer.h"
#include "nmt/metrics.h"
#include "nmt/text.h"
#include "nmt/translator.h"
#include "reference/reference.h"
#include "train/adam.h"
#include "train/batching.h"
#include "train/new_model.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: reference-train CONFIG [--set section.key=value ...]\n"
            "Trains with the plain reference of the model spec (reference/reference.c): one\n"
            "thread, plain loops, double precision inside; far slower than bin/train, and the\n"
            "same model, so its checkpoint is one bin/translate -m reads.\n"
            "  CONFIG                   INI file as for bin/train (see bin/train --help)\n"
            "  --set section.key=value  override one key (may be repeated)\n"
            "  -h, --help               this text\n"
            "It uses every [data] and [model] key, [optim] (Adam, clip_norm, every schedule),\n"
            "and [train] batch_size, batch_tokens, epochs, max_steps, max_minutes, dropout,\n"
            "label_smoothing, seed, valid_every, patience, log_every, out_dir; [train] threads\n"
            "is ignored (one thread). It refuses [train] ema other than 0.\n"
            "Writes OUT_DIR/best.ckpt (best dev BLEU, greedy decoding by the reference) and,\n"
            "when [data] test is set, scores it on the test set at the end.\n");
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
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

typedef struct {
    const Config *cfg;
    NmtModel nm;
    Corpus train_corpus, dev_corpus, test_corpus;
    TokenizedCorpus train_tokens, dev_tokens, test_tokens;
    Dataset train;
    BatchBuffer batches;
    RefActs acts;   /* training batches */
    RefActs decode; /* one sentence at a time */
    int decode_max_src, decode_max_len;
    RefAdam adam;
    real *grads;
    Rng dropout_rng;
    uint64_t step, epoch;
    double lr_scale, best_bleu, start;
    int bad_validations, plateau_bad;
    char best_path[CONFIG_PATH_MAX + 16];
} Trainer;

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

static int setup(Trainer *tr, Error *err) {
    const Config *cfg = tr->cfg;
    if (corpus_load(cfg->data.train, cfg->data.lowercase, &tr->train_corpus, &tr->train_tokens,
                    err) ||
        corpus_load(cfg->data.dev, cfg->data.lowercase, &tr->dev_corpus, &tr->dev_tokens, err) ||
        (cfg->data.test[0] &&
         corpus_load(cfg->data.test, cfg->data.lowercase, &tr->test_corpus, &tr->test_tokens, err)))
        return -1;
    /* the same vocabularies and initial parameters as bin/train's for this config */
    if (nmt_model_from_config(&tr->nm, cfg, &tr->train_tokens, cfg->train.seed, err) ||
        nmt_dataset(&tr->train, &tr->nm, &tr->train_tokens, &tr->train_corpus, cfg->data.max_len,
                    err))
        return -1;
    if (tr->train.count == 0)
        return error_set(err, "%s: no pair of at most max_len = %d tokens", cfg->data.train,
                         cfg->data.max_len);
    const ModelDims *d = &tr->nm.model.dims;
    int B = training_max_pairs(&tr->train, &cfg->train);
    int longest = longest_source(&tr->nm, &tr->dev_corpus, 1, err);
    if (longest > 0) longest = longest_source(&tr->nm, &tr->test_corpus, longest, err);
    if (longest < 0) return -1;
    tr->decode_max_src = longest, tr->decode_max_len = nmt_max_output_len(longest);
    size_t n = tr->nm.model.table.total;
    tr->grads = checked_calloc(n, sizeof(real), "gradients", err);
    if (!tr->grads ||
        batch_buffer_init(&tr->batches, B, tr->train.max_src, tr->train.max_tgt, err) ||
        ref_acts_init(&tr->acts, d, B, tr->train.max_src + 1, tr->train.max_tgt + 1, err) ||
        ref_acts_init(&tr->decode, d, 1, tr->decode_max_src, tr->decode_max_len, err) ||
        ref_adam_init(&tr->adam, n, cfg->optim.beta1, cfg->optim.beta2, cfg->optim.eps, err) ||
        make_dirs(cfg->train.out_dir, err))
        return -1;
    rng_seed(&tr->dropout_rng, cfg->train.seed, 2); /* bin/train's dropout stream */
    snprintf(tr->best_path, sizeof tr->best_path, "%s/best.ckpt", cfg->train.out_dir);
    tr->lr_scale = 1, tr->best_bleu = -1;
    printf("reference-train: %zu pairs from %s, dev %zu pairs; model Vs=%d Vt=%d E=%d H=%d%s D=%d "
           "A=%d O=%d score %s, %zu parameters\n",
           tr->train.count, cfg->data.train, tr->dev_corpus.count, d->src_vocab, d->tgt_vocab,
           d->emb, d->enc_hidden, d->bidirectional ? " (bi)" : "", d->dec_hidden, d->att,
           d->readout, score_name(d->score), n);
    fflush(stdout);
    return 0;
}

static void trainer_free(Trainer *tr) {
    free(tr->grads);
    ref_adam_free(&tr->adam);
    ref_acts_free(&tr->decode);
    ref_acts_free(&tr->acts);
    batch_buffer_free(&tr->batches);
    dataset_free(&tr->train);
    tokenized_corpus_free(&tr->train_tokens);
    tokenized_corpus_free(&tr->dev_tokens);
    tokenized_corpus_free(&tr->test_tokens);
    corpus_free(&tr->train_corpus);
    corpus_free(&tr->dev_corpus);
    corpus_free(&tr->test_corpus);
    nmt_model_free(&tr->nm);
}

/* Corpus BLEU of the reference's greedy translations (as bin/evaluate scores: detokenized
 * text against the references as the file has them, with [data] bleu_tokenize and
 * score_lowercase). */
static int greedy_bleu(Trainer *tr, const Corpus *c, BleuResult *out, Error *err) {
    BleuStats stats;
    bleu_stats_init(&stats, &tr->cfg->data.scores);
    int *words = checked_calloc((size_t)tr->decode_max_len, sizeof(int), "translation", err);
    if (!words) return -1;
    int rc = 0;
    for (size_t i = 0; i < c->count && rc == 0; i++) {
        int *ids, n, unknown, len;
        if (encode_source(&tr->nm, c->src[i], &ids, &n, &unknown, err)) {
            rc = -1;
            break;
        }
        rc = ref_greedy(&tr->decode, tr->nm.model.params, ids, n, nmt_max_output_len(n), words,
                        &len, err);
        free(ids);
        char *hyp = rc ? NULL : decode_target(&tr->nm, words, len, err);
        if (!hyp || bleu_add(&stats, hyp, c->tgt[i], err)) rc = -1;
        free(hyp);
    }
    free(words);
    *out = bleu_score(&stats);
    return rc;
}

/* Dev BLEU; the best model so far is saved; the plateau schedule and early stopping count
 * validations without a gain. */
static int validate(Trainer *tr, double train_loss, int *stop, Error *err) {
    const Config *cfg = tr->cfg;
    BleuResult bleu;
    if (greedy_bleu(tr, &tr->dev_corpus, &bleu, err)) return -1;
    int improved = bleu.score > tr->best_bleu;
    if (improved) {
        tr->best_bleu = bleu.score, tr->bad_validations = 0, tr->plateau_bad = 0;
        if (checkpoint_save(tr->best_path, &tr->nm, NULL, err)) return -1;
    } else {
        tr->bad_validations++;
        if (cfg->optim.schedule == LR_SCHEDULE_PLATEAU &&
            ++tr->plateau_bad >= cfg->optim.plateau_patience)
            tr->lr_scale *= cfg->optim.plateau_factor, tr->plateau_bad = 0;
    }
    printf("step %llu  epoch %llu  train loss %.4f  dev BLEU %.2f  (best %.2f%s)  %.1f min\n",
           (unsigned long long)tr->step, (unsigned long long)tr->epoch + 1, train_loss, bleu.score,
           tr->best_bleu, improved ? ", saved best.ckpt" : "", (now() - tr->start) / 60);
    fflush(stdout);
    if (cfg->train.patience > 0 && tr->bad_validations >= cfg->train.patience) {
        printf("early stop: dev BLEU has not improved for %d validations\n", cfg->train.patience);
        *stop = 1;
    }
    return 0;
}

/* The share of the budget spent (epochs, max_steps or max_minutes, whichever is furthest),
 * which the budget schedule reads. */
static double budget_used(const Trainer *tr, double epoch_share) {
    const ConfigTrain *ct = &tr->cfg->train;
    double used = 0;
    if (ct->epochs > 0) used = (tr->epoch + epoch_share) / ct->epochs;
    if (ct->max_steps > 0) used = fmax(used, (double)tr->step / ct->max_steps);
    if (ct->max_minutes > 0) used = fmax(used, (now() - tr->start) / (60 * ct->max_minutes));
    return used;
}

/* The training loop: next batch -> forward -> zero grad -> backward -> clip and Adam -> log. */
static int train(Trainer *tr, Error *err) {
    const Config *cfg = tr->cfg;
    const ConfigTrain *ct = &cfg->train;
    RefOptions opt = {(real)ct->dropout, (real)ct->label_smoothing, &tr->dropout_rng,
                      (real)ct->word_dropout};
    double window_loss = 0;
    long window_tokens = 0;
    int stop = 0;
    uint64_t last_validated = 0;
    tr->start = now();
    while (!stop && (ct->epochs == 0 || tr->epoch < (uint64_t)ct->epochs)) {
        EpochPlan plan;
        if (training_plan(&plan, &tr->train, ct, tr->epoch, err)) return -1;
        for (size_t b = 0; b < plan.n_batches && !stop; b++) {
            if ((ct->max_steps > 0 && tr->step >= (uint64_t)ct->max_steps) ||
                (ct->max_minutes > 0 && now() - tr->start >= 60 * ct->max_minutes)) {
                stop = 1;
                break;
            }
            const Batch *batch = batch_fill(&tr->batches, &tr->train, plan.order + plan.start[b],
                                            (int)(plan.start[b + 1] - plan.start[b]));
            double loss;
            if (ref_forward(&tr->acts, tr->nm.model.params, batch, &opt, &loss, err)) {
                epoch_plan_free(&plan);
                return -1;
            }
            memset(tr->grads, 0, sizeof(real) * tr->adam.n);
            ref_backward(&tr->acts, tr->nm.model.params, tr->grads);
            double lr = schedule_lr(&cfg->optim, tr->step, tr->lr_scale,
                                    budget_used(tr, (double)b / plan.n_batches));
            if (!isfinite(loss) || ref_adam_step(&tr->adam, tr->nm.model.params, tr->grads,
                                                 cfg->optim.clip_norm, lr)) {
                epoch_plan_free(&plan);
                return error_set(err, "step %llu: the loss (%g) or a parameter is not finite",
                                 (unsigned long long)tr->step + 1, loss);
            }
            tr->step++;
            window_loss += loss * tr->acts.n_tokens, window_tokens += tr->acts.n_tokens;
            if (tr->step % (uint64_t)ct->log_every == 0) {
                printf("step %llu  epoch %llu  loss %.4f  lr %.3g  %.2f s/step\n",
                       (unsigned long long)tr->step, (unsigned long long)tr->epoch + 1,
                       window_loss / window_tokens, lr, (now() - tr->start) / tr->step);
                fflush(stdout);
            }
            if (tr->step % (uint64_t)ct->valid_every == 0) {
                if (validate(tr, window_loss / window_tokens, &stop, err)) {
                    epoch_plan_free(&plan);
                    return -1;
                }
                last_validated = tr->step, window_loss = 0, window_tokens = 0;
            }
        }
        epoch_plan_free(&plan);
        if (!stop) tr->epoch++;
    }
    if (tr->step != last_validated &&
        !(stop && tr->bad_validations >= ct->patience && ct->patience > 0)) {
        int unused = 0;
        if (validate(tr, window_tokens ? window_loss / window_tokens : 0, &unused, err)) return -1;
    }
    printf("done: %llu steps in %.1f minutes, best dev BLEU %.2f -> %s\n",
           (unsigned long long)tr->step, (now() - tr->start) / 60, tr->best_bleu, tr->best_path);
    if (!cfg->data.test[0]) return 0;
    /* the test set, with the best model's parameters */
    NmtModel best;
    if (checkpoint_load(tr->best_path, &best, NULL, NULL, err)) return -1;
    memcpy(tr->nm.model.params, best.model.params, sizeof(real) * tr->adam.n);
    nmt_model_free(&best);
    BleuResult bleu;
    if (greedy_bleu(tr, &tr->test_corpus, &bleu, err)) return -1;
    char line[METRICS_LINE_MAX];
    bleu_format(&bleu, line, sizeof line);
    printf("test (%s, %zu pairs, best model, greedy by the reference): %s\n", cfg->data.test,
           tr->test_corpus.count, line);
    return 0;
}

int main(int argc, char **argv) {
    const char **overrides = calloc((size_t)argc + 1, sizeof(char *));
    int n_overrides = 0, c;
    if (!overrides) {
        fprintf(stderr, "reference-train: out of memory\n");
        return 1;
    }
    static const struct option longs[] = {
        {"set", required_argument, 0, 's'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    opterr = 0; /* usage_getopt_error says what was wrong, in every program's words */
    while ((c = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
        if (c == 's') {
            overrides[n_overrides++] = optarg;
            continue;
        }
        free(overrides);
        if (c == 'h') {
            usage(stdout);
            return 0;
        }
        return usage_getopt_error("reference-train", argv, c);
    }
    if (optind != argc - 1) {
        char quoted[96];
        free(overrides);
        return usage_error(
            "reference-train",
            optind < argc ? "expected one CONFIG, got extra '%s'" : "missing CONFIG%s",
            optind < argc ? text_for_message(quoted, sizeof quoted, argv[optind + 1], 60) : "");
    }
    Config cfg;
    Error err;
    Trainer tr = {.cfg = &cfg};
    int rc = config_load(&cfg, argv[optind], overrides, n_overrides, &err) ||
             refuse_unimplemented(&cfg, &err) || setup(&tr, &err) || train(&tr, &err);
    free(overrides);
    if (rc) fprintf(stderr, "reference-train: %s\n", err.msg);
    trainer_free(&tr);
    return rc ? 1 : 0;
}

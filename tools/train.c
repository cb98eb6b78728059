/*
 * train.c: trains a translator from an INI config with the engine and keeps the best model.
 *
 * The loop, the folder, validation and checkpoints are train/trainer.c's; this file brings the
 * engine's arithmetic to it: the batched forward and backward passes of model/, clipping and
 * Adam of train/adam.h, and dev scored by teacher-forced loss and greedy BLEU and chrF. The best
 * model by dev BLEU is OUT/best.ckpt, the resumable state OUT/last.ckpt; --resume continues it.
 * Built with MPI (make MPI=1) and run under mpirun, the ranks share each batch (train/dist.h).
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "nmt/metrics/scoring.h"
#include "train/trainer.h"

static void usage(FILE *out) {
    fprintf(out, "usage: train CONFIG [--set section.key=value ...] [--resume[=CHECKPOINT]]\n"
                 "             [--overwrite]\n"
                 "Trains a GRU encoder / Bahdanau attention / GRU decoder translator.\n"
                 "  CONFIG                   INI file (see configs/toy.ini); its keys are below\n"
                 "  --set section.key=value  override one key (may be repeated)\n"
                 "  --resume[=CHECKPOINT]    continue from a checkpoint with its optimiser state\n"
                 "                           (default: OUT_DIR/last.ckpt)\n"
                 "  --overwrite              train anew in an OUT_DIR that holds a trained\n"
                 "                           model (refused without it: its checkpoints would be\n"
                 "                           replaced)\n"
                 "  -h, --help               this text\n"
                 "Writes OUT_DIR/best.ckpt (best dev BLEU), OUT_DIR/last.ckpt (resumable),\n"
                 "OUT_DIR/train_log.tsv, OUT_DIR/curves.svg (redrawn at each validation) and\n"
                 "OUT_DIR/config.ini (the settings, with absolute paths: it reruns the run); when\n"
                 "[data] test is set, scores the best model on it at the end. OUT_DIR/.lock is\n"
                 "locked while it runs: a second training into the folder is refused, and so is\n"
                 "a folder whose checkpoints bin/reference-train or other [data] or [model]\n"
                 "settings made (OUT_DIR/trained-by says who).\n"
                 "Ctrl-C (SIGINT) or SIGTERM saves OUT_DIR/last.ckpt at the next step and exits\n"
                 "with 130 or 143 (--resume goes on); a second one exits at once, the last\n"
                 "checkpoint untouched. Exit status 1: an error, said in one line.\n");
    char mpi[256];
    dist_build_info(mpi, sizeof mpi);
    fprintf(out, "%s\n\n", mpi);
    config_help(out);
}

/* The engine's state beside the trainer's: the activations of the largest batch, and the
 * gradients the last backward pass left untouched (zero), which clipping and Adam skip. */
typedef struct {
    Acts acts;
    ZeroGrads zero;
} Engine;

/* The memory training will touch, checked before it is allocated: the Adam moments and the
 * parameter average (unless a resumed checkpoint brought them) and the activations of the
 * largest batch. */
static int check_training_memory(const Trainer *tr, int max_pairs, bool resumed, Error *err) {
    double adam = (resumed ? 0 : 2.0 + (tr->cfg->train.ema > 0)) * sizeof(real) *
                  (double)tr->nm.model.table.total;
    double acts = acts_bytes(&tr->nm.model.dims, max_pairs, tr->train.max_src + 1,
                             tr->train.max_tgt + 1, NULL);
    return memory_check(adam + acts, "the optimiser state and the activations of a training batch",
                        err);
}

static int engine_prepare(Trainer *tr, int max_pairs, bool resumed, Error *err) {
    const ConfigOptim *o = &tr->cfg->optim;
    if (check_training_memory(tr, max_pairs, resumed, err) ||
        (!resumed &&
         adam_init(&tr->adam, tr->nm.model.table.total, o->beta1, o->beta2, o->eps, err)))
        return -1;
    Engine *e = tr->own;
    return acts_init_plan(&e->acts, &tr->nm.model.dims, max_pairs, tr->train.max_src + 1,
                          tr->train.max_tgt + 1, &(ActsPlan){.huge_pages = 1}, err);
}

static void engine_free(Trainer *tr) {
    Engine *e = tr->own;
    acts_free(&e->acts);
}

static int engine_gradients(Trainer *tr, const Batch *batch, Rng *dropout, double *loss,
                            long *n_tokens, Error *err) {
    Engine *e = tr->own;
    Model *m = &tr->nm.model;
    const ConfigTrain *ct = &tr->cfg->train;
    ForwardOptions opt = {.dropout = (real)ct->dropout,
                          .label_smoothing = (real)ct->label_smoothing,
                          .rng = dropout,
                          .word_dropout = (real)ct->word_dropout};
    e->zero = NO_ZERO_GRADS;
    if (batch->B == 0) return 0; /* an MPI rank's empty share */
    if (model_forward(m, &e->acts, batch, &opt, loss, err)) return -1;
    model_zero_grad(m);
    model_backward(m, &e->acts);
    *n_tokens = e->acts.n_tokens;
    /* the rows backward left alone are still zero, unless other ranks' batches added to them */
    if (tr->dist.size == 1) e->zero = (ZeroGrads){e->acts.untouched, e->acts.n_untouched};
    return 0;
}

static int engine_update(Trainer *tr, double loss, double lr, Error *err) {
    Engine *e = tr->own;
    Model *m = &tr->nm.model;
    size_t n = m->table.total;
    if (tr->dist.size > 1) m->grads_zero = false; /* the sum is in them, even with no batch */
    double norm;
    real clip = clip_grad_norm(m->grads, n, e->zero, tr->cfg->optim.clip_norm, &norm);
    if (!isfinite(loss) || !isfinite(norm)) {
        char what[64];
        snprintf(what, sizeof what, "the %s is %g", isfinite(loss) ? "gradient norm" : "loss",
                 isfinite(loss) ? norm : loss);
        return trainer_diverged(tr, what, err);
    }
    if (!adam_step(&tr->adam, m->params, m->grads, e->zero, clip, lr))
        return trainer_diverged(tr, "the Adam update overflowed", err);
    m->grads_zero = true; /* adam_step zeroed each gradient as it read it */
    return 0;
}

/* Teacher-forced loss and perplexity, greedy BLEU and chrF, in batches of 64. */
static int engine_score(const Trainer *tr, const NmtModel *nm, const Corpus *c,
                        const TokenizedCorpus *tc, const char *path, Scores *sc, Error *err) {
    return score_corpus(nm, c, tc, path, 64, 1, &tr->cfg->data.scores, sc, NULL, NULL, err);
}

static void engine_describe(const Trainer *tr, char *buf, size_t size) {
    snprintf(buf, size, "%s precision, %d threads x %d ranks", REAL_NAME, omp_get_max_threads(),
             tr->dist.size);
}

int main(int argc, char **argv) {
    static const TrainerProgram engine = {.name = "train",
                                          .resumable = true,
                                          .usage = usage,
                                          .own_size = sizeof(Engine),
                                          .prepare = engine_prepare,
                                          .gradients = engine_gradients,
                                          .update = engine_update,
                                          .score = engine_score,
                                          .describe = engine_describe,
                                          .free_own = engine_free};
    return trainer_main(argc, argv, &engine);
}

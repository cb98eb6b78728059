/*
 * trainer.h: the one training loop, which bin/train (the engine) and bin/reference-train (the
 * plain reference) both run.
 *
 * The loop is the algorithm: next batch -> forward -> zero grad -> backward -> clip -> Adam
 * step -> log; every valid_every steps the dev split is scored, the best model by dev BLEU is
 * saved as OUT/best.ckpt (and, for a resumable program, the resumable state as OUT/last.ckpt),
 * the plateau schedule and early stopping count validations without a gain. The trainer owns
 * the setup (data, model, resume, the folder and its lock), validation, checkpoints, logs and
 * curves, the limits (epochs, max_steps, max_minutes) and freeing. A program brings only its
 * arithmetic, as a TrainerProgram: how one step computes and applies the gradients, and how
 * a split is scored. It does not parse configs (train/config.h) or hold any model code.
 */
#ifndef NMT_TRAIN_TRAINER_H
#define NMT_TRAIN_TRAINER_H

#include <stdbool.h>
#include <stdio.h>

#include "model/parallel.h"
#include "nmt/metrics/scoring.h"
#include "train/adam.h"
#include "train/batching.h"
#include "train/config.h"
#include "train/dist.h"
#include "train/ema.h"

typedef struct Trainer Trainer;

/* A program on the loop: its name, its options and the arithmetic of its steps. */
typedef struct {
    const char *name; /* "train": the word that starts its messages, and its folders' record */
    /* writes last.ckpt with the optimiser state, takes --resume, saves on SIGINT/SIGTERM and
     * runs under MPI (make MPI=1); otherwise none of these */
    bool resumable;
    /* appended to [train] out_dir unless --set train.out_dir names the folder (NULL: none),
     * so that two programs given one config keep to folders of their own */
    const char *folder_suffix;
    void (*usage)(FILE *out);
    /* refuses settings the program does not implement, by name (NULL: it has them all) */
    int (*check_config)(const Config *cfg, Error *err);
    size_t own_size; /* its own state, tr->own: allocated (zeroed) and freed by the trainer */
    /* once the model and the training set exist: checks and allocates what the program's own
     * state holds, for batches of up to max_pairs pairs; resumed: the optimiser came with the
     * checkpoint (tr->adam) */
    int (*prepare)(Trainer *tr, int max_pairs, bool resumed, Error *err);
    /* forward, zero grad, backward on this rank's share of a batch (maybe empty under MPI):
     * the gradient of the mean loss into tr->nm.model.grads, the mean into *loss and its
     * target tokens into *n_tokens; dropout draws from the stream given */
    int (*gradients)(Trainer *tr, const Batch *batch, Rng *dropout, double *loss, long *n_tokens,
                     Error *err);
    /* with every rank's gradients summed: clips them and takes the Adam step at lr; a
     * non-finite loss, gradient norm or parameter returns trainer_diverged's error */
    int (*update)(Trainer *tr, double loss, double lr, Error *err);
    /* scores a split (dev at each validation, [data] test at the end) with nm's parameters;
     * what the program does not compute is NAN */
    int (*score)(const Trainer *tr, const NmtModel *nm, const Corpus *c, const TokenizedCorpus *tc,
                 const char *path, Scores *sc, Error *err);
    /* how it computes, for the opening lines: "float precision, 2 threads x 1 ranks" */
    void (*describe)(const Trainer *tr, char *buf, size_t size);
    void (*free_own)(Trainer *tr); /* frees what tr->own holds, also half-built by prepare */
} TrainerProgram;

struct Trainer {
    const TrainerProgram *program;
    const Config *cfg;
    const char *config_path; /* the CONFIG given, for the folder's record */
    Dist dist;               /* this rank among the processes training together (1 without MPI) */
    int signal;              /* the stop signal all ranks agreed on at the last step (0: none) */
    bool out_of_time;        /* all ranks agreed the time budget ([train] max_minutes) is spent */
    NmtModel nm;
    Adam adam; /* the engine's optimiser, saved in last.ckpt; unused by the reference */
    Ema ema;   /* the parameters' moving average; .avg NULL when [train] ema = 0 */
    TrainState state;
    Rng dropout_rng;
    Corpus train_corpus, dev_corpus, test_corpus; /* test: empty unless [data] test is set */
    TokenizedCorpus train_tokens, dev_tokens, test_tokens;
    Dataset train;
    BatchBuffer batches;
    size_t *share; /* the pairs of the current batch this rank computes (all in one process) */
    size_t epoch_batches; /* batches in the current epoch's plan */
    void *own;            /* the program's own state: its activations, its optimiser */
    FILE *log;
    char log_path[CONFIG_PATH_MAX + 32];
    char best_path[CONFIG_PATH_MAX + 16], last_path[CONFIG_PATH_MAX + 16];
    /* best.ckpt beside a checkpoint resumed from another folder: the best model until one of
     * this run's validations beats it (empty when resuming in out_dir itself) */
    char resumed_best[CONFIG_PATH_MAX + 16];
    /* the newest checkpoint known to be good: saved by this run or resumed from */
    char good_path[CONFIG_PATH_MAX + 16];
    uint64_t good_step;
    double start_time;
    int lock_fd;          /* OUT_DIR/.lock, locked while this run writes the folder; -1 before */
    bool overwrite;       /* --overwrite: a new run may replace the folder's checkpoints */
    ThreadChoice threads; /* how many threads the steps run on (parallel.h) */
};

/* The whole program: parses CONFIG, --set, --resume (resumable programs) and --help, then
 * sets up, trains and frees; returns the exit status (128 + the signal that stopped it). */
int trainer_main(int argc, char **argv, const TrainerProgram *program);

/* Stops training on a non-finite value: an error saying at which step, what was not finite
 * (`what`) and where (the first non-finite parameter, else gradient), and which checkpoint to
 * go back to. Returns -1. */
int trainer_diverged(const Trainer *tr, const char *what, Error *err);

#endif

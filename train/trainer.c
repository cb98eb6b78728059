/*
 * trainer.c: the one training loop (trainer.h), and the setup, validation, checkpoints and
 * folder around it. bin/train and bin/reference-train differ only in the TrainerProgram they
 * pass: the arithmetic of a step and of scoring.
 *
 * SIGINT/SIGTERM save a resumable checkpoint and exit (resumable programs); a second signal
 * exits at once, leaving the last checkpoint as it was. A non-finite loss, gradient or
 * parameter stops training with the step and tensor named, before anything non-finite is
 * saved; a failed save (full disk, unwritable folder) stops it too, the previous checkpoint
 * intact. The same seed and thread count reproduce the same losses bit for bit. Under MPI
 * (make MPI=1, train/dist.h) the ranks share each batch: rank 0 alone validates, logs, prints
 * and saves, and tells the others what it decided.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/files.h"
#include "base/usage.h"
#include "nmt/text.h"
#include "train/curves.h"
#include "train/new_model.h"
#include "train/trainer.h"

/* Set by the signal handler; read by the loop between steps. */
static volatile sig_atomic_t stop_signal = 0;

static void on_signal(int sig) {
    if (stop_signal) _exit(128 + sig); /* second signal: leave at once, touch nothing */
    stop_signal = sig;
}

static void format_duration(char *buf, size_t size, double seconds) {
    long s = seconds < 0 ? 0 : (long)(seconds + 0.5);
    if (s >= 3600)
        snprintf(buf, size, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(buf, size, "%ld:%02ld", s / 60, s % 60);
}

/* Writes into buf where the first non-finite value is: a parameter ("parameter out.w[12] =
 * inf"), else a gradient, else that there is none. */
static void describe_non_finite(const Model *m, char *buf, size_t size) {
    const real *blocks[2] = {m->params, m->grads};
    const char *names[2] = {"parameter", "gradient of"};
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < PARAM_COUNT; p++) {
            const ParamInfo *info = &m->table.info[p];
            for (size_t i = 0; i < info->size; i++) {
                real x = blocks[k][info->offset + i];
                if (!isfinite(x)) {
                    snprintf(buf, size, "%s %s[%zu] = %g", names[k], info->name, i, (double)x);
                    return;
                }
            }
        }
    snprintf(buf, size, "every parameter and gradient is finite");
}

/* Wall time spent in the training loop: this run's and that of the runs it resumes. */
static double seconds_trained(const Trainer *tr) {
    return tr->state.seconds + (monotonic_seconds() - tr->start_time);
}

static int save_last(Trainer *tr, Error *err) {
    TrainState *st = &tr->state;
    memcpy(st->dropout_rng, tr->dropout_rng.s, sizeof st->dropout_rng);
    st->adam_t = tr->adam.t, st->adam_m = tr->adam.m, st->adam_v = tr->adam.v;
    st->ema_updates = tr->ema.updates, st->ema = tr->ema.avg;
    TrainState saved = *st; /* st->seconds stays the time before this run */
    saved.seconds = seconds_trained(tr);
    if (checkpoint_save(tr->last_path, &tr->nm, &saved, err)) return -1;
    snprintf(tr->good_path, sizeof tr->good_path, "%s", tr->last_path);
    tr->good_step = tr->state.step;
    return 0;
}

/* Flushes the log; a full disk shows up here first, and is an error like a failed save. */
static int flush_log(Trainer *tr, Error *err) {
    errno = 0;
    if (fflush(tr->log) != 0 || ferror(tr->log))
        return error_set(err, "cannot write %s: %s", tr->log_path, strerror(errno ? errno : EIO));
    return 0;
}

/* Nothing is saved after a divergence, so no checkpoint holds the damage. */
int trainer_diverged(const Trainer *tr, const char *what, Error *err) {
    char where[256], good[CONFIG_PATH_MAX + 64];
    describe_non_finite(&tr->nm.model, where, sizeof where);
    if (tr->good_path[0])
        snprintf(good, sizeof good, "the last good checkpoint is %s (step %llu)", tr->good_path,
                 (unsigned long long)tr->good_step);
    else
        snprintf(good, sizeof good, "no checkpoint was saved yet");
    return error_set(err, "step %llu: %s (%s); training stopped, %s",
                     (unsigned long long)tr->state.step + 1, what, where, good);
}

/* Scores dev and, when it is the best so far, saves best.ckpt: both with the averaged
 * parameters when [train] ema is on (swapped in, then back out, bit for bit), so bin/translate
 * uses the average; last.ckpt keeps the raw parameters training goes on from. */
static int score_dev(Trainer *tr, Scores *sc, int *improved, Error *err) {
    real *params = tr->nm.model.params;
    ema_swap(&tr->ema, params);
    int rc = tr->program->score(tr, &tr->nm, &tr->dev_corpus, &tr->dev_tokens, tr->cfg->data.dev,
                                sc, err);
    if (rc) error_prefix(err, "validation: ");
    *improved = rc == 0 && sc->bleu.score > tr->state.best_bleu;
    if (*improved) rc = checkpoint_save(tr->best_path, &tr->nm, NULL, err);
    ema_swap(&tr->ema, params);
    return rc;
}

/* Scores dev, keeps the best model, adjusts the plateau schedule; sets *stop for early
 * stopping. */
static int validate(Trainer *tr, double train_loss, double tok_per_s, double lr, double padding,
                    int *stop, Error *err) {
    const Config *cfg = tr->cfg;
    Scores sc;
    int improved;
    if (score_dev(tr, &sc, &improved, err)) return -1;
    TrainState *st = &tr->state;
    if (improved) {
        st->best_bleu = sc.bleu.score;
        st->best_dev_loss = sc.loss;
        st->bad_validations = 0;
        st->plateau_bad = 0;
    } else {
        st->bad_validations++;
        if (cfg->optim.schedule == LR_SCHEDULE_PLATEAU &&
            ++st->plateau_bad >= cfg->optim.plateau_patience) {
            st->lr_scale *= cfg->optim.plateau_factor;
            st->plateau_bad = 0;
        }
    }
    char elapsed[32], loss[64] = "", log_loss[64] = "\t";
    format_duration(elapsed, sizeof elapsed, monotonic_seconds() - tr->start_time);
    if (isfinite(sc.loss)) { /* the reference scores by BLEU and chrF alone */
        snprintf(loss, sizeof loss, "  dev loss %.4f  ppl %.3f", sc.loss, sc.perplexity);
        snprintf(log_loss, sizeof log_loss, "%.6f\t%.6f", sc.loss, sc.perplexity);
    }
    if (isatty(STDERR_FILENO)) fprintf(stderr, "\r\033[K");
    /* the epoch of the step just taken: the last one's, when that step completed it */
    unsigned long long epoch = st->epoch + (st->batch_in_epoch == 0 && st->epoch > 0 ? 0 : 1);
    printf("step %llu  epoch %llu%s  BLEU %.2f  chrF %.2f  (best %.2f%s)  %s\n",
           (unsigned long long)st->step, epoch, loss, sc.bleu.score, sc.chrf.score, st->best_bleu,
           improved ? ", saved best.ckpt" : "", elapsed);
    fflush(stdout);
    fprintf(tr->log, "%llu\t%llu\t%.6f\t%.6g\t%s\t%.4f\t%.4f\t%.1f\t%.2f\t%.4f\n",
            (unsigned long long)st->step, epoch, train_loss, lr, log_loss, sc.bleu.score,
            sc.chrf.score, tok_per_s, monotonic_seconds() - tr->start_time, padding);
    if (flush_log(tr, err) || (tr->program->resumable && save_last(tr, err)) ||
        curves_update(tr->log_path, err))
        return -1;
    if (cfg->train.patience > 0 && st->bad_validations >= cfg->train.patience) {
        printf("early stop: dev BLEU has not improved for %d validations\n", cfg->train.patience);
        *stop = 1;
    }
    return 0;
}

/* A checkpoint to resume must be the model the config describes: the same [model] sizes,
 * the same lower-casing, and vocabularies no larger than [data] allows. Each mismatch is named
 * with both values, since either side may be the one to fix. */
static int check_resume_matches(const NmtModel *nm, const Config *cfg, const char *resume,
                                Error *err) {
    const ModelDims *d = &nm->model.dims;
    int stored_units = nm->lossless   ? SUBWORDS_LOSSLESS
                       : nm->subwords ? SUBWORDS_BPE
                                      : SUBWORDS_NONE;
    const struct {
        const char *key;
        int stored, configured;
    } sizes[] = {
        {"[model] emb_size", d->emb, cfg->model.emb_size},
        {"[model] enc_hidden", d->enc_hidden, cfg->model.enc_hidden},
        {"[model] bidirectional", d->bidirectional, cfg->model.bidirectional},
        {"[model] dec_hidden", d->dec_hidden, cfg->model.dec_hidden},
        {"[model] att_size", d->att, cfg->model.att_size},
        {"[model] readout_size", d->readout, cfg->model.readout_size},
        {"[model] score (0 additive, 1 dot, 2 general, 3 scaled_dot)", (int)d->score,
         (int)cfg->model.score},
        {"[model] tie_embeddings", d->tie_embeddings, cfg->model.tie_embeddings},
        {"[model] layer_norm", d->layer_norm, cfg->model.layer_norm},
        {"[data] lowercase", nm->lowercase, cfg->data.lowercase},
        {"[data] subwords (0 none, 1 bpe, 2 lossless)", stored_units, (int)cfg->data.subwords}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].stored != sizes[i].configured)
            return error_set(err, "cannot resume %s: it has %s = %d, the config %d", resume,
                             sizes[i].key, sizes[i].stored, sizes[i].configured);
    if (d->src_vocab > cfg->data.src_vocab_size || d->tgt_vocab > cfg->data.tgt_vocab_size)
        return error_set(err,
                         "cannot resume %s: its vocabularies have %d/%d tokens, more than "
                         "[data] src_vocab_size/tgt_vocab_size = %d/%d",
                         resume, d->src_vocab, d->tgt_vocab, cfg->data.src_vocab_size,
                         cfg->data.tgt_vocab_size);
    return 0;
}

/* The settings as config_print writes them, in a string to free(); with absolute paths when
 * absolute is set. */
static char *settings_text(const Config *cfg, bool absolute, size_t *len, Error *err) {
    Config *copy = checked_calloc(1, sizeof *copy, "the settings to record", err);
    if (!copy) return NULL;
    *copy = *cfg;
    char *text = NULL;
    FILE *out = NULL;
    if (absolute && config_absolute_paths(copy, err)) goto done;
    out = open_memstream(&text, len);
    if (!out) {
        error_set(err, "out of memory printing the settings");
        goto done;
    }
    config_print(copy, out);
    if (fclose(out) != 0) {
        free(text);
        text = NULL;
        error_set(err, "out of memory printing the settings");
    }
done:
    free(copy);
    return text;
}

/* Writes the resolved settings to path through a temporary file, so a full disk cannot leave
 * a truncated record of a run in place of a complete one. Its paths are absolute: relative
 * ones would be read against OUT_DIR, and `bin/train OUT_DIR/config.ini` must rerun the run. */
static int write_config(const Config *cfg, const char *path, Error *err) {
    size_t len;
    char *text = settings_text(cfg, true, &len, err);
    if (!text) return -1;
    OutputFile out;
    int rc = output_file_open(&out, path, false, err);
    if (rc == 0) {
        fwrite(text, 1, len, out.file);
        rc = output_file_commit(&out, err);
    }
    free(text);
    return rc;
}

/* ---- the folder: its lock and its record of who trains in it --------------------------- */

/* Claims dir for this run: a POSIX lock on dir/.lock, which holds the owner's process id. Two
 * writers of one folder (bin/train and bin/reference-train alike) would overwrite each other's
 * checkpoints and log, so a second is refused, naming the process that has the folder. The
 * lock goes with the process, so a killed run leaves no stale claim. The lock file is opened
 * without following a symbolic link, and must be a regular file of one name: writing the
 * process id must never truncate some other file. */
static int lock_folder(const char *dir, int *lock_fd, Error *err) {
    char path[CONFIG_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0666);
    if (fd < 0 && errno == ELOOP)
        return error_set(err, "%s is a symbolic link, not a lock file: remove it", path);
    if (fd < 0) return error_set(err, "cannot create %s: %s", path, strerror(errno));
    struct stat file;
    if (fstat(fd, &file) != 0 || !S_ISREG(file.st_mode) || file.st_nlink != 1) {
        close(fd);
        return error_set(err, "%s is not a lock file (a regular file of one name): remove it",
                         path);
    }
    struct flock lock = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fd, F_SETLK, &lock) != 0) {
        int saved = errno;
        struct flock holder = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        long pid = fcntl(fd, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK ? holder.l_pid : 0;
        close(fd);
        if (saved != EACCES && saved != EAGAIN)
            return error_set(err, "cannot lock %s: %s", path, strerror(saved));
        char who[64] = "another process";
        if (pid > 0) snprintf(who, sizeof who, "process %ld", pid);
        return error_set(err,
                         "%s is in use by another training (%s, see %s); wait for it to end, "
                         "or set another [train] out_dir",
                         dir, who, path);
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || write(fd, pid, (size_t)len) != len) {
        int saved = errno;
        close(fd);
        return error_set(err, "cannot write %s: %s", path, strerror(saved));
    }
    *lock_fd = fd;
    return 0;
}

/* The settings that make a folder's model, hashed: [data] but its dev and test splits, and
 * [model]. Other keys (the step budget, the seed, a test set) may change when a run resumes. */
static int model_settings_hash(const Config *cfg, uint64_t *hash, Error *err) {
    size_t len;
    char *text = settings_text(cfg, true, &len, err);
    if (!text) return -1;
    *hash = FNV1A_START;
    bool counts = false;
    char *rest;
    for (char *line = strtok_r(text, "\n", &rest); line; line = strtok_r(NULL, "\n", &rest)) {
        if (line[0] == '[') counts = strcmp(line, "[data]") == 0 || strcmp(line, "[model]") == 0;
        bool split = strncmp(line, "dev ", 4) == 0 || strncmp(line, "test ", 5) == 0 ||
                     strncmp(line, "# dev ", 6) == 0 || strncmp(line, "# test ", 7) == 0;
        if (counts && !split) *hash = fnv1a(*hash, line, strlen(line) + 1);
    }
    free(text);
    return 0;
}

/* OUT_DIR/trained-by: which program wrote the folder's checkpoints, from which settings. */
static void record_path(const Trainer *tr, char *path, size_t size) {
    snprintf(path, size, "%s/trained-by", tr->cfg->train.out_dir);
}

/* Refuses a folder whose checkpoints another program made, or, unless this run resumes a
 * checkpoint (check_resume_matches checks that model against the config), other settings: its
 * record says so. Training here would replace them. A folder with no record is taken as is. */
static int check_record(const Trainer *tr, uint64_t settings, bool resumed, Error *err) {
    char path[CONFIG_PATH_MAX + 16], line[CONFIG_PATH_MAX + 32];
    char program[sizeof line] = "", config[sizeof line] = "?";
    unsigned long long hash = 0;
    record_path(tr, path, sizeof path);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "program ", 8) == 0) snprintf(program, sizeof program, "%s", line + 8);
        if (strncmp(line, "config ", 7) == 0) snprintf(config, sizeof config, "%s", line + 7);
        if (strncmp(line, "settings ", 9) == 0) hash = strtoull(line + 9, NULL, 16);
    }
    fclose(f);
    const char *dir = tr->cfg->train.out_dir, *me = tr->program->name;
    if (strcmp(program, me) != 0)
        return error_set(err,
                         "%s holds the checkpoints of bin/%s (see %s): bin/%s does not replace "
                         "them; set another folder: --set train.out_dir=DIR",
                         dir, program[0] ? program : "another program", path, me);
    if (!resumed && hash != settings)
        return error_set(err,
                         "%s holds checkpoints trained from other [data] or [model] settings "
                         "(%s, see %s); set another folder (--set train.out_dir=DIR) or remove it",
                         dir, config, path);
    return 0;
}

static int write_record(const Trainer *tr, uint64_t settings, Error *err) {
    char path[CONFIG_PATH_MAX + 16];
    record_path(tr, path, sizeof path);
    OutputFile out;
    if (output_file_open(&out, path, false, err)) return -1;
    fprintf(out.file, "program %s\nconfig %s\nsettings %016llx\n", tr->program->name,
            tr->config_path, (unsigned long long)settings);
    return output_file_commit(&out, err);
}

/* A new run (not resumed) in a folder that holds a trained model would replace its best.ckpt
 * and last.ckpt at its first validation, however long that model took to train: refused unless
 * --overwrite says so. */
static int check_new_run(const Trainer *tr, bool resumed, Error *err) {
    if (resumed || tr->overwrite) return 0;
    const char *dir = tr->cfg->train.out_dir, *found = NULL;
    static const char *const kept[] = {"best.ckpt", "last.ckpt"};
    char path[CONFIG_PATH_MAX + 16];
    for (size_t k = 0; k < 2 && !found; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, kept[k]);
        if (access(path, F_OK) == 0) found = kept[k];
    }
    if (!found) return 0;
    return error_set(err,
                     "%s holds a trained model (%s): %s--overwrite trains a new one in its "
                     "place, or set another folder: --set train.out_dir=DIR",
                     dir, found, tr->program->resumable ? "--resume goes on with it, " : "");
}

/* Claims out_dir (rank 0 alone): its lock, then its record, which must name this program and
 * (unless resumed) these settings when the folder has one, and its checkpoints (check_new_run). */
static int claim_folder(Trainer *tr, bool resumed, Error *err) {
    uint64_t settings;
    if (tr->lock_fd < 0 && lock_folder(tr->cfg->train.out_dir, &tr->lock_fd, err)) return -1;
    return model_settings_hash(tr->cfg, &settings, err) ||
           check_record(tr, settings, resumed, err) || check_new_run(tr, resumed, err);
}

/* ---- setup ------------------------------------------------------------------------------- */

/* The moving average: taken over from the resumed checkpoint when it has one, started from the
 * current parameters otherwise; dropped when [train] ema = 0. */
static int setup_ema(Trainer *tr, const char *resume, Error *err) {
    TrainState *st = &tr->state;
    size_t n = tr->nm.model.table.total;
    double decay = tr->cfg->train.ema;
    if (decay > 0 && st->ema) {
        ema_adopt(&tr->ema, n, decay, st->ema, st->ema_updates);
        st->ema = NULL;
        return 0;
    }
    free(st->ema);
    st->ema = NULL;
    if (decay == 0) return 0;
    if (resume)
        printf("note: %s has no parameter average; [train] ema = %g starts one from its "
               "parameters\n",
               resume, decay);
    return ema_init(&tr->ema, n, decay, tr->nm.model.params, err);
}

/* The model, its training state and optimiser from a resumable checkpoint. */
static int resume_from(Trainer *tr, const char *resume, Error *err) {
    const Config *cfg = tr->cfg;
    TrainState *st = &tr->state;
    bool has_state;
    if (checkpoint_load(resume, &tr->nm, st, &has_state, err)) return -1;
    if (tr->nm.model.quant)
        return error_set(err,
                         "%s is an int8 checkpoint (written by bin/quantize): training "
                         "resumes only from the float checkpoint it was made from",
                         resume);
    if (!has_state)
        return error_set(err,
                         "%s has no optimiser state to resume from (it is a model "
                         "for translation only)",
                         resume);
    snprintf(tr->good_path, sizeof tr->good_path, "%s", resume);
    tr->good_step = st->step;
    if (path_beside(tr->resumed_best, sizeof tr->resumed_best, resume, "best.ckpt") ||
        strcmp(tr->resumed_best, tr->best_path) == 0)
        tr->resumed_best[0] = '\0';
    /* the optimiser takes over the moments the checkpoint brought */
    tr->adam = (Adam){.n = tr->nm.model.table.total,
                      .t = st->adam_t,
                      .beta1 = cfg->optim.beta1,
                      .beta2 = cfg->optim.beta2,
                      .eps = cfg->optim.eps,
                      .m = st->adam_m,
                      .v = st->adam_v};
    memcpy(tr->dropout_rng.s, st->dropout_rng, sizeof tr->dropout_rng.s);
    return 0;
}

/* The model to train: resumed, or new from the config; then its moving average. */
static int start_model(Trainer *tr, const char *resume, Error *err) {
    const Config *cfg = tr->cfg;
    tr->state = (TrainState){.lr_scale = 1, .best_bleu = -1, .best_dev_loss = INFINITY};
    rng_seed(&tr->dropout_rng, cfg->train.seed, 2);
    if (resume ? resume_from(tr, resume, err)
               : nmt_model_from_config(&tr->nm, cfg, &tr->train_tokens, cfg->train.seed, err))
        return -1;
    /* the moments and the average are the trainer's now, so a mismatch below frees them */
    return setup_ema(tr, resume, err) ||
           (resume && check_resume_matches(&tr->nm, cfg, resume, err));
}

/* The training pairs in the model's units, and dev and test read and checked now: a pair too
 * long to score would only fail at the first validation or at the end. */
static int read_splits(Trainer *tr, Error *err) {
    const ConfigData *cd = &tr->cfg->data;
    if (nmt_dataset(&tr->train, &tr->nm, &tr->train_tokens, &tr->train_corpus, cd->max_len, err))
        return -1;
    if (tr->train.count == 0)
        return error_set(err, "%s: no pair of at most max_len = %d tokens", cd->train, cd->max_len);
    if (cd->test[0] &&
        ((corpus_load(cd->test, tr->nm.lowercase, &tr->test_corpus, &tr->test_tokens, err) &&
          error_prefix(err, "[data] test: ")) ||
         score_check_lengths(&tr->nm, &tr->test_corpus, &tr->test_tokens, cd->test, err)))
        return -1;
    return score_check_lengths(&tr->nm, &tr->dev_corpus, &tr->dev_tokens, cd->dev, err);
}

/* The batches of the largest batch any epoch can produce (under batch_tokens: from the
 * data), and the program's own state for them. */
static int allocate_batches(Trainer *tr, bool resumed, Error *err) {
    int B = training_max_pairs(&tr->train, &tr->cfg->train);
    tr->share = checked_calloc((size_t)B, sizeof(size_t), "a batch's pair indices", err);
    tr->own = checked_calloc(1, tr->program->own_size, "the trainer's own state", err);
    if (!tr->share || !tr->own || tr->program->prepare(tr, B, resumed, err)) return -1;
    return batch_buffer_init(&tr->batches, B, tr->train.max_src, tr->train.max_tgt, err);
}

/* A resumed run's log without the rows past the checkpoint's step: a run stopped after its
 * last save (killed, or a save that failed) had logged steps that the resumed run logs again,
 * and the log would go back in steps, each of them twice. A log that is missing is left so. */
static int trim_log(const Trainer *tr, uint64_t step, Error *err) {
    FILE *in = fopen(tr->log_path, "rb");
    if (!in) return 0;
    OutputFile out;
    if (output_file_open(&out, tr->log_path, false, err)) {
        fclose(in);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    long len;
    bool past = false;
    while (!past && (len = read_line_with_end(in, &line, &cap)) >= 0) {
        char *end;
        unsigned long long row_step = strtoull(line, &end, 10);
        past = end != line && *end == '\t' && row_step > step;
        if (!past) fwrite(line, 1, (size_t)len, out.file);
    }
    int failed = ferror(in) || len == -3;
    free(line);
    fclose(in);
    if (failed) {
        output_file_abort(&out);
        return error_set(err, "cannot read %s", tr->log_path);
    }
    return output_file_commit(&out, err);
}

/* The folder's files, by rank 0: out_dir only now, when every input has been checked, so a
 * mistyped path or a bad value leaves no empty folder behind; then its record, config.ini and
 * the log (appended to when resuming). */
static int open_folder(Trainer *tr, bool resumed, Error *err) {
    const char *dir = tr->cfg->train.out_dir;
    uint64_t settings;
    if (make_dirs(dir, err) || claim_folder(tr, resumed, err) ||
        model_settings_hash(tr->cfg, &settings, err) || write_record(tr, settings, err))
        return -1;
    char cfg_path[CONFIG_PATH_MAX + 32];
    snprintf(tr->log_path, sizeof tr->log_path, "%s/train_log.tsv", dir);
    snprintf(cfg_path, sizeof cfg_path, "%s/config.ini", dir);
    if (write_config(tr->cfg, cfg_path, err) || (resumed && trim_log(tr, tr->state.step, err)))
        return -1;
    tr->log = fopen(tr->log_path, resumed ? "a" : "w");
    if (!tr->log) return error_set(err, "cannot write %s: %s", tr->log_path, strerror(errno));
    /* a new log starts with its header, also a resumed run's in a folder that has no log yet
     * (--resume=CHECKPOINT from another run's folder) */
    if (fseek(tr->log, 0, SEEK_END) == 0 && ftell(tr->log) == 0)
        fprintf(tr->log, "step\tepoch\tloss\tlr\tdev_loss\tdev_ppl\tdev_bleu\tdev_chrf\t"
                         "tok_per_s\telapsed_s\tpadding\n");
    return flush_log(tr, err);
}

/* What is trained on what, and how, at the start. */
static void print_opening(const Trainer *tr, const char *resume) {
    const Config *cfg = tr->cfg;
    const ModelDims *d = &tr->nm.model.dims;
    const TrainState *st = &tr->state;
    char how[128];
    tr->program->describe(tr, how, sizeof how);
    printf("train: %zu pairs from %s (%zu longer than max_len = %d skipped, %zu empty lines), "
           "dev: %zu pairs\n",
           tr->train.count, cfg->data.train, tr->train.skipped, cfg->data.max_len,
           tr->train_corpus.empty_lines, tr->dev_corpus.count);
    printf("model: Vs=%d Vt=%d E=%d H=%d%s D=%d A=%d O=%d%s%s, %zu parameters, %s\n", d->src_vocab,
           d->tgt_vocab, d->emb, d->enc_hidden, d->bidirectional ? " (bi)" : "", d->dec_hidden,
           d->att, d->readout, d->tie_embeddings ? " (tied)" : "",
           d->layer_norm ? " (layer-normalised GRUs)" : "", tr->nm.model.table.total, how);
    if (resume)
        printf("resuming from %s at step %llu (epoch %llu, batch %llu)\n", resume,
               (unsigned long long)st->step, (unsigned long long)st->epoch + 1,
               (unsigned long long)st->batch_in_epoch);
    fflush(stdout);
}

static int setup(Trainer *tr, const char *resume, Error *err) {
    const Config *cfg = tr->cfg;
    /* a folder that exists already is claimed before any work, so a second run is refused at
     * once; a new one is made (and claimed) by open_folder, once every input has been checked */
    struct stat folder;
    if (tr->dist.rank == 0 && stat(cfg->train.out_dir, &folder) == 0 && S_ISDIR(folder.st_mode) &&
        claim_folder(tr, resume != NULL, err))
        return -1;
    snprintf(tr->best_path, sizeof tr->best_path, "%s/best.ckpt", cfg->train.out_dir);
    snprintf(tr->last_path, sizeof tr->last_path, "%s/last.ckpt", cfg->train.out_dir);
    /* a file's error names the key that gave it (a config's folder may not be the user's) */
    if ((corpus_load(cfg->data.train, cfg->data.lowercase, &tr->train_corpus, &tr->train_tokens,
                     err) &&
         error_prefix(err, "[data] train: ")) ||
        (corpus_load(cfg->data.dev, cfg->data.lowercase, &tr->dev_corpus, &tr->dev_tokens, err) &&
         error_prefix(err, "[data] dev: ")) ||
        start_model(tr, resume, err) || read_splits(tr, err) ||
        allocate_batches(tr, resume != NULL, err))
        return -1;
    if (tr->dist.rank != 0) return 0; /* the files and the messages are rank 0's */
    if (open_folder(tr, resume != NULL, err)) return -1;
    print_opening(tr, resume);
    return 0;
}

static void trainer_free(Trainer *tr) {
    if (tr->log) fclose(tr->log);
    if (tr->lock_fd >= 0) close(tr->lock_fd); /* releases the folder */
    if (tr->own) tr->program->free_own(tr);
    free(tr->own);
    free(tr->share);
    batch_buffer_free(&tr->batches);
    dataset_free(&tr->train);
    tokenized_corpus_free(&tr->train_tokens);
    tokenized_corpus_free(&tr->dev_tokens);
    tokenized_corpus_free(&tr->test_tokens);
    corpus_free(&tr->train_corpus);
    corpus_free(&tr->dev_corpus);
    corpus_free(&tr->test_corpus);
    adam_free(&tr->adam);
    ema_free(&tr->ema);
    nmt_model_free(&tr->nm);
}

/* The best model's file at the end: out_dir's best.ckpt, or, when no validation of a run
 * resumed from another folder beat the best it brought, the best.ckpt beside what it resumed;
 * NULL when neither is there. */
static const char *best_model(const Trainer *tr) {
    if (access(tr->best_path, F_OK) == 0) return tr->best_path;
    if (tr->resumed_best[0] && access(tr->resumed_best, F_OK) == 0) return tr->resumed_best;
    return NULL;
}

/* Scores the best model (best_model's path) on [data] test, as bin/evaluate would (greedy);
 * the last model when there is no best one (path NULL). */
static int score_test(const Trainer *tr, const char *path, Error *err) {
    const Config *cfg = tr->cfg;
    if (!path) {
        printf("note: no best.ckpt in %s (no validation beat the resumed run's best) nor beside "
               "the checkpoint resumed: the test scores are the last model's\n",
               cfg->train.out_dir);
        path = tr->last_path;
    }
    NmtModel best;
    if (checkpoint_load(path, &best, NULL, NULL, err)) return -1;
    Scores sc;
    const ScoreOptions *options = &cfg->data.scores;
    int rc =
        tr->program->score(tr, &best, &tr->test_corpus, &tr->test_tokens, cfg->data.test, &sc, err);
    if (rc == 0) {
        char bleu[METRICS_LINE_MAX], perplexity[64] = "", how[64] = "";
        bleu_format(&sc.bleu, bleu, sizeof bleu);
        if (isfinite(sc.perplexity))
            snprintf(perplexity, sizeof perplexity, ", perplexity %.3f", sc.perplexity);
        if (options->tokenize != BLEU_TOKENIZE_13A || options->lowercase) /* not the default */
            snprintf(how, sizeof how, ", tok:%s, case:%s", bleu_tokenize_name(options->tokenize),
                     options->lowercase ? "lc" : "mixed");
        printf("test (%s, %zu pairs, %s model%s): %s, chrF2 %.2f%s\n", cfg->data.test, sc.sentences,
               path == tr->last_path ? "last" : "best", how, bleu, sc.chrf.score, perplexity);
    }
    nmt_model_free(&best);
    return rc;
}

/* How far training has come since it started and since the last validation. */
typedef struct {
    uint64_t total_steps, first_step, last_validated;
    double window_loss, window_start; /* summed token loss and start of the window */
    size_t window_tokens;             /* tokens since the last validation */
    double lr, tok_per_s;
    PaddingCount padding;    /* of the batches since the last validation */
    uint64_t expected_steps; /* for the ETA: total_steps, or an estimate under batch_tokens */
    int interactive;         /* a live progress line on a terminal, plain lines otherwise */
    int stop;                /* early stopping */
} Progress;

/* Whether [train] max_minutes of training have passed (never when it is 0). */
static bool time_is_up(const Trainer *tr) {
    double budget = tr->cfg->train.max_minutes;
    return budget > 0 && seconds_trained(tr) >= 60 * budget;
}

/* The share of the training budget spent: of epochs, max_steps or max_minutes, whichever is
 * further along (those set above 0). */
static double budget_used(const Trainer *tr) {
    const ConfigTrain *ct = &tr->cfg->train;
    const TrainState *st = &tr->state;
    double used = 0;
    if (ct->epochs > 0 && tr->epoch_batches > 0)
        used = (st->epoch + (double)st->batch_in_epoch / tr->epoch_batches) / ct->epochs;
    if (ct->max_steps > 0) used = fmax(used, (double)st->step / ct->max_steps);
    if (ct->max_minutes > 0) used = fmax(used, seconds_trained(tr) / (60 * ct->max_minutes));
    return used;
}

/* One optimiser step on one batch (the caller's next batch): the program's forward, zero
 * grad and backward, (MPI: the ranks' gradients summed), the learning rate, the program's clip
 * and Adam, and the loss into the log's window. */
static int train_step(Trainer *tr, const Batch *batch, Progress *p, double *loss, Error *err) {
    const TrainerProgram *program = tr->program;
    /* under MPI, batch is this rank's share (maybe empty) and the step is combined below */
    Rng rank_rng;
    Rng *dropout = dist_dropout_stream(&tr->dist, &tr->dropout_rng, &rank_rng);
    long n_tokens = 0;
    double start = monotonic_seconds();
    *loss = 0;
    if (program->gradients(tr, batch, dropout, loss, &n_tokens, err)) return -1;

    /* MPI: the gradients become the sum of the ranks' (the loss, tokens and stop reasons too);
     * alone, nothing changes */
    int stop[STOP_REASONS] = {[STOP_SIGNAL] = stop_signal, [STOP_TIME] = time_is_up(tr)};
    double used = budget_used(tr);
    if (dist_reduce_step(&tr->dist, tr->nm.model.grads, tr->nm.model.table.total, loss, &n_tokens,
                         stop, &used, err))
        return -1;
    tr->signal = stop[STOP_SIGNAL], tr->out_of_time = stop[STOP_TIME];

    p->lr = schedule_lr(&tr->cfg->optim, tr->state.step, tr->state.lr_scale, used);
    if (program->update(tr, *loss, p->lr, err)) return -1;
    tr->state.step++;

    p->window_loss += *loss * (double)n_tokens;
    p->window_tokens += (size_t)n_tokens;
    LoadSample load;
    load_sample(&load);
    omp_set_num_threads(
        thread_choice_step(&tr->threads, (double)n_tokens, load.wall - start, &load));
    return 0;
}

/* Seconds until training ends, by whichever limit comes first: the steps left at this run's
 * pace (the step limit, or the epochs' steps), or what is left of the time budget; INFINITY
 * when no limit gives an estimate yet. */
static double seconds_left(const Trainer *tr, const Progress *p, double t) {
    const TrainState *st = &tr->state;
    double left = INFINITY;
    if (p->expected_steps != UINT64_MAX && st->step > p->first_step)
        left = (t - tr->start_time) / (double)(st->step - p->first_step) *
               (double)(p->expected_steps > st->step ? p->expected_steps - st->step : 0);
    if (tr->cfg->train.max_minutes > 0)
        left = fmin(left, fmax(0, 60 * tr->cfg->train.max_minutes - seconds_trained(tr)));
    return left;
}

/* The live progress line (on a terminal) after a step: the step count with its total when one
 * is known ("~" when batch_tokens makes it an estimate), and the time to the nearest end. */
static void show_progress(const Trainer *tr, const Progress *p, double loss, double t) {
    const TrainState *st = &tr->state;
    char elapsed[32], eta[32] = "?", total[32] = "";
    format_duration(elapsed, sizeof elapsed, t - tr->start_time);
    double left = seconds_left(tr, p, t);
    if (isfinite(left)) format_duration(eta, sizeof eta, left);
    if (p->expected_steps != UINT64_MAX)
        snprintf(total, sizeof total, "/%s%llu", p->total_steps == p->expected_steps ? "" : "~",
                 (unsigned long long)p->expected_steps);
    fprintf(
        stderr,
        "\r\033[Kepoch %llu  step %llu%s  loss %.4f  lr %.2e  %.0f tok/s  pad %.1f%%  %s  ETA %s",
        (unsigned long long)st->epoch + 1, (unsigned long long)st->step, total, loss, p->lr,
        p->tok_per_s, 100 * padding_share(&p->padding), elapsed, eta);
}

/* Validates (rank 0) and starts a new window. Every rank takes rank 0's outcome, early stop
 * and plateau schedule, and checks that all ranks still hold the same parameters. */
static int validate_window(Trainer *tr, Progress *p, Error *err) {
    double mean = p->window_tokens ? p->window_loss / (double)p->window_tokens : 0;
    int rc = tr->dist.rank == 0 ? validate(tr, mean, p->tok_per_s, p->lr,
                                           padding_share(&p->padding), &p->stop, err)
                                : 0;
    TrainState *st = &tr->state;
    double shared[4] = {rc, p->stop, st->lr_scale, st->plateau_bad};
    bool same;
    if (dist_broadcast(&tr->dist, shared, 4, err)) return -1;
    if (shared[0] != 0)
        return rc ? rc : error_set(err, "rank 0 failed to validate or save (see its message)");
    p->stop = (int)shared[1], st->lr_scale = shared[2], st->plateau_bad = (int32_t)shared[3];
    if (dist_identical(&tr->dist, tr->nm.model.params, tr->nm.model.table.total, &same, err))
        return -1;
    if (!same)
        return error_set(err, "step %llu: the ranks' parameters differ",
                         (unsigned long long)st->step);
    p->last_validated = tr->state.step;
    p->window_loss = 0, p->window_tokens = 0, p->window_start = monotonic_seconds();
    p->padding = (PaddingCount){0};
    return 0;
}

/* After a step: the progress line, the log every log_every steps, validation every
 * valid_every steps. */
static int report_step(Trainer *tr, Progress *p, double loss, Error *err) {
    const ConfigTrain *ct = &tr->cfg->train;
    const TrainState *st = &tr->state;
    double t = monotonic_seconds();
    p->tok_per_s = p->window_tokens / fmax(t - p->window_start, 1e-9);
    if (p->interactive) show_progress(tr, p, loss, t);
    if (tr->log && st->step % (uint64_t)ct->log_every == 0) { /* rank 0's */
        double mean = p->window_loss / (double)p->window_tokens;
        if (!p->interactive) {
            printf("step %llu  epoch %llu  loss %.4f  lr %.3g  %.0f tok/s  pad %.1f%%\n",
                   (unsigned long long)st->step, (unsigned long long)st->epoch + 1, mean, p->lr,
                   p->tok_per_s, 100 * padding_share(&p->padding));
            fflush(stdout);
        }
        fprintf(tr->log, "%llu\t%llu\t%.6f\t%.6g\t\t\t\t\t%.1f\t%.2f\t%.4f\n",
                (unsigned long long)st->step, (unsigned long long)st->epoch + 1, mean, p->lr,
                p->tok_per_s, t - tr->start_time, padding_share(&p->padding));
        if (flush_log(tr, err)) return -1;
    }
    if (st->step % (uint64_t)ct->valid_every == 0) return validate_window(tr, p, err);
    return 0;
}

/* The rest of the current epoch, from batch_in_epoch on, until a stop (the step limit, a
 * signal, early stopping). */
static int run_epoch(Trainer *tr, Progress *p, Error *err) {
    TrainState *st = &tr->state;
    EpochPlan plan;
    if (training_plan(&plan, &tr->train, &tr->cfg->train, st->epoch, err)) return -1;
    tr->epoch_batches = plan.n_batches;
    /* resumed with other batches: their batch_in_epoch would skip pairs and repeat others */
    uint64_t fingerprint = epoch_plan_fingerprint(&plan, &tr->train);
    if (st->batch_in_epoch > 0 && st->batches_fingerprint != 0 &&
        st->batches_fingerprint != fingerprint) {
        if (tr->dist.rank == 0)
            printf("note: epoch %llu's batches differ from those it was saved in ([train] "
                   "batch_size, batch_tokens or seed, or the training data, changed): it starts "
                   "again from its first batch instead of going on from batch %llu\n",
                   (unsigned long long)st->epoch + 1, (unsigned long long)st->batch_in_epoch);
        st->batch_in_epoch = 0;
    }
    st->batches_fingerprint = fingerprint;
    int rc = 0;
    for (size_t b = st->batch_in_epoch; b < plan.n_batches && rc == 0; b++) {
        if (tr->dist.size == 1) /* alone, it need not wait for a step; a model needs one */
            tr->signal = stop_signal, tr->out_of_time = st->step > 0 && time_is_up(tr);
        if (p->stop || tr->signal || tr->out_of_time || st->step >= p->total_steps) break;
        size_t count = dist_share(&tr->dist, plan.order + plan.start[b],
                                  plan.start[b + 1] - plan.start[b], tr->share);
        const Batch *batch = batch_fill(&tr->batches, &tr->train, tr->share, (int)count);
        padding_add(&p->padding, batch); /* this rank's share: rank 0's is logged */
        double loss;
        rc = train_step(tr, batch, p, &loss, err);
        if (rc == 0) {
            ema_update(&tr->ema, tr->nm.model.params);
            st->batch_in_epoch = b + 1;
            rc = report_step(tr, p, loss, err);
        }
    }
    if (rc == 0 && st->batch_in_epoch >= plan.n_batches) {
        st->epoch++;
        st->batch_in_epoch = 0;
    }
    epoch_plan_free(&plan);
    return rc;
}

/* Whether every rank trains with the same resolved settings (config_print's text, hashed):
 * ranks started with different configs are stopped at the start, not after hours. */
static int same_settings(const Trainer *tr, bool *same, Error *err) {
    size_t len;
    char *text = settings_text(tr->cfg, false, &len, err);
    if (!text) return -1;
    uint64_t hash = fnv1a(FNV1A_START, text, len);
    free(text);
    /* four 16-bit pieces: exact in any real */
    real pieces[4];
    for (int k = 0; k < 4; k++) pieces[k] = (real)((hash >> (16 * k)) & 0xffff);
    return dist_identical(&tr->dist, pieces, 4, same, err);
}

static int train(Trainer *tr, Error *err) {
    const Config *cfg = tr->cfg;
    const ConfigTrain *ct = &cfg->train;
    TrainState *st = &tr->state;
    size_t per_epoch;
    bool exact;
    if (training_steps_per_epoch(&tr->train, ct, &per_epoch, &exact, err)) return -1;
    uint64_t planned = ct->epochs > 0 ? (uint64_t)ct->epochs * per_epoch : UINT64_MAX;
    /* the epoch count stops training too, so an estimate only feeds the ETA */
    Progress p = {.total_steps = exact ? planned : UINT64_MAX,
                  .expected_steps = planned,
                  .first_step = st->step,
                  .last_validated = st->step,
                  .interactive = isatty(STDERR_FILENO) && tr->dist.rank == 0};
    if (ct->max_steps > 0 && (uint64_t)ct->max_steps < p.total_steps) p.total_steps = ct->max_steps;
    if (ct->max_steps > 0 && (uint64_t)ct->max_steps < p.expected_steps)
        p.expected_steps = ct->max_steps;
    tr->start_time = p.window_start = monotonic_seconds();
    bool same;
    if (same_settings(tr, &same, err)) return -1;
    if (!same)
        return error_set(err, "the ranks were started with different settings (configs or --set)");
    if (dist_identical(&tr->dist, tr->nm.model.params, tr->nm.model.table.total, &same, err))
        return -1;
    if (!same) return error_set(err, "the ranks start from different parameters");
    LoadSample load;
    load_sample(&load);
    omp_set_num_threads(thread_choice_start(&tr->threads, &load));
    while (!p.stop && !tr->out_of_time && st->step < p.total_steps &&
           !(ct->epochs > 0 && st->epoch >= (uint64_t)ct->epochs)) {
        if (run_epoch(tr, &p, err)) return -1;
        if (tr->signal) {
            if (tr->dist.rank != 0) return 128 + tr->signal;
            if (p.interactive) fprintf(stderr, "\n");
            if (save_last(tr, err)) return -1;
            printf("interrupted by signal %d at step %llu: saved %s; continue with --resume\n",
                   tr->signal, (unsigned long long)st->step, tr->last_path);
            return 128 + tr->signal;
        }
    }
    if (!p.stop && st->step != p.last_validated && validate_window(tr, &p, err)) return -1;
    if (tr->dist.rank != 0) return 0;
    char elapsed[32];
    format_duration(elapsed, sizeof elapsed, monotonic_seconds() - tr->start_time);
    if (tr->out_of_time) printf("time budget of %g minutes spent\n", ct->max_minutes);
    const char *best = best_model(tr);
    printf("done: %llu steps in %s, best dev BLEU %.2f -> %s\n", (unsigned long long)st->step,
           elapsed, st->best_bleu, best ? best : "(no best.ckpt saved)");
    fflush(stdout);
    if (!cfg->data.test[0]) return 0;
    /* scoring writes nothing: a signal may end it at once, as it ends any program; one caught
     * before (during the last validation, whose checkpoints are saved) stops here */
    signal(SIGINT, SIG_DFL), signal(SIGTERM, SIG_DFL);
    if (stop_signal) {
        printf("interrupted by signal %d: the test set is not scored\n", (int)stop_signal);
        return 128 + stop_signal;
    }
    return score_test(tr, best, err);
}

/* The settings: CONFIG with the --set overrides, the program's own checks, and its own
 * folder (out_dir + the program's suffix) unless --set names one. */
static int load_settings(Config *cfg, const TrainerProgram *program, const char *path,
                         const char **overrides, int n_overrides, Error *err) {
    if (config_load(cfg, path, overrides, n_overrides, err) ||
        (program->check_config && program->check_config(cfg, err)))
        return -1;
    const char *suffix = program->folder_suffix;
    bool named = false;
    for (int i = 0; i < n_overrides; i++) named |= strncmp(overrides[i], "train.out_dir=", 14) == 0;
    if (!suffix || named) return 0;
    char *dir = cfg->train.out_dir;
    size_t len = strlen(dir), n = strlen(suffix);
    while (len > 1 && dir[len - 1] == '/') dir[--len] = '\0';
    if (len >= n && strcmp(dir + len - n, suffix) == 0) return 0; /* its own config.ini */
    if (len + n >= sizeof cfg->train.out_dir)
        return error_set(err, "[train] out_dir %s%s is too long", dir, suffix);
    memcpy(dir + len, suffix, n + 1);
    return 0;
}

/* A stop signal is noted for the loop to save and end at the next step. */
static void catch_signals(void) {
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int trainer_main(int argc, char **argv, const TrainerProgram *program) {
    const char *name = program->name, *resume = NULL;
    int want_resume = 0;
    const char **overrides = calloc((size_t)argc + 1, sizeof(char *));
    int n_overrides = 0;
    if (!overrides) {
        fprintf(stderr, "%s: out of memory\n", name);
        return 1;
    }
    static const struct option resumable[] = {{"set", required_argument, 0, 's'},
                                              {"resume", optional_argument, 0, 'r'},
                                              {"overwrite", no_argument, 0, 'o'},
                                              {"help", no_argument, 0, 'h'},
                                              {0, 0, 0, 0}};
    static const struct option plain[] = {{"set", required_argument, 0, 's'},
                                          {"overwrite", no_argument, 0, 'o'},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    bool overwrite = false;
    int c;
    opterr = 0; /* usage_getopt_error says what was wrong, in every program's words */
    while ((c = getopt_long(argc, argv, ":h", program->resumable ? resumable : plain, NULL)) !=
           -1) {
        switch (c) {
        case 's':
            overrides[n_overrides++] = optarg;
            break;
        case 'r':
            want_resume = 1, resume = optarg;
            if (resume && !resume[0]) {
                free(overrides);
                return usage_error(name, "--resume= names no checkpoint (--resume alone takes "
                                         "OUT_DIR/last.ckpt)");
            }
            break;
        case 'o':
            overwrite = true;
            break;
        case 'h':
            free(overrides);
            return usage_print(name, program->usage);
        default:
            free(overrides);
            return usage_getopt_error(name, argv, c, program->resumable ? resumable : plain);
        }
    }
    if (optind != argc - 1) {
        char quoted[96];
        free(overrides);
        return usage_error(
            name, optind < argc ? "expected one CONFIG, got extra '%s'" : "missing CONFIG%s",
            optind < argc ? text_for_message(quoted, sizeof quoted, argv[optind + 1], 60) : "");
    }
    Config cfg;
    Error err;
    Trainer tr = {.program = program,
                  .cfg = &cfg,
                  .config_path = argv[optind],
                  .dist = {.rank = 0, .size = 1},
                  .lock_fd = -1,
                  .overwrite = overwrite};
    if ((program->resumable && dist_init(&tr.dist, &argc, &argv, &err)) ||
        load_settings(&cfg, program, argv[optind], overrides, n_overrides, &err)) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        free(overrides);
        dist_finalize(&tr.dist, true);
        return 1;
    }
    free(overrides);
    if (cfg.train.threads > 0) omp_set_num_threads(cfg.train.threads);
    LoadSample load;
    load_sample(&load);
    thread_choice_init(&tr.threads, omp_get_max_threads(), &load);
    char default_resume[CONFIG_PATH_MAX + 16];
    if (want_resume && !resume) {
        snprintf(default_resume, sizeof default_resume, "%s/last.ckpt", cfg.train.out_dir);
        resume = default_resume;
    }
    if (program->resumable) catch_signals();

    int rc = setup(&tr, resume, &err);
    if (rc == 0) rc = train(&tr, &err);
    if (rc < 0) {
        if (isatty(STDERR_FILENO)) fprintf(stderr, "\r\033[K"); /* clear the progress line */
        if (tr.dist.size > 1)
            fprintf(stderr, "%s: rank %d of %d: %s\n", name, tr.dist.rank, tr.dist.size, err.msg);
        else
            fprintf(stderr, "%s: %s\n", name, err.msg);
    }
    trainer_free(&tr);
    dist_finalize(&tr.dist, rc < 0);
    return rc < 0 ? 1 : rc;
}

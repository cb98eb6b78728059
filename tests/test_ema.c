/*
 * test_ema.c: the parameters' moving average ([train] ema): its arithmetic and warm-up on a
 * hand example, the checkpoint's average section (round trip, files without it, damage), and
 * whole runs of bin/train: interrupted and resumed gives the same parameters, average and
 * losses as uninterrupted (with token batches, resumed mid-epoch); the average never changes
 * training itself; best.ckpt holds the average; ema = 0 saves no average.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/harness.h"
#include "tests/suites.h"
#include "nmt/formats/checkpoint.h"
#include "train/adam.h"
#include "train/ema.h"
#include "train/new_model.h"

START_TEST(ema_math_by_hand) {
    real p[3] = {1, 2, 3};
    Ema ema;
    Error err;
    ck_assert(ema_init(&ema, 3, 0.5, p, &err) == 0);
    ck_assert(memcmp(ema.avg, p, sizeof p) == 0); /* starts at the parameters */
    /* warm-up d_t = min(d, (1 + t) / (10 + t)): 0.1 at t = 0, d = 0.5 from t = 8 on */
    ck_assert_double_eq_tol(ema_rate(&ema), 0.1, 1e-15);
    /* t = 0: avg = 0.1 * {1, 2, 3} + 0.9 * {2, 2, 0} = {1.9, 2, 0.3} */
    const real p1[3] = {2, 2, 0};
    ema_update(&ema, p1);
    ck_assert_double_eq_tol(ema.avg[0], 1.9, 1e-6);
    ck_assert_double_eq_tol(ema.avg[1], 2.0, 1e-6);
    ck_assert_double_eq_tol(ema.avg[2], 0.3, 1e-6);
    /* t = 1: d = 2/11, avg = 2/11 * avg + 9/11 * {0, 4, 1} */
    ck_assert_double_eq_tol(ema_rate(&ema), 2.0 / 11, 1e-15);
    const real p2[3] = {0, 4, 1};
    ema_update(&ema, p2);
    double d = 2.0 / 11;
    ck_assert_double_eq_tol(ema.avg[0], d * 1.9, 1e-6);
    ck_assert_double_eq_tol(ema.avg[1], d * 2 + (1 - d) * 4, 1e-6);
    ck_assert_double_eq_tol(ema.avg[2], d * 0.3 + (1 - d) * 1, 1e-6);
    ck_assert_uint_eq(ema.updates, 2);
    /* warmed up: the configured decay; a constant input is a fixed point */
    ema.updates = 8;
    ck_assert_double_eq_tol(ema_rate(&ema), 0.5, 1e-15);
    ema.updates = 1000000;
    ck_assert_double_eq_tol(ema_rate(&ema), 0.5, 1e-15);
    real before[3];
    memcpy(before, ema.avg, sizeof before);
    ema_update(&ema, p2);
    for (int i = 0; i < 3; i++)
        ck_assert_double_eq_tol(ema.avg[i], 0.5 * before[i] + 0.5 * p2[i], 1e-6);
    /* swapping twice restores both exactly */
    real q[3] = {7, 8, 9}, avg[3];
    memcpy(avg, ema.avg, sizeof avg);
    ema_swap(&ema, q);
    ck_assert(memcmp(q, avg, sizeof q) == 0);
    ck_assert(ema.avg[0] == 7 && ema.avg[1] == 8 && ema.avg[2] == 9);
    ema_swap(&ema, q);
    ck_assert(memcmp(ema.avg, avg, sizeof avg) == 0);
    ck_assert(q[0] == 7 && q[1] == 8 && q[2] == 9);
    ema_free(&ema);
    /* off (no average): updating and swapping leave the parameters alone */
    Ema off = {0};
    real r[3] = {1, 2, 3};
    ema_update(&off, r);
    ema_swap(&off, r);
    ck_assert(r[0] == 1 && r[1] == 2 && r[2] == 3 && off.avg == NULL);
}
END_TEST

/* Trains ../configs/tiny.ini in OUT with extra settings; returns the exit status. */
static int train_tiny(const char *out, const char *extra) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "../bin/train ../configs/tiny.ini --set train.out_dir=%s --set train.threads=2 "
             "--set train.valid_every=10 --set train.log_every=5 %s >/dev/null 2>%s.err",
             out, extra, out);
    int status = system(cmd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

typedef struct {
    NmtModel nm;
    TrainState st;
    bool has_state;
} Loaded;

static void load(Loaded *l, const char *dir, const char *name) {
    char path[256];
    Error err;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    memset(&l->st, 0, sizeof l->st);
    ck_assert_msg(checkpoint_load(path, &l->nm, &l->st, &l->has_state, &err) == 0, "%s", err.msg);
}

static void unload(Loaded *l) {
    free(l->st.adam_m), free(l->st.adam_v), free(l->st.ema);
    nmt_model_free(&l->nm);
}

static bool same_reals(const real *a, const real *b, size_t n) {
    return memcmp(a, b, sizeof(real) * n) == 0;
}

static void losses_of(const char *dir, char *out, size_t size) {
    char path[256];
    snprintf(path, sizeof path, "%s/train_log.tsv", dir);
    log_column(path, 2, out, size);
}

START_TEST(ema_resumes_exactly) {
    /* 40 steps in one go, and 20 + 20 with --resume (mid-epoch, with token batches), give the
     * same raw parameters, average, losses and best model bit for bit */
    char dir[64] = "/tmp/nmt-ema-XXXXXX", a[128], b[128], whole[4096], split[4096];
    ck_assert(mkdtemp(dir) != NULL);
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    const char *common = "--set train.ema=0.95 --set train.batch_tokens=60";
    char extra[256];
    snprintf(extra, sizeof extra, "%s --set train.max_steps=40", common);
    ck_assert_int_eq(train_tiny(a, extra), 0);
    snprintf(extra, sizeof extra, "%s --set train.max_steps=20", common);
    ck_assert_int_eq(train_tiny(b, extra), 0);
    snprintf(extra, sizeof extra, "%s --set train.max_steps=40 --resume", common);
    ck_assert_int_eq(train_tiny(b, extra), 0);

    Loaded la, lb;
    load(&la, a, "last.ckpt");
    load(&lb, b, "last.ckpt");
    size_t n = la.nm.model.table.total;
    ck_assert(la.has_state && lb.has_state);
    ck_assert_uint_eq(la.st.step, 40);
    ck_assert_uint_eq(lb.st.step, 40);
    ck_assert_uint_eq(la.st.epoch, 0); /* still in the first epoch: resumed at a batch */
    ck_assert(la.st.ema && lb.st.ema);
    ck_assert_uint_eq(la.st.ema_updates, 40);
    ck_assert_uint_eq(lb.st.ema_updates, 40);
    ck_assert(same_reals(la.nm.model.params, lb.nm.model.params, n));
    ck_assert(same_reals(la.st.ema, lb.st.ema, n));
    ck_assert(same_reals(la.st.adam_m, lb.st.adam_m, n));
    /* the average is not the parameters */
    ck_assert(!same_reals(la.nm.model.params, la.st.ema, n));
    losses_of(a, whole, sizeof whole);
    losses_of(b, split, sizeof split);
    ck_assert_str_eq(whole, split);
    ck_assert(strlen(whole) > 40);
    Loaded ba, bb;
    load(&ba, a, "best.ckpt");
    load(&bb, b, "best.ckpt");
    ck_assert(!ba.has_state && !bb.has_state);
    ck_assert(same_reals(ba.nm.model.params, bb.nm.model.params, n));
    unload(&ba), unload(&bb), unload(&la), unload(&lb);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
}
END_TEST

START_TEST(ema_leaves_training_alone_and_fills_best) {
    /* with and without an average: the same losses and raw parameters (the average is only
     * read); best.ckpt of a run validated once, at its last step, is that step's average;
     * ema = 0 saves no average */
    char dir[64] = "/tmp/nmt-ema-XXXXXX", on[128], off[128], with[4096], without[4096];
    ck_assert(mkdtemp(dir) != NULL);
    snprintf(on, sizeof on, "%s/on", dir);
    snprintf(off, sizeof off, "%s/off", dir);
    const char *common = "--set train.max_steps=30 --set train.valid_every=30";
    char extra[256];
    snprintf(extra, sizeof extra, "%s --set train.ema=0.9", common);
    ck_assert_int_eq(train_tiny(on, extra), 0);
    ck_assert_int_eq(train_tiny(off, common), 0);
    losses_of(on, with, sizeof with);
    losses_of(off, without, sizeof without);
    ck_assert_str_eq(with, without);
    Loaded lon, loff, best;
    load(&lon, on, "last.ckpt");
    load(&loff, off, "last.ckpt");
    load(&best, on, "best.ckpt");
    size_t n = lon.nm.model.table.total;
    ck_assert(same_reals(lon.nm.model.params, loff.nm.model.params, n));
    ck_assert(lon.st.ema != NULL && loff.st.ema == NULL);
    ck_assert(same_reals(best.nm.model.params, lon.st.ema, n));
    unload(&lon), unload(&loff), unload(&best);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
}
END_TEST

/* Runs a shell command that must succeed and returns its output (stdout and stderr). */
static void run_ok(const char *cmd, const char *out_path, char *text, size_t size) {
    char full[2048];
    snprintf(full, sizeof full, "%s >%s 2>&1", cmd, out_path);
    int status = system(full);
    FILE *f = fopen(out_path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(text, 1, size - 1, f);
    text[n] = 0;
    fclose(f);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: %s", cmd, text);
}

/* Trains configs/tiny.ini with the given --set options into DIR/run, DIR a fresh folder under
 * /tmp (dir has room for 64 bytes, out for 128), and returns its output in text. */
static void train_in_scratch(const char *settings, char *dir, char *out, char *text, size_t size) {
    char cmd[1024], out_file[160];
    snprintf(dir, 64, "/tmp/nmt-train-XXXXXX");
    ck_assert(mkdtemp(dir) != NULL);
    snprintf(out, 128, "%s/run", dir);
    snprintf(out_file, sizeof out_file, "%s.out", out);
    snprintf(cmd, sizeof cmd, "../bin/train ../configs/tiny.ini --set train.out_dir=%s %s", out,
             settings);
    run_ok(cmd, out_file, text, size);
}

/* The learning rate logged at each step of OUT/train_log.tsv into lr_at[step] and its epoch
 * into epoch_of[step] (unless NULL), for steps 1..max_step; returns the last step logged. */
static unsigned read_logged_lr(const char *out, double *lr_at, unsigned *epoch_of,
                               unsigned max_step) {
    char log_path[160], line[512];
    snprintf(log_path, sizeof log_path, "%s/train_log.tsv", out);
    FILE *f = fopen(log_path, "r");
    ck_assert_ptr_nonnull(f);
    unsigned last = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned step, epoch;
        double loss, lr;
        if (sscanf(line, "%u\t%u\t%lf\t%lf", &step, &epoch, &loss, &lr) == 4 && step > 0 &&
            step <= max_step) {
            lr_at[step] = lr, last = step > last ? step : last;
            if (epoch_of) epoch_of[step] = epoch;
        }
    }
    fclose(f);
    return last;
}

START_TEST(time_budget_stops_and_validates) {
    /* [train] max_minutes alone (no epoch limit) ends training after its time, then validates
     * (the only validation of this run) and saves best.ckpt, as the end of the epochs does */
    char dir[64], out[128], cmd[1024], text[4096];
    train_in_scratch("--set train.epochs=0 --set train.max_minutes=0.005 "
                     "--set train.valid_every=1000000",
                     dir, out, text, sizeof text);
    ck_assert_msg(strstr(text, "time budget of 0.005 minutes spent") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "dev loss") != NULL, "no validation: %s", text);
    Loaded best, last;
    load(&best, out, "best.ckpt");
    load(&last, out, "last.ckpt");
    ck_assert(last.has_state && last.st.step > 0);
    unload(&best), unload(&last);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
}
END_TEST

START_TEST(budget_schedule_and_resumed_time) {
    /* schedule = budget over max_steps = 40, decaying over the last half: the logged rate is
     * lr until step 20, then falls linearly (its value at step s is the one step s used, from
     * the share (s - 1) / 40 spent). The time trained is saved, and a resumed run counts it
     * against its time budget: with that budget already spent it stops before any step. */
    char dir[64], out[128], cmd[1024], text[4096];
    train_in_scratch("--set train.epochs=0 --set train.max_steps=40 --set train.log_every=10 "
                     "--set optim.schedule=budget --set optim.decay_share=0.5 --set optim.min_lr=0 "
                     "--set optim.lr=0.01",
                     dir, out, text, sizeof text);
    char out_file[160];
    snprintf(out_file, sizeof out_file, "%s.out", out);
    double lr_at[41] = {0};
    read_logged_lr(out, lr_at, NULL, 40);
    ck_assert_double_eq_tol(lr_at[10], 0.01, 1e-9);
    ck_assert_double_eq_tol(lr_at[20], 0.01, 1e-9);                     /* 19/40 spent */
    ck_assert_double_eq_tol(lr_at[30], 0.01 * (11.0 / 40) / 0.5, 1e-7); /* 29/40 */
    ck_assert_double_eq_tol(lr_at[40], 0.01 * (1.0 / 40) / 0.5, 1e-7);  /* 39/40 */

    Loaded last;
    load(&last, out, "last.ckpt");
    ck_assert(last.has_state && last.st.step == 40);
    double seconds = last.st.seconds;
    ck_assert_msg(seconds > 0 && seconds < 600, "%g", seconds);
    unload(&last);
    snprintf(cmd, sizeof cmd,
             "../bin/train ../configs/tiny.ini --resume --set train.out_dir=%s --set "
             "train.epochs=0 --set train.max_steps=1000 --set train.max_minutes=%.9g",
             out, seconds / 60 / 2);
    run_ok(cmd, out_file, text, sizeof text);
    ck_assert_msg(strstr(text, "minutes spent") != NULL, "%s", text);
    load(&last, out, "last.ckpt");
    ck_assert_uint_eq(last.st.step, 40);
    unload(&last);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
}
END_TEST

START_TEST(budget_schedule_over_epochs) {
    /* schedule = budget with epochs = 2 the only limit: the first epoch at the full rate, then
     * down linearly over the second (decay_share 0.5), batch by batch: batch b of its nb takes
     * lr (1 - b / nb). */
    char dir[64], out[128], cmd[1024], text[4096];
    train_in_scratch(
        "--set train.epochs=2 --set data.train=../data/toy/dev.tsv --set train.log_every=1 "
        "--set train.valid_every=1000000 --set optim.schedule=budget "
        "--set optim.decay_share=0.5 --set optim.min_lr=0 --set optim.lr=0.01",
        dir, out, text, sizeof text);
    enum { MAX_STEPS = 1000 };
    static double lr_at[MAX_STEPS + 1];
    unsigned epoch_of[MAX_STEPS + 1] = {0}, nb = 0;
    unsigned last = read_logged_lr(out, lr_at, epoch_of, MAX_STEPS);
    for (unsigned s = 1; s <= last; s++)
        if (epoch_of[s] == 1) nb = s;
    ck_assert_msg(nb > 10 && last == 2 * nb, "%u steps, %u in the first epoch", last, nb);
    for (unsigned s = 1; s <= last; s++) {
        double expected = s <= nb ? 0.01 : 0.01 * (1 - (double)(s - nb - 1) / nb);
        ck_assert_msg(fabs(lr_at[s] - expected) <= 1e-6 * 0.01, "step %u (epoch %u): lr %g, not %g",
                      s, epoch_of[s], lr_at[s], expected);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
}
END_TEST

/* Writes data[0..n) with a fresh checksum appended to path. */
static void write_with_checksum(const char *path, const unsigned char *data, size_t n) {
    uint64_t sum = checkpoint_checksum(data, n);
    FILE *f = fopen(path, "wb");
    ck_assert(f && fwrite(data, 1, n, f) == n && fwrite(&sum, 1, 8, f) == 8);
    ck_assert(fclose(f) == 0);
}

/* Writes the checkpoint data[0..size) to path with its flags set to `flags` (and the checksum
 * recomputed). */
static void write_with_flags(const char *path, unsigned char *data, size_t size, uint32_t flags) {
    memcpy(data + AT_FLAGS, &flags, 4);
    write_with_checksum(path, data, size - 8);
}

/* Writes the checkpoint data[0..size) to path as a program that predates a field wrote it:
 * the n bytes at `at` left out and the flags set to `flags`. */
static void write_without_field(const char *path, const unsigned char *data, size_t size, size_t at,
                                size_t n, uint32_t flags) {
    unsigned char *old = malloc(size);
    ck_assert_ptr_nonnull(old);
    memcpy(old, data, at);
    memcpy(old + at, data + at + n, size - at - n);
    write_with_flags(path, old, size - n, flags);
    free(old);
}

static void expect_refused(const char *path, const char *fragment) {
    NmtModel nm;
    TrainState st;
    bool has_state;
    Error err;
    ck_assert_msg(checkpoint_load(path, &nm, &st, &has_state, &err) == -1, "%s loaded", path);
    ck_assert_msg(strstr(err.msg, fragment) != NULL, "'%s' lacks '%s'", err.msg, fragment);
}

/* A tiny model and a training state with zero moments, for the checkpoint tests; dir is a
 * fresh folder for their files. */
typedef struct {
    char dir[64];
    Config cfg;
    Corpus corpus;
    TokenizedCorpus tokens;
    NmtModel nm;
    size_t n; /* parameters */
    TrainState st;
} StateFixture;

static void state_fixture_make(StateFixture *f, const char *dir_template) {
    snprintf(f->dir, sizeof f->dir, "%s", dir_template);
    ck_assert(mkdtemp(f->dir) != NULL);
    Error err;
    ck_assert(config_load(&f->cfg, "../configs/tiny.ini", NULL, 0, &err) == 0);
    ck_assert(corpus_load(f->cfg.data.dev, true, &f->corpus, &f->tokens, &err) == 0);
    ck_assert(nmt_model_from_config(&f->nm, &f->cfg, &f->tokens, 11, &err) == 0);
    f->n = f->nm.model.table.total;
    f->st = (TrainState){.step = 3,
                         .lr_scale = 1,
                         .best_bleu = -1,
                         .best_dev_loss = 1,
                         .dropout_rng = {1, 2, 3, 4},
                         .adam_t = 3,
                         .adam_m = calloc(f->n, sizeof(real)),
                         .adam_v = calloc(f->n, sizeof(real))};
    ck_assert(f->st.adam_m && f->st.adam_v);
}

/* f->dir/name, in path[size]. */
static void state_fixture_path(const StateFixture *f, const char *name, char *path, size_t size) {
    snprintf(path, size, "%s/%s", f->dir, name);
}

static void state_fixture_free(StateFixture *f) {
    free(f->st.adam_m), free(f->st.adam_v);
    nmt_model_free(&f->nm);
    tokenized_corpus_free(&f->tokens);
    corpus_free(&f->corpus);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    ck_assert(system(cmd) == 0);
}

START_TEST(ema_checkpoint_section) {
    /* a model saved with and without an average: both load; the average comes back exactly;
     * the two files differ only by it and its flag; damage is refused */
    StateFixture f;
    state_fixture_make(&f, "/tmp/nmt-ema-XXXXXX");
    char plain[128], avg_path[128], bad[128];
    state_fixture_path(&f, "plain.ckpt", plain, sizeof plain);
    state_fixture_path(&f, "avg.ckpt", avg_path, sizeof avg_path);
    state_fixture_path(&f, "bad.ckpt", bad, sizeof bad);
    const char *dir = f.dir;
    size_t n = f.n;
    real *avg = calloc(n, sizeof(real));
    ck_assert_ptr_nonnull(avg);
    for (size_t i = 0; i < n; i++) avg[i] = f.nm.model.params[i] * 0.5f + 0.25f;
    Error err;
    ck_assert(checkpoint_save(plain, &f.nm, &f.st, &err) == 0);
    f.st.ema = avg, f.st.ema_updates = 17;
    ck_assert(checkpoint_save(avg_path, &f.nm, &f.st, &err) == 0);

    size_t n_plain, n_avg;
    unsigned char *data_plain = slurp_file(plain, &n_plain),
                  *data_avg = slurp_file(avg_path, &n_avg);
    uint32_t flags;
    memcpy(&flags, data_plain + AT_FLAGS, 4);
    /* batches' fingerprint, training time, training state, lowercase */
    ck_assert_uint_eq(flags, 32 | 16 | 2 | 1);
    memcpy(&flags, data_avg + AT_FLAGS, 4);
    ck_assert_uint_eq(flags, 32 | 16 | 8 | 2 | 1); /* bit 3: the average */
    ck_assert_uint_eq(n_avg, n_plain + 8 + sizeof(real) * n);
    /* the two files agree up to the average, flags aside */
    ck_assert(memcmp(data_plain + AT_RESERVED, data_avg + AT_RESERVED, n_plain - 8 - AT_RESERVED) ==
              0);

    Loaded l;
    load(&l, dir, "avg.ckpt");
    ck_assert(l.has_state && l.st.ema && l.st.ema_updates == 17);
    ck_assert(same_reals(l.st.ema, avg, n));
    unload(&l);
    load(&l, dir, "plain.ckpt");
    ck_assert(l.has_state && l.st.ema == NULL && l.st.ema_updates == 0);
    unload(&l);
    NmtModel only; /* for translation: the state, average included, is skipped */
    ck_assert(checkpoint_load(avg_path, &only, NULL, NULL, &err) == 0);
    ck_assert(same_reals(only.model.params, f.nm.model.params, n));
    nmt_model_free(&only);

    /* the average cut short (checksum recomputed, so the parser must notice) */
    write_with_checksum(bad, data_avg, n_avg - 8 - 4);
    expect_refused(bad, "truncated parameter average");
    /* an average flagged without a training state */
    write_with_flags(bad, data_plain, n_plain, 16 | 8 | 1);
    expect_refused(bad, "without a training state");
    /* a non-finite average */
    memcpy(data_avg + n_avg - 8 - sizeof(real), &(real){NAN}, sizeof(real));
    write_with_checksum(bad, data_avg, n_avg - 8);
    expect_refused(bad, "averaged parameter");

    free(data_plain), free(data_avg), free(avg);
    state_fixture_free(&f);
}
END_TEST

START_TEST(time_and_batches_in_checkpoint) {
    /* the time trained (flag bit 4) and the fingerprint of the epoch's batches (bit 5) come
     * back exactly; files from before them load with none (0: unknown); a damaged time, and
     * either flagged without a training state, are refused */
    StateFixture f;
    state_fixture_make(&f, "/tmp/nmt-seconds-XXXXXX");
    char path[128], bad[128];
    state_fixture_path(&f, "run.ckpt", path, sizeof path);
    state_fixture_path(&f, "bad.ckpt", bad, sizeof bad);
    const char *dir = f.dir;
    f.st.seconds = 754.25;
    f.st.batches_fingerprint = 0x0123456789abcdefull;
    Error err;
    ck_assert(checkpoint_save(path, &f.nm, &f.st, &err) == 0);
    Loaded l;
    load(&l, dir, "run.ckpt");
    ck_assert(l.has_state);
    ck_assert_double_eq(l.st.seconds, 754.25);
    ck_assert_uint_eq(l.st.batches_fingerprint, 0x0123456789abcdefull);
    unload(&l);

    size_t size;
    unsigned char *data = slurp_file(path, &size);
    /* the time, then the fingerprint, right before the two moments, which end the file before
     * its checksum */
    size_t fingerprint_at = size - 8 - 2 * sizeof(real) * f.n - 8, at = fingerprint_at - 8;
    double stored;
    memcpy(&stored, data + at, 8);
    ck_assert_double_eq(stored, 754.25);
    uint64_t stored_fingerprint;
    memcpy(&stored_fingerprint, data + fingerprint_at, 8);
    ck_assert_uint_eq(stored_fingerprint, 0x0123456789abcdefull);
    /* as written before the time and the fingerprint were kept: no bits 4 and 5, no 16 bytes */
    write_without_field(bad, data, size, at, 16, 2 | 1);
    load(&l, dir, "bad.ckpt");
    ck_assert(l.has_state && l.st.step == 3);
    ck_assert_double_eq(l.st.seconds, 0);
    ck_assert_uint_eq(l.st.batches_fingerprint, 0);
    unload(&l);
    /* as written before the fingerprint alone: the time still read */
    write_without_field(bad, data, size, fingerprint_at, 8, 16 | 2 | 1);
    load(&l, dir, "bad.ckpt");
    ck_assert_double_eq(l.st.seconds, 754.25);
    ck_assert_uint_eq(l.st.batches_fingerprint, 0);
    unload(&l);
    /* a negative and a non-finite time */
    memcpy(data + at, &(double){-1}, 8);
    write_with_checksum(bad, data, size - 8);
    expect_refused(bad, "training time -1 s is not a number >= 0");
    memcpy(data + at, &(double){NAN}, 8);
    write_with_checksum(bad, data, size - 8);
    expect_refused(bad, "training time nan s");
    /* a time or a fingerprint flagged without a training state */
    write_with_flags(bad, data, size, 16 | 1);
    expect_refused(bad, "a training time without a training state");
    write_with_flags(bad, data, size, 32 | 1);
    expect_refused(bad, "a batches' fingerprint without a training state");

    free(data);
    state_fixture_free(&f);
}
END_TEST

START_TEST(resume_with_other_batches_starts_the_epoch_again) {
    /* 10 batches of 8 pairs, then resumed with batches of 16: the saved batch_in_epoch counts
     * batches of another plan, so the epoch starts again, and says so; resumed with the same
     * batches, it goes on from batch 10 without a word */
    char dir[64] = "/tmp/nmt-rebatch-XXXXXX", a[128], b[128], out[256], cmd[1024];
    ck_assert(mkdtemp(dir) != NULL);
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(out, sizeof out, "%s/stdout", dir);
    ck_assert_int_eq(train_tiny(a, "--set train.max_steps=10"), 0);
    ck_assert_int_eq(train_tiny(b, "--set train.max_steps=10"), 0);
    snprintf(cmd, sizeof cmd,
             "../bin/train ../configs/tiny.ini --set train.out_dir=%s --set train.max_steps=14 "
             "--set train.batch_size=16 --resume >%s 2>&1",
             a, out);
    ck_assert_int_eq(system(cmd), 0);
    size_t len;
    char *text = (char *)slurp_file(out, &len);
    ck_assert_msg(strstr(text, "note: epoch 1's batches differ from those it was saved in") &&
                      strstr(text, "starts again from its first batch instead of going on from "
                                   "batch 10"),
                  "%s", text);
    Loaded l;
    load(&l, a, "last.ckpt");
    ck_assert_uint_eq(l.st.step, 14);
    ck_assert_uint_eq(l.st.epoch, 0);
    ck_assert_uint_eq(l.st.batch_in_epoch, 4); /* batches 0-3 of the new plan */
    uint64_t sixteen = l.st.batches_fingerprint;
    unload(&l);
    snprintf(cmd, sizeof cmd,
             "../bin/train ../configs/tiny.ini --set train.out_dir=%s --set train.max_steps=14 "
             "--resume >%s 2>&1",
             b, out);
    free(text);
    ck_assert_int_eq(system(cmd), 0);
    text = (char *)slurp_file(out, &len);
    ck_assert_msg(strstr(text, "note: epoch") == NULL, "%s", text);
    free(text);
    load(&l, b, "last.ckpt");
    ck_assert_uint_eq(l.st.step, 14);
    ck_assert_uint_eq(l.st.batch_in_epoch, 14);
    ck_assert(l.st.batches_fingerprint != 0 && l.st.batches_fingerprint != sixteen);
    unload(&l);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
}
END_TEST

START_TEST(resume_into_a_new_folder_starts_its_log) {
    /* --resume=CHECKPOINT with an out_dir that has no log yet: the new log starts with its
     * header (it used to get only rows, and the curves then refused it: exit status 1), and a
     * resume in the same folder adds rows under the one header */
    char dir[64] = "/tmp/nmt-relog-XXXXXX", a[128], b[128], log[160], cmd[1024];
    ck_assert(mkdtemp(dir) != NULL);
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    ck_assert_int_eq(train_tiny(a, "--set train.max_steps=10"), 0);
    snprintf(cmd, sizeof cmd, "--set train.max_steps=20 --resume=%s/last.ckpt", a);
    ck_assert_int_eq(train_tiny(b, cmd), 0);
    ck_assert_int_eq(train_tiny(b, "--set train.max_steps=30 --resume"), 0);
    snprintf(log, sizeof log, "%s/train_log.tsv", b);
    size_t len;
    char *text = (char *)slurp_file(log, &len);
    const char *header = "step\tepoch\tloss\t";
    ck_assert_msg(strncmp(text, header, strlen(header)) == 0, "%s", text);
    ck_assert_msg(strstr(text + 1, "step\t") == NULL, "a second header: %s", text);
    ck_assert_msg(strstr(text, "\n15\t") && strstr(text, "\n30\t"), "%s", text);
    free(text);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
}
END_TEST

Suite *ema_suite(void) {
    Suite *s = suite_create("ema");
    TCase *tc = tcase_create("ema");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, ema_math_by_hand);
    tcase_add_test(tc, ema_checkpoint_section);
    tcase_add_test(tc, ema_resumes_exactly);
    tcase_add_test(tc, ema_leaves_training_alone_and_fills_best);
    tcase_add_test(tc, time_budget_stops_and_validates);
    tcase_add_test(tc, time_and_batches_in_checkpoint);
    tcase_add_test(tc, resume_with_other_batches_starts_the_epoch_again);
    tcase_add_test(tc, resume_into_a_new_folder_starts_its_log);
    tcase_add_test(tc, budget_schedule_and_resumed_time);
    tcase_add_test(tc, budget_schedule_over_epochs);
    suite_add_tcase(s, tc);
    return s;
}

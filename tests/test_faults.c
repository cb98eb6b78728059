/*
 * test_faults.c: faults during training and while writing results, end to end through
 * bin/train (and the output of bin/translate and bin/evaluate). Each test checks what the user
 * sees (one line on stderr, a non-zero exit status) and that the last good checkpoint is
 * still there byte for byte.
 *
 *   signals     a second signal exits at once, without touching the checkpoint
 *   divergence  a non-finite loss, gradient or parameter stops training, naming step and
 *               tensor; provoked honestly, by resuming from a checkpoint whose (finite)
 *               values make the arithmetic overflow, not through any switch in the program
 *   disk        a full disk, a file-size limit, a read-only folder, a full output device
 *   memory      sizes too large for the machine, and allocations that fail
 *
 * Full-disk and read-only tests mount a small tmpfs, which needs root; without it they fall
 * back to what an ordinary user can do (a read-only folder by permissions) or are skipped
 * with a message. Address-space limits cannot be combined with AddressSanitizer, so those
 * tests are skipped (with a message) under `make SANITIZE=1`.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/files.h"
#include "tests/harness.h"
#include "tests/suites.h"
#include "train/adam.h"
#include "nmt/formats/checkpoint.h"

static bool same_bytes(const unsigned char *a, size_t a_len, const unsigned char *b, size_t b_len) {
    return a && b && a_len == b_len && memcmp(a, b, a_len) == 0;
}

/* A whole file, NUL-terminated, or NULL when it cannot be read; unlike slurp_file it asserts
 * nothing, for the stretches where a failed assertion would leave a tmpfs mounted or a
 * trainer running. */
static unsigned char *read_all(const char *path, size_t *len) {
    FILE *in = fopen(path, "rb");
    if (!in) return NULL;
    unsigned char *data = NULL;
    struct stat st;
    if (fstat(fileno(in), &st) == 0 && (data = malloc((size_t)st.st_size + 1)) != NULL) {
        *len = fread(data, 1, (size_t)st.st_size, in);
        data[*len] = '\0';
    }
    fclose(in);
    return data;
}

/* ---- signals ---------------------------------------------------------------------------- */

/* Size of the file at path, 0 when it does not exist. */
static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

/* Ctrl-C twice: the first signal asks for a save at the next step, the second must exit at
 * once. To make "the second arrives before the save" certain rather than likely, the trainer is
 * stopped (SIGSTOP), both signals are queued, and it is continued: both handlers run before it
 * executes another instruction of its own. */
START_TEST(faults_second_signal_exits_at_once) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char config[512], last[512], log[512], out[512];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "run/last.ckpt", last, sizeof last);
    scratch_path(&s, "run/train_log.tsv", log, sizeof log);
    scratch_path(&s, "long.stdout", out, sizeof out);
    long log_before = file_size(log);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) _exit(126);
        execl("../bin/train", "train", config, "--resume", "--set", "train.max_steps=0", "--set",
              "train.epochs=1000000", "--set", "train.valid_every=1000000", (char *)NULL);
        _exit(127);
    }
    /* wait until it is in the training loop: the log grows by a line per step */
    const struct timespec tick = {.tv_nsec = 10 * 1000 * 1000};
    for (int waited = 0; file_size(log) <= log_before + 64 && waited < 3000; waited++)
        nanosleep(&tick, NULL);
    /* nothing asserts until the trainer is gone, so a failure cannot leave it running */
    int stopped_status = 0, status = 0;
    bool stopped = kill(pid, SIGSTOP) == 0 && waitpid(pid, &stopped_status, WUNTRACED) == pid &&
                   WIFSTOPPED(stopped_status);
    size_t before_len = 0, after_len = 0, out_len = 0;
    unsigned char *before = read_all(last, &before_len);
    kill(pid, SIGINT);
    kill(pid, SIGTERM);
    kill(pid, SIGCONT);
    bool ended = waitpid(pid, &status, 0) == pid;
    unsigned char *after = read_all(last, &after_len);
    unsigned char *printed = read_all(out, &out_len);
    bool unchanged = same_bytes(before, before_len, after, after_len);
    bool saved = printed && strstr((const char *)printed, "interrupted by signal") != NULL;
    free(before), free(after), free(printed);
    scratch_free(&s);
    ck_assert_msg(stopped && ended, "training ended early (status %d)", stopped_status);
    ck_assert_msg(WIFEXITED(status), "not a clean exit (status %d)", status);
    ck_assert_msg(WEXITSTATUS(status) == 128 + SIGINT || WEXITSTATUS(status) == 128 + SIGTERM,
                  "exit status %d", WEXITSTATUS(status));
    ck_assert_msg(!saved, "it saved after the second signal");
    ck_assert_msg(unchanged, "the last checkpoint changed");
}
END_TEST

/* Ctrl-C (or a process manager's SIGTERM) during the test set's scoring at the end was caught
 * like one during training and never looked at: the scoring went on for as long as it took and
 * the run exited 0, the test line printed as if nothing had happened. The checkpoints are saved
 * by then and scoring writes nothing, so the signal now ends the program as it ends any. */
START_TEST(faults_signal_while_scoring_the_test_set_ends_it) {
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    char config[512], test[512], out[512];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "test.tsv", test, sizeof test);
    scratch_path(&s, "train.stdout", out, sizeof out);
    FILE *f = fopen(test, "w"); /* long enough to score for a while, even untrained */
    ck_assert_ptr_nonnull(f);
    for (int k = 0; k < 30000; k++) fputs("I love cats\tj'aime les chats\n", f);
    ck_assert_int_eq(fclose(f), 0);
    char test_set[600];
    snprintf(test_set, sizeof test_set, "data.test=%s", test);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) _exit(126);
        execl("../bin/train", "train", config, "--set", test_set, (char *)NULL);
        _exit(127);
    }
    const struct timespec tick = {.tv_nsec = 5 * 1000 * 1000};
    bool done = false;
    for (int waited = 0; !done && waited < 6000; waited++) {
        size_t len = 0;
        unsigned char *printed = read_all(out, &len);
        done = printed && strstr((const char *)printed, "done: ") != NULL;
        free(printed);
        if (!done) nanosleep(&tick, NULL);
    }
    kill(pid, SIGINT);
    int status = 0;
    bool ended = waitpid(pid, &status, 0) == pid;
    size_t len = 0;
    char *printed = (char *)read_all(out, &len);
    bool scored = printed && strstr(printed, "test (") != NULL;
    free(printed);
    scratch_free(&s);
    ck_assert_msg(done && ended, "no 'done:' line, or no end");
    ck_assert_msg((WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) ||
                      (WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGINT),
                  "not ended by the signal (status %d)", status);
    ck_assert_msg(!scored, "the test set was scored after the signal");
}
END_TEST

/* ---- divergence ------------------------------------------------------------------------- */

/* Copies run/last.ckpt to forged.ckpt, with `change` applied to its bytes (parameters start at
 * params, the optimiser moments follow the training state), and a checksum to match. */
typedef void (*Forgery)(unsigned char *data, const ParamTable *table, size_t params);

static void forge_checkpoint(const Scratch *s, Forgery change) {
    char path[512];
    scratch_path(s, "run/last.ckpt", path, sizeof path);
    size_t size;
    unsigned char *data = slurp_file(path, &size);
    int32_t sizes[8];
    memcpy(sizes, data + 16, sizeof sizes);
    ModelDims dims = {sizes[0], sizes[1], sizes[2],       sizes[3], sizes[4], sizes[5],
                      sizes[6], sizes[7], SCORE_ADDITIVE, 0,        0};
    ParamTable table;
    param_table_build(&table, &dims);
    size_t params = 64;
    for (int k = 0; k < 2; k++) {
        uint64_t len;
        memcpy(&len, data + params, 8);
        params += 8 + (size_t)len;
    }
    change(data, &table, params);
    uint64_t sum = checkpoint_checksum(data, size - 8);
    memcpy(data + size - 8, &sum, 8);
    scratch_write(s, "forged.ckpt", data, size);
    free(data);
}

/* out.w, the output layer, of alternating sign at the edge of the float range: the logits of
 * the first batch overflow to +-inf, and inf - inf in the softmax makes NaN. A diverged run
 * looks like this; every value is still finite, so the loader accepts it. */
static void forge_huge_output_layer(unsigned char *data, const ParamTable *table, size_t params) {
    const ParamInfo *out_w = &table->info[P_OUT_W];
    real edge = sizeof(real) == 8 ? 1e308 : 3e38f;
    for (size_t i = 0; i < out_w->size; i++) {
        real x = i % 2 ? edge : -edge;
        memcpy(data + params + sizeof(real) * (out_w->offset + i), &x, sizeof x);
    }
}

/* Adam moments that make the next update of one parameter overflow: m = 1e38 (1e306 in a
 * double build) and v = 0 for src_emb[4], the first element of the <unk> row. No training word
 * is unknown, so its gradient stays 0 and the step is lr * m / eps, far beyond the range of
 * real. Finite and non-negative, so the loader accepts them. */
static void forge_overflowing_moments(unsigned char *data, const ParamTable *table, size_t params) {
    size_t bytes = sizeof(real) * table->total;
    size_t m = params + bytes + CKPT_STATE_BYTES, v = m + bytes;
    size_t at = sizeof(real) * (table->info[P_SRC_EMB].offset + table->info[P_SRC_EMB].shape[1]);
    real huge = sizeof(real) == 8 ? 1e306 : 1e38f, zero = 0;
    memcpy(data + m + at, &huge, sizeof huge);
    memcpy(data + v + at, &zero, sizeof zero);
}

/* Resumes from the forged checkpoint and expects training to stop at step 5 with a message
 * holding fragment, naming forged.ckpt (step 4) as the last good checkpoint, and leaving it
 * and run/last.ckpt as they were. */
static void expect_divergence(Forgery change, const char *fragment) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    forge_checkpoint(&s, change);
    char config[512], forged[512], resume[600], last[512], good[700];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "forged.ckpt", forged, sizeof forged);
    scratch_path(&s, "run/last.ckpt", last, sizeof last);
    snprintf(resume, sizeof resume, "--resume=%s", forged);
    snprintf(good, sizeof good, "training stopped, the last good checkpoint is %s (step 4)",
             forged);
    size_t forged_len, last_len, len;
    unsigned char *forged_bytes = slurp_file(forged, &forged_len);
    unsigned char *last_bytes = slurp_file(last, &last_len);
    RunResult r;
    run_program(
        &r, &s,
        (const char *const[]){"../bin/train", config, resume, "--set", "train.max_steps=8", NULL},
        NULL, 60, NULL);
    unsigned char *now = slurp_file(forged, &len);
    ck_assert(same_bytes(now, len, forged_bytes, forged_len));
    free(now);
    now = slurp_file(last, &len);
    ck_assert_msg(same_bytes(now, len, last_bytes, last_len), "run/last.ckpt was overwritten");
    free(now), free(forged_bytes), free(last_bytes);
    scratch_free(&s);
    assert_one_line_error(&r, "train", 1, (const char *const[]){"step 5: ", fragment, good, NULL});
}

START_TEST(faults_non_finite_loss_or_gradient_stops_training) {
    expect_divergence(forge_huge_output_layer, "nan (gradient of ");
}
END_TEST

START_TEST(faults_overflowing_update_stops_training) {
    expect_divergence(forge_overflowing_moments,
                      "the Adam update overflowed (parameter src_emb[4] = -inf)");
}
END_TEST

/* ---- disk ------------------------------------------------------------------------------- */

/* Mounts a tmpfs of `size` (e.g. "256k") at path (created here); false when not allowed. */
static bool mount_small_disk(const char *path, const char *size) {
    if (mkdir(path, 0755) != 0) return false;
    char options[32];
    snprintf(options, sizeof options, "size=%s", size);
    return mount("tmpfs", path, "tmpfs", 0, options) == 0;
}

/* Fills the file system holding path with the file path, then frees `spare` bytes again.
 * Returns whether the disk really filled up (the last write failed with ENOSPC). */
static bool fill_disk(const char *path, long spare) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return false;
    static const char block[4096];
    long written = 0;
    ssize_t n;
    while ((n = write(fd, block, sizeof block)) > 0) written += n;
    bool full = n < 0 && errno == ENOSPC;
    full = ftruncate(fd, written > spare ? written - spare : 0) == 0 && full;
    return close(fd) == 0 && full;
}

/* Trains into DIR/disk/run (on a tmpfs), takes the disk away with `take_away` (which says
 * whether it could), resumes, and returns the resumed run's result; *unchanged says whether
 * run/last.ckpt kept its bytes and no temporary file was left. False (after a message) when no
 * tmpfs can be mounted. Nothing between mount and unmount asserts, so a failure cannot leave
 * the tmpfs behind. */
typedef bool (*TakeAway)(const char *disk);

static bool resume_on_broken_disk(const char *test, TakeAway take_away, RunResult *r,
                                  bool *unchanged, char *last, size_t last_size) {
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    char disk[512], config[512], out_dir[600];
    scratch_path(&s, "disk", disk, sizeof disk);
    if (!mount_small_disk(disk, "256k")) {
        test_skip(test, "cannot mount a tmpfs (needs root)");
        scratch_free(&s);
        return false;
    }
    scratch_path(&s, "tiny.ini", config, sizeof config);
    snprintf(out_dir, sizeof out_dir, "train.out_dir=%s/run", disk);
    snprintf(last, last_size, "%s/run/last.ckpt", disk);
    RunResult first;
    run_program(&first, &s, (const char *const[]){"../bin/train", config, "--set", out_dir, NULL},
                NULL, 60, NULL);
    size_t before_len = 0, after_len = 0;
    unsigned char *before = read_all(last, &before_len);
    bool taken = first.status == 0 && take_away(disk);
    if (taken)
        run_program(r, &s,
                    (const char *const[]){"../bin/train", config, "--set", out_dir, "--resume",
                                          "--set", "train.max_steps=8", NULL},
                    NULL, 60, NULL);
    unsigned char *after = read_all(last, &after_len);
    *unchanged = same_bytes(before, before_len, after, after_len) && !temporary_file_beside(last);
    free(before), free(after);
    bool unmounted = umount2(disk, MNT_DETACH) == 0;
    scratch_free(&s);
    ck_assert_msg(first.status == 0, "the first run failed: %s", first.err);
    ck_assert_msg(taken, "could not take the disk away");
    ck_assert(unmounted);
    return true;
}

static bool fill_all_but_8k(const char *disk) {
    char filler[600];
    snprintf(filler, sizeof filler, "%s/filler", disk);
    return fill_disk(filler, 8192);
}

START_TEST(faults_full_disk_keeps_last_checkpoint) {
    RunResult r;
    bool unchanged;
    char last[600];
    if (!resume_on_broken_disk("faults_full_disk_keeps_last_checkpoint", fill_all_but_8k, &r,
                               &unchanged, last, sizeof last))
        return;
    assert_one_line_error(&r, "train", 1, (const char *const[]){"No space left on device", NULL});
    ck_assert_msg(unchanged, "%s changed or a temporary file was left", last);
}
END_TEST

static bool remount_read_only(const char *disk) {
    return mount(NULL, disk, NULL, MS_REMOUNT | MS_RDONLY, NULL) == 0;
}

START_TEST(faults_read_only_out_dir_keeps_last_checkpoint) {
    RunResult r;
    bool unchanged;
    char last[600];
    if (geteuid() != 0) { /* an ordinary user: a folder without write permission does it */
        Scratch s;
        scratch_make(&s);
        scratch_train_model(&s);
        char config[512], run[512];
        scratch_path(&s, "tiny.ini", config, sizeof config);
        scratch_path(&s, "run", run, sizeof run);
        scratch_path(&s, "run/last.ckpt", last, sizeof last);
        size_t before_len, after_len;
        unsigned char *before = slurp_file(last, &before_len);
        ck_assert_int_eq(chmod(run, 0555), 0);
        run_program(&r, &s,
                    (const char *const[]){"../bin/train", config, "--resume", "--set",
                                          "train.max_steps=8", NULL},
                    NULL, 60, NULL);
        chmod(run, 0755);
        unsigned char *after = slurp_file(last, &after_len);
        unchanged = same_bytes(before, before_len, after, after_len);
        free(before), free(after);
        scratch_free(&s);
        assert_one_line_error(&r, "train", 1, (const char *const[]){"Permission denied", NULL});
    } else {
        if (!resume_on_broken_disk("faults_read_only_out_dir_keeps_last_checkpoint",
                                   remount_read_only, &r, &unchanged, last, sizeof last))
            return;
        assert_one_line_error(&r, "train", 1, (const char *const[]){"Read-only file system", NULL});
    }
    ck_assert_msg(unchanged, "%s changed", last);
}
END_TEST

/* Without root: a file-size limit makes the checkpoint write fail (EFBIG) part way, the way a
 * full disk would, while the small log and config still fit. */
START_TEST(faults_file_size_limit_keeps_last_checkpoint) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char config[512], last[512];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "run/last.ckpt", last, sizeof last);
    size_t before_len, after_len;
    unsigned char *before = slurp_file(last, &before_len);
    ck_assert_uint_gt(before_len, 4096);
    RunResult r;
    RunLimits limits = {.file_size = 4096};
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--resume", "--set",
                                      "train.max_steps=8", NULL},
                NULL, 60, &limits);
    unsigned char *after = slurp_file(last, &after_len);
    bool unchanged = same_bytes(before, before_len, after, after_len),
         left_tmp = temporary_file_beside(last);
    free(before), free(after);
    scratch_free(&s);
    assert_one_line_error(&r, "train", 1,
                          (const char *const[]){"cannot save", last, "File too large",
                                                "the previous checkpoint, if any, is intact",
                                                NULL});
    ck_assert_msg(unchanged && !left_tmp, "the checkpoint changed or its temporary file stayed");
}
END_TEST

/* Results written to a full device (/dev/full) are an error, not a silent loss. */
START_TEST(faults_output_to_full_device_is_reported) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char model[512], test[512], command[2048], err_path[512];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    scratch_path(&s, "train.tsv", test, sizeof test);
    scratch_path(&s, "full.stderr", err_path, sizeof err_path);
    const char *programs[2] = {"translate", "evaluate"};
    for (int k = 0; k < 2; k++) {
        if (k == 0)
            snprintf(command, sizeof command,
                     "../bin/translate -m '%s' 'I love cats' >/dev/full 2>'%s'", model, err_path);
        else
            snprintf(command, sizeof command,
                     "../bin/evaluate -m '%s' --test '%s' >/dev/full 2>'%s'", model, test,
                     err_path);
        int status = system(command);
        size_t len;
        char *message = (char *)slurp_file(err_path, &len);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "%s: status %d", programs[k],
                      status);
        assert_contains(message, "cannot write to standard output: No space left on device");
        ck_assert_msg(strchr(message, '\n') == message + len - 1, "not one line: %s", message);
        free(message);
    }
    scratch_free(&s);
}
END_TEST

/* A writer ended by SIGINT or SIGTERM while its temporary file (PATH.tmp.PID.N) is open: the
 * temporary is gone with it (bin/quantize left it behind, issue #45) and the old PATH is as
 * it was. Every program writes through base/files.c, so the writer is tested itself, in a
 * child that waits with the file open. */
START_TEST(faults_signal_removes_the_temporary_file) {
    /* SIGPIPE: translate --align a.txt < big | head -1 left a.txt.tmp.PID.0 */
    static const int signals[] = {SIGINT, SIGTERM, SIGPIPE};
    for (size_t k = 0; k < sizeof signals / sizeof signals[0]; k++) {
        Scratch s;
        scratch_make(&s);
        scratch_write_text(&s, "out.ckpt", "the old output\n");
        char path[512];
        scratch_path(&s, "out.ckpt", path, sizeof path);
        int ready[2];
        ck_assert_int_eq(pipe(ready), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            signal(SIGINT, SIG_DFL), signal(SIGTERM, SIG_DFL), signal(SIGHUP, SIG_DFL);
            signal(SIGPIPE, SIG_DFL);
            OutputFile o;
            Error err;
            if (output_file_open(&o, path, true, &err) || fputs("half of a new ", o.file) < 0 ||
                fflush(o.file))
                _exit(126);
            if (write(ready[1], "!", 1) != 1) _exit(126);
            for (;;) pause();
        }
        close(ready[1]);
        char byte = 0;
        bool opened = read(ready[0], &byte, 1) == 1;
        close(ready[0]);
        bool tmp_while_open = temporary_file_beside(path);
        kill(pid, signals[k]);
        int status = 0;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        bool tmp_after = temporary_file_beside(path);
        size_t len;
        char *old = (char *)slurp_file(path, &len);
        scratch_free(&s);
        ck_assert_msg(opened && tmp_while_open, "the child did not open its temporary file");
        ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == signals[k], "status %d", status);
        ck_assert_msg(!tmp_after, "signal %d left the temporary file behind", signals[k]);
        ck_assert_str_eq(old, "the old output\n");
        free(old);
    }
}
END_TEST

/* ---- memory ----------------------------------------------------------------------------- */

/* A training pair of 1000 tokens a side: the activation memory grows with the product of the
 * longest source and target. */
static void write_long_pair_corpus(const Scratch *s) {
    char *text = malloc(20000);
    ck_assert_ptr_nonnull(text);
    size_t used = (size_t)sprintf(text, "I love cats\tj'aime les chats\n");
    for (int i = 0; i < 1000; i++) used += (size_t)sprintf(text + used, "cat ");
    text[used - 1] = '\t';
    for (int i = 0; i < 1000; i++) used += (size_t)sprintf(text + used, "chat ");
    text[used - 1] = '\n';
    text[used] = '\0';
    scratch_write_text(s, "train.tsv", text);
    free(text);
}

/* A batch no machine can hold (65536 pairs of 1000 x 1000 tokens with A = 4096: about a
 * terabyte of attention keys alone) is refused before anything is allocated. */
START_TEST(faults_enormous_batch_is_too_large) {
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    write_long_pair_corpus(&s);
    char config[512];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    RunResult r;
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--set", "data.max_len=1000", "--set",
                                      "model.att_size=4096", "--set", "train.batch_size=65536",
                                      NULL},
                NULL, 60, NULL);
    scratch_free(&s);
    assert_one_line_error(&r, "train", 1,
                          (const char *const[]){"too large: the optimiser state and the "
                                                "activations of a training batch need",
                                                "GiB of memory this machine has", NULL});
}
END_TEST

/* Every model size at its maximum (4096) needs gigabytes for the parameters alone: with the
 * address space limited to 1 GiB that is refused up front, as "too large". */
START_TEST(faults_model_beyond_memory_limit_is_too_large) {
    if (under_address_sanitizer()) {
        test_skip("faults_model_beyond_memory_limit_is_too_large", "needs an address-space limit");
        return;
    }
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    char config[512];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    RunResult r;
    RunLimits limits = {.address_space = (rlim_t)1 << 30};
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--set", "model.emb_size=4096",
                                      "--set", "model.enc_hidden=4096", "--set",
                                      "model.dec_hidden=4096", "--set", "model.att_size=4096",
                                      "--set", "model.readout_size=4096", NULL},
                NULL, 60, &limits);
    scratch_free(&s);
    assert_one_line_error(&r, "train", 1,
                          (const char *const[]){"too large: the model's parameters and gradients",
                                                "the process limit (ulimit) allows", NULL});
}
END_TEST

/* When an allocation does fail, it is reported (by file and line while reading a corpus),
 * never ignored and never a crash: 100,000 pairs to tokenize in 64 MiB of address space. */
START_TEST(faults_allocation_failure_is_reported) {
    if (under_address_sanitizer()) {
        test_skip("faults_allocation_failure_is_reported", "needs an address-space limit");
        return;
    }
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    char path[512];
    scratch_path(&s, "train.tsv", path, sizeof path);
    FILE *out = fopen(path, "w");
    ck_assert_ptr_nonnull(out);
    for (int i = 0; i < 100000; i++)
        fprintf(out, "w%d w%d w%d w%d w%d\tm%d m%d m%d m%d m%d\n", i, i + 1, i + 2, i + 3, i + 4, i,
                i + 1, i + 2, i + 3, i + 4);
    ck_assert_int_eq(fclose(out), 0);
    char config[512];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    RunResult r;
    RunLimits limits = {.address_space = (rlim_t)64 << 20};
    run_program(&r, &s, (const char *const[]){"../bin/train", config, NULL}, NULL, 60, &limits);
    scratch_free(&s);
    assert_one_line_error(&r, "train", 1, (const char *const[]){"out of memory", NULL});
}
END_TEST

Suite *faults_suite(void) {
    Suite *s = suite_create("faults");
    TCase *signals = tcase_create("signals");
    tcase_set_timeout(signals, 120);
    tcase_add_test(signals, faults_second_signal_exits_at_once);
    tcase_add_test(signals, faults_signal_while_scoring_the_test_set_ends_it);
    suite_add_tcase(s, signals);

    TCase *divergence = tcase_create("divergence");
    tcase_set_timeout(divergence, 120);
    tcase_add_test(divergence, faults_non_finite_loss_or_gradient_stops_training);
    tcase_add_test(divergence, faults_overflowing_update_stops_training);
    suite_add_tcase(s, divergence);

    TCase *disk = tcase_create("disk");
    tcase_set_timeout(disk, 120);
    tcase_add_test(disk, faults_full_disk_keeps_last_checkpoint);
    tcase_add_test(disk, faults_read_only_out_dir_keeps_last_checkpoint);
    tcase_add_test(disk, faults_file_size_limit_keeps_last_checkpoint);
    tcase_add_test(disk, faults_output_to_full_device_is_reported);
    tcase_add_test(disk, faults_signal_removes_the_temporary_file);
    suite_add_tcase(s, disk);

    TCase *memory = tcase_create("memory");
    tcase_set_timeout(memory, 120);
    tcase_add_test(memory, faults_enormous_batch_is_too_large);
    tcase_add_test(memory, faults_model_beyond_memory_limit_is_too_large);
    tcase_add_test(memory, faults_allocation_failure_is_reported);
    suite_add_tcase(s, memory);
    return s;
}

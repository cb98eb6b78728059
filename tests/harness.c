/*
 * harness.c: scratch folders, the tiny training setup, and running programs with limits for
 * the end-to-end reliability tests (see harness.h).
 *
 * Programs are started with fork and execv, never through a shell, so arguments holding
 * invalid UTF-8, control characters or 10,000 words arrive exactly as written. Output goes to
 * files rather than pipes, so a program that writes a lot can never block on a full pipe
 * while the test waits for it.
 */
#include "tests/harness.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void scratch_make(Scratch *s) {
    snprintf(s->dir, sizeof s->dir, "/tmp/nmt-reliability-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(s->dir));
}

void scratch_free(const Scratch *s) {
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", s->dir);
    ck_assert_int_eq(system(command), 0);
}

void scratch_path(const Scratch *s, const char *name, char *buf, size_t size) {
    int n = snprintf(buf, size, "%s/%s", s->dir, name);
    ck_assert(n > 0 && (size_t)n < size);
}

void scratch_write(const Scratch *s, const char *name, const void *bytes, size_t len) {
    char path[512];
    scratch_path(s, name, path, sizeof path);
    FILE *out = fopen(path, "wb");
    ck_assert_msg(out != NULL, "cannot write %s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(bytes, 1, len, out), len);
    ck_assert_int_eq(fclose(out), 0);
}

void scratch_write_text(const Scratch *s, const char *name, const char *text) {
    scratch_write(s, name, text, strlen(text));
}

unsigned char *slurp_file(const char *path, size_t *len) {
    FILE *in = fopen(path, "rb");
    ck_assert_msg(in != NULL, "cannot read %s: %s", path, strerror(errno));
    struct stat st;
    ck_assert_int_eq(fstat(fileno(in), &st), 0);
    unsigned char *data = malloc((size_t)st.st_size + 1);
    ck_assert_ptr_nonnull(data);
    *len = fread(data, 1, (size_t)st.st_size, in);
    ck_assert_uint_eq(*len, (size_t)st.st_size);
    data[*len] = '\0';
    fclose(in);
    return data;
}

static const char SETUP_PAIRS[] = "I love cats\tj'aime les chats\n"
                                  "I have a cat\tj'ai un chat\n"
                                  "the black cat\tle chat noir\n"
                                  "we see the dog\tnous voyons le chien\n"
                                  "the dog sees a cat\tle chien voit un chat\n"
                                  "I love machine learning\tj'aime l'apprentissage automatique\n";

/* Every size 4 and four steps: a run takes milliseconds, even under the sanitizers. */
static const char SETUP_CONFIG[] = "[data]\n"
                                   "train = train.tsv\n"
                                   "dev = dev.tsv\n"
                                   "[model]\n"
                                   "emb_size = 4\n"
                                   "enc_hidden = 4\n"
                                   "dec_hidden = 4\n"
                                   "att_size = 4\n"
                                   "readout_size = 4\n"
                                   "[train]\n"
                                   "batch_size = 2\n"
                                   "max_steps = 4\n"
                                   "valid_every = 2\n"
                                   "log_every = 1\n"
                                   "threads = 1\n"
                                   "out_dir = run\n";

void scratch_write_setup(const Scratch *s) {
    scratch_write_text(s, "train.tsv", SETUP_PAIRS);
    scratch_write_text(s, "dev.tsv", SETUP_PAIRS);
    scratch_write_text(s, "tiny.ini", SETUP_CONFIG);
}

void scratch_train_model(const Scratch *s) {
    scratch_write_setup(s);
    char config[512];
    scratch_path(s, "tiny.ini", config, sizeof config);
    RunResult r;
    run_program(&r, s, (const char *const[]){"../bin/train", config, NULL}, NULL, 60, NULL);
    ck_assert_msg(r.status == 0, "training the test model failed (%d): %s", r.status, r.err);
}

/* Reads the start of path into buf (NUL-terminated), then removes the file. */
static void take_output(const char *path, char *buf, size_t size) {
    buf[0] = '\0';
    FILE *in = fopen(path, "rb");
    if (!in) return;
    size_t n = fread(buf, 1, size - 1, in);
    buf[n] = '\0';
    fclose(in);
    remove(path);
}

/* In the child: limits, standard streams, then the program. Only
 * async-signal-safe work would be strictly required after fork in a threaded parent; the
 * test runner's child is single-threaded, so plain libc calls are fine here. */
static void exec_child(const char *const *argv, const char *stdin_path, const char *out_path,
                       const char *err_path, const RunLimits *limits) {
    if (limits && limits->address_space) {
        struct rlimit limit = {limits->address_space, limits->address_space};
        if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(126);
    }
    if (limits && limits->file_size) {
        struct rlimit limit = {limits->file_size, limits->file_size};
        signal(SIGXFSZ, SIG_DFL); /* as a shell leaves it: the program must not die of it */
        if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(126);
    }
    int in = open(stdin_path ? stdin_path : "/dev/null", O_RDONLY);
    int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) _exit(126);
    dup2(in, STDIN_FILENO), dup2(out, STDOUT_FILENO), dup2(err, STDERR_FILENO);
    execv(argv[0], (char *const *)argv);
    _exit(127);
}

void run_program(RunResult *r, const Scratch *s, const char *const *argv, const char *stdin_path,
                 int timeout_s, const RunLimits *limits) {
    char out_path[512], err_path[512];
    scratch_path(s, "run.stdout", out_path, sizeof out_path);
    scratch_path(s, "run.stderr", err_path, sizeof err_path);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) exec_child(argv, stdin_path, out_path, err_path, limits);
    memset(r, 0, sizeof *r);
    int status = 0;
    /* most programs here end within a few milliseconds: a 10 ms tick from the start would
     * spend more time waiting than they run, so the first 100 ms are watched more closely */
    for (long waited_ms = 0;;) {
        pid_t done = waitpid(pid, &status, WNOHANG);
        ck_assert_int_ge(done, 0);
        if (done == pid) break;
        if (waited_ms >= timeout_s * 1000L) { /* hung: that is a failure of its own */
            kill(pid, SIGKILL);
            ck_assert_int_eq(waitpid(pid, &status, 0), pid);
            r->timed_out = true;
            break;
        }
        long tick_ms = waited_ms < 100 ? 1 : 10;
        nanosleep(&(struct timespec){.tv_nsec = tick_ms * 1000 * 1000}, NULL);
        waited_ms += tick_ms;
    }
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    take_output(out_path, r->out, sizeof r->out);
    take_output(err_path, r->err, sizeof r->err);
}

void assert_contains(const char *text, const char *fragment) {
    ck_assert_msg(strstr(text, fragment) != NULL, "'%s' does not contain '%s'", text, fragment);
}

void assert_one_line_error(const RunResult *r, const char *program, int status,
                           const char *const *fragments) {
    ck_assert_msg(!r->timed_out, "%s did not finish in time", program);
    ck_assert_msg(r->status == status, "%s exited with %d, not %d; stderr: %s", program, r->status,
                  status, r->err);
    size_t len = strlen(r->err);
    ck_assert_msg(len > 0 && r->err[len - 1] == '\n' && strchr(r->err, '\n') == r->err + len - 1,
                  "%s's stderr is not one line: '%s'", program, r->err);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s: ", program);
    ck_assert_msg(strncmp(r->err, prefix, strlen(prefix)) == 0, "'%s' does not start with '%s'",
                  r->err, prefix);
    for (size_t i = 0; fragments && fragments[i]; i++) assert_contains(r->err, fragments[i]);
}

bool under_address_sanitizer(void) {
#if defined(__SANITIZE_ADDRESS__)
    return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return true;
#else
    return false;
#endif
#else
    return false;
#endif
}

void test_skip(const char *test, const char *why) {
    /* each test runs in a child process: the runner reads the skips from this file */
    const char *log = getenv("NMT_TEST_SKIP_LOG");
    FILE *f = log ? fopen(log, "a") : NULL;
    if (f) {
        fprintf(f, "%s: %s\n", test, why);
        fclose(f);
    }
    fprintf(stderr, "skipped: %s: %s\n", test, why);
}

bool temporary_file_beside(const char *path) {
    char folder[4096];
    snprintf(folder, sizeof folder, "%s", path);
    char *slash = strrchr(folder, '/');
    const char *name = slash ? slash + 1 : path;
    if (slash)
        *slash = '\0';
    else
        snprintf(folder, sizeof folder, ".");
    char prefix[4096];
    snprintf(prefix, sizeof prefix, "%s.tmp", name);
    DIR *dir = opendir(folder);
    bool found = false;
    for (struct dirent *e; dir && !found && (e = readdir(dir));)
        found = strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (dir) closedir(dir);
    return found;
}

const char *script_program(void) {
    static const char *const places[] = {"/usr/bin/script", "/bin/script", "/usr/local/bin/script"};
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++)
        if (access(places[i], X_OK) == 0) return places[i];
    return NULL;
}

void conversation_start(Conversation *c, const char *const *argv) {
    int in[2], out[2];
    ck_assert(pipe(in) == 0 && pipe(out) == 0);
    *c = (Conversation){0};
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(in[0], STDIN_FILENO), dup2(out[1], STDOUT_FILENO), dup2(null, STDERR_FILENO);
        close(in[1]), close(out[0]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(in[0]), close(out[1]);
    c->pid = pid, c->to_child = in[1], c->from_child = out[0];
    fcntl(c->from_child, F_SETFL, O_NONBLOCK);
}

void conversation_send(Conversation *c, const char *text) {
    size_t len = strlen(text);
    ck_assert_int_eq(write(c->to_child, text, len), (ssize_t)len);
}

bool conversation_wait_for(Conversation *c, const char *expected, int timeout_s) {
    struct timespec start, now, pause = {0, 20 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        ssize_t got = read(c->from_child, c->out + c->used, sizeof c->out - 1 - c->used);
        if (got > 0) c->used += (size_t)got;
        c->out[c->used] = '\0';
        if (strstr(c->out, expected)) return true;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (got == 0 || now.tv_sec - start.tv_sec >= timeout_s || c->used + 1 == sizeof c->out)
            return false; /* got == 0: the program closed its output */
        nanosleep(&pause, NULL);
    }
}

int conversation_end(Conversation *c, int timeout_s) {
    close(c->to_child);
    int status = 0;
    struct timespec pause = {0, 20 * 1000 * 1000};
    for (int waited = 0; waitpid(c->pid, &status, WNOHANG) == 0; waited++) {
        if (waited == 50 * timeout_s) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, &status, 0);
            break;
        }
        nanosleep(&pause, NULL);
    }
    close(c->from_child);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void log_column(const char *path, int col, char *out, size_t size) {
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "no %s", path);
    char line[512];
    size_t used = 0;
    out[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        char *field = line;
        for (int c = 0; c < col && field; c++)
            field = strchr(field, '\t') ? strchr(field, '\t') + 1 : NULL;
        if (!field) continue;
        size_t n = strcspn(field, "\t\n");
        if (used + n + 2 >= size) break;
        memcpy(out + used, field, n);
        used += n;
        out[used++] = ',';
        out[used] = '\0';
    }
    fclose(f);
}

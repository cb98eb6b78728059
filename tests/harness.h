/*
 * harness.h: what the end-to-end reliability tests share: a scratch folder with a tiny corpus
 * and config, running a program of ../bin the way a user would (arguments passed as they are,
 * without a shell, so any byte can be tested), with a time limit and optional resource limits,
 * and checking that a failure is reported as one line on stderr.
 *
 * Tests run from tests/, so the programs are ../bin/NAME. Deliberately not here: what any one
 * program should do; each test says that itself.
 */
#ifndef NMT_TEST_HARNESS_H
#define NMT_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>

/* A fresh folder under /tmp; everything a test writes goes in it. */
typedef struct {
    char dir[64];
} Scratch;

void scratch_make(Scratch *s);
/* Removes the folder and everything in it. */
void scratch_free(const Scratch *s);
/* dir/name into buf. */
void scratch_path(const Scratch *s, const char *name, char *buf, size_t size);
/* Writes bytes[0..len) to dir/name (replacing it). */
void scratch_write(const Scratch *s, const char *name, const void *bytes, size_t len);
/* Writes a NUL-terminated text to dir/name. */
void scratch_write_text(const Scratch *s, const char *name, const char *text);
/* Reads a whole file; *len gets its size. free() the result. */
unsigned char *slurp_file(const char *path, size_t *len);

/* The small training setup every end-to-end test starts from, written into the scratch
 * folder: train.tsv and dev.tsv (six pairs each), and tiny.ini, a model of size 4 trained for
 * 4 steps (validating every 2) into out_dir = run. */
void scratch_write_setup(const Scratch *s);
/* scratch_write_setup, then ../bin/train tiny.ini: run/best.ckpt and the resumable
 * run/last.ckpt exist afterwards. */
void scratch_train_model(const Scratch *s);

/* Limits applied to the program before it starts; zero fields are left alone. */
typedef struct {
    rlim_t address_space; /* RLIMIT_AS, bytes */
    rlim_t file_size;     /* RLIMIT_FSIZE, bytes; SIGXFSZ left as a shell leaves it (fatal) */
} RunLimits;

/* What a run of a program did. */
typedef struct {
    int status;     /* exit status; 128 + N when killed by signal N */
    bool timed_out; /* killed after the time limit */
    char out[8192]; /* the start of its stdout */
    char err[8192]; /* the start of its stderr */
} RunResult;

/* Runs argv (argv[0] is the program's path, NULL-terminated) in the scratch folder's parent
 * process working directory (tests/), stdin from stdin_path (NULL: /dev/null), for at most
 * timeout_s seconds. limits may be NULL. Output goes through files in the scratch folder. */
void run_program(RunResult *r, const Scratch *s, const char *const *argv, const char *stdin_path,
                 int timeout_s, const RunLimits *limits);

/* Asserts that the run failed with exit status `status`, in time, with exactly one line on
 * stderr that starts with "program: " and contains every fragment (a NULL-terminated list). */
void assert_one_line_error(const RunResult *r, const char *program, int status,
                           const char *const *fragments);

/* Asserts that text contains fragment, naming both when it does not. */
void assert_contains(const char *text, const char *fragment);

/* Reports that `test` cannot run here and why. The test then returns without asserting; the
 * runner lists every skip after the results and counts them in its closing line, so a test
 * that could not run is never mistaken for one that passed. */
void test_skip(const char *test, const char *why);

/* Whether a temporary file of path's writers (path.tmp...) is in its folder. */
bool temporary_file_beside(const char *path);

/* Where `script` (util-linux) is, to run a program under a pseudo-terminal, or NULL when it
 * is not installed: a test that needs a terminal then skips (test_skip) saying so. */
const char *script_program(void);

/* A program started with pipes for its stdin and stdout (stderr to /dev/null), to talk to it
 * a line at a time. */
typedef struct {
    int pid, to_child, from_child;
    char out[8192]; /* what it has written so far */
    size_t used;
} Conversation;

void conversation_start(Conversation *c, const char *const *argv);
/* Writes text to the program's stdin, which stays open. */
void conversation_send(Conversation *c, const char *text);
/* Reads its stdout until it holds `expected` or timeout_s pass; true when it does. */
bool conversation_wait_for(Conversation *c, const char *expected, int timeout_s);
/* Closes its stdin, waits for it (killing it after timeout_s) and returns its exit status. */
int conversation_end(Conversation *c, int timeout_s);

/* Column col (0-based) of every line of a TSV file (a training log), comma-joined, into out. */
void log_column(const char *path, int col, char *out, size_t size);

/* True when the tests run under AddressSanitizer, whose shadow memory cannot live under an
 * address-space limit: tests that set one are skipped then. */
bool under_address_sanitizer(void);

/* The fixed layout of a checkpoint's header (see nmt/formats/checkpoint.h), in bytes. */
enum {
    AT_VERSION = 8,
    AT_WIDTH = 12,
    AT_SIZES = 16, /* 8 x i32: Vs Vt E H bidirectional D A O */
    AT_FLAGS = 48,
    AT_RESERVED = 52,
    AT_COUNT = 56,
    AT_VOCABS = 64,
};

/* The bytes of a checkpoint's training state between the parameters and Adam's moments (see
 * nmt/formats/checkpoint.h): step, epoch, batch_in_epoch, adam_t, lr_scale, best_bleu,
 * best_dev_loss (8 each), bad_validations, plateau_bad (4 each), the dropout stream (32), the time
 * trained (8) and the batches' fingerprint (8), as bin/train writes them. */
enum { CKPT_STATE_BYTES = 7 * 8 + 2 * 4 + 32 + 8 + 8 };

#endif

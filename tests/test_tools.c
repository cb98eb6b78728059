/*
 * test_tools.c: the programs end to end, run as a user would run them (from tests/, on the
 * binaries in ../bin): the .npy files and the gradient reference dump, and the one-line errors
 * and exit statuses of translate and gradref on bad input.
 */
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/suites.h"
#include "nmt/formats/npy.h"
#include "nmt/metrics/scoring.h"
#include "nmt/text.h"
#include "train/new_model.h"

/* Runs a shell command, returning its exit status; its stderr goes to err_path. */
static int run(const char *cmd, const char *err_path) {
    char full[2048];
    snprintf(full, sizeof full, "%s 2>%s >/dev/null", cmd, err_path);
    int status = system(full);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void read_text(const char *path, char *buf, size_t size) {
    FILE *f = fopen(path, "r");
    ck_assert(f);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Lines in a file; 0 when it cannot be read (yet). */
static int count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    int lines = 0, c;
    while (f && (c = fgetc(f)) != EOF) lines += c == '\n';
    if (f) fclose(f);
    return lines;
}

static void make_temp_dir(char *dir, size_t size) {
    snprintf(dir, size, "/tmp/nmt-tools-XXXXXX");
    ck_assert(mkdtemp(dir) != NULL);
}

static void remove_dir(const char *dir) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
}

START_TEST(npy_round_trip_and_header) {
    char dir[64], path[128];
    make_temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/a.npy", dir);
    const real data[6] = {1, -2.5f, 3, 4e-3f, 5, 6};
    const size_t shape[2] = {2, 3};
    Error err;
    ck_assert(npy_write_real(path, 2, shape, data, &err) == 0);
    /* the header is NumPy's dict, the data starts on a 64-byte boundary */
    unsigned char head[128];
    FILE *f = fopen(path, "rb");
    ck_assert(f && fread(head, 1, sizeof head, f) > 10);
    fclose(f);
    ck_assert(memcmp(head, "\x93NUMPY\x01\x00", 8) == 0);
    size_t hlen = head[8] | (size_t)head[9] << 8;
    ck_assert_uint_eq((10 + hlen) % 64, 0);
    ck_assert(head[10 + hlen - 1] == '\n');
    ck_assert(strstr((const char *)head + 10, sizeof(real) == 8 ? "'<f8'" : "'<f4'") != NULL);
    ck_assert(strstr((const char *)head + 10, "'shape': (2, 3)") != NULL);
    NpyArray a;
    ck_assert(npy_read(path, &a, &err) == 0);
    ck_assert(a.ndim == 2 && a.shape[0] == 2 && a.shape[1] == 3);
    ck_assert(memcmp(a.data, data, sizeof data) == 0);
    npy_free(&a);
    /* 1-D needs the tuple comma, a scalar has an empty shape */
    const int ids[3] = {7, 8, 9};
    const size_t n3[1] = {3};
    ck_assert(npy_write(path, NPY_I4, 1, n3, ids, &err) == 0);
    ck_assert(npy_read(path, &a, &err) == 0);
    ck_assert(a.type == NPY_I4 && a.ndim == 1 && a.shape[0] == 3);
    ck_assert(memcmp(a.data, ids, sizeof ids) == 0);
    npy_free(&a);
    ck_assert(npy_write_real(path, 0, NULL, data, &err) == 0);
    ck_assert(npy_read(path, &a, &err) == 0);
    ck_assert(a.ndim == 0 && a.count == 1);
    npy_free(&a);
    remove_dir(dir);
}
END_TEST

/* The dump of a fresh model: every file present with its spec shape; the loss matches the
 * model's forward pass; grads are the model's own. */
START_TEST(gradref_writes_the_spec_layout) {
    char dir[64], path[256], cmd[1024];
    make_temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/pairs.tsv", dir);
    FILE *f = fopen(path, "w");
    ck_assert(f);
    fputs("I love cats\tj'aime les chats\nthe black cat sat on the mat\tle chat noir s'est "
          "assis sur le tapis\nI have a cat\tj'ai un chat\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "../bin/gradref -c ../configs/tiny.ini --pairs %s/pairs.tsv -o %s/dump --seed 4", dir,
             dir);
    char err_path[128];
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    ck_assert_int_eq(run(cmd, err_path), 0);

    Error err;
    NpyArray a;
    static const char *const batch_files[] = {"src", "src_len", "tgt_in", "tgt_out", "tgt_len"};
    int B = 3;
    for (size_t i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/dump/batch/%s.npy", dir, batch_files[i]);
        ck_assert_msg(npy_read(path, &a, &err) == 0, "%s", err.msg);
        ck_assert(a.type == NPY_I4 && (int)a.shape[0] == B);
        npy_free(&a);
    }
    /* S = longest source + </s> = 7 + 1; T = longest target + </s> = 9 + 1 */
    snprintf(path, sizeof path, "%s/dump/acts/alpha.npy", dir);
    ck_assert(npy_read(path, &a, &err) == 0);
    ck_assert(a.ndim == 3 && a.shape[0] == 3 && a.shape[1] == 10 && a.shape[2] == 8);
    /* each real step's row sums to 1, padding columns are 0 (sentence 0 has 4 source ids) */
    const real *alpha = a.data;
    for (int t = 0; t < 4; t++) {
        double sum = 0;
        for (int i = 0; i < 8; i++) sum += alpha[t * 8 + i];
        ck_assert_double_eq_tol(sum, 1, 1e-6);
        for (int i = 4; i < 8; i++) ck_assert(alpha[t * 8 + i] == 0);
    }
    npy_free(&a);
    snprintf(path, sizeof path, "%s/dump/loss.npy", dir);
    ck_assert(npy_read(path, &a, &err) == 0);
    ck_assert(a.ndim == 0);
    double loss = ((const real *)a.data)[0];
    npy_free(&a);
    ck_assert(isfinite(loss) && loss > 0);
    /* the logits are every step's z_t: the loss is the mean of log-sum-exp(z) - z_y over the
     * real target tokens */
    NpyArray z, y;
    snprintf(path, sizeof path, "%s/dump/acts/logits.npy", dir);
    ck_assert(npy_read(path, &z, &err) == 0);
    snprintf(path, sizeof path, "%s/dump/batch/tgt_out.npy", dir);
    ck_assert(npy_read(path, &y, &err) == 0);
    ck_assert(z.ndim == 3 && z.shape[0] == 3 && z.shape[1] == 10 && y.count == 3 * 10);
    int V = (int)z.shape[2];
    double sum = 0;
    int n = 0;
    for (int r = 0; r < 3 * 10; r++) {
        int target = ((const int32_t *)y.data)[r];
        if (target == 0) continue;
        const real *row = (const real *)z.data + (size_t)r * V;
        double max = row[0], s = 0;
        for (int j = 1; j < V; j++) max = fmax(max, row[j]);
        for (int j = 0; j < V; j++) s += exp(row[j] - max);
        sum += max + log(s) - row[target];
        n++;
    }
    ck_assert_double_eq_tol(sum / n, loss, 1e-5 * loss);
    npy_free(&z);
    npy_free(&y);
    /* every parameter and gradient file of the spec's table */
    Config cfg;
    ck_assert(config_load(&cfg, "../configs/tiny.ini", NULL, 0, &err) == 0);
    ModelDims dims = {.src_vocab = 10,
                      .tgt_vocab = 10,
                      .emb = cfg.model.emb_size,
                      .enc_hidden = cfg.model.enc_hidden,
                      .bidirectional = cfg.model.bidirectional,
                      .dec_hidden = cfg.model.dec_hidden,
                      .att = cfg.model.att_size,
                      .readout = cfg.model.readout_size};
    ParamTable table;
    param_table_build(&table, &dims);
    for (int p = 0; p < PARAM_COUNT; p++) {
        if (!table.info[p].size) continue;
        for (int g = 0; g < 2; g++) {
            snprintf(path, sizeof path, "%s/dump/%s/%s.npy", dir, g ? "grads" : "params",
                     table.info[p].name);
            ck_assert_msg(npy_read(path, &a, &err) == 0, "%s", err.msg);
            ck_assert_int_eq(a.ndim, table.info[p].ndim);
            if (p != P_SRC_EMB && p != P_TGT_EMB && p != P_OUT_W && p != P_OUT_B)
                ck_assert_uint_eq(a.count, table.info[p].size); /* vocabulary-free shapes */
            npy_free(&a);
        }
    }
    snprintf(path, sizeof path, "%s/dump/config.json", dir);
    char json[512];
    read_text(path, json, sizeof json);
    ck_assert(strstr(json, "\"bidirectional\": true") != NULL);
    remove_dir(dir);
}
END_TEST

/* Writes DIR/NAME: tiny.ini's sizes with dec_hidden = 2 x enc_hidden (as dot needs) and
 * E = O = 8 (as tying needs), the toy corpus under ROOT, and `extra` in its [model] section. */
static void write_dump_config(const char *dir, const char *name, const char *root,
                              const char *extra) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert(f);
    fprintf(f,
            "[data]\ntrain = %s/data/toy/train.tsv\ndev = %s/data/toy/dev.tsv\n[model]\n"
            "emb_size = 8\nenc_hidden = 8\ndec_hidden = 16\natt_size = 8\nreadout_size = 8\n%s"
            "[train]\nbatch_size = 8\nepochs = 1\n",
            root, root, extra);
    fclose(f);
}

/* Runs gradref with DIR/NAME.ini on DIR/pairs.tsv into DIR/NAME and reads its config.json. */
static void dump_with(const char *dir, const char *name, const char *err_path, char *json,
                      size_t size) {
    char cmd[1024], path[256];
    snprintf(cmd, sizeof cmd, "../bin/gradref -c %s/%s.ini --pairs %s/pairs.tsv -o %s/%s", dir,
             name, dir, dir, name);
    ck_assert_msg(run(cmd, err_path) == 0, "%s", cmd);
    snprintf(path, sizeof path, "%s/%s/config.json", dir, name);
    read_text(path, json, size);
}

/* A dump for every attention score: config.json names it, and params/ and grads/ hold exactly
 * that score's att.* tensors; --score is checked like the config key. Then the extensions:
 * tied embeddings (no out.w) and layer-normalised GRUs (every gain), each named in
 * config.json. */
START_TEST(gradref_records_the_score) {
    char dir[64], path[256], cmd[1024], err_path[128], json[512], root[4096];
    make_temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/pairs.tsv", dir);
    FILE *f = fopen(path, "w");
    ck_assert(f);
    fputs("I love cats\tj'aime les chats\nI have a cat\tj'ai un chat\n", f);
    fclose(f);
    /* dot needs D = K: tiny.ini's sizes with dec_hidden = 2 x enc_hidden */
    ck_assert(getcwd(root, sizeof root - 4) != NULL); /* tests/: the repository is its parent */
    strcat(root, "/..");
    write_dump_config(dir, "dot.ini", root, "");
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    static const char *const names[] = {"att.w_k", "att.w_q", "att.b", "att.v", "att.w_a"};
    static const struct {
        const char *score;
        unsigned present; /* bit k: names[k] is one of the score's tensors */
    } cases[] = {{"additive", 0xF}, {"dot", 0}, {"general", 0x10}, {"scaled_dot", 0x3}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *score = cases[c].score;
        bool dot = strcmp(score, "dot") == 0;
        snprintf(cmd, sizeof cmd, "../bin/gradref -c %s%s --score %s --pairs %s/pairs.tsv -o %s/%s",
                 dot ? dir : "../configs/tiny.ini", dot ? "/dot.ini" : "", score, dir, dir, score);
        ck_assert_msg(run(cmd, err_path) == 0, "%s", cmd);
        snprintf(path, sizeof path, "%s/%s/config.json", dir, score);
        read_text(path, json, sizeof json);
        char expected[64];
        snprintf(expected, sizeof expected, "\"score\": \"%s\"", score);
        ck_assert_msg(strstr(json, expected) != NULL, "%s", json);
        for (int g = 0; g < 2; g++)
            for (int k = 0; k < 5; k++) {
                snprintf(path, sizeof path, "%s/%s/%s/%s.npy", dir, score, g ? "grads" : "params",
                         names[k]);
                bool wanted = cases[c].present >> k & 1;
                ck_assert_msg((access(path, F_OK) == 0) == wanted, "%s %s", path,
                              wanted ? "missing" : "written");
            }
    }
    /* tied embeddings: config.json says so, and out.w is not written */
    write_dump_config(dir, "tied.ini", root, "tie_embeddings = true\n");
    dump_with(dir, "tied", err_path, json, sizeof json);
    ck_assert_msg(strstr(json, "\"tie_embeddings\": true") != NULL, "%s", json);
    snprintf(path, sizeof path, "%s/tied/grads/out.w.npy", dir);
    ck_assert_msg(access(path, F_OK) != 0, "%s written", path);
    snprintf(path, sizeof path, "%s/tied/grads/tgt_emb.npy", dir);
    ck_assert_msg(access(path, F_OK) == 0, "%s missing", path);
    ck_assert_msg(strstr(json, "\"layer_norm\": false") != NULL, "%s", json);
    /* layer-normalised GRUs: config.json says so, and every GRU's gains are written */
    write_dump_config(dir, "ln.ini", root, "layer_norm = true\n");
    dump_with(dir, "ln", err_path, json, sizeof json);
    ck_assert_msg(strstr(json, "\"layer_norm\": true") != NULL, "%s", json);
    const char *const gains[] = {"enc.fwd.g_ih", "enc.fwd.g_hh", "enc.bwd.g_ih",
                                 "enc.bwd.g_hh", "dec.gru.g_ih", "dec.gru.g_hh"};
    for (int k = 0; k < 6; k++) {
        snprintf(path, sizeof path, "%s/ln/grads/%s.npy", dir, gains[k]);
        ck_assert_msg(access(path, F_OK) == 0, "%s missing", path);
    }
    char msg[1024];
    snprintf(cmd, sizeof cmd,
             "../bin/gradref -c ../configs/tiny.ini --score luong --pairs %s/pairs.tsv -o %s/x",
             dir, dir);
    ck_assert_int_eq(run(cmd, err_path), 2);
    read_text(err_path, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "unknown attention score 'luong'") != NULL, "%s", msg);
    /* tiny.ini has D = 8 and K = 2 x 8 */
    snprintf(cmd, sizeof cmd,
             "../bin/gradref -c ../configs/tiny.ini --score dot --pairs %s/pairs.tsv -o %s/x", dir,
             dir);
    ck_assert_int_eq(run(cmd, err_path), 1);
    read_text(err_path, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "dec_hidden = 8 and K = 16") != NULL, "%s", msg);
    remove_dir(dir);
}
END_TEST

START_TEST(tools_report_bad_input_in_one_line) {
    char dir[64], err_path[128], cmd[1024], msg[2048];
    make_temp_dir(dir, sizeof dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    /* a missing model names the file */
    snprintf(cmd, sizeof cmd, "../bin/translate -m %s/none.ckpt hello", dir);
    ck_assert_int_eq(run(cmd, err_path), 1);
    read_text(err_path, msg, sizeof msg);
    ck_assert(strstr(msg, "none.ckpt") != NULL && strchr(msg, '\n') == msg + strlen(msg) - 1);
    /* bad option values are rejected, not clamped */
    ck_assert_int_eq(run("../bin/translate --beam 0 hello", err_path), 2);
    read_text(err_path, msg, sizeof msg);
    ck_assert(strstr(msg, "--beam") != NULL);
    /* gradref needs exactly one model source */
    ck_assert_int_eq(run("../bin/gradref --pairs x.tsv -o out", err_path), 2);
    snprintf(cmd, sizeof cmd,
             "../bin/gradref -c ../configs/tiny.ini --pairs %s/missing.tsv -o %s/d", dir, dir);
    ck_assert_int_eq(run(cmd, err_path), 1);
    read_text(err_path, msg, sizeof msg);
    ck_assert(strstr(msg, "missing.tsv") != NULL);
    /* a pair longer than the translator's limit: a 524,288-token pair grew the dump's
     * activations to 9.2 GB before anything was said (issue #45) */
    char pairs[128];
    snprintf(pairs, sizeof pairs, "%s/long.tsv", dir);
    FILE *f = fopen(pairs, "w");
    ck_assert_ptr_nonnull(f);
    fputs("I love cats\tj'aime les chats\n", f);
    for (int i = 0; i < 600; i++) fputs("cat ", f);
    fputs("\tle chat\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "../bin/gradref -c ../configs/tiny.ini --pairs %s -o %s/d", pairs,
             dir);
    ck_assert_int_eq(run(cmd, err_path), 1);
    read_text(err_path, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "long.tsv:2: the source has 600 tokens, more than the 250") &&
                      strchr(msg, '\n') == msg + strlen(msg) - 1,
                  "%s", msg);
    remove_dir(dir);
}
END_TEST

START_TEST(training_resumes_exactly) {
    /* 40 steps in one go, and 20 + 20 with --resume, give the same losses bit for bit */
    char dir[64], cmd[1024], err_path[128], whole[4096], split[4096], path[160];
    make_temp_dir(dir, sizeof dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    const char *common = "../bin/train ../configs/tiny.ini --set train.valid_every=20 "
                         "--set train.log_every=5 --set train.threads=2";
    snprintf(cmd, sizeof cmd, "%s --set train.max_steps=40 --set train.out_dir=%s/a", common, dir);
    ck_assert_int_eq(run(cmd, err_path), 0);
    snprintf(cmd, sizeof cmd, "%s --set train.max_steps=20 --set train.out_dir=%s/b", common, dir);
    ck_assert_int_eq(run(cmd, err_path), 0);
    snprintf(cmd, sizeof cmd, "%s --set train.max_steps=40 --set train.out_dir=%s/b --resume",
             common, dir);
    ck_assert_int_eq(run(cmd, err_path), 0);
    snprintf(path, sizeof path, "%s/a/train_log.tsv", dir);
    log_column(path, 2, whole, sizeof whole);
    snprintf(path, sizeof path, "%s/b/train_log.tsv", dir);
    log_column(path, 2, split, sizeof split);
    ck_assert_str_eq(whole, split);
    ck_assert(strlen(whole) > 40); /* there were losses to compare */
    remove_dir(dir);
}
END_TEST

START_TEST(training_bits_do_not_depend_on_the_threads) {
    /* 1 thread runs the decoder's steps on 32 rows, 2 threads on shares of 16, where gemm()
     * alone would take its dot products (AVX2, AVX-512): the checkpoints are the same bytes,
     * so a run does not change when training chooses its threads by the machine's load */
    char dir[64], cmd[1024], err_path[128], path[2][160];
    make_temp_dir(dir, sizeof dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    unsigned char *ckpt[2];
    size_t len[2];
    for (int t = 0; t < 2; t++) {
        snprintf(cmd, sizeof cmd,
                 "../bin/train ../configs/tiny.ini --set train.batch_size=32 --set "
                 "train.max_steps=40 --set train.valid_every=20 --set train.threads=%d --set "
                 "train.out_dir=%s/t%d",
                 t + 1, dir, t + 1);
        ck_assert_int_eq(run(cmd, err_path), 0);
        snprintf(path[t], sizeof path[t], "%s/t%d/best.ckpt", dir, t + 1);
        ckpt[t] = slurp_file(path[t], &len[t]);
        ck_assert_ptr_nonnull(ckpt[t]);
    }
    ck_assert_msg(len[0] == len[1] && memcmp(ckpt[0], ckpt[1], len[0]) == 0, "%s and %s differ",
                  path[0], path[1]);
    free(ckpt[0]), free(ckpt[1]);
    remove_dir(dir);
}
END_TEST

START_TEST(interrupted_training_saves_a_resumable_checkpoint) {
    char dir[64], out[128], ckpt[160];
    make_temp_dir(dir, sizeof dir);
    snprintf(out, sizeof out, "train.out_dir=%s/run", dir);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        execl("../bin/train", "train", "../configs/tiny.ini", "--set", out, "--set",
              "train.valid_every=100000", "--set", "train.epochs=50", "--set", "train.log_every=1",
              (char *)NULL);
        _exit(127);
    }
    /* interrupt it once it is in the training loop: its log has a line for a step, after the
     * header (at most 30 s, so a trainer that never gets there still ends the test) */
    char log[160];
    snprintf(log, sizeof log, "%s/run/train_log.tsv", dir);
    for (int waited = 0; waited < 3000 && count_lines(log) < 2; waited++)
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    kill(pid, SIGINT);
    int status;
    ck_assert(waitpid(pid, &status, 0) == pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGINT, "status %d", status);
    snprintf(ckpt, sizeof ckpt, "%s/run/last.ckpt", dir);
    NmtModel nm;
    TrainState state = {0};
    bool has_state;
    Error err;
    ck_assert_msg(checkpoint_load(ckpt, &nm, &state, &has_state, &err) == 0, "%s", err.msg);
    ck_assert(has_state && state.step > 0);
    nmt_model_free(&nm);
    free(state.adam_m), free(state.adam_v);
    remove_dir(dir);
}
END_TEST

/* A fresh model of configs/tiny.ini (random parameters, seed 11) with the vocabularies of
 * its training corpus; cfg gets the config. */
static void tiny_model(NmtModel *nm, Config *cfg) {
    Error err;
    Corpus corpus;
    TokenizedCorpus tokens;
    ck_assert(config_load(cfg, "../configs/tiny.ini", NULL, 0, &err) == 0);
    ck_assert(corpus_load(cfg->data.train, true, &corpus, &tokens, &err) == 0);
    ck_assert_msg(nmt_model_from_config(nm, cfg, &tokens, 11, &err) == 0, "%s", err.msg);
    tokenized_corpus_free(&tokens);
    corpus_free(&corpus);
}

/* bin/align --ref on a pair gives exactly the acts/alpha.npy that bin/gradref writes for the
 * same model and pair: both are the model's force-decoded attention. */
START_TEST(align_matches_the_gradient_reference_dump) {
    char dir[64], path[256], cmd[1024], err_path[128];
    make_temp_dir(dir, sizeof dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    /* a small fresh model, saved as a checkpoint */
    Config cfg;
    Error err;
    NmtModel nm;
    tiny_model(&nm, &cfg);
    snprintf(path, sizeof path, "%s/model.ckpt", dir);
    ck_assert(checkpoint_save(path, &nm, NULL, &err) == 0);
    nmt_model_free(&nm);
    snprintf(path, sizeof path, "%s/pair.tsv", dir);
    FILE *f = fopen(path, "w");
    ck_assert(f);
    fputs("the black cat sat on the mat\tle chat noir s'est assis sur le tapis\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "../bin/gradref -m %s/model.ckpt --pairs %s/pair.tsv -o %s/dump", dir,
             dir, dir);
    ck_assert_int_eq(run(cmd, err_path), 0);
    snprintf(cmd, sizeof cmd,
             "../bin/align -m %s/model.ckpt --format npy -o %s/align.npy --ref \"le chat noir "
             "s'est assis sur le tapis\" \"the black cat sat on the mat\"",
             dir, dir);
    ck_assert_int_eq(run(cmd, err_path), 0);
    NpyArray dump, align;
    snprintf(path, sizeof path, "%s/dump/acts/alpha.npy", dir);
    ck_assert_msg(npy_read(path, &dump, &err) == 0, "%s", err.msg);
    snprintf(path, sizeof path, "%s/align.npy", dir);
    ck_assert_msg(npy_read(path, &align, &err) == 0, "%s", err.msg);
    /* dump [1, T, S], align [T, S] (float32) */
    ck_assert(dump.ndim == 3 && dump.shape[0] == 1 && align.ndim == 2);
    ck_assert(dump.shape[1] == align.shape[0] && dump.shape[2] == align.shape[1]);
    const real *a = dump.data;
    const float *b = align.data;
    for (size_t i = 0; i < align.count; i++)
        ck_assert_msg((float)a[i] == b[i], "alpha[%zu]: dump %g, align %g", i, (double)a[i],
                      (double)b[i]);
    npy_free(&dump);
    npy_free(&align);
    remove_dir(dir);
}
END_TEST

/* What score_corpus hands its sink, checked as it comes. */
typedef struct {
    const Corpus *corpus;
    size_t next; /* the index expected next */
    bool in_order;
    BleuStats bleu;
} SinkCheck;

static void check_sink(void *user, size_t index, const char *source, const char *hypothesis,
                       const char *reference) {
    SinkCheck *c = user;
    Error err;
    /* the reference is the file's own text, not a detokenized copy of it */
    c->in_order = c->in_order && index == c->next && source == c->corpus->src[index] &&
                  reference == c->corpus->tgt[index];
    c->next = index + 1;
    ck_assert_msg(bleu_add(&c->bleu, hypothesis, reference, &err) == 0, "%s", err.msg);
}

/* score_corpus translates in batches of similar lengths, but the sink sees the pairs in corpus
 * order, BLEU is that of the translations it saw, and the loss does not depend on how the
 * pairs are batched (one at a time against eight at a time, to round-off). */
START_TEST(scoring_reports_in_corpus_order) {
    Config cfg;
    Error err;
    Corpus corpus;
    TokenizedCorpus tokens;
    NmtModel nm;
    tiny_model(&nm, &cfg);
    ck_assert(corpus_load(cfg.data.dev, true, &corpus, &tokens, &err) == 0);
    SinkCheck check = {.corpus = &corpus, .in_order = true};
    bleu_stats_init(&check.bleu, NULL);
    Scores by8, by1;
    ck_assert_msg(
        score_corpus(&nm, &corpus, &tokens, "dev", 8, 1, NULL, &by8, check_sink, &check, &err) == 0,
        "%s", err.msg);
    ck_assert(check.in_order && check.next == corpus.count && by8.sentences == corpus.count);
    ck_assert(bleu_score(&check.bleu).score == by8.bleu.score);
    ck_assert(score_corpus(&nm, &corpus, &tokens, "dev", 1, 1, NULL, &by1, NULL, NULL, &err) == 0);
    ck_assert(by1.tokens == by8.tokens && by8.tokens > corpus.count);
    ck_assert_msg(fabs(by1.loss - by8.loss) <= 1e-5 * by1.loss,
                  "loss %.9g one at a time, %.9g "
                  "eight at a time",
                  by1.loss, by8.loss);
    nmt_model_free(&nm);
    tokenized_corpus_free(&tokens);
    corpus_free(&corpus);
}
END_TEST

/* max |a - b| / max |b| over the values of two .npy files of the same shape, counting only
 * the rows [b, t, ...] of real target steps (t < tgt_len[b]) when tgt_len is given. */
static double npy_difference(const char *path_a, const char *path_b, const int *tgt_len) {
    Error err;
    NpyArray a, b;
    ck_assert_msg(npy_read(path_a, &a, &err) == 0, "%s", err.msg);
    ck_assert_msg(npy_read(path_b, &b, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(a.count, b.count);
    ck_assert(a.type == npy_real_type() && b.type == a.type);
    size_t row = tgt_len ? a.count / (a.shape[0] * a.shape[1]) : 1;
    double diff = 0, scale = 0;
    for (size_t i = 0; i < a.count; i++) {
        if (tgt_len && (int)(i / row % a.shape[1]) >= tgt_len[i / row / a.shape[1]]) continue;
        double x = ((const real *)a.data)[i], y = ((const real *)b.data)[i];
        diff = fmax(diff, fabs(x - y));
        scale = fmax(scale, fabs(y));
    }
    npy_free(&a);
    npy_free(&b);
    return scale > 0 ? diff / scale : diff;
}

/* bin/gradref --reference (the plain reference) and bin/gradref (the engine) write the same
 * dump of a toy batch: loss, activations at real target steps and every gradient within
 * round-off of each tensor's largest value. */
START_TEST(gradref_reference_agrees_with_the_engine) {
#ifdef REAL_DOUBLE
    const double tolerance = 1e-12;
#else
    const double tolerance = 1e-5;
#endif
    char dir[64], path[256], other[256], cmd[1024], err_path[128];
    make_temp_dir(dir, sizeof dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    for (int reference = 0; reference < 2; reference++) {
        snprintf(cmd, sizeof cmd,
                 "head -n 12 ../data/toy/test.tsv > %s/pairs.tsv && ../bin/gradref -c "
                 "../configs/toy.ini --pairs %s/pairs.tsv -o %s/%s --seed 3%s",
                 dir, dir, dir, reference ? "ref" : "engine", reference ? " --reference" : "");
        ck_assert_int_eq(run(cmd, err_path), 0);
    }
    Error err;
    NpyArray lengths;
    snprintf(path, sizeof path, "%s/engine/batch/tgt_len.npy", dir);
    ck_assert_msg(npy_read(path, &lengths, &err) == 0, "%s", err.msg);
    const char *const files[] = {"loss", "acts/alpha", "acts/enc_h", "acts/dec_s", "acts/logits"};
    const bool per_step[] = {false, true, false, true, true};
    double worst = 0;
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        snprintf(path, sizeof path, "%s/engine/%s.npy", dir, files[k]);
        snprintf(other, sizeof other, "%s/ref/%s.npy", dir, files[k]);
        double rel = npy_difference(path, other, per_step[k] ? lengths.data : NULL);
        EXPECT_MSG(rel <= tolerance, "%s differs by %.3g", files[k], rel);
        worst = fmax(worst, rel);
    }
    ParamTable table;
    ModelDims dims = {.src_vocab = 8,
                      .tgt_vocab = 8,
                      .emb = 1,
                      .enc_hidden = 1,
                      .bidirectional = 1,
                      .dec_hidden = 1,
                      .att = 1,
                      .readout = 1};
    param_table_build(&table, &dims); /* the toy config's: bidirectional, additive */
    for (int p = 0; p < PARAM_COUNT; p++) {
        if (!table.info[p].size) continue;
        snprintf(path, sizeof path, "%s/engine/grads/%s.npy", dir, table.info[p].name);
        snprintf(other, sizeof other, "%s/ref/grads/%s.npy", dir, table.info[p].name);
        double rel = npy_difference(path, other, NULL);
        EXPECT_MSG(rel <= tolerance, "grads/%s differs by %.3g", table.info[p].name, rel);
        worst = fmax(worst, rel);
    }
    printf("gradref --reference against gradref (%s build, toy model, 12 pairs): worst relative "
           "difference %.2g\n",
           REAL_NAME, worst);
    npy_free(&lengths);
    remove_dir(dir);
}
END_TEST

/* bin/reference-train trains the tiny setup with the reference alone into a checkpoint that
 * bin/translate reads, and refuses a key it does not implement by name, in one line. */
START_TEST(reference_train_writes_a_translating_checkpoint) {
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    char config[512], model[512];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "run-reference/best.ckpt", model, sizeof model);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/reference-train", config, NULL}, NULL, 60,
                NULL);
    ck_assert_msg(r.status == 0, "reference-train failed (%d): %s", r.status, r.err);
    assert_contains(r.out, "saved best.ckpt");
    run_program(&r, &s, (const char *const[]){"../bin/translate", "-m", model, "a cat", NULL}, NULL,
                30, NULL);
    ck_assert_msg(r.status == 0, "translate failed (%d): %s", r.status, r.err);
    run_program(
        &r, &s,
        (const char *const[]){"../bin/reference-train", config, "--set", "train.ema=0.99", NULL},
        NULL, 30, NULL);
    assert_one_line_error(&r, "reference-train", 1, (const char *const[]){"[train] ema", NULL});
    scratch_free(&s);
}
END_TEST

/* A new run into a folder that held a trained model replaced its best.ckpt, last.ckpt and log
 * without a word (a forgotten --resume cost the model). Refused, the checkpoints and the log
 * untouched; --resume goes on, --overwrite starts again in its place. */
START_TEST(new_run_keeps_a_trained_folder) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char config[512], best[512], last[512], log[512];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "run/best.ckpt", best, sizeof best);
    scratch_path(&s, "run/last.ckpt", last, sizeof last);
    scratch_path(&s, "run/train_log.tsv", log, sizeof log);
    const char *kept[] = {best, last, log};
    unsigned char *before[3];
    size_t before_len[3], after_len;
    for (int k = 0; k < 3; k++) {
        before[k] = slurp_file(kept[k], &before_len[k]);
        ck_assert_ptr_nonnull(before[k]);
    }
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/train", config, NULL}, NULL, 60, NULL);
    assert_one_line_error(&r, "train", 1,
                          (const char *const[]){"holds a trained model (best.ckpt)", "--resume",
                                                "--overwrite", "--set train.out_dir=", NULL});
    for (int k = 0; k < 3; k++) {
        unsigned char *after = slurp_file(kept[k], &after_len);
        ck_assert_msg(after_len == before_len[k] && memcmp(before[k], after, after_len) == 0,
                      "%s changed", kept[k]);
        free(after), free(before[k]);
    }
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--resume", "--set",
                                      "train.max_steps=6", NULL},
                NULL, 60, NULL);
    ck_assert_msg(r.status == 0, "resuming failed (%d): %s", r.status, r.err);
    run_program(&r, &s, (const char *const[]){"../bin/train", config, "--overwrite", NULL}, NULL,
                60, NULL);
    ck_assert_msg(r.status == 0, "--overwrite failed (%d): %s", r.status, r.err);
    scratch_free(&s);
}
END_TEST

/* Issue #45: bin/reference-train given the engine's config writes a folder of its own
 * (out_dir + "-reference"), leaves the engine's model as it was, and refuses, in one line
 * naming the way out, a folder whose checkpoints the other program or other settings made;
 * the same program and settings (a rerun, a --resume) keep their folder. */
START_TEST(reference_train_keeps_to_its_own_folder) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char config[512], engine_best[512], reference_best[512], dir[512];
    char engine_dir[600], reference_dir[600]; /* --set paths are read from the working folder */
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "run/best.ckpt", engine_best, sizeof engine_best);
    scratch_path(&s, "run-reference/best.ckpt", reference_best, sizeof reference_best);
    scratch_path(&s, "run", dir, sizeof dir);
    snprintf(engine_dir, sizeof engine_dir, "train.out_dir=%s", dir);
    scratch_path(&s, "run-reference", dir, sizeof dir);
    snprintf(reference_dir, sizeof reference_dir, "train.out_dir=%s", dir);
    size_t before_len, after_len;
    unsigned char *before = slurp_file(engine_best, &before_len);
    ck_assert_ptr_nonnull(before);
    RunResult r;
    run_program(&r, &s, (const char *const[]){"../bin/reference-train", config, NULL}, NULL, 60,
                NULL);
    ck_assert_msg(r.status == 0, "reference-train failed (%d): %s", r.status, r.err);
    ck_assert_msg(access(reference_best, F_OK) == 0, "no %s", reference_best);
    /* into the engine's folder, named: refused; and the engine into the reference's */
    run_program(&r, &s,
                (const char *const[]){"../bin/reference-train", config, "--set", engine_dir, NULL},
                NULL, 60, NULL);
    assert_one_line_error(
        &r, "reference-train", 1,
        (const char *const[]){"holds the checkpoints of bin/train", "--set train.out_dir=", NULL});
    run_program(&r, &s, (const char *const[]){"../bin/train", config, "--set", reference_dir, NULL},
                NULL, 60, NULL);
    assert_one_line_error(&r, "train", 1,
                          (const char *const[]){"holds the checkpoints of bin/reference-train",
                                                "--set train.out_dir=", NULL});
    /* other [model] settings, not resuming: refused; a rerun of the same settings is not */
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--set", "model.emb_size=6", NULL},
                NULL, 60, NULL);
    assert_one_line_error(&r, "train", 1,
                          (const char *const[]){"other [data] or [model] settings", NULL});
    unsigned char *after = slurp_file(engine_best, &after_len);
    ck_assert_ptr_nonnull(after);
    ck_assert_msg(after_len == before_len && memcmp(before, after, before_len) == 0,
                  "the engine's best.ckpt changed");
    free(before);
    free(after);
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--resume", "--set",
                                      "train.max_steps=6", NULL},
                NULL, 60, NULL);
    ck_assert_msg(r.status == 0, "resuming the engine failed (%d): %s", r.status, r.err);
    run_program(&r, &s, (const char *const[]){"../bin/reference-train", config, NULL}, NULL, 60,
                NULL);
    assert_one_line_error(&r, "reference-train", 1,
                          (const char *const[]){"holds a trained model", "--overwrite", NULL});
    ck_assert_msg(strstr(r.err, "--resume") == NULL, "reference-train has no --resume: %s", r.err);
    run_program(&r, &s,
                (const char *const[]){"../bin/reference-train", config, "--overwrite", NULL}, NULL,
                60, NULL);
    ck_assert_msg(r.status == 0, "rerunning reference-train failed (%d): %s", r.status, r.err);
    scratch_free(&s);
}
END_TEST

/* One convention for command-line mistakes (issue #36): an unknown option, a missing value or
 * a bad one is a single line "PROGRAM: PROBLEM (see PROGRAM --help)" with the program's short
 * name, never the whole usage; --help prints the usage to stdout, also for run_tests. */
START_TEST(every_program_gives_usage_errors_in_one_form) {
    static const char *const programs[] = {"train",     "translate",       "evaluate", "align",
                                           "gradcheck", "gradref",         "attend",   "gencorpus",
                                           "plot",      "reference-train", "quantize"};
    Scratch s;
    scratch_make(&s);
    RunResult r;
    for (size_t k = 0; k < sizeof programs / sizeof programs[0]; k++) {
        char path[64], expected[160];
        snprintf(path, sizeof path, "../bin/%s", programs[k]);
        run_program(&r, &s, (const char *const[]){path, "--bogus", "x", NULL}, NULL, 30, NULL);
        snprintf(expected, sizeof expected, "%s: unknown option '--bogus' (see %s --help)\n",
                 programs[k], programs[k]);
        ck_assert_int_eq(r.status, 2);
        ck_assert_str_eq(r.err, expected);
        run_program(&r, &s, (const char *const[]){path, "--help", NULL}, NULL, 30, NULL);
        ck_assert_int_eq(r.status, 0);
        snprintf(expected, sizeof expected, "usage: %s ", programs[k]);
        ck_assert_msg(strncmp(r.out, expected, strlen(expected)) == 0, "%s --help: %.80s",
                      programs[k], r.out);
    }
    const struct {
        const char *const argv[5], *expected;
    } cases[] = {
        {{"../bin/translate", "--beam", NULL},
         "translate: option '--beam' needs a value (see translate --help)\n"},
        {{"../bin/translate", "--keep-unk=1", NULL},
         "translate: option '--keep-unk' takes no value (see translate --help)\n"},
        {{"../bin/translate", "-q", NULL},
         "translate: unknown option '-q' (see translate --help)\n"},
        {{"../bin/translate", "--beam", "0", NULL},
         "translate: invalid --beam '0' (expected a whole number from 1 to 100) (see translate "
         "--help)\n"},
        {{"../bin/translate", "--beem", "3", NULL},
         "translate: unknown option '--beem'; did you mean '--beam'? (see translate --help)\n"},
        {{"../bin/align", "--formt=json", NULL},
         "align: unknown option '--formt'; did you mean '--format'? (see align --help)\n"},
        {{"../bin/train", "--sett", "x", NULL},
         "train: unknown option '--sett'; did you mean '--set'? (see train --help)\n"},
        {{"../bin/train", "--set", NULL},
         "train: option '--set' needs a value (see train --help)\n"},
        {{"../bin/train", NULL}, "train: missing CONFIG (see train --help)\n"},
        {{"../bin/plot", "log.tsv", NULL}, "plot: -o FILE.svg is required (see plot --help)\n"},
        {{"../bin/run_tests", "--bogus", NULL},
         "run_tests: unknown option '--bogus' (see run_tests --help)\n"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        run_program(&r, &s, cases[k].argv, NULL, 30, NULL);
        ck_assert_int_eq(r.status, 2);
        ck_assert_str_eq(r.err, cases[k].expected);
    }
    /* the runner's --help is its usage, not a run of every suite */
    run_program(&r, &s, (const char *const[]){"../bin/run_tests", "--help", NULL}, NULL, 10, NULL);
    ck_assert_int_eq(r.status, 0);
    ck_assert_msg(strncmp(r.out, "usage: run_tests", 16) == 0, "%.200s", r.out);
    ck_assert_ptr_null(strstr(r.out, " passed, ")); /* the closing line of a run */
    /* translate's usage line names every option */
    run_program(&r, &s, (const char *const[]){"../bin/translate", "--help", NULL}, NULL, 10, NULL);
    const char *body = strstr(r.out, "\nTranslates");
    ck_assert_ptr_nonnull(body);
    static const char *const options[] = {"-m MODEL",         "--beam N",     "--nbest N",
                                          "--max-len N",      "--len-norm X", "--align FILE",
                                          "--align-format F", "--keep-unk",   "--unbuffered"};
    for (size_t k = 0; k < sizeof options / sizeof options[0]; k++) {
        const char *at = strstr(r.out, options[k]);
        ck_assert_msg(at && at < body, "translate's usage line lacks %s", options[k]);
    }
    scratch_free(&s);
}
END_TEST

/* References as written (issue #42): bin/evaluate scores against the test file's second
 * column byte for byte, with no tokenizer in between. Before, " ?" lost its space, ’ became '
 * and « Autodiscover » became «Autodiscover» (one 13a word where sacreBLEU counts three), and
 * a lower-casing model (as the tiny one) had its references lower-cased. The expected line is
 * sacreBLEU's BLEU of the printed hypotheses against the file's text, with zh as well. */
static const char *const WRITTEN_REFERENCES[] = {
    "Voulez-vous continuer ?", "Cliquez sur l’arrière-plan.", "Le service « Autodiscover ».",
    "Note : ce fichier sera supprimé."};

START_TEST(evaluate_scores_the_references_as_written) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char model[128], pairs[128], text[1024] = "";
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    scratch_path(&s, "written.tsv", pairs, sizeof pairs);
    const char *sources[] = {"I love cats", "the black cat", "I have a cat", "We see the dog"};
    size_t count = sizeof WRITTEN_REFERENCES / sizeof WRITTEN_REFERENCES[0];
    for (size_t i = 0; i < count; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s\t%s\n", sources[i],
                 WRITTEN_REFERENCES[i]);
    scratch_write_text(&s, "written.tsv", text);
    for (int tokenize = BLEU_TOKENIZE_13A; tokenize <= BLEU_TOKENIZE_ZH; tokenize++) {
        RunResult r;
        run_program(&r, &s,
                    (const char *const[]){"../bin/evaluate", "-m", model, "--test", pairs, "--show",
                                          "4", "--tokenize", bleu_tokenize_name(tokenize), NULL},
                    NULL, 30, NULL);
        ck_assert_msg(r.status == 0, "evaluate failed (%d): %s", r.status, r.err);
        BleuStats bleu;
        bleu_stats_init(&bleu, &(ScoreOptions){.tokenize = (BleuTokenize)tokenize});
        const char *at = r.out;
        for (size_t i = 0; i < count; i++) {
            /* "HYP text\nREF text\n", either text maybe empty */
            char hyp[512] = "", ref[512] = "";
            at = strstr(at, "HYP ");
            ck_assert_ptr_nonnull(at);
            size_t hyp_len = strcspn(at + 4, "\n");
            ck_assert(hyp_len < sizeof hyp && strncmp(at + 4 + hyp_len, "\nREF ", 5) == 0);
            memcpy(hyp, at + 4, hyp_len);
            at += 4 + hyp_len + 5;
            size_t ref_len = strcspn(at, "\n");
            ck_assert(ref_len < sizeof ref);
            memcpy(ref, at, ref_len);
            ck_assert_str_eq(ref, WRITTEN_REFERENCES[i]);
            Error err = {{0}};
            ck_assert_msg(bleu_add(&bleu, hyp, WRITTEN_REFERENCES[i], &err) == 0, "%s", err.msg);
        }
        char line[METRICS_LINE_MAX], signature[METRICS_LINE_MAX];
        BleuResult result = bleu_score(&bleu);
        bleu_format(&result, line, sizeof line);
        assert_contains(r.out, line);
        /* 13a: 3 + 4 + 6 + 7 words; zh also splits ’ (U+2019) off */
        ck_assert_uint_eq(result.ref_len, tokenize == BLEU_TOKENIZE_13A ? 20 : 22);
        bleu_signature(&bleu.options, signature, sizeof signature);
        assert_contains(r.out, signature);
    }
    scratch_free(&s);
}
END_TEST

/* Interactive bin/translate (issue #36): on a terminal, or with --unbuffered, each line is
 * answered as soon as it arrives, with standard input still open; from a pipe without the
 * flag it reads in chunks (the speed a file needs), so nothing comes before the chunk ends. */
START_TEST(translate_answers_each_line_as_it_arrives) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char model[128];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    RunResult r;
    run_program(&r, &s,
                (const char *const[]){"../bin/translate", "-m", model, "I love cats",
                                      "the black cat", NULL},
                NULL, 30, NULL);
    ck_assert_int_eq(r.status, 0);
    char first[256], second[256];
    ck_assert(sscanf(r.out, "%255[^\n]\n%255[^\n]", first, second) == 2);

    Conversation c;
    conversation_start(
        &c, (const char *const[]){"../bin/translate", "-m", model, "--unbuffered", NULL});
    conversation_send(&c, "I love cats\n");
    ck_assert_msg(conversation_wait_for(&c, first, 20), "no answer to the first line: '%s'", c.out);
    conversation_send(&c, "the black cat\n");
    ck_assert_msg(conversation_wait_for(&c, second, 20), "no answer to the second line: '%s'",
                  c.out);
    ck_assert_int_eq(conversation_end(&c, 20), 0);

    conversation_start(&c, (const char *const[]){"../bin/translate", "-m", model, NULL});
    conversation_send(&c, "I love cats\n");
    ck_assert_msg(!conversation_wait_for(&c, first, 1), "a pipe is read a line at a time");
    ck_assert_int_eq(conversation_end(&c, 20), 0);

    /* a terminal: `script` gives the program a pseudo-terminal for its standard streams */
    const char *script = script_program();
    if (!script) {
        test_skip("translate_answers_each_line_as_it_arrives (terminal part)",
                  "`script` (util-linux) is not installed, so no pseudo-terminal");
        scratch_free(&s);
        return;
    }
    char command[256];
    snprintf(command, sizeof command, "../bin/translate -m %s", model);
    conversation_start(&c, (const char *const[]){script, "-q", "-c", command, "/dev/null", NULL});
    /* with a line that says what to do: a newcomer otherwise faces a silent cursor */
    ck_assert_msg(
        conversation_wait_for(&c, "type a sentence, Enter to translate, Ctrl-D to end", 20),
        "no hint on a terminal: '%s'", c.out);
    conversation_send(&c, "I love cats\n");
    ck_assert_msg(conversation_wait_for(&c, first, 20), "no answer on a terminal: '%s'", c.out);
    conversation_end(&c, 5);
    scratch_free(&s);
}
END_TEST

/* Unknown words never vanish silently (issue #36): each source word read as <unk> is named on
 * stderr, and so is each word <unk> replacement copied into the translation. A target
 * vocabulary of one word makes the model write <unk> for the rest. */
START_TEST(translate_names_unknown_and_copied_words) {
    Scratch s;
    scratch_make(&s);
    scratch_write_setup(&s);
    char config[128], model[128];
    scratch_path(&s, "tiny.ini", config, sizeof config);
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    RunResult r;
    run_program(&r, &s,
                (const char *const[]){"../bin/train", config, "--set", "data.tgt_vocab_size=5",
                                      "--set", "train.max_steps=20", "--set", "optim.lr=0.05",
                                      NULL},
                NULL, 60, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_program(&r, &s,
                (const char *const[]){"../bin/translate", "-m", model, "I love quantum cats",
                                      "zzz qqq", NULL},
                NULL, 30, NULL);
    ck_assert_int_eq(r.status, 0);
    assert_contains(r.err, "translate: argument 1: unknown to the model, read as <unk>: "
                           "'quantum'\n");
    assert_contains(r.err, "translate: argument 2: the model does not know this text: no word of "
                           "it is known to the model\n");
    assert_contains(r.err, "translate: argument 1: <unk> in the translation replaced by the "
                           "source word");
    /* bin/align says so too (issue #45), and still aligns */
    RunResult a;
    run_program(&a, &s, (const char *const[]){"../bin/align", "-m", model, "zzz qqq", NULL}, NULL,
                30, NULL);
    ck_assert_int_eq(a.status, 0);
    assert_contains(a.err, "align: argument 1: the model does not know this text: no word of it "
                           "is known to the model\n");
    ck_assert_ptr_null(strstr(r.out, "<unk>"));
    /* --keep-unk copies nothing, so it says nothing about copies */
    run_program(&r, &s,
                (const char *const[]){"../bin/translate", "-m", model, "--keep-unk",
                                      "I love quantum cats", NULL},
                NULL, 30, NULL);
    ck_assert_int_eq(r.status, 0);
    assert_contains(r.out, "<unk>");
    assert_contains(r.err, "'quantum'");
    ck_assert_ptr_null(strstr(r.err, "replaced"));
    scratch_free(&s);
}
END_TEST

/* bin/translate -m MODEL --align FILE [--align-format FORMAT] "I love cats" */
static void translate_with_alignment(RunResult *r, const Scratch *s, const char *model,
                                     const char *file, const char *format) {
    const char *const with[] = {"../bin/translate", "-m",   model,         "--align", file,
                                "--align-format",   format, "I love cats", NULL};
    const char *const without[] = {"../bin/translate", "-m", model, "--align", file,
                                   "I love cats",      NULL};
    run_program(r, s, format ? with : without, NULL, 30, NULL);
}

/* What translate_with_alignment wrote to the scratch file `name`; it must have succeeded. */
static char *alignment_file(const Scratch *s, const char *model, const char *name,
                            const char *format) {
    char file[256];
    scratch_path(s, name, file, sizeof file);
    RunResult r;
    translate_with_alignment(&r, s, model, file, format);
    ck_assert_msg(r.status == 0, "--align %s: %s", name, r.err);
    size_t len;
    return (char *)slurp_file(file, &len);
}

/* bin/translate --align FILE: the extension chooses the format, as bin/align's -o does
 * (attention.html got Pharaoh links under a page's name, exit 0). A format translate does not
 * write, one that disagrees with the extension, or the name of a picture gets a one-line
 * usage error naming the file and the value before the model is read (here there is none) and
 * leaves no file. links.txt and a name without an extension keep the word links. */
START_TEST(translate_align_extension_chooses_or_refuses_format) {
    Scratch s;
    scratch_make(&s);
    scratch_train_model(&s);
    char model[128], missing[128], file[256];
    scratch_path(&s, "run/best.ckpt", model, sizeof model);
    scratch_path(&s, "no-model.ckpt", missing, sizeof missing);
    static const char *const refused[][3] = {
        /* FILE, --align-format (NULL: none), the value the message names besides FILE */
        {"attention.html", "pharaoh", "pharaoh"},
        {"weights.tsv", "json", "json"},
        {"attention.svg", NULL, "bin/align"},
        {"attention.npy", NULL, "bin/align"},
        {"weights.dat", "svg", "svg"},
        {"attention.png", NULL, ".png"},
    };
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        scratch_path(&s, refused[k][0], file, sizeof file);
        RunResult r;
        translate_with_alignment(&r, &s, missing, file, refused[k][1]);
        assert_one_line_error(&r, "translate", 2,
                              (const char *const[]){refused[k][0], refused[k][2], NULL});
        ck_assert_msg(access(file, F_OK) != 0, "%s was written", file);
    }
    /* the extension chooses; .txt holds any format of lines */
    static const char *const chosen[][3] = {
        /* FILE, --align-format (NULL: none), what the file holds */
        {"a.html", NULL, "<!DOCTYPE html>"},
        {"a.htm", NULL, "<!DOCTYPE html>"},
        {"a.json", NULL, "{\"source\": \"I love cats\""},
        {"a.jsonl", NULL, "{\"source\": \"I love cats\""},
        {"a.tsv", NULL, "\tlove\tcats\t</s>\n"},
        {"rows.txt", "json", "{\"source\": \"I love cats\""},
    };
    for (size_t k = 0; k < sizeof chosen / sizeof chosen[0]; k++) {
        char *text = alignment_file(&s, model, chosen[k][0], chosen[k][1]);
        ck_assert_msg(strstr(text, chosen[k][2]), "%s does not hold %s", chosen[k][0],
                      chosen[k][2]);
        free(text);
    }
    /* word links, as --align-format pharaoh writes them, in links.txt and links */
    char *links = alignment_file(&s, model, "explicit", "pharaoh");
    ck_assert_msg(strchr(links, '-'), "no word links: '%s'", links);
    static const char *const plain[] = {"links.txt", "links"};
    for (size_t k = 0; k < sizeof plain / sizeof plain[0]; k++) {
        char *text = alignment_file(&s, model, plain[k], NULL);
        ck_assert_msg(strcmp(text, links) == 0, "%s holds '%s', not the word links '%s'", plain[k],
                      text, links);
        free(text);
    }
    free(links);
    /* bin/align, through the same rules, keeps .txt as the terminal's heatmap */
    scratch_path(&s, "heatmap.txt", file, sizeof file);
    RunResult r;
    run_program(&r, &s,
                (const char *const[]){"../bin/align", "-m", model, "-o", file, "I love cats", NULL},
                NULL, 30, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    size_t len;
    char *text = (char *)slurp_file(file, &len);
    ck_assert_msg(strstr(text, "(shades: "), "%s holds no heatmap", file);
    free(text);
    scratch_free(&s);
}
END_TEST

Suite *tools_suite(void) {
    Suite *s = suite_create("tools");
    TCase *tc = tcase_create("tools");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, npy_round_trip_and_header);
    tcase_add_test(tc, gradref_writes_the_spec_layout);
    tcase_add_test(tc, gradref_records_the_score);
    tcase_add_test(tc, tools_report_bad_input_in_one_line);
    tcase_add_test(tc, training_resumes_exactly);
    tcase_add_test(tc, training_bits_do_not_depend_on_the_threads);
    tcase_add_test(tc, align_matches_the_gradient_reference_dump);
    tcase_add_test(tc, interrupted_training_saves_a_resumable_checkpoint);
    tcase_add_test(tc, gradref_reference_agrees_with_the_engine);
    tcase_add_test(tc, reference_train_writes_a_translating_checkpoint);
    tcase_add_test(tc, reference_train_keeps_to_its_own_folder);
    tcase_add_test(tc, new_run_keeps_a_trained_folder);
    tcase_add_test(tc, scoring_reports_in_corpus_order);
    tcase_add_test(tc, evaluate_scores_the_references_as_written);
    tcase_add_test(tc, every_program_gives_usage_errors_in_one_form);
    tcase_add_test(tc, translate_answers_each_line_as_it_arrives);
    tcase_add_test(tc, translate_names_unknown_and_copied_words);
    tcase_add_test(tc, translate_align_extension_chooses_or_refuses_format);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * test_align.c: the alignment tool's library (tools/alignment.c): matrices from search and
 * from force-decoding (against model_forward itself), every output format read back or
 * checked for structure, word merging and hard links on hand-made matrices, and AER.
 *
 * The model is a small random one built here (vocabularies from a few sentences, seeded
 * parameters), so nothing depends on a trained checkpoint. Files go to a mkdtemp() folder.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/dataset.h"
#include "nmt/pictures/align_write.h"
#include "nmt/words.h"
#include "nmt/formats/npy.h"
#include "nmt/text.h"
#include "tests/suites.h"

/* ---- a small random model ---- */

static const char *const PAIRS[][2] = {
    {"I love machine learning", "j'aime l'apprentissage automatique"},
    {"the cat sleeps on the mat.", "le chat dort sur le tapis."},
    {"where is the dog?", "où est le chien ?"},
    {"I love the cat", "j'aime le chat"},
    {"the dog doesn't sleep", "le chien ne dort pas"},
};
enum { N_PAIRS = sizeof PAIRS / sizeof PAIRS[0] };

static void model_make_score(NmtModel *nm, int bidirectional, uint64_t seed, AttentionScore score) {
    TokenList src[N_PAIRS], tgt[N_PAIRS];
    Error err;
    memset(nm, 0, sizeof *nm);
    nm->lowercase = true;
    for (int k = 0; k < N_PAIRS; k++) {
        ck_assert_msg(tokenize(PAIRS[k][0], true, &src[k], &err) == 0, "%s", err.msg);
        ck_assert_msg(tokenize(PAIRS[k][1], true, &tgt[k], &err) == 0, "%s", err.msg);
    }
    ck_assert_msg(vocab_build(src, N_PAIRS, 1, SIZE_MAX, &nm->src_vocab, &err) == 0, "%s", err.msg);
    ck_assert_msg(vocab_build(tgt, N_PAIRS, 1, SIZE_MAX, &nm->tgt_vocab, &err) == 0, "%s", err.msg);
    for (int k = 0; k < N_PAIRS; k++) token_list_free(&src[k]), token_list_free(&tgt[k]);
    ModelDims dims = {.src_vocab = (int)nm->src_vocab.size,
                      .tgt_vocab = (int)nm->tgt_vocab.size,
                      .emb = 6,
                      .enc_hidden = 5,
                      .bidirectional = bidirectional,
                      .dec_hidden = 7,
                      .att = 4,
                      .readout = 6,
                      .score = score};
    if (score == SCORE_DOT) dims.dec_hidden = dims_enc_state(&dims);
    ck_assert_msg(model_init(&nm->model, &dims, &err) == 0, "%s", err.msg);
    params_init(nm->model.params, &nm->model.table, seed);
    /* a larger v (or key projection) sharpens the random attention, so rows are not all
     * near-uniform */
    const ParamInfo *sharpen = &nm->model.table.info[score == SCORE_ADDITIVE  ? P_ATT_V
                                                     : score == SCORE_GENERAL ? P_ATT_W_A
                                                                              : P_ATT_W_K];
    for (size_t j = 0; j < sharpen->size; j++) nm->model.params[sharpen->offset + j] *= 8;
}

static void model_make(NmtModel *nm, int bidirectional, uint64_t seed) {
    model_make_score(nm, bidirectional, seed, SCORE_ADDITIVE);
}

/* The best hypothesis of each pair's source, with beam `beam`, as alignments. */
static void search_all(const NmtModel *nm, int beam, Alignment *out) {
    Searcher s;
    Error err;
    ck_assert_msg(search_init(&s, &nm->model.dims, N_PAIRS, 32, beam, 30, &err) == 0, "%s",
                  err.msg);
    int *ids[N_PAIRS], lens[N_PAIRS], unknown;
    for (int k = 0; k < N_PAIRS; k++)
        ck_assert_msg(encode_source(nm, PAIRS[k][0], &ids[k], &lens[k], &unknown, &err) == 0, "%s",
                      err.msg);
    SearchOptions opt = {.beam = beam, .nbest = 1, .max_len = 30, .len_norm = 1};
    Translation tr[N_PAIRS];
    ck_assert_msg(search_translate(&s, &nm->model, (const int *const *)ids, lens, N_PAIRS, &opt, tr,
                                   &err) == 0,
                  "%s", err.msg);
    for (int k = 0; k < N_PAIRS; k++) {
        ck_assert_int_ge(tr[k].count, 1);
        SourceText src;
        ck_assert_msg(source_encode(nm, PAIRS[k][0], &src, &err) == 0, "%s", err.msg);
        ck_assert_msg(alignment_from_hypothesis(&out[k], nm, &src, &tr[k].hyps[0], &err) == 0, "%s",
                      err.msg);
        source_free(&src);
        translation_free(&tr[k]);
        free(ids[k]);
    }
    search_free(&s);
}

static void check_rows_sum_to_one(const Alignment *a, const char *what) {
    for (int t = 0; t < a->rows; t++) {
        double sum = 0;
        for (int i = 0; i < a->cols; i++) {
            double w = a->alpha[(size_t)t * a->cols + i];
            ck_assert_msg(w >= 0 && w <= 1, "%s: alpha[%d][%d] = %g", what, t, i, w);
            sum += w;
        }
        ck_assert_msg(fabs(sum - 1) < 1e-6, "%s: row %d sums to %.9f", what, t, sum);
    }
}

/* The labels an alignment must have: the source's tokens and </s>; </s> ending the rows. */
static void check_labels(const Alignment *a, const char *source) {
    TokenList tokens;
    Error err;
    ck_assert_msg(tokenize(source, true, &tokens, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(a->cols, (int)tokens.count + 1);
    for (size_t i = 0; i < tokens.count; i++) ck_assert_str_eq(a->src_tokens[i], tokens.tokens[i]);
    ck_assert_str_eq(a->src_tokens[a->cols - 1], "</s>");
    if (a->complete) ck_assert_str_eq(a->tgt_tokens[a->rows - 1], "</s>");
    token_list_free(&tokens);
}

/* A matrix written by hand; labels and texts are copied. */
static void hand_made(Alignment *a, const char *source, const char *reference,
                      const char *const *src, int cols, const char *const *tgt, int rows,
                      const double *alpha) {
    memset(a, 0, sizeof *a);
    a->rows = rows, a->cols = cols, a->complete = 1, a->lowercase = true;
    a->alpha = calloc((size_t)rows * cols, sizeof(real));
    a->energy = calloc((size_t)rows * cols, sizeof(real));
    a->prob = calloc((size_t)rows, sizeof(real));
    a->src_tokens = calloc((size_t)cols, sizeof(char *));
    a->tgt_tokens = calloc((size_t)rows, sizeof(char *));
    ck_assert(a->alpha && a->energy && a->prob && a->src_tokens && a->tgt_tokens);
    for (int k = 0; k < rows * cols; k++) a->alpha[k] = (real)alpha[k];
    for (int i = 0; i < cols; i++) ck_assert_ptr_nonnull(a->src_tokens[i] = strdup(src[i]));
    for (int t = 0; t < rows; t++) ck_assert_ptr_nonnull(a->tgt_tokens[t] = strdup(tgt[t]));
    ck_assert_ptr_nonnull(a->source = strdup(source));
    if (reference) ck_assert_ptr_nonnull(a->reference = strdup(reference));
    ck_assert_ptr_nonnull(a->translation = strdup(reference ? reference : "x"));
}

/* What a writer prints for one alignment, as a string (free it). */
static char *written(AlignFormat format, const Alignment *a, int count) {
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    ck_assert_ptr_nonnull(out);
    Error err;
    for (int k = 0; k < count; k++)
        ck_assert_msg(alignment_write(out, format, &a[k], &err) == 0, "%s", err.msg);
    ck_assert_int_eq(fclose(out), 0);
    return text;
}

/* ---- matrices ---- */

START_TEST(rows_sum_to_one) {
    NmtModel nm;
    model_make(&nm, _i % 2, 7 + _i);
    for (int beam = 1; beam <= 3; beam += 2) {
        Alignment a[N_PAIRS];
        search_all(&nm, beam, a);
        for (int k = 0; k < N_PAIRS; k++) {
            check_rows_sum_to_one(&a[k], PAIRS[k][0]);
            check_labels(&a[k], PAIRS[k][0]);
            alignment_free(&a[k]);
        }
    }
    ForcedDecoder fd;
    forced_decoder_init(&fd, &nm);
    for (int k = 0; k < N_PAIRS; k++) {
        Alignment a;
        Error err;
        ck_assert_msg(force_align(&fd, PAIRS[k][0], PAIRS[k][1], &a, NULL, &err) == 0, "%s",
                      err.msg);
        check_rows_sum_to_one(&a, PAIRS[k][1]);
        check_labels(&a, PAIRS[k][0]);
        alignment_free(&a);
    }
    forced_decoder_free(&fd);
    nmt_model_free(&nm);
}
END_TEST

/* Force-decoding gives exactly acts.alpha of model_forward on a batch made the training way
 * (the computation behind the gradient reference dump's acts/alpha.npy). */
START_TEST(forced_matrix_is_model_forward_alpha) {
    NmtModel nm;
    model_make(&nm, 1, 11);
    char tsv[1024] = "";
    for (int k = 0; k < N_PAIRS; k++) {
        strcat(tsv, PAIRS[k][0]);
        strcat(tsv, "\t");
        strcat(tsv, PAIRS[k][1]);
        strcat(tsv, "\n");
    }
    Corpus corpus;
    TokenizedCorpus tc;
    Dataset ds;
    BatchBuffer bb;
    Error err;
    ck_assert_msg(corpus_read_string(tsv, strlen(tsv), "pairs", &corpus, &err) == 0, "%s", err.msg);
    ck_assert_msg(tokenized_corpus_make(&tc, &corpus, "pairs", true, &err) == 0, "%s", err.msg);
    ck_assert_msg(dataset_make(&ds, &tc, &corpus, &nm.src_vocab, &nm.tgt_vocab, 0, &err) == 0, "%s",
                  err.msg);
    ck_assert_int_eq(ds.count, N_PAIRS);
    ck_assert_msg(batch_buffer_init(&bb, N_PAIRS, ds.max_src, ds.max_tgt, &err) == 0, "%s",
                  err.msg);
    ForcedDecoder fd;
    forced_decoder_init(&fd, &nm);
    Acts acts;
    ck_assert_msg(acts_init(&acts, &nm.model.dims, N_PAIRS, ds.max_src + 1, ds.max_tgt + 1, &err) ==
                      0,
                  "%s", err.msg);
    ForwardOptions none = {0};
    double loss;
    for (size_t k = 0; k < N_PAIRS; k++) {
        const Batch *b = batch_fill(&bb, &ds, &k, 1);
        ck_assert_msg(model_forward(&nm.model, &acts, b, &none, &loss, &err) == 0, "%s", err.msg);
        Alignment a;
        ck_assert_msg(force_align(&fd, PAIRS[k][0], PAIRS[k][1], &a, NULL, &err) == 0, "%s",
                      err.msg);
        ck_assert_int_eq(a.rows, b->T);
        ck_assert_int_eq(a.cols, b->S);
        for (int t = 0; t < a.rows; t++)
            for (int i = 0; i < a.cols; i++) {
                size_t at = (size_t)t * a.cols + i; /* [T, B=1, S] */
                ck_assert_msg(a.alpha[at] == acts.alpha[at], "pair %zu alpha[%d][%d]: %.9g vs %.9g",
                              k, t, i, (double)a.alpha[at], (double)acts.alpha[at]);
                ck_assert(a.energy[at] == acts.energy[at]);
            }
        alignment_free(&a);
    }
    /* the same pairs in one padded batch, read through the [T, B, S] layout */
    size_t all[N_PAIRS];
    for (size_t k = 0; k < N_PAIRS; k++) all[k] = k;
    const Batch *b = batch_fill(&bb, &ds, all, N_PAIRS);
    ck_assert_msg(model_forward(&nm.model, &acts, b, &none, &loss, &err) == 0, "%s", err.msg);
    for (int k = 0; k < N_PAIRS; k++) {
        Alignment a;
        ck_assert_msg(force_align(&fd, PAIRS[k][0], PAIRS[k][1], &a, NULL, &err) == 0, "%s",
                      err.msg);
        for (int t = 0; t < a.rows; t++) /* steps past the target's end are not its own */
            for (int i = 0; i < b->S; i++) {
                double batched = acts.alpha[((size_t)t * N_PAIRS + k) * b->S + i];
                double single = i < a.cols ? a.alpha[(size_t)t * a.cols + i] : 0;
                ck_assert_msg(fabs(batched - single) < 1e-6, "pair %d alpha[%d][%d]: %g vs %g", k,
                              t, i, batched, single);
            }
        alignment_free(&a);
    }
    acts_free(&acts);
    forced_decoder_free(&fd);
    batch_buffer_free(&bb);
    dataset_free(&ds);
    tokenized_corpus_free(&tc);
    corpus_free(&corpus);
    nmt_model_free(&nm);
}
END_TEST

/* Feeding the search's own tokens back in (what --explain does) gives the search's matrix,
 * with each attention score (_i). */
START_TEST(forced_search_output_matches_search) {
    NmtModel nm;
    AttentionScore score = (AttentionScore)_i;
    model_make_score(&nm, 1, 5, score);
    Alignment searched[N_PAIRS];
    search_all(&nm, 1, searched);
    ForcedDecoder fd;
    forced_decoder_init(&fd, &nm);
    for (int k = 0; k < N_PAIRS; k++) {
        const Alignment *s = &searched[k];
        int n = s->rows - s->complete, ids[64];
        ck_assert_int_le(n, 64);
        for (int t = 0; t < n; t++) ids[t] = vocab_id(&nm.tgt_vocab, s->tgt_tokens[t]);
        Alignment f;
        StepTrace trace;
        Error err;
        SourceText src;
        ck_assert_msg(source_encode(&nm, PAIRS[k][0], &src, &err) == 0, "%s", err.msg);
        ck_assert_msg(force_align_ids(&fd, &src, ids, n, s->complete, &f, &trace, &err) == 0, "%s",
                      err.msg);
        source_free(&src);
        ck_assert_int_eq(f.rows, s->rows);
        ck_assert_int_eq(f.cols, s->cols);
        ck_assert_str_eq(f.translation, s->translation);
        for (int c = 0; c < s->rows * s->cols; c++) {
            ck_assert_msg(fabs((double)f.alpha[c] - s->alpha[c]) < 1e-5, "alpha %d", c);
            ck_assert_msg(fabs((double)f.energy[c] - s->energy[c]) < 1e-4, "energy %d", c);
        }
        for (int t = 0; t < s->rows; t++)
            ck_assert_msg(fabs((double)f.prob[t] - s->prob[t]) < 1e-5, "prob %d", t);
        /* the trace's context is sum_i alpha_ti h_i and its scores are v . tanh(...) (additive)
         * or scale * q_t . k_i */
        for (int t = 0; t < f.rows; t++) {
            double c0 = 0;
            for (int i = 0; i < f.cols; i++)
                c0 += f.alpha[(size_t)t * f.cols + i] * trace.enc_h[(size_t)i * trace.K];
            ck_assert_msg(fabs(c0 - trace.context[(size_t)t * trace.K]) < 1e-5, "c_%d", t + 1);
            ck_assert_int_eq(trace.score, score);
            double e0 = 0;
            if (score == SCORE_ADDITIVE)
                for (int j = 0; j < trace.A; j++)
                    e0 += trace.v[j] * trace.hidden[(size_t)t * f.cols * trace.A + j];
            else
                for (int j = 0; j < trace.F; j++)
                    e0 += trace.projected[(size_t)t * trace.F + j] * trace.keys[j] /
                          (score == SCORE_SCALED_DOT ? sqrt(trace.A) : 1);
            ck_assert_msg(fabs(e0 - f.energy[(size_t)t * f.cols]) < 1e-5, "e_%d0", t + 1);
        }
        /* the explanation walks through every step */
        char *text = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&text, &size);
        ck_assert_ptr_nonnull(out);
        ck_assert_msg(alignment_explain(out, &f, &trace, &err) == 0, "%s", err.msg);
        fclose(out);
        int steps = 0;
        for (const char *p = text; (p = strstr(p, "\nStep ")); p++) steps++;
        ck_assert_int_eq(steps, f.rows);
        ck_assert_ptr_nonnull(strstr(text, "exp(e) = ["));
        ck_assert_ptr_nonnull(strstr(text, "alpha = exp(e) / sum = ["));
        /* the formula of the score and its numbers */
        static const char *const formula[SCORE_COUNT] = {
            "e_ti = v^T tanh(W_q q_t + W_k h_i + b)", "e_ti = q_t . h_i", "e_ti = q_t . (W_a h_i)",
            "e_ti = (W_q q_t) . (W_k h_i) / sqrt(A)"};
        static const char *const numbers[SCORE_COUNT] = {
            "v = [", "e_10 = q_1 . h_0 = ", "W_a h_0 = [", "that / sqrt(4) = "};
        ck_assert_msg(strstr(text, formula[score]) != NULL, "%s", text);
        ck_assert_msg(strstr(text, numbers[score]) != NULL, "%s", text);
        char named[64];
        snprintf(named, sizeof named, "Attention score: %s,", score_name(score));
        ck_assert_ptr_nonnull(strstr(text, named));
        free(text);
        step_trace_free(&trace);
        alignment_free(&f);
        alignment_free(&searched[k]);
    }
    forced_decoder_free(&fd);
    nmt_model_free(&nm);
}
END_TEST

START_TEST(bad_inputs_are_errors) {
    NmtModel nm;
    model_make(&nm, 1, 3);
    ForcedDecoder fd;
    forced_decoder_init(&fd, &nm);
    Alignment a;
    Error err;
    ck_assert_int_eq(force_align(&fd, "   ", "le chat", &a, NULL, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "empty sentence"));
    ck_assert_int_eq(force_align(&fd, "the cat", "", &a, NULL, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "empty target"));
    ck_assert_int_eq(force_align(&fd, "the \xC3 cat", "le chat", &a, NULL, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "invalid UTF-8"));
    ck_assert_int_eq(force_align(&fd, "the cat", "le \xED\xA0\x80", &a, NULL, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "target: invalid UTF-8"));
    /* unknown words still align, labelled as written */
    ck_assert_msg(force_align(&fd, "the zebra", "le zèbre", &a, NULL, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(a.src_tokens[1], "zebra");
    ck_assert_str_eq(a.tgt_tokens[1], "zèbre");
    alignment_free(&a);
    forced_decoder_free(&fd);
    nmt_model_free(&nm);
}
END_TEST

/* ---- formats read back ---- */

START_TEST(tsv_round_trip) {
    NmtModel nm;
    model_make(&nm, 1, 13);
    Alignment a[N_PAIRS];
    search_all(&nm, 1, a);
    char *text = written(ALIGN_TSV, a, N_PAIRS);
    /* parse it back: blocks separated by blank lines */
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    for (int k = 0; k < N_PAIRS; k++) {
        ck_assert_ptr_nonnull(line);
        ck_assert_int_eq(line[0], '\t'); /* the empty corner cell */
        char *cell_save = NULL, *cell = strtok_r(line, "\t", &cell_save);
        for (int i = 0; i < a[k].cols; i++, cell = strtok_r(NULL, "\t", &cell_save)) {
            ck_assert_ptr_nonnull(cell);
            ck_assert_str_eq(cell, a[k].src_tokens[i]);
        }
        ck_assert_ptr_null(cell);
        for (int t = 0; t < a[k].rows; t++) {
            line = strtok_r(NULL, "\n", &save);
            ck_assert_ptr_nonnull(line);
            cell = strtok_r(line, "\t", &cell_save);
            ck_assert_str_eq(cell, a[k].tgt_tokens[t]);
            double sum = 0;
            for (int i = 0; i < a[k].cols; i++) {
                cell = strtok_r(NULL, "\t", &cell_save);
                ck_assert_ptr_nonnull(cell);
                char *end;
                real value = (real)strtod(cell, &end);
                ck_assert_int_eq(*end, '\0');
                ck_assert_msg(value == a[k].alpha[(size_t)t * a[k].cols + i],
                              "'%s' does not read back as %.9g", cell,
                              (double)a[k].alpha[(size_t)t * a[k].cols + i]);
                sum += value;
            }
            ck_assert_ptr_null(strtok_r(NULL, "\t", &cell_save));
            ck_assert_msg(fabs(sum - 1) < 1e-6, "row %d of the dump sums to %.9f", t, sum);
        }
        line = strtok_r(NULL, "\n", &save); /* strtok_r skips the blank line between blocks */
        alignment_free(&a[k]);
    }
    ck_assert_ptr_null(line);
    free(text);
    nmt_model_free(&nm);
}
END_TEST

START_TEST(npy_round_trip) {
    char dir[] = "/tmp/test_align_XXXXXX", base[256], path[300];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(base, sizeof base, "%s/attn.npy", dir);
    NmtModel nm;
    model_make(&nm, 0, 17);
    Alignment a[N_PAIRS];
    search_all(&nm, 3, a);
    Error err;
    for (int k = 0; k < N_PAIRS; k++)
        ck_assert_msg(alignment_write_npy(base, k, &a[k], &err) == 0, "%s", err.msg);
    for (int k = 0; k < N_PAIRS; k++) {
        NpyArray m;
        snprintf(path, sizeof path, "%s/attn.%d.npy", dir, k);
        ck_assert_msg(npy_read(path, &m, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(m.type, NPY_F4);
        ck_assert_int_eq(m.ndim, 2);
        ck_assert_uint_eq(m.shape[0], (size_t)a[k].rows);
        ck_assert_uint_eq(m.shape[1], (size_t)a[k].cols);
        const float *values = m.data;
        for (int c = 0; c < a[k].rows * a[k].cols; c++) {
            float expected = (float)a[k].alpha[c];
            ck_assert_msg(memcmp(&values[c], &expected, sizeof expected) == 0, "cell %d", c);
        }
        npy_free(&m);
        /* the token lists beside it, one per line */
        const char *suffix[2] = {"src", "tgt"};
        for (int side = 0; side < 2; side++) {
            char *const *labels = side ? a[k].tgt_tokens : a[k].src_tokens;
            int n = side ? a[k].rows : a[k].cols;
            snprintf(path, sizeof path, "%s/attn.%d.%s.txt", dir, k, suffix[side]);
            FILE *f = fopen(path, "r");
            ck_assert_msg(f != NULL, "%s missing", path);
            char line[256];
            for (int i = 0; i < n; i++) {
                ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
                line[strcspn(line, "\n")] = '\0';
                ck_assert_str_eq(line, labels[i]);
            }
            ck_assert_ptr_null(fgets(line, sizeof line, f));
            fclose(f);
            remove(path);
        }
        snprintf(path, sizeof path, "%s/attn.%d.npy", dir, k);
        remove(path);
        alignment_free(&a[k]);
    }
    ck_assert_int_eq(rmdir(dir), 0); /* nothing else (no .tmp) was left behind */
    ck_assert_int_eq(npy_output_path(path, sizeof path, "out/x.npy", -1, ".src.txt", &err), 0);
    ck_assert_str_eq(path, "out/x.src.txt");
    ck_assert_int_eq(npy_output_path(path, sizeof path, "x", 3, ".npy", &err), 0);
    ck_assert_str_eq(path, "x.3.npy");
    nmt_model_free(&nm);
}
END_TEST

/* A small JSON parser that only says whether the text is one valid value. */
static const char *json_value(const char *p);

static const char *json_space(const char *p) {
    while (*p == ' ') p++;
    return p;
}

static const char *json_string_end(const char *p) {
    if (*p != '"') return NULL;
    for (p++; *p != '"'; p++) {
        if ((unsigned char)*p < 0x20) return NULL; /* raw control characters are invalid */
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int k = 1; k <= 4; k++)
                    if (!strchr("0123456789abcdefABCDEF", p[k]) || !p[k]) return NULL;
                p += 4;
            } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
                return NULL;
            }
        }
    }
    return p + 1;
}

static const char *json_list(const char *p, char close, bool object) {
    p = json_space(p + 1);
    if (*p == close) return p + 1;
    for (;;) {
        if (object) {
            if (!(p = json_string_end(p))) return NULL;
            p = json_space(p);
            if (*p++ != ':') return NULL;
        }
        if (!(p = json_value(json_space(p)))) return NULL;
        p = json_space(p);
        if (*p == close) return p + 1;
        if (*p++ != ',') return NULL;
        p = json_space(p);
    }
}

static const char *json_value(const char *p) {
    if (*p == '{') return json_list(p, '}', true);
    if (*p == '[') return json_list(p, ']', false);
    if (*p == '"') return json_string_end(p);
    if (strncmp(p, "null", 4) == 0) return p + 4;
    char *end;
    strtod(p, &end);
    return end == p || *p == '+' || *p == '.' ? NULL : end;
}

START_TEST(json_lines) {
    const char *src[] = {"say", "\"hi\"", "back\\slash", "</s>"};
    const char *tgt[] = {"dis", "\"salut\"\tà\n\x01", "</s>"};
    const double alpha[] = {0.5, 0.25, 0.125, 0.125, 0, 1, 0, 0, 0.1, 0.2, 0.3, 0.4};
    Alignment a[2];
    hand_made(&a[0], "say \"hi\" back\\slash", NULL, src, 4, tgt, 3, alpha);
    hand_made(&a[1], "é", "line\nbreak", src, 4, tgt, 3, alpha);
    for (int t = 0; t < 3; t++) a[0].prob[t] = a[1].prob[t] = (real)(0.25 * (t + 1));
    char *text = written(ALIGN_JSON, a, 2);
    int lines = 0;
    for (char *line = text, *next; *line; line = next + 1, lines++) {
        next = strchr(line, '\n');
        ck_assert_ptr_nonnull(next);
        *next = '\0';
        const char *end = json_value(line);
        ck_assert_msg(end && *end == '\0', "not one JSON value: %s", line);
        ck_assert_msg(strncmp(line, "{\"source\": ", 11) == 0, "%s", line);
        ck_assert_ptr_nonnull(strstr(line, "\"translation\": "));
        ck_assert_ptr_nonnull(strstr(line, "\"src_tokens\": [\"say\", \"\\\"hi\\\"\", "
                                           "\"back\\\\slash\", \"</s>\"]"));
        ck_assert_ptr_nonnull(strstr(line, "\"\\\"salut\\\"\\tà\\n\\u0001\""));
        ck_assert(sizeof(real) == 8 || /* in a double build 0.1 prints with 17 digits */
                  strstr(line, "\"alpha\": [[0.5, 0.25, 0.125, 0.125], [0, 1, 0, 0], "
                               "[0.100000001, 0.200000003, 0.300000012, 0.400000006]], "));
        ck_assert_ptr_nonnull(strstr(line, "\"prob\": [0.25, 0.5, 0.75]}"));
    }
    ck_assert_int_eq(lines, 2);
    free(text);
    /* a failed input keeps the lines in step */
    char *missing = NULL;
    size_t size;
    FILE *out = open_memstream(&missing, &size);
    Error err;
    ck_assert_int_eq(alignment_write_missing(out, ALIGN_JSON, &err), 0);
    fclose(out);
    ck_assert_str_eq(missing, "null\n");
    free(missing);
    alignment_free(&a[0]);
    alignment_free(&a[1]);
}
END_TEST

/* Checks that every tag is closed in order and counts the cells. */
static int svg_cells(const char *svg) {
    const char *stack[64];
    int depth = 0, cells = 0;
    for (const char *p = strchr(svg, '<'); p; p = strchr(p + 1, '<')) {
        const char *end = strchr(p, '>');
        ck_assert_ptr_nonnull(end);
        for (const char *q = p + 1; q < end; q++) ck_assert_msg(*q != '<', "'<' inside a tag");
        if (p[1] == '/') {
            ck_assert_int_gt(depth, 0);
            size_t len = strcspn(stack[depth - 1], " >/");
            ck_assert_msg(strncmp(stack[--depth], p + 2, len) == 0 && p[2 + len] == '>',
                          "</%.10s> closes <%.10s>", p + 2, stack[depth]);
        } else if (end[-1] != '/') {
            ck_assert_int_lt(depth, 64);
            stack[depth++] = p + 1;
        }
        if (strncmp(p, "<rect class=\"cell\"", 18) == 0) cells++;
    }
    ck_assert_int_eq(depth, 0);
    return cells;
}

START_TEST(svg_structure) {
    const char *src[] = {"a<b", "R&D", "</s>"};
    const char *tgt[] = {"x\"y", "'z'", "</s>"};
    const double alpha[] = {0.9, 0.05, 0.05, 0.2, 0.7, 0.1, 0, 0, 1};
    Alignment a[2];
    hand_made(&a[0], "a<b R&D", NULL, src, 3, tgt, 3, alpha);
    hand_made(&a[1], "a<b R&D", NULL, src, 3, tgt, 2, alpha);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    Error err;
    ck_assert_msg(alignment_write_svg(out, a, 2, &err) == 0, "%s", err.msg);
    fclose(out);
    ck_assert_msg(strncmp(text, "<svg xmlns=\"http://www.w3.org/2000/svg\"", 39) == 0, "%.60s",
                  text);
    ck_assert_msg(size > 7 && strcmp(text + size - 7, "</svg>\n") == 0, "ends with %s",
                  text + size - 7);
    ck_assert_int_eq(svg_cells(text), 3 * 3 + 2 * 3);
    ck_assert_ptr_nonnull(strstr(text, ">a&lt;b</text>"));
    ck_assert_ptr_nonnull(strstr(text, ">R&amp;D</text>"));
    ck_assert_ptr_nonnull(strstr(text, ">x&quot;y</text>"));
    ck_assert_ptr_nonnull(strstr(text, "<title>x&quot;y \u2190 a&lt;b: 0.9000</title>"));
    ck_assert_ptr_null(strstr(text, "R&D"));
    ck_assert_ptr_nonnull(strstr(text, "url(#alpha-scale)")); /* the colour scale */
    free(text);
    alignment_free(&a[0]);
    alignment_free(&a[1]);
}
END_TEST

START_TEST(marian_lines) {
    NmtModel nm;
    model_make(&nm, 1, 19);
    Alignment a[N_PAIRS];
    search_all(&nm, 1, a);
    char *text = written(ALIGN_MARIAN, a, N_PAIRS);
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    for (int k = 0; k < N_PAIRS; k++, line = strtok_r(NULL, "\n", &save)) {
        ck_assert_ptr_nonnull(line);
        char *bar = strstr(line, " ||| ");
        ck_assert_ptr_nonnull(bar);
        *bar = '\0';
        ck_assert_str_eq(line, a[k].translation);
        int groups = 0;
        char *group_save = NULL;
        for (char *g = strtok_r(bar + 5, " ", &group_save); g;
             g = strtok_r(NULL, " ", &group_save), groups++) {
            int weights = 0;
            double sum = 0;
            for (char *w = g;; w++, weights++) {
                char *end;
                sum += strtod(w, &end);
                ck_assert_ptr_ne(end, w);
                w = end;
                if (*w != ',') {
                    ck_assert_int_eq(*w, '\0');
                    weights++;
                    break;
                }
            }
            ck_assert_int_eq(weights, a[k].cols);
            ck_assert_msg(fabs(sum - 1) < 1e-5, "group %d sums to %g", groups, sum);
        }
        ck_assert_int_eq(groups, a[k].rows);
        alignment_free(&a[k]);
    }
    ck_assert_ptr_null(line);
    free(text);
    nmt_model_free(&nm);
}
END_TEST

START_TEST(text_heatmap) {
    const char *src[] = {"i", "love", "machine", "</s>"};
    const char *tgt[] = {"j'", "aime", "</s>"};
    const double alpha[] = {0.95, 0.05, 0, 0, 0.2, 0.4, 0.35, 0.05, 0, 0, 0, 1};
    Alignment a;
    hand_made(&a, "I love machine", NULL, src, 4, tgt, 3, alpha);
    char *text = written(ALIGN_TEXT, &a, 1);
    int lines = 0;
    for (const char *p = text; *p; p++) lines += *p == '\n';
    ck_assert_int_eq(lines, 2 + 1 + 3 + 1);             /* texts, header, rows, legend */
    ck_assert_ptr_nonnull(strstr(text, "machi\u2026")); /* abbreviated column header */
    ck_assert_ptr_nonnull(strstr(text, "j'   \u2588\u2588\u2588\u2588\u2588\u2588       "));
    ck_assert_ptr_nonnull(strstr(text, " i 0.95\n"));
    ck_assert_ptr_nonnull(strstr(text, " love 0.40\n"));
    ck_assert_ptr_nonnull(strstr(text, " </s> 1.00\n"));
    free(text);
    alignment_free(&a);
}
END_TEST

/* ---- words ---- */

START_TEST(words_merge_tokens) {
    WordMap map;
    Error err;
    const char *tokens[] = {"j'", "aime", "les", "chats", "?"};
    /* found from the tokens by counting characters: a typographic apostrophe and a
     * thin space U+2009 (which the tokenizer leaves out) keep the word whole */
    ck_assert_msg(word_map_from_text(&map, "J’aime  les chats\u2009?", tokens, 5, &err) == 0, "%s",
                  err.msg);
    const int expected[] = {0, 0, 1, 2, 2}; /* j' aime | les | chats ? */
    ck_assert_int_eq(map.n_tokens, 5);
    ck_assert_int_eq(map.n_words, 3);
    for (int k = 0; k < 5; k++) ck_assert_int_eq(map.word_of[k], expected[k]);
    word_map_free(&map);
    ck_assert(word_map_from_text(&map, "J'aime", tokens, 5, &err) != 0);
    ck_assert_msg(word_map_from_tokens(&map, tokens, 5, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(map.n_words, 3);
    for (int k = 0; k < 5; k++) ck_assert_int_eq(map.word_of[k], expected[k]);
    word_map_free(&map);
}
END_TEST

START_TEST(pharaoh_word_links) {
    /* source words: i | love | cats . ; target words: j' aime | les | chats ? */
    const char *src[] = {"i", "love", "cats", ".", "</s>"};
    const char *tgt[] = {"j'", "aime", "les", "chats", "?", "</s>"};
    const double alpha[] = {
        0.45, 0.40, 0.00, 0.00, 0.15, /* j'    alone it would pick "i", but the word  */
        0.05, 0.40, 0.05, 0.00, 0.50, /* aime  j'aime sums to i 0.5, love 0.8          */
        0.25, 0.05, 0.20, 0.20, 0.30, /* les   each of cats, . is below i; "cats." not  */
        0.20, 0.10, 0.30, 0.00, 0.40, /* chats with ? : i 0.6, love 0.1, cats. 0.5,     */
        0.40, 0.00, 0.00, 0.20, 0.40, /* ?     and the larger </s> column is left out   */
        0.00, 0.00, 0.00, 0.00, 1.00, /* </s>  the </s> row is left out                 */
    };
    Alignment a;
    hand_made(&a, "I love cats.", "j'aime les chats?", src, 5, tgt, 6, alpha);
    char *text = written(ALIGN_PHARAOH, &a, 1);
    ck_assert_str_eq(text, "0-2 1-0 2-1\n");
    free(text);
    /* without a reference the target words come from the tokens themselves */
    free(a.reference);
    a.reference = NULL;
    text = written(ALIGN_PHARAOH, &a, 1);
    ck_assert_str_eq(text, "0-2 1-0 2-1\n");
    free(text);
    /* ties go to the first source word */
    WordMap sw = {.n_tokens = 4, .n_words = 4, .word_of = (int[]){0, 1, 2, 3}};
    WordMap tw = {.n_tokens = 2, .n_words = 2, .word_of = (int[]){0, 1}};
    WordLink *links;
    int n;
    Error err;
    ck_assert_int_eq(word_links((const real[]){0.25, 0.25, 0.25, 0.25, 0, 0.1, 0.6, 0.1, 0.2, 0}, 2,
                                5, &sw, &tw, &links, &n, &err),
                     0);
    ck_assert_int_eq(n, 2);
    ck_assert(links[0].src == 0 && links[0].tgt == 0 && links[1].src == 1 && links[1].tgt == 1);
    free(links);
    /* a matrix that does not fit the words is an error, not a guess */
    ck_assert_int_eq(word_links(a.alpha, 6, 4, &sw, &tw, &links, &n, &err), -1);
    alignment_free(&a);
}
END_TEST

/* ---- AER ---- */

START_TEST(aer_known_value) {
    WordLink *predicted, *gold;
    int np, ng;
    Error err;
    ck_assert_int_eq(pharaoh_parse("0-0 1-1 2-2 2-3 2-3", &predicted, &np, &err), 0);
    ck_assert_int_eq(pharaoh_parse("  0-0   1-2 2-2 ", &gold, &ng, &err), 0);
    ck_assert_int_eq(np, 5);
    ck_assert_int_eq(ng, 3);
    AerCounts c = {0};
    ck_assert_int_eq(aer_add(&c, predicted, np, gold, ng, &err), 0);
    ck_assert_uint_eq(c.predicted, 4); /* the repeated 2-3 counts once */
    ck_assert_uint_eq(c.gold, 3);
    ck_assert_uint_eq(c.matched, 2);
    ck_assert_double_eq_tol(aer_precision(&c), 0.5, 1e-12);
    ck_assert_double_eq_tol(aer_recall(&c), 2.0 / 3, 1e-12);
    ck_assert_double_eq_tol(aer_error_rate(&c), 3.0 / 7, 1e-12); /* 1 - 2*2/(4+3) */
    free(predicted);
    free(gold);
    ck_assert_int_eq(pharaoh_parse("", &gold, &ng, &err), 0);
    ck_assert_int_eq(ng, 0);
    free(gold);
    const char *bad[] = {"0-1 x-2", "1-", "-1", "1-2-3", "0-1,", "+1-2", "3"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ck_assert_msg(pharaoh_parse(bad[k], &gold, &ng, &err) == -1, "'%s' accepted", bad[k]);
        ck_assert_ptr_nonnull(strstr(err.msg, "malformed link"));
    }
}
END_TEST

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(aer_against_gold_files) {
    char dir[] = "/tmp/test_align_XXXXXX", pairs[256], gold[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(pairs, sizeof pairs, "%s/pairs.tsv", dir);
    snprintf(gold, sizeof gold, "%s/gold.align", dir);
    write_file(pairs, "I love the cat\tj'aime le chat\nwhere is the dog?\toù est le chien ?\n");
    NmtModel nm;
    model_make(&nm, 1, 23);
    ForcedDecoder fd;
    forced_decoder_init(&fd, &nm);
    AerCounts c;
    size_t n;
    Error err;
    write_file(gold, "0-0 1-0 2-1 3-2\n0-0 1-1 2-2 3-3 3-4\n");
    ck_assert_msg(aer_evaluate(&fd, pairs, gold, &c, &n, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(c.gold, 9);
    ck_assert_uint_eq(c.predicted, 3 + 5); /* one link per target word */
    ck_assert_uint_le(c.matched, 7);
    write_file(gold, "0-0 1-0 2-1 3-2\n");
    ck_assert_int_eq(aer_evaluate(&fd, pairs, gold, &c, &n, &err), -1);
    ck_assert_msg(strstr(err.msg, "gold.align:2: missing"), "%s", err.msg);
    write_file(gold, "0-0\n0-0\n0-0\n");
    ck_assert_int_eq(aer_evaluate(&fd, pairs, gold, &c, &n, &err), -1);
    ck_assert_msg(strstr(err.msg, "gold.align:3: more alignment lines"), "%s", err.msg);
    write_file(gold, "0-0\n0-0 1:1\n");
    ck_assert_int_eq(aer_evaluate(&fd, pairs, gold, &c, &n, &err), -1);
    ck_assert_msg(strstr(err.msg, "gold.align:2: malformed link '1:1'"), "%s", err.msg);
    write_file(gold, "0-0 4-0\n0-0\n");
    ck_assert_int_eq(aer_evaluate(&fd, pairs, gold, &c, &n, &err), -1);
    ck_assert_msg(strstr(err.msg, "gold.align:1: link 4-0 is outside"), "%s", err.msg);
    remove(gold);
    ck_assert_int_eq(aer_evaluate(&fd, pairs, gold, &c, &n, &err), -1);
    ck_assert_msg(strstr(err.msg, "cannot open"), "%s", err.msg);
    remove(pairs);
    rmdir(dir);
    forced_decoder_free(&fd);
    nmt_model_free(&nm);
}
END_TEST

Suite *align_suite(void) {
    Suite *s = suite_create("align");
    TCase *matrices = tcase_create("matrices");
    tcase_set_timeout(matrices, 60);
    tcase_add_loop_test(matrices, rows_sum_to_one, 0, 2);
    tcase_add_test(matrices, forced_matrix_is_model_forward_alpha);
    tcase_add_loop_test(matrices, forced_search_output_matches_search, 0, SCORE_COUNT);
    tcase_add_test(matrices, bad_inputs_are_errors);
    suite_add_tcase(s, matrices);
    TCase *formats = tcase_create("formats");
    tcase_add_test(formats, tsv_round_trip);
    tcase_add_test(formats, npy_round_trip);
    tcase_add_test(formats, json_lines);
    tcase_add_test(formats, svg_structure);
    tcase_add_test(formats, marian_lines);
    tcase_add_test(formats, text_heatmap);
    suite_add_tcase(s, formats);
    TCase *words = tcase_create("words");
    tcase_add_test(words, words_merge_tokens);
    tcase_add_test(words, pharaoh_word_links);
    tcase_add_test(words, aer_known_value);
    tcase_add_test(words, aer_against_gold_files);
    suite_add_tcase(s, words);
    return s;
}

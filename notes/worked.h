/*
 * worked.h: the course notes' hand computations of attention, read from a small text file and
 * computed exactly (double precision), step by step, with the notes' published numbers checked.
 *
 * A worked example is a text file of named matrices ("X = [[1.0, 0.5], [0.3, 1.2]]", which
 * may go on over several lines), vectors ("v = [1, 2]"), scalars, token labels
 * ("tokens = 我 爱 猫"), the example's kind and score ("kind = self", "score = scaled_dot"),
 * '#' comments, and the published results: "expect.Q = ..." for a whole step,
 * "expect.weights[0] = ..." for one row, "expect.scores[0, 2] = ..." for one number.
 * This module parses it, computes every step and compares the published numbers; it knows
 * nothing of the command line or of printing.
 *
 * Notation (the notes', rows are tokens): n tokens (keys), m queries, d_k key size, d_v value
 * size, A the additive attention size. Self-attention: Q = X W_Q, K = X W_K, V = X W_V,
 * weights = softmax_rows(Q K^T / sqrt(d_k)), output = weights V. Cross-attention: the same
 * from a given query q (or queries Q) and keys K / values V. Additive (MODEL-SPEC.md, columns
 * act on vectors): e_i = v . tanh(W_q s + W_k h_i + b), alpha = softmax(e), c = sum_i alpha_i h_i.
 */
#ifndef NMT_WORKED_H
#define NMT_WORKED_H

#include <stddef.h>

#include "base/base.h"

/* Largest rows or columns of one matrix: hand computations are tiny, and the bound keeps
 * every product small and every count far from overflow. */
#define WORKED_MAX_DIM 1000
/* Largest input file (bytes). */
#define WORKED_MAX_FILE (16u << 20)

typedef struct {
    int rows, cols;
    double *v; /* [rows, cols], row-major */
} WorkedMatrix;

typedef enum { WORKED_KIND_NONE = 0, WORKED_SELF, WORKED_CROSS, WORKED_ADDITIVE } WorkedKind;

typedef enum {
    WORKED_SCORE_NONE = 0,
    WORKED_DOT,        /* q . k */
    WORKED_SCALED_DOT, /* q . k / sqrt(d_k) */
    WORKED_GENERAL,    /* q . (W_a k) */
    WORKED_ADDITIVE_SCORE,
} WorkedScore;

/* One named value of the file: an input ("W_Q") or a published result ("expect.Q"). */
typedef struct {
    char *name;    /* the input's name; for a published result, the step's ("Q" of expect.Q) */
    int row;       /* a published row (expect.Q[0]): its index; -1 for the whole step */
    int column;    /* a published element (expect.Q[0, 1]): its column; -1 otherwise */
    int is_vector; /* written as a flat list [a, b, ...] or a bare number: a 1 x n row */
    WorkedMatrix m;
    int line, col; /* where the name starts (1-based; columns count characters) */
} WorkedValue;

typedef struct {
    char **words; /* [count], UTF-8 */
    int count;
    int line, col; /* 0 when the file has no such line */
} WorkedTokens;

typedef struct {
    char *path; /* as given, for messages */
    WorkedValue *inputs;
    int n_inputs;
    WorkedValue *expects;
    int n_expects;
    WorkedTokens tokens;        /* labels of X's rows (self) or of the queries (cross) */
    WorkedTokens source_tokens; /* labels of the keys K / encoder states h (cross, additive) */
    WorkedKind kind;            /* WORKED_KIND_NONE when the file has no kind line */
    int kind_line, kind_col;
    WorkedScore score; /* WORKED_SCORE_NONE when the file has no score line */
    int score_line, score_col;
} WorkedFile;

/* Parses text[0..len) (need not be NUL-terminated); path names the file in messages. Every
 * error is one line "path:LINE:COLUMN: what is wrong". wf is empty (safe to free) on failure. */
int worked_parse(WorkedFile *wf, const char *path, const char *text, size_t len, Error *err);

/* Reads and parses the file at path ("-": standard input). */
int worked_read(WorkedFile *wf, const char *path, Error *err);

void worked_file_free(WorkedFile *wf);

/* Which token list labels a step's rows or columns. */
typedef enum { WORKED_LABEL_NONE = 0, WORKED_LABEL_TOKENS, WORKED_LABEL_SOURCE } WorkedLabels;

#define WORKED_MAX_STEPS 12

/* One step of the computation, as the notes print it. */
typedef struct {
    const char *name;    /* what expect.NAME refers to: "Q", "scores", "weights", ... */
    const char *formula; /* "Q = X W_Q", in the notes' notation */
    WorkedMatrix m;
    WorkedLabels row_labels, col_labels;
} WorkedStep;

typedef struct {
    WorkedKind kind;
    WorkedScore score;
    int d_k; /* the key size (the scale of scaled_dot is sqrt(d_k)); additive: A */
    WorkedStep steps[WORKED_MAX_STEPS];
    int n_steps;
    int *expect_step; /* [wf->n_expects]: the step each published result belongs to */
} WorkedRun;

/* Computes every step of wf. The score is the file's score line, else `requested` (a
 * command-line choice; WORKED_SCORE_NONE for none), else scaled_dot (additive for additive
 * attention); a file and a request that disagree are an error. Checks the shapes of the
 * inputs and of the published results (an error names the line of the offending value), and
 * that every step is finite. run is empty (safe to free) on failure. */
int worked_run(WorkedRun *run, const WorkedFile *wf, WorkedScore requested, Error *err);

void worked_run_free(WorkedRun *run);

/* One published number that differs from the exact value by more than the tolerance. */
typedef struct {
    int expect;   /* index into wf->expects */
    int step;     /* index into run->steps */
    int row, col; /* the element of the step */
    double published, exact;
} WorkedDiff;

typedef struct {
    WorkedDiff *diffs; /* [count], in the order of the file's expect lines */
    int count;
    int *compared; /* [wf->n_expects]: how many numbers each expect line holds */
} WorkedCheck;

/* Compares every published number with the exact one: a difference when |published - exact|
 * > tolerance. */
int worked_check(WorkedCheck *chk, const WorkedRun *run, const WorkedFile *wf, double tolerance,
                 Error *err);

void worked_check_free(WorkedCheck *chk);

/* Index of the step called name, or -1. */
int worked_step_index(const WorkedRun *run, const char *name);

const char *worked_kind_name(WorkedKind kind);    /* "self", "cross", "additive" */
const char *worked_score_name(WorkedScore score); /* "dot", "scaled_dot", ... */
/* Parses a score name; -1 when text is none of them. */
int worked_score_parse(const char *text, WorkedScore *out);

#endif

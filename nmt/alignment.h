/*
 * alignment.h: the attention (alignment) matrices of translations, for inspection: making
 * them (from a search result, or by force-decoding a given target), merging tokens into
 * words, hard word links and their alignment error rate, every output format of bin/align
 * and the step-by-step --explain text.
 *
 * A matrix has one row per output token (</s> included when the output ended) and one column
 * per source token (</s> included); row t holds alpha_ti, which sums to 1 over the columns.
 * Nothing here prints to stderr: failures come back as an Error for the program to report.
 */
#ifndef NMT_ALIGNMENT_H
#define NMT_ALIGNMENT_H

#include <stdbool.h>
#include <stdio.h>

#include "base/files.h"
#include "model/search.h"
#include "nmt/checkpoint.h"

/* ---- one sentence's alignment ---- */

typedef struct {
    int rows, cols;    /* output tokens T, source tokens S (both with their </s>) */
    int complete;      /* 1 when the last row is the </s> step */
    real *alpha;       /* [rows, cols] alignment weights alpha_ti */
    real *energy;      /* [rows, cols] scores e_ti */
    real *prob;        /* [rows] probability the model gave each output token */
    char **src_tokens; /* [cols] source tokens as the tokenizer split them, then "</s>" */
    char **tgt_tokens; /* [rows] output tokens (a reference's own spelling for <unk>) */
    char *source;      /* the input sentence as given */
    char *reference;   /* the forced target as given; NULL for a searched translation */
    char *translation; /* the output tokens joined into text */
    bool lowercase;    /* the model's setting, needed to re-split the source into words */
} Alignment;

void alignment_free(Alignment *a);

/* The alignment of a search result h for the sentence source. */
int alignment_from_hypothesis(Alignment *a, const NmtModel *nm, const char *source,
                              const Hypothesis *h, Error *err);

/* The vectors behind each step of a force-decoded sentence, for --explain (one allocation,
 * `block`, behind every array). */
typedef struct {
    int rows, cols, D, K, A;
    real *query;     /* [rows, D] row t-1 is s_{t-1}, the query of step t */
    real *projected; /* [rows, A] W_q s_{t-1} */
    real *keys;      /* [cols, A] W_k h_i + b */
    real *hidden;    /* [rows, cols, A] tanh(W_q s_{t-1} + W_k h_i + b) */
    real *v;         /* [A] the attention's output vector */
    real *context;   /* [rows, K] row t-1 is c_t = sum_i alpha_ti h_i */
    real *enc_h;     /* [cols, K] the encoder states h_i */
    real *block;
} StepTrace;

void step_trace_free(StepTrace *trace);

/* Force-decoding: the model is run with teacher forcing (model_forward on a batch of one
 * pair), so row t is the attention of step t when the decoder was fed the given target. The
 * activation plan grows to the longest pair seen; a side longer than FORCED_MAX_TOKENS
 * tokens is refused (the plan grows with source length times target length). */
enum { FORCED_MAX_TOKENS = 250 };

typedef struct {
    const NmtModel *nm;
    Acts acts;
    int planned_src, planned_tgt; /* 0 before the first pair */
} ForcedDecoder;

void forced_decoder_init(ForcedDecoder *fd, const NmtModel *nm);
void forced_decoder_free(ForcedDecoder *fd);

/* Aligns source with the target text (tokenized like the training data). trace may be NULL. */
int force_align(ForcedDecoder *fd, const char *source, const char *target, Alignment *out,
                StepTrace *trace, Error *err);

/* The same for target ids (without </s>), e.g. a hypothesis of the search; complete says
 * whether the </s> step belongs to the result. */
int force_align_ids(ForcedDecoder *fd, const char *source, const int *target, int n, int complete,
                    Alignment *out, StepTrace *trace, Error *err);

/* ---- words ---- */

/* Which word each token belongs to. Words are the whitespace-separated words of a sentence
 * (punctuation attached to a word is part of it: "chat?" and "j'aime" are one word each). */
typedef struct {
    int n_tokens, n_words;
    int *word_of; /* [n_tokens] 0-based word index */
} WordMap;

/* Splits text on whitespace and tokenizes each word on its own; fails when the tokens do not
 * concatenate to the tokenization of the whole text (they always should). */
int word_map_from_text(WordMap *map, const char *text, bool lowercase, Error *err);

/* For output tokens without their own text: a token starts a new word when the detokenizer
 * puts a space before it. */
int word_map_from_tokens(WordMap *map, const char *const *tokens, int n, Error *err);

void word_map_free(WordMap *map);

typedef struct {
    int src, tgt; /* 0-based word indices */
} WordLink;

/* Word-level hard links from a token-level matrix alpha [rows, cols]: the weights of a target
 * word's tokens (rows) and of a source word's tokens (columns) are summed, the </s> row and
 * column left out, and each target word is linked to its strongest source word (the first on
 * a tie). Rows beyond tgt->n_tokens and columns beyond src->n_tokens are the </s> ones.
 * *links (malloc'd, one per target word) is sorted by source then target index. */
int word_links(const real *alpha, int rows, int cols, const WordMap *src, const WordMap *tgt,
               WordLink **links, int *n, Error *err);

/* word_links of an alignment, words taken from its source and its reference (when forced) or
 * its output tokens. */
int alignment_word_links(const Alignment *a, WordLink **links, int *n, Error *err);

/* ---- alignment error rate ---- */

/* Parses a Pharaoh line "0-0 1-2 ..." (source-target); *links is malloc'd (may be empty). */
int pharaoh_parse(const char *line, WordLink **links, int *n, Error *err);

typedef struct {
    size_t predicted, gold, matched; /* |A|, |S| and |A n S| */
} AerCounts;

/* Adds one sentence: links are compared as sets (duplicates count once). */
int aer_add(AerCounts *c, const WordLink *predicted, int np, const WordLink *gold, int ng,
            Error *err);

double aer_precision(const AerCounts *c); /* |A n S| / |A| */
double aer_recall(const AerCounts *c);    /* |A n S| / |S| */
/* Och & Ney's AER with every gold link sure: 1 - 2 |A n S| / (|A| + |S|). */
double aer_error_rate(const AerCounts *c);

/* Force-decodes every pair of pairs_path, links words and counts against gold_path (one
 * Pharaoh line per pair). Errors name the file and line. */
int aer_evaluate(ForcedDecoder *fd, const char *pairs_path, const char *gold_path,
                 AerCounts *counts, size_t *pairs, Error *err);

/* ---- output ---- */

typedef enum {
    ALIGN_TSV,
    ALIGN_NPY,
    ALIGN_JSON,
    ALIGN_SVG,
    ALIGN_TEXT,
    ALIGN_MARIAN,
    ALIGN_PHARAOH,
} AlignFormat;

/* "tsv", "npy", "json", "svg", "text", "marian" or "pharaoh". */
int align_format_parse(const char *name, AlignFormat *out, Error *err);

/* True for the formats written one sentence at a time to a stream (all but npy and svg). */
bool align_format_streams(AlignFormat format);

/* Writes one sentence in a streaming format. Between sentences: a blank line for tsv and
 * text; json, marian and pharaoh are one line per sentence. */
int alignment_write(FILE *out, AlignFormat format, const Alignment *a, Error *err);

/* What a streaming format writes for an input that could not be aligned, so line formats
 * stay in step with their input: an empty line (marian, pharaoh), "null" (json), nothing
 * (tsv, text). */
int alignment_write_missing(FILE *out, AlignFormat format, Error *err);

/* One standalone SVG document with a labelled heatmap per alignment, stacked vertically. */
int alignment_write_svg(FILE *out, const Alignment *list, int n, Error *err);

/* The file names of sentence `index` (-1: no index) for the npy format: base minus a
 * trailing ".npy", then ".INDEX" when indexed, then suffix (".npy", ".src.txt", ".tgt.txt"). */
int npy_output_path(char *buf, size_t size, const char *base, int index, const char *suffix,
                    Error *err);

/* Writes the matrix as float32 [rows, cols] to the .npy path and the token lists (one per
 * line) to the .src.txt and .tgt.txt paths beside it; index as in npy_output_path. */
int alignment_write_npy(const char *base, int index, const Alignment *a, Error *err);

/* Explains every step of a force-decoded sentence for a learner: the query, the scores, the
 * softmax done by hand, the context vector and the chosen token. */
int alignment_explain(FILE *out, const Alignment *a, const StepTrace *trace, Error *err);

#endif

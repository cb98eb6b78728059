/*
 * nmt.h: the public C API of the translator: open a trained model, translate sentences, look
 * at where the model attended, score given translations, close.
 *
 *     #include <nmt.h>                  cc prog.c $(pkg-config --cflags --libs nmt)
 *
 *     nmt_error err;
 *     nmt_model *model = nmt_open("runs/toy/best.ckpt", &err);
 *     if (!model) { fprintf(stderr, "%s\n", err.message); return 1; }
 *     const char *text = "I love machine learning";
 *     nmt_translation out;
 *     if (nmt_translate(model, &text, 1, NULL, &out, &err) == 0 && out.refused == 0)
 *         printf("%s\n", out.hyps[0].text);
 *     nmt_translation_free(&out, 1);
 *     nmt_close(model);
 *
 * Errors: a function that can fail returns 0 on success and -1 on failure (NULL for
 * nmt_open) and writes a one-line message into *err (err may be NULL). Nothing here prints,
 * exits or aborts; bad input (invalid UTF-8, an empty or over-long sentence, a damaged model
 * file) is an error, never a crash. An input that cannot be translated does not fail a batch:
 * its result says `refused` and why.
 *
 * Threads: the library decodes with OpenMP threads, at most the caller's (OMP_NUM_THREADS) and
 * fewer while other programs keep the processors busy, with the same results bit for bit
 * whatever the count. A model handle keeps decoding memory and must not be used by two threads
 * at once; separate handles (one per thread) are independent. A handle reads its model file
 * once, in nmt_open: the file may be replaced or deleted afterwards.
 *
 * Matrices are row-major doubles. An alignment has one row per output token (`</s>` included
 * when the output ended) and one column per source token (`</s>` included); row t holds the
 * attention weights alpha_ti of output step t, which sum to 1.
 */
#ifndef NMT_H
#define NMT_H

#ifdef __cplusplus
extern "C" {
#endif

/* 1.1.0: bin/train writes checkpoint format 3 (nmt/formats/checkpoint.h), which 1.0.0 refuses;
 * every file that 1.0.0 reads still opens. 1.2.0: nmt_open_with and 8-bit weights (int8 compute,
 * and format 4, the files bin/quantize writes, which 1.1.0 refuses); nmt_open is unchanged.
 * 1.3.0: zeroed options (or NULL) search with a beam of NMT_DEFAULT_BEAM, where they were
 * greedy; beam = 1 is greedy search. 1.4.0: nmt_translation.unfamiliar. The Makefile's
 * nmt.pc takes its version from here. */
#define NMT_VERSION "1.4.0"

typedef struct nmt_model nmt_model; /* opaque */

typedef struct {
    char message[512];
} nmt_error;

/* The largest beam (and n-best list) and output length a call takes, as bin/translate's
 * --beam, --nbest and --max-len: a search's memory grows with both, and a value above them is
 * a mistake, refused with a message rather than attempted. */
enum { NMT_MAX_BEAM = 100, NMT_MAX_OUTPUT_LEN = 1000 };

/* The beam of zeroed options, as bin/translate's default: docs/results.md weighs its BLEU
 * against greedy search's and its sentences/s. */
enum { NMT_DEFAULT_BEAM = 5 };
/* The largest length-normalisation exponent: beyond it every score is 0 (bin/translate's
 * --len-norm has the same bound). */
enum { NMT_MAX_LEN_NORM = 10 };

/* Search options; a zeroed struct (or NULL) means beam search with a beam of NMT_DEFAULT_BEAM,
 * one hypothesis, output up to 2 x input length + 10 tokens, length normalisation 1. A value
 * outside the bounds given here makes nmt_translate fail, naming it. */
typedef struct {
    int beam;    /* hypotheses kept per step, 0..NMT_MAX_BEAM (0: NMT_DEFAULT_BEAM; 1: greedy) */
    int nbest;   /* hypotheses returned per sentence, 0..NMT_MAX_BEAM (0: 1; at most beam) */
    int max_len; /* most output tokens, 0..NMT_MAX_OUTPUT_LEN (0: 2 x input length + 10) */
    double len_norm; /* ranks hypotheses by logprob / length^len_norm, at most
                        NMT_MAX_LEN_NORM (0: 1, the default; negative: 0, no normalisation;
                        1.2.0 read 0 as 0 and a negative as 1) */
    int keep_unk;    /* 1: keep <unk> in the text (default 0: a word-level model's <unk>
                        becomes the source word it attends to most) */
} nmt_options;

typedef struct {
    /* the translation, detokenized; a word-level model's <unk> is replaced by the source word
     * it attends to most, and a model with subwords has its pieces joined */
    char *text;
    double logprob;     /* log-probability of its tokens (and of </s> when it ended) */
    double score;       /* logprob / rows^len_norm, by which hypotheses are ranked */
    int rows, cols;     /* the alignment's shape: output tokens, source tokens */
    char **tgt_tokens;  /* [rows] output tokens or pieces ("</s>" last when it ended) */
    char **src_tokens;  /* [cols] source tokens, "</s>" last */
    double *alignment;  /* [rows * cols] attention weights */
    double *token_prob; /* [rows] probability the model gave each output token */
} nmt_hypothesis;

typedef struct {
    int refused; /* 1: this input was not translated, `reason` says why */
    char reason[512];
    int count; /* hypotheses, best first (0 when refused, or none finished) */
    nmt_hypothesis *hyps;
    /* 1: the model does not know this text (since 1.4.0): no word of it is in its vocabulary,
     * or, with lossless subwords, most of it is characters never seen in training; the
     * translation is then a guess (bin/translate says so on stderr) */
    int unfamiliar;
} nmt_translation;

/* One given (source, target) pair scored by force-decoding (teacher forcing). */
typedef struct {
    int refused; /* 1: the pair could not be scored, `reason` says why */
    char reason[512];
    double logprob;        /* sum of the token log-probabilities */
    nmt_hypothesis forced; /* text = the target as given; token_prob, the alignment */
} nmt_score_result;

/* Opens a model file (a checkpoint written by bin/train or bin/quantize). NULL on failure.
 * The same as nmt_open_with(path, NULL, err). */
nmt_model *nmt_open(const char *path, nmt_error *err);

/* How the model multiplies when it translates (since 1.2.0). */
typedef enum {
    NMT_COMPUTE_AS_STORED = 0, /* as the file says: float, or int8 for a quantized file */
    NMT_COMPUTE_FLOAT = 1,     /* float products (a quantized file's weights dequantized) */
    NMT_COMPUTE_INT8 = 2       /* 8-bit weights, one scale per row, int32 sums: about 4x less
                                  weight memory to stream, so faster, with translations that
                                  may differ slightly from float's; nmt_score encodes with int8
                                  products and runs its teacher-forced steps in float on the
                                  8-bit weights' values */
} nmt_compute_type;

/* Options of nmt_open_with; a zeroed struct (or NULL) is nmt_open's behaviour. */
typedef struct {
    nmt_compute_type compute;
} nmt_open_options;

/* Opens a model file with options (since 1.2.0). NULL on failure (an unknown compute type
 * included). */
nmt_model *nmt_open_with(const char *path, const nmt_open_options *options, nmt_error *err);

/* Closes the handle and frees its memory; NULL is allowed. A closed handle is freed memory:
 * passing it to any function afterwards (closing it twice included) is undefined behaviour
 * that the library cannot detect, as with free(); set your pointer to NULL after closing. */
void nmt_close(nmt_model *model);

/* Translates sources[0..n) into out[0..n) (allocated by the caller, freed with
 * nmt_translation_free). Returns -1 only when the call as a whole fails (a NULL model, NULL
 * arrays when n > 0, a NULL source, n < 0, bad options, out of memory); inputs that cannot be
 * translated are marked refused in their own result. n = 0 does nothing (the arrays may then
 * be NULL). The free functions accept NULL, n <= 0 and zeroed results. */
int nmt_translate(nmt_model *model, const char *const *sources, int n, const nmt_options *options,
                  nmt_translation *out, nmt_error *err);
void nmt_translation_free(nmt_translation *out, int n);

/* Scores the given pairs (sources[i], targets[i]) into out[0..n) by force-decoding: each
 * target token's probability and the alignment. Free with nmt_score_free. */
int nmt_score(nmt_model *model, const char *const *sources, const char *const *targets, int n,
              nmt_score_result *out, nmt_error *err);
void nmt_score_free(nmt_score_result *out, int n);

#ifdef __cplusplus
}
#endif

#endif

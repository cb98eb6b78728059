/*
 * translator.h: sentences in, translations out: each text is checked and encoded with the
 * model's vocabulary, the acceptable ones are searched together, and the results come back in
 * input order. bin/translate, bin/align, scoring on a corpus and the public API all translate
 * through this, so they accept and refuse the same inputs:
 *   - invalid UTF-8 or control characters: refused, naming the byte;
 *   - an empty sentence (no tokens): refused;
 *   - more than NMT_MAX_TOKENS tokens: refused, naming the count. The memory of a search grows
 *     with the source length, and a line that long is almost always a missing line end or a
 *     pasted document; cutting it would print a translation of part of the input as if it
 *     were the whole.
 *   - a search whose probabilities are not finite numbers (weights that overflow): refused,
 *     never a silent blank (translator_probe catches such a model when it is opened).
 * Unless fixed, the output length limit of a call is nmt_max_output_len of its longest input.
 */
#ifndef NMT_TRANSLATOR_H
#define NMT_TRANSLATOR_H

#include "model/parallel.h"
#include "model/search.h"
#include "nmt/formats/checkpoint.h"
#include "nmt/text.h"

/* The output length limit for a source of src_len ids (</s> included): 2 x src_len + 10
 * tokens, enough for any real translation, and a stop for one that never emits </s>. */
int nmt_max_output_len(int src_len);

/* The search's memory is planned for the longest input seen so far and grows (outside the
 * decoding loop) when a call brings a longer one. */
typedef struct {
    const NmtModel *nm;
    Searcher searcher;
    int planned_src;   /* source length (</s> included) the searcher holds; 0 before the first */
    int max_sentences; /* most texts per translator_run */
    SearchOptions opt; /* max_len 0: nmt_max_output_len of each call's longest input */
    /* The threads of each search, at most those the caller had at translator_init: fewer
     * while other programs keep processors busy (see ThreadChoice); a translation is the same
     * bits on any count. */
    ThreadChoice threads;
    int next_threads; /* the next search's, 0 before the first */
} Translator;

/* One input's outcome. */
typedef struct {
    int refused; /* 1: not translated; error says why */
    Error error;
    int unknown;       /* source tokens not in the vocabulary (<unk>) */
    int tokens;        /* source tokens, </s> not counted */
    bool unfamiliar;   /* the model does not know this text (source_unfamiliar) */
    SourceText source; /* what the sentence was made into, for every later stage (decoding,
                        * warnings, alignments): it is not tokenized again */
    Translation best;  /* hypotheses, best first (count may be 0: none finished) */
} TranslatedText;

/* A translator for up to max_sentences texts a call, searching with opt (opt->max_len 0:
 * per call, by nmt_max_output_len), on at most the calling thread's omp_get_max_threads().
 * It reads nothing of nm until translator_run: a program may open the model after it, so that
 * the load measured for the threads' choice starts with the program. */
int translator_init(Translator *t, const NmtModel *nm, int max_sentences, const SearchOptions *opt,
                    Error *err);
void translator_free(Translator *t);

/* Translates texts[0..n) (n <= max_sentences) into out[0..n). A refused input is reported in
 * its own out[i]; the call fails (-1) only when the search itself does (memory). out[i].source
 * borrows texts[i], which must outlive out[i]. */
int translator_run(Translator *t, const char *const *texts, int n, TranslatedText *out, Error *err);

/* Frees the hypotheses and sources of out[0..n). */
void translated_free(TranslatedText *out, int n);

/* Translates a probe sentence (the first words of the source vocabulary) and refuses the model
 * of file `path` (-1, naming it) when its probabilities are not finite numbers: finite weights
 * large enough to overflow the arithmetic, which would otherwise translate every sentence into
 * a silent blank. Run when a model is opened to translate. */
int translator_probe(const NmtModel *nm, const char *path, Error *err);

#endif

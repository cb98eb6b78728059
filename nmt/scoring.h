/*
 * validate.h: scoring a model on held-out pairs: teacher-forced loss and perplexity, and
 * greedy or beam translations scored with sacreBLEU-compatible BLEU and chrF.
 *
 * References are the pairs' target text, lower-cased like the model's input when the model
 * lower-cases (a model that never sees capitals cannot be asked to produce them).
 */
#ifndef NMT_VALIDATE_H
#define NMT_VALIDATE_H

#include "data/dataset.h"
#include "model/search.h"
#include "nmt/checkpoint.h"
#include "nmt/metrics.h"

typedef struct {
    double loss;       /* mean cross-entropy per target token (teacher forcing) */
    double perplexity; /* exp(loss) */
    size_t tokens;     /* target tokens scored */
    BleuResult bleu;
    ChrfResult chrf;
    size_t sentences;
} Scores;

/* The most tokens either side of a scored pair may have: as many as bin/translate reads. The
 * activation memory of a batch grows with the product of its longest source and target, so
 * one runaway line (a missing line end, a pasted document) would otherwise ask for gigabytes;
 * it is refused instead, by file and line. */
enum { SCORE_MAX_TOKENS = 250 };

/* Refuses the corpus when a pair has a side longer than SCORE_MAX_TOKENS tokens, with an
 * error naming name:line and the side. */
int score_check_lengths(const Corpus *corpus, const TokenizedCorpus *tc, const char *name,
                        Error *err);

/* Called with each translation (for printing samples); may be NULL. */
typedef void (*TranslationSink)(void *user, size_t index, const char *source,
                                const char *hypothesis, const char *reference);

/* Scores nm on the pairs of (corpus, tc), read from the file `name`: loss over the encodable
 * pairs in batches of batch_size, and translations of every pair with the given beam (at most
 * max_len target tokens each). Pairs must pass score_check_lengths. */
int score_corpus(const NmtModel *nm, const Corpus *corpus, const TokenizedCorpus *tc,
                 const char *name, int batch_size, int beam, int max_len, Scores *out,
                 TranslationSink sink, void *user, Error *err);

#endif

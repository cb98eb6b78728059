/*
 * scoring.h: scoring a model on held-out pairs: teacher-forced loss and perplexity, and
 * greedy or beam translations scored with sacreBLEU-compatible BLEU and chrF.
 *
 * Hypotheses are decoded as bin/translate prints them (decode_hypothesis: <unk> replaced
 * unless nm->keep_unk) and scored against each pair's target exactly as the file has it, by
 * sacreBLEU's preprocessing only (metrics.h): never through the model's tokenizer, and
 * lower-cased only when the options ask (-lc), whether or not the model lower-cases its input.
 */
#ifndef NMT_VALIDATE_H
#define NMT_VALIDATE_H

#include "data/dataset.h"
#include "model/search.h"
#include "nmt/formats/checkpoint.h"
#include "nmt/metrics/metrics.h"

typedef struct {
    double loss;       /* mean cross-entropy per target token (teacher forcing) */
    double perplexity; /* exp(loss) */
    size_t tokens;     /* target tokens scored */
    BleuResult bleu;
    ChrfResult chrf;
    size_t sentences;
} Scores;

/* Refuses the corpus when a pair has a side longer than NMT_MAX_TOKENS (text.h) units of nm
 * (tokens, or the BPE pieces of a model with subwords, so that one long word cannot become
 * thousands of pieces), with an error naming name:line and the side. */
int score_check_lengths(const NmtModel *nm, const Corpus *corpus, const TokenizedCorpus *tc,
                        const char *name, Error *err);

/* Called with each translation (for printing samples), in corpus order; may be NULL. */
typedef void (*TranslationSink)(void *user, size_t index, const char *source,
                                const char *hypothesis, const char *reference);

/* Scores nm on the pairs of (corpus, tc), read from the file `name`: loss over the encodable
 * pairs in batches of batch_size, and translations of every pair with the given beam, scored
 * against corpus->tgt with options (NULL: sacreBLEU's defaults) (output
 * lengths limited by the translator's rule, nmt_max_output_len, for each batch's longest
 * source). Both take the pairs in batches of similar lengths, longest first. Pairs must pass
 * score_check_lengths. */
int score_corpus(const NmtModel *nm, const Corpus *corpus, const TokenizedCorpus *tc,
                 const char *name, int batch_size, int beam, const ScoreOptions *options,
                 Scores *out, TranslationSink sink, void *user, Error *err);

#endif

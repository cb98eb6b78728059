/*
 * metrics.h: translation quality metrics that reproduce sacreBLEU 2.x's default corpus scores.
 *
 * BLEU is sacrebleu.corpus_bleu(hyps, [refs]) with 'exp' smoothing, n-grams up to 4,
 * effective_order off and one reference, and the tokenizer (--tokenize 13a, zh, intl or none;
 * 13a by default) and case (-lc) of ScoreOptions; chrF is sacrebleu's default CHRF (character
 * 6-grams, no word n-grams, beta 2, whitespace dropped, eps_smoothing off), lower-cased with
 * -lc. Each side is scored as given: the only preprocessing is sacreBLEU's own (lower-casing
 * when asked, rstrip and the tokenizer for BLEU, whitespace removal for chrF), so a reference
 * must be passed exactly as its file has it. Both accumulate sufficient statistics one
 * sentence pair at a time, so a caller can stream translations and ask for the corpus score at
 * the end; statistics from separate streams add up.
 */
#ifndef NMT_METRICS_H
#define NMT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

#define BLEU_MAX_ORDER  4 /* sacreBLEU's MAX_NGRAM_ORDER */
#define CHRF_CHAR_ORDER 6 /* sacreBLEU's CHRF.CHAR_ORDER */
#define CHRF_BETA       2 /* sacreBLEU's CHRF.BETA: recall weighs beta^2 = 4 times precision */

/* A buffer of this many bytes always holds a whole bleu_format, chrf_format or signature. */
#define METRICS_LINE_MAX 256

/* sacreBLEU's --tokenize choices for BLEU (chrF has no tokenizer). */
typedef enum {
    BLEU_TOKENIZE_13A = 0, /* mteval-v13a: the default, for languages written with spaces */
    BLEU_TOKENIZE_ZH,      /* each CJK character (by sacreBLEU's code-point ranges) a word */
    BLEU_TOKENIZE_INTL,    /* mteval-v14 international: Unicode punctuation and symbols */
    BLEU_TOKENIZE_NONE     /* the text's own spaces only */
} BleuTokenize;

/* How sacreBLEU is asked to score; a zeroed struct is its default (13a, mixed case). */
typedef struct {
    BleuTokenize tokenize;
    bool lowercase; /* -lc: both sides lower-cased (Python's str.lower()), for BLEU and chrF */
} ScoreOptions;

/* The tokenizers' names in enum order, as a config file's choices. */
#define BLEU_TOKENIZE_WORDS "13a|zh|intl|none"

/* The tokenizer named "13a", "zh", "intl" or "none"; an error naming the value otherwise. */
int bleu_tokenize_parse(const char *name, BleuTokenize *out, Error *err);

/* The name sacreBLEU gives a tokenizer ("13a", ...). */
const char *bleu_tokenize_name(BleuTokenize tokenize);

/* The settings part of sacreBLEU's signatures, e.g. "nrefs:1|case:mixed|eff:no|tok:13a|
 * smooth:exp" and "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no" (sacreBLEU appends
 * "|version:X.Y.Z", which names its own release and so is left to the caller). snprintf
 * semantics; METRICS_LINE_MAX always suffices. */
int bleu_signature(const ScoreOptions *options, char *buf, size_t size);
int chrf_signature(const ScoreOptions *options, char *buf, size_t size);

/* Tokenizes one UTF-8 segment exactly as sacreBLEU's tokenizer `tokenize` does (the segment
 * is not rstripped or lower-cased here: bleu_add does that first, as sacreBLEU does). On
 * success *out is a new NUL-terminated string of words separated by single spaces, which the
 * caller frees. Fails on invalid UTF-8.
 *   13a (Tokenizer13a, mteval-v13a): drops "<skipped>", joins "-\n" line breaks, unescapes
 *     &quot; &amp; &lt; &gt;, splits ASCII punctuation off words (keeping "3.5", "1,000" and
 *     "a-b" whole, splitting "end." and "1-2"); non-ASCII punctuation stays in its word.
 *   zh (TokenizerZh): strips both ends, puts spaces around every character in its ranges
 *     (CJK ideographs, CJK and full-width punctuation, and U+2001-U+2A6D, which its
 *     two-character range ends make of the Extension B entry), then the 13a splitting rules
 *     without 13a's first steps.
 *   intl (TokenizerV14International): splits Unicode punctuation off a non-digit on either
 *     side, and every Unicode symbol off.
 *   none: the text as it is.
 * All then collapse whitespace (Unicode whitespace, as Python's str.split) to single spaces. */
int bleu_tokenize(const char *text, BleuTokenize tokenize, char **out, Error *err);

/* BLEU's sufficient statistics: plain counts and the options they were counted with, so a
 * zeroed struct is an empty corpus scored by sacreBLEU's defaults. */
typedef struct {
    ScoreOptions options;
    uint64_t sentences;
    uint64_t hyp_len;                 /* tokens in all hypotheses */
    uint64_t ref_len;                 /* tokens in all references */
    uint64_t correct[BLEU_MAX_ORDER]; /* clipped n-gram matches, index n-1 for order n */
    uint64_t total[BLEU_MAX_ORDER];   /* hypothesis n-grams, index n-1 for order n */
} BleuStats;

/* A corpus BLEU score with everything sacreBLEU prints beside it. */
typedef struct {
    double score;                      /* 0..100 */
    double precisions[BLEU_MAX_ORDER]; /* percentages after smoothing, as sacreBLEU reports */
    double brevity_penalty;
    double length_ratio; /* hyp_len / ref_len, 0 when ref_len is 0 */
    uint64_t hyp_len;
    uint64_t ref_len;
    uint64_t correct[BLEU_MAX_ORDER];
    uint64_t total[BLEU_MAX_ORDER];
} BleuResult;

/* Empties stats, to count with options (NULL: sacreBLEU's defaults). */
void bleu_stats_init(BleuStats *stats, const ScoreOptions *options);

/* Adds one hypothesis/reference pair (detokenized UTF-8, the reference as its file has it).
 * Fails, leaving stats untouched, on invalid UTF-8, a NULL string or an empty reference
 * (sacreBLEU refuses empty references). */
int bleu_add(BleuStats *stats, const char *hypothesis, const char *reference, Error *err);

/* Adds the statistics of another stream (e.g. one per thread), counted with the same options,
 * into total. */
void bleu_merge(BleuStats *total, const BleuStats *part);

/* The corpus score of everything added so far. */
BleuResult bleu_score(const BleuStats *stats);

/* Writes sacreBLEU's score line, e.g. "BLEU = 34.52 65.1/41.2/28.3/19.8 (BP = 0.950
 * ratio = 0.951 hyp_len = 1234 ref_len = 1297)", into buf (snprintf semantics: returns the
 * length of the whole line, truncating to size - 1 bytes; METRICS_LINE_MAX always suffices). */
int bleu_format(const BleuResult *result, char *buf, size_t size);

/* chrF's sufficient statistics per character n-gram order (index n-1 for order n), and the
 * options they were counted with (only lowercase applies to chrF). */
typedef struct {
    ScoreOptions options;
    uint64_t sentences;
    uint64_t hyp[CHRF_CHAR_ORDER];   /* hypothesis n-grams (0 for a sentence whose reference
                                        is shorter than n characters, as in sacreBLEU) */
    uint64_t ref[CHRF_CHAR_ORDER];   /* reference n-grams */
    uint64_t match[CHRF_CHAR_ORDER]; /* clipped n-gram matches */
} ChrfStats;

/* A corpus chrF score with the averaged precision and recall it combines. */
typedef struct {
    double score;        /* 0..100 */
    double precision;    /* mean over effective orders, 0..1 */
    double recall;       /* mean over effective orders, 0..1 */
    int effective_order; /* orders where both sides had n-grams; only these are averaged */
} ChrfResult;

void chrf_stats_init(ChrfStats *stats, const ScoreOptions *options);

/* Adds one hypothesis/reference pair (detokenized UTF-8); fails, leaving stats untouched, on
 * invalid UTF-8, a NULL string or an empty reference. */
int chrf_add(ChrfStats *stats, const char *hypothesis, const char *reference, Error *err);

void chrf_merge(ChrfStats *total, const ChrfStats *part);

ChrfResult chrf_score(const ChrfStats *stats);

/* Writes sacreBLEU's chrF line, e.g. "chrF2 = 55.23" (snprintf semantics, as bleu_format). */
int chrf_format(const ChrfResult *result, char *buf, size_t size);

#endif

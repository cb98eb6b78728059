/*
 * text.h: between text and a model's ids: reading and tokenizing a corpus, encoding it with
 * the model's vocabularies, and turning one sentence into source ids or target ids back into
 * text.
 *
 * A model's units are the tokenizer's tokens, or, for a model with subwords, their BPE pieces
 * (data/bpe.h): text -> tokenize -> bpe_apply -> ids on the way in, ids -> pieces -> bpe_join
 * -> detokenize on the way out. Every path from text to ids and back goes through the
 * functions here, so translation, scoring, alignment and training agree on the units.
 */
#ifndef NMT_TEXT_H
#define NMT_TEXT_H

#include "data/dataset.h"
#include "data/lossless.h"
#include "model/search.h"
#include "nmt/formats/checkpoint.h"

/* The most tokens a sentence (either side, </s> not counted) may have when it is translated,
 * aligned or scored: the memory of a search or a forced decoding grows with the lengths. For a
 * model with subwords the count is of pieces. */
enum { NMT_MAX_TOKENS = 250 };

/* Reads a TSV corpus and tokenizes both sides; errors name the file and line. */
int corpus_load(const char *path, bool lowercase, Corpus *corpus, TokenizedCorpus *tokens,
                Error *err);

/* The model's first cut of a text: the tokenizer's tokens, or a lossless model's segments
 * (data/lossless.h). Validates the UTF-8. *out is overwritten, not freed. */
int nmt_segments(const NmtModel *nm, const char *text, TokenList *out, Error *err);

/* The model's units of text for one side (target set: the target side): its tokens, cut into
 * BPE pieces when the model has subwords. *out is overwritten, not freed. */
int nmt_units(const NmtModel *nm, const char *text, bool target, TokenList *out, Error *err);

/* The number of nmt_units of a text. */
int nmt_unit_count(const NmtModel *nm, const char *text, bool target, size_t *count, Error *err);

/* The units of every pair of tc into *out (overwritten): a copy of each token list cut into
 * the model's pieces, or for a lossless model the pieces of tc's sentences as written (without
 * byte fallback while its vocabularies are empty). Only for a model with subwords (without, tc
 * already holds the units). */
int nmt_subword_corpus(const NmtModel *nm, const TokenizedCorpus *tc, TokenizedCorpus *out,
                       Error *err);

/* Encodes a dataset of tc (the corpus's tokens) with the model's units and vocabularies. */
int nmt_dataset(Dataset *ds, const NmtModel *nm, const TokenizedCorpus *tc, const Corpus *corpus,
                int max_len, Error *err);

/* One source sentence as the model reads it, made once (source_encode) and handed to every
 * stage after it (search, decoding, <unk> replacement, warnings, alignments), so that a
 * sentence is checked and tokenized once on its way through a program. */
typedef struct {
    const char *text; /* the sentence as given (borrowed) */
    TokenList cut;    /* its tokens or lossless segments (nmt_segments); empty without subwords,
                       * where they are the units themselves */
    TokenList units;  /* [n - 1] the model's units */
    int *ids;         /* [n] their ids, then </s> */
    int n;
    int unknown;     /* units read as <unk> */
    int byte_pieces; /* lossless: units spelled as byte pieces (characters never seen) */
} SourceText;

/* Encodes text into *out (text is borrowed, not copied). Refuses invalid UTF-8 and control
 * characters (see utf8_find_control), naming the byte offset; the UTF-8 is checked once, by
 * the tokenizer. Returns 0, or -1 with *out empty. */
int source_encode(const NmtModel *nm, const char *text, SourceText *out, Error *err);
void source_free(SourceText *src);

/* The source ids of one sentence, ending in </s>, from source_encode: *ids is malloc'd, *n
 * its length (>= 1), *unknown the number of <unk> units. */
int encode_source(const NmtModel *nm, const char *text, int **ids, int *n, int *unknown,
                  Error *err);

/* Whether the model does not know this source: no unit is known (every one is <unk>), or,
 * for a lossless model, most units are byte pieces (characters it never saw). */
bool source_unfamiliar(const SourceText *src);

/* The words of src that the model does not know, as the user wrote them (not as units: a
 * piece or a byte piece is named by the word of the text it belongs to), quoted and
 * comma-separated into list[size]; a last ", ..." stands for the rest once the list is long.
 * Returns how many distinct words are named. */
int source_unknown_words(const NmtModel *nm, const SourceText *src, char *list, size_t size);

/* Appends 'word' (quoted for a message) to list[size], comma-separated, unless it is there
 * already; once the list is long, a last ", ..." stands for the rest, so that a message stays
 * one readable line. Returns 1 when the word is new. */
int message_list_add(char *list, size_t size, const char *word);

/* The text of src's unit k as the user wrote it, into word[size]: the span of the source
 * text that its token covers (a piece: the token it joins into), or for a lossless model the
 * word its piece is part of. */
void source_unit_word(const NmtModel *nm, const SourceText *src, int k, char *word, size_t size);

/* Target units (a model's output tokens or pieces) back into text: pieces joined into tokens
 * (bpe_join) when the model has subwords, then detokenized. The string is malloc'd. */
char *nmt_join_target(const NmtModel *nm, const char *const *units, int n, Error *err);

/* Joins target ids (without <s> / </s>) into text; the returned string is malloc'd. Keeps
 * <unk> as it is (decode_hypothesis replaces it). */
char *decode_target(const NmtModel *nm, const int *ids, int n, Error *err);

/* <unk> replacement (Luong et al. 2015): for every output position t < n with ids[t] ==
 * TOK_UNK, sets tokens[t] to the source token that row t of alpha [>= n rows, cols] weighs
 * most, </s> (the last column) left out; the first such token on a tie. src_tokens holds the
 * cols - 1 source tokens. Other positions are left alone. */
void unk_replace(const char **tokens, const int *ids, int n, const real *alpha, int cols,
                 const char *const *src_tokens);

/* The source position unk_replace copies for one output position: the column of row [cols]
 * with the largest weight, </s> (the last column) left out, the first on a tie; cols >= 2. */
int unk_source_position(const real *row, int cols);

/* The text of hypothesis h, translated from source. An output <unk> of a model without
 * subwords is replaced by the source token it attends to most (unk_replace), unless
 * nm->keep_unk is set; a model with subwords keeps <unk> (its pieces are not words, and it
 * meets <unk> only for a character never seen in training). The string is malloc'd. */
char *decode_hypothesis(const NmtModel *nm, const SourceText *source, const Hypothesis *h,
                        Error *err);

#endif

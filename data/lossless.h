/*
 * lossless.h: text as written, cut into pieces and put back byte for byte (SentencePiece's
 * idea: the space is a symbol like any other).
 *
 * The way in: text -> segments (lossless_split) -> pieces (lossless_pieces) -> ids.
 *   - Segments. Every ASCII space becomes the marker U+2581 ("▁"), and one more marker goes
 *     before the text, so a word reads the same at the start of a line as inside it. The text
 *     is cut before each marker (unless merges may cross spaces), so a segment is a marker and
 *     the characters up to the next space: "Je t'aime !" -> "▁Je" "▁t'aime" "▁!". Nothing else
 *     is changed: no quote, apostrophe, non-breaking space or script is rewritten, and only
 *     lower-casing, when asked for, changes letters. A character that can never be part of a
 *     piece (a control character such as a tab, or a U+2581 the text itself holds) is cut into
 *     raw segments of one byte each, always spelled as byte pieces: a segment of text is never
 *     a lone byte of 0x7F or more, or below 0x20, so the two kinds cannot be confused.
 *   - Pieces. Each segment is cut by the BPE merges (bpe_apply_unmarked: merges never join
 *     across a marker, which only starts a segment); a piece the vocabulary lacks, and every
 *     piece that could be read as something else (a special, a byte piece), is spelled
 *     character by character: the marker as the marker piece "▁", a character the vocabulary
 *     holds as itself, any other as its UTF-8 bytes, one byte piece "<0xE7>" each. The 256 byte
 *     pieces, then the marker piece, have the ids right after the specials in every lossless
 *     vocabulary, so no text is ever <unk>.
 * The way out: lossless_join concatenates the pieces, turns each marker back into a space,
 * drops the one marker added before the text, and writes byte pieces as the bytes they stand
 * for. What a model writes is any sequence of pieces, so the bytes may not be UTF-8: a byte
 * that does not start a valid character is dropped (the next byte is tried again), and so is
 * any control character an input line cannot hold (all but tab, vertical tab, form feed,
 * carriage return and U+0085): the text out is always valid UTF-8 on one line.
 * Hence lossless_join(lossless_pieces(lossless_split(x))) == x for every line x a corpus or
 * bin/translate accepts (lower-cased when asked).
 */
#ifndef NMT_DATA_LOSSLESS_H
#define NMT_DATA_LOSSLESS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/base.h"
#include "data/bpe.h"
#include "data/tokenizer.h"
#include "data/vocab.h"

#define LOSSLESS_MARKER "\xE2\x96\x81" /* U+2581, the space as a symbol */
enum { LOSSLESS_BYTES = 256 };         /* byte pieces, ids TOK_SPECIALS .. TOK_SPECIALS + 255 */

/* The segments of text into *out (overwritten, not freed): see above. With across_spaces, the
 * text is not cut at its spaces (the markers stay inside the segments). Validates the UTF-8
 * (the one check of a sentence's bytes); returns 0, or -1 with *out empty. */
int lossless_split(const char *text, bool lowercase, bool across_spaces, TokenList *out,
                   Error *err);

/* bpe_learn over the segments of sentences[0..count) that are not raw. */
int lossless_learn(const TokenList *segments, size_t count, size_t max_merges, Bpe *out,
                   Error *err);

/* Whether a segment of lossless_split is a raw one: a byte always spelled as a byte piece. */
bool lossless_is_raw(const char *segment);

/* The pieces of segments[0..count) into *out (overwritten, not freed). With a vocabulary, a
 * piece that is not one of its own text pieces is spelled in byte pieces; without (while the
 * vocabulary is being built) only the raw segments are. Returns 0, or -1 with *out empty. */
int lossless_pieces(const Bpe *bpe, const Vocab *vocab, const TokenList *segments, TokenList *out,
                    Error *err);

/* The byte a piece stands for, or -1 when it is not a byte piece ("<0x00>".."<0xFF>"). */
int lossless_piece_byte(const char *piece);

/* Whether a piece starts a word: it begins with the marker. */
bool lossless_starts_word(const char *piece);

/* A lossless vocabulary from the pieces of sentences[0..count): the specials, the 256 byte
 * pieces, the marker piece, then the most frequent of the pieces and of the characters they
 * are made of (vocab_build's order and limits; max_size counts all). */
int lossless_vocab_build(const TokenList *sentences, size_t count, size_t min_count,
                         size_t max_size, Vocab *out, Error *err);

/* Checks that ids TOK_SPECIALS.. hold the 256 byte pieces in order and then the marker
 * piece, as a loaded lossless vocabulary must; err names the first that does not. */
int lossless_vocab_check(const Vocab *vocab, Error *err);

/* The text of pieces[0..count), as described above; specials are no text and are skipped.
 * Returns a new string (free() it), or NULL with err set when out of memory. */
char *lossless_join(const char *const *pieces, size_t count, Error *err);

#endif

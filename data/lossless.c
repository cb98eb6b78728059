/*
 * lossless.c: segments, pieces with byte fallback, and joining them back (see lossless.h).
 *
 * Segments are built in one pass over the code points into a growing buffer; the BPE cut
 * itself is data/bpe.c's, spelled without markers.
 */
#include "data/lossless.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

static const char *const specials[TOK_SPECIALS] = {"<pad>", "<unk>", "<s>", "</s>"};

/* A character an input line may hold but a piece may not: a control character (the corpus
 * reader and bin/translate let through tab, vertical tab, form feed, carriage return and
 * U+0085), or the marker itself when the text holds it. */
static bool is_raw(uint32_t cp) {
    return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2581;
}

/* Whether the bytes out of a model may hold cp: what an input line may hold, no more. */
static bool may_write(uint32_t cp) {
    if (cp == '\t' || cp == '\v' || cp == '\f' || cp == '\r' || cp == 0x85) return true;
    return !(cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F));
}

/* A growing byte buffer. */
typedef struct {
    char *bytes;
    size_t len, capacity;
} Buffer;

static int buffer_add(Buffer *b, const void *data, size_t n, Error *err) {
    if (b->len + n + 1 > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 64;
        while (capacity < b->len + n + 1) capacity *= 2;
        char *grown = realloc(b->bytes, capacity);
        if (!grown) return error_set(err, "out of memory growing a text to %zu bytes", capacity);
        b->bytes = grown, b->capacity = capacity;
    }
    memcpy(b->bytes + b->len, data, n);
    b->len += n;
    b->bytes[b->len] = '\0';
    return 0;
}

static int list_add(TokenList *list, const char *s, size_t n, Error *err) {
    if (list->count == list->capacity) {
        size_t capacity = list->capacity ? 2 * list->capacity : 16;
        char **grown = realloc(list->tokens, capacity * sizeof *grown);
        if (!grown) return error_set(err, "out of memory growing a piece list to %zu", capacity);
        list->tokens = grown, list->capacity = capacity;
    }
    char *copy = checked_strndup(s, n, "a piece", err);
    if (!copy) return -1;
    list->tokens[list->count++] = copy;
    return 0;
}

/* ---- Segments ---- */

/* Appends the buffer, when it holds anything, as a segment and empties it. */
static int flush(Buffer *segment, TokenList *out, Error *err) {
    if (segment->len == 0) return 0;
    int rc = list_add(out, segment->bytes, segment->len, err);
    segment->len = 0;
    return rc;
}

int lossless_split(const char *text, bool lowercase, bool across_spaces, TokenList *out,
                   Error *err) {
    *out = (TokenList){0};
    size_t len = strlen(text);
    if (utf8_validate(text, len, err)) return -1;
    if (len == 0) return 0;
    Buffer segment = {0};
    int rc = buffer_add(&segment, LOSSLESS_MARKER, 3, err);
    for (size_t at = 0; at < len && rc == 0;) {
        uint32_t cp;
        size_t n = utf8_decode((const unsigned char *)text + at, len - at, &cp, NULL);
        if (cp == ' ') {
            if (!across_spaces) rc = flush(&segment, out, err);
            if (rc == 0) rc = buffer_add(&segment, LOSSLESS_MARKER, 3, err);
        } else if (is_raw(cp)) {
            /* one segment per byte, which no segment of text can be (lossless.h) */
            rc = flush(&segment, out, err);
            for (size_t k = 0; k < n && rc == 0; k++) rc = list_add(out, text + at + k, 1, err);
        } else {
            char written[4];
            size_t size = n;
            if (lowercase) size = utf8_encode(lowercase_code_point(cp), written);
            rc = buffer_add(&segment, lowercase ? written : text + at, size, err);
        }
        at += n;
    }
    if (rc == 0) rc = flush(&segment, out, err);
    free(segment.bytes);
    if (rc) token_list_free(out);
    return rc;
}

bool lossless_is_raw(const char *segment) {
    unsigned char c = (unsigned char)segment[0];
    return c && !segment[1] && (c < 0x20 || c >= 0x7F);
}

/* ---- Pieces ---- */

int lossless_piece_byte(const char *piece) {
    static const char hex[] = "0123456789ABCDEF";
    if (strlen(piece) != 6 || memcmp(piece, "<0x", 3) != 0 || piece[5] != '>') return -1;
    const char *high = memchr(hex, piece[3], 16), *low = memchr(hex, piece[4], 16);
    if (!high || !low || !piece[3] || !piece[4]) return -1;
    return (int)((high - hex) * 16 + (low - hex));
}

static void byte_piece(unsigned byte, char piece[7]) {
    static const char hex[] = "0123456789ABCDEF";
    memcpy(piece, "<0x", 3);
    piece[3] = hex[byte >> 4], piece[4] = hex[byte & 15], piece[5] = '>', piece[6] = '\0';
}

static int add_bytes(TokenList *out, const char *text, Error *err) {
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        char piece[7];
        byte_piece(*p, piece);
        if (list_add(out, piece, 6, err)) return -1;
    }
    return 0;
}

/* Whether the vocabulary holds piece as a piece of text (not unknown, a special or a byte). */
static bool known_text(const Vocab *vocab, const char *piece) {
    return vocab_id(vocab, piece) >= TOK_SPECIALS + LOSSLESS_BYTES;
}

/* A piece the vocabulary lacks, character by character: the marker as the marker piece (every
 * lossless vocabulary holds it), a character the vocabulary holds as that piece, any other
 * as its bytes. */
static int add_fallback(const Vocab *vocab, const char *piece, TokenList *out, Error *err) {
    size_t len = strlen(piece);
    for (size_t at = 0; at < len;) {
        uint32_t cp;
        size_t n = utf8_decode((const unsigned char *)piece + at, len - at, &cp, NULL);
        char character[5] = {0};
        memcpy(character, piece + at, n);
        int rc = cp == 0x2581 || known_text(vocab, character) ? list_add(out, character, n, err)
                                                              : add_bytes(out, character, err);
        if (rc) return -1;
        at += n;
    }
    return 0;
}

int lossless_pieces(const Bpe *bpe, const Vocab *vocab, const TokenList *segments, TokenList *out,
                    Error *err) {
    *out = (TokenList){0};
    TokenList cut = {0};
    int rc = 0;
    for (size_t i = 0; i < segments->count && rc == 0; i++) {
        const char *segment = segments->tokens[i];
        if (lossless_is_raw(segment)) {
            rc = add_bytes(out, segment, err);
            continue;
        }
        rc = bpe_apply_unmarked(bpe, segment, &cut, err);
        for (size_t k = 0; k < cut.count && rc == 0; k++) {
            const char *piece = cut.tokens[k];
            rc = !vocab || known_text(vocab, piece) ? list_add(out, piece, strlen(piece), err)
                                                    : add_fallback(vocab, piece, out, err);
        }
        token_list_free(&cut);
    }
    if (rc) token_list_free(out);
    return rc;
}

bool lossless_starts_word(const char *piece) {
    return strncmp(piece, LOSSLESS_MARKER, 3) == 0;
}

/* A view of one sentence's pieces followed by the characters of its longer pieces, which
 * point into *chars (each character NUL-terminated there). */
static int with_characters(const TokenList *pieces, TokenList *view, char **chars, Error *err) {
    size_t n = pieces->count, bytes = 0;
    for (size_t i = 0; i < n; i++) bytes += 2 * strlen(pieces->tokens[i]);
    view->tokens = checked_calloc(n + bytes + 1, sizeof(char *), "vocabulary units", err);
    *chars = checked_calloc(bytes + 1, 1, "vocabulary characters", err);
    if (!view->tokens || !*chars) return -1;
    size_t used = 0;
    view->count = 0;
    for (size_t i = 0; i < n; i++) view->tokens[view->count++] = pieces->tokens[i];
    for (size_t i = 0; i < n; i++) {
        const char *p = pieces->tokens[i];
        size_t len = strlen(p);
        uint32_t cp;
        size_t first = utf8_decode((const unsigned char *)p, len, &cp, NULL);
        if (first == 0 || first == len) continue; /* one character, or not text */
        for (size_t at = 0; at < len;) {
            size_t k = utf8_decode((const unsigned char *)p + at, len - at, &cp, NULL);
            if (k == 0) break;
            memcpy(*chars + used, p + at, k);
            view->tokens[view->count++] = *chars + used;
            used += k + 1, at += k;
        }
    }
    return 0;
}

int lossless_vocab_build(const TokenList *sentences, size_t count, size_t min_count,
                         size_t max_size, Vocab *out, Error *err) {
    char names[LOSSLESS_BYTES][7];
    const char *reserved[LOSSLESS_BYTES + 1];
    for (unsigned b = 0; b < LOSSLESS_BYTES; b++) {
        byte_piece(b, names[b]);
        reserved[b] = names[b];
    }
    reserved[LOSSLESS_BYTES] = LOSSLESS_MARKER;
    /* the characters count too, as SentencePiece's do: a piece the vocabulary lacks then falls
     * back to characters it knows, and to bytes only for characters rarer than the pieces */
    TokenList *views = checked_calloc(count + 1, sizeof *views, "vocabulary units", err);
    char **chars = checked_calloc(count + 1, sizeof *chars, "vocabulary characters", err);
    int rc = views && chars ? 0 : -1;
    for (size_t s = 0; s < count && rc == 0; s++)
        rc = with_characters(&sentences[s], &views[s], &chars[s], err);
    if (rc == 0)
        rc = vocab_build_reserved(views, count, reserved, LOSSLESS_BYTES + 1, min_count, max_size,
                                  out, err);
    for (size_t s = 0; views && chars && s < count; s++) free(views[s].tokens), free(chars[s]);
    free(views), free(chars);
    return rc;
}

int lossless_vocab_check(const Vocab *vocab, Error *err) {
    for (unsigned b = 0; b < LOSSLESS_BYTES; b++) {
        const char *token = vocab_token(vocab, TOK_SPECIALS + (int)b);
        char quoted[64];
        if (!token || lossless_piece_byte(token) != (int)b)
            return error_set(err, "id %u is \"%s\", not the byte piece of 0x%02X", TOK_SPECIALS + b,
                             token ? text_for_message(quoted, sizeof quoted, token, 40) : "", b);
    }
    const char *marker = vocab_token(vocab, TOK_SPECIALS + LOSSLESS_BYTES);
    if (!marker || strcmp(marker, LOSSLESS_MARKER) != 0)
        return error_set(err, "id %d is not the marker piece \"%s\"", TOK_SPECIALS + LOSSLESS_BYTES,
                         LOSSLESS_MARKER);
    return 0;
}

/* ---- Joining ---- */

static bool is_special(const char *piece) {
    for (int id = 0; id < TOK_SPECIALS; id++)
        if (strcmp(piece, specials[id]) == 0) return true;
    return false;
}

char *lossless_join(const char *const *pieces, size_t count, Error *err) {
    Buffer raw = {0};
    int rc = buffer_add(&raw, "", 0, err);
    bool first = true; /* the marker added before the text is still to be dropped */
    for (size_t i = 0; i < count && rc == 0; i++) {
        const char *piece = pieces[i];
        int byte = lossless_piece_byte(piece);
        if (byte >= 0) {
            unsigned char c = (unsigned char)byte;
            rc = buffer_add(&raw, &c, 1, err);
            first = false;
            continue;
        }
        if (is_special(piece)) continue;
        if (first && lossless_starts_word(piece)) piece += 3;
        first = false;
        for (const char *p = piece; *p && rc == 0;) {
            bool marker = lossless_starts_word(p);
            rc = buffer_add(&raw, marker ? " " : p, 1, err);
            p += marker ? 3 : 1;
        }
    }
    if (rc) {
        free(raw.bytes);
        return NULL;
    }
    /* keep only whole characters an input line may hold (lossless.h) */
    size_t kept = 0;
    for (size_t at = 0; at < raw.len;) {
        uint32_t cp;
        size_t n = utf8_decode((const unsigned char *)raw.bytes + at, raw.len - at, &cp, NULL);
        if (n == 0) {
            at++;
            continue;
        }
        if (may_write(cp)) memmove(raw.bytes + kept, raw.bytes + at, n), kept += n;
        at += n;
    }
    raw.bytes[kept] = '\0';
    return raw.bytes;
}

/* ---- Learning ---- */

int lossless_learn(const TokenList *segments, size_t count, size_t max_merges, Bpe *out,
                   Error *err) {
    *out = (Bpe){0};
    /* views of the sentences without their raw segments (the strings stay the caller's) */
    TokenList *words = checked_calloc(count + 1, sizeof *words, "bpe words", err);
    int rc = words ? 0 : -1;
    for (size_t s = 0; s < count && rc == 0; s++) {
        words[s].tokens = checked_calloc(segments[s].count + 1, sizeof(char *), "bpe words", err);
        if (!words[s].tokens) rc = -1;
        for (size_t i = 0; rc == 0 && i < segments[s].count; i++)
            if (!lossless_is_raw(segments[s].tokens[i]))
                words[s].tokens[words[s].count++] = segments[s].tokens[i];
    }
    if (rc == 0) rc = bpe_learn(words, count, max_merges, out, err);
    for (size_t s = 0; words && s < count; s++) free(words[s].tokens);
    free(words);
    return rc;
}

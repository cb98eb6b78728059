/*
 * utf8.h: UTF-8 as RFC 3629 defines it (no overlong forms, no surrogates, nothing past
 * U+10FFFF): decoding and encoding one code point, checking whole texts, and quoting text in a
 * one-line message. Every reader of text (tokenizer, INI files, metrics, label widths) decodes
 * with utf8_decode, so they agree on what is valid.
 */
#ifndef NMT_BASE_UTF8_H
#define NMT_BASE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* Decodes the sequence starting at s[0] (len >= 1 bytes available). Returns its length, or 0
 * with *problem set (when problem is not NULL) when it is ill-formed. */
size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp, const char **problem);

/* Writes cp (a valid code point) as UTF-8 into out, unless out is NULL; returns the number of
 * bytes it takes (1 to 4). */
size_t utf8_encode(uint32_t cp, char *out);

/* Finds the first ill-formed sequence in bytes[0..len): returns NULL when all of it is valid
 * UTF-8, otherwise a static description ("overlong encoding", "UTF-16 surrogate", "code point
 * above U+10FFFF", "truncated sequence", ...) with *offset (when not NULL) set to the byte
 * offset where that sequence starts. NUL bytes are valid UTF-8; callers that forbid them
 * check separately. */
const char *utf8_find_error(const char *bytes, size_t len, size_t *offset);

/* utf8_find_error as an Error: "invalid UTF-8 at byte 12: overlong encoding". */
int utf8_validate(const char *bytes, size_t len, Error *err);

/* Finds the first control character in the valid UTF-8 bytes[0..len): a C0 control other
 * than the whitespace ones (tab, line feed, vertical tab, form feed, carriage return), DEL, or
 * a C1 control other than U+0085 (next line, which is whitespace). Such characters are never
 * part of a sentence (terminal escapes, binary data) but would otherwise pass as letters.
 * Returns true with *offset set to its byte offset and *code_point to it, false when there is
 * none. */
bool utf8_find_control(const char *bytes, size_t len, size_t *offset, uint32_t *code_point);

/* Copies text into buf (size bytes, at least 8) so it can be quoted in a one-line message:
 * control characters become escapes (\n, \r, \t, \x1B, \u0085), bytes that are not UTF-8
 * become \xFF, and text beyond max_bytes bytes (or beyond what buf holds) is cut at a character
 * and marked with "...". Returns buf. Any text a user typed or a file held goes through this
 * before it is echoed in an error, so an error stays one line and cannot drive the terminal. */
const char *text_for_message(char *buf, size_t size, const char *text, size_t max_bytes);

#endif

/*
 * utf8.c: the one UTF-8 decoder and encoder every layer uses (see utf8.h).
 */
#include "base/utf8.h"

#include <stdio.h>
#include <string.h>

size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp, const char **problem) {
    const char *unused;
    if (!problem) problem = &unused;
    unsigned char lead = s[0];
    size_t length;
    uint32_t value, smallest; /* smallest code point that needs this many bytes */
    if (lead < 0x80) {
        *cp = lead;
        return 1;
    }
    if (lead < 0xC0) {
        *problem = "unexpected continuation byte";
        return 0;
    } else if (lead < 0xE0) {
        length = 2, value = lead & 0x1F, smallest = 0x80;
    } else if (lead < 0xF0) {
        length = 3, value = lead & 0x0F, smallest = 0x800;
    } else if (lead < 0xF8) {
        length = 4, value = lead & 0x07, smallest = 0x10000;
    } else {
        *problem = "byte 0xF8..0xFF never occurs in UTF-8";
        return 0;
    }
    for (size_t k = 1; k < length; k++) {
        if (k >= len || (s[k] & 0xC0) != 0x80) {
            *problem = "truncated sequence";
            return 0;
        }
        value = value << 6 | (s[k] & 0x3F);
    }
    if (value < smallest)
        *problem = "overlong encoding";
    else if (value >= 0xD800 && value <= 0xDFFF)
        *problem = "UTF-16 surrogate";
    else if (value > 0x10FFFF)
        *problem = "code point above U+10FFFF";
    else {
        *cp = value;
        return length;
    }
    return 0;
}

const char *utf8_find_error(const char *bytes, size_t len, size_t *offset) {
    const unsigned char *s = (const unsigned char *)bytes;
    size_t at = 0;
    while (at < len) {
        uint32_t cp;
        const char *problem = NULL;
        size_t length = utf8_decode(s + at, len - at, &cp, &problem);
        if (length == 0) {
            if (offset) *offset = at;
            return problem;
        }
        at += length;
    }
    return NULL;
}

int utf8_validate(const char *bytes, size_t len, Error *err) {
    size_t offset;
    const char *problem = utf8_find_error(bytes, len, &offset);
    if (problem) return error_set(err, "invalid UTF-8 at byte %zu: %s", offset, problem);
    return 0;
}

bool utf8_find_control(const char *bytes, size_t len, size_t *offset, uint32_t *code_point) {
    const unsigned char *s = (const unsigned char *)bytes;
    for (size_t at = 0; at < len; at++) {
        uint32_t cp = s[at];
        bool whitespace = cp == '\t' || cp == '\n' || cp == '\v' || cp == '\f' || cp == '\r';
        /* C1 controls are U+0080..U+009F, encoded as C2 80..C2 9F */
        if (cp == 0xC2 && at + 1 < len && s[at + 1] >= 0x80 && s[at + 1] <= 0x9F)
            cp = s[at + 1], whitespace = cp == 0x85;
        else if (!(cp < 0x20 || cp == 0x7F))
            continue;
        if (whitespace) continue;
        *offset = at;
        *code_point = cp;
        return true;
    }
    return false;
}

const char *text_for_message(char *buf, size_t size, const char *text, size_t max_bytes) {
    const unsigned char *s = (const unsigned char *)text;
    size_t len = strnlen(text, max_bytes < SIZE_MAX ? max_bytes + 1 : SIZE_MAX), used = 0;
    bool cut = len > max_bytes;
    if (cut) len = max_bytes;
    for (size_t at = 0; at < len;) {
        char piece[8];
        uint32_t cp;
        const char *problem = NULL;
        size_t length = utf8_decode(s + at, len - at, &cp, &problem), n;
        if (length == 0) /* not UTF-8: the byte itself, escaped */
            n = (size_t)snprintf(piece, sizeof piece, "\\x%02X", s[at]), length = 1;
        else if (cp == '\n' || cp == '\r' || cp == '\t')
            n = (size_t)snprintf(piece, sizeof piece, "\\%c",
                                 cp == '\n'   ? 'n'
                                 : cp == '\r' ? 'r'
                                              : 't');
        else if (cp < 0x20 || cp == 0x7F)
            n = (size_t)snprintf(piece, sizeof piece, "\\x%02X", (unsigned)cp);
        else if (cp >= 0x80 && cp <= 0x9F)
            n = (size_t)snprintf(piece, sizeof piece, "\\u%04X", (unsigned)cp);
        else
            memcpy(piece, s + at, length), n = length;
        if (used + n + 4 > size) { /* room for "..." and the NUL must remain */
            cut = true;
            break;
        }
        memcpy(buf + used, piece, n);
        used += n;
        at += length;
    }
    if (cut) memcpy(buf + used, "...", 3), used += 3;
    buf[used] = '\0';
    return buf;
}

size_t utf8_encode(uint32_t cp, char *out) {
    size_t length = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (!out) return length;
    if (length == 1) {
        out[0] = (char)cp;
        return 1;
    }
    static const unsigned char lead_bits[5] = {0, 0, 0xC0, 0xE0, 0xF0};
    for (size_t k = length - 1; k > 0; k--, cp >>= 6) out[k] = (char)(0x80 | (cp & 0x3F));
    out[0] = (char)(lead_bits[length] | cp);
    return length;
}

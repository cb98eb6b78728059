/*
 * ini.h: a small, strict reader for INI files, in the spirit of inih.
 *
 * It understands `[section]` headers, `key = value` lines, whole-line comments starting with
 * `#` or `;`, inline comments introduced by whitespace then `#`, blank lines, CRLF line ends
 * and a leading UTF-8 byte-order mark. It knows nothing about which sections or keys exist:
 * it hands every header and every key/value pair to a callback, which decides. Anything it
 * cannot read (binary data, overlong lines, malformed lines) stops it with a FILE:LINE error.
 */
#ifndef NMT_INI_H
#define NMT_INI_H

#include <stdio.h>

#include "base/base.h"

/* The longest line accepted, in bytes, not counting the line end ("\n" or "\r\n"): room for
 * a key and the longest path a config holds, so every setting that can be written can be read
 * back (train/config.c checks this at compile time). */
#define INI_MAX_LINE 8192

/* One event from the reader: a section header (key == NULL, value == NULL) or a key/value
 * pair inside the current section. All strings are trimmed and live only during the call. */
typedef struct {
    const char *section; /* the section being read; never NULL */
    const char *key;     /* NULL when this event is the section header itself */
    const char *value;   /* may be "" (the callback decides whether that is allowed) */
    int line;            /* 1-based line number in the file */
} IniEntry;

/* Called once per event, in file order. Returns 0 to go on, or -1 after setting err to a
 * message without location: the reader prefixes it with "FILE:LINE: " and stops. */
typedef int (*IniHandler)(void *user, const IniEntry *entry, Error *err);

/* Reads the INI file at `path`, calling handler for every header and key/value pair.
 * Returns 0 on success, -1 with err set ("path: <strerror>" when the file cannot be opened
 * or is a directory, "path:LINE: <why>" for a bad line or a handler's refusal). */
int ini_parse_file(const char *path, IniHandler handler, void *user, Error *err);

/* The same over an already open stream; `name` is used in messages only. */
int ini_parse_stream(FILE *in, const char *name, IniHandler handler, void *user, Error *err);

#endif

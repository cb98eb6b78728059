/*
 * unicode.h: the two Unicode properties sacreBLEU takes from Python that metrics.c
 * needs beyond whitespace: the `regex` module's \p{P}, \p{S} and \p{N} (the intl tokenizer)
 * and str.lower()'s one-to-one mappings (-lc).
 */
#ifndef NMT_METRICS_UNICODE_H
#define NMT_METRICS_UNICODE_H

#include <stdint.h>

typedef enum {
    CHAR_OTHER = 0,
    CHAR_PUNCTUATION, /* \p{P}: general categories Pc Pd Ps Pe Pi Pf Po */
    CHAR_SYMBOL,      /* \p{S}: Sm Sc Sk So */
    CHAR_NUMBER       /* \p{N}: Nd Nl No */
} CharClass;

/* The class of code point c as sacreBLEU's intl tokenizer sees it. */
CharClass char_class(uint32_t c);

/* c lower-cased as Python's str.lower() maps it when the result is one code point; c itself
 * when it has no such mapping (U+0130, which becomes two, is the caller's to handle). */
uint32_t char_lower(uint32_t c);

#endif

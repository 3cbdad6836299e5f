/* utf8.h — UTF-8 validation (RFC 3629: no overlongs, no surrogates, nothing
 * past U+10FFFF), for text xlatrain passes on into files that must be UTF-8:
 * the JSON it writes and the YAML config it records. Not a converter. */
#ifndef XT_UTIL_UTF8_H
#define XT_UTIL_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* One code point from s[0..n): its length (1..4) and *cp, or 0 for an
 * invalid, overlong, surrogate or truncated sequence. */
size_t xt_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* The byte offset of the first invalid sequence in s[0..n), or n when the
 * whole text is valid UTF-8. */
size_t xt_utf8_check(const char *s, size_t n);

#endif

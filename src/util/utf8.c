/* utf8.c — UTF-8 validation; see utf8.h. */
#include "util/utf8.h"

size_t xt_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    if (n == 0) return 0;
    unsigned char c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) len = 2, v = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, v = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, v = c & 0x07, min = 0x10000;
    else return 0; /* continuation byte, overlong C0/C1, or beyond U+10FFFF */
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

size_t xt_utf8_check(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        size_t l = xt_utf8_decode(u + i, n - i, &cp);
        if (!l) return i;
        i += l;
    }
    return n;
}

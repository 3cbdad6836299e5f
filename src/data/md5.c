/* md5.c — MD5 as specified by RFC 1321; see md5.h. */
#include "data/md5.h"

#include "io/infile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Per-round shift amounts and the sine-derived constants T[i] = floor(2^32 |sin(i+1)|). */
static const uint8_t S[64] = {
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
    5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
};
static const uint32_t T[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

static uint32_t rotl32(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

static void block(uint32_t h[4], const uint8_t *p) {
    uint32_t w[16];
    for (int i = 0; i < 16; i++) /* MD5 is little-endian whatever the host */
        w[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
               (uint32_t)p[4 * i + 3] << 24;
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
    for (int i = 0; i < 64; i++) {
        uint32_t f;
        int g;
        switch (i / 16) {
        case 0: f = (b & c) | (~b & d); g = i; break;
        case 1: f = (d & b) | (~d & c); g = (5 * i + 1) % 16; break;
        case 2: f = b ^ c ^ d; g = (3 * i + 5) % 16; break;
        default: f = c ^ (b | ~d); g = (7 * i) % 16; break;
        }
        uint32_t tmp = d;
        d = c;
        c = b;
        b = b + rotl32(a + f + T[i] + w[g], S[i]);
        a = tmp;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
}

void xt_md5_init(xt_md5 *m) {
    m->h[0] = 0x67452301;
    m->h[1] = 0xefcdab89;
    m->h[2] = 0x98badcfe;
    m->h[3] = 0x10325476;
    m->len = 0;
}

void xt_md5_update(xt_md5 *m, const void *data, size_t n) {
    const uint8_t *p = data;
    size_t have = (size_t)(m->len % 64);
    m->len += n;
    if (have) {
        size_t take = 64 - have < n ? 64 - have : n;
        memcpy(m->buf + have, p, take);
        p += take;
        n -= take;
        if (have + take < 64) return;
        block(m->h, m->buf);
    }
    for (; n >= 64; p += 64, n -= 64) block(m->h, p);
    memcpy(m->buf, p, n);
}

void xt_md5_final(xt_md5 *m, uint8_t digest[16]) {
    uint64_t bits = m->len * 8;
    uint8_t pad[72] = {0x80};
    size_t have = (size_t)(m->len % 64);
    size_t padlen = (have < 56 ? 56 : 120) - have;
    for (int i = 0; i < 8; i++) pad[padlen + i] = (uint8_t)(bits >> (8 * i));
    xt_md5_update(m, pad, padlen + 8);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) digest[4 * i + j] = (uint8_t)(m->h[i] >> (8 * j));
}

static void to_hex(const uint8_t d[16], char hex[33]) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[32] = 0;
}

void xt_md5_hex(const void *data, size_t n, char hex[33]) {
    xt_md5 m;
    uint8_t d[16];
    xt_md5_init(&m);
    xt_md5_update(&m, data, n);
    xt_md5_final(&m, d);
    to_hex(d, hex);
}

int xt_md5_file(const char *path, char hex[33], xt_err *e) {
    xt_infile in;
    const xt_in_opts o = {XT_EIO, XT_EIO, "check the path"};
    int rc = xt_in_open(&in, path, &o, e);
    if (rc) return rc;
    xt_md5 m;
    uint8_t buf[1 << 16], d[16];
    size_t got = 0;
    uint64_t left = in.size;  /* the size at open: a file still growing is not read forever */
    int err = 0;
    xt_md5_init(&m);
    while (left && !(err = xt_in_read(&in, buf, left < sizeof buf ? (size_t)left : sizeof buf, &got)) && got) {
        xt_md5_update(&m, buf, got);
        left -= got;
    }
    xt_in_close(&in);
    if (err || left) return xt_fail(e, XT_EIO, "%s: read error: %s", path, err ? strerror(err) : "the file shrank");
    xt_md5_final(&m, d);
    to_hex(d, hex);
    return 0;
}

/* protobuf.c — the Protocol Buffers wire-format writer; see protobuf.h. */
#include "io/protobuf.h"

#include <stdlib.h>
#include <string.h>

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5 };

static int reserve(xt_pb *b, size_t more) {
    if (b->oom) return -1;
    if (b->len + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more) {
        if (cap > SIZE_MAX / 2) return b->oom = 1, -1;
        cap *= 2;
    }
    uint8_t *p = realloc(b->buf, cap);
    if (!p) return b->oom = 1, -1;
    b->buf = p;
    b->cap = cap;
    return 0;
}

/* v's varint into out (at most 10 bytes); returns its length. */
static size_t varint_bytes(uint64_t v, uint8_t out[10]) {
    size_t n = 0;
    do {
        out[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

static void raw(xt_pb *b, const void *data, size_t n) {
    if (reserve(b, n)) return;
    if (n) memcpy(b->buf + b->len, data, n);
    b->len += n;
}

static void put_varint(xt_pb *b, uint64_t v) {
    uint8_t tmp[10];
    raw(b, tmp, varint_bytes(v, tmp));
}

static void tag(xt_pb *b, int field, int wire) { put_varint(b, ((uint64_t)(unsigned)field << 3) | (unsigned)wire); }

/* little-endian whatever the host's order */
static void put_le(xt_pb *b, uint64_t v, int bytes) {
    uint8_t tmp[8];
    for (int i = 0; i < bytes; i++) tmp[i] = (uint8_t)(v >> (8 * i));
    raw(b, tmp, (size_t)bytes);
}

void xt_pb_varint(xt_pb *b, int field, uint64_t v) {
    tag(b, field, WIRE_VARINT);
    put_varint(b, v);
}

void xt_pb_float(xt_pb *b, int field, float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    tag(b, field, WIRE_I32);
    put_le(b, u, 4);
}

void xt_pb_double(xt_pb *b, int field, double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    tag(b, field, WIRE_I64);
    put_le(b, u, 8);
}

void xt_pb_bytes(xt_pb *b, int field, const void *data, size_t n) {
    tag(b, field, WIRE_LEN);
    put_varint(b, n);
    raw(b, data, n);
}

void xt_pb_string(xt_pb *b, int field, const char *s) { xt_pb_bytes(b, field, s, strlen(s)); }

size_t xt_pb_begin(xt_pb *b, int field) {
    tag(b, field, WIRE_LEN);
    return b->len;
}

void xt_pb_end(xt_pb *b, size_t mark) {
    if (b->oom || mark > b->len) return;
    uint8_t tmp[10];
    size_t body = b->len - mark, k = varint_bytes(body, tmp);
    if (reserve(b, k)) return;
    memmove(b->buf + mark + k, b->buf + mark, body);
    memcpy(b->buf + mark, tmp, k);
    b->len += k;
}

void xt_pb_free(xt_pb *b) {
    free(b->buf);
    *b = (xt_pb){0};
}

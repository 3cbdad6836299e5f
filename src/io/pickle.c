/* pickle.c — the pickle opcodes xlatrain writes; see pickle.h. Opcode bytes
 * and encodings are those of CPython's Lib/pickle.py (protocol 2). */
#include "io/pickle.h"

#include <stdlib.h>
#include <string.h>

void xt_pickle_init(xt_pickle *p) { memset(p, 0, sizeof *p); }

void xt_pickle_free(xt_pickle *p) {
    free(p->buf);
    memset(p, 0, sizeof *p);
}

static void put(xt_pickle *p, const void *bytes, size_t n) {
    if (p->oom) return;
    if (p->len + n > p->cap) {
        size_t cap = p->cap ? p->cap : 4096;
        while (cap < p->len + n) cap *= 2;
        unsigned char *b = realloc(p->buf, cap);
        if (!b) {
            p->oom = 1;
            return;
        }
        p->buf = b;
        p->cap = cap;
    }
    memcpy(p->buf + p->len, bytes, n);
    p->len += n;
}

static void op(xt_pickle *p, unsigned char c) { put(p, &c, 1); }

static void le32(xt_pickle *p, uint32_t v) {
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
    put(p, b, 4);
}

void xt_pickle_proto(xt_pickle *p) { put(p, "\x80\x02", 2); }
void xt_pickle_stop(xt_pickle *p) { op(p, '.'); }
void xt_pickle_mark(xt_pickle *p) { op(p, '('); }
void xt_pickle_tuple(xt_pickle *p) { op(p, 't'); }
void xt_pickle_empty_tuple(xt_pickle *p) { op(p, ')'); }
void xt_pickle_persid(xt_pickle *p) { op(p, 'Q'); }
void xt_pickle_reduce(xt_pickle *p) { op(p, 'R'); }
void xt_pickle_setitems(xt_pickle *p) { op(p, 'u'); }
void xt_pickle_bool(xt_pickle *p, int v) { op(p, v ? 0x88 : 0x89); }

/* GLOBAL: "c" module "\n" name "\n" */
void xt_pickle_global(xt_pickle *p, const char *module, const char *name) {
    op(p, 'c');
    put(p, module, strlen(module));
    op(p, '\n');
    put(p, name, strlen(name));
    op(p, '\n');
}

/* BININT for a signed 32-bit value, else LONG1: a length byte and the
 * value's little-endian two's complement bytes. */
void xt_pickle_int(xt_pickle *p, int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
        op(p, 'J');
        le32(p, (uint32_t)(int32_t)v);
        return;
    }
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)v >> (8 * i));
    op(p, 0x8a);
    op(p, 8);
    put(p, b, 8);
}

/* BINUNICODE: 4-byte little-endian length, then the UTF-8 bytes */
void xt_pickle_str(xt_pickle *p, const char *s) {
    size_t n = strlen(s);
    op(p, 'X');
    le32(p, (uint32_t)n);
    put(p, s, n);
}

/* torch_save.c — a state_dict in torch.save's zip format; see torch_save.h. */
#include "io/torch_save.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "io/atomic.h"

#include "io/pickle.h"

/* PyTorch's legacy typed-storage class for each dtype: what the persistent
 * id names, and what torch.load maps back to a dtype. */
static const char *storage_class(xt_st_dtype d) {
    switch (d) {
    case XT_ST_F32: return "FloatStorage";
    case XT_ST_F64: return "DoubleStorage";
    case XT_ST_I32: return "IntStorage";
    case XT_ST_I64: return "LongStorage";
    case XT_ST_U8: return "ByteStorage";
    default: return NULL;
    }
}

static int64_t numel(const xt_st_tensor *t) {
    int64_t k = 1;
    for (int i = 0; i < t->rank; i++) k *= t->shape[i];
    return k;
}

/* A tuple of ints (the size or the stride). */
static void int_tuple(xt_pickle *p, const int64_t *v, int n) {
    if (n == 0) {
        xt_pickle_empty_tuple(p);
        return;
    }
    xt_pickle_mark(p);
    for (int i = 0; i < n; i++) xt_pickle_int(p, v[i]);
    xt_pickle_tuple(p);
}

/* torch._utils._rebuild_tensor_v2(storage, 0, size, stride, False, OrderedDict()) */
static void pickle_tensor(xt_pickle *p, const xt_st_tensor *t, int key) {
    char k[24];
    snprintf(k, sizeof k, "%d", key);
    int64_t stride[XT_ST_MAX_RANK], s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        stride[i] = s;
        s *= t->shape[i];
    }
    xt_pickle_global(p, "torch._utils", "_rebuild_tensor_v2");
    xt_pickle_mark(p);
    xt_pickle_mark(p); /* the storage's persistent id */
    xt_pickle_str(p, "storage");
    xt_pickle_global(p, "torch", storage_class(t->dtype));
    xt_pickle_str(p, k);
    xt_pickle_str(p, "cpu");
    xt_pickle_int(p, numel(t));
    xt_pickle_tuple(p);
    xt_pickle_persid(p);
    xt_pickle_int(p, 0); /* storage offset */
    int_tuple(p, t->shape, t->rank);
    int_tuple(p, stride, t->rank);
    xt_pickle_bool(p, 0); /* requires_grad */
    xt_pickle_global(p, "collections", "OrderedDict"); /* backward hooks */
    xt_pickle_empty_tuple(p);
    xt_pickle_reduce(p);
    xt_pickle_tuple(p);
    xt_pickle_reduce(p);
}

/* data.pkl: OrderedDict([(name, tensor), ...]) */
static void pickle_state_dict(xt_pickle *p, const xt_st_tensor *t, int n) {
    xt_pickle_proto(p);
    xt_pickle_global(p, "collections", "OrderedDict");
    xt_pickle_empty_tuple(p);
    xt_pickle_reduce(p);
    xt_pickle_mark(p);
    for (int i = 0; i < n; i++) {
        xt_pickle_str(p, t[i].name);
        pickle_tensor(p, &t[i], i);
    }
    xt_pickle_setitems(p);
    xt_pickle_stop(p);
}

/* ---- the zip archive, written in one pass through atomic.h ----------------
 * Every record is stored (no compression), its data 64-byte aligned by
 * padding in an extra field (id "FB", as PyTorch's own writer does), with
 * the CRC-32 computed up front (the data is in memory), so the archive
 * streams: no seek, no temporary file of its own, and `-` (a pipe) works. */

#define ZIP_ALIGN 64
#define ZIP_LIMIT 0xfffffffeULL /* offsets and sizes in a zip without ZIP64 */

typedef struct zrec {
    const char *name;
    const void *data;
    uint64_t len;
    uint32_t crc;
    uint64_t offset; /* of its local header */
    uint16_t pad;    /* extra-field bytes before the data */
} zrec;

static void le16(unsigned char *p, unsigned v) { p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8); }
static void le32(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t crc_of(const void *data, uint64_t n) {
    const Bytef *p = data;
    uLong crc = crc32(0, Z_NULL, 0);
    while (n > 0) { /* zlib's crc32 takes a 32-bit length */
        uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
        crc = crc32(crc, p, chunk);
        p += chunk;
        n -= chunk;
    }
    return (uint32_t)crc;
}

/* The fields local and central headers share, from "version needed" on. */
static void common_fields(unsigned char *h, const zrec *r, unsigned extra) {
    le16(h, 20);      /* version needed: 2.0 */
    le16(h + 2, 0x0800); /* flags: UTF-8 names */
    le16(h + 4, 0);   /* stored */
    le16(h + 6, 0);   /* time 00:00 */
    le16(h + 8, 0x21); /* date 1980-01-01 */
    le32(h + 10, r->crc);
    le32(h + 14, r->len);
    le32(h + 18, r->len);
    le16(h + 22, (unsigned)strlen(r->name));
    le16(h + 24, extra);
}

static int write_zip(xt_atomic_file *af, zrec *rec, int n, xt_err *e) {
    static const unsigned char zeros[ZIP_ALIGN + 4];
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        zrec *r = &rec[i];
        size_t nl = strlen(r->name);
        r->crc = crc_of(r->data, r->len);
        r->offset = off;
        uint64_t data_at = off + 30 + nl;
        r->pad = data_at % ZIP_ALIGN ? (uint16_t)(ZIP_ALIGN - (data_at + 4) % ZIP_ALIGN) % ZIP_ALIGN + 4 : 0;
        unsigned char h[30], x[4];
        le32(h, 0x04034b50);
        common_fields(h + 4, r, r->pad);
        xt_atomic_write(af, h, sizeof h);
        xt_atomic_write(af, r->name, nl);
        if (r->pad) {
            le16(x, 0x4246); /* "FB" */
            le16(x + 2, r->pad - 4u);
            xt_atomic_write(af, x, 4);
            xt_atomic_write(af, zeros, r->pad - 4u);
        }
        xt_atomic_write(af, r->data, (size_t)r->len);
        off = data_at + r->pad + r->len;
        if (r->len > ZIP_LIMIT || off > ZIP_LIMIT) {
            xt_atomic_abort(af);
            return xt_fail(e, XT_EIO, "cannot write %s: over 4 GiB, more than this writer's zip archive holds; export to .safetensors instead",
                           af->path);
        }
    }
    uint64_t cd = off;
    for (int i = 0; i < n; i++) {
        const zrec *r = &rec[i];
        unsigned char h[46];
        le32(h, 0x02014b50);
        le16(h + 4, 20); /* made by: 2.0, MS-DOS attributes */
        common_fields(h + 6, r, 0);
        le16(h + 32, 0); /* comment */
        le16(h + 34, 0); /* disk */
        le16(h + 36, 0); /* internal attributes */
        le32(h + 38, 0); /* external attributes */
        le32(h + 42, r->offset);
        xt_atomic_write(af, h, sizeof h);
        xt_atomic_write(af, r->name, strlen(r->name));
        off += sizeof h + strlen(r->name);
    }
    unsigned char end[22];
    le32(end, 0x06054b50);
    le16(end + 4, 0);
    le16(end + 6, 0);
    le16(end + 8, (unsigned)n);
    le16(end + 10, (unsigned)n);
    le32(end + 12, off - cd);
    le32(end + 16, cd);
    le16(end + 20, 0);
    xt_atomic_write(af, end, sizeof end);
    if (off > ZIP_LIMIT || n > 0xfffe) {
        xt_atomic_abort(af);
        return xt_fail(e, XT_EIO, "cannot write %s: over 4 GiB or 65535 tensors, more than this writer's zip archive holds; export to .safetensors instead",
                       af->path);
    }
    return xt_atomic_commit(af, e);
}

/* The shape as PyTorch must hold it: every size and every contiguous
 * stride (the product of the sizes after it, a 0 counted as 1, as
 * PyTorch does) within int64, as the safetensors loader bounds them. */
static int check_shape(const char *path, const xt_st_tensor *t, xt_err *e) {
    if (t->rank < 0 || t->rank > XT_ST_MAX_RANK)
        return xt_fail(e, XT_EIO, "cannot write %s: tensor '%s' has rank %d; at most %d", path, t->name, t->rank, XT_ST_MAX_RANK);
    int64_t s = (int64_t)xt_st_dtype_size(t->dtype);
    for (int i = t->rank - 1; i >= 0; i--) {
        int64_t d = t->shape[i] > 1 ? t->shape[i] : 1;
        if (t->shape[i] < 0 || __builtin_mul_overflow(s, d, &s))
            return xt_fail(e, XT_EIO, "cannot write %s: tensor '%s' has a shape whose strides or size do not fit in 64 bits (dimension %d is %lld); PyTorch cannot hold it: export another checkpoint",
                           path, t->name, i, (long long)t->shape[i]);
    }
    return 0;
}

int xt_torch_save(const char *path, const xt_st_tensor *t, int n, xt_err *e) {
    for (int i = 0; i < n; i++) {
        if (!storage_class(t[i].dtype)) return xt_fail(e, XT_EIO, "%s: tensor '%s' has a dtype PyTorch's format is not written for here", path, t[i].name);
        int rc = check_shape(path, &t[i], e);
        if (rc) return rc;
    }
    xt_pickle p;
    xt_pickle_init(&p);
    pickle_state_dict(&p, t, n);
    zrec *rec = calloc((size_t)n + 3, sizeof *rec);
    char (*names)[40] = calloc((size_t)n + 1, sizeof *names);
    if (p.oom || !rec || !names) {
        free(rec);
        free(names);
        xt_pickle_free(&p);
        return xt_fail(e, XT_EIO, "%s: out of memory writing the state_dict", path);
    }
    int k = 0;
    rec[k++] = (zrec){.name = "archive/data.pkl", .data = p.buf, .len = p.len};
    rec[k++] = (zrec){.name = "archive/byteorder", .data = "little", .len = 6};
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "archive/data/%d", i);
        rec[k++] = (zrec){.name = names[i], .data = t[i].data, .len = (uint64_t)numel(&t[i]) * xt_st_dtype_size(t[i].dtype)};
    }
    rec[k++] = (zrec){.name = "archive/version", .data = "3\n", .len = 2};
    xt_atomic_file af;
    int rc = xt_atomic_open(&af, path, e);
    if (!rc) rc = write_zip(&af, rec, k, e);
    free(rec);
    free(names);
    xt_pickle_free(&p);
    return rc;
}

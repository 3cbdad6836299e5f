/* safetensors.c — the safetensors writer and the validating reader; see
 * safetensors.h. The header is built with jsonw and parsed by jansson
 * (json_read.h: strict, no repeated keys, bounded memory), the file is
 * written through atomic.h. */
#include "io/safetensors.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "io/atomic.h"
#include "io/infile.h"
#include "io/json_read.h"
#include "io/jsonw.h"

/* Tensor bytes are written and read in host order; the format is little-endian. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host (tensor data is written as it is in memory)"
#endif

static const char *const k_dtype_names[XT_ST_NDTYPES] = {"F32", "F64", "I32", "I64", "U8"};
static const size_t k_dtype_sizes[XT_ST_NDTYPES] = {4, 8, 4, 8, 1};

size_t xt_st_dtype_size(xt_st_dtype t) { return (unsigned)t < XT_ST_NDTYPES ? k_dtype_sizes[t] : 0; }
const char *xt_st_dtype_name(xt_st_dtype t) { return (unsigned)t < XT_ST_NDTYPES ? k_dtype_names[t] : "?"; }

/* numel * size with overflow detection; 0 on success. */
static int tensor_bytes(int rank, const int64_t *shape, size_t elsize, uint64_t *out) {
    uint64_t n = elsize;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0) return -1;
        uint64_t d = (uint64_t)shape[i];
        if (d && n > UINT64_MAX / d) return -1;
        n *= d;
    }
    *out = n;
    return 0;
}

static void shape_str(char *buf, size_t cap, int rank, const int64_t *shape) {
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < rank && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

/* ------------------------------------------------------------------ writing */

static uint32_t crc_update(uint32_t crc, const void *data, size_t n) {
    const Bytef *p = data;
    while (n > 0) { /* zlib's crc32 takes a 32-bit length */
        uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
        crc = (uint32_t)crc32(crc, p, chunk);
        p += chunk;
        n -= chunk;
    }
    return crc;
}

static int reserved_key(const char *k) { return !strcmp(k, XT_ST_CRC_KEY) || !strcmp(k, XT_ST_SUM_KEY); }

static int check_descriptors(const char *path, const xt_st_tensor *t, int nt, const xt_st_meta *m, int nm,
                             uint64_t *sizes, xt_err *e) {
    for (int i = 0; i < nt; i++) {
        const char *name = t[i].name;
        if (!name || !*name || strcmp(name, "__metadata__") == 0)
            return xt_fail(e, XT_ERUNTIME, "cannot write %s: tensor %d has an empty or reserved name; this is a bug, please report it",
                           path, i);
        if ((unsigned)t[i].dtype >= XT_ST_NDTYPES || t[i].rank < 0 || t[i].rank > XT_ST_MAX_RANK ||
            tensor_bytes(t[i].rank, t[i].shape, k_dtype_sizes[t[i].dtype], &sizes[i]) != 0)
            return xt_fail(e, XT_ERUNTIME, "cannot write %s: tensor '%s' has a bad dtype, rank or shape; this is a bug, please report it",
                           path, name);
        if (sizes[i] && !t[i].data)
            return xt_fail(e, XT_ERUNTIME, "cannot write %s: tensor '%s' has no data; this is a bug, please report it",
                           path, name);
        for (int j = 0; j < i; j++) /* O(n^2), but a model has tens of tensors */
            if (strcmp(t[j].name, name) == 0)
                return xt_fail(e, XT_ERUNTIME, "cannot write %s: tensor name '%s' appears twice; this is a bug, please report it",
                               path, name);
    }
    for (int i = 0; i < nm; i++) {
        if (!m[i].key || !m[i].value || reserved_key(m[i].key))
            return xt_fail(e, XT_ERUNTIME, "cannot write %s: metadata entry %d is NULL or uses a reserved key (%s, %s); this is a bug, please report it",
                           path, i, XT_ST_CRC_KEY, XT_ST_SUM_KEY);
        for (int j = 0; j < i; j++)
            if (strcmp(m[j].key, m[i].key) == 0)
                return xt_fail(e, XT_ERUNTIME, "cannot write %s: metadata key '%s' appears twice; this is a bug, please report it",
                               path, m[i].key);
    }
    return 0;
}

/* ---------------------------------------------------------------- checksum
 *
 * XT_ST_SUM_KEY covers the header's meaning and the data: crc32 over the
 * canonical header (metadata pairs sorted by key, the checksum keys left
 * out; tensors sorted by name with dtype, shape and data_offsets; every
 * field NUL-terminated) followed by the data bytes. Canonical, so JSON
 * spacing and member order do not matter, and a metadata value edited by
 * hand (xlatrain.next_epoch) is caught like a flipped tensor bit. */

typedef struct canon_meta {
    const char *key, *value;
} canon_meta;
typedef struct canon_tensor {
    const char *name;
    xt_st_dtype dtype;
    int rank;
    const int64_t *shape;
    uint64_t begin, end;
} canon_tensor;

static int meta_cmp(const void *a, const void *b) { return strcmp(((const canon_meta *)a)->key, ((const canon_meta *)b)->key); }
static int tensor_cmp(const void *a, const void *b) {
    return strcmp(((const canon_tensor *)a)->name, ((const canon_tensor *)b)->name);
}

static uint32_t crc_str(uint32_t crc, const char *s) { return crc_update(crc, s, strlen(s) + 1); }

/* Sorts both arrays in place. */
static uint32_t canon_crc(canon_meta *m, int nm, canon_tensor *t, int nt) {
    qsort(m, (size_t)nm, sizeof *m, meta_cmp);
    qsort(t, (size_t)nt, sizeof *t, tensor_cmp);
    uint32_t crc = (uint32_t)crc32(0L, Z_NULL, 0);
    crc = crc_str(crc, "safetensors-canonical-v1");
    for (int i = 0; i < nm; i++) {
        if (reserved_key(m[i].key)) continue;
        crc = crc_str(crc, "m");
        crc = crc_str(crc, m[i].key);
        crc = crc_str(crc, m[i].value);
    }
    for (int i = 0; i < nt; i++) {
        char num[32];
        crc = crc_str(crc, "t");
        crc = crc_str(crc, t[i].name);
        crc = crc_str(crc, k_dtype_names[t[i].dtype]);
        for (int d = 0; d < t[i].rank; d++) {
            snprintf(num, sizeof num, "%lld", (long long)t[i].shape[d]);
            crc = crc_str(crc, num);
        }
        snprintf(num, sizeof num, "%llu-%llu", (unsigned long long)t[i].begin, (unsigned long long)t[i].end);
        crc = crc_str(crc, num);
    }
    return crc;
}

static void sum_text(uint32_t crc, char out[24]) { snprintf(out, 24, "crc32:%08x", (unsigned)crc); }

/* The writer's checksum: what the reader will compute from the file. */
static int write_sum(const xt_st_tensor *t, int nt, const xt_st_meta *m, int nm, const uint64_t *sizes, char out[24]) {
    canon_meta *cm = calloc((size_t)nm + 2, sizeof *cm);
    canon_tensor *ct = calloc((size_t)nt + 1, sizeof *ct);
    if (!cm || !ct) {
        free(cm);
        free(ct);
        return -1;
    }
    int have_format = 0;
    for (int i = 0; i < nm; i++) {
        cm[i] = (canon_meta){m[i].key, m[i].value};
        have_format |= strcmp(m[i].key, "format") == 0;
    }
    if (!have_format) cm[nm] = (canon_meta){"format", "pt"};
    uint64_t off = 0;
    for (int i = 0; i < nt; i++) {
        ct[i] = (canon_tensor){t[i].name, t[i].dtype, t[i].rank, t[i].shape, off, off + sizes[i]};
        off += sizes[i];
    }
    uint32_t crc = canon_crc(cm, nm + !have_format, ct, nt);
    for (int i = 0; i < nt; i++) crc = crc_update(crc, t[i].data, (size_t)sizes[i]);
    sum_text(crc, out);
    free(cm);
    free(ct);
    return 0;
}

/* "__metadata__": the caller's pairs, "format": "pt" unless given, and the checksum. */
static void metadata_json(xt_jsonw *w, const xt_st_meta *m, int nm, const char *sum) {
    int have_format = 0;
    xt_jw_key(w, "__metadata__");
    xt_jw_obj(w);
    for (int i = 0; i < nm; i++) {
        xt_jw_key(w, m[i].key);
        xt_jw_str(w, m[i].value);
        have_format |= strcmp(m[i].key, "format") == 0;
    }
    if (!have_format) {
        xt_jw_key(w, "format");
        xt_jw_str(w, "pt");
    }
    xt_jw_key(w, XT_ST_SUM_KEY);
    xt_jw_str(w, sum);
    xt_jw_end(w);
}

/* One entry per tensor: dtype, shape and data_offsets, packed in order. */
static void tensors_json(xt_jsonw *w, const xt_st_tensor *t, int nt, const uint64_t *sizes) {
    uint64_t off = 0;
    for (int i = 0; i < nt; i++) {
        xt_jw_key(w, t[i].name);
        xt_jw_obj(w);
        xt_jw_key(w, "dtype");
        xt_jw_str(w, k_dtype_names[t[i].dtype]);
        xt_jw_key(w, "shape");
        xt_jw_arr(w);
        for (int d = 0; d < t[i].rank; d++) xt_jw_int(w, t[i].shape[d]);
        xt_jw_end(w);
        xt_jw_key(w, "data_offsets");
        xt_jw_arr(w);
        xt_jw_uint(w, off);
        xt_jw_uint(w, off + sizes[i]);
        xt_jw_end(w);
        xt_jw_end(w);
        off += sizes[i];
    }
}

/* The 8-byte little-endian header length, the header, then the tensors' bytes. */
static int write_file(const char *path, const xt_jsonw *w, const xt_st_tensor *t, int nt, const uint64_t *sizes, xt_err *e) {
    unsigned char lenbuf[8];
    for (int i = 0; i < 8; i++) lenbuf[i] = (unsigned char)((uint64_t)w->len >> (8 * i));
    xt_atomic_file af;
    int rc = xt_atomic_open(&af, path, e);
    if (rc) return rc;
    xt_atomic_write(&af, lenbuf, 8);
    xt_atomic_write(&af, w->buf, w->len);
    for (int i = 0; i < nt; i++) xt_atomic_write(&af, t[i].data, (size_t)sizes[i]);
    return xt_atomic_commit(&af, e);
}

int xt_st_write(const char *path, const xt_st_tensor *t, int nt, const xt_st_meta *m, int nm, xt_err *e) {
    if (nt < 0 || nm < 0 || (nt && !t) || (nm && !m))
        return xt_fail(e, XT_ERUNTIME, "cannot write %s: bad tensor or metadata count; this is a bug, please report it", path);
    uint64_t *sizes = calloc((size_t)nt + 1, sizeof *sizes);
    if (!sizes) return xt_fail(e, XT_EIO, "cannot write %s: out of memory; free some memory and retry", path);
    xt_jsonw w;
    xt_jw_init(&w);
    int rc = check_descriptors(path, t, nt, m, nm, sizes, e);
    char sum[24];
    if (!rc && write_sum(t, nt, m, nm, sizes, sum))
        rc = xt_fail(e, XT_EIO, "cannot write %s: out of memory; free some memory and retry", path);
    if (!rc) {
        xt_jw_obj(&w);
        metadata_json(&w, m, nm, sum);
        tensors_json(&w, t, nt, sizes);
        xt_jw_end(&w);
        /* pad with spaces (the spec's choice) so the data starts 8-byte aligned */
        while (w.len % 8) xt_jw_raw(&w, " ", 1);
        rc = xt_jw_finish(&w, path, e);
    }
    if (!rc) rc = write_file(path, &w, t, nt, sizes, e);
    free(sizes);
    xt_jw_free(&w);
    return rc;
}

/* ------------------------------------------------------------------ reading */

typedef struct priv {
    json_t *root;        /* the parsed header: names and metadata strings point into it */
    void *data;          /* aligned tensor copies */
} priv;

#define BAD_FIX "use another checkpoint (the file is corrupt or not a safetensors file)"

static int bad(xt_err *e, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(xt_err *e, const char *name, const char *fmt, ...) {
    char what[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return xt_fail(e, XT_ERUNTIME, "%s: %s; " BAD_FIX, name, what);
}

/* A JSON integer in [0, INT64_MAX], else -1. (json_read refuses "\u0000",
 * so keys and strings are plain C strings: no embedded NUL to compare past.) */
static int64_t nonneg_int(const json_t *v) {
    return v && json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v) : -1;
}

typedef struct span {
    uint64_t begin, end;
    int index;
} span;

static int span_cmp(const void *pa, const void *pb) {
    const span *a = pa, *b = pb;
    if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
    if (a->end != b->end) return a->end < b->end ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

static int parse_tensor(const char *name, const char *tn, const json_t *v, uint64_t data_len, xt_st_tensor *t,
                        span *s, xt_err *e) {
    if (!json_is_object(v)) return bad(e, name, "tensor '%s' is a JSON %s, not an object", tn, xt_json_kind(v));
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        if (strcmp(k, "dtype") && strcmp(k, "shape") && strcmp(k, "data_offsets"))
            return bad(e, name, "tensor '%s' has an unknown key '%s' (expected dtype, shape, data_offsets)", tn, k);
    }
    const json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
                 *of = json_object_get(v, "data_offsets");
    if (!dt || !sh || !of) return bad(e, name, "tensor '%s' lacks dtype, shape or data_offsets", tn);
    if (!json_is_string(dt)) return bad(e, name, "tensor '%s': dtype is not a string", tn);
    int d;
    for (d = 0; d < XT_ST_NDTYPES; d++)
        if (!strcmp(json_string_value(dt), k_dtype_names[d])) break;
    if (d == XT_ST_NDTYPES)
        return bad(e, name, "tensor '%s' has dtype '%.40s', which xlatrain does not read (F32, F64, I32, I64, U8)", tn,
                   json_string_value(dt));
    if (!json_is_array(sh)) return bad(e, name, "tensor '%s': shape is not an array", tn);
    if (json_array_size(sh) > XT_ST_MAX_RANK)
        return bad(e, name, "tensor '%s' has rank %zu, more than the %d xlatrain supports", tn, json_array_size(sh),
                   XT_ST_MAX_RANK);
    t->name = tn;
    t->dtype = (xt_st_dtype)d;
    t->rank = (int)json_array_size(sh);
    for (int r = 0; r < t->rank; r++)
        if ((t->shape[r] = nonneg_int(json_array_get(sh, (size_t)r))) < 0)
            return bad(e, name, "tensor '%s': shape entry %d is not a non-negative integer", tn, r);
    if (!json_is_array(of) || json_array_size(of) != 2 || nonneg_int(json_array_get(of, 0)) < 0 ||
        nonneg_int(json_array_get(of, 1)) < 0)
        return bad(e, name, "tensor '%s': data_offsets is not [begin, end] with non-negative integers", tn);
    uint64_t b = (uint64_t)nonneg_int(json_array_get(of, 0)), en = (uint64_t)nonneg_int(json_array_get(of, 1)), want;
    if (en < b) return bad(e, name, "tensor '%s': data_offsets [%llu, %llu] end before they begin", tn,
                           (unsigned long long)b, (unsigned long long)en);
    char sbuf[200];
    shape_str(sbuf, sizeof sbuf, t->rank, t->shape);
    if (tensor_bytes(t->rank, t->shape, k_dtype_sizes[d], &want) != 0)
        return bad(e, name, "tensor '%s': shape %s is too large", tn, sbuf);
    if (want != en - b)
        return bad(e, name, "tensor '%s': dtype %s and shape %s need %llu bytes but data_offsets [%llu, %llu] hold %llu",
                   tn, k_dtype_names[d], sbuf, (unsigned long long)want, (unsigned long long)b,
                   (unsigned long long)en, (unsigned long long)(en - b));
    if (en > data_len)
        return bad(e, name, "tensor '%s' ends at data byte %llu but the file holds only %llu data bytes (truncated?)",
                   tn, (unsigned long long)en, (unsigned long long)data_len);
    t->nbytes = (size_t)want;
    s->begin = b;
    s->end = en;
    return 0;
}

static int parse_metadata(const char *name, const json_t *v, xt_st_file *f, xt_err *e) {
    if (!json_is_object(v)) return bad(e, name, "__metadata__ is a JSON %s, not an object", xt_json_kind(v));
    f->meta = calloc(json_object_size(v) + 1, sizeof *f->meta);
    if (!f->meta) return xt_fail(e, XT_EIO, "%s: out of memory while reading; free some memory and retry", name);
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        if (!json_is_string(x))
            return bad(e, name, "__metadata__ value for '%.100s' is a %s; safetensors metadata values are strings", k,
                       xt_json_kind(x));
        f->meta[f->nmeta++] = (xt_st_meta){k, json_string_value(x)};
    }
    return 0;
}

/* 8 hex digits into *v; -1 when s is not exactly that. */
static int hex8(const char *s, uint32_t *v) {
    uint32_t x = 0;
    int n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0 || n >= 8) return -1;
        x = x * 16 + (uint32_t)d;
    }
    if (n != 8) return -1;
    *v = x;
    return 0;
}

static int sum_mismatch(xt_err *e, const char *name, const char *what, uint32_t got, uint32_t want) {
    return xt_fail(e, XT_ERUNTIME, "%s: checksum mismatch: the file is corrupt (%s changed after it was written: crc32 %08x, written as %08x); use another checkpoint",
                   name, what, (unsigned)got, (unsigned)want);
}

/* XT_ST_SUM_KEY over the canonical header and the data (spans sorted by
 * offset, as check_tiling leaves them). */
static int check_sum(const char *name, const xt_st_file *f, const char *s, const span *spans, const unsigned char *data,
                     xt_err *e) {
    uint32_t want;
    if (strncmp(s, "crc32:", 6) || hex8(s + 6, &want))
        return bad(e, name, "metadata %s is '%.40s', not crc32:<8 hex digits>", XT_ST_SUM_KEY, s);
    canon_meta *cm = calloc((size_t)f->nmeta + 1, sizeof *cm);
    canon_tensor *ct = calloc((size_t)f->ntensors + 1, sizeof *ct);
    if (!cm || !ct) {
        free(cm);
        free(ct);
        return xt_fail(e, XT_EIO, "%s: out of memory while reading; free some memory and retry", name);
    }
    for (int i = 0; i < f->nmeta; i++) cm[i] = (canon_meta){f->meta[i].key, f->meta[i].value};
    for (int k = 0; k < f->ntensors; k++) {
        const xt_st_tensor *t = &f->tensors[spans[k].index];
        ct[k] = (canon_tensor){t->name, t->dtype, t->rank, t->shape, spans[k].begin, spans[k].end};
    }
    uint32_t got = canon_crc(cm, f->nmeta, ct, f->ntensors);
    free(cm);
    free(ct);
    got = crc_update(got, data, f->data_bytes);
    return got == want ? 0 : sum_mismatch(e, name, "its metadata, tensor list or data", got, want);
}

/* The checksum the file carries: XT_ST_SUM_KEY (header and data), else the
 * older XT_ST_CRC_KEY (data only), else none (written by another tool). */
static int check_crc(const char *name, const xt_st_file *f, const span *spans, const unsigned char *data, xt_err *e) {
    const char *sum = xt_st_meta_get(f, XT_ST_SUM_KEY);
    if (sum) return check_sum(name, f, sum, spans, data, e);
    const char *s = xt_st_meta_get(f, XT_ST_CRC_KEY);
    if (!s) return 0;
    uint32_t want;
    if (hex8(s, &want)) return bad(e, name, "metadata %s is '%.40s', not 8 hex digits", XT_ST_CRC_KEY, s);
    uint32_t got = crc_update((uint32_t)crc32(0L, Z_NULL, 0), data, f->data_bytes);
    return got == want ? 0 : sum_mismatch(e, name, "its tensor data", got, want);
}

#define OOM_FIX "out of memory while reading; free some memory and retry"

/* The 8-byte header length field (first8) of a file of `size` bytes: within
 * the file and the limit. Checked before the header is read, so a huge or
 * sparse file with a bad first word costs nothing. */
static int header_length(const unsigned char *first8, uint64_t size, const char *name, uint64_t *hlen, xt_err *e) {
    if (size < 8) return bad(e, name, "only %llu bytes, too short for the 8-byte header length", (unsigned long long)size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | first8[i];
    if (n > size - 8)
        return bad(e, name, "the header length field says %llu bytes but only %llu bytes follow it (truncated?)",
                   (unsigned long long)n, (unsigned long long)(size - 8));
    if (n > XT_ST_MAX_HEADER)
        return bad(e, name, "the header is %llu bytes, more than the %u-byte limit", (unsigned long long)n,
                   XT_ST_MAX_HEADER);
    *hlen = n;
    return 0;
}

/* The header's JSON (hdr[0..hlen)) into pv->root: an object in which no
 * object repeats a key (a repeated tensor name would alias two tensors). */
static int parse_header_json(priv *pv, const unsigned char *hdr, uint64_t hlen, const char *name, xt_err *e) {
    if (hlen < 2 || hdr[0] != '{') return bad(e, name, "the header does not start with '{'");
    xt_json_read_error je;
    if (!(pv->root = xt_json_read(hdr, (size_t)hlen, XT_JSON_READ_BUDGET, &je)))
        return bad(e, name, "bad JSON header at byte %zu: %s", je.offset + 8, je.msg);
    if (!json_is_object(pv->root))
        return bad(e, name, "the header is a JSON %s, not an object", xt_json_kind(pv->root));
    return 0;
}

/* Every member of the header: __metadata__, or a tensor (its span in spans). */
static int parse_members(const json_t *root, uint64_t data_len, const char *name, xt_st_file *f, span *spans, xt_err *e) {
    const char *key;
    const json_t *m;
    json_object_foreach((json_t *)root, key, m) {
        int rc;
        if (!strcmp(key, "__metadata__")) {
            if ((rc = parse_metadata(name, m, f, e))) return rc;
            continue;
        }
        if (!*key) return bad(e, name, "a tensor name is empty");
        int i = f->ntensors;
        if ((rc = parse_tensor(name, key, m, data_len, &f->tensors[i], &spans[i], e))) return rc;
        spans[i].index = i;
        f->ntensors++;
    }
    return 0;
}

/* The ranges must tile [0, data_len) exactly: no overlap (aliasing), no gap,
 * no tail. Sorts spans by offset. */
static int check_tiling(const xt_st_file *f, span *spans, uint64_t data_len, const char *name, xt_err *e) {
    qsort(spans, (size_t)f->ntensors, sizeof *spans, span_cmp);
    uint64_t at = 0;
    for (int k = 0; k < f->ntensors; k++) {
        const span *s = &spans[k];
        if (s->begin < at) {
            const span *p = &spans[k - 1];
            return bad(e, name, "tensors '%.100s' [%llu, %llu) and '%.100s' [%llu, %llu) overlap",
                       f->tensors[p->index].name, (unsigned long long)p->begin, (unsigned long long)p->end,
                       f->tensors[s->index].name, (unsigned long long)s->begin, (unsigned long long)s->end);
        }
        if (s->begin > at)
            return bad(e, name, "%llu unused bytes before tensor '%.100s' (data_offsets must be contiguous)",
                       (unsigned long long)(s->begin - at), f->tensors[s->index].name);
        at = s->end;
    }
    if (at != data_len)
        return bad(e, name, "%llu bytes after the last tensor that no tensor describes", (unsigned long long)(data_len - at));
    return 0;
}

/* Copies at 16-byte boundaries: offsets in the file need not be aligned. */
static int copy_aligned(xt_st_file *f, priv *pv, const span *spans, const unsigned char *data, const char *name, xt_err *e) {
    size_t total = 0;
    for (int i = 0; i < f->ntensors; i++) total += (f->tensors[i].nbytes + 15) & ~(size_t)15;
    if (!(pv->data = aligned_alloc(16, total ? total : 16)))
        return xt_fail(e, XT_EIO, "%s: out of memory for %zu bytes of tensors; free some memory and retry", name, total);
    size_t o = 0;
    for (int k = 0; k < f->ntensors; k++) {
        xt_st_tensor *t = &f->tensors[spans[k].index];
        memcpy((char *)pv->data + o, data + spans[k].begin, t->nbytes);
        t->data = (char *)pv->data + o;
        o += (t->nbytes + 15) & ~(size_t)15;
    }
    return 0;
}

/* Start f (its path, private part); 0 or XT_EIO. */
static int begin(xt_st_file *f, const char *name, xt_err *e) {
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", name);
    if (!(f->priv_ = calloc(1, sizeof(priv)))) return xt_fail(e, XT_EIO, "%s: " OOM_FIX, name);
    return 0;
}

/* The header hdr[0..hlen) describing data_len bytes of data into f, its
 * spans (sorted by offset) into *spans. */
static int parse_header(const unsigned char *hdr, uint64_t hlen, uint64_t data_len, const char *name, xt_st_file *f,
                        span **spans, xt_err *e) {
    priv *pv = f->priv_;
    int rc = parse_header_json(pv, hdr, hlen, name, e);
    if (rc) return rc;
    const json_t *root = pv->root;
    f->data_bytes = (size_t)data_len;
    f->tensors = calloc(json_object_size(root) + 1, sizeof *f->tensors);
    *spans = calloc(json_object_size(root) + 1, sizeof **spans);
    if (!f->tensors || !*spans) return xt_fail(e, XT_EIO, "%s: " OOM_FIX, name);
    if ((rc = parse_members(root, data_len, name, f, *spans, e))) return rc;
    return check_tiling(f, *spans, data_len, name, e);
}

/* Checksum, then the aligned copies of the data. */
static int take_data(xt_st_file *f, const span *spans, const unsigned char *data, const char *name, xt_err *e) {
    int rc = check_crc(name, f, spans, data, e);
    return rc ? rc : copy_aligned(f, f->priv_, spans, data, name, e);
}

/* Validate buf[0..size) (owned by the caller) into f. */
static int parse(const unsigned char *buf, size_t size, const char *name, xt_st_file *f, xt_err *e) {
    int rc = begin(f, name, e);
    span *spans = NULL;
    uint64_t hlen = 0;
    if (!rc) rc = header_length(buf, size, name, &hlen, e);
    if (!rc) rc = parse_header(buf + 8, hlen, size - 8 - hlen, name, f, &spans, e);
    if (!rc) rc = take_data(f, spans, buf + 8 + hlen, name, e);
    free(spans);
    if (rc) xt_st_close(f);
    return rc;
}

int xt_st_parse(const void *buf, size_t size, const char *name, xt_st_file *f, xt_err *e) {
    return parse(buf, size, name, f, e);
}

/* n bytes at the file's position into a new buffer (*out), or an error. */
static int read_part(xt_infile *in, uint64_t n, const char *what, unsigned char **out, xt_err *e) {
    if (!(*out = malloc(n ? (size_t)n : 1)))
        return xt_fail(e, XT_EIO, "cannot read %s: out of memory for %llu bytes of %s; free some memory and retry",
                       in->path, (unsigned long long)n, what);
    size_t got = 0;
    int err = xt_in_read(in, *out, (size_t)n, &got);
    if (err) return xt_fail(e, XT_EIO, "cannot read %s: %s; check the file", in->path, strerror(err));
    if (got != n) return bad(e, in->path, "the file shrank while being read");
    return 0;
}

/* Read in steps, each bounded by what the previous one validated: the
 * length field against the file size, the header against that length, and
 * only then the data the header describes. */
int xt_st_read(const char *path, xt_st_file *f, xt_err *e) {
    xt_infile in;
    const xt_in_opts o = {XT_EIO, XT_ERUNTIME, "pass a .safetensors checkpoint file"};
    int rc = begin(f, path, e);
    if (!rc) rc = xt_in_open(&in, path, &o, e);
    if (rc) {
        xt_st_close(f);
        return rc;
    }
    unsigned char first8[8], *hdr = NULL, *data = NULL;
    span *spans = NULL;
    uint64_t hlen = 0;
    size_t got = 0;
    int err = xt_in_read(&in, first8, 8, &got);
    if (err) rc = xt_fail(e, XT_EIO, "cannot read %s: %s; check the file", path, strerror(err));
    if (!rc) rc = header_length(first8, got < 8 ? got : in.size, path, &hlen, e);
    if (!rc) rc = read_part(&in, hlen, "header", &hdr, e);
    if (!rc) rc = parse_header(hdr, hlen, in.size - 8 - hlen, path, f, &spans, e);
    if (!rc) rc = read_part(&in, in.size - 8 - hlen, "tensor data", &data, e);
    if (!rc) rc = take_data(f, spans, data, path, e);
    xt_in_close(&in);
    free(hdr);
    free(data);
    free(spans);
    if (rc) xt_st_close(f);
    return rc;
}

void xt_st_close(xt_st_file *f) {
    if (!f) return;
    priv *pv = f->priv_;
    if (pv) {
        json_decref(pv->root);
        free(pv->data);
        free(pv);
    }
    free(f->tensors);
    free(f->meta);
    f->priv_ = NULL;
    f->tensors = NULL;
    f->meta = NULL;
    f->ntensors = f->nmeta = 0;
}

const xt_st_tensor *xt_st_find(const xt_st_file *f, const char *name) {
    for (int i = 0; i < f->ntensors; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}

const char *xt_st_meta_get(const xt_st_file *f, const char *key) {
    for (int i = 0; i < f->nmeta; i++)
        if (strcmp(f->meta[i].key, key) == 0) return f->meta[i].value;
    return NULL;
}

int xt_st_copy(const xt_st_file *f, const char *name, xt_st_dtype dtype, int rank, const int64_t *shape,
               void *dst, xt_err *e) {
    const xt_st_tensor *t = xt_st_find(f, name);
    if (!t)
        return xt_fail(e, XT_ERUNTIME, "%s: no tensor '%s'; the checkpoint is from a different model, use a matching one",
                       f->path, name);
    int same = t->dtype == dtype && t->rank == rank;
    for (int i = 0; same && i < rank; i++) same = t->shape[i] == shape[i];
    if (!same) {
        char have[200], want[200];
        shape_str(have, sizeof have, t->rank, t->shape);
        shape_str(want, sizeof want, rank, shape);
        return xt_fail(e, XT_ERUNTIME,
                       "%s: tensor '%s' is %s %s, the model expects %s %s; the checkpoint is from a different model, use a matching one",
                       f->path, name, xt_st_dtype_name(t->dtype), have, xt_st_dtype_name(dtype), want);
    }
    if (t->nbytes) memcpy(dst, t->data, t->nbytes);
    return 0;
}

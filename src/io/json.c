/* json.c — strict JSON parser into an arena-backed tree; see json.h.
 *
 * Recursive descent bounded by max_depth (so hostile nesting cannot blow the
 * stack), every read checked against the input length (the input need not be
 * NUL-terminated: safetensors headers are not). Decoded strings never grow
 * (an escape is always at least as long as what it decodes to, and the two
 * quotes pay for the NUL), so one buffer of len+1 bytes holds them all.
 */
#include "io/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DEFAULT_MAX_DEPTH = 64, FIRST_BLOCK = 64, MAX_BLOCK = 65536 };
#define DEFAULT_MAX_NODES ((size_t)1000000)

typedef struct block {
    struct block *next;
    size_t used, cap;
    xt_json nodes[];
} block;

typedef struct arena {
    block *blocks;       /* newest first */
    char *strbuf;        /* decoded strings, each NUL-terminated */
    size_t strused;
    size_t nnodes;
} arena;

typedef struct parser {
    const unsigned char *s;
    size_t n, pos;
    int depth, max_depth;
    size_t max_nodes;
    arena *a;
    xt_json_error *err;
} parser;

static int fail(parser *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(parser *p, size_t at, const char *fmt, ...) {
    if (p->err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err->msg, sizeof p->err->msg, fmt, ap);
        va_end(ap);
        p->err->offset = at;
    }
    return -1;
}

static void arena_free(arena *a) {
    if (!a) return;
    for (block *b = a->blocks, *nx; b; b = nx) {
        nx = b->next;
        free(b);
    }
    free(a->strbuf);
    free(a);
}

static xt_json *new_node(parser *p, xt_json_type t) {
    arena *a = p->a;
    if (a->nnodes >= p->max_nodes) {
        fail(p, p->pos, "more than %zu values (the limit for this document)", p->max_nodes);
        return NULL;
    }
    block *b = a->blocks;
    if (!b || b->used == b->cap) {
        size_t cap = b ? b->cap * 2 : FIRST_BLOCK;
        if (cap > MAX_BLOCK) cap = MAX_BLOCK;
        block *nb = malloc(sizeof *nb + cap * sizeof(xt_json));
        if (!nb) {
            fail(p, p->pos, "out of memory");
            return NULL;
        }
        nb->next = b;
        nb->used = 0;
        nb->cap = cap;
        a->blocks = b = nb;
    }
    xt_json *v = &b->nodes[b->used++];
    a->nnodes++;
    memset(v, 0, sizeof *v);
    v->type = t;
    v->offset = p->pos;
    return v;
}

static void skip_ws(parser *p) {
    while (p->pos < p->n) {
        unsigned char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

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

static size_t utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static int hex4(parser *p, size_t at, uint32_t *out) {
    if (p->n - at < 4) return fail(p, at, "truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p->s[at + i];
        int d = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return fail(p, at + i, "bad hex digit in \\u escape");
        v = v * 16 + (uint32_t)d;
    }
    *out = v;
    return 0;
}

/* p->pos is at the opening quote. Decodes into the arena's string buffer. */
static int parse_string(parser *p, const char **out, size_t *outlen) {
    arena *a = p->a;
    char *dst = a->strbuf + a->strused;
    size_t o = 0;
    p->pos++; /* opening quote */
    for (;;) {
        if (p->pos >= p->n) return fail(p, p->pos, "unterminated string");
        unsigned char c = p->s[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) return fail(p, p->pos, "control character 0x%02x in a string (escape it)", c);
        if (c == '\\') {
            if (p->pos + 1 >= p->n) return fail(p, p->pos, "unterminated string");
            unsigned char esc = p->s[p->pos + 1];
            const char *simple = strchr("\"\\/bfnrt", esc);
            if (esc && simple) {
                static const char map[] = "\"\\/\b\f\n\r\t";
                dst[o++] = map[simple - "\"\\/bfnrt"];
                p->pos += 2;
                continue;
            }
            if (esc != 'u') return fail(p, p->pos, "unknown escape '\\%c'", esc >= 0x20 && esc < 0x7f ? esc : '?');
            uint32_t cp;
            if (hex4(p, p->pos + 2, &cp)) return -1;
            size_t at = p->pos;
            p->pos += 6;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(p, at, "lone low surrogate \\u%04X", cp);
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t lo;
                if (p->n - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
                    return fail(p, at, "high surrogate \\u%04X not followed by a low one", cp);
                if (hex4(p, p->pos + 2, &lo)) return -1;
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return fail(p, p->pos, "high surrogate \\u%04X not followed by a low one", cp);
                p->pos += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            o += utf8_encode(cp, dst + o);
            continue;
        }
        if (c < 0x80) {
            dst[o++] = (char)c;
            p->pos++;
            continue;
        }
        uint32_t cp;
        size_t l = xt_utf8_decode(p->s + p->pos, p->n - p->pos, &cp);
        if (!l) return fail(p, p->pos, "invalid UTF-8 in a string");
        memcpy(dst + o, p->s + p->pos, l);
        o += l;
        p->pos += l;
    }
    dst[o] = 0;
    a->strused += o + 1;
    *out = dst;
    *outlen = o;
    return 0;
}

static int parse_number(parser *p, xt_json *v) {
    size_t start = p->pos, i = p->pos;
    const unsigned char *s = p->s;
    int is_int = 1;
    if (i < p->n && s[i] == '-') i++;
    if (i >= p->n || !(s[i] >= '0' && s[i] <= '9')) return fail(p, i, "expected a digit");
    if (s[i] == '0') {
        i++;
        if (i < p->n && s[i] >= '0' && s[i] <= '9') return fail(p, i, "leading zero in a number");
    } else {
        while (i < p->n && s[i] >= '0' && s[i] <= '9') i++;
    }
    if (i < p->n && s[i] == '.') {
        is_int = 0;
        i++;
        if (i >= p->n || !(s[i] >= '0' && s[i] <= '9')) return fail(p, i, "expected a digit after '.'");
        while (i < p->n && s[i] >= '0' && s[i] <= '9') i++;
    }
    if (i < p->n && (s[i] == 'e' || s[i] == 'E')) {
        is_int = 0;
        i++;
        if (i < p->n && (s[i] == '+' || s[i] == '-')) i++;
        if (i >= p->n || !(s[i] >= '0' && s[i] <= '9')) return fail(p, i, "expected a digit in the exponent");
        while (i < p->n && s[i] >= '0' && s[i] <= '9') i++;
    }
    size_t len = i - start;
    /* strtod needs a NUL-terminated copy; numbers are short except in hostile input */
    char small[64], *buf = len < sizeof small ? small : malloc(len + 1);
    if (!buf) return fail(p, start, "out of memory");
    memcpy(buf, s + start, len);
    buf[len] = 0;
    v->num = strtod(buf, NULL);
    if (is_int) {
        /* exact int64 when it fits: sizes and offsets must not pass through a double */
        int neg = buf[0] == '-';
        uint64_t acc = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        for (size_t k = (size_t)neg; k < len; k++) {
            unsigned d = (unsigned)(buf[k] - '0');
            if (acc > (lim - d) / 10) {
                is_int = 0;
                break;
            }
            acc = acc * 10 + d;
        }
        if (is_int) v->i = neg ? (acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc) : (int64_t)acc;
    }
    v->is_int = is_int;
    if (buf != small) free(buf);
    p->pos = i;
    return 0;
}

static int parse_value(parser *p, xt_json **out);

static int parse_container(parser *p, xt_json *v, int is_obj) {
    char close = is_obj ? '}' : ']';
    if (++p->depth > p->max_depth)
        return fail(p, p->pos, "nesting deeper than %d levels", p->max_depth);
    p->pos++; /* '{' or '[' */
    xt_json **tail = &v->kid;
    skip_ws(p);
    if (p->pos < p->n && p->s[p->pos] == close) {
        p->pos++;
        p->depth--;
        return 0;
    }
    for (;;) {
        const char *key = NULL;
        size_t key_len = 0, key_at = 0;
        if (is_obj) {
            skip_ws(p);
            if (p->pos >= p->n) return fail(p, p->pos, "unexpected end inside an object");
            if (p->s[p->pos] != '"') return fail(p, p->pos, "expected a string key");
            key_at = p->pos;
            if (parse_string(p, &key, &key_len)) return -1;
            skip_ws(p);
            if (p->pos >= p->n || p->s[p->pos] != ':') return fail(p, p->pos, "expected ':' after a key");
            p->pos++;
        }
        xt_json *kid;
        if (parse_value(p, &kid)) return -1;
        kid->key = key;
        kid->key_len = key_len;
        if (is_obj) kid->offset = key_at;
        *tail = kid;
        tail = &kid->next;
        v->len++;
        skip_ws(p);
        if (p->pos >= p->n)
            return fail(p, p->pos, "unexpected end inside an %s", is_obj ? "object" : "array");
        unsigned char c = p->s[p->pos];
        if (c == close) {
            p->pos++;
            break;
        }
        if (c != ',') return fail(p, p->pos, "expected ',' or '%c'", close);
        p->pos++;
        /* RFC 8259 has no trailing commas: the next token must be a value */
        skip_ws(p);
        if (p->pos < p->n && p->s[p->pos] == close) return fail(p, p->pos, "trailing comma");
    }
    p->depth--;
    return 0;
}

static int literal(parser *p, const char *word) {
    size_t l = strlen(word);
    if (p->n - p->pos < l || memcmp(p->s + p->pos, word, l) != 0)
        return fail(p, p->pos, "unexpected character (expected a JSON value)");
    p->pos += l;
    return 0;
}

static int parse_value(parser *p, xt_json **out) {
    skip_ws(p);
    if (p->pos >= p->n) return fail(p, p->pos, "unexpected end (expected a value)");
    unsigned char c = p->s[p->pos];
    xt_json *v;
    switch (c) {
    case '{':
    case '[':
        if (!(v = new_node(p, c == '{' ? XT_JSON_OBJECT : XT_JSON_ARRAY))) return -1;
        if (parse_container(p, v, c == '{')) return -1;
        break;
    case '"':
        if (!(v = new_node(p, XT_JSON_STRING))) return -1;
        if (parse_string(p, &v->str, &v->len)) return -1;
        break;
    case 't':
    case 'f':
        if (!(v = new_node(p, XT_JSON_BOOL))) return -1;
        v->boolean = c == 't';
        if (literal(p, c == 't' ? "true" : "false")) return -1;
        break;
    case 'n':
        if (!(v = new_node(p, XT_JSON_NULL))) return -1;
        if (literal(p, "null")) return -1;
        break;
    default:
        if (c != '-' && !(c >= '0' && c <= '9')) {
            if (c >= 0x20 && c < 0x7f)
                return fail(p, p->pos, "unexpected character '%c' (expected a JSON value)", c);
            return fail(p, p->pos, "unexpected byte 0x%02x (expected a JSON value)", c);
        }
        if (!(v = new_node(p, XT_JSON_NUMBER))) return -1;
        if (parse_number(p, v)) return -1;
    }
    *out = v;
    return 0;
}

int xt_json_parse(xt_json_doc *doc, const char *text, size_t len, const xt_json_limits *lim,
                  xt_json_error *err) {
    doc->root = NULL;
    doc->arena_ = NULL;
    xt_json_error dummy;
    if (!err) err = &dummy;
    err->offset = 0;
    err->msg[0] = 0;
    if (len == SIZE_MAX) {
        snprintf(err->msg, sizeof err->msg, "input too large");
        return -1;
    }
    parser p = {
        .s = (const unsigned char *)text,
        .n = len,
        .max_depth = lim && lim->max_depth > 0 ? lim->max_depth : DEFAULT_MAX_DEPTH,
        .max_nodes = lim && lim->max_nodes > 0 ? lim->max_nodes : DEFAULT_MAX_NODES,
        .err = err,
    };
    p.a = calloc(1, sizeof *p.a);
    if (p.a) p.a->strbuf = malloc(len + 1);
    if (!p.a || !p.a->strbuf) {
        arena_free(p.a);
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return -1;
    }
    xt_json *root;
    if (parse_value(&p, &root)) goto fail;
    skip_ws(&p);
    if (p.pos != p.n) {
        fail(&p, p.pos, "unexpected data after the JSON value");
        goto fail;
    }
    doc->root = root;
    doc->arena_ = p.a;
    return 0;
fail:
    arena_free(p.a);
    return -1;
}

void xt_json_free(xt_json_doc *doc) {
    if (!doc) return;
    arena_free(doc->arena_);
    doc->arena_ = NULL;
    doc->root = NULL;
}

const xt_json *xt_json_get(const xt_json *obj, const char *key) {
    if (!obj || obj->type != XT_JSON_OBJECT) return NULL;
    size_t kl = strlen(key);
    for (const xt_json *m = obj->kid; m; m = m->next)
        if (m->key_len == kl && memcmp(m->key, key, kl) == 0) return m;
    return NULL;
}

static int key_cmp(const void *pa, const void *pb) {
    const xt_json *a = *(const xt_json *const *)pa, *b = *(const xt_json *const *)pb;
    size_t l = a->key_len < b->key_len ? a->key_len : b->key_len;
    int c = memcmp(a->key, b->key, l);
    if (c) return c;
    if (a->key_len != b->key_len) return a->key_len < b->key_len ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

const xt_json *xt_json_duplicate_key(const xt_json *obj, int *oom) {
    if (oom) *oom = 0;
    if (!obj || obj->type != XT_JSON_OBJECT || obj->len < 2) return NULL;
    const xt_json **v = malloc(obj->len * sizeof *v);
    if (!v) {
        if (oom) *oom = 1;
        return NULL;
    }
    size_t n = 0;
    for (const xt_json *m = obj->kid; m; m = m->next) v[n++] = m;
    qsort(v, n, sizeof *v, key_cmp);
    const xt_json *dup = NULL;
    for (size_t i = 1; i < n; i++) {
        if (v[i]->key_len == v[i - 1]->key_len && memcmp(v[i]->key, v[i - 1]->key, v[i]->key_len) == 0) {
            /* report the first repeat in document order */
            if (!dup || v[i]->offset < dup->offset) dup = v[i];
        }
    }
    free(v);
    return dup;
}

const char *xt_json_type_name(xt_json_type t) {
    switch (t) {
    case XT_JSON_NULL: return "null";
    case XT_JSON_BOOL: return "boolean";
    case XT_JSON_NUMBER: return "number";
    case XT_JSON_STRING: return "string";
    case XT_JSON_ARRAY: return "array";
    case XT_JSON_OBJECT: return "object";
    }
    return "?";
}

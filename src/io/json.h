/* json.h — a small strict JSON (RFC 8259) parser into a read-only tree.
 *
 *   xt_json_doc doc;
 *   xt_json_error je;
 *   if (xt_json_parse(&doc, text, len, NULL, &je) != 0)
 *       return xt_fail(e, XT_ERUNTIME, "%s: byte %zu: %s; ...", path, je.offset, je.msg);
 *   const xt_json *shape = xt_json_get(doc.root, "shape");
 *   for (const xt_json *d = shape ? shape->kid : NULL; d; d = d->next) ...
 *   xt_json_free(&doc);
 *
 * It is for input we do not trust (checkpoint headers): it never reads past
 * `len`, recurses at most `max_depth` levels, caps the node count, rejects
 * everything RFC 8259 rejects (trailing commas, leading zeros, NaN, control
 * characters and invalid UTF-8 in strings, lone surrogates, trailing garbage)
 * and reports the byte offset of the first problem. Duplicate object keys are
 * kept in order; xt_json_duplicate_key() finds them in O(n log n) for callers
 * that must refuse them.
 * It is not a writer (see jsonw.h) and not a streaming parser: the whole tree
 * lives in one arena owned by the xt_json_doc.
 */
#ifndef XT_IO_JSON_H
#define XT_IO_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    XT_JSON_NULL,
    XT_JSON_BOOL,
    XT_JSON_NUMBER,
    XT_JSON_STRING,
    XT_JSON_ARRAY,
    XT_JSON_OBJECT,
} xt_json_type;

typedef struct xt_json xt_json;
struct xt_json {
    xt_json_type type;
    int boolean;        /* BOOL: 0 or 1 */
    int is_int;         /* NUMBER: written without fraction/exponent and fits int64 */
    int64_t i;          /* NUMBER: the value when is_int */
    double num;         /* NUMBER: the value as a double (always set) */
    const char *str;    /* STRING: decoded UTF-8, NUL-terminated (may hold \u0000) */
    size_t len;         /* STRING: bytes in str; ARRAY/OBJECT: number of children */
    xt_json *kid;       /* ARRAY/OBJECT: first child (NULL when empty) */
    xt_json *next;      /* next sibling in the parent, in document order */
    const char *key;    /* member name when the parent is an OBJECT, else NULL */
    size_t key_len;
    size_t offset;      /* byte offset in the input (of the key for object members), for messages */
};

typedef struct xt_json_limits {
    int max_depth;       /* nesting of arrays/objects; default 64 */
    size_t max_nodes;    /* values in the document; default 1,000,000 */
} xt_json_limits;

typedef struct xt_json_error {
    size_t offset;       /* byte offset in the input where parsing stopped */
    char msg[128];       /* what was wrong there, e.g. "expected ',' or '}'" */
} xt_json_error;

typedef struct xt_json_doc {
    xt_json *root;       /* NULL until parsed */
    void *arena_;        /* private: node blocks and the string buffer */
} xt_json_doc;

/* Parse exactly `len` bytes of `text` (no NUL needed). Whitespace around the
 * value is allowed, anything else after it is an error. `lim` may be NULL for
 * the defaults. Returns 0, or -1 with `err` filled (doc then holds nothing and
 * needs no free). Out of memory is reported the same way. */
int xt_json_parse(xt_json_doc *doc, const char *text, size_t len, const xt_json_limits *lim,
                  xt_json_error *err);

/* Release everything the doc owns; safe on a zeroed or already-freed doc. */
void xt_json_free(xt_json_doc *doc);

/* The first member of `obj` named `key` (NULL if obj is not an object or has
 * no such member). Linear: fine for small objects. */
const xt_json *xt_json_get(const xt_json *obj, const char *key);

/* A member of `obj` whose key also appears earlier, or NULL when all keys are
 * distinct (or obj is not an object, or memory ran out: then *oom is set). */
const xt_json *xt_json_duplicate_key(const xt_json *obj, int *oom);

/* Name of a type for messages: "object", "string", ... */
const char *xt_json_type_name(xt_json_type t);

/* Decode one UTF-8 code point from s[0..n): returns its length (1..4) and
 * stores it in *cp, or 0 for an invalid, overlong, surrogate or truncated
 * sequence. Shared with the JSON writer, which must not emit invalid UTF-8. */
size_t xt_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

#endif

/* json_read.h — JSON text we do not trust, parsed by jansson in bounded memory.
 *
 *   xt_json_read_error je;
 *   json_t *root = xt_json_read(text, len, XT_JSON_READ_BUDGET, &je);
 *   if (!root) return fail("%s: bad JSON at byte %zu: %s", path, je.offset, je.msg);
 *   ...
 *   json_decref(root);
 *
 * What jansson (RFC 8259, strict) refuses is refused: trailing commas,
 * leading zeros, NaN, control characters, invalid UTF-8, lone surrogates,
 * trailing garbage, integers outside int64, nesting past 2048 levels. On top
 * of it this adds: repeated object keys are an error (JSON_REJECT_DUPLICATES),
 * "\u0000" in a string is an error (no JSON_ALLOW_NUL, so every string and key
 * is an ordinary C string), and the tree may not grow past `budget` bytes of
 * heap, so a header of a hundred million tiny values cannot cost gigabytes.
 * It is not a writer (jsonw.h writes JSON; src/io/README.md says why that
 * one stayed ours) and sets no policy on the tree's shape: callers check types.
 */
#ifndef XT_IO_JSON_READ_H
#define XT_IO_JSON_READ_H

#include <jansson.h>
#include <stddef.h>

/* The default tree budget. A safetensors header describes a tensor in about
 * 100 bytes of text and 500 bytes of tree; 64 MiB holds ~100,000 tensors,
 * 500 times more than ResNet-18 has. */
#define XT_JSON_READ_BUDGET ((size_t)64 << 20)

typedef struct xt_json_read_error {
    size_t offset;   /* byte offset in the text where jansson stopped */
    char msg[160];   /* jansson's words, or "the JSON tree needs more than N MiB" */
} xt_json_read_error;

/* Parse exactly text[0..len) (no NUL needed). Any JSON value may be the root.
 * Returns a new reference, or NULL with `err` filled. */
json_t *xt_json_read(const void *text, size_t len, size_t budget, xt_json_read_error *err);

/* "object", "string", ... for messages. */
const char *xt_json_kind(const json_t *v);

#endif

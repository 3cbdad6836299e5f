/* config_yaml.h — libyaml helpers shared by the FLAGS parser (config*.c) and
 * the layer-spec parser (spec.c); internal to those files.
 *
 * It loads a document with a nesting limit (libyaml's composer recurses once
 * per level, so "[[[[..." would otherwise exhaust the C stack), reads scalars
 * with YAML's plain-scalar typing (int, finite float, bool, null), formats
 * positions and user text for one-line messages, and finds "did you mean"
 * candidates by edit distance. No function here prints or exits.
 */
#ifndef XT_CONFIG_YAML_H
#define XT_CONFIG_YAML_H

#include <stddef.h>
#include <stdio.h>
#include <yaml.h>

#include "util/err.h"

#define XT_YAML_MAX_DEPTH 32            /* deeper documents are rejected */
#define XT_YAML_MAX_BYTES (4u << 20)    /* config and spec files are tiny */

/* Parse `len` bytes of `text` into *doc; `name` starts error messages
 * ("NAME:LINE:COL: invalid YAML: <libyaml's problem>"). On success the caller
 * owns *doc (yaml_document_delete) and its root may be NULL (empty input);
 * on failure nothing is left to free. Only the first document is read; a
 * second one is an error. */
int xt_yaml_parse(yaml_document_t *doc, const char *name, const char *text, size_t len, xt_err *e);

/* Read the file at `path` and xt_yaml_parse it; an unreadable or oversized
 * file is XT_EUSAGE with the system's reason. */
int xt_yaml_load_file(yaml_document_t *doc, const char *path, xt_err *e);

/* 1-based position of a node. */
static inline int xt_yaml_line(const yaml_node_t *n) { return (int)n->start_mark.line + 1; }
static inline int xt_yaml_col(const yaml_node_t *n) { return (int)n->start_mark.column + 1; }

/* A scalar's text (NUL-terminated by libyaml) or NULL for collections. */
const char *xt_yaml_text(const yaml_node_t *n);

/* Scalar readers over text: `plain` says whether the YAML scalar was unquoted
 * (a quoted "128" is a string, not a number). Each returns 0 on success,
 * -1 when the text is not of that type, -2 when it is but does not fit. */
int xt_scalar_int(const char *s, int plain, long long *out);
int xt_scalar_float(const char *s, int plain, double *out);   /* finite only */
int xt_scalar_bool(const char *s, int plain, int *out);       /* true/false/yes/no/on/off */
int xt_scalar_null(const char *s, int plain);                 /* "", ~, null */

/* Is the node a plain (unquoted) scalar? */
int xt_yaml_plain(const yaml_node_t *n);

/* What a node is, for "expected X, got Y" messages: "'abc'" (quoted,
 * shortened, non-printable bytes as '?'), "a list", "a mapping", "nothing". */
const char *xt_yaml_describe(const yaml_node_t *n, char *buf, size_t cap);
/* The same for a whole document's root, without quoting its text: a file
 * given by mistake (model: /etc/passwd) is one long scalar, and its first
 * line does not belong in an error message. */
const char *xt_yaml_describe_doc(const yaml_node_t *root, char *buf, size_t cap);
/* User text shortened to fit a message, as above: "'batchsize'". */
const char *xt_quote(const char *s, char *buf, size_t cap);

/* The candidate closest to `word` by edit distance, if close enough to be
 * a plausible typo; otherwise NULL. */
const char *xt_suggest(const char *word, const char *const *cands, int n);
/* Levenshtein distance of two short strings (capped at 64 characters each). */
int xt_edit_distance(const char *a, const char *b);

/* Shortest "%.Ng" text that reads back as exactly v (YAML-safe: always has a
 * '.', 'e' or is an integer literal that a float key accepts). */
const char *xt_fmt_double(double v, char *buf, size_t cap);
const char *xt_fmt_float(float v, char *buf, size_t cap);

/* Write s as a YAML scalar: plain when that reads back as the same string,
 * otherwise double-quoted with escapes. */
void xt_yaml_put_string(FILE *out, const char *s);

#endif

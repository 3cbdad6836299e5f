/* jsonw.h — a tiny JSON writer into a growable buffer (metrics.jsonl lines,
 * results.json, the safetensors header).
 *
 *   xt_jsonw w;
 *   xt_jw_init(&w);
 *   xt_jw_obj(&w);
 *     xt_jw_key(&w, "epoch"); xt_jw_int(&w, 3);
 *     xt_jw_key(&w, "loss");  xt_jw_num(&w, 0.0421);
 *     xt_jw_key(&w, "acc");   xt_jw_arr(&w); xt_jw_num(&w, 97.5); xt_jw_end(&w);
 *   xt_jw_end(&w);
 *   if (xt_jw_finish(&w, "results.json", e)) ...;   // w.buf / w.len hold the text
 *   xt_write_file_atomic(path, w.buf, w.len, e);      // see atomic.h
 *   xt_jw_reset(&w);   // reuse the buffer for the next jsonl line
 *   xt_jw_free(&w);
 *
 * Commas and nesting are tracked for you; strings are escaped (quotes,
 * backslash, control characters; invalid UTF-8 becomes U+FFFD so the output
 * is always valid JSON). Doubles are written in the shortest form that reads
 * back to the same value ("0.1", not "0.10000000000000001"); NaN and
 * infinities, which JSON cannot hold, are written as null. The writer never
 * fails midway: out of memory or misuse (a value where a key is due, too many
 * xt_jw_end) sets a sticky flag that xt_jw_finish reports.
 * It is not a parser (json.h) and does not pretty-print.
 */
#ifndef XT_IO_JSONW_H
#define XT_IO_JSONW_H

#include <stddef.h>

#include "util/err.h"

#define XT_JW_MAX_DEPTH 32

typedef struct xt_jsonw {
    char *buf;           /* the text so far, always NUL-terminated once anything is written */
    size_t len, cap;
    int depth;
    unsigned char count[XT_JW_MAX_DEPTH + 1]; /* per level: 0 = nothing written yet, 1 = need a comma */
    unsigned char is_obj[XT_JW_MAX_DEPTH + 1];
    int want_value;      /* a key was written, its value is due */
    int oom, misuse;     /* sticky failure flags */
} xt_jsonw;

void xt_jw_init(xt_jsonw *w);
void xt_jw_free(xt_jsonw *w);
/* Empty the buffer (keeping its memory) and the nesting state. */
void xt_jw_reset(xt_jsonw *w);

void xt_jw_obj(xt_jsonw *w);                 /* { */
void xt_jw_arr(xt_jsonw *w);                 /* [ */
void xt_jw_end(xt_jsonw *w);                 /* } or ], whichever is open */
void xt_jw_key(xt_jsonw *w, const char *k);  /* "k": inside an object */
void xt_jw_str(xt_jsonw *w, const char *s);  /* NULL writes null */
void xt_jw_strn(xt_jsonw *w, const char *s, size_t n);
void xt_jw_int(xt_jsonw *w, long long v);
void xt_jw_uint(xt_jsonw *w, unsigned long long v);
void xt_jw_num(xt_jsonw *w, double v);       /* shortest round-trip form */
void xt_jw_numg(xt_jsonw *w, double v, int digits); /* %.<digits>g, e.g. 6 for losses in logs */
void xt_jw_bool(xt_jsonw *w, int v);
void xt_jw_null(xt_jsonw *w);

/* Append raw bytes with no separator handling (padding, a trailing newline). */
void xt_jw_raw(xt_jsonw *w, const char *s, size_t n);

/* 0 when the text is complete and valid (every container closed, no misuse,
 * no allocation failure); else fills e (XT_EIO, naming `what`) and returns it. */
int xt_jw_finish(const xt_jsonw *w, const char *what, xt_err *e);

#endif

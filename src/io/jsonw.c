/* jsonw.c — JSON writer into a growable buffer; see jsonw.h. */
#include "io/jsonw.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

void xt_jw_init(xt_jsonw *w) { memset(w, 0, sizeof *w); }

void xt_jw_free(xt_jsonw *w) {
    free(w->buf);
    memset(w, 0, sizeof *w);
}

void xt_jw_reset(xt_jsonw *w) {
    char *buf = w->buf;
    size_t cap = w->cap;
    memset(w, 0, sizeof *w);
    w->buf = buf;
    w->cap = cap;
    if (buf) buf[0] = 0;
}

void xt_jw_raw(xt_jsonw *w, const char *s, size_t n) {
    if (w->oom) return;
    if (n >= w->cap - w->len || !w->buf) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap - w->len <= n) {
            if (cap > SIZE_MAX / 2) {
                w->oom = 1;
                return;
            }
            cap *= 2;
        }
        char *nb = realloc(w->buf, cap);
        if (!nb) {
            w->oom = 1;
            return;
        }
        w->buf = nb;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = 0;
}

static void put(xt_jsonw *w, const char *s) { xt_jw_raw(w, s, strlen(s)); }

/* Separator before a value (or a key): a comma after the first item of a
 * container; nothing after a key. Values in an object need a key first. */
static void before_value(xt_jsonw *w) {
    if (w->want_value) {
        w->want_value = 0;
        return;
    }
    if (w->depth == 0) {
        if (w->count[0]) w->misuse = 1; /* a second top-level value */
        w->count[0] = 1;
        return;
    }
    if (w->is_obj[w->depth]) {
        w->misuse = 1;
        return;
    }
    if (w->count[w->depth]) put(w, ",");
    w->count[w->depth] = 1;
}

static void open_container(xt_jsonw *w, int obj) {
    before_value(w);
    put(w, obj ? "{" : "[");
    if (w->depth >= XT_JW_MAX_DEPTH) {
        w->misuse = 1;
        return;
    }
    w->depth++;
    w->count[w->depth] = 0;
    w->is_obj[w->depth] = (unsigned char)obj;
}

void xt_jw_obj(xt_jsonw *w) { open_container(w, 1); }
void xt_jw_arr(xt_jsonw *w) { open_container(w, 0); }

void xt_jw_end(xt_jsonw *w) {
    if (w->depth == 0 || w->want_value) {
        w->misuse = 1;
        return;
    }
    put(w, w->is_obj[w->depth] ? "}" : "]");
    w->depth--;
}

static void put_escaped(xt_jsonw *w, const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    put(w, "\"");
    size_t run = 0; /* bytes [i-run, i) are plain and not yet copied */
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        const char *esc = NULL;
        char tmp[8];
        size_t adv = 1;
        if (c == '"') esc = "\\\"";
        else if (c == '\\') esc = "\\\\";
        else if (c == '\n') esc = "\\n";
        else if (c == '\r') esc = "\\r";
        else if (c == '\t') esc = "\\t";
        else if (c == '\b') esc = "\\b";
        else if (c == '\f') esc = "\\f";
        else if (c < 0x20) {
            snprintf(tmp, sizeof tmp, "\\u%04x", c);
            esc = tmp;
        } else if (c >= 0x80) {
            uint32_t cp;
            adv = xt_utf8_decode(u + i, n - i, &cp);
            if (!adv) {
                esc = "\xEF\xBF\xBD"; /* U+FFFD for a byte that is not UTF-8 */
                adv = 1;
            }
        }
        if (esc) {
            xt_jw_raw(w, s + i - run, run);
            run = 0;
            put(w, esc);
        } else {
            run += adv;
        }
        i += adv;
    }
    xt_jw_raw(w, s + n - run, run);
    put(w, "\"");
}

void xt_jw_key(xt_jsonw *w, const char *k) {
    if (w->depth == 0 || !w->is_obj[w->depth] || w->want_value) {
        w->misuse = 1;
        return;
    }
    if (w->count[w->depth]) put(w, ",");
    w->count[w->depth] = 1;
    put_escaped(w, k, strlen(k));
    put(w, ":");
    w->want_value = 1;
}

void xt_jw_strn(xt_jsonw *w, const char *s, size_t n) {
    before_value(w);
    put_escaped(w, s, n);
}

void xt_jw_str(xt_jsonw *w, const char *s) {
    if (!s) {
        xt_jw_null(w);
        return;
    }
    xt_jw_strn(w, s, strlen(s));
}

void xt_jw_int(xt_jsonw *w, long long v) {
    char b[32];
    snprintf(b, sizeof b, "%lld", v);
    before_value(w);
    put(w, b);
}

void xt_jw_uint(xt_jsonw *w, unsigned long long v) {
    char b[32];
    snprintf(b, sizeof b, "%llu", v);
    before_value(w);
    put(w, b);
}

/* printf's %g can produce "inf"/"nan" (handled by the caller) and, in a
 * non-C locale, a decimal comma; force the JSON decimal point. */
static void put_double(xt_jsonw *w, const char *b) {
    char t[40];
    size_t n = strlen(b);
    if (n >= sizeof t) n = sizeof t - 1;
    for (size_t i = 0; i < n; i++) t[i] = b[i] == ',' ? '.' : b[i];
    t[n] = 0;
    put(w, t);
}

void xt_jw_num(xt_jsonw *w, double v) {
    if (!isfinite(v)) {
        xt_jw_null(w);
        return;
    }
    char b[40];
    /* the shortest of %.15g..%.17g that reads back exactly (17 always does) */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(b, sizeof b, "%.*g", prec, v);
        if (prec == 17 || strtod(b, NULL) == v) break;
    }
    before_value(w);
    put_double(w, b);
}

void xt_jw_numg(xt_jsonw *w, double v, int digits) {
    if (!isfinite(v)) {
        xt_jw_null(w);
        return;
    }
    if (digits < 1) digits = 1;
    if (digits > 17) digits = 17;
    char b[40];
    snprintf(b, sizeof b, "%.*g", digits, v);
    before_value(w);
    put_double(w, b);
}

void xt_jw_bool(xt_jsonw *w, int v) {
    before_value(w);
    put(w, v ? "true" : "false");
}

void xt_jw_null(xt_jsonw *w) {
    before_value(w);
    put(w, "null");
}

int xt_jw_finish(const xt_jsonw *w, const char *what, xt_err *e) {
    if (w->oom)
        return xt_fail(e, XT_EIO, "%s: out of memory while formatting JSON; free some memory and retry", what);
    if (w->misuse || w->depth != 0 || w->want_value || !w->buf)
        return xt_fail(e, XT_EIO, "%s: internal error: malformed JSON writer calls (open containers: %d); please report this bug",
                       what, w->depth);
    return 0;
}

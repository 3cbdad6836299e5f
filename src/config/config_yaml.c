/* config_yaml.c — libyaml helpers for config*.c and spec.c; see config_yaml.h.
 *
 * Not here: what any key or layer means. This file only knows YAML.
 */
#include "config/config_yaml.h"

#include "io/infile.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- loading -------------------------------------------------------------- */

/* Line/column of a byte offset, for reader errors (bad UTF-8, control
 * characters) where libyaml reports only the offset. */
static void offset_to_pos(const char *text, size_t len, size_t off, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static int parser_fail(const yaml_parser_t *p, const char *name, const char *text, size_t len, xt_err *e) {
    int line = (int)p->problem_mark.line + 1, col = (int)p->problem_mark.column + 1;
    if (p->error == YAML_READER_ERROR) offset_to_pos(text, len, p->problem_offset, &line, &col);
    if (p->error == YAML_MEMORY_ERROR)
        return xt_fail(e, XT_EUSAGE, "%s: out of memory while parsing YAML", name);
    const char *problem = p->problem ? p->problem : "malformed document";
    if (p->context)
        return xt_fail(e, XT_EUSAGE, "%s:%d:%d: invalid YAML: %s (%s at line %d column %d)", name, line, col,
                       problem, p->context, (int)p->context_mark.line + 1, (int)p->context_mark.column + 1);
    return xt_fail(e, XT_EUSAGE, "%s:%d:%d: invalid YAML: %s", name, line, col, problem);
}

/* First pass over the event stream: reject nesting deeper than
 * XT_YAML_MAX_DEPTH and a second document before the (recursive) composer
 * runs. Events carry no allocation we keep; each is deleted at once. */
static int prescan(const char *name, const char *text, size_t len, xt_err *e) {
    yaml_parser_t p;
    yaml_event_t ev;
    int depth = 0, docs = 0, rc = 0, done = 0;
    if (!yaml_parser_initialize(&p)) return xt_fail(e, XT_EUSAGE, "%s: out of memory while parsing YAML", name);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    while (!done) {
        if (!yaml_parser_parse(&p, &ev)) {
            rc = parser_fail(&p, name, text, len, e);
            break;
        }
        int line = (int)ev.start_mark.line + 1, col = (int)ev.start_mark.column + 1;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT: done = 1; break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1)
                rc = xt_fail(e, XT_EUSAGE, "%s:%d:%d: a second YAML document ('---'); put everything in one document",
                             name, line, col);
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++depth > XT_YAML_MAX_DEPTH)
                rc = xt_fail(e, XT_EUSAGE, "%s:%d:%d: nesting deeper than %d levels", name, line, col,
                             XT_YAML_MAX_DEPTH);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: depth--; break;
        default: break;
        }
        yaml_event_delete(&ev);
        if (rc) break;
    }
    yaml_parser_delete(&p);
    return rc;
}

/* A "\0" escape gives a scalar with a NUL inside; every reader here takes
 * scalars as C strings, which would silently cut it there. */
static int check_no_nul(yaml_document_t *doc, const char *name, xt_err *e) {
    for (yaml_node_t *n = doc->nodes.start; n && n < doc->nodes.top; n++) {
        if (n->type != YAML_SCALAR_NODE) continue;
        if (memchr(n->data.scalar.value, 0, n->data.scalar.length))
            return xt_fail(e, XT_EUSAGE, "%s:%d:%d: a string contains a NUL character (\\0); remove it", name,
                           xt_yaml_line(n), xt_yaml_col(n));
    }
    return 0;
}

int xt_yaml_parse(yaml_document_t *doc, const char *name, const char *text, size_t len, xt_err *e) {
    memset(doc, 0, sizeof *doc);
    int rc = prescan(name, text, len, e);
    if (rc) return rc;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) return xt_fail(e, XT_EUSAGE, "%s: out of memory while parsing YAML", name);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    if (!yaml_parser_load(&p, doc)) {
        /* libyaml has already freed the partial document */
        rc = parser_fail(&p, name, text, len, e);
        memset(doc, 0, sizeof *doc);
    }
    yaml_parser_delete(&p);
    if (!rc && (rc = check_no_nul(doc, name, e))) {
        yaml_document_delete(doc);
        memset(doc, 0, sizeof *doc);
    }
    return rc;
}

int xt_yaml_load_file(yaml_document_t *doc, const char *path, xt_err *e) {
    memset(doc, 0, sizeof *doc);
    char *buf;
    size_t n;
    const xt_in_opts o = {XT_EUSAGE, XT_EUSAGE, "pass a YAML file"};
    int rc = xt_in_read_all(path, XT_YAML_MAX_BYTES, &o, &buf, &n, e);
    if (rc) return rc;
    rc = xt_yaml_parse(doc, path, buf, n, e);
    free(buf);
    return rc;
}

/* ---- scalars -------------------------------------------------------------- */

const char *xt_yaml_text(const yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

int xt_yaml_plain(const yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

int xt_scalar_null(const char *s, int plain) {
    return plain && (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"));
}

int xt_scalar_int(const char *s, int plain, long long *out) {
    if (!plain) return -1;
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    if (!*p) return -1;
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q)) return -1;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE) return -2;
    *out = v;
    return 0;
}

int xt_scalar_float(const char *s, int plain, double *out) {
    if (!plain) return -1;
    /* [+-]? (D+ (. D*)? | . D+) ([eE] [+-]? D+)? — no hex, no inf/nan spellings */
    const char *p = s;
    int digits = 0;
    if (*p == '+' || *p == '-') p++;
    while (isdigit((unsigned char)*p)) p++, digits++;
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) p++, digits++;
    }
    if (!digits) return -1;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!isdigit((unsigned char)*p)) return -1;
        while (isdigit((unsigned char)*p)) p++;
    }
    if (*p) return -1;
    double v = strtod(s, NULL);
    if (!isfinite(v)) return -2;
    *out = v;
    return 0;
}

int xt_scalar_bool(const char *s, int plain, int *out) {
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
    if (!plain) return -1;
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        if (!strcmp(s, yes[i])) return *out = 1, 0;
        if (!strcmp(s, no[i])) return *out = 0, 0;
    }
    return -1;
}

/* ---- message text ---------------------------------------------------------- */

const char *xt_quote(const char *s, char *buf, size_t cap) {
    enum { SHOW = 40 };
    size_t len = strlen(s), n = len > SHOW ? SHOW : len;
    /* do not cut a UTF-8 sequence in half */
    while (n < len && n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    char tmp[SHOW + 8];
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        tmp[i] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
    }
    tmp[n] = 0;
    snprintf(buf, cap, "'%s%s'", tmp, n < len ? "..." : "");
    return buf;
}

const char *xt_yaml_describe(const yaml_node_t *n, char *buf, size_t cap) {
    if (!n) snprintf(buf, cap, "nothing");
    else if (n->type == YAML_SEQUENCE_NODE) snprintf(buf, cap, "a list");
    else if (n->type == YAML_MAPPING_NODE) snprintf(buf, cap, "a mapping");
    else if (n->type != YAML_SCALAR_NODE || xt_scalar_null(xt_yaml_text(n), xt_yaml_plain(n)))
        snprintf(buf, cap, "nothing");
    else if (!xt_yaml_plain(n)) {
        char q[64];
        snprintf(buf, cap, "the quoted string %s", xt_quote(xt_yaml_text(n), q, sizeof q));
    } else
        xt_quote(xt_yaml_text(n), buf, cap);
    return buf;
}

const char *xt_yaml_describe_doc(const yaml_node_t *root, char *buf, size_t cap) {
    if (root && root->type == YAML_SCALAR_NODE && !xt_scalar_null(xt_yaml_text(root), xt_yaml_plain(root))) {
        snprintf(buf, cap, "a document of plain text (is this the right file?)");
        return buf;
    }
    return xt_yaml_describe(root, buf, cap);
}

/* ---- suggestions ------------------------------------------------------------ */

/* Optimal string alignment distance: insertions, deletions, substitutions
 * and adjacent transpositions ("batchszie") each cost 1. */
int xt_edit_distance(const char *a, const char *b) {
    enum { MAXL = 64 };
    size_t la = strlen(a), lb = strlen(b);
    if (la > MAXL) la = MAXL;
    if (lb > MAXL) lb = MAXL;
    int rows[3][MAXL + 1];
    int *pp = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            int v = prev[j] + 1;
            if (cur[j - 1] + 1 < v) v = cur[j - 1] + 1;
            if (prev[j - 1] + cost < v) v = prev[j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < v)
                v = pp[j - 2] + 1;
            cur[j] = v;
        }
        int *t = pp;
        pp = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

const char *xt_suggest(const char *word, const char *const *cands, int n) {
    size_t len = strlen(word);
    if (len == 0 || len > 64) return NULL;
    int limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
    const char *best = NULL;
    int bestd = limit + 1;
    for (int i = 0; i < n; i++) {
        int d = xt_edit_distance(word, cands[i]);
        if (d < bestd && (size_t)d < strlen(cands[i])) {
            bestd = d;
            best = cands[i];
        }
    }
    return best;
}

/* ---- output ------------------------------------------------------------------ */

const char *xt_fmt_double(double v, char *buf, size_t cap) {
    if (v == floor(v) && fabs(v) < 1e15) {  /* 100, not 1e+02 */
        snprintf(buf, cap, "%.0f", v);
        return buf;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

const char *xt_fmt_float(float v, char *buf, size_t cap) {
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, cap, "%.*g", prec, (double)v);
        if (strtof(buf, NULL) == v) break;
    }
    return buf;
}

void xt_yaml_put_string(FILE *out, const char *s) {
    int plain = *s && !xt_scalar_null(s, 1) && (isalnum((unsigned char)*s) || strchr("_./", *s));
    for (const char *p = s; plain && *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_./+-", *p)) plain = 0;
    if (plain) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(out, "\\%c", *p);
        else if (*p == '\n') fputs("\\n", out);
        else if (*p == '\t') fputs("\\t", out);
        else if (*p < 0x20 || *p == 0x7f) fprintf(out, "\\x%02x", *p);
        else fputc(*p, out);
    }
    fputc('"', out);
}

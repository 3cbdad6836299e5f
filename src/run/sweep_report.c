/* sweep_report.c — a sweep's summary files and its closing table (see
 * sweep_report.h). Swept values are written as given on the command line
 * (strings in summary.jsonl's "params"), so a row names its run exactly.
 * Not here: running the sweep (sweep.c). */
#include "run/sweep_report.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "io/atomic.h"
#include "io/jsonw.h"

/* ---- the files ------------------------------------------------------------ */

static void jnum(xt_jsonw *w, const char *key, double v) {
    xt_jw_key(w, key);
    if (isfinite(v)) xt_jw_numg(w, v, 6); else xt_jw_null(w);
}

static void jsonl_row(const xt_sweep *s, const xt_sweep_row *r, xt_jsonw *w) {
    xt_jw_obj(w);
    xt_jw_key(w, "index"); xt_jw_int(w, r->index);
    xt_jw_key(w, "params"); xt_jw_obj(w);
    for (int a = 0; a < s->naxes; a++) {
        xt_jw_key(w, s->axes[a].key);
        xt_jw_str(w, xt_sweep_value(s, r, a));
    }
    xt_jw_end(w);
    xt_jw_key(w, "status"); xt_jw_str(w, r->status);
    xt_jw_key(w, "exit_code"); xt_jw_int(w, r->exit_code);
    jnum(w, "final_accuracy", r->final_acc);
    jnum(w, "best_accuracy", r->best_acc);
    jnum(w, "final_loss", r->final_loss);
    jnum(w, "samples_per_sec", r->samples_per_sec);
    xt_jw_key(w, "skipped"); xt_jw_bool(w, r->skipped);
    xt_jw_key(w, "run_dir"); xt_jw_str(w, r->dir);
    xt_jw_end(w);
}

/* One CSV field (RFC 4180: quoted when it holds a comma, quote or newline). */
static void csv_field(xt_jsonw *w, const char *v, int first) {
    if (!first) xt_jw_raw(w, ",", 1);
    if (!strpbrk(v, ",\"\n\r")) {
        xt_jw_raw(w, v, strlen(v));
        return;
    }
    xt_jw_raw(w, "\"", 1);
    for (const char *p = v; *p; p++) xt_jw_raw(w, *p == '"' ? "\"\"" : p, *p == '"' ? 2 : 1);
    xt_jw_raw(w, "\"", 1);
}

static void csv_num(xt_jsonw *w, double v) {
    char b[32] = "";
    if (isfinite(v)) snprintf(b, sizeof b, "%.6g", v);
    csv_field(w, b, 0);
}

static void csv_text(const xt_sweep *s, xt_jsonw *w) {
    csv_field(w, "index", 1);
    for (int a = 0; a < s->naxes; a++) csv_field(w, s->axes[a].key, 0);
    static const char *const tail[] = {"status", "exit_code", "final_accuracy", "best_accuracy", "final_loss",
                                       "samples_per_sec", "skipped", "run_dir"};
    for (size_t i = 0; i < sizeof tail / sizeof *tail; i++) csv_field(w, tail[i], 0);
    xt_jw_raw(w, "\n", 1);
    for (int i = 0; i < s->nrows; i++) {
        const xt_sweep_row *r = &s->rows[i];
        if (!r->done) continue;
        char b[32];
        snprintf(b, sizeof b, "%d", r->index);
        csv_field(w, b, 1);
        for (int a = 0; a < s->naxes; a++) csv_field(w, xt_sweep_value(s, r, a), 0);
        csv_field(w, r->status, 0);
        snprintf(b, sizeof b, "%d", r->exit_code);
        csv_field(w, b, 0);
        csv_num(w, r->final_acc);
        csv_num(w, r->best_acc);
        csv_num(w, r->final_loss);
        csv_num(w, r->samples_per_sec);
        csv_field(w, r->skipped ? "true" : "false", 0);
        csv_field(w, r->dir, 0);
        xt_jw_raw(w, "\n", 1);
    }
}

static int write_buf(const xt_sweep *s, const char *name, const xt_jsonw *w, xt_err *e) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", s->dir, name);
    if (w->oom) return xt_fail(e, XT_ERUNTIME, "out of memory writing %s", path);
    return xt_write_file_atomic(path, w->len ? w->buf : "", w->len, e);
}

int xt_sweep_report_write(const xt_sweep *s, xt_err *e) {
    xt_jsonw w, line;
    xt_jw_init(&w);
    xt_jw_init(&line);
    int rc = 0;
    for (int i = 0; i < s->nrows && !rc; i++)
        if (s->rows[i].done) { /* each line is its own document */
            xt_jw_reset(&line);
            jsonl_row(s, &s->rows[i], &line);
            if (!(rc = xt_jw_finish(&line, "summary.jsonl", e))) {
                xt_jw_raw(&w, line.buf, line.len);
                xt_jw_raw(&w, "\n", 1);
            }
        }
    xt_jw_free(&line);
    if (!rc) rc = write_buf(s, "summary.jsonl", &w, e);
    xt_jw_reset(&w);
    csv_text(s, &w);
    if (!rc) rc = write_buf(s, "summary.csv", &w, e);
    xt_jw_free(&w);
    return rc;
}

/* ---- the table ------------------------------------------------------------ */

/* Cells of a text table, printed with each column as wide as its widest cell. */
typedef struct table {
    char (*cell)[96];
    int ncols, nrows, cap;
} table;

static char *cell(table *t, int row, int col) {
    if (row >= t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        while (cap <= row) cap *= 2;
        char(*c)[96] = realloc(t->cell, (size_t)cap * (size_t)t->ncols * sizeof *c);
        if (!c) return NULL;
        memset(c + (size_t)t->cap * t->ncols, 0, (size_t)(cap - t->cap) * (size_t)t->ncols * sizeof *c);
        t->cell = c;
        t->cap = cap;
    }
    if (row >= t->nrows) t->nrows = row + 1;
    return t->cell[(size_t)row * t->ncols + col];
}

static void put(table *t, int row, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(table *t, int row, int col, const char *fmt, ...) {
    char *c = cell(t, row, col);
    if (!c) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c, 96, fmt, ap);
    va_end(ap);
}

static void put_num(table *t, int row, int col, double v, int prec) {
    if (isfinite(v)) put(t, row, col, "%.*f", prec, v);
    else put(t, row, col, "-");
}

/* Characters on screen of UTF-8 text ("±" is two bytes, one column). */
static int columns(const char *s) {
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static void print_table(const table *t, FILE *out) {
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            int width = 0;
            for (int k = 0; k < t->nrows; k++) {
                int n = columns(t->cell[(size_t)k * t->ncols + c]);
                if (n > width) width = n;
            }
            const char *v = t->cell[(size_t)r * t->ncols + c];
            fputs(v, out);
            if (c + 1 < t->ncols) fprintf(out, "%*s", width - columns(v) + 2, "");
        }
        fputc('\n', out);
    }
}

static int seed_axis(const xt_sweep *s) {
    for (int a = 0; a < s->naxes; a++)
        if (!strcmp(s->axes[a].key, "seed")) return a;
    return -1;
}

/* Rows i and j differ in the seed at most. */
static int same_but_seed(const xt_sweep *s, const xt_sweep_row *x, const xt_sweep_row *y, int seed) {
    for (int a = 0; a < s->naxes; a++)
        if (a != seed && x->choice[a] != y->choice[a]) return 0;
    return 1;
}

/* Mean and sample standard deviation (n - 1) of one field over a group. */
static void stats(const double *v, int n, double *mean, double *sd) {
    double m = 0, q = 0;
    for (int i = 0; i < n; i++) m += v[i];
    m /= n;
    for (int i = 0; i < n; i++) q += (v[i] - m) * (v[i] - m);
    *mean = m;
    *sd = n > 1 ? sqrt(q / (n - 1)) : NAN;
}

/* One group's cells: the non-seed values, n, then mean ± sd of three fields. */
static void group_row(const xt_sweep *s, table *t, int row, const xt_sweep_row *first, int seed, double *buf) {
    int col = 0;
    for (int a = 0; a < s->naxes; a++)
        if (a != seed) put(t, row, col++, "%s", xt_sweep_value(s, first, a));
    int n = 0;
    for (int f = 0; f < 3; f++) {
        n = 0;
        for (int i = 0; i < s->nrows; i++) {
            const xt_sweep_row *r = &s->rows[i];
            double v = f == 0 ? r->final_acc : f == 1 ? r->best_acc : r->final_loss;
            if (r->done && same_but_seed(s, first, r, seed) && isfinite(v)) buf[n++] = v;
        }
        double m, sd;
        if (!n) put(t, row, col + 1 + f, "-");
        else if (stats(buf, n, &m, &sd), n > 1) put(t, row, col + 1 + f, f == 2 ? "%.4f ± %.4f" : "%.2f ± %.2f", m, sd);
        else put(t, row, col + 1 + f, f == 2 ? "%.4f" : "%.2f", m);
    }
    put(t, row, col, "%d", n);
}

static void print_seed_groups(const xt_sweep *s, FILE *out) {
    int seed = seed_axis(s);
    if (seed < 0 || s->axes[seed].nvalues < 2) return;
    table t = {.ncols = s->naxes - 1 + 4};
    double *buf = malloc((size_t)s->nrows * sizeof *buf);
    if (!buf) return;
    int col = 0;
    for (int a = 0; a < s->naxes; a++)
        if (a != seed) put(&t, 0, col++, "%s", s->axes[a].key);
    put(&t, 0, col, "n");
    put(&t, 0, col + 1, "final_acc");
    put(&t, 0, col + 2, "best_acc");
    put(&t, 0, col + 3, "final_loss");
    int row = 1;
    for (int i = 0; i < s->nrows; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = same_but_seed(s, &s->rows[j], &s->rows[i], seed);
        if (!seen) group_row(s, &t, row++, &s->rows[i], seed, buf);
    }
    fprintf(out, "\nover seeds (mean ± sample std. deviation of the runs that differ only in seed):\n");
    print_table(&t, out);
    free(buf);
    free(t.cell);
}

static void print_best(const xt_sweep *s, FILE *out) {
    const xt_sweep_row *best = NULL;
    for (int i = 0; i < s->nrows; i++) {
        const xt_sweep_row *r = &s->rows[i];
        if (r->done && isfinite(r->best_acc) && (!best || r->best_acc > best->best_acc)) best = r;
    }
    if (!best) {
        fprintf(out, "\nbest run: none (no run reported an accuracy)\n");
        return;
    }
    fprintf(out, "\nbest run: #%d (", best->index);
    for (int a = 0; a < s->naxes; a++) fprintf(out, "%s%s=%s", a ? ", " : "", s->axes[a].key, xt_sweep_value(s, best, a));
    fprintf(out, "): best accuracy %.2f%%, %s\n", best->best_acc, best->dir);
}

void xt_sweep_report_print(const xt_sweep *s, FILE *out) {
    table t = {.ncols = s->naxes + 8};
    put(&t, 0, 0, "#");
    for (int a = 0; a < s->naxes; a++) put(&t, 0, 1 + a, "%s", s->axes[a].key);
    static const char *const head[] = {"status", "exit", "final_acc", "best_acc", "final_loss", "samples/s", "run_dir"};
    for (int k = 0; k < 7; k++) put(&t, 0, 1 + s->naxes + k, "%s", head[k]);
    int row = 1;
    for (int i = 0; i < s->nrows; i++) {
        const xt_sweep_row *r = &s->rows[i];
        int c = 1 + s->naxes;
        put(&t, row, 0, "%d", r->index);
        for (int a = 0; a < s->naxes; a++) put(&t, row, 1 + a, "%s", xt_sweep_value(s, r, a));
        if (!r->done) {
            put(&t, row, c, "not run");
            for (int k = 1; k < 7; k++) put(&t, row, c + k, "-");
        } else {
            put(&t, row, c, "%s%s", r->status, r->skipped ? " (earlier)" : "");
            put(&t, row, c + 1, "%d", r->exit_code);
            put_num(&t, row, c + 2, r->final_acc, 2);
            put_num(&t, row, c + 3, r->best_acc, 2);
            put_num(&t, row, c + 4, r->final_loss, 4);
            put_num(&t, row, c + 5, r->samples_per_sec, 0);
            put(&t, row, c + 6, "%s", r->dir);
        }
        row++;
    }
    print_table(&t, out);
    free(t.cell);
    print_seed_groups(s, out);
    print_best(s, out);
    fflush(out);
}

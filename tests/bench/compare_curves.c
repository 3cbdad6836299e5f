/* compare_curves.c — several runs' training curves in one figure, e.g. the
 * fp32 and bf16 runs of configs/real_t10k.yaml (issue #18):
 *
 *   compare_curves OUT.png NAME=RUN_DIR [NAME=RUN_DIR ...]
 *
 * Reads each RUN_DIR/metrics.jsonl's epoch records (mean training loss and
 * test accuracy per epoch), prints them as a table, and draws them with the
 * trainer's own plotter (io/curves.h: xt_curves_write_runs), one colour per
 * run. Runs must have the same number of epochs. Built by `make bench`
 * (build/release/bench/compare_curves). Not a test: no pass/fail.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/curves.h"

typedef struct run {
    char name[64];
    double *loss, *acc;
    int n, cap;
} run;

/* the value after "key": in line, or NAN */
static double num_after(const char *line, const char *key) {
    const char *p = strstr(line, key);
    return p ? strtod(p + strlen(key), NULL) : NAN;
}

static int read_run(run *r, const char *dir) {
    char path[1200], line[4096];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "compare_curves: cannot open %s\n", path);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, "\"type\":\"epoch\"")) continue;
        if (r->n == r->cap) {
            r->cap = r->cap ? 2 * r->cap : 16;
            r->loss = realloc(r->loss, (size_t)r->cap * sizeof *r->loss);
            r->acc = realloc(r->acc, (size_t)r->cap * sizeof *r->acc);
            if (!r->loss || !r->acc) { fclose(f); return -1; }
        }
        r->loss[r->n] = num_after(line, "\"loss\":");
        r->acc[r->n] = num_after(line, "\"accuracy\":");
        r->n++;
    }
    fclose(f);
    if (r->n == 0) fprintf(stderr, "compare_curves: %s has no epoch records\n", path);
    return r->n ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: compare_curves OUT.png NAME=RUN_DIR [NAME=RUN_DIR ...]\n");
        return 2;
    }
    int ns = argc - 2, rc = 0;
    run *runs = calloc((size_t)ns, sizeof *runs);
    xt_curve_series *s = calloc((size_t)ns, sizeof *s);
    if (!runs || !s) return 1;
    for (int k = 0; k < ns && !rc; k++) {
        const char *eq = strchr(argv[k + 2], '=');
        if (!eq || eq == argv[k + 2]) {
            fprintf(stderr, "compare_curves: expected NAME=RUN_DIR, got '%s'\n", argv[k + 2]);
            rc = 2;
            break;
        }
        snprintf(runs[k].name, sizeof runs[k].name, "%.*s", (int)(eq - argv[k + 2]), argv[k + 2]);
        if (read_run(&runs[k], eq + 1)) rc = 1;
        else if (runs[k].n != runs[0].n) {
            fprintf(stderr, "compare_curves: %s has %d epochs, %s %d\n", runs[k].name, runs[k].n, runs[0].name, runs[0].n);
            rc = 2;
        }
        s[k] = (xt_curve_series){runs[k].name, runs[k].loss, runs[k].acc};
    }
    if (!rc) {
        printf("%-6s", "epoch");
        for (int k = 0; k < ns; k++) printf("  %10s loss %10s acc%%", runs[k].name, runs[k].name);
        printf("\n");
        for (int i = 0; i < runs[0].n; i++) {
            printf("%-6d", i + 1);
            for (int k = 0; k < ns; k++) printf("  %15.6f %15.2f", runs[k].loss[i], runs[k].acc[i]);
            printf("\n");
        }
        xt_err e = {0};
        if (xt_curves_write_runs(argv[1], s, ns, runs[0].n, &e)) {
            fprintf(stderr, "compare_curves: %s\n", e.msg);
            rc = 1;
        }
    }
    for (int k = 0; k < ns; k++) free(runs[k].loss), free(runs[k].acc);
    free(runs);
    free(s);
    return rc;
}

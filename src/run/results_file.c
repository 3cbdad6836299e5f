/* results_file.c — results.json read back; see results_file.h. Bounded read
 * (infile.h: regular files only) and the strict reader (json_read.h). */
#include "run/results_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/infile.h"
#include "io/json_read.h"

int xt_results_read(const char *dir, xt_results_file *f) {
    memset(f, 0, sizeof *f);
    char path[1200];
    snprintf(path, sizeof path, "%s/results.json", dir);
    xt_in_opts o = {.open_code = XT_EDATA, .bad_code = XT_EDATA, .fix = "remove it"};
    xt_err ignored = {0};
    if (xt_in_read_all(path, XT_RESULTS_MAX, &o, &f->text, &f->len, &ignored)) return -1;
    while (f->len && f->text[f->len - 1] == '\n') f->text[--f->len] = 0;
    xt_json_read_error je;
    f->root = xt_json_read(f->text, f->len, XT_JSON_READ_BUDGET, &je);
    if (!json_is_object(f->root)) {
        xt_results_free(f);
        return -1;
    }
    return 0;
}

double xt_results_num(const xt_results_file *f, const char *key) {
    const json_t *v = json_object_get(f->root, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

void xt_results_free(xt_results_file *f) {
    json_decref(f->root);
    free(f->text);
    memset(f, 0, sizeof *f);
}

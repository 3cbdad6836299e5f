/* results_file.h — a run's results.json read back (by --resume of a finished
 * run, which reprints it, and by a sweep, which tabulates it): its text and
 * its jansson tree. Not the writer (finish.c). */
#ifndef XT_RUN_RESULTS_FILE_H
#define XT_RUN_RESULTS_FILE_H

#include <jansson.h>
#include <stddef.h>

/* results.json is a few KB; a per-class report for thousands of classes is
 * still far below this. */
#define XT_RESULTS_MAX ((size_t)16 << 20)

typedef struct xt_results_file {
    char *text;    /* the file without trailing newlines, NUL-terminated */
    size_t len;
    json_t *root;  /* its object */
} xt_results_file;

/* DIR/results.json into f: 0, or -1 when it is absent, not a regular file,
 * larger than XT_RESULTS_MAX or not a JSON object (f then holds nothing). */
int xt_results_read(const char *dir, xt_results_file *f);

/* A number member, NaN when absent or not a number (null: NaN and infinities). */
double xt_results_num(const xt_results_file *f, const char *key);

void xt_results_free(xt_results_file *f);

#endif

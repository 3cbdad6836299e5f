/* folder_data.c — the folder dataset's settings on the run's side: the
 * config's `dataset: folder` keys into xt_data_opts (with the two things the
 * data module must not decide alone: where the cache goes by default, beside
 * the output, and how its progress and warnings reach the terminal), and the
 * normalization it measured, as text and as a comment in config.yaml.
 * Not here: the other datasets' options (run.c's data_opts), the folder
 * dataset itself (src/data/folder_dataset.c), what results.json says of the
 * folder (folder_run.c, which needs the whole run record).
 */
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "io/atomic.h"
#include "run/folder_data.h"

static int g_live; /* progress redrawn in place (a terminal) */

static void folder_note(void *ctx, const char *line) {
    (void)ctx;
    fprintf(stderr, "xlatrain: %s\n", line);
}

/* On a terminal the line is redrawn in place; in a log only the last one
 * is written, so a log gets one line per cache built, not hundreds. */
static void folder_progress(void *ctx, const char *line, int last) {
    (void)ctx;
    if (g_live) fprintf(stderr, "\rxlatrain: %s\033[K%s", line, last ? "\n" : "");
    else if (last) fprintf(stderr, "xlatrain: %s\n", line);
}

void xt_run_folder_opts(const xt_config *c, xt_data_opts *o) {
    static char cache[1100];
    if (c->dataset != XT_DS_FOLDER) return;
    o->train_dir = c->train_dir;
    o->test_dir = c->test_dir;
    o->val_fraction = c->val_fraction;
    o->channels = c->spec.input[0], o->rows = c->spec.input[1], o->cols = c->spec.input[2];
    o->resize = c->resize[0] > 0;
    o->max_image_pixels = c->max_image_pixels;
    o->skip_bad = c->on_bad_image == XT_BAD_SKIP;
    o->threads = c->num_workers > 0 ? c->num_workers : 1;
    if (c->cache_dir[0]) {
        snprintf(cache, sizeof cache, "%s", c->cache_dir);
    } else { /* beside the output: runs/<name> -> runs/folder-cache, shared by the runs there */
        char parent[600];
        snprintf(parent, sizeof parent, "%s", c->output_dir[0] ? c->output_dir : "runs/x");
        snprintf(cache, sizeof cache, "%s/folder-cache", dirname(parent));
    }
    o->cache_dir = cache;
    g_live = c->progress == 1 || (c->progress < 0 && isatty(2));
    o->note = folder_note;
    o->progress = folder_progress;
}

void xt_run_norm_text(const xt_dataset *d, int std, char *out, size_t cap) {
    size_t n = 0;
    out[0] = 0;
    for (int c = 0; c < d->channels && n < cap; c++)
        n += (size_t)snprintf(out + n, cap - n, "%s%.6g", c ? ", " : "", std ? d->std[c] : d->mean[c]);
}

int xt_run_record_norm(const xt_dataset *d, const char *outdir, xt_err *e) {
    if (!d->norm_computed) return 0;
    char m[128], s[128], line[512], path[700];
    xt_run_norm_text(d, 0, m, sizeof m);
    xt_run_norm_text(d, 1, s, sizeof s);
    /* a comment: the keys stay auto, so the same config on changed files measures again */
    int n = snprintf(line, sizeof line, "# normalize auto, measured on the training split (%lld images): mean [%s], std [%s]\n",
                     (long long)d->n, m, s);
    snprintf(path, sizeof path, "%s/config.yaml", outdir);
    return xt_append_file(path, line, (size_t)n, e);
}


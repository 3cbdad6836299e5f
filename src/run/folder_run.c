/* folder_run.c — what results.json says of a folder dataset: its classes,
 * image counts, the files skipped and the normalization used.
 * Not here: the folder's settings and the normalization note in config.yaml
 * (folder_data.c), the folder dataset itself (src/data/folder_dataset.c).
 */
#include "run/folder_data.h"
#include "run/folder_run.h"

void xt_run_folder_results(const xt_run *r, xt_jsonw *w) {
    char m[128], s[128];
    const xt_dataset *d = r->have_train ? &r->train : &r->test;
    if (!r->test.num_classes) return; /* the folder was never read (a failure before or while reading it) */
    xt_jw_key(w, "folder");
    xt_jw_obj(w);
    xt_jw_key(w, "classes");
    xt_jw_arr(w);
    for (int k = 0; k < r->test.num_classes; k++) xt_jw_str(w, r->test.class_names[k]);
    xt_jw_end(w);
    xt_jw_key(w, "train_images"); xt_jw_int(w, r->have_train ? r->train.n : 0);
    xt_jw_key(w, "test_images"); xt_jw_int(w, r->test.n);
    /* the train split's count includes what its scan skipped; the test split's adds its own */
    xt_jw_key(w, "skipped_images"); xt_jw_int(w, (r->have_train ? r->train.skipped : 0) + r->test.skipped);
    xt_run_norm_text(d, 0, m, sizeof m);
    xt_run_norm_text(d, 1, s, sizeof s);
    xt_jw_key(w, "normalize_mean"); xt_jw_str(w, m);
    xt_jw_key(w, "normalize_std"); xt_jw_str(w, s);
    xt_jw_key(w, "normalize_measured"); xt_jw_bool(w, d->norm_computed);
    xt_jw_end(w);
}

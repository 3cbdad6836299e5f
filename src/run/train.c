/* train.c — a run from start to end: load the data, declare and initialise
 * the model and optimizer (before any fork, so every replica starts equal),
 * resume from a checkpoint, then run the loop in-process (one core) or in N
 * supervised worker processes, and write the end-of-run outputs. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/download.h"
#include "distributed/spawn.h"
#include "engine/metrics.h"
#include "io/atomic.h"
#include "io/grid.h"
#include "io/jsonw.h"
#include "run/train.h"
#include "run/train_internal.h"

static const char *const g_fashion_names[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

static int mkdir_p(const char *path, xt_err *e) {
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1;; p++) {
        if (*p == '/' || !*p) {
            char saved = *p;
            *p = 0;
            if (mkdir(tmp, 0777) && errno != EEXIST)
                return xt_fail(e, XT_EIO, "%s: cannot create the output directory: %s; set output_dir to a writable place", tmp, strerror(errno));
            *p = saved;
            if (!saved) break;
        }
    }
    return 0;
}

static void note(void *ctx, const char *line) {
    (void)ctx;
    fprintf(stderr, "xlatrain: %s\n", line);
}

xt_data_kind xt_run_data_kind(xt_dataset_kind k) {
    return k == XT_DS_FASHION_MNIST ? XT_DATA_FASHION_MNIST : k == XT_DS_SYNTHETIC ? XT_DATA_SYNTHETIC : XT_DATA_MNIST;
}

static int open_data(xt_run *r, xt_err *e) {
    const xt_config *c = r->c;
    xt_data_opts o;
    xt_data_opts_defaults(&o);
    o.kind = xt_run_data_kind(c->dataset);
    o.datadir = c->datadir;
    o.train_images = c->train_images;
    o.train_labels = c->train_labels;
    o.test_images = c->test_images;
    o.test_labels = c->test_labels;
    memcpy(o.train_subset, c->train_subset, sizeof o.train_subset);
    memcpy(o.test_subset, c->test_subset, sizeof o.test_subset);
    o.seed = (uint64_t)c->seed;
    o.synthetic_train_size = c->synthetic_train_size;
    o.synthetic_test_size = c->synthetic_test_size;
    o.norm_mean = c->norm_mean;
    o.norm_std = c->norm_std;
    if ((r->cli->download || c->download) && o.kind != XT_DATA_SYNTHETIC &&
        xt_download_dataset(o.kind, c->datadir, note, NULL, e))
        return e->code;
    if (!r->cli->eval_only) {
        if (xt_dataset_open(&r->train, &o, XT_SPLIT_TRAIN, e)) return e->code;
        r->have_train = 1;
    }
    return xt_dataset_open(&r->test, &o, XT_SPLIT_TEST, e);
}

int xt_run_setup_model(xt_run *r, xt_err *e) {
    const xt_config *c = r->c;
    const xt_spec *sp = &c->spec;
    xt_store_init(&r->store);
    if (xt_model_declare(&r->model, sp, &r->store, e)) return e->code;
    int32_t xs[4] = {c->batch_size, sp->input[0], sp->input[1], sp->input[2]};
    r->slot_x = xt_store_add(&r->store, "input.x", XT_SLOT_INPUT, XT_F32, 4, xs);
    r->slot_y = xt_store_add(&r->store, "input.y", XT_SLOT_INPUT, XT_I32, 1, xs);
    r->slot_step = xt_store_add(&r->store, "step", XT_SLOT_STATE, XT_I32, 0, NULL);
    if (r->slot_x < 0 || r->slot_y < 0 || r->slot_step < 0) return xt_fail(e, XT_ERUNTIME, "cannot declare the input slots");
    if (xt_optim_declare(&r->optim, c, &r->model, &r->store, e)) return e->code;
    if (xt_store_finalize(&r->store, e)) return e->code;
    xt_model_init(&r->model, &r->store, (uint64_t)c->seed);
    r->model_hash = xt_config_model_hash(c);
    return 0;
}

static int check_input_shape(const xt_run *r, xt_err *e) {
    const xt_spec *sp = &r->c->spec;
    const xt_dataset *d = &r->test;
    if (sp->input[0] != 1 || sp->input[1] != d->rows || sp->input[2] != d->cols)
        return xt_fail(e, XT_EUSAGE, "%s: the model's input is [%d, %d, %d] but the data is [1, %d, %d]; set input: [1, %d, %d] in the model spec",
                       sp->source, sp->input[0], sp->input[1], sp->input[2], d->rows, d->cols, d->rows, d->cols);
    return 0;
}

int xt_run_finish(xt_run *r, const int32_t *pred, const int32_t *truth, const int64_t *index, int n, double final_loss, xt_err *e) {
    const xt_config *c = r->c;
    char path[700];
    static uint8_t imgs[25 * 64 * 64];
    int hw = r->test.rows * r->test.cols;
    int act[25], prd[25];
    if (n > 0 && hw <= 64 * 64) {
        for (int i = 0; i < n; i++) {
            memcpy(imgs + (size_t)i * hw, r->test.images + (size_t)index[i] * hw, (size_t)hw);
            act[i] = truth[i];
            prd[i] = pred[i];
        }
        snprintf(path, sizeof path, "%s/predictions.png", r->outdir);
        if (xt_grid_write(path, imgs, r->test.rows, r->test.cols, act, prd, n,
                          c->dataset == XT_DS_FASHION_MNIST ? g_fashion_names : NULL, e))
            return e->code;
    }
    double wall = (double)(xt_now_ns() - r->t_start_ns) / 1e9;
    double final_acc = r->nhist ? r->hist_acc[r->nhist - 1] : r->best_acc;
    int below = c->target_accuracy > 0 && r->best_acc < c->target_accuracy;
    xt_jsonw w;
    xt_jw_init(&w);
    xt_jw_obj(&w);
    xt_jw_key(&w, "config"); xt_jw_str(&w, c->source);
    xt_jw_key(&w, "dataset"); xt_jw_str(&w, xt_data_kind_name(xt_run_data_kind(c->dataset)));
    xt_jw_key(&w, "model"); xt_jw_str(&w, c->spec.source);
    xt_jw_key(&w, "epochs"); xt_jw_int(&w, r->nhist);
    xt_jw_key(&w, "best_accuracy"); xt_jw_numg(&w, r->best_acc, 6);
    xt_jw_key(&w, "final_accuracy"); xt_jw_numg(&w, final_acc, 6);
    xt_jw_key(&w, "final_loss"); if (isfinite(final_loss)) xt_jw_numg(&w, final_loss, 6); else xt_jw_null(&w);
    xt_jw_key(&w, "target_accuracy"); if (c->target_accuracy > 0) xt_jw_numg(&w, c->target_accuracy, 6); else xt_jw_null(&w);
    double train_s = (double)r->train_ns / 1e9;
    xt_jw_key(&w, "samples_per_sec"); xt_jw_numg(&w, train_s > 0 ? (double)r->samples_trained * r->world / train_s : 0, 6);
    xt_jw_key(&w, "train_time_s"); xt_jw_numg(&w, train_s, 6);
    xt_jw_key(&w, "data_wait_s"); xt_jw_numg(&w, (double)r->data_wait_ns / 1e9, 6);
    xt_jw_key(&w, "wall_time_s"); xt_jw_numg(&w, wall, 6);
    xt_jw_key(&w, "num_cores"); xt_jw_int(&w, r->world);
    xt_jw_key(&w, "batch_size"); xt_jw_int(&w, c->batch_size);
    xt_jw_key(&w, "learning_rate"); xt_jw_numg(&w, c->learning_rate, 6);
    xt_jw_key(&w, "seed"); xt_jw_int(&w, c->seed);
    xt_jw_key(&w, "output_dir"); xt_jw_str(&w, r->outdir);
    xt_jw_key(&w, "status"); xt_jw_str(&w, below ? "below_target" : "ok");
    xt_jw_end(&w);
    int rc = xt_jw_finish(&w, "results.json", e);
    if (!rc) {
        snprintf(path, sizeof path, "%s/results.json", r->outdir);
        char *text = malloc(w.len + 2);
        if (!text) rc = xt_fail(e, XT_ERUNTIME, "out of memory");
        else {
            memcpy(text, w.buf, w.len);
            text[w.len] = '\n';
            rc = xt_write_file_atomic(path, text, w.len + 1, e);
            if (!rc) xt_out("%s", w.buf); /* the last stdout line: the same summary, one JSON object */
            free(text);
        }
    }
    xt_jw_free(&w);
    if (rc) return rc;
    if (below) return xt_fail(e, XT_EBELOW, "best accuracy %.2f%% is below target_accuracy %.2f%% (outputs written to %s)", r->best_acc, c->target_accuracy, r->outdir);
    return 0;
}

size_t xt_run_grad_floats(const xt_run *r) {
    size_t n = 0;
    for (int i = 0; i < r->model.nparams; i++) n += ((size_t)r->store.slots[r->model.params[i]].numel + 15) & ~(size_t)15;
    return n;
}

int xt_train_main(const xt_config *c, const xt_cli *cli, xt_err *e) {
    static xt_run r;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.cli = cli;
    r.world = c->num_cores;
    r.best_acc = -1;
    r.t_start_ns = xt_now_ns();
    snprintf(r.outdir, sizeof r.outdir, "%s", c->output_dir);
    int rc;
    r.hist_loss = calloc(XT_MAX_EPOCHS, sizeof *r.hist_loss);
    r.hist_acc = calloc(XT_MAX_EPOCHS, sizeof *r.hist_acc);
    if (!r.hist_loss || !r.hist_acc) { rc = xt_fail(e, XT_ERUNTIME, "out of memory"); goto out; }
    if ((rc = mkdir_p(r.outdir, e))) goto out;
    if ((rc = xt_run_setup_model(&r, e))) goto out;
    if ((cli->eval_only || cli->predict) && !cli->resume) {
        rc = xt_fail(e, XT_EUSAGE, "%s needs trained weights: add --resume PATH (or --resume latest for the newest checkpoint in %s)",
                     cli->predict ? "--predict" : "--eval-only", r.outdir);
        goto out;
    }
    if (cli->resume) {
        char path[1024];
        if ((rc = xt_ckpt_resolve(&r, cli->resume, path, sizeof path, e)) || (rc = xt_ckpt_load(&r, path, e))) goto out;
        if (!cli->eval_only && !cli->predict)
            fprintf(stderr, "xlatrain: resuming from %s at epoch %d step %lld\n", path, r.start_epoch + 1, r.start_step_in_epoch);
    }
    if (cli->predict) {
        rc = xt_predict_main(&r, e);
        goto out;
    }
    if ((rc = open_data(&r, e)) || (rc = check_input_shape(&r, e))) goto out;
    if (!cli->resume) { /* a fresh run starts a fresh metrics log */
        char path[700];
        snprintf(path, sizeof path, "%s/metrics.jsonl", r.outdir);
        if (unlink(path) && errno != ENOENT) { rc = xt_fail(e, XT_EIO, "%s: cannot remove the old metrics log: %s", path, strerror(errno)); goto out; }
    }
    fprintf(stderr, "xlatrain: %s: %s on %s (%lld train / %lld test samples), %d core%s, batch %d per core, output in %s\n",
            c->name, c->spec.source, xt_data_kind_name(xt_run_data_kind(c->dataset)), (long long)(r.have_train ? r.train.n : 0),
            (long long)r.test.n, r.world, r.world > 1 ? "s" : "", c->batch_size, r.outdir);
    if (r.world > 1) {
        if ((rc = xt_dist_create(&r.dist, r.world, xt_run_grad_floats(&r), e))) goto out;
        xt_spawn_opts so = {.pin_cores = c->pin_cores, .timeout_s = c->worker_timeout};
        rc = xt_spawn(r.dist, r.world, xt_worker_main, &r, &so, e);
        xt_dist_destroy(r.dist);
    } else {
        xt_signals_install();
        rc = xt_worker_main(0, &r);
        xt_signals_restore();
        if (rc) *e = r.err;
    }
out:
    if (r.have_train) xt_dataset_free(&r.train);
    xt_dataset_free(&r.test);
    xt_model_free(&r.model);
    xt_store_free(&r.store);
    free(r.hist_loss);
    free(r.hist_acc);
    return rc;
}

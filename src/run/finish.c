/* finish.c — the master's end-of-run outputs: predictions.png (the last test
 * batch's first samples), results.json (eval.json for --eval-only), the same
 * JSON object as the last stdout line, and the target_accuracy verdict; and
 * the summary any other ending writes (train.c).
 * Not here: per-epoch outputs (loop.c) or checkpoints (checkpoint.c). */
#include "run/folder_run.h"
#include "run/finish.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distributed/shm.h"
#include "engine/graph.h"
#include "engine/metrics.h"
#include "io/atomic.h"
#include "io/grid.h"
#include "io/jsonw.h"
#include "io/png.h"
#include "kernels/onednn.h"
#include "kernels/simd.h"
#include "run/confusion.h"
#include "run/log.h"
#include "run/monitor.h"
#include "util/version.h"

int xt_run_grid_render(const xt_run *r, const xt_grid_samples *gs, xt_image *img, xt_err *e) {
    const xt_dataset *d = &r->test;
    const size_t px = xt_dataset_image_bytes(d);
    int act[XT_GRID_MAX], prd[XT_GRID_MAX];
    const char *names[XT_DATA_MAX_CLASSES];
    img->px = NULL;
    if (gs->n <= 0) return 0;
    uint8_t *imgs = malloc((size_t)gs->n * px);
    if (!imgs) return xt_fail(e, XT_EIO, "cannot draw the predictions grid: out of memory for %d images", gs->n);
    for (int i = 0; i < gs->n; i++) {
        memcpy(imgs + (size_t)i * px, d->images + (size_t)gs->index[i] * px, px);
        act[i] = gs->truth[i];
        prd[i] = gs->pred[i];
    }
    for (int k = 0; k < XT_DATA_MAX_CLASSES; k++) names[k] = d->class_names[k][0] ? d->class_names[k] : NULL;
    int rc = xt_grid_render(img, imgs, d->channels, d->rows, d->cols, act, prd, gs->n, names, e);
    free(imgs);
    return rc;
}

/* predictions.png (eval-predictions.png for --eval-only, which keeps the run's own). */
static int write_grid(const xt_run *r, const xt_grid_samples *gs, xt_err *e) {
    xt_image img;
    int rc = xt_run_grid_render(r, gs, &img, e);
    if (rc || !img.px) return rc;
    char path[700];
    snprintf(path, sizeof path, "%s/%s", r->outdir, r->cli->eval_only ? "eval-predictions.png" : "predictions.png");
    rc = xt_png_write(path, &img, e);
    xt_image_free(&img);
    return rc;
}

static const char *optimizer_name(xt_optim_kind k) { return k == XT_OPT_SGD ? "sgd" : k == XT_OPT_ADAM ? "adam" : "adamw"; }
static const char *schedule_name(xt_sched_kind k) { return k == XT_SCHED_STEP ? "step" : k == XT_SCHED_COSINE ? "cosine" : "constant"; }

static void subset(xt_jsonw *w, const char *key, const long v[2]) {
    xt_jw_key(w, key);
    xt_jw_arr(w);
    xt_jw_int(w, v[0]);
    xt_jw_int(w, v[1]);
    xt_jw_end(w);
}

static void str_or_null(xt_jsonw *w, const char *key, const char *s) {
    xt_jw_key(w, key);
    xt_jw_str(w, s && *s ? s : NULL);
}

/* Every setting that shapes the trajectory: with these a run can be told
 * apart from its neighbours in a sweep without opening config.yaml. */
static void hyperparameters(const xt_run *r, xt_jsonw *w) {
    const xt_config *c = r->c;
    char hash[32];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)r->model_hash);
    xt_jw_key(w, "model_hash"); xt_jw_str(w, hash);
    xt_jw_key(w, "num_cores"); xt_jw_int(w, r->world);
    xt_jw_key(w, "batch_size"); xt_jw_int(w, c->batch_size);
    xt_jw_key(w, "test_batch_size"); xt_jw_int(w, c->test_batch_size);
    xt_jw_key(w, "num_epochs"); xt_jw_int(w, c->num_epochs);
    xt_jw_key(w, "seed"); xt_jw_int(w, c->seed);
    xt_jw_key(w, "optimizer"); xt_jw_str(w, optimizer_name(c->optimizer));
    xt_jw_key(w, "learning_rate"); xt_jw_num(w, c->learning_rate);
    xt_jw_key(w, "effective_learning_rate"); xt_jw_num(w, c->learning_rate * (c->scale_lr_by_world_size ? r->world : 1));
    xt_jw_key(w, "scale_lr_by_world_size"); xt_jw_bool(w, c->scale_lr_by_world_size);
    xt_jw_key(w, "momentum"); xt_jw_num(w, c->momentum);
    xt_jw_key(w, "nesterov"); xt_jw_bool(w, c->nesterov);
    xt_jw_key(w, "weight_decay"); xt_jw_num(w, c->weight_decay);
    xt_jw_key(w, "betas"); xt_jw_arr(w); xt_jw_num(w, c->beta1); xt_jw_num(w, c->beta2); xt_jw_end(w);
    xt_jw_key(w, "eps"); xt_jw_num(w, c->adam_eps);
    xt_jw_key(w, "grad_clip_norm"); xt_jw_num(w, c->grad_clip_norm);
    xt_jw_key(w, "label_smoothing"); xt_jw_num(w, c->label_smoothing);
    xt_jw_key(w, "schedule"); xt_jw_str(w, schedule_name(c->schedule));
    xt_jw_key(w, "step_size"); xt_jw_int(w, c->step_size);
    xt_jw_key(w, "gamma"); xt_jw_num(w, c->gamma);
    xt_jw_key(w, "warmup_epochs"); xt_jw_int(w, c->warmup_epochs);
    int crop, flip;
    xt_run_augmentation(c, &crop, &flip);
    xt_jw_key(w, "random_crop_padding"); xt_jw_int(w, crop);
    xt_jw_key(w, "random_flip"); xt_jw_bool(w, flip);
    xt_jw_key(w, "random_resized_crop"); /* null when off, else its scale and ratio */
    if (!xt_run_resized_crop(c)) xt_jw_null(w);
    else {
        xt_jw_obj(w);
        xt_jw_key(w, "scale"); xt_jw_arr(w); xt_jw_num(w, c->rrc_scale[0]); xt_jw_num(w, c->rrc_scale[1]); xt_jw_end(w);
        xt_jw_key(w, "ratio"); xt_jw_arr(w); xt_jw_num(w, c->rrc_ratio[0]); xt_jw_num(w, c->rrc_ratio[1]); xt_jw_end(w);
        xt_jw_end(w);
    }
    xt_jw_key(w, "shuffle"); xt_jw_bool(w, c->shuffle);
    xt_jw_key(w, "drop_last"); xt_jw_bool(w, c->drop_last);
    str_or_null(w, "datadir", c->datadir);
    str_or_null(w, "train_images", c->train_images);
    str_or_null(w, "train_labels", c->train_labels);
    str_or_null(w, "test_images", c->test_images);
    str_or_null(w, "test_labels", c->test_labels);
    subset(w, "train_subset", c->train_subset);
    subset(w, "test_subset", c->test_subset);
    if (c->dataset == XT_DS_SYNTHETIC || c->dataset == XT_DS_SYNTHETIC_CIFAR10) {
        xt_jw_key(w, "synthetic_train_size"); xt_jw_int(w, c->synthetic_train_size);
        xt_jw_key(w, "synthetic_test_size"); xt_jw_int(w, c->synthetic_test_size);
    }
    if (c->dataset == XT_DS_FOLDER) xt_run_folder_results(r, w);
}

static void num_or_null(xt_jsonw *w, const char *key, double v) {
    xt_jw_key(w, key);
    if (isfinite(v) && v >= 0) xt_jw_numg(w, v, 6); else xt_jw_null(w);
}

/* The monitored metric's best epoch and, with checkpoint.keep_best, its
 * checkpoint (null before any epoch was evaluated). */
static void best_epoch(const xt_run *r, xt_jsonw *w) {
    xt_jw_key(w, "best");
    if (!r->mon_best_epoch) {
        xt_jw_null(w);
        return;
    }
    xt_jw_obj(w);
    xt_jw_key(w, "monitor"); xt_jw_str(w, xt_monitor_name(r->c));
    xt_jw_key(w, "value"); xt_jw_numg(w, r->mon_best, 6);
    xt_jw_key(w, "epoch"); xt_jw_int(w, r->mon_best_epoch);
    str_or_null(w, "checkpoint", r->best_ckpt);
    xt_jw_end(w);
}

/* The summary object: how it ended, what ran, how well, how fast. */
/* How the kernels were chosen, and per convolution pass or product of each
 * compiled graph: its candidates' times and the winner (pass_choose.c). */
static void kernel_choices(xt_jsonw *w, const xt_run *r) {
    xt_jw_key(w, "kernel_choice"); xt_jw_str(w, r->c->kernel_choice ? "fixed" : "measured");
    xt_jw_key(w, "onednn"); /* the library version beside the oneDNN rows' implementation names */
    xt_jw_str(w, k_onednn_version());
    xt_jw_key(w, "kernel_choices");
    xt_jw_arr(w);
    char *lines = r->engine ? xt_engine_choice_lines(r->engine) : NULL;
    for (const char *l = lines ? lines : r->kernel_choice_lines, *nl; l && *l; l = nl + 1) {
        if (!(nl = strchr(l, '\n'))) break;
        xt_jw_strn(w, l, (size_t)(nl - l));
    }
    free(lines);
    xt_jw_end(w);
}

static void results_json(const xt_run *r, xt_jsonw *w, const xt_summary *s) {
    const xt_config *c = r->c;
    double wall = (double)(xt_now_ns() - r->t_start_ns) / 1e9;
    double final_acc = r->nhist ? r->hist_acc[r->nhist - 1] : r->best_acc;
    double train_s = (double)r->train_ns / 1e9;
    xt_jw_obj(w);
    xt_jw_key(w, "status"); xt_jw_str(w, s->status);
    xt_jw_key(w, "exit_code"); xt_jw_int(w, s->exit_code);
    xt_jw_key(w, "message"); xt_jw_str(w, s->message);
    xt_jw_key(w, "version"); xt_jw_str(w, XT_VERSION);
    xt_jw_key(w, "config"); xt_jw_str(w, c->source);
    xt_jw_key(w, "output_dir"); xt_jw_str(w, r->outdir);
    xt_jw_key(w, "dataset"); xt_jw_str(w, xt_data_kind_name(xt_run_data_kind(c->dataset)));
    xt_jw_key(w, "model"); xt_jw_str(w, c->spec.source);
    xt_jw_key(w, "precision"); xt_jw_str(w, c->precision == XT_PRECISION_BF16 ? "bf16" : "fp32");
    char why[128];
    int isa = k_isa_reason(why, sizeof why);
    xt_jw_key(w, "isa"); xt_jw_str(w, k_simd_name(isa)); /* the level the kernels ran at, and what set it */
    xt_jw_key(w, "isa_from"); xt_jw_str(w, why);
    kernel_choices(w, r);
    xt_jw_key(w, "epochs"); xt_jw_int(w, r->nhist);
    xt_jw_key(w, "global_step"); xt_jw_int(w, r->global_step);
    num_or_null(w, "best_accuracy", r->best_acc);
    num_or_null(w, "final_accuracy", final_acc);
    xt_jw_key(w, "final_loss"); if (isfinite(s->final_loss)) xt_jw_numg(w, s->final_loss, 6); else xt_jw_null(w);
    xt_jw_key(w, "target_accuracy"); xt_jw_numg(w, c->target_accuracy, 6); /* as configured: 0 = no target */
    str_or_null(w, "last_checkpoint", s->checkpoint);
    /* null, not 0, when this process measured nothing (a stop before an epoch's end
     * in its workers): a sweep's table then shows "-" rather than a rate of 0 */
    xt_jw_key(w, "samples_per_sec");
    xt_jw_numg(w, train_s > 0 && r->samples_trained > 0 ? (double)r->samples_trained * r->world / train_s : (double)NAN, 6);
    xt_jw_key(w, "train_time_s"); xt_jw_numg(w, train_s, 6);
    xt_jw_key(w, "data_wait_s"); xt_jw_numg(w, (double)r->data_wait_ns / 1e9, 6);
    xt_jw_key(w, "wall_time_s"); xt_jw_numg(w, wall, 6);
    xt_jw_key(w, "config_changed_on_resume"); xt_jw_bool(w, r->config_changed);
    xt_jw_key(w, "smoke"); xt_jw_bool(w, c->fast_dev_run);
    best_epoch(r, w);
    xt_confusion_per_class(r, w);
    hyperparameters(r, w);
    xt_jw_end(w);
}

/* The summary file with a trailing newline, then the same object as the
 * last stdout line. */
static int write_results(const xt_run *r, const char *name, const xt_jsonw *w, xt_err *e) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", r->outdir, name);
    char *text = malloc(w->len + 2);
    if (!text) return xt_fail(e, XT_ERUNTIME, "out of memory");
    memcpy(text, w->buf, w->len);
    text[w->len] = '\n';
    int rc = xt_write_file_atomic(path, text, w->len + 1, e);
    xt_out("%s", w->buf); /* the last stdout line: the same summary, one JSON object, even if the file failed */
    free(text);
    return rc;
}

int xt_run_summary(xt_run *r, const xt_summary *s, xt_err *e) {
    xt_jsonw w;
    xt_jw_init(&w);
    results_json(r, &w, s);
    const char *name = r->cli->eval_only ? "eval.json" : "results.json";
    int rc = xt_jw_finish(&w, name, e);
    if (!rc) rc = write_results(r, name, &w, e);
    xt_jw_free(&w);
    return rc;
}

int xt_run_finish(xt_run *r, const xt_grid_samples *grid, double final_loss, xt_err *e) {
    const xt_config *c = r->c;
    if (write_grid(r, grid, e)) return e->code;
    if (xt_confusion_write(r, e)) return e->code;
    int below = !r->cli->eval_only && c->target_accuracy > 0 && r->best_acc < c->target_accuracy;
    xt_err verdict = {0};
    if (below) xt_fail(&verdict, XT_EBELOW, "best accuracy %.2f%% is below target_accuracy %.2f%% (outputs written to %s)", r->best_acc, c->target_accuracy, r->outdir);
    char msg[sizeof verdict.msg] = "finished";
    const char *status = below ? "below_target" : "ok";
    if (below) snprintf(msg, sizeof msg, "%s", verdict.msg);
    else if (r->limit_stop == XT_STOP_TIME_LIMIT) { /* a planned ending: exit 0 */
        status = "time_limit";
        snprintf(msg, sizeof msg, "stopped by max_time (%gs) after global step %lld", c->max_time, r->global_step);
    } else if (r->limit_stop == XT_STOP_EARLY) { /* a planned ending: exit 0 */
        status = "early_stopped";
        snprintf(msg, sizeof msg, "early stopping after epoch %d: %s did not improve by more than %g for %d epochs (best %.6g at epoch %d)",
                 r->nhist, xt_monitor_name(c), c->min_delta, r->mon_wait, r->mon_best, r->mon_best_epoch);
    } else if (c->fast_dev_run)
        snprintf(msg, sizeof msg, "fast_dev_run: one step and one test batch per worker, every output written");
    else if (r->limit_stop == XT_STOP_MAX_STEPS)
        snprintf(msg, sizeof msg, "stopped at max_steps (%lld)", c->max_steps);
    xt_summary s = {.status = status, .exit_code = verdict.code, .message = msg, .final_loss = final_loss, .checkpoint = r->last_ckpt};
    int rc = xt_run_summary(r, &s, e);
    r->summary_written = 1;
    xt_dist_note_summary(r->dist); /* for a parent process, which sees only this worker's exit code */
    if (rc) return rc;
    if (below) *e = verdict;
    return verdict.code;
}

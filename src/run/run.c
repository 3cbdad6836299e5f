/* run.c — setting up one run (xt_run): the output directory, the model,
 * input and optimizer slots with their initial weights, and the data.
 * Claiming the directory (and its lock) comes once the config, model and data
 * are known to be usable (a refused run leaves no directory behind), and
 * before any output. Done in the parent before any worker forks, so every
 * replica starts equal.
 * Not here: training, evaluation or prediction (loop.c, eval.c, predict.c). */
#include "run/folder_data.h"
#include "run/run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/download.h"
#include "distributed/cluster.h"
#include "engine/metrics.h"
#include "io/atomic.h"
#include "run/record.h"

static void note(void *ctx, const char *line) {
    (void)ctx;
    fprintf(stderr, "xlatrain: %s\n", line);
}

xt_data_kind xt_run_data_kind(xt_dataset_kind k) {
    switch (k) {
    case XT_DS_FASHION_MNIST: return XT_DATA_FASHION_MNIST;
    case XT_DS_SYNTHETIC: return XT_DATA_SYNTHETIC;
    case XT_DS_CIFAR10: return XT_DATA_CIFAR10;
    case XT_DS_SYNTHETIC_CIFAR10: return XT_DATA_SYNTHETIC_CIFAR10;
    case XT_DS_FOLDER: return XT_DATA_FOLDER;
    case XT_DS_MNIST: break;
    }
    return XT_DATA_MNIST;
}

void xt_run_augmentation(const xt_config *c, int *crop_padding, int *flip) {
    xt_data_augment_defaults(xt_run_data_kind(c->dataset), crop_padding, flip);
    if (c->random_crop_padding >= 0) *crop_padding = c->random_crop_padding;
    else if (xt_run_resized_crop(c)) *crop_padding = 0; /* auto padding gives way to the resized crop */
    if (c->random_flip >= 0) *flip = c->random_flip;
}

int xt_run_resized_crop(const xt_config *c) { return c->rrc_scale[0] < 1; }

void xt_run_normalization(const xt_config *c, double *mean, double *std) {
    xt_data_norm_defaults(xt_run_data_kind(c->dataset), mean, std);
    for (int ch = 0; ch < XT_DATA_MAX_CHANNELS; ch++) {
        if (c->norm_mean >= 0) mean[ch] = c->norm_mean;
        if (c->norm_std > 0) std[ch] = c->norm_std;
    }
}

static void data_opts(const xt_config *c, xt_data_opts *o) {
    xt_data_opts_defaults(o);
    o->kind = xt_run_data_kind(c->dataset);
    o->datadir = c->datadir;
    o->train_images = c->train_images;
    o->train_labels = c->train_labels;
    o->test_images = c->test_images;
    o->test_labels = c->test_labels;
    memcpy(o->train_subset, c->train_subset, sizeof o->train_subset);
    memcpy(o->test_subset, c->test_subset, sizeof o->test_subset);
    o->seed = (uint64_t)c->seed;
    o->synthetic_train_size = c->synthetic_train_size;
    o->synthetic_test_size = c->synthetic_test_size;
    o->norm_mean = c->norm_mean;
    o->norm_std = c->norm_std;
    xt_run_folder_opts(c, o);
}

static int check_input_shape(const xt_run *r, xt_err *e) {
    const xt_spec *sp = &r->c->spec;
    const xt_dataset *d = &r->test;
    if (sp->num_classes != d->num_classes) /* a folder's classes are known only now */
        return xt_fail(e, XT_EUSAGE, "%s: the model outputs %d scores but %s has %d class folders; give the last linear layer out: %d",
                       sp->source, sp->num_classes, d->images_path, d->num_classes, d->num_classes);
    if (sp->input[0] != d->channels || sp->input[1] != d->rows || sp->input[2] != d->cols)
        return xt_fail(e, XT_EUSAGE, "%s: the model's input is [%d, %d, %d] but the data is [%d, %d, %d]; set input: [%d, %d, %d] in the model spec",
                       sp->source, sp->input[0], sp->input[1], sp->input[2], d->channels, d->rows, d->cols, d->channels,
                       d->rows, d->cols);
    return 0;
}

int xt_run_open_data(xt_run *r, xt_err *e) {
    const xt_config *c = r->c;
    xt_data_opts o;
    data_opts(c, &o);
    if ((r->cli->download || c->download) && o.kind != XT_DATA_SYNTHETIC && o.kind != XT_DATA_SYNTHETIC_CIFAR10 && o.kind != XT_DATA_FOLDER &&
        xt_download_dataset(o.kind, c->datadir, note, NULL, e))
        return e->code;
    if (!r->cli->eval_only) {
        if (xt_dataset_open(&r->train, &o, XT_SPLIT_TRAIN, e)) return e->code;
        r->have_train = 1;
        o.train_mean = r->train.mean, o.train_std = r->train.std; /* the test split is normalized as the training one */
    }
    if (xt_dataset_open(&r->test, &o, XT_SPLIT_TEST, e)) return e->code;
    if (check_input_shape(r, e)) return e->code;
    return 0;
}

int xt_run_note_norm(const xt_run *r, xt_err *e) {
    /* host 0 writes config.yaml; eval-only and predict runs leave it as it is */
    if (!r->have_train || r->host != 0 || r->cli->eval_only || r->cli->predict) return 0;
    return xt_run_record_norm(&r->train, r->outdir, e);
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

size_t xt_run_grad_floats(const xt_run *r) {
    size_t n = 0;
    for (int i = 0; i < r->model.nparams; i++) n += ((size_t)r->store.slots[r->model.params[i]].numel + 15) & ~(size_t)15;
    return n;
}

/* One run per directory: a fresh run claims an unused output_dir (the
 * default moves on to runs/<name>-2, ...), --resume the run that is there,
 * --eval-only and --predict share it. Training records its config there. */
int xt_run_claim(xt_run *r, xt_err *e) {
    const xt_cli *cli = r->cli;
    if (r->host != 0) return 0; /* the global master alone writes outputs */
    xt_claim_kind kind = cli->eval_only || cli->predict ? XT_CLAIM_READ : cli->resume ? XT_CLAIM_CONTINUE : XT_CLAIM_NEW;
    char dir[620];
    snprintf(dir, sizeof dir, "%s", r->c->output_dir);
    /* --resume latest with the default output_dir: the config's newest run, not its first */
    int n;
    if (kind != XT_CLAIM_NEW && !r->c->output_dir_set && cli->resume && !strcmp(cli->resume, "latest") &&
        (n = xt_rundir_newest(r->c->output_dir, dir, sizeof dir)) > 1)
        fprintf(stderr, "xlatrain: --resume latest: %s is the newest of this config's %d runs (set output_dir to choose another)\n", dir, n);
    if (xt_rundir_claim(&r->rundir, dir, kind, !r->c->output_dir_set, cli->overwrite, e)) return e->code;
    r->claimed = 1;
    snprintf(r->outdir, sizeof r->outdir, "%s", r->rundir.dir);
    /* --eval-only writes eval.json there, --predict predictions.csv unless --output says elsewhere */
    struct stat st; /* a missing one holds no checkpoint: --resume says so */
    int writes = kind != XT_CLAIM_READ || ((cli->eval_only || !cli->predict_out) && stat(r->outdir, &st) == 0);
    if (writes && xt_dir_check_writable(r->outdir, e)) return e->code; /* before any epoch (or evaluation) is spent */
    if (kind == XT_CLAIM_READ) return 0;
    fprintf(stderr, "xlatrain: run directory %s\n", r->outdir);
    /* a resumed run records its config only once --resume has accepted it (train.c) */
    if (kind != XT_CLAIM_NEW) return 0;
    return xt_record_write_config(r->outdir, r->c, cli, e) ? e->code : xt_run_note_norm(r, e);
}

int xt_run_open(xt_run *r, const xt_config *c, const xt_cli *cli, xt_err *e) {
    memset(r, 0, sizeof *r);
    r->c = c;
    r->cli = cli;
    r->world = r->local_world = c->num_cores; /* several hosts: train.c sets both */
    r->host = xt_cluster_rank();
    r->hosts = xt_cluster_size();
    r->best_acc = -1;
    r->mon_best = NAN;
    r->t_start_ns = xt_now_ns();
    r->rundir.lock_fd = -1;
    r->last_loss = NAN;
    snprintf(r->outdir, sizeof r->outdir, "%s", c->output_dir);
    r->hist_loss = calloc(XT_MAX_EPOCHS, sizeof *r->hist_loss);
    r->hist_acc = calloc(XT_MAX_EPOCHS, sizeof *r->hist_acc);
    if (!r->hist_loss || !r->hist_acc) return xt_fail(e, XT_ERUNTIME, "out of memory");
    r->config_yaml = xt_record_config_portable(c);
    if (!r->config_yaml) return xt_fail(e, XT_ERUNTIME, "out of memory");
    return xt_run_setup_model(r, e);
}

void xt_run_close(xt_run *r) {
    if (r->have_train) xt_dataset_free(&r->train);
    xt_dataset_free(&r->test);
    xt_model_free(&r->model);
    xt_store_free(&r->store);
    xt_rundir_release(&r->rundir);
    free(r->config_yaml);
    free(r->resumed_config);
    free(r->resumed_choices);
    free(r->kernel_choice_lines);
    free(r->hist_loss);
    free(r->hist_acc);
    free(r->confusion);
    r->confusion = NULL;
}

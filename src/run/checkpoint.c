/* checkpoint.c — a run's checkpoint as safetensors.
 *
 * Tensors: the model's state_dict under PyTorch's names (conv1.weight,
 * bn1.running_mean, bn1.num_batches_tracked as I64, ...), so PyTorch's
 * load_state_dict reads it; the optimizer's state under "optim.<state>.<param>"
 * (optim.momentum_buffer.conv1.weight, optim.exp_avg.fc1.bias). The training
 * position lives in __metadata__ ("xlatrain.*" keys): the next epoch and
 * batch, the global step, optimizer steps, best accuracy, the loss/accuracy
 * history for curves.png, each replica's loss sums of a partial epoch (so
 * a resumed epoch's mean loss covers all of it), the resolved config that
 * --resume compares, and the model hash that refuses a checkpoint of
 * another model. One written mid-epoch is named by epoch and step. RNG state needs no saving: every stream (sampler order,
 * dropout masks, crops) is a pure function of (seed, epoch/step, index).
 * Written by the master only, atomically (io/safetensors.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/ckptdir.h"
#include "engine/graph.h"
#include "io/safetensors.h"
#include "run/folder_data.h"
#include "run/checkpoint.h"
#include "io/jsonw.h"
#include "run/confusion.h"
#include "run/monitor.h"

static int is_saved_state(const xt_slot *s) {
    return s->kind == XT_SLOT_PARAM || s->kind == XT_SLOT_BUFFER ||
           (s->kind == XT_SLOT_STATE && s->rank > 0 && !strncmp(s->name, "optim.", 6));
}

/* "v0,v1,..." with `digits` significant digits (6 for the history as
 * people read it; 17 round-trips a double exactly), in a buffer sized for
 * all n values (at most digits + 8 characters each), so nothing is ever
 * cut; NULL when out of memory. */
static char *join(const double *v, int n, int digits) {
    size_t cap = (size_t)n * (size_t)(digits + 9) + 1, o = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    out[0] = 0;
    for (int i = 0; i < n; i++) o += (size_t)snprintf(out + o, cap - o, i ? ",%.*g" : "%.*g", digits, v[i]);
    return out;
}

/* What a checkpoint holds: every saved slot, then each batch norm's
 * num_batches_tracked as an I64 scalar (PyTorch's name). */
typedef struct saved {
    xt_st_tensor *t;                            /* (store.n + nlayers) */
    int nt;
    int64_t nbt[XT_SPEC_MAX_LAYERS];
    char names[XT_SPEC_MAX_LAYERS][128];
} saved;

static int collect_tensors(const xt_run *r, saved *sv, xt_err *e) {
    const xt_spec *sp = r->model.spec;
    sv->t = calloc((size_t)r->store.n + (size_t)sp->nlayers + 1, sizeof *sv->t);
    if (!sv->t) return xt_fail(e, XT_ERUNTIME, "out of memory writing a checkpoint");
    for (int i = 0; i < r->store.n; i++) {
        const xt_slot *s = &r->store.slots[i];
        if (!is_saved_state(s)) continue;
        xt_st_tensor *x = &sv->t[sv->nt++];
        x->name = s->name;
        x->dtype = XT_ST_F32;
        x->rank = s->rank;
        for (int k = 0; k < s->rank; k++) x->shape[k] = s->shape[k];
        x->data = s->data;
    }
    for (int l = 0; l < sp->nlayers; l++) {
        if (sp->layers[l].kind != XT_L_BATCHNORM2D) continue;
        sv->nbt[l] = r->model.layers[l].num_batches_tracked;
        snprintf(sv->names[l], sizeof sv->names[l], "%s.num_batches_tracked", sp->layers[l].path);
        sv->t[sv->nt++] = (xt_st_tensor){.name = sv->names[l], .dtype = XT_ST_I64, .rank = 0, .data = &sv->nbt[l]};
    }
    return 0;
}

/* The training position as metadata text. */
typedef struct position {
    char hash[32], ep[16], st[32], gs[32], os[32], best[32], seed[32], world[16];
    char mon_best[40], mon_epoch[16], mon_wait[16]; /* the monitor (monitor.h): "" best before any */
    char *hist_loss, *hist_acc;                 /* malloc'd */
    char *part_sum, *part_n;                    /* malloc'd: each replica's loss sums so far in a partial epoch */
    char *model, *class_names;                  /* malloc'd: the spec as YAML, the classes as a JSON list */
    char norm_mean[96], norm_std[96];           /* per channel, "0.4914,0.4822,0.4465" */
    char choices_isa[64];                       /* the ISA the kernel choices were made at (xt_engine_choice_isa) */
} position;

/* What a checkpoint needs to stand alone as a model (--export to ONNX reads
 * it, export_onnx.h): the spec, the input's normalization and the classes'
 * names. -1 when out of memory. */
static int model_text(const xt_run *r, position *p) {
    size_t len = 0;
    FILE *f = open_memstream(&p->model, &len);
    if (!f) return -1;
    xt_spec_print_yaml(r->model.spec, f, 0);
    if (fclose(f)) return -1;
    double mean[XT_DATA_MAX_CHANNELS], std[XT_DATA_MAX_CHANNELS];
    int ch = r->model.spec->input[0] < XT_DATA_MAX_CHANNELS ? r->model.spec->input[0] : XT_DATA_MAX_CHANNELS;
    const xt_dataset *d = r->have_train ? &r->train : &r->test;
    if (d->channels == ch) { /* what the data was normalized with, measured (a folder's auto) or given */
        memcpy(mean, d->mean, sizeof mean);
        memcpy(std, d->std, sizeof std);
    } else {
        xt_run_normalization(r->c, mean, std);
    }
    size_t om = 0, os = 0;
    for (int c = 0; c < ch; c++) {
        om += (size_t)snprintf(p->norm_mean + om, sizeof p->norm_mean - om, c ? ",%.9g" : "%.9g", mean[c]);
        os += (size_t)snprintf(p->norm_std + os, sizeof p->norm_std - os, c ? ",%.9g" : "%.9g", std[c]);
    }
    xt_jsonw w;
    xt_jw_init(&w);
    xt_jw_arr(&w);
    for (int c = 0; c < r->model.spec->num_classes; c++) {
        char buf[16];
        xt_jw_str(&w, xt_confusion_class_name(r, c, buf, sizeof buf));
    }
    xt_jw_end(&w);
    int rc = w.oom ? -1 : 0;
    if (!rc) p->class_names = strndup(w.buf, w.len);
    xt_jw_free(&w);
    return rc || !p->class_names ? -1 : 0;
}

static int position_text(const xt_run *r, int next_epoch, long long step_in_epoch, position *p, xt_err *e) {
    snprintf(p->hash, sizeof p->hash, "%016" PRIx64, r->model_hash);
    snprintf(p->ep, sizeof p->ep, "%d", next_epoch);
    snprintf(p->st, sizeof p->st, "%lld", step_in_epoch);
    snprintf(p->gs, sizeof p->gs, "%lld", r->global_step);
    snprintf(p->os, sizeof p->os, "%lld", r->optim.steps);
    snprintf(p->best, sizeof p->best, "%.4f", r->best_acc);
    snprintf(p->seed, sizeof p->seed, "%lld", r->c->seed);
    snprintf(p->world, sizeof p->world, "%d", r->world);
    if (isfinite(r->mon_best)) snprintf(p->mon_best, sizeof p->mon_best, "%.17g", r->mon_best);
    snprintf(p->mon_epoch, sizeof p->mon_epoch, "%d", r->mon_best_epoch);
    snprintf(p->mon_wait, sizeof p->mon_wait, "%d", r->mon_wait);
    p->hist_loss = join(r->hist_loss, r->nhist, 6);
    p->hist_acc = join(r->hist_acc, r->nhist, 6);
    int np = step_in_epoch > 0 ? r->npart : 0;
    double nn[XT_MAX_REPLICAS];
    for (int i = 0; i < np; i++) nn[i] = (double)r->part_loss_n[i];
    p->part_sum = join(r->part_loss_sum, np, 17);
    p->part_n = join(nn, np, 17);
    if (!p->hist_loss || !p->hist_acc || !p->part_sum || !p->part_n || model_text(r, p)) return xt_fail(e, XT_ERUNTIME, "out of memory writing a checkpoint");
    return 0;
}

/* Write the checkpoint: to `fixed` (best.safetensors) as it is, or named
 * by its epoch (and step), then pruned to checkpoint.keep_last. */
static int write_checkpoint(xt_run *r, int epoch_label, const char *fixed, const saved *sv, const position *p,
                            const char *choices, xt_err *e) {
    const char *optname = r->optim.kind == XT_OPT_SGD ? "sgd" : r->optim.kind == XT_OPT_ADAM ? "adam" : "adamw";
    xt_st_meta m[] = {
        {"format", "pt"},
        {"xlatrain.version", "1"},
        {"xlatrain.model_hash", p->hash},
        {"xlatrain.config", r->c->name},
        {"xlatrain.optimizer", optname},
        {"xlatrain.next_epoch", p->ep},
        {"xlatrain.step_in_epoch", p->st},
        {"xlatrain.global_step", p->gs},
        {"xlatrain.optimizer_steps", p->os},
        {"xlatrain.best_accuracy", p->best},
        {"xlatrain.seed", p->seed},
        {"xlatrain.world_size", p->world},
        {"xlatrain.history.loss", p->hist_loss},
        {"xlatrain.history.accuracy", p->hist_acc},
        {"xlatrain.resolved_config", r->config_yaml ? r->config_yaml : ""}, /* what --resume compares (record.h) */
        {"xlatrain.partial_epoch.loss_sum", p->part_sum},   /* per replica, so the resumed epoch's mean covers all of it */
        {"xlatrain.partial_epoch.loss_count", p->part_n},
        {"xlatrain.monitor", xt_monitor_name(r->c)},      /* early stopping's state, so a resumed run stops where */
        {"xlatrain.monitor.best", p->mon_best},           /* an uninterrupted one does */
        {"xlatrain.monitor.best_epoch", p->mon_epoch},
        {"xlatrain.monitor.wait", p->mon_wait},
        {"xlatrain.model", p->model},                     /* the model itself, for --export to ONNX */
        {"xlatrain.model_source", r->model.spec->source},
        {"xlatrain.normalize.mean", p->norm_mean},
        {"xlatrain.normalize.std", p->norm_std},
        {"xlatrain.class_names", p->class_names},
        {"xlatrain.kernel_choices", choices ? choices : ""}, /* what --resume runs again, untimed (pass_choose.c) */
        {"xlatrain.kernel_choices.isa", p->choices_isa},    /* the ISA they were made at: another one's are not taken */
    };
    if (fixed) {
        if (xt_st_write(fixed, sv->t, sv->nt, m, (int)(sizeof m / sizeof *m), e)) return e->code;
        snprintf(r->best_ckpt, sizeof r->best_ckpt, "%s", fixed);
        return 0;
    }
    /* mid-epoch: named by the epoch in progress and its step, never as a finished epoch */
    long long step = atoll(p->st);
    int mid = step > 0, ep = mid ? atoi(p->ep) + 1 : epoch_label;
    char path[1024];
    if (mid ? xt_st_checkpoint_step_path(path, sizeof path, r->outdir, ep, step, e)
            : xt_st_checkpoint_path(path, sizeof path, r->outdir, ep, e))
        return e->code;
    if (xt_st_write(path, sv->t, sv->nt, m, (int)(sizeof m / sizeof *m), e)) return e->code;
    snprintf(r->last_ckpt, sizeof r->last_ckpt, "%s", path); /* for the run's summary */
    return xt_st_prune_checkpoints_at(r->outdir, r->c->keep_checkpoints, ep, mid ? step : 0, e);
}

static int save(xt_run *r, int epoch_label, int next_epoch, long long step_in_epoch, const char *fixed, xt_err *e) {
    saved *sv = calloc(1, sizeof *sv);
    position p = {0};
    int rc = sv ? 0 : xt_fail(e, XT_ERUNTIME, "out of memory writing a checkpoint");
    if (!rc) rc = collect_tensors(r, sv, e);
    if (!rc) rc = position_text(r, next_epoch, step_in_epoch, &p, e);
    char *choices = r->engine ? xt_engine_choices_text(r->engine) : NULL;
    xt_engine_choice_isa(p.choices_isa, sizeof p.choices_isa);
    if (!rc) rc = write_checkpoint(r, epoch_label, fixed, sv, &p, choices, e);
    free(choices);
    free(p.hist_loss);
    free(p.hist_acc);
    free(p.part_sum);
    free(p.part_n);
    free(p.model);
    free(p.class_names);
    if (sv) free(sv->t);
    free(sv);
    return rc;
}

int xt_ckpt_save(xt_run *r, int epoch_label, int next_epoch, long long step_in_epoch, xt_err *e) {
    return save(r, epoch_label, next_epoch, step_in_epoch, NULL, e);
}

int xt_ckpt_save_best(xt_run *r, int next_epoch, xt_err *e) {
    char path[1024];
    if ((size_t)snprintf(path, sizeof path, "%s/best.safetensors", r->outdir) >= sizeof path)
        return xt_fail(e, XT_EIO, "%s/best.safetensors: the path is too long; use a shorter output_dir", r->outdir);
    return save(r, next_epoch, next_epoch, 0, path, e);
}

int xt_ckpt_resolve(const xt_run *r, const char *arg, char *out, size_t cap, xt_err *e) {
    if (!strcmp(arg, "latest")) return xt_st_find_latest(r->outdir, out, cap, e);
    if ((size_t)snprintf(out, cap, "%s", arg) >= cap) return xt_fail(e, XT_EUSAGE, "--resume: path too long");
    return 0;
}

/* Upper bounds of the training position. Steps stay far below 2^53 (exact
 * in a double, no overflow when counted on) and the int32 step slot. */
#define MAX_STEPS 0x7fffffffLL

/* Metadata `key` as a decimal integer in [lo, hi]: no sign games, no
 * overflow, no trailing text. */
static int meta_ll(const xt_st_file *f, const char *key, long long lo, long long hi, long long *v, xt_err *e) {
    const char *s = xt_st_meta_get(f, key);
    if (!s) return xt_fail(e, XT_ERUNTIME, "%s: no '%s' in the metadata: not an xlatrain training checkpoint; use one written by xlatrain", f->path, key);
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    int digits = *s == '-' ? s[1] >= '0' && s[1] <= '9' : *s >= '0' && *s <= '9';
    if (!digits || *end || errno == ERANGE || x < lo || x > hi)
        return xt_fail(e, XT_ERUNTIME, "%s: metadata '%s' is '%.40s', not an integer from %lld to %lld; the file is damaged, use another checkpoint",
                       f->path, key, s, lo, hi);
    *v = x;
    return 0;
}

/* Comma-separated finite numbers in [lo, hi]; the count, or -1 when one is not. */
static int split(const char *s, double lo, double hi, double *out, int cap) {
    int n = 0;
    while (s && *s && n < cap) {
        char *end;
        double x = strtod(s, &end);
        if (end == s || !isfinite(x) || x < lo || x > hi || (*end && *end != ',')) return -1;
        out[n++] = x;
        s = *end == ',' ? end + 1 : NULL;
    }
    return n;
}

/* A list that may be absent (0 entries); -1 when an entry is not a finite number in [lo, hi]. */
static int split_exact(const char *s, double lo, double hi, double *out, int cap) { return s && *s ? split(s, lo, hi, out, cap) : 0; }
/* The monitor's best and wait (absent in older checkpoints, or kept for
 * another monitor: then it starts afresh, as the config now asks). */
static int load_monitor(xt_run *r, const xt_st_file *f, xt_err *e) {
    const char *name = xt_st_meta_get(f, "xlatrain.monitor"), *best = xt_st_meta_get(f, "xlatrain.monitor.best");
    r->mon_best = NAN;
    r->mon_best_epoch = r->mon_wait = 0;
    if (!name || strcmp(name, xt_monitor_name(r->c))) return 0;
    long long be = 0, wait = 0;
    double b = NAN;
    if (best && *best && split(best, -HUGE_VAL, HUGE_VAL, &b, 1) != 1)
        return xt_fail(e, XT_ERUNTIME, "%s: metadata 'xlatrain.monitor.best' is '%.40s', not a finite number; the file is damaged, use another checkpoint",
                       f->path, best);
    int rc;
    if ((rc = meta_ll(f, "xlatrain.monitor.best_epoch", 0, XT_MAX_EPOCHS, &be, e)) ||
        (rc = meta_ll(f, "xlatrain.monitor.wait", 0, XT_MAX_EPOCHS, &wait, e)))
        return rc;
    r->mon_best = b;
    r->mon_best_epoch = (int)be;
    r->mon_wait = (int)wait;
    char path[1024];
    if (r->c->keep_best && be > 0 && (size_t)snprintf(path, sizeof path, "%s/best.safetensors", r->outdir) < sizeof path &&
        access(path, R_OK) == 0)
        snprintf(r->best_ckpt, sizeof r->best_ckpt, "%s", path);
    return 0;
}

/* The training position from the metadata, every field range-checked. */
static int load_position(xt_run *r, const xt_st_file *f, xt_err *e) {
    long long ep = 0, st = 0, gs = 0, os = 0;
    int rc;
    if ((rc = meta_ll(f, "xlatrain.next_epoch", 0, XT_MAX_EPOCHS, &ep, e)) ||
        (rc = meta_ll(f, "xlatrain.step_in_epoch", 0, MAX_STEPS, &st, e)) ||
        (rc = meta_ll(f, "xlatrain.global_step", 0, MAX_STEPS, &gs, e)) ||
        (rc = meta_ll(f, "xlatrain.optimizer_steps", 0, MAX_STEPS, &os, e)))
        return rc;
    const char *best = xt_st_meta_get(f, "xlatrain.best_accuracy");
    double b = -1;
    if (best && split(best, -1, 100, &b, 1) != 1)
        return xt_fail(e, XT_ERUNTIME, "%s: metadata 'xlatrain.best_accuracy' is '%.40s', not a number from -1 to 100; the file is damaged, use another checkpoint",
                       f->path, best);
    int nl = split(xt_st_meta_get(f, "xlatrain.history.loss"), -HUGE_VAL, HUGE_VAL, r->hist_loss, XT_MAX_EPOCHS);
    int na = split(xt_st_meta_get(f, "xlatrain.history.accuracy"), 0, 100, r->hist_acc, XT_MAX_EPOCHS);
    if (nl < 0 || na < 0)
        return xt_fail(e, XT_ERUNTIME, "%s: metadata 'xlatrain.history.%s' is not a list of finite numbers; the file is damaged, use another checkpoint",
                       f->path, nl < 0 ? "loss" : "accuracy");
    if ((rc = load_monitor(r, f, e))) return rc;
    r->start_epoch = (int)ep;
    r->start_step_in_epoch = st;
    r->global_step = gs;
    r->optim.steps = os;
    r->best_acc = b;
    r->nhist = nl < na ? nl : na;
    return 0;
}

/* The best accuracy and history only, for the summary of a run whose
 * workers held them (checkpoint.h); damaged entries are left out. */
int xt_ckpt_load_progress(xt_run *r, const char *path, xt_err *e) {
    xt_st_file f;
    if (xt_st_read(path, &f, e)) return e->code;
    const char *best = xt_st_meta_get(&f, "xlatrain.best_accuracy");
    double b;
    if (best && split(best, -1, 100, &b, 1) == 1) r->best_acc = b;
    int nl = split(xt_st_meta_get(&f, "xlatrain.history.loss"), -HUGE_VAL, HUGE_VAL, r->hist_loss, XT_MAX_EPOCHS);
    int na = split(xt_st_meta_get(&f, "xlatrain.history.accuracy"), 0, 100, r->hist_acc, XT_MAX_EPOCHS);
    r->nhist = nl < 0 || na < 0 ? 0 : nl < na ? nl : na;
    long long gs = 0;
    if (!meta_ll(&f, "xlatrain.global_step", 0, MAX_STEPS, &gs, e)) r->global_step = gs;
    xt_st_close(&f);
    return 0;
}

int xt_ckpt_load(xt_run *r, const char *path, xt_err *e) {
    xt_st_file f;
    if (xt_st_read(path, &f, e)) return e->code;
    int rc = 0;
    char want[32];
    snprintf(want, sizeof want, "%016" PRIx64, r->model_hash);
    const char *have = xt_st_meta_get(&f, "xlatrain.model_hash");
    if (!have) {
        rc = xt_fail(e, XT_ERUNTIME, "%s: no xlatrain.model_hash in the metadata: not a checkpoint written by xlatrain; use one from an xlatrain run", path);
        goto out;
    }
    if (strcmp(have, want)) {
        rc = xt_fail(e, XT_ERUNTIME, "%s: written for another model (model hash %s, this config's model is %s); resume with the config that wrote it", path, have, want);
        goto out;
    }
    const char *opt = xt_st_meta_get(&f, "xlatrain.optimizer");
    const char *mine = r->optim.kind == XT_OPT_SGD ? "sgd" : r->optim.kind == XT_OPT_ADAM ? "adam" : "adamw";
    int need_optim = !r->cli->eval_only && !r->cli->predict;
    if (need_optim && (!opt || strcmp(opt, mine))) {
        rc = xt_fail(e, XT_ERUNTIME, "%s: optimizer state is for '%s' but the config uses '%s'; set optimizer.name: %s or start a new run", path, opt ? opt : "none", mine, opt ? opt : mine);
        goto out;
    }
    for (int i = 0; i < r->store.n; i++) {
        const xt_slot *s = &r->store.slots[i];
        if (!is_saved_state(s) || (s->kind == XT_SLOT_STATE && !need_optim)) continue;
        int64_t shape[4];
        for (int k = 0; k < s->rank; k++) shape[k] = s->shape[k];
        if (xt_st_copy(&f, s->name, XT_ST_F32, s->rank, shape, s->data, e)) { rc = e->code ? e->code : XT_ERUNTIME; goto out; }
    }
    const xt_spec *sp = r->model.spec;
    for (int l = 0; l < sp->nlayers; l++) {
        if (sp->layers[l].kind != XT_L_BATCHNORM2D) continue;
        char name[128];
        int64_t v = 0;
        snprintf(name, sizeof name, "%s.num_batches_tracked", sp->layers[l].path);
        if (xt_st_copy(&f, name, XT_ST_I64, 0, NULL, &v, e)) { rc = e->code ? e->code : XT_ERUNTIME; goto out; }
        r->model.layers[l].num_batches_tracked = v;
    }
    if ((rc = load_position(r, &f, e))) goto out;
    double nn[XT_MAX_REPLICAS];
    r->npart = split_exact(xt_st_meta_get(&f, "xlatrain.partial_epoch.loss_sum"), -HUGE_VAL, HUGE_VAL, r->part_loss_sum, XT_MAX_REPLICAS);
    if (r->npart < 0 || split_exact(xt_st_meta_get(&f, "xlatrain.partial_epoch.loss_count"), 0, (double)MAX_STEPS * 65536.0, nn,
                                    XT_MAX_REPLICAS) != r->npart) {
        rc = xt_fail(e, XT_ERUNTIME, "%s: metadata 'xlatrain.partial_epoch' is not two lists of finite numbers of one length; the file is damaged, use another checkpoint", path);
        goto out;
    }
    for (int i = 0; i < r->npart; i++) r->part_loss_n[i] = (long long)nn[i];
    const char *kc = xt_st_meta_get(&f, "xlatrain.kernel_choices");
    free(r->resumed_choices);
    r->resumed_choices = kc && *kc ? strdup(kc) : NULL;
    const char *kisa = xt_st_meta_get(&f, "xlatrain.kernel_choices.isa");
    snprintf(r->resumed_choices_isa, sizeof r->resumed_choices_isa, "%s", kisa ? kisa : "");
    const char *rec = xt_st_meta_get(&f, "xlatrain.resolved_config");
    free(r->resumed_config);
    r->resumed_config = rec && *rec ? strdup(rec) : NULL;
out:
    xt_st_close(&f);
    return rc;
}

/* loop.c — one replica's work, as the seed's train_mnist(): per epoch, train
 * over its shard (trace forward + backward + all-reduce + optimizer as one
 * graph, one barrier per step), then evaluate, log, and (master only) write
 * metrics, checkpoints and curves; at the end, the master's outputs. Run in a
 * forked worker per core, or in-process with one core.
 * Not here: the step's graph (step.c), the evaluation pass (eval.c), the
 * end-of-run files (finish.c), setup and spawning (run.c, train.c). */
#include "run/loop.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/loader.h"
#include "data/sampler.h"
#include "distributed/allreduce.h"
#include "distributed/shm.h"
#include "engine/metrics.h"
#include "io/safetensors.h"
#include "kernels/onednn.h"
#include "run/checkpoint.h"
#include "run/confusion.h"
#include "run/eval.h"
#include "run/finish.h"
#include "run/history.h"
#include "run/log.h"
#include "run/monitor.h"
#include "run/run.h"
#include "run/signals.h"
#include "run/step.h"
#include "run/tb.h"

/* One replica: its engine, its shard's loaders, and its running figures. */
typedef struct worker {
    xt_run *r;
    int rank;               /* global ordinal: xla:N, the data shard, the master (0) */
    int local;              /* this host's worker number: its place in the shared region */
    xt_engine *en;
    xt_sampler sampler;
    xt_loader loader;
    int have_sampler, have_loader;
    xt_eval eval;
    int progress;           /* draw the progress bar (master on a terminal) */
    xt_rate rate;
    double final_loss;      /* of the last training step; NaN before any */
    xt_tb tb;               /* the master's TensorBoard log (tb.h), when logdir is set */
} worker;

/* One epoch's position and loss sums. */
typedef struct epoch_pos {
    int epoch;              /* 0-based */
    long long nb, step;     /* batches in the epoch; batches done (skipped ones included) */
    double loss_sum, lr;
    long long loss_n;
    double seconds;         /* training time of the epoch */
} epoch_pos;

/* The step's all-reduce: the gradients the plan packed into this worker's
 * shared row are averaged, and the mean is left in the shared block, where
 * the step's update reads it (xt_engine_opts.collective_result). */
static int dist_allreduce_row(void *ctx, size_t n, xt_err *e) {
    worker *w = ctx;
    uint64_t t0 = xt_now_ns();
    int rc = xt_allreduce_row(w->r->dist, w->local, n, e) ? 0 : e->code;
    /* the collective's share of the step, across hosts too (make bench, metrics_debug) */
    xt_metric_add("AllReduceTime", XT_UNIT_TIME_NS, (double)(xt_now_ns() - t0));
    return rc;
}

static int stop_requested(const worker *w) {
    return w->r->dist ? xt_dist_should_stop(w->r->dist) : xt_stop_requested();
}

/* Asked for anywhere, agreed on a step or not: what a log line waiting for
 * room on stdout asks (log.h), so that it never holds up the checkpoint. */
static int stop_asked(void *ctx) {
    const worker *w = ctx;
    return w->r->dist ? xt_dist_stop_asked(w->r->dist) : xt_stop_requested();
}

/* ---- setup ---------------------------------------------------------------- */

/* The kernel choices of a graph every worker compiles at once: worker 0's
 * values, the others' zeros, summed in rank order over shared memory (and
 * across hosts through the parent's uplink), so every worker runs worker 0's. */
static int dist_agree(void *ctx, double *v, int n, xt_err *e) {
    worker *w = ctx;
    for (int off = 0; off < n; off += XT_MESH_MAX) {
        int rc = xt_mesh_reduce_sum(w->r->dist, w->local, v + off, n - off < XT_MESH_MAX ? n - off : XT_MESH_MAX, e);
        if (rc) return rc;
    }
    return 0;
}

static int open_engine(worker *w, xt_err *e) {
    xt_run *r = w->r;
    const xt_config *c = r->c;
    openblas_set_num_threads(c->blas_threads > 0 ? c->blas_threads : 1);
    xt_engine_opts eo = {.fuse = 1, .save_graphs_dir = c->save_graphs, .max_compiles = r->cli->max_compiles,
                         .precision = c->precision == XT_PRECISION_BF16 ? XT_PREC_BF16 : XT_PREC_FP32};
    if (r->dist) {
        eo.allreduce_ctx = w;
        eo.collective_buf = xt_dist_grad_row(r->dist, w->local);
        eo.collective_floats = xt_dist_grad_cap(r->dist);
        eo.allreduce_row = dist_allreduce_row;
        eo.collective_result = xt_allreduce_result(r->dist, w->local);
    }
    eo.kernel_choice = c->kernel_choice == 0; /* measured */
    eo.choice_leader = w->rank == 0;
    eo.choice_log = 1;
    const char *skew = getenv("XLATRAIN_CHOICE_TEST_SKEW"); /* tests: synthetic times, worker 0's unlike the others' */
    eo.choice_skew = !skew ? 0 : !strcmp(skew, "1") ? 1 : !strcmp(skew, "last") ? 2 : 0;
    if (r->dist) {
        eo.choice_agree = dist_agree;
        eo.choice_ctx = w;
    }
    w->en = xt_engine_new(&r->store, &eo);
    if (!w->en) return xt_fail(e, XT_ERUNTIME, "out of memory creating the engine");
    r->engine = w->en;
    /* a choice is keyed by the ISA it was made at, so another ISA's (an
     * AVX-512 run's rows kernels, say, resumed under XLATRAIN_ISA=avx2) would
     * never be taken anyway: they are not even loaded, and the log says so */
    char isa[64], reuse[400] = "";
    xt_engine_choice_isa(isa, sizeof isa);
    int other_isa = r->resumed_choices && r->resumed_choices_isa[0] && strcmp(r->resumed_choices_isa, isa);
    if (r->resumed_choices && !other_isa && xt_engine_load_choices(w->en, r->resumed_choices) < 0)
        return xt_fail(e, XT_ERUNTIME, "the checkpoint's xlatrain.kernel_choices is not a list of key=kernel pairs of this "
                       "version; the file is damaged, or set kernel_choice: fixed");
    if (r->resumed_choices && !c->kernel_choice && other_isa)
        snprintf(reuse, sizeof reuse, ", the checkpoint's choices not used: they were made at %s and this run is at %s, so its kernels are chosen again at %s (timed, or from the choice cache)",
                 r->resumed_choices_isa, isa, isa);
    else if (r->resumed_choices && !c->kernel_choice)
        snprintf(reuse, sizeof reuse, ", the checkpoint's choices reused%s",
                 r->resumed_choices_isa[0] ? "" : " where made at this run's ISA (the checkpoint does not record its own)");
    if (w->rank == 0 && r->host == 0)
        fprintf(stderr, "xlatrain: kernel choice %s (%s)%s; candidates include oneDNN %s\n",
                c->kernel_choice ? "fixed" : "measured", c->kernel_choice_from, reuse,
                k_onednn_available() ? k_onednn_version() : "(unavailable: no CPU engine)");
    return 0;
}

static int open_train_loader(worker *w, xt_err *e) {
    xt_run *r = w->r;
    const xt_config *c = r->c;
    if (xt_sampler_init(&w->sampler, r->train.n, r->world, w->rank, c->shuffle, (uint64_t)c->seed, 0, e)) return e->code;
    w->have_sampler = 1;
    xt_loader_opts o;
    xt_loader_opts_defaults(&o);
    o.num_workers = c->num_workers;
    o.prefetch_size = c->loader_prefetch_size;
    o.max_held = c->device_prefetch_size;
    o.seed = (uint64_t)c->seed;
    o.batch_size = c->batch_size;
    o.drop_last = c->drop_last;
    xt_run_augmentation(c, &o.random_crop_padding, &o.random_flip);
    o.random_resized_crop = xt_run_resized_crop(c);
    memcpy(o.resized_scale, c->rrc_scale, sizeof o.resized_scale);
    memcpy(o.resized_ratio, c->rrc_ratio, sizeof o.resized_ratio);
    if (xt_loader_open(&w->loader, &r->train, &w->sampler, &o, e)) return e->code;
    w->have_loader = 1;
    return 0;
}

static int open_worker(worker *w, xt_err *e) {
    int rc;
    if ((rc = open_engine(w, e))) return rc;
    if (w->r->have_train && (rc = open_train_loader(w, e))) return rc;
    if ((rc = xt_eval_open(&w->eval, w->r, w->rank, e))) return rc;
    if (w->rank == 0 && !w->r->cli->eval_only && xt_tb_enabled(w->r->c) && (rc = xt_tb_open(&w->tb, w->r, e))) return rc;
    int tty = xt_progress_enabled(w->r->c); /* in every worker: see log.h */
    w->progress = w->rank == 0 && tty;
    xt_rate_init(&w->rate);
    w->final_loss = NAN;
    return 0;
}

static void close_worker(worker *w) {
    xt_tb_close(&w->tb);
    if (w->have_loader) xt_loader_close(&w->loader);
    xt_eval_close(&w->eval);
    if (w->have_sampler) xt_sampler_free(&w->sampler);
    if (w->en && w->r->engine == w->en) { /* the summary is written after the engine closes */
        free(w->r->kernel_choice_lines);
        w->r->kernel_choice_lines = xt_engine_choice_lines(w->en);
        w->r->engine = NULL;
    }
    xt_engine_free(w->en);
}

/* ---- a training epoch ---------------------------------------------------------- */

/* The next training batch, or NULL at the end of the epoch; the wait is
 * ~0 when the loader keeps up. */
static const xt_batch *next_batch(worker *w) {
    uint64_t t_wait = xt_now_ns();
    const xt_batch *b = xt_loader_next(&w->loader);
    uint64_t waited = xt_now_ns() - t_wait;
    w->r->data_wait_ns += waited;
    if (b) xt_metric_add("DataWaitTime", XT_UNIT_TIME_NS, (double)waited);
    return b;
}

/* Every log_steps steps: the training-update line, and the master's metrics.jsonl line. */
static int log_step(worker *w, const epoch_pos *p, float loss, xt_err *e) {
    xt_run *r = w->r;
    if (r->c->log_steps <= 0 || p->step % r->c->log_steps) return 0;
    double rt = xt_rate_rate(&w->rate);
    xt_log_train_update(w->rank, p->step, loss, rt, xt_rate_global(&w->rate));
    if (w->rank != 0) return 0;
    /* "step" counts within the epoch, as the stdout line and torch_xla's script do */
    if (xt_jsonl_step(r->outdir, p->epoch + 1, p->step, r->global_step, loss, rt, p->lr, e)) return e->code;
    return xt_tb_step(&w->tb, r, loss, p->lr, rt * r->world, e);
}

/* Train on batch b (released here) and account for it. */
static int train_batch(worker *w, epoch_pos *p, const xt_batch *b, xt_err *e) {
    xt_run *r = w->r;
    p->lr = xt_schedule_lr(r->c, r->world, p->epoch, p->step, p->nb);
    float loss = NAN;
    int rc = xt_run_train_step(r, w->en, b, p->lr, &loss, e);
    int n = b->n;
    xt_loader_release(&w->loader, b);
    if (rc) return rc;
    r->global_step++;
    p->step++;
    if (!isfinite(loss))
        return xt_fail(e, XT_ERUNTIME, "xla:%d: loss is %s at epoch %d step %lld (global step %lld); lower learning_rate (now %g) or check the data",
                       w->rank, isnan(loss) ? "NaN" : "Inf", p->epoch + 1, p->step, r->global_step, p->lr);
    p->loss_sum += loss;
    p->loss_n++;
    w->final_loss = loss;
    r->last_loss = loss;
    xt_rate_add(&w->rate, n);
    r->samples_trained += n;
    if (r->dist) xt_dist_heartbeat(r->dist, w->local, r->global_step);
    if ((rc = log_step(w, p, loss, e))) return rc;
    if (w->progress)
        xt_progress(p->epoch + 1, r->c->num_epochs, p->step, p->nb, xt_rate_global(&w->rate) * r->world,
                    (double)r->c->batch_size * r->world);
    return 0;
}

/* Every replica's loss sums so far into r->part_loss_* (the master's copy
 * goes into the checkpoint). Each rank fills only its own slots of a zeroed
 * vector, so the sum over ranks is each value exactly. */
static int gather_partial_loss(worker *w, const epoch_pos *p, xt_err *e) {
    xt_run *r = w->r;
    int world = r->dist ? r->world : 1, per = XT_MESH_MAX / 2;
    r->npart = world;
    for (int base = 0; base < world; base += per) {
        int k = world - base < per ? world - base : per;
        double v[XT_MESH_MAX] = {0};
        if (w->rank >= base && w->rank < base + k) {
            v[2 * (w->rank - base)] = p->loss_sum;
            v[2 * (w->rank - base) + 1] = (double)p->loss_n;
        }
        if (r->dist) {
            int rc = xt_mesh_reduce_sum(r->dist, w->local, v, 2 * k, e);
            if (rc) return rc;
        }
        for (int i = 0; i < k; i++) {
            r->part_loss_sum[base + i] = v[2 * i];
            r->part_loss_n[base + i] = (long long)v[2 * i + 1];
        }
    }
    return 0;
}

/* A stop request mid-epoch: the master checkpoints the position, every replica exits 130. */
static int interrupted_mid_epoch(worker *w, const epoch_pos *p, xt_err *e) {
    xt_run *r = w->r;
    xt_progress_clear();
    int rc = gather_partial_loss(w, p, e);
    if (rc) return rc;
    if (w->rank == 0) {
        rc = xt_ckpt_save(r, p->epoch + 1, p->epoch, p->step, e);
        if (rc) return rc;
    }
    /* said once: main prints it on stderr, results.json carries it as its message */
    return xt_fail(e, XT_EINTR, "interrupted at epoch %d step %lld; checkpoint written to %s (continue with --resume latest --set output_dir=%s)",
                   p->epoch + 1, p->step, r->outdir, r->outdir);
}

/* max_steps or max_time reached after this step: 1 (r->limit_stop says
 * which), 0, or -1 with e set. Every replica must stop at the same step:
 * steps are counted in lockstep, but clocks are read at different moments,
 * so with several workers the time verdict is their reduced sum. */
static int limit_reached(worker *w, xt_err *e) {
    xt_run *r = w->r;
    const xt_config *c = r->c;
    if (c->max_steps > 0 && r->global_step >= c->max_steps) {
        r->limit_stop = XT_STOP_MAX_STEPS;
        return 1;
    }
    if (c->max_time <= 0) return 0;
    double late = (double)(xt_now_ns() - r->t_train0_ns) / 1e9 >= c->max_time;
    if (r->dist && xt_mesh_reduce_sum(r->dist, w->local, &late, 1, e)) return -1;
    if (late > 0) r->limit_stop = XT_STOP_TIME_LIMIT;
    return late > 0;
}

static int train_epoch(worker *w, epoch_pos *p, xt_err *e) {
    xt_run *r = w->r;
    xt_loader_start_epoch(&w->loader, p->epoch);
    p->nb = xt_loader_num_batches(&w->loader);
    uint64_t t_epoch = xt_now_ns();
    if (p->epoch == r->start_epoch && r->start_step_in_epoch > 0 && w->rank < r->npart) {
        /* resumed mid-epoch: the epoch's mean loss also covers the steps before the interrupt */
        p->loss_sum = r->part_loss_sum[w->rank];
        p->loss_n = r->part_loss_n[w->rank];
    }
    const xt_batch *b;
    while ((b = next_batch(w))) {
        if (p->epoch == r->start_epoch && p->step < r->start_step_in_epoch) { /* resumed mid-epoch: these already ran */
            xt_loader_release(&w->loader, b);
            p->step++;
            continue;
        }
        int rc = train_batch(w, p, b, e);
        if (rc) return rc;
        if (stop_requested(w)) { /* the steps so far count in samples_per_sec */
            r->train_ns += xt_now_ns() - t_epoch;
            return interrupted_mid_epoch(w, p, e);
        }
        if ((rc = limit_reached(w, e)) < 0) return e->code;
        if (rc || (r->c->limit_train_batches > 0 && p->step >= r->c->limit_train_batches)) break;
    }
    r->train_ns += xt_now_ns() - t_epoch;
    p->seconds = (double)(xt_now_ns() - t_epoch) / 1e9;
    xt_progress_clear();
    if (w->rank == 0) xt_out("Finished training epoch %d", p->epoch + 1); /* xm.master_print, as torch_xla's script */
    return 0;
}

/* ---- after an epoch ------------------------------------------------------------ */

/* fast_dev_run: the checkpoint just written is read back whole (header,
 * checksum over metadata and data) and must be this model's, so a smoke
 * run proves --resume would find a usable file. */
static int read_back(const xt_run *r, xt_err *e) {
    xt_st_file f;
    if (xt_st_read(r->last_ckpt, &f, e)) return e->code;
    char want[32];
    snprintf(want, sizeof want, "%016llx", (unsigned long long)r->model_hash);
    const char *have = xt_st_meta_get(&f, "xlatrain.model_hash");
    int ok = have && !strcmp(have, want);
    xt_st_close(&f);
    if (!ok) return xt_fail(e, XT_EIO, "%s: read back after writing, it is not this model's checkpoint; check the disk", r->last_ckpt);
    return 0;
}

/* Master-only epoch outputs: metrics line, TensorBoard, curves, checkpoint. */
static int master_epoch_outputs(worker *w, const epoch_pos *p, double loss, double acc, double test_loss, int improved,
                                xt_err *e) {
    xt_run *r = w->r;
    int epoch = p->epoch;
    if (xt_jsonl_epoch(r->outdir, epoch + 1, r->global_step, loss, acc, test_loss, p->lr,
                       xt_wall_s() - (double)r->t_start_ns / 1e9, e))
        return e->code;
    xt_tb_epoch tbe = {.train_loss = loss, .test_accuracy = acc, .test_loss = test_loss, .seconds = p->seconds,
                       .grid = &w->eval.grid};
    if (xt_tb_evaluation(&w->tb, r, &tbe, e)) return e->code;
    if (xt_history_write_curves(r, e)) return e->code;
    int last = epoch + 1 == r->c->num_epochs || r->limit_stop; /* a limit ends the run here */
    int rc = 0;
    if (last || (r->c->checkpoint_every > 0 && (epoch + 1) % r->c->checkpoint_every == 0))
        rc = xt_ckpt_save(r, epoch + 1, epoch + 1, 0, e);
    if (!rc && r->c->fast_dev_run) rc = read_back(r, e);
    /* after the periodic one is in place: the best epoch's copy */
    if (!rc && improved && r->c->keep_best) rc = xt_ckpt_save_best(r, epoch + 1, e);
    return rc;
}

/* Evaluate the shard and print this replica's accuracy. */
static int evaluate_and_log(worker *w, xt_eval_counts *ec, xt_err *e) {
    int rc = xt_eval_run(&w->eval, w->r, w->en, ec, e);
    if (rc) return rc;
    xt_out("[xla:%d] Accuracy=%.2f%%", w->rank, ec->total ? 100.0 * (double)ec->correct / (double)ec->total : 0.0);
    return 0;
}

/* Formatted in memory, then printed as one xt_out (one write, and never
 * holding up a stop); straight to stdout if memory is short. */
static void metrics_debug_report(void) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f) {
        xt_metrics_report(f);
        if (fclose(f) == 0 && text) {
            if (len && text[len - 1] == '\n') text[--len] = 0; /* xt_out ends the line */
            xt_out("%s", text);
            free(text);
            return;
        }
        free(text);
    }
    xt_progress_clear();
    fflush(stdout);
    xt_metrics_report(stdout);
    fflush(stdout);
}

static void record_epoch(xt_run *r, double loss, double acc) {
    if (r->nhist < XT_MAX_EPOCHS) {
        r->hist_loss[r->nhist] = loss;
        r->hist_acc[r->nhist] = acc;
        r->nhist++;
    }
    if (acc > r->best_acc) r->best_acc = acc;
}

/* Every replica evaluates with worker 0's batch-norm running statistics,
 * as PyTorch's DistributedDataParallel gives every replica rank 0's buffers
 * (broadcast_buffers). In training each replica updates its own from its own
 * batches, but only worker 0's are checkpointed; without this, replica k > 0
 * evaluated with statistics no checkpoint holds, and a resumed run evaluated
 * differently from one that ran straight through. Worker 0's statistics are
 * the same in both (it resumes from its own), so overwriting the others'
 * before each evaluation makes the two runs agree bit for bit wherever the
 * interrupt fell (tests/test_run_safety.c). The broadcast is a sum in double
 * to which every other replica adds zeros: exact, and across hosts too. */
static int broadcast_running_stats(worker *w, xt_err *e) {
    xt_run *r = w->r;
    if (!r->dist || r->world <= 1) return 0;
    double v[XT_MESH_MAX];
    for (int i = 0; i < r->model.nbuffers; i++) {
        const xt_slot *s = &r->store.slots[r->model.buffers[i]];
        float *x = s->data;
        for (int64_t at = 0; at < s->numel; at += XT_MESH_MAX) {
            int k = s->numel - at < XT_MESH_MAX ? (int)(s->numel - at) : XT_MESH_MAX;
            for (int j = 0; j < k; j++) v[j] = w->rank == 0 ? (double)x[at + j] : 0.0;
            if (xt_mesh_reduce_sum(r->dist, w->local, v, k, e)) return e->code;
            for (int j = 0; j < k; j++) x[at + j] = (float)v[j];
        }
    }
    return 0;
}

/* Evaluate, reduce accuracy and mean loss over the replicas, record them,
 * and (master) write the epoch's outputs. */
static int end_epoch(worker *w, const epoch_pos *p, xt_err *e) {
    xt_run *r = w->r;
    xt_eval_counts ec;
    int rc = broadcast_running_stats(w, e);
    if (!rc) rc = evaluate_and_log(w, &ec, e);
    if (rc) return rc;
    /* before the mesh-reduce: every replica's report precedes the master's summary line */
    if (r->c->metrics_debug) metrics_debug_report();
    double counts[4] = {(double)ec.correct, (double)ec.total, p->loss_n ? p->loss_sum / (double)p->loss_n : NAN, ec.loss_sum};
    if (r->dist && (rc = xt_mesh_reduce_sum(r->dist, w->local, counts, 4, e))) return rc;
    double gacc = counts[1] > 0 ? 100.0 * counts[0] / counts[1] : 0.0;
    double eloss = counts[2] / (r->dist ? r->world : 1);
    double test_loss = counts[1] > 0 ? counts[3] / counts[1] : NAN;
    if (r->world > 1 && w->rank == 0)
        xt_out("Epoch %d global accuracy=%.2f%% (%.0f/%.0f over %d replicas)", p->epoch + 1, gacc, counts[0], counts[1], r->world);
    record_epoch(r, eloss, gacc);
    /* every replica reaches the same verdict from the same reduced figures */
    int improved = xt_monitor_update(r, gacc, test_loss, p->epoch + 1);
    if (xt_monitor_should_stop(r) && p->epoch + 1 < r->c->num_epochs && !r->limit_stop) r->limit_stop = XT_STOP_EARLY;
    /* the run's last evaluation: its confusion matrix over every shard, for the report;
     * every evaluation's for TensorBoard's per-class recall and matrix image */
    if ((p->epoch + 1 == r->c->num_epochs || r->limit_stop || xt_tb_enabled(r->c)) &&
        (rc = xt_confusion_reduce(r, w->local, w->eval.confusion, e)))
        return rc;
    if (w->rank == 0 && (rc = master_epoch_outputs(w, p, eloss, gacc, test_loss, improved, e))) return rc;
    if (stop_requested(w)) return xt_fail(e, XT_EINTR, "interrupted after epoch %d; checkpoint in %s", p->epoch + 1, r->outdir);
    return 0;
}

static int train_epochs(worker *w, xt_err *e) {
    xt_run *r = w->r;
    r->t_train0_ns = xt_now_ns();
    for (int epoch = r->start_epoch; epoch < r->c->num_epochs && !r->limit_stop; epoch++) {
        epoch_pos p = {.epoch = epoch};
        int rc = train_epoch(w, &p, e);
        if (!rc) rc = end_epoch(w, &p, e);
        if (rc) return rc;
    }
    return 0;
}

/* --eval-only: one evaluation of the resumed checkpoint. */
static int eval_only(worker *w, xt_err *e) {
    xt_run *r = w->r;
    xt_eval_counts ec;
    int rc = xt_eval_run(&w->eval, r, w->en, &ec, e);
    if (rc) return rc;
    long long correct = ec.correct, total = ec.total;
    if ((rc = xt_confusion_reduce(r, w->local, w->eval.confusion, e))) return rc;
    double counts[2] = {(double)correct, (double)total};
    if (r->dist && (rc = xt_mesh_reduce_sum(r->dist, w->local, counts, 2, e))) return rc;
    xt_out("[xla:%d] Accuracy=%.2f%%", w->rank, total ? 100.0 * (double)correct / (double)total : 0.0);
    r->best_acc = counts[1] > 0 ? 100.0 * counts[0] / counts[1] : 0.0;
    /* as after a training epoch: the figure over every replica, once */
    if (r->world > 1 && w->rank == 0)
        xt_out("Global accuracy=%.2f%% (%.0f/%.0f over %d replicas)", r->best_acc, counts[0], counts[1], r->world);
    return 0;
}

/* The master writes the end-of-run outputs; the others only give the verdict. */
static int finish(worker *w, xt_err *e) {
    xt_run *r = w->r;
    const xt_config *c = r->c;
    if (w->rank == 0) return xt_run_finish(r, &w->eval.grid, xt_run_final_loss(r), e);
    if (!r->cli->eval_only && c->target_accuracy > 0 && r->best_acc < c->target_accuracy)
        return xt_fail(e, XT_EBELOW, "best accuracy %.2f%% is below target_accuracy %.2f%%", r->best_acc, c->target_accuracy);
    return 0;
}

int xt_worker_main(int local, void *arg) {
    xt_run *r = arg;
    worker w = {.r = r, .rank = r->rank_offset + local, .local = local};
    xt_err e = {0};
    xt_out_watch_stop(stop_asked, &w);
    int rc = open_worker(&w, &e);
    if (!rc) rc = r->cli->eval_only ? eval_only(&w, &e) : train_epochs(&w, &e);
    if (!rc) rc = finish(&w, &e);
    xt_progress_clear();
    if (r->dist) xt_out_note_dropped(w.rank); /* a forked worker's last word; alone, xt_train_main says it */
    xt_out_watch_stop(NULL, NULL); /* w ends here */
    close_worker(&w);
    if (rc) {
        if (r->dist) xt_dist_report(r->dist, local, &e);
        else r->err = e;
    }
    return rc;
}

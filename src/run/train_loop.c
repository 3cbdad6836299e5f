/* train_loop.c — one replica's work, as the seed's train_mnist(): per epoch,
 * train over its shard (trace forward + backward + all-reduce + optimizer as
 * one graph, one barrier per step), then evaluate, log, and (master only)
 * write metrics, checkpoints and curves. Run in a forked worker per core, or
 * in-process with one core. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/loader.h"
#include "data/sampler.h"
#include "distributed/allreduce.h"
#include "engine/metrics.h"
#include "io/curves.h"
#include "run/train_internal.h"

typedef struct worker {
    xt_run *r;
    int rank;
    xt_engine *en;
    xt_sampler sampler, test_sampler;
    xt_loader loader, test_loader;
    int have_loader, have_test_loader;
    int progress;
} worker;

static int dist_allreduce(void *ctx, float *buf, size_t n, xt_err *e) {
    worker *w = ctx;
    return xt_allreduce(w->r->dist, w->rank, buf, n, e);
}

static int stop_requested(const worker *w) {
    return w->r->dist ? xt_dist_should_stop(w->r->dist) : xt_stop_requested();
}

void xt_run_bind_batch(xt_run *r, const xt_batch *b) {
    const int *in = r->c->spec.input; /* (C, H, W); checked against the data at start */
    int32_t xs[4] = {b->n, in[0], in[1], in[2]};
    xt_store_set_input_shape(&r->store, r->slot_x, 4, xs);
    xt_store_set_input_shape(&r->store, r->slot_y, 1, (int32_t[]){b->n});
    xt_store_bind(&r->store, r->slot_x, b->x);
    xt_store_bind(&r->store, r->slot_y, b->y);
}

/* The model's log-probabilities: a spec that ends in logits gets
 * log_softmax here, so the loss is always cross-entropy. */
xt_t xt_run_trace_logp(xt_run *r, xt_graph *g, int mode) {
    xt_t out = xt_model_forward(&r->model, g, xt_leaf(g, r->slot_x), mode, xt_leaf(g, r->slot_step), (uint64_t)r->c->seed);
    const xt_spec *sp = r->model.spec;
    if (sp->nlayers == 0 || sp->layers[sp->nlayers - 1].kind != XT_L_LOG_SOFTMAX) out = xt_log_softmax(g, out);
    return out;
}

/* One training step: its whole graph, executed at the barrier. */
int xt_run_train_step(xt_run *r, xt_engine *en, const xt_batch *b, double lr, float *loss, xt_err *e) {
    xt_graph *g = xt_engine_graph(en);
    xt_run_bind_batch(r, b);
    *(int32_t *)r->store.slots[r->slot_step].data = (int32_t)r->global_step;
    xt_optim_set_scalars(&r->optim, &r->store, lr);
    xt_t P[XT_MODEL_MAX_PARAMS], G[XT_MODEL_MAX_PARAMS];
    for (int i = 0; i < r->model.nparams; i++) P[i] = xt_leaf(g, r->model.params[i]);
    xt_t l = xt_nll_loss(g, xt_run_trace_logp(r, g, XT_TRAIN), xt_leaf(g, r->slot_y));
    xt_backward(g, l, P, r->model.nparams, G);
    xt_all_reduce(g, G, r->model.nparams);
    xt_optim_trace(&r->optim, g, G);
    xt_fetch(g, l, loss, sizeof *loss);
    int rc = xt_mark_step(en, e);
    if (rc) return rc;
    xt_model_after_train_step(&r->model);
    return 0;
}

static int32_t g_grid_pred[25], g_grid_true[25];
static int64_t g_grid_index[25];
static int g_grid_n;

static int evaluate(worker *w, long long *correct, long long *total, xt_err *e) {
    xt_run *r = w->r;
    *correct = *total = 0;
    static int32_t pred[4096];
    xt_loader_start_epoch(&w->test_loader, 0);
    const xt_batch *b;
    while ((b = xt_loader_next(&w->test_loader))) {
        xt_graph *g = xt_engine_graph(w->en);
        xt_run_bind_batch(r, b);
        xt_fetch(g, xt_argmax(g, xt_run_trace_logp(r, g, XT_EVAL)), pred, (size_t)b->n * 4);
        int rc = xt_mark_step(w->en, e);
        if (rc) {
            xt_loader_release(&w->test_loader, b);
            return rc;
        }
        for (int i = 0; i < b->n; i++) *correct += pred[i] == b->y[i];
        *total += b->n;
        g_grid_n = b->n < 25 ? b->n : 25;
        for (int i = 0; i < g_grid_n; i++) {
            g_grid_pred[i] = pred[i];
            g_grid_true[i] = b->y[i];
            g_grid_index[i] = b->index[i];
        }
        xt_loader_release(&w->test_loader, b);
    }
    return 0;
}

static int open_loaders(worker *w, xt_err *e) {
    xt_run *r = w->r;
    const xt_config *c = r->c;
    xt_loader_opts o;
    xt_loader_opts_defaults(&o);
    o.num_workers = c->num_workers;
    o.prefetch_size = c->loader_prefetch_size;
    o.max_held = c->device_prefetch_size;
    o.seed = (uint64_t)c->seed;
    if (r->have_train) {
        if (xt_sampler_init(&w->sampler, r->train.n, r->world, w->rank, c->shuffle, (uint64_t)c->seed, 0, e)) return e->code;
        o.batch_size = c->batch_size;
        o.drop_last = c->drop_last;
        o.random_crop_padding = c->random_crop_padding;
        if (xt_loader_open(&w->loader, &r->train, &w->sampler, &o, e)) return e->code;
        w->have_loader = 1;
    }
    if (xt_sampler_init(&w->test_sampler, r->test.n, r->world, w->rank, 0, (uint64_t)c->seed, 0, e)) return e->code;
    o.batch_size = c->test_batch_size < 4096 ? c->test_batch_size : 4096;
    o.prefetch_size = 2; /* evaluation is a short burst: 3 large batches in flight are plenty */
    o.max_held = 1;
    o.drop_last = 0;
    o.random_crop_padding = 0;
    if (xt_loader_open(&w->test_loader, &r->test, &w->test_sampler, &o, e)) return e->code;
    w->have_test_loader = 1;
    return 0;
}

static void close_worker(worker *w) {
    if (w->have_loader) xt_loader_close(&w->loader);
    if (w->have_test_loader) xt_loader_close(&w->test_loader);
    if (w->r->have_train) xt_sampler_free(&w->sampler);
    xt_sampler_free(&w->test_sampler);
    xt_engine_free(w->en);
}

/* Master-only epoch outputs: metrics line, curves, checkpoint. */
static int master_epoch_outputs(worker *w, int epoch, double loss, double acc, double lr, xt_err *e) {
    xt_run *r = w->r;
    char line[512];
    snprintf(line, sizeof line, "{\"type\":\"epoch\",\"epoch\":%d,\"step\":%lld,\"loss\":%.6g,\"accuracy\":%.4f,\"lr\":%.6g,\"time\":%.3f}",
             epoch + 1, r->global_step, loss, acc, lr, xt_wall_s() - (double)r->t_start_ns / 1e9);
    if (xt_append_jsonl(r, line, e)) return e->code;
    char path[700];
    snprintf(path, sizeof path, "%s/curves.png", r->outdir);
    if (xt_curves_write(path, r->hist_loss, r->hist_acc, r->nhist, e)) return e->code;
    int last = epoch + 1 == r->c->num_epochs;
    if (r->c->checkpoint_every > 0 && ((epoch + 1) % r->c->checkpoint_every == 0 || last))
        return xt_ckpt_save(r, epoch + 1, epoch + 1, 0, e);
    if (last) return xt_ckpt_save(r, epoch + 1, epoch + 1, 0, e);
    return 0;
}

static int fail_report(worker *w, int rc, xt_err *e) {
    if (w->r->dist) xt_dist_report(w->r->dist, w->rank, e);
    return rc;
}

int xt_worker_main(int rank, void *arg) {
    xt_run *r = arg;
    const xt_config *c = r->c;
    worker w = {.r = r, .rank = rank};
    xt_err e = {0};
    int rc = 0;
    openblas_set_num_threads(c->blas_threads > 0 ? c->blas_threads : 1);
    xt_engine_opts eo = {.fuse = 1, .save_graphs_dir = c->save_graphs};
    if (r->dist) {
        eo.allreduce = dist_allreduce;
        eo.allreduce_ctx = &w;
        eo.collective_buf = xt_dist_grad_row(r->dist, rank);
        eo.collective_floats = xt_dist_grad_cap(r->dist);
    }
    w.en = xt_engine_new(&r->store, &eo);
    if (!w.en) return fail_report(&w, xt_fail(&e, XT_ERUNTIME, "out of memory creating the engine"), &e);
    if ((rc = open_loaders(&w, &e))) goto out;
    w.progress = rank == 0 && xt_progress_enabled(c);

    xt_rate rate;
    xt_rate_init(&rate);
    double final_loss = NAN;
    for (int epoch = r->start_epoch; epoch < c->num_epochs && !r->cli->eval_only; epoch++) {
        xt_loader_start_epoch(&w.loader, epoch);
        long long nb = xt_loader_num_batches(&w.loader), step = 0;
        double loss_sum = 0, lr = 0;
        long long loss_n = 0;
        const xt_batch *b;
        uint64_t t_epoch = xt_now_ns();
        for (;;) {
            uint64_t t_wait = xt_now_ns(); /* time the step waits for data: ~0 when the loader keeps up */
            b = xt_loader_next(&w.loader);
            uint64_t waited = xt_now_ns() - t_wait;
            r->data_wait_ns += waited;
            if (!b) break;
            xt_metric_add("DataWaitTime", XT_UNIT_TIME_NS, (double)waited);
            if (epoch == r->start_epoch && step < r->start_step_in_epoch) { /* resumed mid-epoch: these already ran */
                xt_loader_release(&w.loader, b);
                step++;
                continue;
            }
            lr = xt_schedule_lr(c, r->world, epoch, step, nb);
            float loss = NAN;
            rc = xt_run_train_step(r, w.en, b, lr, &loss, &e);
            int n = b->n;
            xt_loader_release(&w.loader, b);
            if (rc) goto out;
            r->global_step++;
            step++;
            if (!isfinite(loss)) {
                rc = xt_fail(&e, XT_ERUNTIME, "xla:%d: loss is %s at epoch %d step %lld (global step %lld); lower learning_rate (now %g) or check the data",
                             rank, isnan(loss) ? "NaN" : "Inf", epoch + 1, step, r->global_step, lr);
                goto out;
            }
            loss_sum += loss;
            loss_n++;
            final_loss = loss;
            xt_rate_add(&rate, n);
            r->samples_trained += n;
            if (r->dist) xt_dist_heartbeat(r->dist, rank, r->global_step);
            if (c->log_steps > 0 && step % c->log_steps == 0) {
                double rt = xt_rate_rate(&rate);
                xt_log_train_update(rank, step, loss, rt, xt_rate_global(&rate));
                if (rank == 0) {
                    char line[300];
                    snprintf(line, sizeof line, "{\"type\":\"step\",\"epoch\":%d,\"step\":%lld,\"loss\":%.6g,\"rate\":%.2f,\"lr\":%.6g}",
                             epoch + 1, r->global_step, loss, rt, lr);
                    if ((rc = xt_append_jsonl(r, line, &e))) goto out;
                }
            }
            if (w.progress) xt_progress(epoch + 1, c->num_epochs, step, nb, xt_rate_global(&rate) * r->world);
            if (stop_requested(&w)) {
                xt_progress_clear();
                if (rank == 0) {
                    if ((rc = xt_ckpt_save(r, epoch + 1, epoch, step, &e))) goto out;
                    xt_out("xlatrain: interrupted at epoch %d step %lld; checkpoint written to %s (continue with --resume latest)", epoch + 1, step, r->outdir);
                }
                rc = xt_fail(&e, XT_EINTR, "interrupted at epoch %d step %lld; checkpoint in %s", epoch + 1, step, r->outdir);
                goto out;
            }
        }
        r->train_ns += xt_now_ns() - t_epoch;
        xt_progress_clear();
        xt_out("Finished training epoch %d", epoch + 1);

        long long correct, total;
        if ((rc = evaluate(&w, &correct, &total, &e))) goto out;
        double acc = total ? 100.0 * (double)correct / (double)total : 0.0;
        xt_out("[xla:%d] Accuracy=%.2f%%", rank, acc);
        if (c->metrics_debug) { /* before the mesh-reduce: every replica's report precedes the master's summary line */
            xt_progress_clear();
            fflush(stdout);
            xt_metrics_report(stdout);
            fflush(stdout);
        }
        double counts[3] = {(double)correct, (double)total, loss_n ? loss_sum / (double)loss_n : NAN};
        if (r->dist && (rc = xt_mesh_reduce_sum(r->dist, rank, counts, 3, &e))) goto out;
        double gacc = counts[1] > 0 ? 100.0 * counts[0] / counts[1] : 0.0;
        double eloss = counts[2] / (r->dist ? r->world : 1);
        if (r->world > 1 && rank == 0)
            xt_out("Epoch %d global accuracy=%.2f%% (%.0f/%.0f over %d replicas)", epoch + 1, gacc, counts[0], counts[1], r->world);
        if (r->nhist < XT_MAX_EPOCHS) {
            r->hist_loss[r->nhist] = eloss;
            r->hist_acc[r->nhist] = gacc;
            r->nhist++;
        }
        if (gacc > r->best_acc) r->best_acc = gacc;
        if (rank == 0 && (rc = master_epoch_outputs(&w, epoch, eloss, gacc, lr, &e))) goto out;
        if (stop_requested(&w)) {
            rc = xt_fail(&e, XT_EINTR, "interrupted after epoch %d; checkpoint in %s", epoch + 1, r->outdir);
            goto out;
        }
    }
    if (r->cli->eval_only) { /* --eval-only: one evaluation of the resumed checkpoint */
        long long correct, total;
        if ((rc = evaluate(&w, &correct, &total, &e))) goto out;
        double counts[2] = {(double)correct, (double)total};
        if (r->dist && (rc = xt_mesh_reduce_sum(r->dist, rank, counts, 2, &e))) goto out;
        xt_out("[xla:%d] Accuracy=%.2f%%", rank, total ? 100.0 * (double)correct / (double)total : 0.0);
        r->best_acc = counts[1] > 0 ? 100.0 * counts[0] / counts[1] : 0.0;
    }
    if (rank == 0) {
        rc = xt_run_finish(r, g_grid_pred, g_grid_true, g_grid_index, g_grid_n, final_loss, &e);
    } else if (c->target_accuracy > 0 && r->best_acc < c->target_accuracy) {
        rc = xt_fail(&e, XT_EBELOW, "best accuracy %.2f%% is below target_accuracy %.2f%%", r->best_acc, c->target_accuracy);
    }
out:
    xt_progress_clear();
    close_worker(&w);
    if (rc) {
        if (r->dist) {
            xt_dist_report(r->dist, rank, &e);
        } else {
            r->err = e;
        }
    }
    return rc;
}

/* eval.c — one replica's evaluation: its shard of the test set in batches of
 * test_batch_size, the model traced in eval mode to the argmax class, the
 * correct/total counts, and the last batch's first samples for the
 * predictions grid. Not here: reducing over replicas (loop.c). */
#include "run/eval.h"

#include <stdlib.h>
#include <string.h>

#include "run/step.h"

int xt_eval_open(xt_eval *ev, const xt_run *r, int rank, xt_err *e) {
    const xt_config *c = r->c;
    memset(ev, 0, sizeof *ev);
    ev->pred = malloc((size_t)c->test_batch_size * sizeof *ev->pred);
    if (!ev->pred) return xt_fail(e, XT_ERUNTIME, "out of memory for a test batch of %d", c->test_batch_size);
    if (xt_sampler_init(&ev->sampler, r->test.n, r->world, rank, 0, (uint64_t)c->seed, 0, e)) return e->code;
    ev->have_sampler = 1;
    xt_loader_opts o;
    xt_loader_opts_defaults(&o);
    o.num_workers = c->num_workers;
    o.seed = (uint64_t)c->seed;
    o.batch_size = c->test_batch_size;
    o.prefetch_size = 2; /* evaluation is a short burst: 3 large batches in flight are plenty */
    o.max_held = 1;
    o.drop_last = 0;
    o.random_crop_padding = 0;
    if (xt_loader_open(&ev->loader, &r->test, &ev->sampler, &o, e)) return e->code;
    ev->have_loader = 1;
    return 0;
}

static void keep_grid_samples(xt_grid_samples *gs, const int32_t *pred, const xt_batch *b) {
    gs->n = b->n < XT_GRID_MAX ? b->n : XT_GRID_MAX;
    for (int i = 0; i < gs->n; i++) {
        gs->pred[i] = pred[i];
        gs->truth[i] = b->y[i];
        gs->index[i] = b->index[i];
    }
}

int xt_eval_run(xt_eval *ev, xt_run *r, xt_engine *en, long long *correct, long long *total, xt_err *e) {
    *correct = *total = 0;
    xt_loader_start_epoch(&ev->loader, 0);
    const xt_batch *b;
    while ((b = xt_loader_next(&ev->loader))) {
        xt_graph *g = xt_engine_graph(en);
        xt_run_bind_batch(r, b);
        xt_fetch(g, xt_argmax(g, xt_run_trace_logp(r, g, XT_EVAL)), ev->pred, (size_t)b->n * sizeof *ev->pred);
        int rc = xt_mark_step(en, e);
        if (rc) {
            xt_loader_release(&ev->loader, b);
            return rc;
        }
        for (int i = 0; i < b->n; i++) *correct += ev->pred[i] == b->y[i];
        *total += b->n;
        keep_grid_samples(&ev->grid, ev->pred, b);
        xt_loader_release(&ev->loader, b);
    }
    return 0;
}

void xt_eval_close(xt_eval *ev) {
    if (ev->have_loader) xt_loader_close(&ev->loader);
    if (ev->have_sampler) xt_sampler_free(&ev->sampler);
    free(ev->pred);
    ev->pred = NULL;
    ev->have_loader = ev->have_sampler = 0;
}

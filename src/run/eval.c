/* eval.c — one replica's evaluation: its shard of the test set in batches of
 * test_batch_size, the model traced in eval mode to the argmax class, the
 * correct/total counts, and the last batch's first samples for the
 * predictions grid. Not here: reducing over replicas (loop.c).
 *
 * A large test batch runs through the model in chunks (ev->chunk images,
 * at most XT_EVAL_CHUNK_MAX, an equal divisor of test_batch_size where one
 * exists): evaluation is per sample (batch-norm uses its running statistics,
 * dropout is off), so the predictions are those of one big batch, while the
 * activations of one chunk, not of the whole batch, set the memory peak
 * (wide_cnn's conv2 output alone is 147 MB at 1000 images). A chunk's
 * arithmetic per image is the same as in a whole batch except where a
 * kernel takes a different path for a different remainder of images (the
 * direct convolution runs 16 images at a time): the rounding of those
 * images' scores may then differ in the last bit, not their classes in
 * practice.
 *
 * Every evaluation step has the same shape, so evaluation compiles one
 * graph whatever the test-set size and worker count: the chunk is at most
 * the replica's shard, and a last chunk that falls short is padded to it
 * (zero images, what torch_xla users do by hand) and masked out: only its
 * real images' predictions are kept and counted. The test loss (when the
 * monitor wants it) is summed here over the real images from the fetched
 * log-probabilities, so padded or not the graph is the same. */
#include "run/eval.h"

#include <stdlib.h>
#include <string.h>

#include "run/step.h"
#include "util/check.h"

/* The largest divisor of the test batch up to XT_EVAL_CHUNK_MAX, so that a
 * full test batch splits into equal chunks (one compiled graph); a batch
 * with no divisor of at least half the maximum gets the maximum. */
static int chunk_for(int test_batch) {
    if (test_batch <= XT_EVAL_CHUNK_MAX) return test_batch;
    for (int c = XT_EVAL_CHUNK_MAX; c >= XT_EVAL_CHUNK_MAX / 2; c--)
        if (test_batch % c == 0) return c;
    return XT_EVAL_CHUNK_MAX;
}

int xt_eval_open(xt_eval *ev, const xt_run *r, int rank, xt_err *e) {
    const xt_config *c = r->c;
    memset(ev, 0, sizeof *ev);
    ev->chunk = chunk_for(c->test_batch_size);
    /* a shard smaller than a chunk is evaluated whole, unpadded */
    int64_t shard = (r->test.n + r->world - 1) / r->world;
    if (shard >= 1 && shard < ev->chunk) ev->chunk = (int)shard;
    ev->pred = malloc((size_t)c->test_batch_size * sizeof *ev->pred);
    if (!ev->pred) return xt_fail(e, XT_ERUNTIME, "out of memory for a test batch of %d", c->test_batch_size);
    ev->classes = c->spec.num_classes;
    ev->confusion = calloc((size_t)ev->classes * (size_t)ev->classes, sizeof *ev->confusion);
    if (!ev->confusion) return xt_fail(e, XT_ERUNTIME, "out of memory for a %dx%d confusion matrix", ev->classes, ev->classes);
    const int *in = c->spec.input;
    size_t image = (size_t)in[0] * in[1] * in[2];
    ev->pad_x = calloc((size_t)ev->chunk * image, sizeof *ev->pad_x);
    ev->pad_y = calloc((size_t)ev->chunk, sizeof *ev->pad_y);
    ev->pad_pred = malloc((size_t)ev->chunk * sizeof *ev->pad_pred);
    ev->pad_logp = malloc((size_t)ev->chunk * (size_t)ev->classes * sizeof *ev->pad_logp);
    if (!ev->pad_x || !ev->pad_y || !ev->pad_pred || !ev->pad_logp)
        return xt_fail(e, XT_ERUNTIME, "out of memory for an evaluation chunk of %d", ev->chunk);
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
    o.random_crop_padding = 0; /* evaluation sees the images as they are */
    o.random_flip = 0;
    if (xt_loader_open(&ev->loader, &r->test, &ev->sampler, &o, e)) return e->code;
    ev->have_loader = 1;
    return 0;
}

/* The grid's samples, spread evenly over the batch rather than its first
 * ones: a test set stored class by class (a folder dataset, as torchvision's
 * ImageFolder orders it) would otherwise show one class only. */
static void keep_grid_samples(xt_grid_samples *gs, const int32_t *pred, const xt_batch *b) {
    gs->n = b->n < XT_GRID_MAX ? b->n : XT_GRID_MAX;
    for (int i = 0; i < gs->n; i++) {
        int j = (int)((long long)i * b->n / gs->n);
        gs->pred[i] = pred[j];
        gs->truth[i] = b->y[j];
        gs->index[i] = b->index[j];
    }
}

/* Predict images [off, off + n) of batch b into ev->pred[off ...], and
 * add their summed loss to *loss_sum when the monitor needs it. Fewer than
 * a chunk are padded to it (one compiled shape) and the padding masked out. */
static int predict_chunk(xt_eval *ev, xt_run *r, xt_engine *en, const xt_batch *b, int off, int n, double *loss_sum, xt_err *e) {
    const int *in = r->c->spec.input;
    size_t image = (size_t)in[0] * in[1] * in[2];
    int padded = n < ev->chunk, K = ev->classes;
    xt_batch part = *b;
    part.n = n;
    part.x = b->x + (size_t)off * image;
    part.y = b->y + off;
    part.index = b->index ? b->index + off : NULL;
    if (padded) { /* the padding rows stay zero images of class 0 */
        memcpy(ev->pad_x, part.x, (size_t)n * image * sizeof *ev->pad_x);
        memset(ev->pad_x + (size_t)n * image, 0, (size_t)(ev->chunk - n) * image * sizeof *ev->pad_x);
        memcpy(ev->pad_y, part.y, (size_t)n * sizeof *ev->pad_y);
        memset(ev->pad_y + n, 0, (size_t)(ev->chunk - n) * sizeof *ev->pad_y);
        part.n = ev->chunk;
        part.x = ev->pad_x;
        part.y = ev->pad_y;
        part.index = NULL;
    }
    xt_engine_set_label(en, "evaluation");
    xt_graph *g = xt_engine_graph(en);
    xt_run_bind_batch(r, &part);
    xt_t logp = xt_run_trace_logp(r, g, XT_EVAL);
    xt_fetch(g, xt_argmax(g, logp), padded ? ev->pad_pred : ev->pred + off, (size_t)part.n * sizeof *ev->pred);
    /* the same graph padded or not: the loss is summed here, over the real images */
    xt_fetch(g, logp, ev->pad_logp, (size_t)part.n * (size_t)K * sizeof *ev->pad_logp);
    int rc = xt_mark_step(en, e);
    if (rc) return rc;
    if (padded) memcpy(ev->pred + off, ev->pad_pred, (size_t)n * sizeof *ev->pred);
    for (int i = 0; i < n; i++) /* a label out of range fails the run's check in xt_eval_run */
        if (part.y[i] >= 0 && part.y[i] < K) *loss_sum -= (double)ev->pad_logp[(size_t)i * K + (size_t)part.y[i]];
    return 0;
}

int xt_eval_run(xt_eval *ev, xt_run *r, xt_engine *en, xt_eval_counts *out, xt_err *e) {
    *out = (xt_eval_counts){0};
    memset(ev->confusion, 0, (size_t)ev->classes * (size_t)ev->classes * sizeof *ev->confusion);
    xt_loader_start_epoch(&ev->loader, 0);
    const xt_batch *b;
    int limit = r->c->limit_test_batches, nb = 0;
    while ((limit <= 0 || nb++ < limit) && (b = xt_loader_next(&ev->loader))) {
        int rc = 0;
        for (int off = 0; off < b->n && !rc; off += ev->chunk)
            rc = predict_chunk(ev, r, en, b, off, b->n - off < ev->chunk ? b->n - off : ev->chunk, &out->loss_sum, e);
        if (rc) {
            xt_loader_release(&ev->loader, b);
            return rc;
        }
        for (int i = 0; i < b->n; i++) {
            out->correct += ev->pred[i] == b->y[i];
            XT_CHECK(b->y[i] >= 0 && b->y[i] < ev->classes && ev->pred[i] >= 0 && ev->pred[i] < ev->classes);
            ev->confusion[(size_t)b->y[i] * (size_t)ev->classes + (size_t)ev->pred[i]]++;
        }
        out->total += b->n;
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
    free(ev->confusion);
    ev->confusion = NULL;
    free(ev->pad_x);
    free(ev->pad_y);
    free(ev->pad_pred);
    free(ev->pad_logp);
    ev->pad_x = ev->pad_logp = NULL;
    ev->pad_y = ev->pad_pred = NULL;
    ev->have_loader = ev->have_sampler = 0;
}

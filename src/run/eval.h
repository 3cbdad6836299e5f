/* eval.h — one replica's evaluation over its shard of the test set: the
 * test loader, a prediction buffer sized by test_batch_size when the worker
 * is set up, the correct/total counts, and the samples the predictions grid
 * shows. Not here: reducing the counts over replicas or logging them
 * (loop.c), drawing the grid (finish.c). */
#ifndef XT_RUN_EVAL_H
#define XT_RUN_EVAL_H

#include <stdint.h>

#include "data/loader.h"
#include "data/sampler.h"
#include "engine/graph.h"
#include "io/grid.h"
#include "run/run.h"
#include "util/err.h"

/* The last test batch's first n (<= XT_GRID_MAX) samples, for predictions.png. */
typedef struct xt_grid_samples {
    int32_t pred[XT_GRID_MAX], truth[XT_GRID_MAX];
    int64_t index[XT_GRID_MAX];     /* into the test set */
    int n;
} xt_grid_samples;

/* The most images one evaluation step runs at once: the training rate is
 * flat from 16 to 256 images on these CPUs, and 256 keeps wide_cnn's
 * evaluation arena under its training arena. */
#define XT_EVAL_CHUNK_MAX 256

/* One evaluation pass over a replica's shard. */
typedef struct xt_eval_counts {
    long long correct, total;
    double loss_sum;                /* summed per-sample NLL when the monitor is test_loss, else 0 */
} xt_eval_counts;

typedef struct xt_eval {
    xt_sampler sampler;
    xt_loader loader;
    int have_sampler, have_loader;
    int32_t *pred;                  /* (test_batch_size) predicted classes of a batch */
    int chunk;                      /* images per evaluation step: its one compiled shape (see eval.c) */
    float *pad_x;                   /* (chunk x image) a short last chunk padded to the shape */
    int32_t *pad_y, *pad_pred;      /* (chunk) its labels (padding: 0) and predictions */
    float *pad_logp;                /* (chunk x classes) a chunk's log-probabilities: every evaluation logs its test loss */
    long long *confusion;           /* (classes^2) this shard's [true][predicted] counts of the last pass */
    int classes;
    xt_grid_samples grid;
} xt_eval;

/* Open replica `rank`'s test loader and size its buffers from the config.
 * Call xt_eval_close afterwards whatever this returns. */
int xt_eval_open(xt_eval *ev, const xt_run *r, int rank, xt_err *e);
/* Evaluate r's model on the shard (at most limit_test_batches batches). */
int xt_eval_run(xt_eval *ev, xt_run *r, xt_engine *en, xt_eval_counts *out, xt_err *e);
void xt_eval_close(xt_eval *ev);

#endif

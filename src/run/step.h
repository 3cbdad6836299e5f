/* step.h — what one step of a run traces, shared by training, evaluation and
 * prediction: point the input slots at a batch, trace the model to
 * log-probabilities, and one whole training step (forward, backward,
 * all-reduce and update as one graph, run at its barrier).
 * Not here: the loops around them (loop.c, eval.c, predict.c). */
#ifndef XT_RUN_STEP_H
#define XT_RUN_STEP_H

#include "data/loader.h"
#include "engine/graph.h"
#include "run/run.h"
#include "util/err.h"

/* Point the image input slot at x: n images of the model's input shape
 * [C, H, W] (the run checks it against the data when it opens them). */
void xt_run_bind_images(xt_run *r, float *x, int n);
/* Point the input slots at batch b (shape follows b->n). */
void xt_run_bind_batch(xt_run *r, const xt_batch *b);
/* Trace the model to log-probabilities (log_softmax added if the spec ends in logits). */
xt_t xt_run_trace_logp(xt_run *r, xt_graph *g, int mode);
/* One training step of batch b at learning rate lr: forward, backward,
 * all-reduce and update as one graph, run at its barrier. */
int xt_run_train_step(xt_run *r, xt_engine *en, const xt_batch *b, double lr, float *loss, xt_err *e);

#endif

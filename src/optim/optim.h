/* optim.h — optimizers as graph builders, and learning-rate schedules.
 *
 * The update of every parameter is traced into the step's graph after the
 * gradient all-reduce, so it is compiled with the rest of the step, fused
 * into one pass per parameter, and written in place. Per-step scalars (the
 * learning rate, Adam's bias corrections) are scalar slots the host sets
 * before the step: changing them never recompiles.
 *
 * Semantics follow torch.optim exactly:
 *  SGD:   g += wd*w; buf = momentum*buf + g (buf starts at 0, which equals
 *         PyTorch's clone-on-first-step with dampening 0); d = nesterov ?
 *         g + momentum*buf : buf (plain g when momentum is 0); w -= lr*d
 *  Adam:  g += wd*w; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 *         w -= (lr/bc1) * m / (sqrt(v)/sqrt(bc2) + eps), bc_i = 1 - b_i^t
 *  AdamW: w *= 1 - lr*wd, then Adam without the L2 term.
 */
#ifndef XT_OPTIM_H
#define XT_OPTIM_H

#include "config/config.h"
#include "engine/graph.h"
#include "nn/model.h"

typedef struct xt_optim {
    xt_optim_kind kind;
    float momentum, weight_decay, beta1, beta2, eps;
    int nesterov;
    int nparams;
    int params[XT_MODEL_MAX_PARAMS];
    int state1[XT_MODEL_MAX_PARAMS];  /* SGD momentum_buffer / Adam exp_avg */
    int state2[XT_MODEL_MAX_PARAMS];  /* Adam exp_avg_sq; -1 for SGD */
    int lr_slot;                      /* scalar: lr (SGD), lr/bc1 (Adam) */
    int aux_slot;                     /* Adam/AdamW: 1/sqrt(bc2) */
    int decay_slot;                   /* AdamW: 1 - lr*wd */
    long long steps;                  /* optimizer steps taken (Adam's t) */
} xt_optim;

/* Declare the optimizer's state slots ("optim.<state>.<param name>"). */
int xt_optim_declare(xt_optim *o, const xt_config *c, const xt_model *m, xt_store *store, xt_err *e);
/* Trace the update of every parameter given its (all-reduced) gradient. */
void xt_optim_trace(const xt_optim *o, xt_graph *g, const xt_t *grads);
/* Before a step: write this step's scalars for learning rate `lr`. */
void xt_optim_set_scalars(xt_optim *o, xt_store *store, double lr);

/* Learning rate for a step: base lr (times world size when
 * scale_lr_by_world_size), the schedule per epoch (constant, step:
 * gamma^(epoch/step_size), cosine: 0.5(1+cos(pi*epoch/num_epochs))) and a
 * linear warm-up over the first warmup_epochs (per step). epoch is 0-based. */
double xt_schedule_lr(const xt_config *c, int world, int epoch, long long step_in_epoch, long long steps_per_epoch);

#endif

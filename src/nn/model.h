/* model.h — a network from a layer spec: its device-data slots (parameters
 * and buffers, named as PyTorch's state_dict) and a forward function that
 * traces the layers into the lazy graph.
 *
 *   xt_model m; xt_model_declare(&m, &spec, &store, &err);   // slots
 *   xt_store_finalize(&store, &err); xt_model_init(&m, &store, seed);
 *   xt_t logp = xt_model_forward(&m, g, x, XT_TRAIN, step_leaf, seed);
 */
#ifndef XT_NN_MODEL_H
#define XT_NN_MODEL_H

#include "engine/graph.h"
#include "config/spec.h"

/* Every layer has at most 2 parameter tensors (weight, bias) and 2 buffers
 * (running mean, variance), and the spec reader refuses more than
 * XT_SPEC_MAX_LAYERS layers with a file:line:col message, so a valid spec
 * always fits: this bound is never the one a user meets. */
#define XT_MODEL_MAX_PARAMS (2 * XT_SPEC_MAX_LAYERS)

enum { XT_EVAL = 0, XT_TRAIN = 1 };

typedef struct xt_layer_slots {
    int weight, bias;              /* conv/linear/bn; -1 when absent */
    int running_mean, running_var; /* bn buffers; -1 otherwise */
    long long num_batches_tracked; /* bn: host counter, saved in checkpoints as int64 */
} xt_layer_slots;

typedef struct xt_model {
    const xt_spec *spec;
    xt_layer_slots *layers;        /* per spec layer */
    int nparams;
    int params[XT_MODEL_MAX_PARAMS];   /* trainable slots, state_dict order */
    int nbuffers;
    int buffers[XT_MODEL_MAX_PARAMS];  /* BN running stats */
} xt_model;

/* Declare every layer's slots in `store` (before xt_store_finalize). */
int xt_model_declare(xt_model *m, const xt_spec *spec, xt_store *store, xt_err *e);
/* PyTorch's default initialisation from `seed`: conv/linear weights
 * kaiming_uniform(a=sqrt(5)) i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)), biases
 * the same bound; BN weight 1, bias 0, running mean 0, running var 1. */
void xt_model_init(xt_model *m, xt_store *store, uint64_t seed);
/* Trace the forward pass of batch `x` (N, C, H, W). In training mode BN uses
 * batch statistics and records the running-stat updates as assigns, and
 * dropout draws masks from (seed, step leaf, layer). Returns the last
 * layer's output. */
xt_t xt_model_forward(xt_model *m, xt_graph *g, xt_t x, int mode, xt_t step, uint64_t seed);
/* Called after a training step ran: BN num_batches_tracked += 1. */
void xt_model_after_train_step(xt_model *m);
void xt_model_free(xt_model *m);

#endif

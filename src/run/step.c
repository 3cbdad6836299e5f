/* step.c — one step's graph: bind the batch to the input slots, trace the
 * model to log-probabilities, and (training) add the loss, backward pass,
 * all-reduce and optimizer update, then run it at the step's barrier.
 * Not here: batches, epochs or what is done with the results (loop.c,
 * eval.c, predict.c). */
#include "run/step.h"

void xt_run_bind_images(xt_run *r, float *x, int n) {
    const int *in = r->c->spec.input; /* (C, H, W), checked against the data at start */
    xt_store_set_input_shape(&r->store, r->slot_x, 4, (int32_t[]){n, in[0], in[1], in[2]});
    xt_store_bind(&r->store, r->slot_x, x);
}

void xt_run_bind_batch(xt_run *r, const xt_batch *b) {
    xt_run_bind_images(r, b->x, b->n);
    xt_store_set_input_shape(&r->store, r->slot_y, 1, (int32_t[]){b->n});
    xt_store_bind(&r->store, r->slot_y, b->y);
}

/* The model's log-probabilities: a spec that ends in logits gets
 * log_softmax here, so the loss is always cross-entropy. */
xt_t xt_run_trace_logp(xt_run *r, xt_graph *g, int mode) {
    xt_t out = xt_model_forward(&r->model, g, xt_leaf(g, r->slot_x), mode, xt_leaf(g, r->slot_step), (uint64_t)r->c->seed);
    const xt_spec *sp = r->model.spec;
    if (sp->nlayers == 0 || xt_spec_last(sp)->kind != XT_L_LOG_SOFTMAX) out = xt_log_softmax(g, out);
    return out;
}

/* CrossEntropyLoss(label_smoothing=eps) over log-probabilities: the
 * target's NLL weighted 1 - eps, plus eps times the mean over classes of
 * -logp, each averaged over the batch: (1 - eps) * nll - eps * mean(logp). */
static xt_t training_loss(const xt_run *r, xt_graph *g, xt_t labels, xt_t logp) {
    xt_t nll = xt_nll_loss(g, logp, labels);
    double eps = r->c->label_smoothing;
    if (eps <= 0) return nll;
    return xt_sub(g, xt_mul(g, nll, xt_const(g, (float)(1.0 - eps))), xt_mul(g, xt_mean_all(g, logp), xt_const(g, (float)eps)));
}

/* torch.nn.utils.clip_grad_norm_ over the all-reduced gradients: their
 * global L2 norm n, and every gradient times min(1, max_norm / (n + 1e-6)).
 * The min is c - relu(c - 1), which is c itself for c <= 1 and exactly 1
 * for 1 < c < 2^24 (no min op in the graph). */
static void clip_grad_norm(xt_graph *g, xt_t *G, int n, double max_norm) {
    xt_t sq = XT_NONE;
    for (int i = 0; i < n; i++) {
        xt_t s = xt_sum_all(g, xt_square(g, G[i]));
        sq = i ? xt_add(g, sq, s) : s;
    }
    xt_t coef = xt_div(g, xt_const(g, (float)max_norm), xt_add(g, xt_sqrt(g, sq), xt_const(g, 1e-6f)));
    xt_t clamped = xt_sub(g, coef, xt_relu(g, xt_sub(g, coef, xt_const(g, 1.0f))));
    for (int i = 0; i < n; i++) G[i] = xt_mul(g, G[i], clamped);
}

/* One training step: its whole graph, executed at the barrier. */
int xt_run_train_step(xt_run *r, xt_engine *en, const xt_batch *b, double lr, float *loss, xt_err *e) {
    xt_engine_set_label(en, "training step");
    xt_graph *g = xt_engine_graph(en);
    xt_run_bind_batch(r, b);
    *(int32_t *)r->store.slots[r->slot_step].data = (int32_t)r->global_step;
    xt_optim_set_scalars(&r->optim, &r->store, lr);
    xt_t P[XT_MODEL_MAX_PARAMS], G[XT_MODEL_MAX_PARAMS];
    for (int i = 0; i < r->model.nparams; i++) P[i] = xt_leaf(g, r->model.params[i]);
    xt_t y = xt_leaf(g, r->slot_y); /* traced first, as the graphs have always had it */
    xt_t l = training_loss(r, g, y, xt_run_trace_logp(r, g, XT_TRAIN));
    xt_backward(g, l, P, r->model.nparams, G);
    xt_all_reduce(g, G, r->model.nparams);
    if (r->c->grad_clip_norm > 0) clip_grad_norm(g, G, r->model.nparams, r->c->grad_clip_norm);
    xt_optim_trace(&r->optim, g, G);
    xt_fetch(g, l, loss, sizeof *loss);
    int rc = xt_mark_step(en, e);
    if (rc) return rc;
    xt_model_after_train_step(&r->model);
    return 0;
}

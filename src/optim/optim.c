/* optim.c — SGD/Adam/AdamW as traced updates; see optim.h. */
#include "optim/optim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The longest state name ("optim.momentum_buffer." or "optim.exp_avg_sq."
 * + a layer's module path + its longest tensor suffix) must fit a store slot's name,
 * so that no valid spec can meet the slot's name limit. */
_Static_assert(sizeof "optim.momentum_buffer." - 1 + sizeof((xt_layer *)0)->path - 1 + sizeof ".running_mean" - 1 <
                   sizeof((xt_slot *)0)->name,
               "a valid layer name always fits an optimizer state's slot name");

static int state_slot(xt_store *s, const char *what, const xt_slot *param, xt_err *e) {
    char name[256];
    snprintf(name, sizeof name, "optim.%s.%s", what, param->name);
    int id = xt_store_add(s, name, XT_SLOT_STATE, XT_F32, param->rank, param->shape);
    if (id < 0) xt_fail(e, XT_ERUNTIME, "optimizer: cannot declare state '%s'", name);
    return id;
}

int xt_optim_declare(xt_optim *o, const xt_config *c, const xt_model *m, xt_store *store, xt_err *e) {
    memset(o, 0, sizeof *o);
    o->kind = c->optimizer;
    o->momentum = (float)c->momentum;
    o->weight_decay = (float)c->weight_decay;
    o->beta1 = (float)c->beta1;
    o->beta2 = (float)c->beta2;
    o->eps = (float)c->adam_eps;
    o->nesterov = c->nesterov;
    o->nparams = m->nparams;
    for (int i = 0; i < m->nparams; i++) {
        const xt_slot *p = &store->slots[m->params[i]];
        o->params[i] = m->params[i];
        o->state2[i] = -1;
        if (o->kind == XT_OPT_SGD) {
            o->state1[i] = o->momentum != 0.0f ? state_slot(store, "momentum_buffer", p, e) : -1;
            if (o->momentum != 0.0f && o->state1[i] < 0) return XT_ERUNTIME;
        } else {
            if ((o->state1[i] = state_slot(store, "exp_avg", p, e)) < 0) return XT_ERUNTIME;
            p = &store->slots[m->params[i]]; /* adding a slot may move the array; the store copies what it is given first */
            if ((o->state2[i] = state_slot(store, "exp_avg_sq", p, e)) < 0) return XT_ERUNTIME;
        }
    }
    o->lr_slot = xt_store_add(store, "optim.lr", XT_SLOT_STATE, XT_F32, 0, NULL);
    o->aux_slot = xt_store_add(store, "optim.inv_sqrt_bias_correction2", XT_SLOT_STATE, XT_F32, 0, NULL);
    o->decay_slot = xt_store_add(store, "optim.decay", XT_SLOT_STATE, XT_F32, 0, NULL);
    if (o->lr_slot < 0 || o->aux_slot < 0 || o->decay_slot < 0) return xt_fail(e, XT_ERUNTIME, "optimizer: cannot declare its scalars");
    return 0;
}

void xt_optim_trace(const xt_optim *o, xt_graph *g, const xt_t *grads) {
    xt_t lr = xt_leaf(g, o->lr_slot);
    for (int i = 0; i < o->nparams; i++) {
        if (grads[i] == XT_NONE) continue; /* a parameter the loss does not reach */
        xt_t w = xt_leaf(g, o->params[i]), gr = grads[i];
        if (o->kind != XT_OPT_ADAMW && o->weight_decay != 0.0f) gr = xt_add(g, gr, xt_mul(g, w, xt_const(g, o->weight_decay)));
        if (o->kind == XT_OPT_SGD) {
            xt_t d = gr;
            if (o->momentum != 0.0f) {
                xt_t buf = xt_add(g, xt_mul(g, xt_leaf(g, o->state1[i]), xt_const(g, o->momentum)), gr);
                xt_assign(g, o->state1[i], buf);
                d = o->nesterov ? xt_add(g, gr, xt_mul(g, buf, xt_const(g, o->momentum))) : buf;
            }
            xt_assign(g, o->params[i], xt_sub(g, w, xt_mul(g, lr, d)));
            continue;
        }
        xt_t m = xt_add(g, xt_mul(g, xt_leaf(g, o->state1[i]), xt_const(g, o->beta1)), xt_mul(g, gr, xt_const(g, 1.0f - o->beta1)));
        xt_t v = xt_add(g, xt_mul(g, xt_leaf(g, o->state2[i]), xt_const(g, o->beta2)),
                        xt_mul(g, xt_square(g, gr), xt_const(g, 1.0f - o->beta2)));
        xt_assign(g, o->state1[i], m);
        xt_assign(g, o->state2[i], v);
        xt_t w0 = o->kind == XT_OPT_ADAMW ? xt_mul(g, w, xt_leaf(g, o->decay_slot)) : w;
        xt_t denom = xt_add(g, xt_mul(g, xt_sqrt(g, v), xt_leaf(g, o->aux_slot)), xt_const(g, o->eps));
        xt_assign(g, o->params[i], xt_sub(g, w0, xt_mul(g, lr, xt_div(g, m, denom))));
    }
}

void xt_optim_set_scalars(xt_optim *o, xt_store *store, double lr) {
    o->steps++;
    float *lrp = xt_store_f32(store, o->lr_slot);
    if (o->kind == XT_OPT_SGD) {
        *lrp = (float)lr;
        return;
    }
    double bc1 = 1.0 - pow(o->beta1, (double)o->steps), bc2 = 1.0 - pow(o->beta2, (double)o->steps);
    *lrp = (float)(lr / bc1);
    *xt_store_f32(store, o->aux_slot) = (float)(1.0 / sqrt(bc2));
    *xt_store_f32(store, o->decay_slot) = (float)(1.0 - lr * o->weight_decay);
}

double xt_schedule_lr(const xt_config *c, int world, int epoch, long long step_in_epoch, long long steps_per_epoch) {
    double lr = c->learning_rate * (c->scale_lr_by_world_size ? world : 1);
    switch (c->schedule) {
    case XT_SCHED_STEP: lr *= pow(c->gamma, (double)(epoch / (c->step_size > 0 ? c->step_size : 1))); break;
    case XT_SCHED_COSINE: lr *= 0.5 * (1.0 + cos(M_PI * (double)epoch / (double)(c->num_epochs > 0 ? c->num_epochs : 1))); break;
    default: break;
    }
    if (c->warmup_epochs > 0 && epoch < c->warmup_epochs) {
        double done = (double)epoch * (double)steps_per_epoch + (double)step_in_epoch + 1.0;
        double total = (double)c->warmup_epochs * (double)(steps_per_epoch > 0 ? steps_per_epoch : 1);
        lr *= done / total;
    }
    return lr;
}

/* model.c — layers as graph builders; see model.h. */
#include "nn/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/functional.h"

static int slot(xt_store *s, const char *layer, const char *what, xt_slot_kind kind, int rank, const int32_t *shape, xt_err *e) {
    char name[256];
    snprintf(name, sizeof name, "%s.%s", layer, what);
    int id = xt_store_add(s, name, kind, XT_F32, rank, shape);
    if (id < 0) xt_fail(e, XT_EUSAGE, "model: cannot declare parameter '%s' (duplicate layer name?)", name);
    return id;
}

int xt_model_declare(xt_model *m, const xt_spec *spec, xt_store *store, xt_err *e) {
    memset(m, 0, sizeof *m);
    m->spec = spec;
    m->layers = calloc((size_t)spec->nlayers + 1, sizeof *m->layers);
    if (!m->layers) return xt_fail(e, XT_ERUNTIME, "out of memory declaring the model");
    for (int i = 0; i < spec->nlayers; i++) {
        const xt_layer *L = &spec->layers[i];
        xt_layer_slots *ls = &m->layers[i];
        ls->weight = ls->bias = ls->running_mean = ls->running_var = -1;
        switch (L->kind) {
        case XT_L_CONV2D: {
            int32_t ws[4] = {L->out, L->in_shape[0], L->kernel[0], L->kernel[1]};
            if ((ls->weight = slot(store, L->path, "weight", XT_SLOT_PARAM, 4, ws, e)) < 0) return XT_EUSAGE;
            if (L->bias && (ls->bias = slot(store, L->path, "bias", XT_SLOT_PARAM, 1, (int32_t[]){L->out}, e)) < 0) return XT_EUSAGE;
            break;
        }
        case XT_L_LINEAR: {
            int32_t ws[2] = {L->out, L->in_shape[0]};
            if ((ls->weight = slot(store, L->path, "weight", XT_SLOT_PARAM, 2, ws, e)) < 0) return XT_EUSAGE;
            if (L->bias && (ls->bias = slot(store, L->path, "bias", XT_SLOT_PARAM, 1, (int32_t[]){L->out}, e)) < 0) return XT_EUSAGE;
            break;
        }
        case XT_L_BATCHNORM2D: {
            int32_t c[1] = {L->in_shape[0]};
            if ((ls->weight = slot(store, L->path, "weight", XT_SLOT_PARAM, 1, c, e)) < 0 ||
                (ls->bias = slot(store, L->path, "bias", XT_SLOT_PARAM, 1, c, e)) < 0 ||
                (ls->running_mean = slot(store, L->path, "running_mean", XT_SLOT_BUFFER, 1, c, e)) < 0 ||
                (ls->running_var = slot(store, L->path, "running_var", XT_SLOT_BUFFER, 1, c, e)) < 0)
                return XT_EUSAGE;
            break;
        }
        default:
            break;
        }
        if (m->nparams + 2 > XT_MODEL_MAX_PARAMS) return xt_fail(e, XT_EUSAGE, "model: more than %d parameter tensors", XT_MODEL_MAX_PARAMS);
        if (ls->weight >= 0) m->params[m->nparams++] = ls->weight;
        if (ls->bias >= 0) m->params[m->nparams++] = ls->bias;
        if (ls->running_mean >= 0) {
            m->buffers[m->nbuffers++] = ls->running_mean;
            m->buffers[m->nbuffers++] = ls->running_var;
        }
    }
    return 0;
}

/* splitmix64: the init stream for parameter tensor `k` is independent of the others */
static uint64_t mix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static void uniform_fill(float *p, int64_t n, float bound, uint64_t seed) {
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) p[i] = bound * (2.0f * (float)(mix(&s) >> 40) / 16777216.0f - 1.0f);
}

void xt_model_init(xt_model *m, xt_store *store, uint64_t seed) {
    for (int i = 0; i < m->spec->nlayers; i++) {
        const xt_layer *L = &m->spec->layers[i];
        xt_layer_slots *ls = &m->layers[i];
        ls->num_batches_tracked = 0;
        if (L->kind == XT_L_CONV2D || L->kind == XT_L_LINEAR) {
            const xt_slot *w = &store->slots[ls->weight];
            int64_t fan_in = w->numel / w->shape[0];
            float bound = 1.0f / sqrtf((float)fan_in);
            uniform_fill(w->data, w->numel, bound, seed * 1000003ULL + (uint64_t)ls->weight * 2 + 1);
            if (ls->bias >= 0) uniform_fill(store->slots[ls->bias].data, store->slots[ls->bias].numel, bound, seed * 1000003ULL + (uint64_t)ls->weight * 2 + 2);
        } else if (L->kind == XT_L_BATCHNORM2D) {
            int64_t c = store->slots[ls->weight].numel;
            for (int64_t k = 0; k < c; k++) {
                xt_store_f32(store, ls->weight)[k] = 1.0f;
                xt_store_f32(store, ls->bias)[k] = 0.0f;
                xt_store_f32(store, ls->running_mean)[k] = 0.0f;
                xt_store_f32(store, ls->running_var)[k] = 1.0f;
            }
        }
    }
}

static xt_t batch_norm(xt_layer_slots *ls, const xt_layer *L, xt_graph *g, xt_t x, int mode) {
    xt_t gamma = xt_leaf(g, ls->weight), beta = xt_leaf(g, ls->bias);
    xt_t rm = xt_leaf(g, ls->running_mean), rv = xt_leaf(g, ls->running_var);
    if (mode == XT_EVAL) return xt_f_batch_norm_eval(g, x, rm, rv, gamma, beta, L->eps);
    xt_t st = xt_bn_stats(g, x);
    const xt_node *xn = xt_node_of(g, x);
    if (!xn) return XT_NONE;
    int C = xn->shape[1];
    double n = (double)xn->shape[0] * xn->shape[2] * xn->shape[3];
    /* running stats as PyTorch: momentum-weighted, variance unbiased (n/(n-1)) */
    xt_t mean = xt_view(g, st, 0, 1, (int32_t[]){C}), var = xt_view(g, st, C, 1, (int32_t[]){C});
    xt_t keep = xt_const(g, 1.0f - L->momentum), mom = xt_const(g, L->momentum);
    xt_assign(g, ls->running_mean, xt_add(g, xt_mul(g, rm, keep), xt_mul(g, mean, mom)));
    xt_assign(g, ls->running_var, xt_add(g, xt_mul(g, rv, keep), xt_mul(g, var, xt_const(g, (float)(L->momentum * n / (n > 1 ? n - 1 : 1))))));
    return xt_f_batch_norm_train(g, x, st, gamma, beta, L->eps);
}

static xt_t forward_range(xt_model *m, xt_graph *g, xt_t x, int first, int end, int mode, xt_t step, uint64_t seed);

/* A residual block: body(x) + shortcut(x) (x itself when it has none), then
 * ReLU. x has two consumers; autodiff sums the gradients they send back. */
static xt_t block(xt_model *m, xt_graph *g, xt_t x, int i, int mode, xt_t step, uint64_t seed) {
    const xt_layer *L = &m->spec->layers[i];
    int b0 = i + 1, s0 = b0 + L->nbody;
    xt_t y = forward_range(m, g, x, b0, s0, mode, step, seed);
    xt_t sc = L->nshort ? forward_range(m, g, x, s0, s0 + L->nshort, mode, step, seed) : x;
    y = xt_add(g, y, sc);
    return L->act_relu ? xt_relu(g, y) : y;
}

/* One leaf layer (or a container, through block/forward_range). */
static xt_t forward_one(xt_model *m, xt_graph *g, xt_t x, int i, int mode, xt_t step, uint64_t seed) {
    const xt_layer *L = &m->spec->layers[i];
    xt_layer_slots *ls = &m->layers[i];
    switch (L->kind) {
    case XT_L_CONV2D:
        return xt_conv2d(g, x, xt_leaf(g, ls->weight), ls->bias >= 0 ? xt_leaf(g, ls->bias) : XT_NONE, L->stride[0],
                         L->stride[1], L->padding[0], L->padding[1]);
    case XT_L_LINEAR: return xt_f_linear(g, x, xt_leaf(g, ls->weight), ls->bias >= 0 ? xt_leaf(g, ls->bias) : XT_NONE);
    case XT_L_BATCHNORM2D: return batch_norm(ls, L, g, x, mode);
    case XT_L_MAXPOOL2D:
        return xt_max_pool2d(g, x, L->kernel[0], L->kernel[1], L->stride[0], L->stride[1], L->padding[0], L->padding[1]);
    case XT_L_AVGPOOL2D:
    case XT_L_ADAPTIVE_AVGPOOL2D: /* the spec resolved it to kernel = stride = input / output */
        return xt_avg_pool2d(g, x, L->kernel[0], L->kernel[1], L->stride[0], L->stride[1], L->padding[0], L->padding[1]);
    case XT_L_RELU: return xt_relu(g, x);
    case XT_L_DROPOUT: return mode == XT_TRAIN ? xt_dropout(g, x, step, L->p, i, seed) : x;
    case XT_L_FLATTEN: {
        const xt_node *n = xt_node_of(g, x);
        if (!n) return XT_NONE;
        int32_t shape[2] = {n->shape[0], (int32_t)(xt_numel(n) / n->shape[0])};
        return xt_reshape(g, x, 2, shape);
    }
    case XT_L_LOG_SOFTMAX: return xt_log_softmax(g, x);
    case XT_L_BLOCK: return block(m, g, x, i, mode, step, seed);
    case XT_L_SEQUENTIAL: return forward_range(m, g, x, i + 1, i + 1 + L->nbody, mode, step, seed);
    default: return xt_graph_fail(g, "layer '%s': unsupported kind", L->path);
    }
}

static xt_t forward_range(xt_model *m, xt_graph *g, xt_t x, int first, int end, int mode, xt_t step, uint64_t seed) {
    for (int i = first; i < end && x != XT_NONE; i = xt_spec_end(m->spec, i)) x = forward_one(m, g, x, i, mode, step, seed);
    return x;
}

xt_t xt_model_forward(xt_model *m, xt_graph *g, xt_t x, int mode, xt_t step, uint64_t seed) {
    return forward_range(m, g, x, 0, m->spec->nlayers, mode, step, seed);
}

void xt_model_after_train_step(xt_model *m) {
    for (int i = 0; i < m->spec->nlayers; i++)
        if (m->spec->layers[i].kind == XT_L_BATCHNORM2D) m->layers[i].num_batches_tracked++;
}

void xt_model_free(xt_model *m) {
    free(m->layers);
    m->layers = NULL;
}

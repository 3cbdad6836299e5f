/* test_golden_resnet.c — residual networks against PyTorch's own numbers
 * (tests/golden/make_golden_resnet.py, Debian's python3-torch):
 *   - ResNet-20 (models/resnet20.yaml), the same batch of 8 3x32x32 images and
 *     weights through one training-mode forward/backward: logits, loss, every
 *     parameter's gradient and the BN running stats within 1e-4 of the
 *     tensor's scale, with and without the memory planner. Every block input
 *     feeds both the body and the shortcut, so a gradient that is not summed
 *     over both consumers, or a buffer reused before the shortcut read it,
 *     fails here;
 *   - the train step compiles once: a second step with new data hits the cache;
 *   - for resnet20, resnet18_cifar and resnet8_mnist, xlatrain declares exactly
 *     PyTorch's state_dict (names, shapes, order) and parameter count.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config/spec.h"
#include "engine/graph.h"
#include "io/safetensors.h"
#include "nn/model.h"
#include "test.h"

#define FIXTURE "tests/golden/resnet20.safetensors"
#define N 8

static double max_rel_err(const float *got, const float *want, int64_t n) {
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(got[i] - want[i]) / fmax(scale, 1e-12));
    return worst;
}

typedef struct {
    xt_spec spec;
    xt_store st;
    xt_model m;
    int sx, sy;
} net;

/* models/<name>.yaml declared into a store, with an input batch of N and labels. */
static int net_open(net *n, const char *model, xt_err *e) {
    char path[256];
    snprintf(path, sizeof path, "models/%s.yaml", model);
    if (xt_spec_load(&n->spec, path, e)) return -1;
    xt_store_init(&n->st);
    if (xt_model_declare(&n->m, &n->spec, &n->st, e)) return -1;
    const int *in = n->spec.input;
    n->sx = xt_store_add(&n->st, "x", XT_SLOT_BUFFER, XT_F32, 4, (int32_t[]){N, in[0], in[1], in[2]});
    n->sy = xt_store_add(&n->st, "y", XT_SLOT_BUFFER, XT_I32, 1, (int32_t[]){N});
    return xt_store_finalize(&n->st, e);
}

static void net_close(net *n) {
    xt_model_free(&n->m);
    xt_store_free(&n->st);
    xt_spec_free(&n->spec);
}

/* Every slot from the fixture: x, y, and init.<name> for the model's. */
static void load_inputs(net *n, xt_st_file *f) {
    xt_err e = {0};
    for (int i = 0; i < n->st.n; i++) {
        const xt_slot *s = &n->st.slots[i];
        char name[160];
        int64_t shape[4];
        for (int k = 0; k < s->rank; k++) shape[k] = s->shape[k];
        snprintf(name, sizeof name, i == n->sx || i == n->sy ? "%s" : "init.%s", s->name);
        CHECK_MSG(xt_st_copy(f, name, i == n->sy ? XT_ST_I32 : XT_ST_F32, s->rank, shape, s->data, &e) == 0, "%s",
                  e.msg);
    }
}

static void compare(const char *what, const float *got, const xt_st_file *f, const char *name, int64_t n) {
    const xt_st_tensor *t = xt_st_find(f, name);
    CHECK_MSG(t != NULL && t->nbytes == (size_t)n * 4, "%s: no %s of %lld floats in the fixture", what, name,
              (long long)n);
    if (!t || t->nbytes != (size_t)n * 4) return;
    double err = max_rel_err(got, t->data, n);
    CHECK_MSG(err < 1e-4, "%s %s: max error %.3g of the tensor's scale", what, name, err);
}

static void golden_step(int no_planner) {
    xt_err e = {0};
    xt_st_file f;
    if (xt_st_read(FIXTURE, &f, &e)) {
        CHECK_MSG(0, "%s", e.msg);
        return;
    }
    net n;
    CHECK_MSG(net_open(&n, "resnet20", &e) == 0, "%s", e.msg);
    load_inputs(&n, &f);
    xt_engine_opts eo = {.fuse = 1, .no_memory_planner = no_planner};
    xt_engine *en = xt_engine_new(&n.st, &eo);
    xt_graph *g = xt_engine_graph(en);
    int np = n.m.nparams;
    xt_t *P = calloc((size_t)np, sizeof *P), *G = calloc((size_t)np, sizeof *G);
    float **grads = calloc((size_t)np, sizeof *grads), logits[N * 10], loss = 0;
    for (int i = 0; i < np; i++) P[i] = xt_leaf(g, n.m.params[i]);
    xt_t out = xt_model_forward(&n.m, g, xt_leaf(g, n.sx), XT_TRAIN, XT_NONE, 0);
    xt_t l = xt_nll_loss(g, xt_log_softmax(g, out), xt_leaf(g, n.sy));
    CHECK(xt_backward(g, l, P, np, G) == 0);
    xt_fetch(g, out, logits, sizeof logits);
    xt_fetch(g, l, &loss, sizeof loss);
    for (int i = 0; i < np; i++) {
        size_t bytes = (size_t)n.st.slots[n.m.params[i]].numel * 4;
        grads[i] = malloc(bytes);
        CHECK_MSG(G[i] != XT_NONE, "no gradient for %s", n.st.slots[n.m.params[i]].name);
        xt_fetch(g, G[i], grads[i], bytes);
    }
    CHECK_MSG(xt_mark_step(en, &e) == 0, "%s", e.msg);
    compare("forward", logits, &f, "logits", N * 10);
    compare("loss", &loss, &f, "loss", 1);
    char name[200];
    for (int i = 0; i < np; i++) {
        const xt_slot *s = &n.st.slots[n.m.params[i]];
        snprintf(name, sizeof name, "grad.%s", s->name);
        compare("gradient", grads[i], &f, name, s->numel);
        free(grads[i]);
    }
    for (int i = 0; i < n.m.nbuffers; i++) {
        const xt_slot *s = &n.st.slots[n.m.buffers[i]];
        snprintf(name, sizeof name, "after.%s", s->name);
        compare("running stat", s->data, &f, name, s->numel);
    }
    free(P);
    free(G);
    free(grads);
    xt_engine_free(en);
    net_close(&n);
    xt_st_close(&f);
}

TEST(golden_resnet20_forward_and_gradients_match_pytorch) { golden_step(0); }
/* every value its own buffer: isolates the memory planner from the rest */
TEST(golden_resnet20_matches_pytorch_without_memory_planner) { golden_step(1); }

/* In the graph dump (src/engine/dump.c: "%ID = OP [shape](%a, %b) ... fused#G"),
 * the residual sums fused with the ReLU after them: an ADD of two full-size
 * values in the same fused group as the RELU that reads it. */
static int fused_residual_relus(const char *dir) {
    char cmd[1024], path[1024] = "";
    snprintf(cmd, sizeof cmd, "ls %s/graph-*.txt", dir);
    if (test_run(cmd, path, sizeof path) != 0) return -1;
    path[strcspn(path, "\n")] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    enum { MAXN = 1 << 14 };
    static char op[MAXN][16], shape[MAXN][48];
    static int grp[MAXN], a0[MAXN], a1[MAXN];
    char line[512];
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        int id, x = -1, y = -1;
        char o[16], sh[48];
        if (sscanf(line, "%%%d = %15s [%47[^]]](%%%d, %%%d)", &id, o, sh, &x, &y) < 4 || id < 0 || id >= MAXN) continue;
        const char *fz = strstr(line, "fused#");
        snprintf(op[id], sizeof op[id], "%s", o);
        snprintf(shape[id], sizeof shape[id], "%s", sh);
        grp[id] = fz ? atoi(fz + 6) : -1;
        a0[id] = x;
        a1[id] = y;
        if (!strcmp(o, "RELU") && x >= 0 && x < id && !strcmp(op[x], "ADD") && grp[id] >= 0 && grp[x] == grp[id] &&
            a0[x] >= 0 && a1[x] >= 0 && !strcmp(shape[a0[x]], sh) && !strcmp(shape[a1[x]], sh))
            found++;
    }
    fclose(f);
    return found;
}

/* The training step of a residual net (forward, backward, SGD update) is one
 * graph: the second and third steps, with new data and new weights, hit the
 * cache. Each of ResNet-20's 9 blocks ends in one fused add + ReLU. */
TEST(resnet20_train_step_compiles_once) {
    xt_err e = {0};
    net n;
    CHECK_MSG(net_open(&n, "resnet20", &e) == 0, "%s", e.msg);
    xt_model_init(&n.m, &n.st, 1);
    xt_engine_opts eo = {.fuse = 1, .save_graphs_dir = test_tmpdir()};
    xt_engine *en = xt_engine_new(&n.st, &eo);
    float *x = xt_store_f32(&n.st, n.sx);
    int32_t *y = n.st.slots[n.sy].data;
    for (int step = 0; step < 3; step++) {
        for (int64_t i = 0; i < n.st.slots[n.sx].numel; i++) x[i] = sinf((float)(i * (step + 1)) * 0.37f);
        for (int i = 0; i < N; i++) y[i] = (i * 3 + step) % 10;
        xt_graph *g = xt_engine_graph(en);
        int np = n.m.nparams;
        xt_t P[XT_MODEL_MAX_PARAMS], G[XT_MODEL_MAX_PARAMS];
        for (int i = 0; i < np; i++) P[i] = xt_leaf(g, n.m.params[i]);
        xt_t out = xt_model_forward(&n.m, g, xt_leaf(g, n.sx), XT_TRAIN, XT_NONE, 0);
        xt_t l = xt_nll_loss(g, xt_log_softmax(g, out), xt_leaf(g, n.sy));
        CHECK(xt_backward(g, l, P, np, G) == 0);
        for (int i = 0; i < np; i++)
            xt_assign(g, n.m.params[i], xt_sub(g, P[i], xt_mul(g, xt_const(g, 0.05f), G[i])));
        float loss = 0;
        xt_fetch(g, l, &loss, sizeof loss);
        CHECK_MSG(xt_mark_step(en, &e) == 0, "%s", e.msg);
        CHECK(isfinite(loss));
        xt_exec_stats s;
        xt_engine_last_stats(en, &s);
        CHECK_EQ(s.distinct_graphs, 1);
        CHECK_EQ(s.cache_hit, step > 0);
    }
    CHECK_EQ(fused_residual_relus(test_tmpdir()), 9);
    xt_engine_free(en);
    net_close(&n);
}

/* What xlatrain declares from models/<name>.yaml is PyTorch's state_dict:
 * the same names with the same shapes in the same order (buffers and
 * num_batches_tracked included), and the same parameter count. */
static void same_state_dict(const char *model) {
    xt_err e = {0};
    xt_st_file f;
    if (xt_st_read(FIXTURE, &f, &e)) {
        CHECK_MSG(0, "%s", e.msg);
        return;
    }
    char key[96], mine[1 << 15] = "", line[256];
    snprintf(key, sizeof key, "params.%s", model);
    const char *params = xt_st_meta_get(&f, key);
    snprintf(key, sizeof key, "state_dict.%s", model);
    const char *theirs = xt_st_meta_get(&f, key);
    CHECK_MSG(params && theirs, "%s: no %s in the fixture", model, key);
    net n;
    CHECK_MSG(net_open(&n, model, &e) == 0, "%s", e.msg);
    if (params) CHECK_EQ(xt_spec_total_params(&n.spec), atol(params));
    /* in state_dict order: a module's parameters, then its buffers (BN: weight,
     * bias, running_mean, running_var, num_batches_tracked) */
    for (int i = 0; i < n.spec.nlayers; i++) {
        const xt_layer_slots *ls = &n.m.layers[i];
        const int ids[4] = {ls->weight, ls->bias, ls->running_mean, ls->running_var};
        for (int k = 0; k < 4; k++) {
            if (ids[k] < 0) continue;
            const xt_slot *s = &n.st.slots[ids[k]];
            int o = snprintf(line, sizeof line, "%s%s:[", mine[0] ? "\n" : "", s->name);
            for (int d = 0; d < s->rank; d++) o += snprintf(line + o, sizeof line - o, "%s%d", d ? ", " : "", s->shape[d]);
            snprintf(line + o, sizeof line - o, "]");
            strncat(mine, line, sizeof mine - strlen(mine) - 1);
        }
        if (n.spec.layers[i].kind == XT_L_BATCHNORM2D) {
            snprintf(line, sizeof line, "\n%s.num_batches_tracked:[]", n.spec.layers[i].path);
            strncat(mine, line, sizeof mine - strlen(mine) - 1);
        }
    }
    CHECK(strlen(mine) < sizeof mine - 1);
    if (theirs) CHECK_MSG(!strcmp(mine, theirs), "%s: xlatrain declares\n%s\n--- PyTorch has\n%s", model, mine, theirs);
    net_close(&n);
    xt_st_close(&f);
}

TEST(resnet20_state_dict_and_param_count_are_pytorchs) { same_state_dict("resnet20"); }
TEST(resnet18_cifar_state_dict_and_param_count_are_pytorchs) { same_state_dict("resnet18_cifar"); }
TEST(resnet8_mnist_state_dict_and_param_count_are_pytorchs) { same_state_dict("resnet8_mnist"); }

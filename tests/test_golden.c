/* test_golden.c — the seed CNN against PyTorch's own numbers: the same batch
 * and weights through one training-mode forward/backward must give
 * PyTorch's log-probabilities, loss, gradients and BN running stats within
 * 1e-4 (relative to each tensor's scale). Golden values:
 * tests/golden/make_golden.py. */
#include <math.h>
#include <string.h>

#include "engine/graph.h"
#include "io/safetensors.h"
#include "nn/model.h"
#include "config/spec.h"
#include "test.h"

static double max_rel_err(const float *got, const float *want, int64_t n) {
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(got[i] - want[i]) / fmax(scale, 1e-12));
    return worst;
}

static void golden_one_step(int no_planner) {
    xt_err e = {0};
    xt_st_file f;
    if (xt_st_read("tests/golden/seed_cnn.safetensors", &f, &e)) {
        CHECK_MSG(0, "%s", e.msg);
        return;
    }
    xt_spec spec;
    CHECK(xt_spec_load(&spec, "models/fashion_cnn.yaml", &e) == 0);
    xt_store st;
    xt_store_init(&st);
    xt_model m;
    CHECK(xt_model_declare(&m, &spec, &st, &e) == 0);
    int sx = xt_store_add(&st, "x", XT_SLOT_BUFFER, XT_F32, 4, (int32_t[]){16, 1, 28, 28});
    int sy = xt_store_add(&st, "y", XT_SLOT_BUFFER, XT_I32, 1, (int32_t[]){16});
    CHECK(xt_store_finalize(&st, &e) == 0);
    for (int i = 0; i < st.n; i++) {
        const xt_slot *s = &st.slots[i];
        char name[160];
        int64_t shape[4];
        for (int k = 0; k < s->rank; k++) shape[k] = s->shape[k];
        if (i == sx || i == sy) snprintf(name, sizeof name, "%s", s->name);
        else snprintf(name, sizeof name, "init.%s", s->name);
        CHECK_MSG(xt_st_copy(&f, name, i == sy ? XT_ST_I32 : XT_ST_F32, s->rank, shape, s->data, &e) == 0, "%s", e.msg);
    }
    xt_engine_opts eo = {.fuse = 1, .no_memory_planner = no_planner};
    xt_engine *en = xt_engine_new(&st, &eo);
    xt_graph *g = xt_engine_graph(en);
    xt_t P[32], G[32];
    for (int i = 0; i < m.nparams; i++) P[i] = xt_leaf(g, m.params[i]);
    xt_t logp = xt_model_forward(&m, g, xt_leaf(g, sx), XT_TRAIN, XT_NONE, 0);
    xt_t loss = xt_nll_loss(g, logp, xt_leaf(g, sy));
    CHECK(xt_backward(g, loss, P, m.nparams, G) == 0);
    static float glogp[160], gloss, grads[32][16384];
    xt_fetch(g, logp, glogp, sizeof glogp);
    xt_fetch(g, loss, &gloss, 4);
    for (int i = 0; i < m.nparams; i++) xt_fetch(g, G[i], grads[i], (size_t)st.slots[m.params[i]].numel * 4);
    CHECK_MSG(xt_mark_step(en, &e) == 0, "%s", e.msg);

    const xt_st_tensor *t = xt_st_find(&f, "logp");
    CHECK(t && max_rel_err(glogp, t->data, 160) < 1e-4);
    t = xt_st_find(&f, "loss");
    CHECK_NEAR(gloss, *(const float *)t->data, 1e-4);
    for (int i = 0; i < m.nparams; i++) {
        char name[160];
        snprintf(name, sizeof name, "grad.%s", st.slots[m.params[i]].name);
        t = xt_st_find(&f, name);
        CHECK_MSG(t != NULL, "no %s", name);
        if (!t) continue;
        double err = max_rel_err(grads[i], t->data, st.slots[m.params[i]].numel);
        CHECK_MSG(err < 1e-4, "%s: max error %.3g of the tensor's scale", name, err);
    }
    for (int i = 0; i < m.nbuffers; i++) {
        char name[160];
        snprintf(name, sizeof name, "after.%s", st.slots[m.buffers[i]].name);
        t = xt_st_find(&f, name);
        CHECK_MSG(t && max_rel_err(st.slots[m.buffers[i]].data, t->data, st.slots[m.buffers[i]].numel) < 1e-4, "%s", name);
    }
    xt_engine_free(en);
    xt_model_free(&m);
    xt_store_free(&st);
    xt_spec_free(&spec);
    xt_st_close(&f);
}

TEST(golden_seed_cnn_matches_pytorch) { golden_one_step(0); }
/* with memory planning off: every value its own buffer, no in-place update */
TEST(golden_seed_cnn_matches_pytorch_without_memory_planner) { golden_one_step(1); }

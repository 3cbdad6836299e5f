/* test_engine.c — the lazy engine's behaviour: values of ops, the compile
 * cache, fusion, in-place updates, memory planning, CSE/DCE, errors, dumps,
 * and a small training loop that compiles once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/graph.h"
#include "engine/metrics.h"
#include "kernels/simd.h"
#include "test.h"

static int add_slot(xt_store *s, const char *name, int rank, const int32_t *shape, const float *init) {
    int id = xt_store_add(s, name, XT_SLOT_PARAM, XT_F32, rank, shape);
    CHECK(id >= 0);
    (void)init;
    return id;
}

static void fill(xt_store *s, int slot, const float *v) {
    memcpy(s->slots[slot].data, v, (size_t)s->slots[slot].numel * 4);
}

TEST(engine_forward_values_by_hand) {
    xt_store st;
    xt_store_init(&st);
    int a = add_slot(&st, "a", 2, (int32_t[]){2, 3}, NULL);
    int b = add_slot(&st, "b", 2, (int32_t[]){3, 2}, NULL);
    int x = add_slot(&st, "x", 4, (int32_t[]){1, 1, 3, 3}, NULL);
    int w = add_slot(&st, "w", 4, (int32_t[]){1, 1, 2, 2}, NULL);
    int t = xt_store_add(&st, "t", XT_SLOT_BUFFER, XT_I32, 1, (int32_t[]){2});
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    fill(&st, a, (float[]){1, 2, 3, 4, 5, 6});
    fill(&st, b, (float[]){1, 0, 0, 1, -1, 2});
    fill(&st, x, (float[]){1, 2, 3, 4, 5, 6, 7, 8, 9});
    fill(&st, w, (float[]){1, 0, 0, -1});
    memcpy(st.slots[t].data, (int32_t[]){1, 0}, 8);
    xt_engine *en = xt_engine_new(&st, NULL);
    xt_graph *g = xt_engine_graph(en);
    xt_t mm = xt_matmul(g, xt_leaf(g, a), xt_leaf(g, b), 0, 0); /* [[1-3, 2+6], [4-6, 5+12]] */
    xt_t cv = xt_conv2d(g, xt_leaf(g, x), xt_leaf(g, w), XT_NONE, 1, 1, 0, 0); /* x[i][j] - x[i+1][j+1] = -4 */
    xt_t rl = xt_relu(g, xt_sub(g, mm, xt_const(g, 0.0f)));
    xt_t sm = xt_sum_all(g, mm);
    xt_t lsm = xt_log_softmax(g, mm);
    xt_t am = xt_argmax(g, mm);
    xt_t nll = xt_nll_loss(g, lsm, xt_leaf(g, t));
    float vmm[4], vcv[4], vrl[4], vsm, vlsm[4], vnll;
    int32_t vam[2];
    xt_fetch(g, mm, vmm, sizeof vmm);
    xt_fetch(g, cv, vcv, sizeof vcv);
    xt_fetch(g, rl, vrl, sizeof vrl);
    xt_fetch(g, sm, &vsm, sizeof vsm);
    xt_fetch(g, lsm, vlsm, sizeof vlsm);
    xt_fetch(g, am, vam, sizeof vam);
    xt_fetch(g, nll, &vnll, sizeof vnll);
    CHECK(xt_mark_step(en, &e) == 0);
    float want[4] = {-2, 8, -2, 17};
    for (int i = 0; i < 4; i++) {
        CHECK_NEAR(vmm[i], want[i], 1e-5);
        CHECK_NEAR(vcv[i], -4, 1e-5);
        CHECK_NEAR(vrl[i], want[i] > 0 ? want[i] : 0, 1e-6);
    }
    CHECK_NEAR(vsm, 21, 1e-5);
    CHECK_NEAR(vlsm[0], -2 - (8 + log1p(exp(-10))), 1e-5);
    CHECK_EQ(vam[0], 1);
    CHECK_EQ(vam[1], 1);
    /* targets 1, 0: -(lsm[0][1] + lsm[1][0]) / 2 */
    CHECK_NEAR(vnll, -(vlsm[1] + vlsm[2]) / 2, 1e-6);
    xt_engine_free(en);
    xt_store_free(&st);
}

/* a chain of broadcasting elementwise ops between two matmuls */
static void chain(xt_engine *en, int x, int bias, int scale, float *out, xt_exec_stats *stats) {
    xt_graph *g = xt_engine_graph(en);
    xt_t h = xt_matmul(g, xt_leaf(g, x), xt_leaf(g, x), 0, 1);           /* (8, 8) */
    h = xt_add(g, h, xt_leaf(g, bias));                                   /* + (8) */
    h = xt_relu(g, xt_mul(g, h, xt_leaf(g, scale)));                      /* * scalar slot */
    h = xt_sub(g, xt_exp(g, xt_neg(g, h)), xt_sqrt(g, xt_add(g, h, xt_const(g, 1.0f))));
    xt_t y = xt_matmul(g, h, h, 0, 0);
    xt_fetch(g, y, out, 64 * 4);
    xt_err e = {0};
    CHECK(xt_mark_step(en, &e) == 0);
    xt_engine_last_stats(en, stats);
}

TEST(engine_fused_equals_unfused) {
    xt_store st;
    xt_store_init(&st);
    int x = add_slot(&st, "x", 2, (int32_t[]){8, 5}, NULL);
    int bias = add_slot(&st, "bias", 1, (int32_t[]){8}, NULL);
    int scale = add_slot(&st, "scale", 0, NULL, NULL);
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    for (int i = 0; i < 40; i++) xt_store_f32(&st, x)[i] = sinf((float)i);
    for (int i = 0; i < 8; i++) xt_store_f32(&st, bias)[i] = 0.1f * (float)i - 0.3f;
    *xt_store_f32(&st, scale) = 0.7f;
    float fused[64], plain[64];
    xt_exec_stats sf, sp;
    xt_engine_opts o = {.fuse = 1};
    xt_engine *en = xt_engine_new(&st, &o);
    chain(en, x, bias, scale, fused, &sf);
    xt_engine_free(en);
    o.fuse = 0;
    en = xt_engine_new(&st, &o);
    chain(en, x, bias, scale, plain, &sp);
    xt_engine_free(en);
    for (int i = 0; i < 64; i++) CHECK_NEAR(fused[i], plain[i], 1e-5 * fmax(1.0, fabs(plain[i])));
    CHECK_EQ(sf.fused_kernels, 1);     /* the 8 elementwise ops became one kernel */
    CHECK_EQ(sp.fused_kernels, 0);
    CHECK_EQ(sf.kernels, 3);           /* matmul, fused group, matmul */
    CHECK(sp.kernels > sf.kernels + 5);
    CHECK(sf.intermediate_bytes < sp.intermediate_bytes);
    xt_store_free(&st);
}

TEST(engine_cache_hits_on_new_data_misses_on_new_shape) {
    xt_store st;
    xt_store_init(&st);
    int x = add_slot(&st, "x", 2, (int32_t[]){8, 5}, NULL);
    int bias = add_slot(&st, "bias", 1, (int32_t[]){8}, NULL);
    int scale = add_slot(&st, "scale", 0, NULL, NULL);
    int x2 = add_slot(&st, "x2", 2, (int32_t[]){8, 6}, NULL);
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    xt_engine *en = xt_engine_new(&st, NULL);
    float out[64], out2[64];
    xt_exec_stats s1, s2, s3;
    int64_t cached0 = xt_counter_get("CachedCompile"), uncached0 = xt_counter_get("UncachedCompile");
    chain(en, x, bias, scale, out, &s1);
    *xt_store_f32(&st, scale) = 3.0f; /* new "learning rate": data, not structure */
    xt_store_f32(&st, x)[3] = 5.0f;
    chain(en, x, bias, scale, out2, &s2);
    CHECK_EQ(s1.graph_hash, s2.graph_hash);
    CHECK_EQ(s2.cache_hit, 1);
    CHECK_EQ(s2.distinct_graphs, 1);
    CHECK(memcmp(out, out2, sizeof out) != 0); /* it really ran on the new data */
    chain(en, x2, bias, scale, out, &s3);     /* (8, 6): a new shape */
    CHECK(s3.graph_hash != s1.graph_hash);
    CHECK_EQ(s3.cache_hit, 0);
    CHECK_EQ(s3.distinct_graphs, 2);
    CHECK_EQ(xt_counter_get("CachedCompile") - cached0, 1);
    CHECK_EQ(xt_counter_get("UncachedCompile") - uncached0, 2);
    xt_engine_free(en);
    xt_store_free(&st);
}

TEST(engine_cse_and_dce) {
    xt_store st;
    xt_store_init(&st);
    int a = add_slot(&st, "a", 1, (int32_t[]){4}, NULL);
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    xt_engine *en = xt_engine_new(&st, NULL);
    xt_graph *g = xt_engine_graph(en);
    xt_t l1 = xt_leaf(g, a), l2 = xt_leaf(g, a);
    CHECK_EQ(l1, l2);
    xt_t e1 = xt_exp(g, l1), e2 = xt_exp(g, l2);
    CHECK_EQ(e1, e2);
    xt_t dead = xt_matmul(g, xt_reshape(g, l1, 2, (int32_t[]){2, 2}), xt_reshape(g, l1, 2, (int32_t[]){2, 2}), 0, 0);
    (void)dead;
    float v[4];
    xt_fetch(g, e1, v, sizeof v);
    CHECK(xt_mark_step(en, &e) == 0);
    xt_exec_stats s;
    xt_engine_last_stats(en, &s);
    CHECK_EQ(s.kernels, 1); /* the matmul nobody reads never runs */
    xt_engine_free(en);
    xt_store_free(&st);
}

TEST(engine_assign_in_place_keeps_old_value_semantics) {
    xt_store st;
    xt_store_init(&st);
    int w = add_slot(&st, "w", 1, (int32_t[]){5}, NULL);
    int v = add_slot(&st, "v", 1, (int32_t[]){5}, NULL);
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    fill(&st, w, (float[]){1, 2, 3, 4, 5});
    fill(&st, v, (float[]){1, 1, 1, 1, 1});
    float *wptr = xt_store_f32(&st, w);
    xt_engine *en = xt_engine_new(&st, NULL);
    xt_graph *g = xt_engine_graph(en);
    /* momentum-style: v' = 0.5 v + w ; w' = w - 0.1 v' ; and fetch the OLD w */
    xt_t W = xt_leaf(g, w), V = xt_leaf(g, v);
    xt_t v2 = xt_add(g, xt_mul(g, V, xt_const(g, 0.5f)), W);
    xt_t w2 = xt_sub(g, W, xt_mul(g, v2, xt_const(g, 0.1f)));
    xt_assign(g, v, v2);
    xt_assign(g, w, w2);
    float old_w[5], sum_w2;
    xt_fetch(g, W, old_w, sizeof old_w);
    xt_fetch(g, xt_sum_all(g, w2), &sum_w2, 4);
    CHECK(xt_mark_step(en, &e) == 0);
    CHECK(xt_store_f32(&st, w) == wptr); /* the slot's buffer was updated, not replaced */
    for (int i = 0; i < 5; i++) {
        float vv = 0.5f + (float)(i + 1);
        CHECK_NEAR(old_w[i], i + 1, 0);
        CHECK_NEAR(xt_store_f32(&st, v)[i], vv, 1e-6);
        CHECK_NEAR(xt_store_f32(&st, w)[i], (i + 1) - 0.1f * vv, 1e-6);
    }
    CHECK_NEAR(sum_w2, 15 - 0.1 * (2.5 + 15), 1e-5);
    xt_engine_free(en);
    xt_store_free(&st);
}

TEST(engine_memory_plan_reuses_arena) {
    xt_store st;
    xt_store_init(&st);
    int x = add_slot(&st, "x", 2, (int32_t[]){64, 64}, NULL);
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    for (int i = 0; i < 64 * 64; i++) xt_store_f32(&st, x)[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    xt_engine *en = xt_engine_new(&st, NULL);
    xt_graph *g = xt_engine_graph(en);
    xt_t h = xt_leaf(g, x);
    for (int i = 0; i < 10; i++) h = xt_relu(g, xt_matmul(g, h, xt_leaf(g, x), 0, 0));
    float out;
    xt_fetch(g, xt_sum_all(g, h), &out, 4);
    CHECK(xt_mark_step(en, &e) == 0);
    xt_exec_stats s;
    xt_engine_last_stats(en, &s);
    /* 20 intermediates of 16 KiB live one or two at a time */
    CHECK_MSG(s.arena_bytes * 4 <= s.intermediate_bytes, "arena %zu vs intermediates %zu", s.arena_bytes, s.intermediate_bytes);
    CHECK(isfinite(out));
    xt_engine_free(en);
    xt_store_free(&st);
}

TEST(engine_trace_error_names_the_op) {
    xt_store st;
    xt_store_init(&st);
    int a = add_slot(&st, "a", 2, (int32_t[]){3, 4}, NULL);
    int b = add_slot(&st, "b", 2, (int32_t[]){5, 6}, NULL);
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    xt_engine *en = xt_engine_new(&st, NULL);
    xt_graph *g = xt_engine_graph(en);
    xt_t bad = xt_matmul(g, xt_leaf(g, a), xt_leaf(g, b), 0, 0);
    CHECK_EQ(bad, XT_NONE);
    xt_t later = xt_relu(g, bad);
    CHECK_EQ(later, XT_NONE);
    CHECK(xt_mark_step(en, &e) != 0);
    CHECK_STR_CONTAINS(e.msg, "matmul: inner sizes differ: [3, 4] x [5, 6]");
    xt_t ok = xt_add(g, xt_leaf(g, a), xt_leaf(g, b)); /* the error was cleared by the barrier */
    CHECK_EQ(ok, XT_NONE);
    CHECK_STR_CONTAINS(xt_graph_error(g), "do not broadcast");
    xt_engine_free(en);
    xt_store_free(&st);
}

TEST(engine_save_graphs_writes_text_and_dot) {
    xt_store st;
    xt_store_init(&st);
    int a = add_slot(&st, "a", 1, (int32_t[]){4}, NULL);
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/graphs", test_tmpdir());
    xt_engine_opts o = {.fuse = 1, .save_graphs_dir = dir};
    xt_engine *en = xt_engine_new(&st, &o);
    xt_graph *g = xt_engine_graph(en);
    float v[4];
    xt_fetch(g, xt_relu(g, xt_add(g, xt_leaf(g, a), xt_const(g, 1.0f))), v, sizeof v);
    CHECK(xt_mark_step(en, &e) == 0);
    xt_exec_stats s;
    xt_engine_last_stats(en, &s);
    char path[2200], out[4096];
    snprintf(path, sizeof path, "cat %s/graph-%016llx.txt; grep -c cluster_ %s/graph-%016llx.fused.dot; grep -c RELU %s/graph-%016llx.before-fusion.dot", dir,
             (unsigned long long)s.graph_hash, dir, (unsigned long long)s.graph_hash, dir, (unsigned long long)s.graph_hash);
    CHECK_EQ(test_run(path, out, sizeof out), 0);
    CHECK_STR_CONTAINS(out, "= RELU [4](");
    CHECK_STR_CONTAINS(out, "fused#0");
    xt_engine_free(en);
    xt_store_free(&st);
}

static int g_calls;
static size_t g_len;
static int fake_allreduce(void *ctx, float *buf, size_t n, xt_err *e) {
    g_calls++;
    g_len = n;
    for (size_t i = 0; i < n; i++) buf[i] *= 0.5f; /* "mean over 2 replicas holding equal values" times 2 -> visible */
    return 0;
}

TEST(engine_allreduce_packs_gradients_into_the_collective_block) {
    xt_store st;
    xt_store_init(&st);
    int w1 = add_slot(&st, "w1", 1, (int32_t[]){3}, NULL);
    int w2 = add_slot(&st, "w2", 2, (int32_t[]){2, 2}, NULL);
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    fill(&st, w1, (float[]){1, 2, 3});
    fill(&st, w2, (float[]){1, 1, 1, 1});
    static float block[64];
    xt_engine_opts o = {.fuse = 1, .allreduce = fake_allreduce, .collective_buf = block, .collective_floats = 64};
    xt_engine *en = xt_engine_new(&st, &o);
    xt_graph *g = xt_engine_graph(en);
    xt_t W1 = xt_leaf(g, w1), W2 = xt_leaf(g, w2);
    xt_t loss = xt_add(g, xt_sum_all(g, xt_square(g, W1)), xt_sum_all(g, xt_mul(g, W2, xt_const(g, 3.0f))));
    xt_t wrt[2] = {W1, W2}, gr[2];
    CHECK(xt_backward(g, loss, wrt, 2, gr) == 0);
    xt_all_reduce(g, gr, 2);
    float g1[3], g2[4];
    xt_fetch(g, gr[0], g1, sizeof g1);
    xt_fetch(g, gr[1], g2, sizeof g2);
    CHECK(xt_mark_step(en, &e) == 0);
    CHECK_EQ(g_calls, 1);          /* one collective for all gradients */
    CHECK_EQ(g_len, 32);           /* two pieces, each padded to 16 floats */
    for (int i = 0; i < 3; i++) CHECK_NEAR(g1[i], (i + 1) * 2 * 0.5f, 1e-6);
    for (int i = 0; i < 4; i++) CHECK_NEAR(g2[i], 1.5f, 1e-6);
    CHECK_NEAR(block[16], 1.5f, 1e-6); /* the block itself holds the reduced values */
    xt_engine_free(en);
    xt_store_free(&st);
}

/* 100 SGD steps of a 2-layer MLP on one fixed batch: one compile, loss falls. */
TEST(engine_training_loop_compiles_once_and_learns) {
    xt_store st;
    xt_store_init(&st);
    int x = xt_store_add(&st, "x", XT_SLOT_INPUT, XT_F32, 2, (int32_t[]){16, 6});
    int y = xt_store_add(&st, "y", XT_SLOT_INPUT, XT_I32, 1, (int32_t[]){16});
    int w1 = add_slot(&st, "w1", 2, (int32_t[]){12, 6}, NULL), b1 = add_slot(&st, "b1", 1, (int32_t[]){12}, NULL);
    int w2 = add_slot(&st, "w2", 2, (int32_t[]){3, 12}, NULL), b2 = add_slot(&st, "b2", 1, (int32_t[]){3}, NULL);
    int lr = xt_store_add(&st, "lr", XT_SLOT_STATE, XT_F32, 0, NULL);
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    float xb[96];
    int32_t yb[16];
    for (int i = 0; i < 16; i++) {
        yb[i] = i % 3;
        for (int k = 0; k < 6; k++) xb[i * 6 + k] = (k == yb[i] ? 1.0f : 0.0f) + 0.1f * sinf((float)(i * 6 + k));
    }
    for (int i = 0; i < 72; i++) xt_store_f32(&st, w1)[i] = 0.3f * sinf((float)i * 1.3f);
    for (int i = 0; i < 36; i++) xt_store_f32(&st, w2)[i] = 0.3f * cosf((float)i * 0.7f);
    xt_engine *en = xt_engine_new(&st, NULL);
    int64_t uncached0 = xt_counter_get("UncachedCompile");
    float first = 0, last = 0;
    int params[4] = {w1, b1, w2, b2};
    for (int step = 0; step < 100; step++) {
        xt_graph *g = xt_engine_graph(en);
        xt_store_bind(&st, x, xb);
        xt_store_bind(&st, y, yb);
        *xt_store_f32(&st, lr) = step < 50 ? 0.5f : 0.25f; /* a schedule changes data, not the graph */
        xt_t P[4], G[4];
        for (int k = 0; k < 4; k++) P[k] = xt_leaf(g, params[k]);
        xt_t h = xt_relu(g, xt_add(g, xt_matmul(g, xt_leaf(g, x), P[0], 0, 1), P[1]));
        xt_t logits = xt_add(g, xt_matmul(g, h, P[2], 0, 1), P[3]);
        xt_t loss = xt_nll_loss(g, xt_log_softmax(g, logits), xt_leaf(g, y));
        CHECK(xt_backward(g, loss, P, 4, G) == 0);
        xt_all_reduce(g, G, 4);
        for (int k = 0; k < 4; k++) xt_assign(g, params[k], xt_sub(g, P[k], xt_mul(g, xt_leaf(g, lr), G[k])));
        float l;
        xt_fetch(g, loss, &l, 4);
        CHECK(xt_mark_step(en, &e) == 0);
        if (step == 0) first = l;
        last = l;
    }
    CHECK_EQ(xt_counter_get("UncachedCompile") - uncached0, 1);
    CHECK_MSG(last < first * 0.1f, "loss %g -> %g", first, last);
    xt_exec_stats s;
    xt_engine_last_stats(en, &s);
    CHECK(s.fused_kernels >= 4); /* bias+relu, the four parameter updates */
    xt_engine_free(en);
    xt_store_free(&st);
}

/* Many distinct graphs in one run: a warning naming what changed. */
TEST(engine_recompile_warning_names_the_change) {
    xt_store st;
    xt_store_init(&st);
    int x = xt_store_add(&st, "x", XT_SLOT_INPUT, XT_F32, 2, (int32_t[]){1, 4});
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    static float data[64 * 4];
    char path[600];
    snprintf(path, sizeof path, "%s/stderr", test_tmpdir());
    fflush(stderr);
    FILE *saved = stderr;
    stderr = fopen(path, "w");
    xt_engine *en = xt_engine_new(&st, NULL);
    for (int n = 1; n <= 8; n++) { /* a new batch size every step: a new graph every step */
        xt_store_set_input_shape(&st, x, 2, (int32_t[]){n, 4});
        xt_store_bind(&st, x, data);
        xt_graph *g = xt_engine_graph(en);
        float s;
        xt_fetch(g, xt_sum_all(g, xt_relu(g, xt_leaf(g, x))), &s, 4);
        CHECK(xt_mark_step(en, &e) == 0);
    }
    fclose(stderr);
    stderr = saved;
    xt_engine_free(en);
    xt_store_free(&st);
    char cmd[700], out[2048];
    snprintf(cmd, sizeof cmd, "cat %s", path);
    test_run(cmd, out, sizeof out);
    CHECK_STR_CONTAINS(out, "distinct graphs compiled");
    CHECK_STR_CONTAINS(out, "has shape [6, 4] instead of [5, 4]");
}

/* The fused interpreter's loops run at the CPU's SIMD width (4, 8 or 16
 * lanes); every width must give the same bits, since each element is one
 * operation. A chain of every elementwise op over 1000 elements (not a
 * multiple of any width) is run at each level the CPU has. */
TEST(engine_elementwise_groups_agree_bitwise_at_every_simd_width) {
    xt_store st;
    xt_store_init(&st);
    int a = add_slot(&st, "a", 1, (int32_t[]){1000}, NULL), b = add_slot(&st, "b", 1, (int32_t[]){1000}, NULL);
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    float *va = xt_store_f32(&st, a), *vb = xt_store_f32(&st, b);
    for (int i = 0; i < 1000; i++) {
        va[i] = (float)((i * 37) % 101) / 17.0f - 2.5f;
        vb[i] = (float)((i * 13) % 89) / 23.0f + 0.25f;
    }
    static float out[3][1000];
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        xt_engine *en = xt_engine_new(&st, NULL);
        xt_graph *g = xt_engine_graph(en);
        xt_t x = xt_leaf(g, a), y = xt_leaf(g, b);
        xt_t t = xt_add(g, xt_mul(g, x, y), xt_div(g, xt_neg(g, x), y));
        t = xt_sub(g, xt_relu(g, t), xt_rsqrt(g, xt_add(g, xt_square(g, y), xt_const(g, 1.0f))));
        t = xt_add(g, xt_log(g, xt_add(g, xt_exp(g, t), xt_const(g, 1.0f))), xt_sqrt(g, y));
        t = xt_relu_bwd(g, t, x);
        xt_fetch(g, t, out[lvl], sizeof out[lvl]);
        CHECK_MSG(xt_mark_step(en, &e) == 0, "%s", e.msg);
        xt_engine_free(en);
        if (lvl) CHECK_MSG(!memcmp(out[lvl], out[0], sizeof out[0]), "SIMD level %d differs from the baseline", lvl);
    }
    k_simd_force(-1);
    CHECK(isfinite(out[0][1]));
    xt_store_free(&st);
}

/* Per-channel factors over planes (batch norm's apply and backward): the
 * interpreter passes a broadcast operand as one value per row, on either
 * side of a binary op, takes several rows per chunk when the planes are
 * short and pieces of a row when they are long, and fills a chunk of copies
 * only where an op needs one (BROADCAST). Every element must be the
 * formula's, at every SIMD width: planes of 1, 16 and 144 elements (many
 * rows per chunk) and 1200 (longer than a chunk), channels 5. */
TEST(engine_elementwise_per_channel_operands_match_the_formula) {
    static const int32_t planes[][2] = {{1, 1}, {4, 4}, {12, 12}, {40, 30}};
    enum { N = 3, C = 5 };
    for (size_t pi = 0; pi < sizeof planes / sizeof planes[0]; pi++) {
        int H = planes[pi][0], W = planes[pi][1], HW = H * W;
        int32_t shape[4] = {N, C, H, W}, per_c[4] = {1, C, 1, 1};
        xt_store st;
        xt_store_init(&st);
        int xs = add_slot(&st, "x", 4, shape, NULL), ss = add_slot(&st, "s", 4, per_c, NULL);
        int ts = add_slot(&st, "t", 4, per_c, NULL);
        xt_err e = {0};
        CHECK(xt_store_finalize(&st, &e) == 0);
        float *x = xt_store_f32(&st, xs), *sv = xt_store_f32(&st, ss), *tv = xt_store_f32(&st, ts);
        size_t n = (size_t)N * C * HW;
        for (size_t i = 0; i < n; i++) x[i] = (float)((i * 37) % 101) / 13.0f - 3.5f;
        for (int c = 0; c < C; c++) sv[c] = 0.75f + 0.3f * (float)c, tv[c] = (float)c / 7.0f - 0.45f;
        float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++) {
            int c = (int)(i / (size_t)HW % C);
            float p = x[i] * sv[c];
            p = p + tv[c];
            p = p > 0.0f ? p : 0.0f;
            float q = sv[c] - x[i];
            want[i] = p + q / tv[c];
        }
        for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
            k_simd_force(lvl);
            xt_engine *en = xt_engine_new(&st, NULL);
            xt_graph *g = xt_engine_graph(en);
            xt_t xl = xt_leaf(g, xs), sl = xt_leaf(g, ss), tl = xt_leaf(g, ts);
            xt_t p = xt_relu(g, xt_add(g, xt_mul(g, xl, sl), tl));
            xt_t q = xt_div(g, xt_sub(g, sl, xl), xt_broadcast_to(g, tl, 4, shape));
            xt_fetch(g, xt_add(g, p, q), got, n * sizeof(float));
            CHECK_MSG(xt_mark_step(en, &e) == 0, "%s", e.msg);
            xt_exec_stats stats;
            xt_engine_last_stats(en, &stats);
            CHECK_EQ(stats.fused_kernels, 1);
            xt_engine_free(en);
            size_t bad = 0;
            while (bad < n && !memcmp(&got[bad], &want[bad], sizeof(float))) bad++;
            CHECK_MSG(bad == n, "planes %dx%d, SIMD level %d: element %zu is %.9g, the formula gives %.9g", H, W, lvl, bad,
                      bad < n ? got[bad] : 0.0, bad < n ? want[bad] : 0.0);
        }
        k_simd_force(-1);
        free(want);
        free(got);
        xt_store_free(&st);
    }
}

/* Batch norm's backward pattern: per-channel sums of values a group makes
 * or reads (pass_fuse.c's absorbable_sum, split_after_sums). g's sum waits
 * for the group that reads g and joins its start; p = g*x is summed and
 * fetched; q = p*x re-reads x, so the group goes on past p's sum; q is
 * only summed and then read by u = q*x + s (its register must outlive the
 * group's last instruction, though q*x wants a register after q's last
 * read). w reads a sum, so it cannot join the group still adding it up; w
 * is summed, and z = w*g reads nothing w's group reads, so it starts a
 * group of its own. The sums join where the plane fits one interpreter chunk
 * (not 40x30), and every value is the unfused plan's, bit for bit, at every
 * SIMD width. */
static void channel_sums(xt_store *st, int fuse, int xs, int gs, int ss, const int32_t *shape, float *out, size_t n,
                         xt_exec_stats *stats) {
    xt_engine_opts o = {.fuse = fuse};
    xt_engine *en = xt_engine_new(st, &o);
    xt_graph *g = xt_engine_graph(en);
    const int32_t per_c[4] = {1, shape[1], 1, 1};
    xt_t x = xt_leaf(g, xs), gl = xt_leaf(g, gs), s = xt_leaf(g, ss);
    xt_t sum_g = xt_sum_to(g, gl, 4, per_c);
    xt_t p = xt_mul(g, gl, x);
    xt_t sum_p = xt_sum_to(g, p, 4, per_c);
    xt_t q = xt_mul(g, p, x);
    xt_t sum_q = xt_sum_to(g, q, 4, per_c);
    xt_t u = xt_add(g, xt_mul(g, q, x), s);
    xt_t w = xt_add(g, p, xt_broadcast_to(g, sum_p, 4, shape));
    xt_t sum_w = xt_sum_to(g, w, 4, per_c);
    xt_t z = xt_mul(g, w, gl);
    int C = shape[1];
    xt_t sums[4] = {sum_g, sum_p, sum_q, sum_w}, full[4] = {p, u, w, z};
    for (int k = 0; k < 4; k++) xt_fetch(g, sums[k], out + k * C, (size_t)C * 4);
    for (int k = 0; k < 4; k++) xt_fetch(g, full[k], out + 4 * C + k * n, n * 4);
    xt_err e = {0};
    CHECK_MSG(xt_mark_step(en, &e) == 0, "%s", e.msg);
    xt_engine_last_stats(en, stats);
    xt_engine_free(en);
}

TEST(engine_per_channel_sums_join_the_group_that_makes_or_reads_them) {
    static const int32_t planes[][2] = {{4, 4}, {12, 12}, {32, 32}, {40, 30}};
    enum { N = 3, C = 5 };
    for (size_t pi = 0; pi < sizeof planes / sizeof planes[0]; pi++) {
        int32_t shape[4] = {N, C, planes[pi][0], planes[pi][1]}, per_c[4] = {1, C, 1, 1};
        size_t n = (size_t)N * C * planes[pi][0] * planes[pi][1], total = 4 * C + 4 * n;
        int absorbed = planes[pi][0] * planes[pi][1] <= 1024;
        xt_store st;
        xt_store_init(&st);
        int xs = add_slot(&st, "x", 4, shape, NULL), gs = add_slot(&st, "g", 4, shape, NULL);
        int ss = add_slot(&st, "s", 4, per_c, NULL);
        xt_err e = {0};
        CHECK(xt_store_finalize(&st, &e) == 0);
        float *x = xt_store_f32(&st, xs), *gv = xt_store_f32(&st, gs), *sv = xt_store_f32(&st, ss);
        for (size_t i = 0; i < n; i++) {
            x[i] = sinf((float)i * 0.37f) * 3.0f;
            gv[i] = cosf((float)i * 1.3f) * (i % 7 == 0 ? 1e4f : 1.0f); /* spread: the order of the adds shows */
        }
        gv[0] = -0.0f;
        for (int c = 0; c < C; c++) sv[c] = 0.5f + 0.25f * (float)c;
        float *fused = malloc(total * sizeof(float)), *plain = malloc(total * sizeof(float));
        xt_exec_stats sf, sp;
        for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
            k_simd_force(lvl);
            channel_sums(&st, 1, xs, gs, ss, shape, fused, n, &sf);
            channel_sums(&st, 0, xs, gs, ss, shape, plain, n, &sp);
            size_t bad = 0;
            while (bad < total && !memcmp(&fused[bad], &plain[bad], sizeof(float))) bad++;
            CHECK_MSG(bad == total, "planes %dx%d, SIMD level %d: value %zu is %.9g fused, %.9g unfused", planes[pi][0],
                      planes[pi][1], lvl, bad, bad < total ? fused[bad] : 0.0, bad < total ? plain[bad] : 0.0);
            /* absorbed: {sum, p, sum, q, sum, u}, {w, sum}, {z}; else sum {p} sum {q} sum {u, w} sum {z} */
            CHECK_MSG(sf.kernels == (absorbed ? 3 : 8), "planes %dx%d: %d kernels", planes[pi][0], planes[pi][1], sf.kernels);
        }
        k_simd_force(-1);
        free(fused);
        free(plain);
        xt_store_free(&st);
    }
}

/* conv -> ReLU -> 2x2/2 max pool (wide_cnn's conv2): the pool and the ReLU
 * run in the convolution's epilogue with the ReLU's backward moved behind
 * the pool's (pass_conv_epilogue.c), but only when nothing else reads the
 * ReLU's output; either way the gradients are the unfused plan's, bit for
 * bit. An odd output width leaves a column no window covers. */
static void relu_pool_grads(xt_store *s, int fuse, int also_read_relu, int x, int w, float *gx, float *gw,
                            xt_exec_stats *st) {
    xt_engine_opts o = {.fuse = fuse};
    xt_engine *en = xt_engine_new(s, &o);
    xt_graph *g = xt_engine_graph(en);
    xt_t lx = xt_leaf(g, x), lw = xt_leaf(g, w);
    xt_t r = xt_relu(g, xt_conv2d(g, lx, lw, XT_NONE, 1, 1, 1, 1)); /* (3, 4, 6, 7) */
    xt_t m = xt_max_pool2d(g, r, 2, 2, 2, 2, 0, 0);                 /* (3, 4, 3, 3) */
    xt_t loss = xt_sum_all(g, xt_mul(g, m, m));
    if (also_read_relu == 1) loss = xt_add(g, loss, xt_sum_all(g, r)); /* in the loss: another gradient into the ReLU */
    xt_t wrt[2] = {lx, lw}, grads[2];
    CHECK(xt_backward(g, loss, wrt, 2, grads) == 0);
    xt_fetch(g, grads[0], gx, 3 * 2 * 6 * 7 * 4);
    xt_fetch(g, grads[1], gw, 4 * 2 * 3 * 3 * 4);
    if (also_read_relu == 2) xt_fetch(g, xt_sum_all(g, r), &gw[72], 4); /* read forward only: no gradient */
    xt_err e = {0};
    CHECK_MSG(xt_mark_step(en, &e) == 0, "%s", e.msg);
    xt_engine_last_stats(en, st);
    xt_engine_free(en);
}

TEST(engine_conv_relu_pool_epilogue_only_where_the_relu_has_no_other_reader) {
    xt_store st;
    xt_store_init(&st);
    int x = add_slot(&st, "x", 4, (int32_t[]){3, 2, 6, 7}, NULL);
    int w = add_slot(&st, "w", 4, (int32_t[]){4, 2, 3, 3}, NULL);
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    for (int i = 0; i < 3 * 2 * 6 * 7; i++) xt_store_f32(&st, x)[i] = sinf(0.7f * (float)i);
    for (int i = 0; i < 4 * 2 * 3 * 3; i++) xt_store_f32(&st, w)[i] = cosf(1.3f * (float)i) - 0.1f;
    for (int also = 0; also < 3; also++) { /* the ReLU's output read by the pool only, also in the loss, also fetched */
        float gx[2][252], gw[2][73] = {{0}};
        xt_exec_stats sf, sp;
        relu_pool_grads(&st, 1, also, x, w, gx[0], gw[0], &sf);
        relu_pool_grads(&st, 0, also, x, w, gx[1], gw[1], &sp);
        CHECK_MSG(!memcmp(gx[0], gx[1], sizeof gx[0]) && !memcmp(gw[0], gw[1], sizeof gw[0]),
                  "ReLU read elsewhere %d: the fused gradients differ from the unfused ones", also);
        CHECK_EQ(sf.pool_epilogues, also ? 0 : 1);
        CHECK_EQ(sf.relu_epilogues, 1); /* the pool's, or the conv's own when the ReLU is read twice */
        CHECK_EQ(sp.pool_epilogues + sp.relu_epilogues, 0);
        int nonzero = 0;
        for (int i = 0; i < 72; i++) nonzero += gw[0][i] != 0.0f;
        CHECK(nonzero > 0);
    }
    xt_store_free(&st);
}

/* A per-channel sum of a max pool's backward (the conv bias gradient under
 * a pool) reads the pooled gradient instead (pass_sum_pool.c): in the
 * wide_cnn order (conv, ReLU, 2x2 pool: the pool's backward is behind the
 * ReLU swap), the seed order (conv, 2x2 pool, ReLU) and under an
 * overlapping 3x3/1 pool; a sum that keeps a spatial dim (a bias along W)
 * keeps reading the backward. The sums agree with the literal ones (the
 * same plan with literal_sums) to float rounding; the other gradients bit
 * for bit. */
static int sum_pool_grads(xt_store *s, int literal, int order, int x, int w, int b, int bw, float *gx, float *gw,
                          float *gb, float *gbw) {
    xt_engine_opts o = {.fuse = 1, .literal_sums = literal};
    xt_engine *en = xt_engine_new(s, &o);
    xt_graph *g = xt_engine_graph(en);
    xt_t lx = xt_leaf(g, x), lw = xt_leaf(g, w), lb = xt_leaf(g, b), lbw = xt_leaf(g, bw);
    xt_t y = xt_conv2d(g, lx, lw, lb, 1, 1, 1, 1); /* (3, 4, 6, 8) */
    if (order == 3) y = xt_add(g, y, lbw);          /* a bias along W too */
    xt_t m = order == 0   ? xt_max_pool2d(g, xt_relu(g, y), 2, 2, 2, 2, 0, 0)
             : order == 2 ? xt_max_pool2d(g, y, 3, 3, 1, 1, 0, 0)
                          : xt_relu(g, xt_max_pool2d(g, y, 2, 2, 2, 2, 0, 0));
    xt_t loss = xt_sum_all(g, xt_mul(g, m, m));
    xt_t wrt[4] = {lx, lw, lb, lbw}, grads[4];
    CHECK(xt_backward(g, loss, wrt, order == 3 ? 4 : 3, grads) == 0);
    xt_fetch(g, grads[0], gx, 3 * 2 * 6 * 8 * 4);
    xt_fetch(g, grads[1], gw, 4 * 2 * 3 * 3 * 4);
    xt_fetch(g, grads[2], gb, 4 * 4);
    if (order == 3) xt_fetch(g, grads[3], gbw, 8 * 4);
    xt_err e = {0};
    CHECK_MSG(xt_mark_step(en, &e) == 0, "%s", e.msg);
    xt_exec_stats st;
    xt_engine_last_stats(en, &st);
    xt_engine_free(en);
    return st.sums_through_pool;
}

TEST(engine_channel_sum_of_a_pool_backward_reads_the_pooled_gradient) {
    xt_store st;
    xt_store_init(&st);
    int x = add_slot(&st, "x", 4, (int32_t[]){3, 2, 6, 8}, NULL);
    int w = add_slot(&st, "w", 4, (int32_t[]){4, 2, 3, 3}, NULL);
    int b = add_slot(&st, "b", 1, (int32_t[]){4}, NULL);
    int bw = add_slot(&st, "bw", 4, (int32_t[]){1, 1, 1, 8}, NULL);
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    for (int i = 0; i < 3 * 2 * 6 * 8; i++) xt_store_f32(&st, x)[i] = sinf(0.7f * (float)i);
    for (int i = 0; i < 4 * 2 * 3 * 3; i++) xt_store_f32(&st, w)[i] = cosf(1.3f * (float)i) - 0.1f;
    for (int i = 0; i < 4; i++) xt_store_f32(&st, b)[i] = 0.1f * (float)i - 0.15f;
    for (int i = 0; i < 8; i++) xt_store_f32(&st, bw)[i] = 0.05f * (float)i;
    for (int order = 0; order < 4; order++) {
        float gx[2][288], gw[2][72], gb[2][4], gbw[2][8] = {{0}};
        int fused = sum_pool_grads(&st, 0, order, x, w, b, bw, gx[0], gw[0], gb[0], gbw[0]);
        int literal = sum_pool_grads(&st, 1, order, x, w, b, bw, gx[1], gw[1], gb[1], gbw[1]);
        CHECK_EQ(fused, 1); /* the bias's sum; not bw's, which keeps W */
        CHECK_EQ(literal, 0);
        CHECK_MSG(!memcmp(gx[0], gx[1], sizeof gx[0]) && !memcmp(gw[0], gw[1], sizeof gw[0]) &&
                      !memcmp(gbw[0], gbw[1], sizeof gbw[0]),
                  "order %d: gradients other than the bias's differ", order);
        int nonzero = 0;
        for (int c = 0; c < 4; c++) {
            CHECK_NEAR(gb[0][c], gb[1][c], 1e-6 * (fabsf(gb[1][c]) + 1.0f));
            nonzero += gb[1][c] != 0.0f;
        }
        CHECK(nonzero >= 2);
    }
    xt_store_free(&st);
}

/* One row of the kernel report: its microseconds per step and GFLOP/s
 * (-1: "-"), found by the kernel's op and output shape; 0 if absent. */
static int report_row(const char *report, const char *op, const char *shape, double *us, double *gflops) {
    for (const char *l = report; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        char line[256];
        if (len >= sizeof line) continue;
        memcpy(line, l, len);
        line[len] = 0;
        char *o = strstr(line, op), *s = strstr(line, shape);
        if (!o || !s || o[strlen(op)] != ' ') continue;
        char run[16], rate[16];
        if (sscanf(s + strlen(shape), " %15s %lf %*f%% %15s", run, us, rate) != 3) return 0;
        *gflops = strcmp(rate, "-") ? atof(rate) : -1.0;
        return 1;
    }
    return 0;
}

/* The per-kernel profile: with `profile` on, one row per kernel of the
 * plan (the engine's own count), the steps it covers, and the arithmetic
 * rate of a convolution and a GEMM from their shapes (2 FLOPs per
 * multiply-add: conv 8x8x16x16 -> 16 channels, 3x3, pad 1, is 2,359,296
 * multiply-adds; the GEMM [8, 4096] x [64, 4096]^T is 2,097,152). Reset
 * empties it; without `profile` there is nothing to report. */
TEST(engine_kernel_report_times_every_kernel_with_its_rate) {
    xt_store st;
    xt_store_init(&st);
    int x = add_slot(&st, "x", 4, (int32_t[]){8, 8, 16, 16}, NULL);
    int w = add_slot(&st, "w", 4, (int32_t[]){16, 8, 3, 3}, NULL);
    int v = add_slot(&st, "v", 2, (int32_t[]){64, 4096}, NULL);
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    for (int s = 0; s < 3; s++)
        for (int64_t i = 0; i < st.slots[s].numel; i++) xt_store_f32(&st, s)[i] = (float)((i * 37 + s) % 17) / 17.0f - 0.5f;
    for (int profile = 1; profile >= 0; profile--) {
        xt_engine_opts o = {.fuse = 1, .profile = profile};
        xt_engine *en = xt_engine_new(&st, &o);
        xt_exec_stats es = {0};
        for (int step = 0; step < 4; step++) {
            if (step == 1) xt_engine_kernel_profile_reset(en); /* the compile step's times go */
            xt_graph *g = xt_engine_graph(en);
            xt_t lw = xt_leaf(g, w), lv = xt_leaf(g, v);
            xt_t h = xt_relu(g, xt_conv2d(g, xt_leaf(g, x), lw, XT_NONE, 1, 1, 1, 1));
            xt_t y = xt_matmul(g, xt_reshape(g, h, 2, (int32_t[]){8, 4096}), lv, 0, 1);
            xt_t loss = xt_sum_all(g, xt_mul(g, y, y)), wrt[2] = {lw, lv}, gr[2];
            CHECK(xt_backward(g, loss, wrt, 2, gr) == 0);
            float l;
            xt_fetch(g, loss, &l, sizeof l);
            CHECK_MSG(xt_mark_step(en, &e) == 0, "%s", e.msg);
            xt_engine_last_stats(en, &es);
        }
        char *report = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&report, &len);
        xt_engine_kernel_report(en, f);
        fclose(f);
        if (!profile) {
            CHECK_MSG(len == 0, "profile off, yet: %s", report);
        } else {
            CHECK_MSG(strstr(report, "3 steps") != NULL, "%s", report);
            int rows = 0;
            for (char *l = strchr(report, '\n'); l; l = strchr(l + 1, '\n')) {
                int k;
                rows += sscanf(l + 1, "%d", &k) == 1;
            }
            CHECK_EQ(rows, es.kernels);
            double us = 0, gf = 0;
            CHECK_MSG(report_row(report, "CONV2D", "[8, 16, 16, 16]", &us, &gf), "%s", report);
            CHECK_MSG(us > 0 && fabs(gf - 2.0 * 2359296 / (us * 1e3)) <= 0.02 * gf + 0.1, "conv: %.1f us, %.1f GFLOP/s", us, gf);
            CHECK_MSG(report_row(report, "MATMUL", "[8, 64]", &us, &gf), "%s", report);
            CHECK_MSG(us > 0 && fabs(gf - 2.0 * 2097152 / (us * 1e3)) <= 0.02 * gf + 0.1, "gemm: %.1f us, %.1f GFLOP/s", us, gf);
            free(report);
            xt_engine_kernel_profile_reset(en);
            f = open_memstream(&report, &len);
            xt_engine_kernel_report(en, f);
            fclose(f);
            CHECK_MSG(len == 0, "after a reset: %s", report);
        }
        free(report);
        xt_engine_free(en);
    }
    xt_store_free(&st);
}

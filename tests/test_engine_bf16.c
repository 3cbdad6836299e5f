/* test_engine_bf16.c — mixed precision in the engine: the compile cache keeps
 * fp32 and bf16 graphs apart (each compiled once), the precision pass rounds
 * each operand once per step however many kernels read it, the memory plan
 * sizes a rounded value at 2 bytes per element, and the numbers are those
 * of bf16-rounded operands with fp32 accumulation.
 * Not here: the kernels against their twins (test_kernels_bf16.c), the
 * gradient check under bf16 (test_engine_grad.c), the binary (test_train.c). */
#include "test.h"

#include <math.h>
#include <string.h>

#include "engine/graph.h"
#include "kernels/bf16.h"

/* y = matmul(relu(conv(x, w)) viewed (N, Co*Ho*Wo), v^T); loss = sum(y * y);
 * gradients of w and v. Shapes: x (2,3,6,6), w (4,3,3,3), v (5,64). */
typedef struct net {
    xt_store st;
    int sx, sw, sv;
    float loss, gw[4 * 27], gv[5 * 64];
} net;

static void net_init(net *m) {
    xt_store_init(&m->st);
    m->sx = xt_store_add(&m->st, "x", XT_SLOT_BUFFER, XT_F32, 4, (int32_t[]){2, 3, 6, 6});
    m->sw = xt_store_add(&m->st, "w", XT_SLOT_PARAM, XT_F32, 4, (int32_t[]){4, 3, 3, 3});
    m->sv = xt_store_add(&m->st, "v", XT_SLOT_PARAM, XT_F32, 2, (int32_t[]){5, 64});
    xt_err e = {0};
    CHECK(xt_store_finalize(&m->st, &e) == 0);
    unsigned s = 3;
    int slots[3] = {m->sx, m->sw, m->sv};
    for (int k = 0; k < 3; k++)
        for (int64_t i = 0; i < m->st.slots[slots[k]].numel; i++) {
            s = s * 1664525u + 1013904223u;
            xt_store_f32(&m->st, slots[k])[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
        }
}

/* one traced step; returns the engine's stats */
static xt_exec_stats net_step(net *m, xt_engine *en) {
    xt_graph *g = xt_engine_graph(en);
    xt_t x = xt_leaf(g, m->sx), w = xt_leaf(g, m->sw), v = xt_leaf(g, m->sv);
    xt_t h = xt_relu(g, xt_conv2d(g, x, w, XT_NONE, 1, 1, 0, 0));
    xt_t y = xt_matmul(g, xt_reshape(g, h, 2, (int32_t[]){2, 64}), v, 0, 1);
    xt_t loss = xt_sum_all(g, xt_mul(g, y, y)), wrt[2] = {w, v}, gr[2];
    CHECK(xt_backward(g, loss, wrt, 2, gr) == 0);
    xt_fetch(g, loss, &m->loss, sizeof m->loss);
    xt_fetch(g, gr[0], m->gw, sizeof m->gw);
    xt_fetch(g, gr[1], m->gv, sizeof m->gv);
    xt_err e = {0};
    CHECK_MSG(xt_mark_step(en, &e) == 0, "%s", e.msg);
    xt_exec_stats s;
    xt_engine_last_stats(en, &s);
    return s;
}

TEST(engine_bf16_and_fp32_graphs_cached_apart_each_compiled_once) {
    net m;
    net_init(&m);
    xt_engine *en = xt_engine_new(&m.st, NULL);
    float loss[2], gw[2][4 * 27];
    for (int round = 0; round < 3; round++)
        for (int prec = XT_PREC_FP32; prec <= XT_PREC_BF16; prec++) {
            xt_engine_set_precision(en, prec);
            xt_exec_stats s = net_step(&m, en);
            CHECK_EQ(s.precision, prec);
            CHECK_EQ(s.cache_hit, round > 0);                  /* compiled on first sight only */
            CHECK_EQ(s.distinct_graphs, round == 0 ? prec + 1 : 2);
            if (round == 0) {
                loss[prec] = m.loss;
                memcpy(gw[prec], m.gw, sizeof m.gw);
            } else { /* a cache hit runs the plan of its own precision: the same bits */
                CHECK_EQ(m.loss, loss[prec]);
                CHECK(!memcmp(gw[prec], m.gw, sizeof m.gw));
            }
        }
    /* the two precisions did compute differently, by about bf16's rounding */
    CHECK(loss[0] != loss[1]);
    CHECK_MSG(fabsf(loss[0] - loss[1]) < 0.02f * fabsf(loss[0]), "loss fp32 %g vs bf16 %g", loss[0], loss[1]);
    xt_engine_free(en);
    xt_store_free(&m.st);
}

/* Each value a bf16 kernel reads is rounded once: x (conv fwd and
 * bwd_weight), w (conv fwd; bwd_data is not needed: x needs no gradient),
 * the conv gradient dy (bwd_weight), h (matmul fwd and the dv product), v
 * (matmul fwd and the dh product), dy of the matmul (dh and dv): 6 casts.
 * The plan's intermediates grow by those values at 2 bytes per element,
 * each rounded up to whole 64-byte lines as the planner places every buffer.
 * Fusion is off in both plans: the fp32 plan would run its ReLU in the
 * convolution's epilogue (pass_conv_relu.c), the bf16 one cannot, and the
 * count here is of casts. */
TEST(engine_bf16_casts_once_per_value_and_plans_them_at_2_bytes) {
    net m;
    net_init(&m);
    xt_engine *en = xt_engine_new(&m.st, &(xt_engine_opts){.fuse = 0});
    xt_exec_stats s32 = net_step(&m, en);
    xt_engine_set_precision(en, XT_PREC_BF16);
    xt_exec_stats s16 = net_step(&m, en);
    CHECK_EQ(s32.bf16_casts, 0);
    CHECK_EQ(s16.bf16_casts, 6);
    CHECK_EQ(s16.kernels, s32.kernels + 6);
    static const size_t cast_elems[6] = {2 * 3 * 36, 4 * 27, 2 * 4 * 16, 2 * 64, 5 * 64, 2 * 5};
    size_t bytes = 0;
    for (int i = 0; i < 6; i++) bytes += (cast_elems[i] * 2 + 63) / 64 * 64;
    CHECK_EQ(s16.intermediate_bytes - s32.intermediate_bytes, bytes);
    xt_engine_free(en);
    xt_store_free(&m.st);
}

/* The dump names the precision and marks the casts' dtype. */
TEST(engine_bf16_graph_dump_shows_precision) {
    net m;
    net_init(&m);
    const char *dir = test_tmpdir();
    xt_engine_opts o = {.fuse = 1, .precision = XT_PREC_BF16, .save_graphs_dir = dir};
    xt_engine *en = xt_engine_new(&m.st, &o);
    net_step(&m, en);
    char cmd[700], out[4096];
    snprintf(cmd, sizeof cmd, "head -1 %s/graph-*.txt; grep -c 'CAST_BF16:bf16' %s/graph-*.txt", dir, dir);
    CHECK_EQ(test_run(cmd, out, sizeof out), 0);
    CHECK_STR_CONTAINS(out, "precision bf16");
    CHECK_STR_CONTAINS(out, "\n6\n");
    xt_engine_free(en);
    xt_store_free(&m.st);
}

/* A ReLU whose output a bf16 kernel reads anyway takes its backward mask
 * from that bf16 copy (pass_precision.c): the compiled RELU_BWD reads a
 * CAST_BF16 node, and the weight gradient is the sum over bf16(x) times
 * bf16(dy where h > 0), h and dy as the step computed them (fetched), to
 * fp32 accumulation's rounding. A mask read at the wrong width or offset
 * (the elementwise interpreter widening the bf16 copy) fails the sum. */
TEST(engine_bf16_relu_backward_masks_with_the_rounded_activation) {
    net m;
    net_init(&m);
    const char *dir = test_tmpdir();
    xt_engine_opts o = {.fuse = 1, .precision = XT_PREC_BF16, .save_graphs_dir = dir};
    xt_engine *en = xt_engine_new(&m.st, &o);
    xt_graph *g = xt_engine_graph(en);
    xt_t x = xt_leaf(g, m.sx), w = xt_leaf(g, m.sw), v = xt_leaf(g, m.sv);
    xt_t h = xt_relu(g, xt_conv2d(g, x, w, XT_NONE, 1, 1, 0, 0));
    xt_t y = xt_matmul(g, xt_reshape(g, h, 2, (int32_t[]){2, 64}), v, 0, 1);
    xt_t loss = xt_sum_all(g, xt_mul(g, y, y)), wrt[2] = {w, h}, gr[2];
    CHECK(xt_backward(g, loss, wrt, 2, gr) == 0);
    static float hv[2 * 64], dh[2 * 64], gw[4 * 27];
    xt_fetch(g, h, hv, sizeof hv);
    xt_fetch(g, gr[1], dh, sizeof dh);
    xt_fetch(g, gr[0], gw, sizeof gw);
    xt_err e = {0};
    CHECK_MSG(xt_mark_step(en, &e) == 0, "%s", e.msg);
    /* the mask operand of the ReLU's backward is a bf16 cast (of h viewed
     * (2, 64) for the matmul, viewed back) */
    char cmd[900], out[4096];
    snprintf(cmd, sizeof cmd,
             "f=$(ls %s/graph-*.txt); m=$(grep ' = RELU_BWD ' $f | sed 's/.*, %%\\([0-9]*\\)).*/\\1/');"
             " while grep \"^%%$m = \" $f | grep -q ' = VIEW'; do" /* through the reshape back to the mask's shape */
             "   m=$(grep \"^%%$m = \" $f | sed 's/.*(%%\\([0-9]*\\)).*/\\1/'); done;"
             " grep \"^%%$m = \" $f | cut -d' ' -f3",
             dir);
    CHECK_EQ(test_run(cmd, out, sizeof out), 0);
    CHECK_STR_CONTAINS(out, "CAST_BF16:bf16");
    int npos = 0;
    for (int i = 0; i < 2 * 64; i++) npos += hv[i] > 0;
    CHECK_MSG(npos > 20 && npos < 108, "%d of 128 activations positive: the mask is not exercised", npos);
    const float *xs = xt_store_f32(&m.st, m.sx);
    for (int co = 0; co < 4; co++)
        for (int ci = 0; ci < 3; ci++)
            for (int kh = 0; kh < 3; kh++)
                for (int kw = 0; kw < 3; kw++) {
                    double want = 0, mag = 0;
                    for (int n = 0; n < 2; n++)
                        for (int oh = 0; oh < 4; oh++)
                            for (int ow = 0; ow < 4; ow++) {
                                int at = n * 64 + co * 16 + oh * 4 + ow;
                                float d = hv[at] > 0 ? dh[at] : 0.0f;
                                double t = (double)k_bf16_to_f32(k_bf16_from_f32(xs[((n * 3 + ci) * 6 + oh + kh) * 6 + ow + kw])) *
                                           k_bf16_to_f32(k_bf16_from_f32(d)); /* 32 fp32 sums: 4e-6 = 64 ulp bounds their rounding */
                                want += t;
                                mag += fabs(t);
                            }
                    float got = gw[((co * 3 + ci) * 3 + kh) * 3 + kw];
                    CHECK_MSG(fabs(got - want) <= 4e-6 * mag + 1e-30, "gw[%d,%d,%d,%d] %g, want %g", co, ci, kh, kw, got,
                              want);
                }
    xt_engine_free(en);
    xt_store_free(&m.st);
}

/* test_engine_safety.c — regression tests for the engine's memory-safety
 * and correctness defects, each built to fail on the engine that had it:
 * the store reading caller data after it moved (Adam's state slots), a
 * fixed operand array (the all-reduce of more than 64 gradients), fusion
 * reading a member through a view before it was written, an in-place
 * update through a misaligned view; and the guarantees that replaced them:
 * planning off gives the same numbers, a cached step allocates nothing,
 * the op table is complete. */
#include <math.h>
#include <string.h>

#include "alloc_count.h"
#include "data/loader.h"
#include "engine/plan.h"
#include "run/run.h"
#include "run/step.h"
#include "test.h"

TEST(store_add_copies_the_callers_shape_before_growing) {
    xt_store st;
    xt_store_init(&st);
    CHECK(xt_store_add(&st, "p", XT_SLOT_PARAM, XT_F32, 2, (int32_t[]){3, 5}) == 0);
    /* each add passes slot 0's own shape, as the optimizer passes a
     * parameter's; the array grows (32, 64, ...) several times meanwhile */
    for (int i = 1; i < 200; i++) {
        char name[32];
        snprintf(name, sizeof name, "state%d", i);
        CHECK(xt_store_add(&st, name, XT_SLOT_STATE, XT_F32, st.slots[0].rank, st.slots[0].shape) == i);
    }
    for (int i = 0; i < st.n; i++) {
        CHECK_EQ(st.slots[i].rank, 2);
        CHECK_EQ(st.slots[i].shape[0], 3);
        CHECK_EQ(st.slots[i].shape[1], 5);
        CHECK_EQ(st.slots[i].numel, 15);
    }
    xt_store_free(&st);
}

/* loss = sum_i sum(w_i^2): grad w_i = 2 w_i, all-reduced (one process:
 * identity), then w_i -= 0.1 grad. */
static void train_many_params(int nparams, int planner_off) {
    xt_store st;
    xt_store_init(&st);
    int slot[128];
    for (int i = 0; i < nparams; i++) {
        char name[32];
        snprintf(name, sizeof name, "w%d", i);
        slot[i] = xt_store_add(&st, name, XT_SLOT_PARAM, XT_F32, 1, (int32_t[]){3 + i % 5});
    }
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    for (int i = 0; i < nparams; i++)
        for (int k = 0; k < st.slots[slot[i]].numel; k++) xt_store_f32(&st, slot[i])[k] = (float)(i + 1) + 0.25f * (float)k;
    xt_engine_opts eo = {.fuse = 1, .no_memory_planner = planner_off};
    xt_engine *en = xt_engine_new(&st, &eo);
    xt_graph *g = xt_engine_graph(en);
    xt_t P[128], G[128], loss = XT_NONE;
    for (int i = 0; i < nparams; i++) {
        P[i] = xt_leaf(g, slot[i]);
        xt_t term = xt_sum_all(g, xt_square(g, P[i]));
        loss = loss == XT_NONE ? term : xt_add(g, loss, term);
    }
    CHECK(xt_backward(g, loss, P, nparams, G) == 0);
    xt_all_reduce(g, G, nparams);
    for (int i = 0; i < nparams; i++) xt_assign(g, slot[i], xt_sub(g, P[i], xt_mul(g, xt_const(g, 0.1f), G[i])));
    CHECK_MSG(xt_mark_step(en, &e) == 0, "%s", e.msg);
    for (int i = 0; i < nparams; i++)
        for (int k = 0; k < st.slots[slot[i]].numel; k++) {
            float w0 = (float)(i + 1) + 0.25f * (float)k;
            CHECK_NEAR(xt_store_f32(&st, slot[i])[k], w0 * 0.8f, 1e-5 * w0);
        }
    xt_engine_free(en);
    xt_store_free(&st);
}

TEST(all_reduce_takes_more_than_64_gradients) {
    train_many_params(100, 0);
    train_many_params(100, 1);
}

/* A = x + y (2, 8); V = A[8:16) as (8); B = z + V broadcast to (2, 8).
 * A and B are consecutive elementwise nodes of one shape, but B reads row
 * 1 of A for row 0: fused chunk by chunk, B would read A's row 1 before it
 * is written. */
static void fusion_through_view(int fuse, float *out_b, float *out_s) {
    xt_store st;
    xt_store_init(&st);
    int sx = xt_store_add(&st, "x", XT_SLOT_BUFFER, XT_F32, 2, (int32_t[]){2, 8});
    int sy = xt_store_add(&st, "y", XT_SLOT_BUFFER, XT_F32, 2, (int32_t[]){2, 8});
    int sz = xt_store_add(&st, "z", XT_SLOT_BUFFER, XT_F32, 2, (int32_t[]){2, 8});
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    for (int i = 0; i < 16; i++) {
        xt_store_f32(&st, sx)[i] = (float)i;
        xt_store_f32(&st, sy)[i] = 100.0f;
        xt_store_f32(&st, sz)[i] = 1000.0f * (float)(i + 1);
    }
    xt_engine_opts eo = {.fuse = fuse};
    xt_engine *en = xt_engine_new(&st, &eo);
    xt_graph *g = xt_engine_graph(en);
    xt_t a = xt_add(g, xt_leaf(g, sx), xt_leaf(g, sy));
    xt_t v = xt_view(g, a, 8, 1, (int32_t[]){8});
    xt_t b = xt_add(g, xt_leaf(g, sz), v);
    xt_t s = xt_mul(g, xt_leaf(g, sz), xt_view(g, a, 13, 0, NULL)); /* a broadcast scalar of A's row 1 */
    xt_fetch(g, b, out_b, 16 * sizeof(float));
    xt_fetch(g, s, out_s, 16 * sizeof(float));
    CHECK_MSG(xt_mark_step(en, &e) == 0, "%s", e.msg);
    xt_engine_free(en);
    xt_store_free(&st);
}

TEST(fusion_never_reads_a_member_through_a_view_before_it_is_written) {
    float fused_b[16], fused_s[16], plain_b[16], plain_s[16];
    fusion_through_view(1, fused_b, fused_s);
    fusion_through_view(0, plain_b, plain_s);
    for (int i = 0; i < 16; i++) {
        float want_b = 1000.0f * (float)(i + 1) + (float)(8 + i % 8) + 100.0f;
        float want_s = 1000.0f * (float)(i + 1) * (13.0f + 100.0f);
        CHECK_NEAR(plain_b[i], want_b, 0);
        CHECK_NEAR(plain_s[i], want_s, 0);
        CHECK_NEAR(fused_b[i], want_b, 0);
        CHECK_NEAR(fused_s[i], want_s, 0);
    }
}

/* W (2, 8) <- W + W[0:8) broadcast over rows: row 1 must add row 0's OLD
 * values, so W cannot be overwritten in place chunk by chunk. */
TEST(in_place_update_never_reads_an_element_it_already_overwrote) {
    for (int planner_off = 0; planner_off < 2; planner_off++) {
        xt_store st;
        xt_store_init(&st);
        int sw = xt_store_add(&st, "w", XT_SLOT_PARAM, XT_F32, 2, (int32_t[]){2, 8});
        xt_err e = {0};
        CHECK(xt_store_finalize(&st, &e) == 0);
        for (int i = 0; i < 16; i++) xt_store_f32(&st, sw)[i] = (float)(i + 1);
        xt_engine_opts eo = {.fuse = 1, .no_memory_planner = planner_off};
        xt_engine *en = xt_engine_new(&st, &eo);
        xt_graph *g = xt_engine_graph(en);
        xt_t w = xt_leaf(g, sw);
        xt_assign(g, sw, xt_add(g, w, xt_view(g, w, 0, 1, (int32_t[]){8})));
        CHECK_MSG(xt_mark_step(en, &e) == 0, "%s", e.msg);
        for (int i = 0; i < 16; i++) CHECK_NEAR(xt_store_f32(&st, sw)[i], (float)(i + 1) + (float)(i % 8 + 1), 0);
        xt_engine_free(en);
        xt_store_free(&st);
    }
}

/* The seed CNN with Adam and dropout, set up as the trainer does. */
typedef struct {
    xt_config c;
    xt_cli cli;
    xt_run r;
    float x[32 * 784];
    int32_t y[32];
} seed_run;

static void seed_run_init(seed_run *s) {
    memset(s, 0, sizeof *s);
    xt_err e = {0};
    xt_config_defaults(&s->c);
    CHECK_MSG(xt_spec_load(&s->c.spec, "models/fashion_cnn.yaml", &e) == 0, "%s", e.msg);
    s->c.optimizer = XT_OPT_ADAM;
    s->c.learning_rate = 1e-3;
    s->c.batch_size = 32;
    s->r.c = &s->c;
    s->r.cli = &s->cli;
    s->r.world = 1;
    CHECK_MSG(xt_run_setup_model(&s->r, &e) == 0, "%s", e.msg);
    uint64_t z = 7;
    for (int i = 0; i < 32 * 784; i++) {
        z = z * 6364136223846793005ULL + 1442695040888963407ULL;
        s->x[i] = (float)((z >> 40) & 0xffff) / 32768.0f - 1.0f;
    }
    for (int i = 0; i < 32; i++) s->y[i] = (i * 3 + 1) % 10;
}

static void seed_run_free(seed_run *s) {
    xt_model_free(&s->r.model);
    xt_store_free(&s->r.store);
    xt_spec_free(&s->c.spec);
}

static int seed_steps(seed_run *s, xt_engine *en, int n, xt_err *e) {
    xt_batch b = {.n = 32, .x = s->x, .y = s->y};
    float loss;
    for (int i = 0; i < n; i++) {
        int rc = xt_run_train_step(&s->r, en, &b, 1e-3, &loss, e);
        if (rc) return rc;
        if (!isfinite(loss)) return -1;
        s->r.global_step++;
    }
    return 0;
}

TEST(memory_planning_off_trains_bit_identically) {
    static seed_run a, b;
    seed_run_init(&a);
    seed_run_init(&b);
    CHECK(a.r.store.block_floats == b.r.store.block_floats);
    CHECK(!memcmp(a.r.store.block, b.r.store.block, a.r.store.block_floats * sizeof(float)));
    xt_engine_opts on = {.fuse = 1}, off = {.fuse = 1, .no_memory_planner = 1};
    xt_engine *ea = xt_engine_new(&a.r.store, &on), *eb = xt_engine_new(&b.r.store, &off);
    xt_err e = {0};
    CHECK_MSG(seed_steps(&a, ea, 3, &e) == 0, "%s", e.msg);
    CHECK_MSG(seed_steps(&b, eb, 3, &e) == 0, "%s", e.msg);
    xt_exec_stats sa, sb;
    xt_engine_last_stats(ea, &sa);
    xt_engine_last_stats(eb, &sb);
    CHECK_MSG(sb.arena_bytes > sa.arena_bytes, "planned arena %zu, unplanned %zu", sa.arena_bytes, sb.arena_bytes);
    CHECK_MSG(!memcmp(a.r.store.block, b.r.store.block, a.r.store.block_floats * sizeof(float)),
              "weights and optimizer state differ with memory planning off");
    xt_engine_free(ea);
    xt_engine_free(eb);
    seed_run_free(&a);
    seed_run_free(&b);
}

TEST(a_cached_training_step_allocates_nothing) {
    static seed_run s;
    seed_run_init(&s);
    xt_engine_opts eo = {.fuse = 1};
    xt_engine *en = xt_engine_new(&s.r.store, &eo);
    xt_err e = {0};
    for (int prec = XT_PREC_FP32; prec <= XT_PREC_BF16; prec++) { /* bf16: the casts and bf16 kernels too */
        xt_engine_set_precision(en, prec);
        CHECK_MSG(seed_steps(&s, en, 2, &e) == 0, "%s", e.msg); /* compile, size every scratch */
        int64_t compiles = xt_counter_get("UncachedCompile");
        long long before = test_alloc_count();
        CHECK_MSG(seed_steps(&s, en, 100, &e) == 0, "%s", e.msg);
        long long allocs = test_alloc_count() - before;
        CHECK_EQ(xt_counter_get("UncachedCompile"), compiles);
        CHECK_MSG(allocs == 0, "%s: %lld heap allocations in 100 cached steps (trace, hash, lookup, execute)",
                  xt_precision_name(prec), allocs);
    }
    /* the counter itself works: a step that must compile allocates */
    long long before = test_alloc_count();
    xt_batch half = {.n = 16, .x = s.x, .y = s.y};
    float loss;
    CHECK(xt_run_train_step(&s.r, en, &half, 1e-3, &loss, &e) == 0);
    CHECK(test_alloc_count() > before);
    xt_engine_free(en);
    seed_run_free(&s);
}

TEST(op_table_has_a_kernel_and_gradient_rule_where_ops_def_says) {
    for (int op = 0; op < XT_OP_COUNT; op++) {
        const xt_op_info *o = &xt_op_table[op];
        CHECK_MSG(o->name && *o->name, "op %d has no name", op);
        CHECK_MSG((o->kind == XT_KIND_KERNEL) == (xt_kernel_table[op] != NULL), "%s: kernel table disagrees with its kind", o->name);
        CHECK_MSG(o->differentiable == (xt_grad_rules[op] != NULL), "%s: gradient table disagrees with ops.def", o->name);
        if (o->kind == XT_KIND_EW) CHECK_MSG(o->arity == 1 || o->arity == 2, "%s: elementwise with arity %d", o->name, o->arity);
        CHECK_MSG(!strncmp(o->profile_class, "Kernel.", 7), "%s: profile class %s", o->name, o->profile_class);
    }
}

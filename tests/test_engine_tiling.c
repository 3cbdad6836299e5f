/* test_engine_tiling.c — micro-batch tiling (src/engine/pass_tile.c):
 * the tiled plan trains bit for bit as the untiled one on every model kind
 * the trainer builds (conv/pool/BN, dropout, residual blocks), with a batch
 * that leaves a partial last tile; the pass tiles what it should and keeps
 * run-internal values at tile size. The tile budget is set explicitly, so
 * what is tiled does not depend on this machine's cache. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/plan.h"
#include "kernels/bf16.h"
#include "kernels/onednn.h"
#include "kernels/simd.h"
#include "run/run.h"
#include "run/step.h"
#include "test.h"
#include "util/build_id.h"

#include "kernels/kernels.h"

/* A model set up as the trainer does, with a fixed batch of n samples. */
typedef struct {
    xt_config c;
    xt_cli cli;
    xt_run r;
    float *x;
    int32_t *y;
    int n;
} model_run;

static int model_run_init(model_run *m, const char *spec, int n, xt_err *e) {
    memset(m, 0, sizeof *m);
    xt_config_defaults(&m->c);
    if (xt_spec_load(&m->c.spec, spec, e)) return -1;
    m->c.learning_rate = 0.05;
    m->c.momentum = 0.9;
    m->c.batch_size = n;
    m->r.c = &m->c;
    m->r.cli = &m->cli;
    m->r.world = 1;
    if (xt_run_setup_model(&m->r, e)) return -1;
    int64_t px = (int64_t)m->c.spec.input[0] * m->c.spec.input[1] * m->c.spec.input[2];
    m->x = malloc((size_t)(n * px) * sizeof *m->x);
    m->y = malloc((size_t)n * sizeof *m->y);
    if (!m->x || !m->y) return -1;
    uint64_t z = 7;
    for (int64_t i = 0; i < n * px; i++) {
        z = z * 6364136223846793005ULL + 1442695040888963407ULL;
        m->x[i] = (float)((z >> 40) & 0xffff) / 32768.0f - 1.0f;
    }
    for (int i = 0; i < n; i++) m->y[i] = (i * 3 + 1) % m->c.spec.num_classes;
    m->n = n;
    return 0;
}

static void model_run_free(model_run *m) {
    xt_model_free(&m->r.model);
    xt_store_free(&m->r.store);
    xt_spec_free(&m->c.spec);
    free(m->x);
    free(m->y);
}

static int train_steps(model_run *m, xt_engine *en, int steps, xt_err *e) {
    xt_batch b = {.n = m->n, .x = m->x, .y = m->y};
    float loss;
    for (int i = 0; i < steps; i++) {
        int rc = xt_run_train_step(&m->r, en, &b, m->c.learning_rate, &loss, e);
        if (rc) return rc;
        if (!isfinite(loss)) return -1;
        m->r.global_step++;
    }
    return 0;
}

/* Train the same model under two engine option sets, 3 steps each; every
 * weight, buffer and optimizer state must agree bit for bit. */
static void same_training(const char *spec, int n, const xt_engine_opts *oa, const xt_engine_opts *ob,
                          xt_exec_stats *sa, xt_exec_stats *sb, const char *what) {
    model_run *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    xt_err e = {0};
    CHECK_MSG(model_run_init(a, spec, n, &e) == 0 && model_run_init(b, spec, n, &e) == 0, "%s", e.msg);
    xt_engine *ea = xt_engine_new(&a->r.store, oa), *eb = xt_engine_new(&b->r.store, ob);
    CHECK_MSG(train_steps(a, ea, 3, &e) == 0, "%s (first plan): %s", spec, e.msg);
    CHECK_MSG(train_steps(b, eb, 3, &e) == 0, "%s (second plan): %s", spec, e.msg);
    xt_engine_last_stats(ea, sa);
    xt_engine_last_stats(eb, sb);
    CHECK(a->r.store.block_floats == b->r.store.block_floats);
    CHECK_MSG(!memcmp(a->r.store.block, b->r.store.block, a->r.store.block_floats * sizeof(float)),
              "%s: weights, BN statistics or optimizer state differ between %s", spec, what);
    xt_engine_free(ea);
    xt_engine_free(eb);
    model_run_free(a);
    model_run_free(b);
    free(a);
    free(b);
}

/* Tiled (tiles of `rows` samples forced by a small budget) against untiled.
 * Returns the tiled engine's stats. */
static void tiled_equals_untiled_at(const char *spec, int n, size_t budget, int precision, xt_exec_stats *tiled) {
    xt_engine_opts on = {.fuse = 1, .tile_cache_bytes = budget, .precision = precision},
                   off = {.fuse = 1, .no_tiling = 1, .precision = precision};
    xt_exec_stats sb;
    same_training(spec, n, &on, &off, tiled, &sb, "the tiled and the untiled plan");
    CHECK_MSG(tiled->tile_runs > 0, "%s: nothing was tiled", spec);
    CHECK_EQ(sb.tile_runs, 0);
}

static void tiled_equals_untiled(const char *spec, int n, size_t budget, xt_exec_stats *tiled) {
    tiled_equals_untiled_at(spec, n, budget, XT_PREC_FP32, tiled);
}

TEST(tiling_trains_the_seed_cnn_bit_identically) {
    xt_exec_stats st;
    tiled_equals_untiled("models/fashion_cnn.yaml", 72, 64 * 1024, &st);
    CHECK_EQ(st.tile_rows, 16);      /* the convolutions' backward stretches: one 16-image block a tile */
    CHECK_EQ(st.tile_rows_max % 16, 0); /* whole 16-image blocks in every stretch */
    CHECK_EQ(st.conv_prologues, 2);  /* bn1's apply made by conv2 forward and by its weight gradient */
    CHECK_EQ(st.remat_copies, 1);    /* the weight gradient's copy of it (pass_remat.c) */
    /* conv -> pool -> ReLU, BN-apply -> conv -> pool -> ReLU, and their backward twins with the
     * weight gradients summed tile by tile */
    CHECK_MSG(st.tile_runs >= 4 && st.tiled_kernels >= 14, "%d runs, %d kernels", st.tile_runs, st.tiled_kernels);
    CHECK_EQ(st.sums_through_pool, 2); /* both convolutions' bias gradients, tiled too (pass_sum_pool.c) */
    CHECK_EQ(st.unpool_prologues, 3);  /* conv1's weight gradient, conv2's and its backward-data (pass_conv_unpool.c) */
}

TEST(tiling_trains_dropout_bit_identically) {
    xt_exec_stats st;
    tiled_equals_untiled("models/wide_cnn.yaml", 40, 256 * 1024, &st); /* the mask follows the whole batch's index */
    CHECK_EQ(st.sums_through_pool, 1); /* conv2's bias gradient, behind the ReLU swap */
    CHECK_EQ(st.unpool_prologues, 2);  /* conv2's weight gradient and backward-data (pass_conv_unpool.c) */
    CHECK_EQ(st.relu_bwd_epilogues, 1); /* conv2's backward-data masks by conv1's ReLU (pass_conv_epilogue.c) */
    /* conv2's scattered dy, across its backward pair (pass_share.c), where
     * the weight gradient scatters it too: not where it visits only the kept
     * pixels (conv_sparse.c, AVX2 and up) */
    k_conv_shape conv2 = {.N = 16, .Ci = 32, .H = 26, .W = 26, .Co = 64, .kh = 3, .kw = 3, .sh = 1, .sw = 1};
    CHECK_EQ(k_conv_shape_infer(&conv2), 0);
    CHECK_EQ(st.shared_pairs, k_conv2d_unpool2_share_floats(&conv2) > 0);
}

TEST(tiling_trains_residual_blocks_bit_identically) {
    xt_exec_stats st;
    tiled_equals_untiled("models/resnet8_mnist.yaml", 24, 64 * 1024, &st);
}

/* pass_bn_bwd.c: batch norm's statistics gradient adds the direct path's
 * gradient and masks by the ReLU before the batch norm as it writes (the
 * seed CNN's bn1 and bn2), or only adds (residual blocks, whose batch norms
 * follow convolutions); the same bits as the plan without any fusion, where
 * an ADD and a RELU_BWD run as elementwise ops of their own. */
TEST(bn_bwd_epilogues_train_bit_identically) {
    /* literal_sums: the bias gradients summed as traced, not through the pool (pass_sum_pool.c's own test) */
    xt_engine_opts fused = {.fuse = 1, .literal_sums = 1, .tile_cache_bytes = 64 * 1024},
                   plain = {.fuse = 0, .no_tiling = 1};
    xt_exec_stats sa, sb;
    same_training("models/fashion_cnn.yaml", 72, &fused, &plain, &sa, &sb, "the BN gradient epilogues and separate ops");
    CHECK_EQ(sa.bn_bwd_epilogues, 2);
    CHECK_EQ(sa.bn_bwd_products, 2); /* each addend dy * (gamma * rstd) made by the kernel */
    CHECK_EQ(sb.bn_bwd_epilogues, 0);
    same_training("models/resnet8_mnist.yaml", 24, &fused, &plain, &sa, &sb, "the BN gradient epilogues and separate ops");
    CHECK_MSG(sa.bn_bwd_epilogues >= 4, "%d epilogues", sa.bn_bwd_epilogues);
    CHECK_MSG(sa.bn_bwd_products >= 4 && sa.bn_bwd_products <= sa.bn_bwd_epilogues, "%d of %d with the product",
              sa.bn_bwd_products, sa.bn_bwd_epilogues);
    CHECK_EQ(sb.bn_bwd_epilogues, 0);
}

/* Batch norm's apply (seed CNN) and apply + ReLU (residual blocks) are made
 * again in front of their backward readers instead of kept from the forward,
 * and so is a cheap convolution with its ReLU (wide_cnn's conv1), once for
 * its backward stretch (pass_remat.c): the same bits as keeping them, in a
 * smaller arena. */
static void remat_equals_keeping(const char *spec, int n, int min_copies, int prologues) {
    xt_engine_opts on = {.fuse = 1, .tile_cache_bytes = 64 * 1024},
                   off = {.fuse = 1, .tile_cache_bytes = 64 * 1024, .no_remat = 1};
    xt_exec_stats sa, sb;
    same_training(spec, n, &on, &off, &sa, &sb, "copies made again and values kept");
    CHECK_MSG(sa.remat_copies >= min_copies, "%s: %d copies", spec, sa.remat_copies);
    CHECK_EQ(sb.remat_copies, 0);
    CHECK_MSG(sa.arena_bytes < sb.arena_bytes, "%s: arena %zu with copies, %zu without", spec, sa.arena_bytes,
              sb.arena_bytes);
    /* each copy read by one convolution alone, which makes it as it packs x (pass_conv_prologue.c) */
    CHECK_MSG(sa.conv_prologues == prologues && sb.conv_prologues == 0, "%s: %d and %d prologues", spec,
              sa.conv_prologues, sb.conv_prologues);
}

/* A residual block's ReLU backward takes its mask from the block's output,
 * which the next block's weight gradients keep anyway, instead of from the
 * sum before the ReLU (pass_relu_mask.c): the same bits, and the sum is no
 * longer kept from the forward to the backward. */
TEST(relu_masks_from_the_kept_output_give_the_same_bits_in_a_smaller_arena) {
    xt_engine_opts on = {.fuse = 1, .tile_cache_bytes = 64 * 1024},
                   off = {.fuse = 1, .tile_cache_bytes = 64 * 1024, .no_output_masks = 1};
    xt_exec_stats sa, sb;
    same_training("models/resnet8_mnist.yaml", 24, &on, &off, &sa, &sb, "masks from the ReLU's output and its input");
    /* the first two blocks' outputs: the last one's only reader, the pool, is in its own stretch */
    CHECK_EQ(sa.relu_output_masks, 2);
    CHECK_EQ(sb.relu_output_masks, 0);
    CHECK_MSG(sa.arena_bytes < sb.arena_bytes, "arena %zu with output masks, %zu without", sa.arena_bytes, sb.arena_bytes);
    /* the seed CNN: fc1's ReLU (of the bias add), which fc2's weight gradient keeps; not the ReLUs after
     * the pools, whose inputs are no elementwise values */
    same_training("models/fashion_cnn.yaml", 72, &on, &off, &sa, &sb, "masks from the ReLU's output and its input");
    CHECK_EQ(sa.relu_output_masks, 1);
    CHECK_EQ(sb.relu_output_masks, 0);
}

TEST(remat_copies_give_the_kept_values_bits_in_a_smaller_arena) {
    remat_equals_keeping("models/fashion_cnn.yaml", 72, 1, 2); /* bn1's apply, for conv2's weight gradient */
    /* the four convolutions that read BN -> ReLU, forward and weight gradient; the block outputs
     * relu(bn(x) + shortcut) are kept (a copy would read two batch-sized values) */
    remat_equals_keeping("models/resnet8_mnist.yaml", 24, 4, 8);
    /* conv1 (1 channel, 3x3: 9 multiply-adds per output) and its ReLU, made again at the start of the backward
     * stretch: before conv2's backward-data, whose epilogue still masks by it */
    xt_exec_stats st;
    remat_equals_keeping("models/wide_cnn.yaml", 40, 1, 0);
    tiled_equals_untiled("models/wide_cnn.yaml", 40, 64 * 1024, &st);
    CHECK_EQ(st.remat_copies, 1);
    CHECK_EQ(st.relu_bwd_epilogues, 1);
    CHECK_EQ(st.relu_epilogues, 3);
}

/* Under bf16 the stretches take in the casts and the bf16 convolutions
 * (their weight gradients summed tile by tile on every bf16 path) and still
 * give the untiled plan's bits. */
TEST(tiling_trains_bf16_bit_identically) {
    for (int path = -1; path < k_bf16_npaths(); path++) { /* -1: the CPU's own choice per shape */
        k_bf16_force(path);
        xt_exec_stats st;
        tiled_equals_untiled_at("models/wide_cnn.yaml", 40, 64 * 1024, XT_PREC_BF16, &st);
        CHECK_EQ(st.precision, XT_PREC_BF16);
        /* the casts, both convolutions, the pool and dropout; backward: their twins, both weight gradients */
        CHECK_MSG(st.tiled_kernels >= 16, "path %s: %d kernels tiled", path < 0 ? "auto" : k_bf16_path_name(path),
                  st.tiled_kernels);
        CHECK_EQ(st.made_in_bf16, 2);     /* both dropouts write bf16 themselves */
        CHECK_EQ(st.unpool_prologues, 2); /* the pool's backward, scattered by conv2's two backward passes */
    }
    k_bf16_force(-1);
    xt_exec_stats r;
    tiled_equals_untiled_at("models/resnet8_mnist.yaml", 24, 64 * 1024, XT_PREC_BF16, &r); /* BN, residual adds, 1x1 and strided convs */
}

/* A 2x2 max pool's backward read only by convolution backward passes is
 * scattered in their prologue and never written (pass_conv_unpool.c): in
 * the seed order (conv -> pool -> ReLU, conv1: the weight gradient only) and
 * the VGG order (conv -> ReLU -> pool, conv2: the weight gradient and
 * backward-data), with a conv output of odd size (9 x 9: a row and a column
 * no window reaches), tiled and untiled, the training is the plan's without
 * any fusion bit for bit. The convolutions have no bias: a bias gradient
 * summed through the pool (pass_sum_pool.c) rounds differently. */
TEST(pool_backward_in_the_conv_backward_prologue_trains_bit_identically) {
    const char *spec = test_write_file("unpool.yaml", "input: [1, 28, 28]\n"
                                                      "layers:\n"
                                                      "  - conv2d: {name: conv1, out: 8, kernel: 5, bias: false}\n"
                                                      "  - maxpool2d: {kernel: 2}\n"
                                                      "  - relu\n"
                                                      "  - batchnorm2d: {name: bn1}\n"
                                                      "  - conv2d: {name: conv2, out: 12, kernel: 4, bias: false}\n"
                                                      "  - relu\n"
                                                      "  - maxpool2d: {kernel: 2}\n"
                                                      "  - flatten\n"
                                                      "  - linear: {name: fc, out: 10}\n"
                                                      "  - log_softmax\n");
    xt_engine_opts tiled = {.fuse = 1, .tile_cache_bytes = 64 * 1024}, untiled = {.fuse = 1, .no_tiling = 1},
                   plain = {.fuse = 0, .no_tiling = 1};
    xt_exec_stats sa, sb;
    same_training(spec, 40, &tiled, &plain, &sa, &sb, "the pools' backwards in the conv prologues (tiled) and apart");
    CHECK_EQ(sa.unpool_prologues, 3);
    CHECK(sa.tile_runs > 0);
    CHECK_EQ(sb.unpool_prologues, 0);
    CHECK_MSG(sa.intermediate_bytes < sb.intermediate_bytes, "%zu vs %zu", sa.intermediate_bytes, sb.intermediate_bytes);
    same_training(spec, 40, &untiled, &plain, &sa, &sb, "the pools' backwards in the conv prologues (untiled) and apart");
    CHECK_EQ(sa.unpool_prologues, 3);
}

/* The same under bf16, on every bf16 path: the convolutions read the pools'
 * backwards through casts, and the kernels round the gradient as they
 * scatter it (k_conv2d_*_unpool2_bf16); the training is still the plan's
 * without any fusion (the pool's backward, then the cast) bit for bit. */
TEST(pool_backward_in_the_bf16_conv_backward_prologue_trains_bit_identically) {
    const char *spec = test_write_file("unpool_bf16.yaml", "input: [1, 28, 28]\n"
                                                           "layers:\n"
                                                           "  - conv2d: {name: conv1, out: 8, kernel: 5, bias: false}\n"
                                                           "  - maxpool2d: {kernel: 2}\n"
                                                           "  - relu\n"
                                                           "  - batchnorm2d: {name: bn1}\n"
                                                           "  - conv2d: {name: conv2, out: 11, kernel: 4, bias: false}\n"
                                                           "  - relu\n"
                                                           "  - maxpool2d: {kernel: 2}\n"
                                                           "  - flatten\n"
                                                           "  - linear: {name: fc, out: 10}\n"
                                                           "  - log_softmax\n");
    xt_engine_opts tiled = {.fuse = 1, .tile_cache_bytes = 64 * 1024, .precision = XT_PREC_BF16},
                   plain = {.fuse = 0, .no_tiling = 1, .precision = XT_PREC_BF16};
    for (int path = -1; path < k_bf16_npaths(); path++) { /* -1: the CPU's own choice per shape */
        k_bf16_force(path);
        xt_exec_stats sa, sb;
        same_training(spec, 40, &tiled, &plain, &sa, &sb, "bf16: the pools' backwards in the conv prologues and apart");
        CHECK_MSG(sa.unpool_prologues == 3, "path %s: %d", path < 0 ? "auto" : k_bf16_path_name(path), sa.unpool_prologues);
        CHECK_EQ(sb.unpool_prologues, 0);
        CHECK(sa.tile_runs > 0);
    }
    k_bf16_force(-1);
}

/* The counts of lines matching grep patterns a and b (no single quotes) in
 * the one graph dump in dir, as "A\nB\n". */
static void dump_counts(const char *dir, const char *a, const char *b, char *out, size_t cap) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "f=$(ls %s/graph-*.txt); grep -c '%s' $f; grep -c '%s' $f", dir, a, b);
    test_run(cmd, out, cap);
}

/* A value made and read only inside one tiled stretch (each batch norm's
 * gradient, which its statistics gradient makes with the ReLU's before it,
 * and reads at once in the convolution's backward passes) holds one tile: at
 * batch 1024 the plan needs less arena with tiles than without, although
 * every value a stretch touches then lives across the whole stretch.
 * (Conv1's own 23.6 MB gradient, once the largest such value, is no longer
 * written at all: pass_conv_unpool.c. Conv2's gradient into conv1's pooled
 * output was tile-local too, until bn1's statistics gradient took the
 * product that read it in the next stretch: pass_bn_bwd.c.) */
TEST(tiling_keeps_stretch_internal_values_at_tile_size) {
    model_run *m = calloc(1, sizeof *m);
    xt_err e = {0};
    CHECK_MSG(model_run_init(m, "models/fashion_cnn.yaml", 1024, &e) == 0, "%s", e.msg);
    const char *dir = test_tmpdir();
    xt_engine_opts on = {.fuse = 1, .tile_cache_bytes = 1024 * 1024, .save_graphs_dir = dir},
                   off = {.fuse = 1, .no_tiling = 1};
    size_t arena[2];
    for (int i = 0; i < 2; i++) {
        xt_engine *en = xt_engine_new(&m->r.store, i ? &off : &on);
        CHECK_MSG(train_steps(m, en, 1, &e) == 0, "%s", e.msg);
        xt_exec_stats st;
        xt_engine_last_stats(en, &st);
        arena[i] = st.arena_bytes;
        xt_engine_free(en);
    }
    CHECK_MSG(arena[0] < arena[1], "arena %zu bytes tiled, %zu untiled", arena[0], arena[1]);
    char out[4096];
    /* the ReLUs' gradients are made by the statistics gradients (pass_bn_bwd.c), with the addend's product */
    dump_counts(dir, " = BN_STATS_BWD .1024, 20, 4, 4..*attrs=.2,1,1,.*(one tile)",
                " = BN_STATS_BWD .1024, 10, 12, 12..*attrs=.2,1,1,.*(one tile)", out, sizeof out);
    CHECK_MSG(!strcmp(out, "1\n1\n"), "bn2's and bn1's gradients with the ReLUs' tile-local: %s", out);
    model_run_free(m);
    free(m);
}

/* A value read inside its stretch only through a view that renames it whole
 * holds one tile too: under bf16, wide_cnn's conv1 output (the ReLU in the
 * conv's epilogue is such a view; the ReLU's backward masks with the bf16
 * copy, pass_precision.c), read only by its cast. A view at an offset (the
 * pool's indices) still keeps its base batch-sized: the kernels address it
 * in the batch's layout. */
TEST(tiling_keeps_values_read_through_renaming_views_at_tile_size) {
    model_run *m = calloc(1, sizeof *m);
    xt_err e = {0};
    CHECK_MSG(model_run_init(m, "models/wide_cnn.yaml", 64, &e) == 0, "%s", e.msg);
    const char *dir = test_tmpdir();
    xt_engine_opts o = {.fuse = 1, .tile_cache_bytes = 256 * 1024, .precision = XT_PREC_BF16, .save_graphs_dir = dir};
    xt_engine *en = xt_engine_new(&m->r.store, &o);
    CHECK_MSG(train_steps(m, en, 1, &e) == 0, "%s", e.msg);
    char out[4096];
    dump_counts(dir, " = CONV2D .64, 32, 26, 26..*(one tile)", " = CONV2D_POOL2 .*(one tile)", out, sizeof out);
    CHECK_MSG(!strcmp(out, "1\n0\n"), "conv1, conv2+pool outputs tile-local: %s", out);
    xt_engine_free(en);
    model_run_free(m);
    free(m);
}

/* XLATRAIN_NO_TILING=1 turns tiling off and XLATRAIN_NO_REMAT=1 the copies
 * (pass_remat.c), as XLATRAIN_NO_MEMORY_PLANNER turns planning off: the
 * user's way to bisect a problem in either. */
static void env_turns_off(const char *var, xt_exec_stats *on, xt_exec_stats *off) {
    model_run *m = calloc(1, sizeof *m);
    xt_err e = {0};
    CHECK_MSG(model_run_init(m, "models/fashion_cnn.yaml", 64, &e) == 0, "%s", e.msg);
    xt_engine_opts eo = {.fuse = 1, .tile_cache_bytes = 64 * 1024};
    for (int i = 0; i < 2; i++) {
        if (i) setenv(var, "1", 1);
        xt_engine *en = xt_engine_new(&m->r.store, &eo);
        CHECK_MSG(train_steps(m, en, 1, &e) == 0, "%s", e.msg);
        xt_engine_last_stats(en, i ? off : on);
        xt_engine_free(en);
    }
    unsetenv(var);
    model_run_free(m);
    free(m);
}

TEST(no_tiling_environment_variable_turns_tiling_off) {
    xt_exec_stats on, off;
    env_turns_off("XLATRAIN_NO_TILING", &on, &off);
    CHECK(on.tile_runs > 0);
    CHECK_EQ(off.tile_runs, 0);
}

TEST(no_remat_environment_variable_turns_the_copies_off) {
    xt_exec_stats on, off;
    env_turns_off("XLATRAIN_NO_REMAT", &on, &off);
    CHECK(on.remat_copies > 0 && on.tile_runs > 0);
    CHECK_EQ(off.remat_copies, 0);
    CHECK(off.tile_runs > 0); /* tiling stays on */
}

/* pass_conv_epilogue.c: wide_cnn's conv1 -> ReLU runs the ReLU in the
 * convolution's epilogue and its conv2 -> ReLU -> 2x2 max pool the ReLU and
 * the pooling (the ReLU's backward swapped behind the pool's), and the seed
 * CNN's two conv -> 2x2 max pool -> ReLU chains the pooling and the ReLU;
 * each trains bit for bit as the plan without any fusion (separate RELU and
 * MAXPOOL2D kernels, the conv outputs written), tiled and untiled, in fp32
 * and bf16, and needs less memory. */
TEST(conv_epilogues_train_bit_identically) {
    /* literal_sums: the bias gradients summed as traced, not through the pool (pass_sum_pool.c's own test) */
    xt_engine_opts fused = {.fuse = 1, .literal_sums = 1, .tile_cache_bytes = 256 * 1024},
                   plain = {.fuse = 0, .no_tiling = 1};
    xt_exec_stats sa, sb;
    same_training("models/wide_cnn.yaml", 40, &fused, &plain, &sa, &sb, "the conv epilogues and a separate ReLU and pool");
    CHECK_EQ(sa.relu_epilogues, 3); /* conv1, conv1 made again for the backward (pass_remat.c), conv2 */
    CHECK_EQ(sb.relu_epilogues, 0);
    CHECK_EQ(sa.relu_bwd_epilogues, 1); /* conv1's ReLU backward in conv2's backward-data */
    CHECK_EQ(sb.relu_bwd_epilogues, 0);
    /* conv2's output (40 x 64 x 24 x 24 floats, 5.9 MB) is never written */
    CHECK_MSG(sa.intermediate_bytes + 5 * 1024 * 1024 < sb.intermediate_bytes, "%zu vs %zu", sa.intermediate_bytes,
              sb.intermediate_bytes);
    CHECK_EQ(sa.pool_epilogues, 1);
    /* conv2's weight gradient takes backward-data's scattered dy (pass_share.c); the plain plan scatters twice:
     * the same bits */
    CHECK_MSG(sa.shared_pairs == (sa.unpool_prologues == 2), "%d pairs, %d unpool prologues", sa.shared_pairs,
              sa.unpool_prologues);
    CHECK_EQ(sb.shared_pairs, 0);
    /* under bf16 the same epilogues run in the bf16 kernels */
    xt_engine_opts fused16 = fused, plain16 = plain;
    fused16.precision = plain16.precision = XT_PREC_BF16;
    same_training("models/wide_cnn.yaml", 40, &fused16, &plain16, &sa, &sb, "the bf16 conv epilogues and a separate ReLU and pool");
    CHECK_EQ(sa.relu_bwd_epilogues, 0); /* the bf16 backward-data has no mask epilogue */
    CHECK_EQ(sa.relu_epilogues, 2);
    CHECK_EQ(sa.pool_epilogues, 1);
    CHECK_EQ(sb.relu_epilogues, 0);
    /* and dropout writes its output in bf16 for fc1 and fc2 (pass_bf16_out.c; the pool's backward is read by
     * the literal bias sum too, so it stays fp32): the same bits as the plain plan's cast */
    CHECK_EQ(sa.made_in_bf16, 2); /* both dropouts */
    CHECK_EQ(sb.made_in_bf16, 0);
    same_training("models/fashion_cnn.yaml", 72, &fused, &plain, &sa, &sb, "the conv+pool epilogue and a separate pool");
    CHECK_EQ(sa.unpool_prologues, 0); /* the literal bias sums read the pools' backwards: they are computed anyway */
    CHECK_EQ(sa.relu_epilogues, 2); /* the ReLU after each pool */
    CHECK_EQ(sa.pool_epilogues, 2);
    CHECK_EQ(sb.pool_epilogues, 0);
    CHECK_MSG(sa.intermediate_bytes < sb.intermediate_bytes, "%zu vs %zu", sa.intermediate_bytes, sb.intermediate_bytes);
    xt_engine_opts untiled = {.fuse = 1, .literal_sums = 1, .no_tiling = 1};
    same_training("models/fashion_cnn.yaml", 72, &untiled, &plain, &sa, &sb, "the untiled fused plan and the plain one");
    CHECK_EQ(sa.pool_epilogues, 2);
    /* under bf16 the pool and the ReLU after it run in the bf16 kernels' epilogue, tiled */
    same_training("models/fashion_cnn.yaml", 72, &fused16, &plain16, &sa, &sb, "the bf16 conv+pool epilogue and a separate pool");
    CHECK_EQ(sa.pool_epilogues, 2);
    CHECK_EQ(sa.relu_epilogues, 2);
    CHECK_EQ(sb.pool_epilogues, 0);
    CHECK(sa.tile_runs > 0);
}

/* ---- kernel choices (pass_choose.c) ------------------------------------------------ */

/* Train 3 steps of spec under opts; the engine is returned for its choices. */
static xt_engine *train_with(model_run *m, const char *spec, int n, const xt_engine_opts *o, const char *choices) {
    xt_err e = {0};
    CHECK_MSG(model_run_init(m, spec, n, &e) == 0, "%s", e.msg);
    xt_engine *en = xt_engine_new(&m->r.store, o);
    if (choices) CHECK(xt_engine_load_choices(en, choices) > 0);
    CHECK_MSG(train_steps(m, en, 3, &e) == 0, "%s: %s", spec, e.msg);
    return en;
}

static int count_of(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++) n++;
    return n;
}

/* A choice table handed to another engine (as worker 0's reaches the others,
 * or a checkpoint's a resumed run) is taken without timing, and the training
 * is bit-identical. The leader's synthetic times (choice_skew) prefer the
 * last candidate, so the choices differ from the fixed rules somewhere:
 * without the table, the second engine's would differ. */
static void handed_choices_train_identically(const char *spec, int precision) {
    model_run *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *c = calloc(1, sizeof *c);
    xt_engine_opts skewed = {.fuse = 1, .tile_cache_bytes = 64 * 1024, .precision = precision, .kernel_choice = 1,
                             .choice_skew = 1},
                   measured = skewed, fixed = skewed;
    measured.choice_skew = 0;
    fixed.kernel_choice = 0;
    xt_engine *ea = train_with(a, spec, 40, &skewed, NULL);
    char *text = xt_engine_choices_text(ea), *la = xt_engine_choice_lines(ea);
    CHECK(text && la && *text);
    xt_engine *eb = train_with(b, spec, 40, &measured, text), *ec = train_with(c, spec, 40, &fixed, NULL);
    xt_exec_stats sb;
    xt_engine_last_stats(eb, &sb);
    CHECK_EQ(sb.choice_timed, 0);
    char *lb = xt_engine_choice_lines(eb), *lc = xt_engine_choice_lines(ec);
    CHECK_MSG(count_of(lb, "(agreed)") > 0 && count_of(lb, "(timed)") == 0, "%s", lb);
    CHECK_MSG(count_of(lc, "(rule)") > 0 && count_of(lc, "(timed)") == 0, "%s", lc);
    CHECK_MSG(!memcmp(a->r.store.block, b->r.store.block, a->r.store.block_floats * sizeof(float)),
              "%s: the engine given the choices trains differently:\n%s---\n%s", spec, la, lb);
    CHECK_MSG(strcmp(la, lc), "%s: the skewed choices are the fixed rules':\n%s", spec, la);
    free(text), free(la), free(lb), free(lc);
    xt_engine_free(ea), xt_engine_free(eb), xt_engine_free(ec);
    model_run_free(a), model_run_free(b), model_run_free(c);
    free(a), free(b), free(c);
}

TEST(kernel_choices_handed_over_train_bit_identically) {
    handed_choices_train_identically("models/wide_cnn.yaml", XT_PREC_FP32);
    handed_choices_train_identically("models/resnet8_mnist.yaml", XT_PREC_FP32);
}

TEST(kernel_choices_handed_over_train_bit_identically_bf16) {
    /* without AVX512-BF16 (the CPU's, or under an ISA cap) every bf16 node has one kernel: nothing to hand over */
    if (k_bf16_detect() == K_BF16_REF) test_skip("no AVX512-BF16: one bf16 kernel per node, no choice");
    handed_choices_train_identically("models/wide_cnn.yaml", XT_PREC_BF16);
}

/* Measured for real: the second engine finds every choice in the cache on
 * disk (0 candidates timed) and trains as the first did. */
TEST(kernel_choice_cache_makes_a_second_compile_time_nothing) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/choice-cache", test_tmpdir());
    setenv("XLATRAIN_CACHE_DIR", dir, 1);
    /* without AVX512-BF16 every bf16 node has one kernel: nothing is cached */
    int last = k_bf16_detect() == K_BF16_REF ? XT_PREC_FP32 : XT_PREC_BF16;
    for (int prec = XT_PREC_FP32; prec <= last; prec++) {
        model_run *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
        xt_engine_opts o = {.fuse = 1, .tile_cache_bytes = 64 * 1024, .precision = prec, .kernel_choice = 1};
        xt_engine *ea = train_with(a, "models/wide_cnn.yaml", 40, &o, NULL);
        xt_engine *eb = train_with(b, "models/wide_cnn.yaml", 40, &o, NULL);
        xt_exec_stats sa, sb;
        xt_engine_last_stats(ea, &sa);
        xt_engine_last_stats(eb, &sb);
        CHECK_MSG(prec == XT_PREC_BF16 || sa.choice_timed > 0, "nothing was timed at %s", xt_precision_name(prec));
        CHECK_EQ(sb.choice_timed, 0);
        char *la = xt_engine_choice_lines(ea), *lb = xt_engine_choice_lines(eb);
        CHECK_MSG(count_of(lb, "(cached)") > 0, "%s", lb);
        CHECK_MSG(!memcmp(a->r.store.block, b->r.store.block, a->r.store.block_floats * sizeof(float)),
                  "%s: the cached choices train differently:\n%s---\n%s", xt_precision_name(prec), la, lb);
        free(la), free(lb);
        xt_engine_free(ea), xt_engine_free(eb);
        model_run_free(a), model_run_free(b);
        free(a), free(b);
    }
    unsetenv("XLATRAIN_CACHE_DIR");
}

/* Under bf16 a measured compile compares each traced convolution's and
 * product's fp32 and bf16 kernels and keeps the faster, so asking for bf16 is
 * never slower. Two ways a node once went uncompared and stayed bf16: the
 * seed CNN's second convolution runs fused with its pool (at the pool's
 * node) and, in fp32, with batch norm's apply in its prologue, and its fp32
 * time was not found (bf16 ran at 0.80-0.84x of fp32); and without
 * AVX512-BF16 (every AVX2 CPU) a node's one bf16 kernel, the widening
 * reference, was never timed, so all stayed bf16 (0.30x of fp32 at the AVX2
 * cap). Here at the CPU's level (with AVX512-BF16) and capped at AVX2. */
static void bf16_compares_all(const char *why) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/choice-cache-precision", test_tmpdir());
    setenv("XLATRAIN_CACHE_DIR", dir, 1);
    model_run *a = calloc(1, sizeof *a);
    /* the trainer's batch and tile budget: what makes remat copy batch norm's input, which the prologue needs */
    xt_engine_opts o = {.fuse = 1, .precision = XT_PREC_BF16, .kernel_choice = 1};
    xt_engine *ea = train_with(a, "models/fashion_cnn.yaml", 128, &o, NULL);
    unsetenv("XLATRAIN_CACHE_DIR");
    xt_exec_stats st;
    xt_engine_last_stats(ea, &st);
    CHECK_MSG(st.prec_unknown == 0, "%s: %d convolutions or products left bf16 uncompared", why, st.prec_unknown);
    CHECK_MSG(st.kept_fp32 + st.prec_unknown > 0 || k_bf16_path() != K_BF16_REF,
              "%s: the widening reference kernels were all faster than fp32", why);
    xt_engine_free(ea);
    model_run_free(a);
    free(a);
}

TEST(bf16_measured_precision_compares_every_convolution_and_product) {
    int top = k_simd_detect(), tested = 0;
    if (k_bf16_detect() != K_BF16_REF) bf16_compares_all("at the CPU's level"), tested++;
    if (top >= K_SIMD_AVX2) {
        k_isa_set_cap(K_SIMD_AVX2, "test cap");
        bf16_compares_all("capped at AVX2 (no AVX512-BF16)");
        k_isa_set_cap(top, "test cap");
        tested++;
    }
    if (!tested) test_skip("neither AVX512-BF16 nor AVX2 here");
}

/* The cache on disk is keyed by the build that timed it: its one file names
 * this executable's GNU build ID as binutils' readelf reads it, and the
 * file's name is a hash of that header line, so a rebuilt kernel (another
 * ID) never reads this build's timings. */
TEST(kernel_choice_cache_is_keyed_by_the_build) {
    char cmd[1024], readelf_id[160] = "", dir[512];
    snprintf(cmd, sizeof cmd, "readelf -n /proc/%d/exe 2>/dev/null | sed -n 's/^ *Build ID: *//p'", (int)getpid());
    FILE *pf = popen(cmd, "r");
    if (pf) {
        if (!fgets(readelf_id, sizeof readelf_id, pf)) readelf_id[0] = 0;
        pclose(pf);
    }
    readelf_id[strcspn(readelf_id, "\n")] = 0;
    if (!readelf_id[0]) test_skip("readelf (binutils) printed no build ID for this executable");
    CHECK_STR_EQ(xt_build_id(), readelf_id);

    snprintf(dir, sizeof dir, "%s/choice-cache-build", test_tmpdir());
    setenv("XLATRAIN_CACHE_DIR", dir, 1);
    model_run *a = calloc(1, sizeof *a);
    xt_engine_opts o = {.fuse = 1, .tile_cache_bytes = 64 * 1024, .kernel_choice = 1};
    xt_engine *ea = train_with(a, "models/wide_cnn.yaml", 2, &o, NULL);
    unsetenv("XLATRAIN_CACHE_DIR");
    snprintf(cmd, sizeof cmd, "cat %s/kernel-choices-*.txt 2>/dev/null | head -1", dir);
    pf = popen(cmd, "r");
    char header[1024] = "";
    if (pf) {
        if (!fgets(header, sizeof header, pf)) header[0] = 0;
        pclose(pf);
    }
    char want[200];
    snprintf(want, sizeof want, "| build %s", readelf_id);
    CHECK_STR_CONTAINS(header, want);
    xt_engine_free(ea);
    model_run_free(a);
    free(a);
}

/* The graph dump names what runs each chosen node and, for oneDNN's blocked
 * rows, the operands still reordered on every call (what pass_layout.c
 * leaves NCHW). ResNet-20 with synthetic
 * times that prefer the last candidate, oneDNN's blocked row for every
 * convolution pass: each of its nodes names its reorders. */
TEST(graph_dump_names_every_nodes_implementation_and_its_reorders) {
    if (!k_onednn_available()) test_skip("oneDNN cannot make a CPU engine here");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/dump-reorders", test_tmpdir());
    mkdir(dir, 0777);
    model_run *m = calloc(1, sizeof *m);
    xt_err e = {0};
    CHECK_MSG(model_run_init(m, "models/resnet20.yaml", 16, &e) == 0, "%s", e.msg);
    xt_engine_opts o = {.fuse = 1, .tile_cache_bytes = 64 * 1024, .kernel_choice = 1, .choice_skew = 1,
                        .save_graphs_dir = dir};
    xt_engine *en = xt_engine_new(&m->r.store, &o);
    CHECK_MSG(train_steps(m, en, 1, &e) == 0, "%s", e.msg);
    char out[4096], cmd[1024];
    /* chosen nodes without impl=; blocked nodes; blocked nodes that name reorders; activations reordered */
    snprintf(cmd, sizeof cmd,
             "f=$(ls %s/graph-*.txt); grep -E ' = (CONV2D|MATMUL)' $f | grep -vc ' impl='; "
             "grep -c 'impl=onednn-fp32-blocked' $f; grep 'impl=onednn-fp32-blocked' $f | grep -c ' reorders=[a-z,]'; "
             "grep -cE 'reorders=.*(src|dst)' $f",
             dir);
    test_run(cmd, out, sizeof out);
    int unnamed = -1, blocked = -1, named = -1, acts = -1;
    CHECK_MSG(sscanf(out, "%d %d %d %d", &unnamed, &blocked, &named, &acts) == 4, "%s", out);
    CHECK_EQ(unnamed, 0);
    CHECK_MSG(blocked >= 19, "ResNet-20's 19 forward convolutions and their backward passes on the blocked row: %d", blocked);
    CHECK_EQ(named, blocked);
    /* an activation still reordered (src, dst, dsrc or ddst): at least each forward convolution's output, which
     * BN_STATS and the elementwise groups read NCHW */
    CHECK_MSG(acts >= 19, "activations reordered per call in %d nodes", acts);
    xt_engine_free(en);
    model_run_free(m);
    free(m);
}

/* pass_layout.c: with the oneDNN blocked rows chosen (synthetic times), the
 * gradient batch norm hands each convolution's backward passes is written in
 * the blocked layout they want, and the plan trains bit for bit as with every
 * value NCHW (XLATRAIN_NO_LAYOUT). ResNet-8: every convolution follows a
 * batch norm. The graph dump names each blocked value's layout. */
TEST(layout_pass_blocks_batch_norms_gradient_for_the_blocked_rows_bit_identically) {
    if (!k_onednn_available()) test_skip("oneDNN cannot make a CPU engine here");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/dump-layout", test_tmpdir());
    mkdir(dir, 0777);
    xt_engine_opts on = {.fuse = 1, .tile_cache_bytes = 64 * 1024, .kernel_choice = 1, .choice_skew = 1,
                         .save_graphs_dir = dir},
                   off = on;
    off.no_layout = 1;
    off.save_graphs_dir = NULL;
    xt_exec_stats sa, sb;
    same_training("models/resnet8_mnist.yaml", 24, &on, &off, &sa, &sb, "the blocked and the all-NCHW plan");
    CHECK_EQ(sb.blocked_values, 0);
    if (k_simd_level() < K_SIMD_AVX2) {
        if (!sa.blocked_values) test_skip("no oneDNN row wants a blocked dy below AVX2 here");
    } else {
        /* conv2 of each stage and conv1 of the two later stages, the stem's conv1 has no backward-data
         * but its weight gradient; at least the blocks' 3x3 convolutions read a blocked dy */
        CHECK_MSG(sa.blocked_values >= 5, "%d values blocked", sa.blocked_values);
    }
    char out[256], cmd[1024];
    snprintf(cmd, sizeof cmd, "cat %s/graph-*.txt | grep -E '= BN_STATS_BWD.* layout=nChw(8|16)c' | wc -l", dir);
    test_run(cmd, out, sizeof out);
    CHECK_EQ(atoi(out), sa.blocked_values);
    /* XLATRAIN_NO_LAYOUT=1 turns the pass off for an engine made after it is set */
    if (sa.blocked_values) {
        model_run *m = calloc(1, sizeof *m);
        xt_err e = {0};
        CHECK_MSG(model_run_init(m, "models/resnet8_mnist.yaml", 24, &e) == 0, "%s", e.msg);
        on.save_graphs_dir = NULL;
        setenv("XLATRAIN_NO_LAYOUT", "1", 1);
        xt_engine *en = xt_engine_new(&m->r.store, &on);
        unsetenv("XLATRAIN_NO_LAYOUT");
        CHECK_MSG(train_steps(m, en, 1, &e) == 0, "%s", e.msg);
        xt_exec_stats st;
        xt_engine_last_stats(en, &st);
        CHECK_EQ(st.blocked_values, 0);
        xt_engine_free(en);
        model_run_free(m);
        free(m);
    }
}

/* Choices are kept per ISA level: an engine capped one level below the
 * first one's neither takes the first one's handed-over choices (as a
 * checkpoint's reach a resumed run) nor its cache on disk, but times its
 * own; handed back at the first level, the same table is taken untimed. */
TEST(kernel_choices_of_another_isa_level_are_timed_again) {
    int top = k_simd_detect();
    if (top == K_SIMD_GENERIC) test_skip("the CPU (or XLATRAIN_ISA) has no level below this one");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/choice-cache", test_tmpdir());
    setenv("XLATRAIN_CACHE_DIR", dir, 1);
    model_run *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *c = calloc(1, sizeof *c);
    xt_engine_opts o = {.fuse = 1, .tile_cache_bytes = 64 * 1024, .precision = XT_PREC_FP32, .kernel_choice = 1};
    xt_engine *ea = train_with(a, "models/wide_cnn.yaml", 40, &o, NULL);
    char *text = xt_engine_choices_text(ea);
    CHECK(text && *text);
    k_isa_set_cap(top - 1, "test cap");
    xt_engine *eb = train_with(b, "models/wide_cnn.yaml", 40, &o, text);
    xt_exec_stats sb;
    xt_engine_last_stats(eb, &sb);
    char *lb = xt_engine_choice_lines(eb);
    CHECK_MSG(sb.choice_timed > 0, "nothing was timed one level down:\n%s", lb);
    CHECK_MSG(count_of(lb, "(agreed)") == 0 && count_of(lb, "(cached)") == 0, "%s", lb);
    k_isa_set_cap(top, "test cap");
    xt_engine *ec = train_with(c, "models/wide_cnn.yaml", 40, &o, text);
    xt_exec_stats sc;
    xt_engine_last_stats(ec, &sc);
    CHECK_EQ(sc.choice_timed, 0);
    free(text), free(lb);
    xt_engine_free(ea), xt_engine_free(eb), xt_engine_free(ec);
    model_run_free(a), model_run_free(b), model_run_free(c);
    free(a), free(b), free(c);
    unsetenv("XLATRAIN_CACHE_DIR");
}

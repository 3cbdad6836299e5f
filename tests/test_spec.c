/* test_spec.c — the layer spec: the shipped models' shapes and parameter
 * counts, auto names, the YAML writer, and one deliberately broken spec per
 * error class (each must name file:line:col and the layer). */
#include <string.h>

#include "config/spec.h"
#include "spec_check.h"
#include "test.h"

static void load_ok(const char *path, xt_spec *s) {
    xt_err e = {0};
    int rc = xt_spec_load(s, path, &e);
    CHECK_MSG(rc == 0, "%s: %s", path, e.msg);
}

#define CHECK_SHAPE(l, r, a, b, c)                                                 \
    do {                                                                           \
        CHECK_EQ((l).out_rank, r);                                                 \
        CHECK_EQ((l).out_shape[0], a);                                             \
        if ((r) == 3) { CHECK_EQ((l).out_shape[1], b); CHECK_EQ((l).out_shape[2], c); } \
    } while (0)

TEST(spec_fashion_cnn_is_the_seed_model) {
    xt_spec s;
    load_ok("models/fashion_cnn.yaml", &s);
    CHECK_EQ(s.nlayers, 13);
    static const char *names[] = {"conv1", "pool1", "relu1", "bn1", "conv2", "pool2", "relu2",
                                  "bn2", "flatten1", "fc1", "relu3", "fc2", "log_softmax1"};
    static const xt_layer_kind kinds[] = {XT_L_CONV2D, XT_L_MAXPOOL2D, XT_L_RELU, XT_L_BATCHNORM2D,
                                          XT_L_CONV2D, XT_L_MAXPOOL2D, XT_L_RELU, XT_L_BATCHNORM2D,
                                          XT_L_FLATTEN, XT_L_LINEAR, XT_L_RELU, XT_L_LINEAR, XT_L_LOG_SOFTMAX};
    static const long params[] = {260, 0, 0, 20, 5020, 0, 0, 40, 0, 16050, 0, 510, 0};
    for (int i = 0; i < s.nlayers && i < 13; i++) {
        CHECK_MSG(!strcmp(s.layers[i].name, names[i]), "layer %d: %s != %s", i, s.layers[i].name, names[i]);
        CHECK_EQ(s.layers[i].kind, kinds[i]);
        CHECK_EQ(s.layers[i].params, params[i]);
    }
    CHECK_SHAPE(s.layers[0], 3, 10, 24, 24);
    CHECK_SHAPE(s.layers[1], 3, 10, 12, 12);
    CHECK_SHAPE(s.layers[3], 3, 10, 12, 12);
    CHECK_SHAPE(s.layers[4], 3, 20, 8, 8);
    CHECK_SHAPE(s.layers[5], 3, 20, 4, 4);
    CHECK_SHAPE(s.layers[8], 1, 320, 0, 0);
    CHECK_SHAPE(s.layers[9], 1, 50, 0, 0);
    CHECK_SHAPE(s.layers[11], 1, 10, 0, 0);
    CHECK_SHAPE(s.layers[12], 1, 10, 0, 0);
    CHECK_EQ(s.layers[9].in_shape[0], 320);
    CHECK_EQ(s.layers[1].stride[0], 2);   /* pool stride defaults to the kernel */
    CHECK_EQ(s.layers[0].stride[0], 1);   /* conv stride defaults to 1 */
    CHECK_NEAR(s.layers[3].eps, 1e-5, 1e-12);
    CHECK_NEAR(s.layers[3].momentum, 0.1, 1e-7);
    CHECK_EQ(s.layers[0].line, 14);
    CHECK_EQ(s.layers[0].col, 5);
    CHECK_EQ(s.num_classes, 10);
    CHECK_EQ(xt_spec_total_params(&s), 21900);
    CHECK_EQ(xt_spec_total_buffers(&s), 60);
    xt_spec_free(&s);
}

TEST(spec_shipped_models_param_counts) {
    static const struct { const char *path; long params; int nlayers; } m[] = {
        {"models/lenet5.yaml", 61706, 13},
        {"models/mlp.yaml", 203530, 6},
        {"models/wide_cnn.yaml", 1199882, 12},
    };
    for (size_t i = 0; i < sizeof m / sizeof *m; i++) {
        xt_spec s;
        load_ok(m[i].path, &s);
        CHECK_MSG(xt_spec_total_params(&s) == m[i].params, "%s: %ld params", m[i].path, xt_spec_total_params(&s));
        CHECK_EQ(s.nlayers, m[i].nlayers);
        CHECK_EQ(s.num_classes, 10);
        CHECK_EQ(xt_spec_total_buffers(&s), 0);
        xt_spec_free(&s);
    }
}

TEST(spec_wide_cnn_shapes) {
    xt_spec s;
    load_ok("models/wide_cnn.yaml", &s);
    CHECK_SHAPE(s.layers[0], 3, 32, 26, 26);
    CHECK_SHAPE(s.layers[2], 3, 64, 24, 24);
    CHECK_SHAPE(s.layers[4], 3, 64, 12, 12);
    CHECK_SHAPE(s.layers[6], 1, 9216, 0, 0);
    CHECK_EQ(s.layers[7].params, 9216L * 128 + 128);
    CHECK(!strcmp(s.layers[5].name, "dropout1"));
    CHECK_NEAR(s.layers[5].p, 0.25, 1e-7);
    CHECK_NEAR(s.layers[9].p, 0.5, 1e-7);
    xt_spec_free(&s);
}

TEST(spec_lenet5_padding_and_avgpool) {
    xt_spec s;
    load_ok("models/lenet5.yaml", &s);
    CHECK_EQ(s.layers[0].padding[0], 2);
    CHECK_SHAPE(s.layers[0], 3, 6, 28, 28);
    CHECK_EQ(s.layers[2].kind, XT_L_AVGPOOL2D);
    CHECK_SHAPE(s.layers[2], 3, 6, 14, 14);
    CHECK_SHAPE(s.layers[5], 3, 16, 5, 5);
    CHECK_SHAPE(s.layers[6], 1, 400, 0, 0);
    xt_spec_free(&s);
}

TEST(spec_hw_pairs_bias_and_auto_names) {
    xt_spec s;
    xt_err e = {0};
    int rc = load_text("input: [3, 32, 20]\n"
                       "layers:\n"
                       "  - conv2d: {out: 4, kernel: [3, 5], stride: [1, 2], padding: [1, 0], bias: false}\n"
                       "  - conv2d: {name: conv1, out: 2, kernel: 1}\n"
                       "  - maxpool2d: {kernel: [2, 1]}\n"
                       "  - avgpool2d: {kernel: 2, stride: 1}\n"
                       "  - relu:\n"
                       "  - relu: {}\n"
                       "  - flatten\n"
                       "  - flatten\n"
                       "  - linear: {out: 7, bias: no}\n"
                       "  - dropout\n"
                       "  - log_softmax\n",
                       &s, &e, NULL);
    CHECK_MSG(rc == 0, "%s", e.msg);
    if (rc) return;
    /* conv: H = (32 + 2 - 3)/1 + 1 = 32, W = (20 - 5)/2 + 1 = 8; no bias */
    CHECK_SHAPE(s.layers[0], 3, 4, 32, 8);
    CHECK_EQ(s.layers[0].params, 4 * 3 * 3 * 5);
    /* the user took conv1, so the unnamed first conv becomes conv2 */
    CHECK(!strcmp(s.layers[0].name, "conv2"));
    CHECK(!strcmp(s.layers[1].name, "conv1"));
    CHECK_SHAPE(s.layers[2], 3, 2, 16, 8);
    CHECK(!strcmp(s.layers[2].name, "pool1"));
    CHECK(!strcmp(s.layers[3].name, "pool2"));
    CHECK_SHAPE(s.layers[3], 3, 2, 15, 7);
    CHECK(!strcmp(s.layers[4].name, "relu1"));
    CHECK(!strcmp(s.layers[5].name, "relu2"));
    CHECK_SHAPE(s.layers[7], 1, 210, 0, 0); /* flatten of a flat input is a no-op */
    CHECK_EQ(s.layers[8].params, 210 * 7);
    CHECK(!strcmp(s.layers[8].name, "fc1"));
    CHECK(!strcmp(s.layers[9].name, "dropout1"));
    CHECK_EQ(s.num_classes, 7);
    xt_spec_free(&s);
}

TEST(spec_declared_in_is_checked) {
    xt_spec s;
    xt_err e = {0};
    int rc = load_text("input: [1, 28, 28]\nlayers: [flatten, {linear: {in: 784, out: 10}}]\n", &s, &e, NULL);
    CHECK_MSG(rc == 0, "%s", e.msg);
    xt_spec_free(&s);
    SPEC_ERR("input: [1, 28, 28]\nlayers:\n  - flatten\n  - linear: {name: fc1, in: 320, out: 10}\n", 4, 5,
             "layer 'fc1' (linear) declares in: 320 but gets 784 features", NULL);
    SPEC_ERR("input: [1, 28, 28]\nlayers:\n  - conv2d: {name: c, in: 3, out: 4, kernel: 3}\n", 3, 5,
             "layer 'c' (conv2d) declares in: 3", "1 channels");
}

TEST(spec_summary_table) {
    xt_spec s;
    load_ok("models/fashion_cnn.yaml", &s);
    char buf[4096] = {0};
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    xt_spec_summary(&s, f);
    fclose(f);
    CHECK_STR_CONTAINS(buf, "Layer");
    CHECK_STR_CONTAINS(buf, "Output Shape");
    CHECK_STR_CONTAINS(buf, "Param #");
    CHECK_STR_CONTAINS(buf, "[10, 24, 24]");
    CHECK_STR_CONTAINS(buf, "16,050");
    CHECK_STR_CONTAINS(buf, "Total params: 21,900\n");
    CHECK_STR_CONTAINS(buf, "Trainable params: 21,900\n");
    CHECK_STR_CONTAINS(buf, "Non-trainable params: 0\n");
    CHECK_STR_CONTAINS(buf, "Non-trainable (buffers): 60");
    CHECK_STR_CONTAINS(buf, "log_softmax1");
    xt_spec_free(&s);
}

TEST(spec_yaml_round_trip_and_hash) {
    static const char *models[] = {"models/fashion_cnn.yaml", "models/lenet5.yaml", "models/mlp.yaml",
                                   "models/wide_cnn.yaml"};
    unsigned long long hashes[4];
    for (int m = 0; m < 4; m++) {
        xt_spec a, b;
        load_ok(models[m], &a);
        char buf[8192] = {0};
        FILE *f = fmemopen(buf, sizeof buf - 1, "w");
        xt_spec_print_yaml(&a, f, 0);
        fclose(f);
        load_ok(test_write_file("rt.yaml", buf), &b);
        CHECK_EQ(a.nlayers, b.nlayers);
        CHECK_EQ(xt_spec_total_params(&a), xt_spec_total_params(&b));
        CHECK_MSG(xt_spec_hash(&a) == xt_spec_hash(&b), "%s: hash changed after a round trip:\n%s", models[m], buf);
        hashes[m] = xt_spec_hash(&a);
        CHECK(xt_spec_hash(&a) == hashes[m]);
        xt_spec_free(&a);
        xt_spec_free(&b);
    }
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++) CHECK(hashes[i] != hashes[j]);
}

TEST(spec_hash_sees_names_and_hyperparameters) {
    xt_spec a, b, c;
    xt_err e = {0};
    CHECK(load_text("input: [1, 28, 28]\nlayers: [flatten, {linear: {name: fc, out: 10}}]\n", &a, &e, NULL) == 0);
    CHECK(load_text("input: [1, 28, 28]\nlayers: [flatten, {linear: {name: fc2, out: 10}}]\n", &b, &e, NULL) == 0);
    CHECK(load_text("input: [1, 28, 28]\nlayers: [flatten, {linear: {name: fc, out: 10, bias: false}}]\n", &c, &e,
                    NULL) == 0);
    CHECK(xt_spec_hash(&a) != xt_spec_hash(&b));
    CHECK(xt_spec_hash(&a) != xt_spec_hash(&c));
    xt_spec_free(&a);
    xt_spec_free(&b);
    xt_spec_free(&c);
}

/* ---- one broken spec per error class ---------------------------------------------- */

#define HEAD "input: [1, 28, 28]\nlayers:\n"

TEST(spec_err_linear_needs_flat_input) {
    SPEC_ERR(HEAD "  - conv2d: {name: conv1, out: 20, kernel: 5}\n"
                  "  - maxpool2d: {kernel: 6}\n"
                  "  - linear: {name: fc1, out: 10}\n",
             5, 5, "layer 'fc1' (linear) expects a flat input but gets [20, 4, 4]; add a flatten layer before it", NULL);
}

TEST(spec_err_kernel_larger_than_input) {
    SPEC_ERR(HEAD "  - maxpool2d: {kernel: 7}\n"
                  "  - conv2d: {name: conv2, out: 4, kernel: 5}\n",
             4, 5, "layer 'conv2' (conv2d)", "kernel 5 larger than input 4x4 after padding");
}

TEST(spec_err_conv_after_flatten) {
    SPEC_ERR(HEAD "  - flatten\n  - conv2d: {name: c1, out: 4, kernel: 3}\n", 4, 5, "layer 'c1' (conv2d)",
             "expects a [C, H, W] input but gets the flat [784]");
}

TEST(spec_err_log_softmax_needs_flat_input) {
    SPEC_ERR(HEAD "  - log_softmax\n", 3, 5, "layer 'log_softmax1' (log_softmax) expects a flat input", NULL);
}

TEST(spec_err_unknown_layer_type) {
    SPEC_ERR(HEAD "  - conv: {out: 4, kernel: 3}\n", 3, 5, "unknown layer type 'conv'", "did you mean 'conv2d'?");
    SPEC_ERR(HEAD "  - rleu\n", 3, 5, "unknown layer type 'rleu'", "did you mean 'relu'?");
    SPEC_ERR(HEAD "  - transformer\n", 3, 5, "unknown layer type 'transformer'", "known types: conv2d");
}

TEST(spec_err_unknown_parameter) {
    SPEC_ERR(HEAD "  - conv2d: {name: conv1, out: 4, kernal: 3}\n", 3, 35, "layer 'conv1' (conv2d) has no parameter "
             "'kernal'", "did you mean 'kernel'?");
    SPEC_ERR(HEAD "  - relu: {p: 0.5}\n", 3, 12, "(relu) has no parameter 'p'", "relu takes: name");
}

TEST(spec_err_missing_required) {
    SPEC_ERR(HEAD "  - conv2d: {name: conv1, kernel: 3}\n", 3, 13, "layer 'conv1' (conv2d) needs 'out'", NULL);
    SPEC_ERR(HEAD "  - flatten\n  - linear\n", 4, 5, "(linear) needs parameters", "linear: {out: 10}");
    SPEC_ERR(HEAD "  - maxpool2d: {}\n", 3, 16, "(maxpool2d) needs 'kernel'", NULL);
}

TEST(spec_err_bad_values) {
    SPEC_ERR(HEAD "  - conv2d: {name: c, out: 4, kernel: abc}\n", 3, 39, "layer 'c' (conv2d): 'kernel' must be an "
             "integer, got 'abc'", NULL);
    SPEC_ERR(HEAD "  - conv2d: {name: c, out: 0, kernel: 3}\n", 3, 28, "layer 'c' (conv2d): 'out' is '0'",
             "from 1 to");
    SPEC_ERR(HEAD "  - conv2d: {name: c, out: 4, kernel: [5]}\n", 3, 39, "'kernel' must be an integer or [h, w], "
             "got a list of 1", NULL);
    SPEC_ERR(HEAD "  - dropout: {name: d, p: 1.5}\n", 3, 27, "layer 'd' (dropout): 'p' is '1.5'", "[0, 1)");
    SPEC_ERR(HEAD "  - flatten\n  - linear: {name: fc, out: 10, bias: maybe}\n", 4, 39, "layer 'fc' (linear): "
             "'bias' must be true or false, got 'maybe'", NULL);
    SPEC_ERR(HEAD "  - batchnorm2d: {name: bn, eps: 0}\n", 3, 34, "layer 'bn' (batchnorm2d): 'eps' is '0'", NULL);
    /* ranges hold for the value as stored (a float), not as written; found by fuzz_spec
     * (regressions/spec/eps-underflows-float.yaml) */
    SPEC_ERR(HEAD "  - batchnorm2d: {name: bn, eps: 1e-48}\n", 3, 34,
             "layer 'bn' (batchnorm2d): 'eps' is '1e-48', which a 32-bit float holds as 0", "(0, 1]");
    SPEC_ERR(HEAD "  - dropout: {name: d, p: 0.9999999999}\n", 3, 27, "which a 32-bit float holds as 1", "[0, 1)");
    SPEC_ERR(HEAD "  - conv2d: {name: c, out: \"4\", kernel: 3}\n", 3, 28, "'out' must be an integer, got the quoted "
             "string '4'", NULL);
}

TEST(spec_err_pool_padding_over_half_kernel) {
    SPEC_ERR(HEAD "  - maxpool2d: {name: p, kernel: 2, padding: 2}\n", 3, 5, "layer 'p' (maxpool2d): padding 2 is "
             "more than half the kernel 2", NULL);
}

/* a max pool's argmax is a byte, the kept cell of its window: 16x16 is the largest square window */
TEST(spec_err_maxpool_window_over_256_cells) {
    SPEC_ERR(HEAD "  - maxpool2d: {name: p, kernel: 17}\n", 3, 5, "layer 'p' (maxpool2d): a 17x17 window has 289 "
             "cells; a max pool takes at most 256", NULL);
    SPEC_ERR(HEAD "  - maxpool2d: {name: p, kernel: [2, 129]}\n", 3, 5, "a 2x129 window has 258 cells", NULL);
}

TEST(spec_err_names) {
    SPEC_ERR(HEAD "  - relu: {name: act}\n  - relu: {name: act}\n", 4, 5, "layer name 'act' is used twice (first "
             "at line 3)", NULL);
    SPEC_ERR(HEAD "  - relu: {name: conv-1}\n", 3, 18, "layer 1 (relu): name 'conv-1' is not an identifier", NULL);
    SPEC_ERR(HEAD "  - relu: {name: 1st}\n", 3, 18, "name '1st' is not an identifier", NULL);
    SPEC_ERR(HEAD "  - relu: {name: a, name: b}\n", 3, 21, "layer 'a' (relu): parameter 'name' given twice", NULL);
}

TEST(spec_err_layer_item_shapes) {
    SPEC_ERR(HEAD "  - conv2d: {out: 4, kernel: 3}\n    relu: {}\n", 3, 5, "layer 1 has 2 keys", NULL);
    SPEC_ERR(HEAD "  - conv2d: 5\n", 3, 13, "layer 1 (conv2d): parameters must be a mapping", "got '5'");
    SPEC_ERR(HEAD "  - [relu]\n", 3, 5, "layer 1 is a list", NULL);
    SPEC_ERR(HEAD "  -\n", 3, 4, "layer 1 has no type", NULL);
}

TEST(spec_err_top_level) {
    SPEC_ERR("input: [1, 28, 28]\nlayer:\n  - relu\n", 2, 1, "unknown model key 'layer'", "did you mean 'layers'?");
    SPEC_ERR("layers: [relu]\n", 1, 1, "the model has no 'input'", "input: [1, 28, 28]");
    SPEC_ERR("input: [1, 28, 28]\n", 1, 1, "the model has no 'layers'", NULL);
    SPEC_ERR("input: [28, 28]\nlayers: [relu]\n", 1, 8, "'input' must be [C, H, W]", NULL);
    SPEC_ERR("input: [1, 0, 28]\nlayers: [relu]\n", 1, 12, "input [C, H, W]: 'H' is '0'", NULL);
    SPEC_ERR("input: [1, 28, 28]\nlayers: []\n", 2, 9, "'layers' is empty", NULL);
    SPEC_ERR("input: [1, 28, 28]\nlayers: relu\n", 2, 9, "'layers' must be a list of layers, got 'relu'", NULL);
    SPEC_ERR("input: [1, 28, 28]\ninput: [1, 28, 28]\nlayers: [relu]\n", 2, 1, "duplicate key 'input' (first at "
             "line 1)", NULL);
    SPEC_ERR("- relu\n- flatten\n", 1, 1, "a model spec is a mapping", "got a list");
    SPEC_ERR("", 1, 1, "a model spec is a mapping", "got nothing");
}

TEST(spec_err_malformed_yaml) {
    SPEC_ERR(HEAD "  - conv2d: {out: 4, kernel: 3\n", 4, 1, "invalid YAML", NULL);
    SPEC_ERR("input: [1, 28, 28]\n  layers: x\n", 2, 3, "invalid YAML: did not find expected key", "line 1 column 1");
    SPEC_ERR("input: &a [1, 28, 28]\nlayers: *b\n", 2, 9, "invalid YAML: found undefined alias", NULL);
}

TEST(spec_err_too_large) {
    SPEC_ERR("input: [65536, 65536, 65536]\nlayers: [relu]\n", 1, 8, "input [65536, 65536, 65536] has more than", NULL);
    SPEC_ERR(HEAD "  - flatten\n  - linear: {name: big, out: 16000000}\n  - linear: {name: big2, out: 16000000}\n",
             4, 5, "layer 'big' (linear)", "too large");
}

TEST(spec_missing_file) {
    xt_spec s;
    xt_err e = {0};
    CHECK_EQ(xt_spec_load(&s, "models/does_not_exist.yaml", &e), XT_EUSAGE);
    CHECK_STR_CONTAINS(e.msg, "models/does_not_exist.yaml: cannot open: No such file");
}

/* Hostile input must neither crash nor hang nor leak (the fuzz issue builds
 * on this); each case just has to fail cleanly or load. */
TEST(spec_hostile_inputs_fail_cleanly) {
    static char deep[20000];
    memset(deep, '[', sizeof deep - 1);
    static const char *cases[] = {
        "input: &a [1, *a, 28]\nlayers: [relu]\n",
        "input: [1, 28, 28]\nlayers: &l [relu, *l]\n",
        "input: [1, 28, 28]\nlayers:\n  - &m {conv2d: *m}\n",
        "input: [1, 28, 28]\nlayers: [{? [a] : b}]\n",
        "input: [1, 28, 28]\nlayers: [{[relu]: {}}]\n",
        "input: [1, 28, 28]\nlayers: [{relu: {name: *x}}]\n",
        "input: [1, 99999999999999999999, 28]\nlayers: [relu]\n",
        "input: [1, 28, 28]\nlayers: [{conv2d: {out: 1, kernel: -1}}]\n",
        "input: [1, 28, 28]\nlayers: [{dropout: {p: .nan}}]\n",
        "input: [1, 28, 28]\nlayers: [{dropout: {p: 1e999}}]\n",
        "\xff\xfe\x00garbage",
        "input: [1, 28, 28]\nlayers: [relu]\n---\ninput: [1]\n",
        "%YAML 9.9\n---\ninput: 1\n",
        "input: !!binary aGVsbG8=\nlayers: [relu]\n",
        deep,
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        xt_spec s;
        xt_err e = {0};
        int rc = load_text(cases[i], &s, &e, NULL);
        CHECK_MSG(rc == XT_EUSAGE, "case %zu: rc %d", i, rc);
        CHECK_MSG(e.msg[0] && !strchr(e.msg, '\n'), "case %zu: message '%s'", i, e.msg);
        xt_spec_free(&s);
    }
}

TEST(spec_layer_count_limit) {
    static char text[XT_SPEC_MAX_LAYERS * 10 + 200];
    strcpy(text, HEAD);
    for (int i = 0; i <= XT_SPEC_MAX_LAYERS; i++) strcat(text, "  - relu\n");
    /* named at the first layer past the limit (line 3 + 256) */
    SPEC_ERR(text, 259, 5, "more than 256 layers in all (counting those inside blocks); at most 256", NULL);
}

/* The benchmark's FLOP count comes from the spec: the seed CNN's forward
 * pass is 480,500 multiply-adds by hand (conv1 10x24x24 x 1x5x5 = 144,000;
 * conv2 20x8x8 x 10x5x5 = 320,000; fc1 320x50 = 16,000; fc2 50x10 = 500). */
TEST(spec_forward_macs_of_the_seed_cnn_match_the_hand_count) {
    xt_spec s;
    xt_err e = {0};
    CHECK_MSG(xt_spec_load(&s, "models/fashion_cnn.yaml", &e) == 0, "%s", e.msg);
    CHECK_EQ(xt_spec_forward_macs(&s), 480500);
    xt_spec_free(&s);
    CHECK_MSG(xt_spec_load(&s, "models/wide_cnn.yaml", &e) == 0, "%s", e.msg);
    /* conv1 32x26x26 x 1x3x3 + conv2 64x24x24 x 32x3x3 + fc1 9216x128 + fc2 128x10 */
    CHECK_EQ(xt_spec_forward_macs(&s), 32LL * 26 * 26 * 9 + 64LL * 24 * 24 * 32 * 9 + 9216LL * 128 + 128 * 10);
    xt_spec_free(&s);
}

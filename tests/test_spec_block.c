/* test_spec_block.c — residual blocks, sequential groups and global average
 * pooling in the layer spec: the shipped ResNets' structure, module paths,
 * shapes and FLOPs, auto names, the summary and the YAML writer, and one
 * broken spec per new error (each names file:line:col, the block and both
 * shapes where two disagree). PyTorch's own names and counts are checked in
 * test_golden_resnet.c. */
#include <string.h>

#include "config/spec.h"
#include "spec_check.h"
#include "test.h"

static const xt_layer *find(const xt_spec *s, const char *path) {
    for (int i = 0; i < s->nlayers; i++)
        if (!strcmp(s->layers[i].path, path)) return &s->layers[i];
    return NULL;
}

TEST(spec_resnet20_structure_paths_and_shapes) {
    xt_spec s;
    xt_err e = {0};
    CHECK_MSG(xt_spec_load(&s, "models/resnet20.yaml", &e) == 0, "%s", e.msg);
    CHECK_EQ(xt_spec_total_params(&s), 272474);
    /* ResNet-20's forward pass by hand: stem 16x32x32 x 3x3x3 = 442,368; layer1 six
     * 16->16 3x3 convs at 32x32 = 14,155,776; layer2 16->32 s2 1,179,648 + five
     * 32->32 at 16x16 11,796,480 + 1x1 shortcut 131,072; layer3 the same at 8x8 with
     * 64 channels (1,179,648 + 11,796,480 + 131,072); linear 640. */
    CHECK_EQ(xt_spec_forward_macs(&s), 40813184);
    const xt_layer *b = find(&s, "layer2.0"), *sc = find(&s, "layer2.0.shortcut.0");
    CHECK(b && b->kind == XT_L_BLOCK && b->nshort == 2 && b->act_relu);
    CHECK(sc && sc->kind == XT_L_CONV2D && sc->in_shortcut && sc->stride[0] == 2 && sc->kernel[0] == 1);
    if (b) {
        CHECK_EQ(b->in_shape[0], 16);
        CHECK_EQ(b->out_shape[0], 32);
        CHECK_EQ(b->out_shape[1], 16);
    }
    const xt_layer *id = find(&s, "layer1.2"), *c2 = find(&s, "layer3.2.conv2"), *bn = find(&s, "layer3.0.shortcut.1");
    CHECK(id && id->kind == XT_L_BLOCK && id->nshort == 0 && id->nbody == 5);
    CHECK(c2 && c2->out_shape[0] == 64 && c2->out_shape[1] == 8);
    CHECK(bn && bn->kind == XT_L_BATCHNORM2D);
    const xt_layer *last = xt_spec_last(&s);
    CHECK(last && !strcmp(last->path, "linear"));
    CHECK_EQ(s.num_classes, 10);
    const xt_layer *gap = find(&s, "avgpool");
    CHECK(gap && gap->kind == XT_L_ADAPTIVE_AVGPOOL2D && gap->kernel[0] == 8 && gap->out_shape[1] == 1);
    xt_spec_free(&s);
}

TEST(spec_resnet18_cifar_and_resnet8_mnist_load) {
    xt_spec s;
    xt_err e = {0};
    CHECK_MSG(xt_spec_load(&s, "models/resnet18_cifar.yaml", &e) == 0, "%s", e.msg);
    CHECK_EQ(xt_spec_total_params(&s), 11173962);
    CHECK(find(&s, "layer4.1.bn2") != NULL);
    xt_spec_free(&s);
    CHECK_MSG(xt_spec_load(&s, "models/resnet8_mnist.yaml", &e) == 0, "%s", e.msg);
    CHECK_EQ(xt_spec_total_params(&s), 77754);
    CHECK_EQ(s.input[0], 1);
    xt_spec_free(&s);
}

/* Auto names: at the top and in a body by kind and count (PyTorch attribute
 * style), in a sequential and a shortcut by position (nn.Sequential style). */
TEST(spec_block_auto_names) {
    xt_spec s;
    xt_err e = {0};
    CHECK_MSG(load_text("input: [4, 8, 8]\nlayers:\n"
                        "  - block: {body: [{conv2d: {out: 4, kernel: 3, padding: 1}}, relu, "
                        "{conv2d: {out: 4, kernel: 3, padding: 1}}]}\n"
                        "  - sequential: {layers: [{block: {body: [relu], shortcut: [relu, relu]}}, relu]}\n"
                        "  - block: {name: b, activation: none, body: [{block: {body: [relu]}}]}\n",
                        &s, &e, NULL) == 0, "%s", e.msg);
    static const char *paths[] = {"block1", "block1.conv1", "block1.relu1", "block1.conv2", "layer1", "layer1.0",
                                  "layer1.0.relu1", "layer1.0.shortcut.0", "layer1.0.shortcut.1", "layer1.1", "b",
                                  "b.block1", "b.block1.relu1"};
    CHECK_EQ(s.nlayers, 13);
    for (int i = 0; i < s.nlayers && i < 13; i++)
        CHECK_MSG(!strcmp(s.layers[i].path, paths[i]), "layer %d: %s != %s", i, s.layers[i].path, paths[i]);
    CHECK_EQ(s.layers[10].act_relu, 0);
    CHECK_EQ(s.layers[0].act_relu, 1);
    xt_spec_free(&s);
}

TEST(spec_block_summary_shows_the_structure) {
    xt_spec s;
    xt_err e = {0};
    CHECK_MSG(xt_spec_load(&s, "models/resnet8_mnist.yaml", &e) == 0, "%s", e.msg);
    char buf[8192] = {0};
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    xt_spec_summary(&s, f);
    fclose(f);
    CHECK_STR_CONTAINS(buf, "\nlayer2          sequential              [32, 14, 14]   14,528\n");
    CHECK_STR_CONTAINS(buf, "\n  0             block(+shortcut, relu)  [32, 14, 14]   14,528\n");
    CHECK_STR_CONTAINS(buf, "\n    shortcut.0  conv2d                  [32, 14, 14]      512\n");
    CHECK_STR_CONTAINS(buf, "\n  0             block(+x, relu)         [16, 28, 28]    4,672\n");
    CHECK_STR_CONTAINS(buf, "\navgpool         adaptive_avgpool2d      [64, 1, 1]          0\n");
    CHECK_STR_CONTAINS(buf, "Total params: 77,754\n");
    xt_spec_free(&s);
}

/* The writer's nested block style reads back to the same spec (hash and all). */
TEST(spec_block_yaml_round_trip_and_hash) {
    static const char *models[] = {"models/resnet20.yaml", "models/resnet8_mnist.yaml", "models/resnet18_cifar.yaml"};
    unsigned long long h[3];
    for (int m = 0; m < 3; m++) {
        xt_spec a, b;
        xt_err e = {0};
        CHECK_MSG(xt_spec_load(&a, models[m], &e) == 0, "%s", e.msg);
        static char buf[1 << 16];
        memset(buf, 0, sizeof buf);
        FILE *f = fmemopen(buf, sizeof buf - 1, "w");
        xt_spec_print_yaml(&a, f, 0);
        fclose(f);
        CHECK_MSG(load_text(buf, &b, &e, NULL) == 0, "%s:\n%s", e.msg, buf);
        CHECK_EQ(a.nlayers, b.nlayers);
        for (int i = 0; i < a.nlayers && i < b.nlayers; i++) CHECK(!strcmp(a.layers[i].path, b.layers[i].path));
        CHECK_MSG(xt_spec_hash(&a) == xt_spec_hash(&b), "%s: hash changed after a round trip", models[m]);
        h[m] = xt_spec_hash(&a);
        xt_spec_free(&a);
        xt_spec_free(&b);
    }
    CHECK(h[0] != h[1] && h[1] != h[2] && h[0] != h[2]);
}

/* The same layers as a block and as a plain list are different models. */
TEST(spec_block_hash_sees_the_structure) {
    xt_spec a, b, c;
    xt_err e = {0};
    CHECK(load_text("input: [2, 4, 4]\nlayers: [{block: {name: relu1, body: [relu]}}]\n", &a, &e, NULL) == 0);
    CHECK(load_text("input: [2, 4, 4]\nlayers: [{block: {name: relu1, activation: none, body: [relu]}}]\n", &b, &e,
                    NULL) == 0);
    CHECK(load_text("input: [2, 4, 4]\nlayers: [relu, relu]\n", &c, &e, NULL) == 0);
    CHECK(xt_spec_hash(&a) != xt_spec_hash(&b));
    CHECK(xt_spec_hash(&a) != xt_spec_hash(&c));
    xt_spec_free(&a);
    xt_spec_free(&b);
    xt_spec_free(&c);
}

#define HEAD "input: [16, 8, 8]\nlayers:\n"

TEST(spec_block_errors) {
    /* the body halves the map and doubles the channels; the shortcut does neither */
    SPEC_ERR(HEAD "  - block:\n      name: down\n      body: [{conv2d: {out: 32, kernel: 3, stride: 2, padding: 1}}]\n"
                   "      shortcut: [{conv2d: {out: 32, kernel: 1}}]\n",
              3, 5, "layer 'down' (block): the body gives [32, 4, 4] but the shortcut gives [32, 8, 8]",
              "stride: 2");
    /* no shortcut: the identity must match */
    SPEC_ERR(HEAD "  - sequential:\n      name: layer1\n      layers:\n        - block: {body: [{conv2d: {out: 8, kernel: 1}}]}\n",
              6, 11, "layer 'layer1.0' (block): the body gives [8, 8, 8] but the identity shortcut gives [16, 8, 8]",
              NULL);
    SPEC_ERR(HEAD "  - adaptive_avgpool2d: {output: 3}\n", 3, 5,
              "input 8x8 is not a multiple of output 3x3", "output: 1");
    SPEC_ERR(HEAD "  - adaptive_avgpool2d\n", 3, 5, "needs parameters", "adaptive_avgpool2d: {output: 1}");
    SPEC_ERR(HEAD "  - block: {body: relu}\n", 3, 19, "'body' must be a list of layers", NULL);
    SPEC_ERR(HEAD "  - block: {body: []}\n", 3, 19, "an empty list of layers", NULL);
    SPEC_ERR(HEAD "  - block: {shortcut: [relu]}\n", 3, 12, "needs 'body'", NULL);
    SPEC_ERR(HEAD "  - block: {body: [relu], activation: tanh}\n", 3, 39, "'activation' is 'tanh'", "relu or none");
    SPEC_ERR(HEAD "  - block: {body: [relu], shortcut: [relu], layers: [relu]}\n", 3, 45, "has no parameter 'layers'; block takes: name, activation, body, shortcut",
              NULL);
    SPEC_ERR(HEAD "  - block: {body: [{relu: {name: a}}, {relu: {name: a}}]}\n", 3, 39, "'a' is used twice", NULL);
    SPEC_ERR(HEAD "  - block: {body: [{relu: {name: shortcut}}], shortcut: [relu]}\n", 3, 20,
              "clashes with the block's shortcut", NULL);
    /* a YAML alias of an enclosing block would nest it in itself */
    SPEC_ERR(HEAD "  - &a {block: {body: [relu, *a]}}\n", 3, 23, "layer 2 is an alias of a block that contains it",
             NULL);
    SPEC_ERR(HEAD "  - residual: {body: [relu]}\n", 3, 5, "did you mean 'block'?", NULL);
    /* a shape error inside a block names the layer by its path */
    SPEC_ERR(HEAD "  - sequential: {name: s, layers: [{block: {body: [flatten, {conv2d: {out: 2, kernel: 1}}]}}]}\n",
              3, 61, "layer 's.0.conv1' (conv2d) expects a [C, H, W] input", NULL);
}

/* Blocks nest (three YAML levels each) until the YAML reader's depth limit,
 * which is a clear error rather than deep recursion. */
TEST(spec_block_nesting) {
    char text[4096] = HEAD "  - ";
    for (int i = 0; i < 9; i++) strcat(text, "{block: {body: [");
    strcat(text, "relu");
    for (int i = 0; i < 9; i++) strcat(text, "]}}");
    strcat(text, "\n");
    xt_spec s;
    xt_err e = {0};
    CHECK_MSG(load_text(text, &s, &e, NULL) == 0, "%s", e.msg);
    CHECK_EQ(s.nlayers, 10);
    CHECK(!strcmp(s.layers[9].path, "block1.block1.block1.block1.block1.block1.block1.block1.block1.relu1"));
    xt_spec_free(&s);
    strcpy(text, HEAD "  - ");
    for (int i = 0; i < 12; i++) strcat(text, "{block: {body: [");
    strcat(text, "relu");
    for (int i = 0; i < 12; i++) strcat(text, "]}}");
    strcat(text, "\n");
    CHECK_EQ(load_text(text, &s, &e, NULL), XT_EUSAGE);
    CHECK_STR_CONTAINS(e.msg, "nesting deeper than 32 levels");
}

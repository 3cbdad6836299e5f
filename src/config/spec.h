/* spec.h — a model as a YAML list of layers, with shapes inferred.
 *
 *   input: [1, 28, 28]
 *   layers:
 *     - conv2d: {name: conv1, out: 10, kernel: 5}
 *     - maxpool2d: {kernel: 2}
 *     - relu
 *     - batchnorm2d: {name: bn1}
 *     - block: {body: [...], shortcut: [...]}      # residual: body(x) + shortcut(x), ReLU
 *     ...
 *
 * Shapes are checked layer by layer; a mismatch is an error naming the layer
 * and its file:line:col. Parameter names follow PyTorch's state_dict
 * (conv1.weight, conv1.bias, bn1.running_mean, layer1.0.shortcut.0.weight).
 */
#ifndef XT_SPEC_H
#define XT_SPEC_H

#include <stdio.h>

#include "util/err.h"

typedef enum {
    XT_L_CONV2D, XT_L_BATCHNORM2D, XT_L_MAXPOOL2D, XT_L_AVGPOOL2D, XT_L_RELU,
    XT_L_DROPOUT, XT_L_FLATTEN, XT_L_LINEAR, XT_L_LOG_SOFTMAX,
    XT_L_ADAPTIVE_AVGPOOL2D, /* output size `out_hw`; the input must be a multiple of it */
    XT_L_BLOCK,              /* residual: body(x) + shortcut(x) (identity when empty), then ReLU if act_relu */
    XT_L_SEQUENTIAL,         /* a named group of layers (nn.Sequential): children named 0, 1, ... */
    XT_L_COUNT
} xt_layer_kind;

/* Layers in all, counting those inside blocks (every layer of the tree). */
#define XT_SPEC_MAX_LAYERS 256

/* The layers of a spec form a tree (blocks and groups hold lists of layers),
 * stored flat in pre-order: a block at index i is followed by its `nbody`
 * body layers (all descendants, in order) and then its `nshort` shortcut
 * layers; a sequential by its `nbody` layers. So code that only needs every
 * layer (parameters, buffers, FLOPs) walks the array; code that needs the
 * structure (shapes, the forward pass) walks ranges. */
typedef struct xt_layer {
    xt_layer_kind kind;
    char name[64];        /* user's name, or auto "<kind><k>" (relu1, flatten1); "0", "1"... in a sequential/shortcut */
    char path[80];        /* module path = state_dict prefix: "layer1.0.conv1", "layer1.0.shortcut.0" */
    int parent;           /* index of the enclosing block/sequential; -1 at the top */
    int in_shortcut;      /* 1 = in the parent block's shortcut list */
    int depth;            /* 0 at the top */
    int nbody, nshort;    /* block/sequential: layers (all descendants) in its body / shortcut */
    int act_relu;         /* block: ReLU after the sum (default 1, `activation: none` turns it off) */
    int out_hw[2];        /* adaptive_avgpool2d: output (h, w) */
    int in;               /* conv2d/linear: declared in channels/features; 0 = inferred (checked when given) */
    int out;              /* conv2d: out channels; linear: out features */
    int kernel[2], stride[2], padding[2]; /* conv2d/pools; stride defaults to 1 (conv) or kernel (pools) */
    int bias;             /* conv2d/linear: default 1 */
    float p;              /* dropout probability, default 0.5 */
    float eps;            /* batchnorm2d: 1e-5 */
    float momentum;       /* batchnorm2d: 0.1 (PyTorch's running-stat momentum) */
    int in_rank, out_rank;/* 3 = (C,H,W), 1 = (F) */
    int in_shape[3], out_shape[3];
    long params;          /* trainable parameters (weights + biases; BN gamma+beta) */
    int line, col;        /* position in the spec (1-based) */
} xt_layer;

typedef struct xt_spec {
    char source[512];     /* file the spec came from (or the config, when inline) */
    int input[3];         /* (C, H, W) */
    int nlayers;
    xt_layer *layers;     /* owned */
    int num_classes;      /* the last layer's width */
    int last;             /* index of the last top-level layer (the model's output) */
} xt_spec;

/* Parse a spec file. Returns 0 or XT_EUSAGE with a file:line:col message. */
int xt_spec_load(xt_spec *s, const char *path, xt_err *e);
/* Parse from an already-open libyaml document node (inline `model:` in a
 * config); `doc` is a yaml_document_t*, `node` a yaml_node_t*. */
int xt_spec_from_yaml(xt_spec *s, const char *source, void *doc, void *node, xt_err *e);
/* Parse `len` bytes of spec YAML in memory (what xt_spec_print_yaml wrote,
 * e.g. a checkpoint's copy); `source` names it in messages. */
int xt_spec_from_text(xt_spec *s, const char *source, const char *text, size_t len, xt_err *e);
/* Infer every layer's shape and parameter count (called by the loaders). */
int xt_spec_infer(xt_spec *s, xt_err *e);
/* Keras-style summary table: name, type, output shape, params; totals. */
void xt_spec_summary(const xt_spec *s, FILE *out);
/* The layer whose output is the model's (the last top-level one). */
const xt_layer *xt_spec_last(const xt_spec *s);
/* Index just past layer i and everything inside it. */
int xt_spec_end(const xt_spec *s, int i);
long xt_spec_total_params(const xt_spec *s);
/* Multiply-adds of one sample's forward pass through the conv2d and linear
 * layers (the rest is a rounding error): the FLOP count the benchmark's
 * yardstick uses, 2 per multiply-add, and 3x the forward pass for training. */
long long xt_spec_forward_macs(const xt_spec *s);
/* Non-trainable buffers (BatchNorm running_mean + running_var: 2*C each). */
long xt_spec_total_buffers(const xt_spec *s);
/* Write the spec back as YAML (`input:` and `layers:` with every parameter
 * resolved), each line prefixed by `indent` spaces; xt_spec_from_yaml reads
 * it back to the same spec. */
void xt_spec_print_yaml(const xt_spec *s, FILE *out, int indent);
/* Stable 64-bit FNV-1a hash of the input shape and every layer's kind, name,
 * hyperparameters and shapes (what makes a checkpoint fit the model). */
unsigned long long xt_spec_hash(const xt_spec *s);
const char *xt_layer_kind_name(xt_layer_kind k);
void xt_spec_free(xt_spec *s);

#endif

/* export_onnx.c — the ONNX export; see export_onnx.h. The protobuf field
 * numbers are onnx/onnx.proto's (ModelProto, GraphProto, NodeProto,
 * AttributeProto, TensorProto, ValueInfoProto, TypeProto,
 * TensorShapeProto), written with io/protobuf.h. */
#include "run/export_onnx.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/config.h"
#include "io/atomic.h"
#include "io/ckptdir.h"
#include "io/protobuf.h"
#include "io/safetensors.h"
#include "run/run.h"
#include "util/version.h"

#define ONNX_IR_VERSION 8
#define ONNX_OPSET 17

enum { M_IR = 1, M_PRODUCER = 2, M_PRODUCER_VERSION = 3, M_MODEL_VERSION = 5, M_DOC = 6, M_GRAPH = 7, M_OPSET = 8, M_META = 14 };
enum { G_NODE = 1, G_NAME = 2, G_INIT = 5, G_DOC = 10, G_INPUT = 11, G_OUTPUT = 12 };
enum { N_INPUT = 1, N_OUTPUT = 2, N_NAME = 3, N_OP = 4, N_ATTR = 5 };
enum { A_NAME = 1, A_F = 2, A_I = 3, A_INTS = 8, A_TYPE = 20 };
enum { AT_FLOAT = 1, AT_INT = 2, AT_INTS = 7 };
enum { T_DIMS = 1, T_TYPE = 2, T_NAME = 8, T_RAW = 9, T_FLOAT = 1 };

/* The graph as it is written: the nodes' and initializers' bytes. */
typedef struct builder {
    xt_pb *g;                 /* the GraphProto being written */
    const xt_spec *sp;
    const xt_st_file *f;
    xt_err *e;
    int rc;
    char names[XT_SPEC_MAX_LAYERS * 4][176];/* value names made here, so pointers stay valid */
    int nnames;
} builder;

static const char *new_name(builder *b, const char *a, const char *suffix) {
    if (b->nnames == (int)(sizeof b->names / sizeof *b->names)) return "overflow";
    char *n = b->names[b->nnames++];
    snprintf(n, sizeof b->names[0], "%s%s", a, suffix);
    return n;
}

static void attr_int(xt_pb *g, const char *name, long long v) {
    size_t m = xt_pb_begin(g, N_ATTR);
    xt_pb_string(g, A_NAME, name);
    xt_pb_varint(g, A_TYPE, AT_INT);
    xt_pb_varint(g, A_I, (uint64_t)v);
    xt_pb_end(g, m);
}

static void attr_float(xt_pb *g, const char *name, float v) {
    size_t m = xt_pb_begin(g, N_ATTR);
    xt_pb_string(g, A_NAME, name);
    xt_pb_varint(g, A_TYPE, AT_FLOAT);
    xt_pb_float(g, A_F, v);
    xt_pb_end(g, m);
}

static void attr_ints(xt_pb *g, const char *name, const int *v, int n) {
    size_t m = xt_pb_begin(g, N_ATTR);
    xt_pb_string(g, A_NAME, name);
    xt_pb_varint(g, A_TYPE, AT_INTS);
    for (int i = 0; i < n; i++) xt_pb_varint(g, A_INTS, (uint64_t)(int64_t)v[i]);
    xt_pb_end(g, m);
}

/* kernel_shape, strides and pads ([top, left, bottom, right]) of a window layer. */
static void window_attrs(xt_pb *g, const xt_layer *l) {
    int pads[4] = {l->padding[0], l->padding[1], l->padding[0], l->padding[1]};
    attr_ints(g, "kernel_shape", l->kernel, 2);
    attr_ints(g, "strides", l->stride, 2);
    attr_ints(g, "pads", pads, 4);
}

/* Open a NodeProto: op, inputs (NULL entries skipped), one output. */
static size_t node(builder *b, const char *op, const char *name, const char *const *in, int nin, const char *out) {
    size_t m = xt_pb_begin(b->g, G_NODE);
    for (int i = 0; i < nin; i++)
        if (in[i]) xt_pb_string(b->g, N_INPUT, in[i]);
    xt_pb_string(b->g, N_OUTPUT, out);
    xt_pb_string(b->g, N_NAME, name);
    xt_pb_string(b->g, N_OP, op);
    return m;
}

/* The checkpoint's tensor <path>.<what> as an initializer of the expected
 * shape; its name, or NULL with b->rc set. */
static const char *initializer(builder *b, const xt_layer *l, const char *what, int rank, const int64_t *shape) {
    if (b->rc) return NULL;
    char name[160];
    snprintf(name, sizeof name, "%.80s.%.40s", l->path, what);
    const xt_st_tensor *t = xt_st_find(b->f, name);
    int ok = t && t->dtype == XT_ST_F32 && t->rank == rank;
    for (int k = 0; ok && k < rank; k++) ok = t->shape[k] == shape[k];
    if (!ok) {
        b->rc = xt_fail(b->e, XT_ERUNTIME, "%s: %s is %s in the checkpoint; the file does not match its model, use another checkpoint",
                        b->f->path, name, t ? "of another type or shape" : "missing");
        return NULL;
    }
    size_t m = xt_pb_begin(b->g, G_INIT);
    for (int k = 0; k < rank; k++) xt_pb_varint(b->g, T_DIMS, (uint64_t)shape[k]);
    xt_pb_varint(b->g, T_TYPE, T_FLOAT);
    xt_pb_string(b->g, T_NAME, name);
    xt_pb_bytes(b->g, T_RAW, t->data, t->nbytes); /* safetensors holds little-endian floats, as raw_data wants */
    xt_pb_end(b->g, m);
    return new_name(b, name, "");
}

static const char *emit_range(builder *b, int first, int end, const char *x);

/* One layer on input x; returns its output's name (x itself for dropout). */
static const char *emit(builder *b, int i, const char *x) {
    const xt_layer *l = &b->sp->layers[i];
    xt_pb *g = b->g;
    const char *y = new_name(b, l->path, "");
    switch (l->kind) {
    case XT_L_CONV2D: {
        int64_t ws[4] = {l->out, l->in_shape[0], l->kernel[0], l->kernel[1]}, bs[1] = {l->out};
        const char *in[3] = {x, initializer(b, l, "weight", 4, ws), l->bias ? initializer(b, l, "bias", 1, bs) : NULL};
        size_t m = node(b, "Conv", l->path, in, 3, y);
        window_attrs(g, l);
        attr_ints(g, "dilations", (const int[]){1, 1}, 2);
        attr_int(g, "group", 1);
        xt_pb_end(g, m);
        return y;
    }
    case XT_L_BATCHNORM2D: {
        int64_t cs[1] = {l->in_shape[0]};
        const char *in[5] = {x, initializer(b, l, "weight", 1, cs), initializer(b, l, "bias", 1, cs),
                             initializer(b, l, "running_mean", 1, cs), initializer(b, l, "running_var", 1, cs)};
        size_t m = node(b, "BatchNormalization", l->path, in, 5, y);
        attr_float(g, "epsilon", l->eps);
        attr_float(g, "momentum", 1.0f - l->momentum); /* ONNX weighs the running value, PyTorch the new one */
        xt_pb_end(g, m);
        return y;
    }
    case XT_L_MAXPOOL2D:
    case XT_L_AVGPOOL2D:
    case XT_L_ADAPTIVE_AVGPOOL2D: {
        size_t m = node(b, l->kind == XT_L_MAXPOOL2D ? "MaxPool" : "AveragePool", l->path, &x, 1, y);
        window_attrs(g, l);
        if (l->kind != XT_L_MAXPOOL2D) attr_int(g, "count_include_pad", 1);
        xt_pb_end(g, m);
        return y;
    }
    case XT_L_RELU: xt_pb_end(g, node(b, "Relu", l->path, &x, 1, y)); return y;
    case XT_L_DROPOUT: return x; /* eval form: the identity */
    case XT_L_FLATTEN: {
        if (l->in_rank == 1) return x;
        size_t m = node(b, "Flatten", l->path, &x, 1, y);
        attr_int(g, "axis", 1);
        xt_pb_end(g, m);
        return y;
    }
    case XT_L_LINEAR: {
        int64_t ws[2] = {l->out, l->in_shape[0]}, bs[1] = {l->out};
        const char *in[3] = {x, initializer(b, l, "weight", 2, ws), l->bias ? initializer(b, l, "bias", 1, bs) : NULL};
        size_t m = node(b, "Gemm", l->path, in, 3, y);
        attr_int(g, "transB", 1);
        xt_pb_end(g, m);
        return y;
    }
    case XT_L_LOG_SOFTMAX: {
        size_t m = node(b, "LogSoftmax", l->path, &x, 1, y);
        attr_int(g, "axis", 1);
        xt_pb_end(g, m);
        return y;
    }
    case XT_L_SEQUENTIAL: return emit_range(b, i + 1, i + 1 + l->nbody, x);
    case XT_L_BLOCK: {
        int s0 = i + 1 + l->nbody;
        const char *body = emit_range(b, i + 1, s0, x);
        const char *sc = l->nshort ? emit_range(b, s0, s0 + l->nshort, x) : x;
        const char *sum = l->act_relu ? new_name(b, l->path, ".add") : y, *in[2] = {body, sc};
        xt_pb_end(g, node(b, "Add", new_name(b, l->path, ".add"), in, 2, sum));
        if (l->act_relu) xt_pb_end(g, node(b, "Relu", new_name(b, l->path, ".relu"), &sum, 1, y));
        return y;
    }
    case XT_L_COUNT: break;
    }
    b->rc = xt_fail(b->e, XT_ERUNTIME, "layer %s (%s) has no ONNX form; this is a bug, please report it", l->path,
                    xt_layer_kind_name(l->kind));
    return x;
}

static const char *emit_range(builder *b, int first, int end, const char *x) {
    for (int i = first; i < end && !b->rc; i = xt_spec_end(b->sp, i)) x = emit(b, i, x);
    return x;
}

/* ValueInfoProto: float [N, dims...] with N symbolic. */
static void value_info(xt_pb *g, int field, const char *name, const int *dims, int nd) {
    size_t vi = xt_pb_begin(g, field);
    xt_pb_string(g, 1, name);
    size_t ty = xt_pb_begin(g, 2), tt = xt_pb_begin(g, 1);
    xt_pb_varint(g, 1, T_FLOAT);
    size_t sh = xt_pb_begin(g, 2), d = xt_pb_begin(g, 1);
    xt_pb_string(g, 2, "N");
    xt_pb_end(g, d);
    for (int k = 0; k < nd; k++) {
        d = xt_pb_begin(g, 1);
        xt_pb_varint(g, 1, (uint64_t)dims[k]);
        xt_pb_end(g, d);
    }
    xt_pb_end(g, sh);
    xt_pb_end(g, tt);
    xt_pb_end(g, ty);
    xt_pb_end(g, vi);
}

/* What the checkpoint says about its model: the spec, and the text of its
 * normalization and classes ("" when an older checkpoint does not say). */
typedef struct about {
    xt_spec spec;
    int have_spec;
    char hash[32], mean[96], std[96];
    const char *classes;  /* a JSON list, or "" */
} about;

static int load_spec(const xt_st_file *f, about *a, xt_err *e) {
    const char *model = xt_st_meta_get(f, "xlatrain.model"), *cfg = xt_st_meta_get(f, "xlatrain.resolved_config");
    const char *hash = xt_st_meta_get(f, "xlatrain.model_hash");
    if (!hash) return xt_fail(e, XT_ERUNTIME, "%s: no xlatrain.model_hash in the metadata: not a checkpoint written by xlatrain; export one from an xlatrain run", f->path);
    snprintf(a->hash, sizeof a->hash, "%s", hash);
    int rc;
    if (model && *model) {
        const char *src = xt_st_meta_get(f, "xlatrain.model_source");
        if ((rc = xt_spec_from_text(&a->spec, src && *src ? src : f->path, model, strlen(model), e))) return rc;
        a->have_spec = 1;
    } else if (cfg && *cfg) { /* before checkpoints carried the spec: the model their config names */
        xt_config c;
        if ((rc = xt_config_load_buffer(&c, f->path, cfg, strlen(cfg), NULL, 0, e)))
            return xt_fail(e, XT_ERUNTIME, "%s: the model of this older checkpoint cannot be rebuilt from its recorded config (%s); run from the directory it was trained in",
                           f->path, e->msg);
        double mean[XT_DATA_MAX_CHANNELS], std[XT_DATA_MAX_CHANNELS];
        xt_run_normalization(&c, mean, std);
        for (int ch = 0, om = 0, os = 0; ch < c.spec.input[0] && ch < XT_DATA_MAX_CHANNELS; ch++) {
            om += snprintf(a->mean + om, sizeof a->mean - (size_t)om, ch ? ",%.9g" : "%.9g", mean[ch]);
            os += snprintf(a->std + os, sizeof a->std - (size_t)os, ch ? ",%.9g" : "%.9g", std[ch]);
        }
        a->spec = c.spec; /* the config's spec is all it owns: ours now */
        a->have_spec = 1;
    } else {
        return xt_fail(e, XT_ERUNTIME, "%s: the checkpoint records no model; export one written by xlatrain", f->path);
    }
    char have[32];
    snprintf(have, sizeof have, "%016llx", xt_spec_hash(&a->spec));
    if (strcmp(have, hash))
        return xt_fail(e, XT_ERUNTIME, "%s: the recorded model (hash %s) is not the one the weights were trained for (%s); the file is damaged or the model file changed since",
                       f->path, have, hash);
    const char *m = xt_st_meta_get(f, "xlatrain.normalize.mean"), *s = xt_st_meta_get(f, "xlatrain.normalize.std");
    if (m && s) {
        snprintf(a->mean, sizeof a->mean, "%s", m);
        snprintf(a->std, sizeof a->std, "%s", s);
    }
    a->classes = xt_st_meta_get(f, "xlatrain.class_names");
    if (!a->classes) a->classes = "";
    return 0;
}

static void meta(xt_pb *p, const char *key, const char *value) {
    size_t m = xt_pb_begin(p, M_META);
    xt_pb_string(p, 1, key);
    xt_pb_string(p, 2, value);
    xt_pb_end(p, m);
}

static const char *output_name(const xt_spec *sp) {
    return xt_spec_last(sp)->kind == XT_L_LOG_SOFTMAX ? "log_probs" : "logits";
}

/* The ModelProto into p. */
static int build(xt_pb *p, const xt_st_file *f, const about *a, xt_err *e) {
    const xt_spec *sp = &a->spec;
    const char *out = output_name(sp);
    char doc[4096];
    snprintf(doc, sizeof doc,
             "%s, exported by xlatrain %s from %s (model hash %s). Input 'input': float [N, %d, %d, %d], the "
             "image's pixels divided by 255, then per channel (x - mean) / std with mean [%s] and std [%s]. Output "
             "'%s': float [N, %d], %s. Classes: %.2000s.",
             sp->source, XT_VERSION, f->path, a->hash, sp->input[0], sp->input[1], sp->input[2],
             a->mean[0] ? a->mean : "unrecorded", a->std[0] ? a->std : "unrecorded", out, sp->num_classes,
             strcmp(out, "logits") ? "log-probabilities (exp gives the probabilities)" : "scores (softmax gives the probabilities)",
             a->classes[0] ? a->classes : "unrecorded");
    xt_pb_varint(p, M_IR, ONNX_IR_VERSION);
    xt_pb_string(p, M_PRODUCER, "xlatrain");
    xt_pb_string(p, M_PRODUCER_VERSION, XT_VERSION);
    xt_pb_varint(p, M_MODEL_VERSION, 1);
    xt_pb_string(p, M_DOC, doc);
    size_t op = xt_pb_begin(p, M_OPSET);
    xt_pb_string(p, 1, "");
    xt_pb_varint(p, 2, ONNX_OPSET);
    xt_pb_end(p, op);
    size_t gm = xt_pb_begin(p, M_GRAPH);
    builder *b = calloc(1, sizeof *b);
    if (!b) return xt_fail(e, XT_ERUNTIME, "out of memory");
    *b = (builder){.g = p, .sp = sp, .f = f, .e = e};
    xt_pb_string(p, G_NAME, "xlatrain");
    const char *y = emit_range(b, 0, sp->nlayers, "input");
    /* the output under its fixed name, whatever the last layer is called */
    if (!b->rc) xt_pb_end(p, node(b, "Identity", "output", &y, 1, out));
    int rc = b->rc;
    free(b);
    if (rc) return rc;
    value_info(p, G_INPUT, "input", sp->input, 3);
    value_info(p, G_OUTPUT, out, &sp->num_classes, 1);
    xt_pb_string(p, G_DOC, doc);
    xt_pb_end(p, gm);
    meta(p, "xlatrain_version", XT_VERSION);
    meta(p, "model_hash", a->hash);
    meta(p, "model", sp->source);
    meta(p, "checkpoint", f->path);
    meta(p, "input_layout", "NCHW float: pixels / 255, then (x - mean[c]) / std[c]");
    if (a->mean[0]) meta(p, "normalize_mean", a->mean);
    if (a->std[0]) meta(p, "normalize_std", a->std);
    if (a->classes[0]) meta(p, "class_names", a->classes);
    meta(p, "output", out);
    return 0;
}

int xt_export_onnx(const char *ckpt, const char *out, xt_err *e) {
    char path[4096];
    struct stat st;
    int rc = 0;
    if (!stat(ckpt, &st) && S_ISDIR(st.st_mode)) rc = xt_st_find_latest(ckpt, path, sizeof path, e);
    else if ((size_t)snprintf(path, sizeof path, "%s", ckpt) >= sizeof path) rc = xt_fail(e, XT_EUSAGE, "--export: path too long");
    if (rc) return rc;
    xt_st_file f;
    if ((rc = xt_st_read(path, &f, e))) return rc;
    about a = {0};
    xt_pb p = {0};
    rc = load_spec(&f, &a, e);
    if (!rc) rc = build(&p, &f, &a, e);
    if (!rc && p.oom) rc = xt_fail(e, XT_ERUNTIME, "out of memory writing %s", out);
    if (!rc) rc = xt_write_file_atomic(out, p.buf, p.len, e);
    if (!rc) fprintf(stderr, "xlatrain: exported the model of %s to %s (ONNX opset %d, %zu bytes)\n", path, out, ONNX_OPSET, p.len);
    xt_pb_free(&p);
    if (a.have_spec) xt_spec_free(&a.spec);
    xt_st_close(&f);
    return rc;
}

/* spec.c — the layer spec: YAML -> xt_layer tree (stored flat in pre-order;
 * blocks and groups hold lists of layers) with auto names, module paths,
 * inferred shapes and parameter counts; the summary table, the YAML writer
 * and the model hash. See spec.h for the format.
 *
 * Not here: building the layers (src/nn) or the FLAGS file (config.c). All
 * errors are XT_EUSAGE with "<spec file>:<line>:<col>: <layer>: <problem>; <fix>".
 */
#include "config/spec.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_yaml.h"
#include "kernels/kernels.h" /* K_POOL_MAX_CELLS: a max pool's argmax is a byte, the kept cell of its window */

/* ---- the layer kinds and their parameters ----------------------------------- */

enum { P_NAME, P_IN, P_OUT, P_KERNEL, P_STRIDE, P_PADDING, P_BIAS, P_P, P_EPS, P_MOMENTUM,
       P_OUTPUT, P_ACTIVATION, P_BODY, P_SHORTCUT, P_LAYERS, P_COUNT };
static const char *const param_names[P_COUNT] = {"name", "in", "out", "kernel", "stride", "padding", "bias", "p",
                                                 "eps", "momentum", "output", "activation", "body", "shortcut",
                                                 "layers"};
#define B(p) (1u << (p))
#define POOL_PARAMS (B(P_NAME) | B(P_KERNEL) | B(P_STRIDE) | B(P_PADDING))

static const struct kind_info {
    const char *name;     /* as written in the spec */
    const char *prefix;   /* auto names are <prefix><k>, as PyTorch code names them */
    unsigned params;      /* B(P_*) the kind accepts */
    unsigned required;
    int in_rank;          /* the input it needs: 3 = (C,H,W), 1 = flat, 0 = any */
    const char *example;  /* for "needs 'out'" messages */
} kinds[XT_L_COUNT] = {
    [XT_L_CONV2D] = {"conv2d", "conv",
                     B(P_NAME) | B(P_IN) | B(P_OUT) | B(P_KERNEL) | B(P_STRIDE) | B(P_PADDING) | B(P_BIAS),
                     B(P_OUT) | B(P_KERNEL), 3, "conv2d: {out: 10, kernel: 5}"},
    [XT_L_BATCHNORM2D] = {"batchnorm2d", "bn", B(P_NAME) | B(P_EPS) | B(P_MOMENTUM), 0, 3, "batchnorm2d"},
    [XT_L_MAXPOOL2D] = {"maxpool2d", "pool", POOL_PARAMS, B(P_KERNEL), 3, "maxpool2d: {kernel: 2}"},
    [XT_L_AVGPOOL2D] = {"avgpool2d", "pool", POOL_PARAMS, B(P_KERNEL), 3, "avgpool2d: {kernel: 2}"},
    [XT_L_RELU] = {"relu", "relu", B(P_NAME), 0, 0, "relu"},
    [XT_L_DROPOUT] = {"dropout", "dropout", B(P_NAME) | B(P_P), 0, 0, "dropout: {p: 0.5}"},
    [XT_L_FLATTEN] = {"flatten", "flatten", B(P_NAME), 0, 0, "flatten"},
    [XT_L_LINEAR] = {"linear", "fc", B(P_NAME) | B(P_IN) | B(P_OUT) | B(P_BIAS), B(P_OUT), 1,
                     "linear: {out: 10}"},
    [XT_L_LOG_SOFTMAX] = {"log_softmax", "log_softmax", B(P_NAME), 0, 1, "log_softmax"},
    [XT_L_ADAPTIVE_AVGPOOL2D] = {"adaptive_avgpool2d", "avgpool", B(P_NAME) | B(P_OUTPUT), B(P_OUTPUT), 3,
                                 "adaptive_avgpool2d: {output: 1}"},
    [XT_L_BLOCK] = {"block", "block", B(P_NAME) | B(P_BODY) | B(P_SHORTCUT) | B(P_ACTIVATION), B(P_BODY), 0,
                    "block: {body: [{conv2d: {out: 16, kernel: 3, padding: 1}}]}"},
    [XT_L_SEQUENTIAL] = {"sequential", "layer", B(P_NAME) | B(P_LAYERS), B(P_LAYERS), 0,
                         "sequential: {name: layer1, layers: [relu]}"},
};
_Static_assert(XT_L_COUNT == 12, "describe the new layer kind in kinds[]");

/* Names people bring from PyTorch/Keras, which edit distance would not find. */
static const struct { const char *alias, *kind; } kind_aliases[] = {
    {"conv", "conv2d"},         {"conv2", "conv2d"},          {"convolution", "conv2d"},
    {"bn", "batchnorm2d"},      {"batchnorm", "batchnorm2d"}, {"batch_norm", "batchnorm2d"},
    {"maxpool", "maxpool2d"},   {"max_pool2d", "maxpool2d"},  {"avgpool", "avgpool2d"},
    {"avg_pool2d", "avgpool2d"}, {"fc", "linear"},            {"dense", "linear"},
    {"logsoftmax", "log_softmax"}, {"softmax", "log_softmax"}, {"reshape", "flatten"},
    {"adaptive_avg_pool2d", "adaptive_avgpool2d"}, {"global_avgpool", "adaptive_avgpool2d"},
    {"residual", "block"},      {"basicblock", "block"},      {"basic_block", "block"},
    {"seq", "sequential"},      {"stage", "sequential"},
};

/* Limits that keep every shape and count in range of int/long arithmetic. */
#define MAX_CHANNELS 65536
#define MAX_SIDE 65536
#define MAX_KERNEL 1024
#define MAX_FEATURES (1 << 24)
#define MAX_ELEMS INT_MAX

const char *xt_layer_kind_name(xt_layer_kind k) {
    return (unsigned)k < XT_L_COUNT ? kinds[k].name : "?";
}

/* ---- errors ---------------------------------------------------------------- */

typedef struct {
    const char *src;       /* file named in messages */
    yaml_document_t *doc;
    xt_err *e;
    xt_spec *s;            /* layers appended here in pre-order */
    int cap;               /* allocated entries of s->layers */
    const yaml_node_t *open[XT_SPEC_MAX_LAYERS]; /* the blocks/groups being read, outermost first */
    int nopen;
} pctx;

static int failv(const char *src, int line, int col, xt_err *e, const char *fmt, va_list ap) {
    char msg[900];
    vsnprintf(msg, sizeof msg, fmt, ap);
    return xt_fail(e, XT_EUSAGE, "%s:%d:%d: %s", src, line, col, msg);
}

/* "<src>:<line>:<col>: <message>" at a YAML node. */
__attribute__((format(printf, 3, 4))) static int at(pctx *p, const yaml_node_t *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = failv(p->src, n ? xt_yaml_line(n) : 1, n ? xt_yaml_col(n) : 1, p->e, fmt, ap);
    va_end(ap);
    return rc;
}

/* "<src>:<line>:<col>: <message>" at a parsed layer. */
__attribute__((format(printf, 4, 5))) static int at_layer(const xt_spec *s, const xt_layer *l, xt_err *e,
                                                          const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = failv(s->source, l->line, l->col, e, fmt, ap);
    va_end(ap);
    return rc;
}

/* "layer 'conv1' (conv2d)", or "layer 3 (conv2d)" before it has a name. */
static const char *label(const xt_layer *l, int idx, char *buf, size_t cap) {
    if (l->path[0]) snprintf(buf, cap, "layer '%s' (%s)", l->path, kinds[l->kind].name);
    else if (l->name[0]) snprintf(buf, cap, "layer '%s' (%s)", l->name, kinds[l->kind].name);
    else snprintf(buf, cap, "layer %d (%s)", idx, kinds[l->kind].name);
    return buf;
}

static const char *shape_str(int rank, const int *sh, char *buf, size_t cap) {
    if (rank == 3) snprintf(buf, cap, "[%d, %d, %d]", sh[0], sh[1], sh[2]);
    else snprintf(buf, cap, "[%d]", sh[0]);
    return buf;
}

/* ---- parameter values ---------------------------------------------------------- */

static yaml_node_t *node_at(pctx *p, int idx) { return yaml_document_get_node(p->doc, idx); }

static int get_int(pctx *p, const yaml_node_t *v, const char *lab, const char *what, long long lo, long long hi,
                   int *out) {
    char got[96];
    long long x;
    int r = xt_scalar_int(xt_yaml_text(v) ? xt_yaml_text(v) : "", xt_yaml_plain(v), &x);
    if (r == -1)
        return at(p, v, "%s: '%s' must be an integer, got %s", lab, what, xt_yaml_describe(v, got, sizeof got));
    if (r == -2 || x < lo || x > hi)
        return at(p, v, "%s: '%s' is %s; it must be from %lld to %lld", lab, what,
                  xt_quote(xt_yaml_text(v), got, sizeof got), lo, hi);
    *out = (int)x;
    return 0;
}

/* kernel/stride/padding: an int for both sides, or [h, w]. */
static int get_hw(pctx *p, const yaml_node_t *v, const char *lab, const char *what, long long lo, long long hi,
                  int out[2]) {
    if (v->type != YAML_SEQUENCE_NODE) {
        if (v->type == YAML_MAPPING_NODE)
            return at(p, v, "%s: '%s' must be an integer or [h, w], got a mapping", lab, what);
        int rc = get_int(p, v, lab, what, lo, hi, &out[0]);
        out[1] = out[0];
        return rc;
    }
    const yaml_node_item_t *it = v->data.sequence.items.start;
    long n = v->data.sequence.items.top - it;
    if (n != 2) return at(p, v, "%s: '%s' must be an integer or [h, w], got a list of %ld", lab, what, n);
    for (int i = 0; i < 2; i++) {
        yaml_node_t *x = node_at(p, it[i]);
        if (x->type != YAML_SCALAR_NODE)
            return at(p, x, "%s: '%s' must be an integer or [h, w] of integers", lab, what);
        int rc = get_int(p, x, lab, what, lo, hi, &out[i]);
        if (rc) return rc;
    }
    return 0;
}

static int outside(double x, double lo, int lo_open, double hi, int hi_open) {
    return (lo_open ? x <= lo : x < lo) || (hi_open ? x >= hi : x > hi);
}

/* A float in [lo, hi] (or (lo, hi] with lo_open). The range is checked on
 * the value as stored, a 32-bit float: eps 1e-48 is 0 there, dropout
 * p 0.999999999 is 1, and both are outside their ranges. */
static int get_float(pctx *p, const yaml_node_t *v, const char *lab, const char *what, double lo, int lo_open,
                     double hi, int hi_open, float *out) {
    char got[96];
    double x;
    int r = xt_scalar_float(xt_yaml_text(v) ? xt_yaml_text(v) : "", xt_yaml_plain(v), &x);
    if (r == -1)
        return at(p, v, "%s: '%s' must be a number, got %s", lab, what, xt_yaml_describe(v, got, sizeof got));
    float f = (float)x;
    if (r == -2 || outside(x, lo, lo_open, hi, hi_open))
        return at(p, v, "%s: '%s' is %s; it must be in %c%g, %g%c", lab, what,
                  xt_quote(xt_yaml_text(v), got, sizeof got), lo_open ? '(' : '[', lo, hi, hi_open ? ')' : ']');
    if (outside((double)f, lo, lo_open, hi, hi_open))
        return at(p, v, "%s: '%s' is %s, which a 32-bit float holds as %g; it must be in %c%g, %g%c", lab, what,
                  xt_quote(xt_yaml_text(v), got, sizeof got), (double)f, lo_open ? '(' : '[', lo, hi,
                  hi_open ? ')' : ']');
    *out = f;
    return 0;
}

static int get_name(pctx *p, const yaml_node_t *v, xt_layer *l, int idx) {
    char lab[96], q[64];
    const char *t = xt_yaml_text(v);
    label(l, idx, lab, sizeof lab);
    if (!t || xt_scalar_null(t, xt_yaml_plain(v)))
        return at(p, v, "%s: 'name' must be a name like conv1", lab);
    /* an identifier, or a number as nn.Sequential names its children (layer1.0.conv1) */
    int digits = 1, ok = t[0] && strlen(t) < sizeof l->name;
    for (const char *c = t; *c; c++) digits &= isdigit((unsigned char)*c) != 0;
    ok &= digits || isalpha((unsigned char)t[0]) || t[0] == '_';
    for (const char *c = t; ok && *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_') ok = 0;
    if (!ok)
        return at(p, v, "%s: name %s is not an identifier or a number of at most %zu characters; use letters, digits "
                  "and '_' (it becomes the state_dict prefix, as in conv1.weight)", lab, xt_quote(t, q, sizeof q),
                  sizeof l->name - 1);
    snprintf(l->name, sizeof l->name, "%s", t);
    return 0;
}

/* A block's `body`/`shortcut` or a sequential's `layers`: a list, kept for
 * parse_list once the layer itself is in place. */
static int get_list(pctx *p, const yaml_node_t *v, const char *lab, const char *what, const yaml_node_t **out) {
    char q[64];
    if (v->type != YAML_SEQUENCE_NODE)
        return at(p, v, "%s: '%s' must be a list of layers, got %s", lab, what, xt_yaml_describe(v, q, sizeof q));
    *out = v;
    return 0;
}

static int get_activation(pctx *p, const yaml_node_t *v, const char *lab, xt_layer *l) {
    const char *t = xt_yaml_text(v);
    char q[64];
    if (t && !strcmp(t, "relu")) l->act_relu = 1;
    else if (t && !strcmp(t, "none")) l->act_relu = 0;
    else return at(p, v, "%s: 'activation' is %s; use relu or none", lab, xt_quote(t ? t : "?", q, sizeof q));
    return 0;
}

/* The parameter mapping of one layer; `name` is read first so that every
 * later message can name the layer. lists[0] gets a block's body or a
 * sequential's layers, lists[1] a block's shortcut. */
static int parse_params(pctx *p, const yaml_node_t *map, xt_layer *l, int idx, const yaml_node_t *lists[2]) {
    const struct kind_info *ki = &kinds[l->kind];
    const yaml_node_pair_t *pairs = map->data.mapping.pairs.start;
    int n = (int)(map->data.mapping.pairs.top - pairs);
    const yaml_node_t *seen[P_COUNT] = {0};
    char lab[96], q[64];
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            yaml_node_t *k = node_at(p, pairs[i].key), *v = node_at(p, pairs[i].value);
            const char *key = xt_yaml_text(k);
            label(l, idx, lab, sizeof lab);
            if (!key) return at(p, k, "%s: parameter names must be plain words, got %s", lab,
                                xt_yaml_describe(k, q, sizeof q));
            int pi = 0;
            while (pi < P_COUNT && strcmp(key, param_names[pi])) pi++;
            if ((pass == 0) != (pi == P_NAME)) continue;
            if (pi == P_COUNT || !(ki->params & B(pi))) {
                const char *cands[P_COUNT], *hint;
                char takes[128] = "";
                int nc = 0;
                for (int j = 0; j < P_COUNT; j++)
                    if (ki->params & B(j)) {
                        cands[nc++] = param_names[j];
                        snprintf(takes + strlen(takes), sizeof takes - strlen(takes), "%s%s", nc > 1 ? ", " : "",
                                 param_names[j]);
                    }
                hint = xt_suggest(key, cands, nc);
                if (hint)
                    return at(p, k, "%s has no parameter %s; did you mean '%s'?", lab, xt_quote(key, q, sizeof q),
                              hint);
                return at(p, k, "%s has no parameter %s; %s takes: %s", lab, xt_quote(key, q, sizeof q), ki->name,
                          takes);
            }
            if (seen[pi])
                return at(p, k, "%s: parameter '%s' given twice (first at line %d)", lab, key, xt_yaml_line(seen[pi]));
            seen[pi] = k;
            int rc = 0, b = 0;
            switch (pi) {
            case P_NAME: rc = get_name(p, v, l, idx); break;
            case P_IN: rc = get_int(p, v, lab, key, 1, MAX_FEATURES, &l->in); break;
            case P_OUT: rc = get_int(p, v, lab, key, 1, MAX_FEATURES, &l->out); break;
            case P_KERNEL: rc = get_hw(p, v, lab, key, 1, MAX_KERNEL, l->kernel); break;
            case P_STRIDE: rc = get_hw(p, v, lab, key, 1, MAX_KERNEL, l->stride); break;
            case P_PADDING: rc = get_hw(p, v, lab, key, 0, MAX_KERNEL, l->padding); break;
            case P_P: rc = get_float(p, v, lab, key, 0, 0, 1, 1, &l->p); break;
            case P_EPS: rc = get_float(p, v, lab, key, 0, 1, 1, 0, &l->eps); break;
            case P_MOMENTUM: rc = get_float(p, v, lab, key, 0, 0, 1, 0, &l->momentum); break;
            case P_OUTPUT: rc = get_hw(p, v, lab, key, 1, MAX_SIDE, l->out_hw); break;
            case P_ACTIVATION: rc = get_activation(p, v, lab, l); break;
            case P_BODY:
            case P_LAYERS: rc = get_list(p, v, lab, key, &lists[0]); break;
            case P_SHORTCUT: rc = get_list(p, v, lab, key, &lists[1]); break;
            case P_BIAS:
                if (xt_scalar_bool(xt_yaml_text(v) ? xt_yaml_text(v) : "", xt_yaml_plain(v), &b))
                    rc = at(p, v, "%s: 'bias' must be true or false, got %s", lab, xt_yaml_describe(v, q, sizeof q));
                l->bias = b;
                break;
            }
            if (rc) return rc;
        }
    }
    for (int pi = 0; pi < P_COUNT; pi++)
        if ((ki->required & B(pi)) && !seen[pi])
            return at(p, map, "%s needs '%s', as in '- %s'", label(l, idx, lab, sizeof lab), param_names[pi],
                      ki->example);
    return 0;
}

static int find_kind(pctx *p, const yaml_node_t *k, int idx) {
    const char *t = xt_yaml_text(k);
    char q[64], known[256] = "";
    if (!t || xt_scalar_null(t, xt_yaml_plain(k)))
        return at(p, k, "layer %d has no type; write e.g. '- relu' or '- conv2d: {out: 10, kernel: 5}'", idx), -1;
    const char *cands[XT_L_COUNT];
    for (int i = 0; i < XT_L_COUNT; i++) {
        if (!strcmp(t, kinds[i].name)) return i;
        cands[i] = kinds[i].name;
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", kinds[i].name);
    }
    const char *hint = NULL;
    for (size_t i = 0; i < sizeof kind_aliases / sizeof *kind_aliases && !hint; i++)
        if (!strcmp(t, kind_aliases[i].alias)) hint = kind_aliases[i].kind;
    if (!hint) hint = xt_suggest(t, cands, XT_L_COUNT);
    if (hint) at(p, k, "layer %d: unknown layer type %s; did you mean '%s'?", idx, xt_quote(t, q, sizeof q), hint);
    else at(p, k, "layer %d: unknown layer type %s; known types: %s", idx, xt_quote(t, q, sizeof q), known);
    return -1;
}

/* One item of `layers:` — "- relu", "- relu:" or "- conv2d: {params}". */
static int parse_layer(pctx *p, const yaml_node_t *item, xt_layer *l, int idx, const yaml_node_t *lists[2]) {
    const yaml_node_t *kn = item, *params = NULL;
    char got[96];
    if (item->type == YAML_SEQUENCE_NODE)
        return at(p, item, "layer %d is a list; write '- relu' or '- conv2d: {out: 10, kernel: 5}'", idx);
    if (item->type == YAML_MAPPING_NODE) {
        long n = item->data.mapping.pairs.top - item->data.mapping.pairs.start;
        if (n != 1)
            return at(p, item, "layer %d has %ld keys; a layer is one type with its parameters indented under it, "
                      "as in '- conv2d: {out: 10, kernel: 5}'", idx, n);
        kn = node_at(p, item->data.mapping.pairs.start[0].key);
        params = node_at(p, item->data.mapping.pairs.start[0].value);
        if (kn->type != YAML_SCALAR_NODE)
            return at(p, kn, "layer %d: the layer type must be a word like conv2d, got %s", idx,
                      xt_yaml_describe(kn, got, sizeof got));
    }
    int kind = find_kind(p, kn, idx);
    if (kind < 0) return p->e ? p->e->code : XT_EUSAGE;
    *l = (xt_layer){.kind = (xt_layer_kind)kind, .bias = 1, .p = 0.5f, .eps = 1e-5f, .momentum = 0.1f,
                    .act_relu = 1, .parent = -1, .line = xt_yaml_line(item), .col = xt_yaml_col(item)};
    if (params && params->type == YAML_SCALAR_NODE && xt_scalar_null(xt_yaml_text(params), xt_yaml_plain(params)))
        params = NULL;
    if (params && params->type != YAML_MAPPING_NODE)
        return at(p, params, "layer %d (%s): parameters must be a mapping like {%s}, got %s", idx, kinds[kind].name,
                  kind == XT_L_CONV2D ? "out: 10, kernel: 5" : "name: x", xt_yaml_describe(params, got, sizeof got));
    int rc = params ? parse_params(p, params, l, idx, lists) : 0;
    if (!rc && kinds[kind].required && !params) {
        char lab[96];
        rc = at(p, item, "%s needs parameters, as in '- %s'", label(l, idx, lab, sizeof lab), kinds[kind].example);
    }
    if (!rc && !(l->stride[0] | l->stride[1])) {
        /* PyTorch: conv stride 1, pooling stride = kernel */
        int pool = kind == XT_L_MAXPOOL2D || kind == XT_L_AVGPOOL2D;
        l->stride[0] = pool ? l->kernel[0] : 1;
        l->stride[1] = pool ? l->kernel[1] : 1;
    }
    return rc;
}

/* Append one layer to the spec (pre-order); returns its index or -1. */
static int append_layer(pctx *p, const xt_layer *l, const yaml_node_t *at_node) {
    xt_spec *s = p->s;
    if (s->nlayers >= XT_SPEC_MAX_LAYERS)
        return at(p, at_node, "more than %d layers in all (counting those inside blocks); at most %d are supported",
                  XT_SPEC_MAX_LAYERS, XT_SPEC_MAX_LAYERS), -1;
    if (s->nlayers == p->cap) {
        int cap = p->cap ? 2 * p->cap : 32;
        xt_layer *nl = realloc(s->layers, (size_t)cap * sizeof *nl);
        if (!nl) return xt_fail(p->e, XT_EUSAGE, "%s: out of memory", s->source), -1;
        s->layers = nl;
        p->cap = cap;
    }
    s->layers[s->nlayers] = *l;
    return s->nlayers++;
}

/* A list of layers (the top level, a block's body or shortcut, a group's
 * layers), appended in pre-order with each container's contents after it.
 * The recursion is as deep as the blocks nest, which the YAML reader bounds
 * (XT_YAML_MAX_DEPTH levels, three per block). */
static int parse_list(pctx *p, const yaml_node_t *list, int parent, int in_shortcut, int depth) {
    long n = list->data.sequence.items.top - list->data.sequence.items.start;
    if (n == 0) return at(p, list, "an empty list of layers; give at least one layer");
    for (long k = 0; k < n; k++) {
        const yaml_node_t *item = node_at(p, list->data.sequence.items.start[k]), *lists[2] = {NULL, NULL};
        xt_layer l;
        for (int o = 0; o < p->nopen; o++)
            if (p->open[o] == item)
                return at(p, list, "layer %ld is an alias of a block that contains it; a block cannot hold itself", k + 1);
        int rc = parse_layer(p, item, &l, (int)k + 1, lists);
        if (rc) return rc;
        l.parent = parent;
        l.in_shortcut = in_shortcut;
        l.depth = depth;
        int i = append_layer(p, &l, item);
        if (i < 0) return p->e->code ? p->e->code : XT_EUSAGE;
        p->open[p->nopen++] = item; /* bounded: every open block is a layer already appended */
        for (int br = 0; br < 2; br++) {
            if (!lists[br]) continue;
            int before = p->s->nlayers;
            if ((rc = parse_list(p, lists[br], i, br, depth + 1))) return rc;
            *(br ? &p->s->layers[i].nshort : &p->s->layers[i].nbody) = p->s->nlayers - before;
        }
        p->nopen--;
    }
    return 0;
}

int xt_spec_end(const xt_spec *s, int i) {
    return i + 1 + s->layers[i].nbody + s->layers[i].nshort;
}

/* Layers j and i are in the same namespace: the same parent and list. */
static int siblings(const xt_layer *a, const xt_layer *b) {
    return a->parent == b->parent && a->in_shortcut == b->in_shortcut;
}

static int name_taken(const xt_spec *s, int i, const char *name) {
    for (int j = 0; j < s->nlayers; j++)
        if (j != i && siblings(&s->layers[i], &s->layers[j]) && !strcmp(s->layers[j].name, name)) return 1;
    return 0;
}

/* Position of layer i in its list (0-based). */
static int position(const xt_spec *s, int i) {
    int k = 0;
    for (int j = 0; j < i; j++) k += siblings(&s->layers[j], &s->layers[i]);
    return k;
}

/* Auto names: at the top and in a block's body, as PyTorch code names
 * attributes (conv1, relu2, pool1 ...: every layer with the same prefix
 * counts, skipping names the user gave); in a sequential or a shortcut,
 * the position, as nn.Sequential names its children (0, 1, ...). User names
 * must be unique among their siblings. */
static int name_layers(xt_spec *s, xt_err *e) {
    for (int i = 0; i < s->nlayers; i++)
        for (int j = 0; j < i; j++)
            if (s->layers[i].name[0] && siblings(&s->layers[i], &s->layers[j]) &&
                !strcmp(s->layers[i].name, s->layers[j].name))
                return at_layer(s, &s->layers[i], e, "layer name '%s' is used twice (first at line %d); names must be "
                                "unique because they become state_dict keys", s->layers[i].name, s->layers[j].line);
    for (int i = 0; i < s->nlayers; i++) {
        xt_layer *l = &s->layers[i];
        const xt_layer *par = l->parent >= 0 ? &s->layers[l->parent] : NULL;
        int indexed = l->in_shortcut || (par && par->kind == XT_L_SEQUENTIAL);
        int c = 0, k = 0;
        while (strcmp(kinds[c].prefix, kinds[l->kind].prefix)) c++; /* maxpool2d, avgpool2d share a counter */
        for (int j = 0; j <= i; j++)
            if (siblings(&s->layers[j], l) && !strcmp(kinds[s->layers[j].kind].prefix, kinds[c].prefix)) k++;
        if (l->name[0]) continue;
        for (k = indexed ? position(s, i) : k;; k++) {
            if (indexed) snprintf(l->name, sizeof l->name, "%d", k);
            else snprintf(l->name, sizeof l->name, "%s%d", kinds[l->kind].prefix, k);
            if (!name_taken(s, i, l->name)) break;
        }
    }
    return 0;
}

/* Module paths (the state_dict prefixes): the parent's path, ".shortcut"
 * for a shortcut's layers, then the name. */
static int path_layers(xt_spec *s, xt_err *e) {
    for (int i = 0; i < s->nlayers; i++) {
        xt_layer *l = &s->layers[i];
        const char *pp = l->parent >= 0 ? s->layers[l->parent].path : "";
        int n = snprintf(l->path, sizeof l->path, "%s%s%s%s", pp, *pp ? "." : "", l->in_shortcut ? "shortcut." : "",
                         l->name);
        if (n < 0 || (size_t)n >= sizeof l->path)
            return at_layer(s, l, e, "layer '%s': its module path %s.%s is longer than %zu characters; use shorter "
                            "names", l->name, pp, l->name, sizeof l->path - 1);
        if (l->nshort && !l->in_shortcut)
            for (int j = i + 1; j < i + 1 + l->nbody; j++)
                if (s->layers[j].parent == i && !strcmp(s->layers[j].name, "shortcut"))
                    return at_layer(s, &s->layers[j], e, "layer 'shortcut' in the body of block '%s' clashes with "
                                    "the block's shortcut (%s.shortcut.*); rename it", l->name, l->path);
    }
    return 0;
}

static int parse_input(pctx *p, const yaml_node_t *v, xt_spec *s) {
    static const char *const dim[3] = {"C", "H", "W"};
    static const long long hi[3] = {MAX_CHANNELS, MAX_SIDE, MAX_SIDE};
    char lab[32];
    if (v->type != YAML_SEQUENCE_NODE || v->data.sequence.items.top - v->data.sequence.items.start != 3)
        return at(p, v, "'input' must be [C, H, W], e.g. input: [1, 28, 28]");
    for (int i = 0; i < 3; i++) {
        yaml_node_t *x = node_at(p, v->data.sequence.items.start[i]);
        snprintf(lab, sizeof lab, "input [C, H, W]");
        if (x->type != YAML_SCALAR_NODE) return at(p, x, "'input' must be [C, H, W] of integers");
        int rc = get_int(p, x, lab, dim[i], 1, hi[i], &s->input[i]);
        if (rc) return rc;
    }
    if ((long long)s->input[0] * s->input[1] * s->input[2] > MAX_ELEMS)
        return at(p, v, "input [%d, %d, %d] has more than %d values", s->input[0], s->input[1], s->input[2], MAX_ELEMS);
    return 0;
}

int xt_spec_from_yaml(xt_spec *s, const char *source, void *docp, void *nodep, xt_err *e) {
    memset(s, 0, sizeof *s);
    snprintf(s->source, sizeof s->source, "%s", source ? source : "(model)");
    pctx p = {.src = s->source, .doc = docp, .e = e, .s = s};
    yaml_node_t *root = nodep, *input = NULL, *layers = NULL;
    char q[64];
    int rc = 0;
    if (!root || root->type != YAML_MAPPING_NODE)
        return at(&p, root, "a model spec is a mapping with 'input: [C, H, W]' and 'layers: [...]', got %s",
                  xt_yaml_describe_doc(root, q, sizeof q));
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = node_at(&p, pr->key), *v = node_at(&p, pr->value);
        const char *key = xt_yaml_text(k);
        static const char *const top[] = {"input", "layers"};
        yaml_node_t **slot = !key ? NULL : !strcmp(key, "input") ? &input : !strcmp(key, "layers") ? &layers : NULL;
        if (!slot) {
            const char *hint = key ? xt_suggest(key, top, 2) : NULL;
            if (!key) return at(&p, k, "model keys must be plain words, got %s", xt_yaml_describe(k, q, sizeof q));
            if (hint) return at(&p, k, "unknown model key %s; did you mean '%s'?", xt_quote(key, q, sizeof q), hint);
            return at(&p, k, "unknown model key %s; a model has only 'input' and 'layers'", xt_quote(key, q, sizeof q));
        }
        if (*slot) return at(&p, k, "duplicate key '%s' (first at line %d)", key, xt_yaml_line(*slot));
        *slot = v;
    }
    if (!input) return at(&p, root, "the model has no 'input'; add input: [C, H, W], e.g. input: [1, 28, 28]");
    if ((rc = parse_input(&p, input, s))) return rc;
    if (!layers) return at(&p, root, "the model has no 'layers'; add a list such as layers: [flatten, {linear: {out: 10}}]");
    if (layers->type != YAML_SEQUENCE_NODE)
        return at(&p, layers, "'layers' must be a list of layers, got %s", xt_yaml_describe(layers, q, sizeof q));
    if (layers->data.sequence.items.top == layers->data.sequence.items.start)
        return at(&p, layers, "'layers' is empty; a model needs at least one layer");
    rc = parse_list(&p, layers, -1, 0, 0);
    if (!rc) rc = name_layers(s, e);
    if (!rc) rc = path_layers(s, e);
    if (!rc) rc = xt_spec_infer(s, e);
    if (rc) xt_spec_free(s);
    return rc;
}

int xt_spec_from_text(xt_spec *s, const char *source, const char *text, size_t len, xt_err *e) {
    yaml_document_t doc;
    memset(s, 0, sizeof *s);
    int rc = xt_yaml_parse(&doc, source, text, len, e);
    if (rc) return rc;
    rc = xt_spec_from_yaml(s, source, &doc, yaml_document_get_root_node(&doc), e);
    yaml_document_delete(&doc);
    return rc;
}

int xt_spec_load(xt_spec *s, const char *path, xt_err *e) {
    yaml_document_t doc;
    memset(s, 0, sizeof *s);
    int rc = xt_yaml_load_file(&doc, path, e);
    if (rc) return rc;
    rc = xt_spec_from_yaml(s, path, &doc, yaml_document_get_root_node(&doc), e);
    yaml_document_delete(&doc);
    return rc;
}

/* ---- shapes and parameter counts ------------------------------------------------------ */

/* Output side of a window op: floor((in + 2p - k) / s) + 1, or -1 when the
 * window does not fit even once. */
static long long window_out(long long in, int k, int st, int pad) {
    long long span = in + 2LL * pad - k;
    return span < 0 ? -1 : span / st + 1;
}

static int infer_window(const xt_spec *s, xt_layer *l, const char *lab, long long sh[3], xt_err *e) {
    int pool = l->kind != XT_L_CONV2D;
    char ks[32];
    if (l->kernel[0] == l->kernel[1]) snprintf(ks, sizeof ks, "%d", l->kernel[0]);
    else snprintf(ks, sizeof ks, "%dx%d", l->kernel[0], l->kernel[1]);
    for (int d = 0; d < 2; d++)
        if (pool && 2 * l->padding[d] > l->kernel[d])
            return at_layer(s, l, e, "%s: padding %d is more than half the kernel %s; use padding <= %d", lab,
                            l->padding[d], ks, l->kernel[d] / 2);
    if (l->kind == XT_L_MAXPOOL2D && (long long)l->kernel[0] * l->kernel[1] > K_POOL_MAX_CELLS)
        return at_layer(s, l, e, "%s: a %dx%d window has %lld cells; a max pool takes at most %d (e.g. kernel 16)",
                        lab, l->kernel[0], l->kernel[1], (long long)l->kernel[0] * l->kernel[1], K_POOL_MAX_CELLS);
    long long h = window_out(sh[1], l->kernel[0], l->stride[0], l->padding[0]);
    long long w = window_out(sh[2], l->kernel[1], l->stride[1], l->padding[1]);
    if (h < 1 || w < 1)
        return at_layer(s, l, e, "%s: kernel %s larger than input %lldx%lld after padding (%d, %d); use a smaller "
                        "kernel or more padding, or remove a pooling layer before it", lab, ks, sh[1], sh[2],
                        l->padding[0], l->padding[1]);
    if (l->kind == XT_L_CONV2D) {
        if (l->in && l->in != sh[0])
            return at_layer(s, l, e, "%s declares in: %d but its input has %lld channels; drop 'in' or set in: %lld",
                            lab, l->in, sh[0], sh[0]);
        if ((double)l->out * (double)sh[0] * l->kernel[0] * l->kernel[1] > MAX_ELEMS)
            return at_layer(s, l, e, "%s: a %d x %lld x %s weight is too large; use fewer channels", lab, l->out,
                            sh[0], ks);
        long long w_params = (long long)l->out * sh[0] * l->kernel[0] * l->kernel[1];
        l->params = (long)(w_params + (l->bias ? l->out : 0));
        sh[0] = l->out;
    }
    sh[1] = h;
    sh[2] = w;
    return 0;
}

/* adaptive_avgpool2d as the average pool it is when the output divides the
 * input (kernel = stride = input / output), which is what the models use. */
static int infer_adaptive(const xt_spec *s, xt_layer *l, const char *lab, long long sh[3], xt_err *e) {
    for (int d = 0; d < 2; d++) {
        if (sh[1 + d] % l->out_hw[d])
            return at_layer(s, l, e, "%s: input %lldx%lld is not a multiple of output %dx%d; choose an output that "
                            "divides the input (output: 1 averages each channel)", lab, sh[1], sh[2], l->out_hw[0],
                            l->out_hw[1]);
        l->kernel[d] = l->stride[d] = (int)(sh[1 + d] / l->out_hw[d]);
        l->padding[d] = 0;
        sh[1 + d] = l->out_hw[d];
    }
    return 0;
}

static int infer_range(xt_spec *s, int first, int end, long long sh[3], int *rank, long long *total, xt_err *e);

/* A block: body and shortcut from the same input, shapes equal. */
static int infer_block(xt_spec *s, int i, const char *lab, long long sh[3], int *rank, long long *total,
                       xt_err *e) {
    xt_layer *l = &s->layers[i];
    long long body[3] = {sh[0], sh[1], sh[2]}, sc[3] = {sh[0], sh[1], sh[2]};
    int rbody = *rank, rsc = *rank, b0 = i + 1, s0 = b0 + l->nbody, rc;
    if ((rc = infer_range(s, b0, s0, body, &rbody, total, e))) return rc;
    if (l->nshort && (rc = infer_range(s, s0, s0 + l->nshort, sc, &rsc, total, e))) return rc;
    if (rbody != rsc || memcmp(body, sc, (size_t)rbody * sizeof *body)) {
        char bs[64], ss[64];
        int ib[3] = {(int)body[0], (int)body[1], (int)body[2]}, is[3] = {(int)sc[0], (int)sc[1], (int)sc[2]};
        return at_layer(s, l, e, "%s: the body gives %s but the %s gives %s; they are added, so give the shortcut a "
                        "conv2d with the body's channels and stride (e.g. {conv2d: {out: %d, kernel: 1, stride: 2}})",
                        lab, shape_str(rbody, ib, bs, sizeof bs), l->nshort ? "shortcut" : "identity shortcut",
                        shape_str(rsc, is, ss, sizeof ss), ib[0]);
    }
    memcpy(sh, body, sizeof body);
    *rank = rbody;
    return 0;
}

/* One layer's output shape and parameter count from its input (sh, rank). */
static int infer_one(xt_spec *s, int i, long long sh[3], int *rank, long long *total, xt_err *e) {
    xt_layer *l = &s->layers[i];
    int need = kinds[l->kind].in_rank, rc = 0;
    char lab[128], shs[64];
    l->in_rank = *rank;
    for (int d = 0; d < 3; d++) l->in_shape[d] = d < *rank ? (int)sh[d] : 0;
    l->params = 0;
    label(l, i + 1, lab, sizeof lab);
    shape_str(*rank, l->in_shape, shs, sizeof shs);
    if (need == 1 && *rank != 1)
        return at_layer(s, l, e, "%s expects a flat input but gets %s; add a flatten layer before it", lab, shs);
    if (need == 3 && *rank != 3)
        return at_layer(s, l, e, "%s expects a [C, H, W] input but gets the flat %s; move it before the flatten "
                        "layer", lab, shs);
    switch (l->kind) {
    case XT_L_CONV2D:
    case XT_L_MAXPOOL2D:
    case XT_L_AVGPOOL2D: rc = infer_window(s, l, lab, sh, e); break;
    case XT_L_ADAPTIVE_AVGPOOL2D: rc = infer_adaptive(s, l, lab, sh, e); break;
    case XT_L_BATCHNORM2D: l->params = (long)(2 * sh[0]); break;
    case XT_L_FLATTEN:
        if (*rank == 3) sh[0] = sh[0] * sh[1] * sh[2];
        *rank = 1;
        break;
    case XT_L_LINEAR:
        if (l->in && l->in != sh[0])
            return at_layer(s, l, e, "%s declares in: %d but gets %lld features; drop 'in' or set in: %lld", lab,
                            l->in, sh[0], sh[0]);
        if ((long long)l->out * sh[0] > MAX_ELEMS)
            return at_layer(s, l, e, "%s: a %lld x %d weight is too large; use fewer features", lab, sh[0], l->out);
        l->params = (long)((long long)l->out * sh[0] + (l->bias ? l->out : 0));
        sh[0] = l->out;
        break;
    case XT_L_BLOCK: rc = infer_block(s, i, lab, sh, rank, total, e); break;
    case XT_L_SEQUENTIAL: rc = infer_range(s, i + 1, i + 1 + l->nbody, sh, rank, total, e); break;
    default: break; /* relu, dropout, log_softmax keep the shape */
    }
    if (rc) return rc;
    long long elems = *rank == 3 ? sh[0] * sh[1] * sh[2] : sh[0];
    if (elems > MAX_ELEMS || l->params > MAX_ELEMS || (*total += l->params) > MAX_ELEMS)
        return at_layer(s, l, e, "%s: the model gets too large here (more than %d values or parameters); use "
                        "fewer channels or features", lab, MAX_ELEMS);
    l->out_rank = *rank;
    for (int d = 0; d < 3; d++) l->out_shape[d] = d < *rank ? (int)sh[d] : 0;
    return 0;
}

/* The layers [first, end) of one list, one after the other. */
static int infer_range(xt_spec *s, int first, int end, long long sh[3], int *rank, long long *total, xt_err *e) {
    for (int i = first; i < end; i = xt_spec_end(s, i)) {
        int rc = infer_one(s, i, sh, rank, total, e);
        if (rc) return rc;
    }
    return 0;
}

int xt_spec_infer(xt_spec *s, xt_err *e) {
    long long sh[3] = {s->input[0], s->input[1], s->input[2]}, total = 0;
    int rank = 3;
    if (sh[0] * sh[1] * sh[2] > MAX_ELEMS)
        return xt_fail(e, XT_EUSAGE, "%s:1:1: input [%d, %d, %d] has more than %d values", s->source, s->input[0],
                       s->input[1], s->input[2], MAX_ELEMS);
    int rc = infer_range(s, 0, s->nlayers, sh, &rank, &total, e);
    if (rc) return rc;
    s->last = 0;
    for (int i = 0; i < s->nlayers; i = xt_spec_end(s, i)) s->last = i;
    const xt_layer *last = s->nlayers ? &s->layers[s->last] : NULL;
    s->num_classes = last && last->out_rank == 1 ? last->out_shape[0] : 0;
    return 0;
}

const xt_layer *xt_spec_last(const xt_spec *s) { return s->nlayers ? &s->layers[s->last] : NULL; }

long xt_spec_total_params(const xt_spec *s) {
    long t = 0;
    for (int i = 0; i < s->nlayers; i++) t += s->layers[i].params;
    return t;
}

long long xt_spec_forward_macs(const xt_spec *s) {
    long long t = 0;
    for (int i = 0; i < s->nlayers; i++) {
        const xt_layer *l = &s->layers[i];
        if (l->kind == XT_L_CONV2D)
            t += (long long)l->out_shape[0] * l->out_shape[1] * l->out_shape[2] * l->in_shape[0] * l->kernel[0] * l->kernel[1];
        else if (l->kind == XT_L_LINEAR)
            t += (long long)l->in_shape[0] * l->out;
    }
    return t;
}

long xt_spec_total_buffers(const xt_spec *s) {
    long t = 0;
    for (int i = 0; i < s->nlayers; i++)
        if (s->layers[i].kind == XT_L_BATCHNORM2D) t += 2L * s->layers[i].out_shape[0];
    return t;
}

/* ---- output ------------------------------------------------------------------------------- */

/* The summary's name column: indented by depth, a shortcut's layers as
 * "shortcut.0", so the block structure reads as PyTorch prints a module. */
static const char *summary_name(const xt_layer *l, char *buf, size_t cap) {
    snprintf(buf, cap, "%*s%s%s", 2 * l->depth, "", l->in_shortcut ? "shortcut." : "", l->name);
    return buf;
}

/* The type column: a block says what it adds and applies. */
static const char *summary_type(const xt_layer *l, char *buf, size_t cap) {
    if (l->kind == XT_L_BLOCK)
        snprintf(buf, cap, "block(+%s%s)", l->nshort ? "shortcut" : "x", l->act_relu ? ", relu" : "");
    else snprintf(buf, cap, "%s", kinds[l->kind].name);
    return buf;
}

/* A layer's parameters with everything inside it. */
static long subtree_params(const xt_spec *s, int i) {
    long t = 0;
    for (int j = i; j < xt_spec_end(s, i); j++) t += s->layers[j].params;
    return t;
}

void xt_spec_summary(const xt_spec *s, FILE *out) {
    int wn = 5, wt = 4, ws = 12, wp = 7;   /* widths of "Layer", "Type", "Output Shape", "Param #" */
    char buf[64], num[32], nm[128], ty[64];
    for (int i = 0; i < s->nlayers; i++) {
        const xt_layer *l = &s->layers[i];
        int n = (int)strlen(summary_name(l, nm, sizeof nm)), t = (int)strlen(summary_type(l, ty, sizeof ty));
        int sw = (int)strlen(shape_str(l->out_rank, l->out_shape, buf, sizeof buf));
        int pw = (int)strlen(xt_commas(num, (unsigned long long)subtree_params(s, i)));
        wn = n > wn ? n : wn;
        wt = t > wt ? t : wt;
        ws = sw > ws ? sw : ws;
        wp = pw > wp ? pw : wp;
    }
    int width = wn + wt + ws + wp + 6;
    fprintf(out, "Model: %s, input %s\n", s->source, shape_str(3, s->input, buf, sizeof buf));
    fprintf(out, "%-*s  %-*s  %-*s  %*s\n", wn, "Layer", wt, "Type", ws, "Output Shape", wp, "Param #");
    for (int i = 0; i < width; i++) fputc('=', out);
    fputc('\n', out);
    for (int i = 0; i < s->nlayers; i++) {
        const xt_layer *l = &s->layers[i];
        fprintf(out, "%-*s  %-*s  %-*s  %*s\n", wn, summary_name(l, nm, sizeof nm), wt, summary_type(l, ty, sizeof ty),
                ws, shape_str(l->out_rank, l->out_shape, buf, sizeof buf), wp,
                xt_commas(num, (unsigned long long)subtree_params(s, i)));
    }
    for (int i = 0; i < width; i++) fputc('=', out);
    fputc('\n', out);
    long total = xt_spec_total_params(s), bufs = xt_spec_total_buffers(s);
    fprintf(out, "Total params: %s\n", xt_commas(num, (unsigned long long)total));
    fprintf(out, "Trainable params: %s\n", xt_commas(num, (unsigned long long)total));
    fprintf(out, "Non-trainable params: 0\n");
    fprintf(out, "Non-trainable (buffers): %s", xt_commas(num, (unsigned long long)bufs));
    fprintf(out, "%s\n", bufs ? "  (BatchNorm running_mean + running_var; Keras counts these as non-trainable params)"
                              : "");
}

static void put_hw(FILE *out, const char *key, const int v[2]) {
    if (v[0] == v[1]) fprintf(out, ", %s: %d", key, v[0]);
    else fprintf(out, ", %s: [%d, %d]", key, v[0], v[1]);
}

/* One leaf layer as "- kind: {name: x, ...}" with every parameter resolved. */
static void print_leaf(const xt_layer *l, FILE *out, int ind) {
    char f[32];
    /* quoted when plain text would read back as something else ("null", "0") */
    fprintf(out, "%*s- %s: {name: ", ind, "", kinds[l->kind].name);
    xt_yaml_put_string(out, l->name);
    if (l->kind == XT_L_CONV2D || l->kind == XT_L_LINEAR) {
        if (l->in) fprintf(out, ", in: %d", l->in);
        fprintf(out, ", out: %d", l->out);
    }
    if (l->kind == XT_L_CONV2D || l->kind == XT_L_MAXPOOL2D || l->kind == XT_L_AVGPOOL2D) {
        put_hw(out, "kernel", l->kernel);
        put_hw(out, "stride", l->stride);
        put_hw(out, "padding", l->padding);
    }
    if (l->kind == XT_L_ADAPTIVE_AVGPOOL2D) put_hw(out, "output", l->out_hw);
    if (l->kind == XT_L_CONV2D || l->kind == XT_L_LINEAR) fprintf(out, ", bias: %s", l->bias ? "true" : "false");
    if (l->kind == XT_L_BATCHNORM2D) {
        fprintf(out, ", eps: %s", xt_fmt_float(l->eps, f, sizeof f));
        fprintf(out, ", momentum: %s", xt_fmt_float(l->momentum, f, sizeof f));
    }
    if (l->kind == XT_L_DROPOUT) fprintf(out, ", p: %s", xt_fmt_float(l->p, f, sizeof f));
    fputs("}\n", out);
}

/* The layers [first, end) of one list; blocks and groups in block style
 * with their lists indented under them. */
static void print_range(const xt_spec *s, int first, int end, FILE *out, int ind) {
    for (int i = first; i < end; i = xt_spec_end(s, i)) {
        const xt_layer *l = &s->layers[i];
        if (l->kind != XT_L_BLOCK && l->kind != XT_L_SEQUENTIAL) {
            print_leaf(l, out, ind);
            continue;
        }
        fprintf(out, "%*s- %s:\n%*sname: ", ind, "", kinds[l->kind].name, ind + 4, "");
        xt_yaml_put_string(out, l->name);
        fputc('\n', out);
        if (l->kind == XT_L_BLOCK) fprintf(out, "%*sactivation: %s\n", ind + 4, "", l->act_relu ? "relu" : "none");
        fprintf(out, "%*s%s:\n", ind + 4, "", l->kind == XT_L_BLOCK ? "body" : "layers");
        print_range(s, i + 1, i + 1 + l->nbody, out, ind + 6);
        if (l->nshort) {
            fprintf(out, "%*sshortcut:\n", ind + 4, "");
            print_range(s, i + 1 + l->nbody, xt_spec_end(s, i), out, ind + 6);
        }
    }
}

void xt_spec_print_yaml(const xt_spec *s, FILE *out, int indent) {
    fprintf(out, "%*sinput: [%d, %d, %d]\n%*slayers:\n", indent, "", s->input[0], s->input[1], s->input[2], indent, "");
    print_range(s, 0, s->nlayers, out, indent + 2);
}

/* FNV-1a over fixed-width little-endian fields, so the hash is the same on
 * every machine and compiler. */
static void fnv_bytes(uint64_t *h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        *h ^= b[i];
        *h *= 0x100000001b3ULL;
    }
}

static void fnv_u32(uint64_t *h, uint32_t v) {
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    fnv_bytes(h, b, 4);
}

static void fnv_f32(uint64_t *h, float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    fnv_u32(h, u);
}

unsigned long long xt_spec_hash(const xt_spec *s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int d = 0; d < 3; d++) fnv_u32(&h, (uint32_t)s->input[d]);
    fnv_u32(&h, (uint32_t)s->nlayers);
    for (int i = 0; i < s->nlayers; i++) {
        const xt_layer *l = &s->layers[i];
        const char *kn = kinds[l->kind].name;
        fnv_bytes(&h, kn, strlen(kn) + 1);   /* the name, not the enum value, so reordering the enum is harmless */
        fnv_bytes(&h, l->name, strlen(l->name) + 1);
        const int ints[] = {l->out, l->kernel[0], l->kernel[1], l->stride[0], l->stride[1], l->padding[0],
                            l->padding[1], l->bias, l->in_rank, l->out_rank, l->in_shape[0], l->in_shape[1],
                            l->in_shape[2], l->out_shape[0], l->out_shape[1], l->out_shape[2]};
        for (size_t k = 0; k < sizeof ints / sizeof *ints; k++) fnv_u32(&h, (uint32_t)ints[k]);
        fnv_f32(&h, l->p);
        fnv_f32(&h, l->eps);
        fnv_f32(&h, l->momentum);
        /* the tree, only where there is one, so a plain list keeps the hash it always had */
        if (l->parent >= 0 || l->nbody || l->nshort || l->kind == XT_L_ADAPTIVE_AVGPOOL2D) {
            const int tree[] = {l->parent, l->in_shortcut, l->nbody, l->nshort, l->act_relu, l->out_hw[0],
                                l->out_hw[1]};
            for (size_t k = 0; k < sizeof tree / sizeof *tree; k++) fnv_u32(&h, (uint32_t)tree[k]);
        }
    }
    return (unsigned long long)h;
}

void xt_spec_free(xt_spec *s) {
    free(s->layers);
    s->layers = NULL;
    s->nlayers = 0;
    s->num_classes = 0;
}

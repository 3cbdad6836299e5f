/* spec.c — the layer spec: YAML -> xt_layer list with auto names, inferred
 * shapes and parameter counts; the summary table, the YAML writer and the
 * model hash. See spec.h for the format.
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

/* ---- the layer kinds and their parameters ----------------------------------- */

enum { P_NAME, P_IN, P_OUT, P_KERNEL, P_STRIDE, P_PADDING, P_BIAS, P_P, P_EPS, P_MOMENTUM, P_COUNT };
static const char *const param_names[P_COUNT] = {"name", "in", "out", "kernel", "stride",
                                                 "padding", "bias", "p", "eps", "momentum"};
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
};
_Static_assert(XT_L_COUNT == 9, "describe the new layer kind in kinds[]");

/* Names people bring from PyTorch/Keras, which edit distance would not find. */
static const struct { const char *alias, *kind; } kind_aliases[] = {
    {"conv", "conv2d"},         {"conv2", "conv2d"},          {"convolution", "conv2d"},
    {"bn", "batchnorm2d"},      {"batchnorm", "batchnorm2d"}, {"batch_norm", "batchnorm2d"},
    {"maxpool", "maxpool2d"},   {"max_pool2d", "maxpool2d"},  {"avgpool", "avgpool2d"},
    {"avg_pool2d", "avgpool2d"}, {"fc", "linear"},            {"dense", "linear"},
    {"logsoftmax", "log_softmax"}, {"softmax", "log_softmax"}, {"reshape", "flatten"},
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
    if (l->name[0]) snprintf(buf, cap, "layer '%s' (%s)", l->name, kinds[l->kind].name);
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
    int ok = (isalpha((unsigned char)t[0]) || t[0] == '_') && strlen(t) < sizeof l->name;
    for (const char *c = t; ok && *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_') ok = 0;
    if (!ok)
        return at(p, v, "%s: name %s is not an identifier of at most %zu characters; use letters, digits and '_' "
                  "(it becomes the state_dict prefix, as in conv1.weight)", lab, xt_quote(t, q, sizeof q),
                  sizeof l->name - 1);
    snprintf(l->name, sizeof l->name, "%s", t);
    return 0;
}

/* The parameter mapping of one layer; `name` is read first so that every
 * later message can name the layer. */
static int parse_params(pctx *p, const yaml_node_t *map, xt_layer *l, int idx) {
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
    char q[64], known[160] = "";
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
static int parse_layer(pctx *p, const yaml_node_t *item, xt_layer *l, int idx) {
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
                    .line = xt_yaml_line(item), .col = xt_yaml_col(item)};
    if (params && params->type == YAML_SCALAR_NODE && xt_scalar_null(xt_yaml_text(params), xt_yaml_plain(params)))
        params = NULL;
    if (params && params->type != YAML_MAPPING_NODE)
        return at(p, params, "layer %d (%s): parameters must be a mapping like {%s}, got %s", idx, kinds[kind].name,
                  kind == XT_L_CONV2D ? "out: 10, kernel: 5" : "name: x", xt_yaml_describe(params, got, sizeof got));
    int rc = params ? parse_params(p, params, l, idx) : 0;
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

/* Auto names (conv1, relu2, pool1 ...) count every layer with the same
 * prefix, skipping names the user gave; user names must be unique. */
static int name_layers(xt_spec *s, xt_err *e) {
    int count[XT_L_COUNT] = {0};
    for (int i = 0; i < s->nlayers; i++)
        for (int j = 0; j < i; j++)
            if (s->layers[i].name[0] && !strcmp(s->layers[i].name, s->layers[j].name))
                return at_layer(s, &s->layers[i], e, "layer name '%s' is used twice (first at line %d); names must be "
                                "unique because they become state_dict keys", s->layers[i].name, s->layers[j].line);
    for (int i = 0; i < s->nlayers; i++) {
        xt_layer *l = &s->layers[i];
        /* layers that share a prefix (maxpool2d, avgpool2d) share a counter */
        int c = 0;
        while (strcmp(kinds[c].prefix, kinds[l->kind].prefix)) c++;
        int k = ++count[c];
        if (l->name[0]) continue;
        for (int taken = 1; taken; k++) {
            snprintf(l->name, sizeof l->name, "%s%d", kinds[l->kind].prefix, k);
            taken = 0;
            for (int j = 0; j < s->nlayers && !taken; j++)
                if (j != i && !strcmp(s->layers[j].name, l->name)) taken = 1;
        }
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
    pctx p = {s->source, docp, e};
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
    long n = layers->data.sequence.items.top - layers->data.sequence.items.start;
    if (n == 0) return at(&p, layers, "'layers' is empty; a model needs at least one layer");
    if (n > XT_SPEC_MAX_LAYERS) return at(&p, layers, "%ld layers; at most %d are supported", n, XT_SPEC_MAX_LAYERS);
    s->layers = calloc((size_t)n, sizeof *s->layers);
    if (!s->layers) return xt_fail(e, XT_EUSAGE, "%s: out of memory", s->source);
    for (long i = 0; i < n && !rc; i++)
        rc = parse_layer(&p, node_at(&p, layers->data.sequence.items.start[i]), &s->layers[i], (int)i + 1);
    s->nlayers = (int)n;
    if (!rc) rc = name_layers(s, e);
    if (!rc) rc = xt_spec_infer(s, e);
    if (rc) xt_spec_free(s);
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

int xt_spec_infer(xt_spec *s, xt_err *e) {
    long long sh[3] = {s->input[0], s->input[1], s->input[2]}, total = 0;
    int rank = 3;
    char lab[96], shs[64];
    if (sh[0] * sh[1] * sh[2] > MAX_ELEMS)
        return xt_fail(e, XT_EUSAGE, "%s:1:1: input [%d, %d, %d] has more than %d values", s->source, s->input[0],
                       s->input[1], s->input[2], MAX_ELEMS);
    for (int i = 0; i < s->nlayers; i++) {
        xt_layer *l = &s->layers[i];
        int need = kinds[l->kind].in_rank, rc = 0;
        l->in_rank = rank;
        for (int d = 0; d < 3; d++) l->in_shape[d] = d < rank ? (int)sh[d] : 0;
        l->params = 0;
        label(l, i + 1, lab, sizeof lab);
        shape_str(rank, l->in_shape, shs, sizeof shs);
        if (need == 1 && rank != 1)
            return at_layer(s, l, e, "%s expects a flat input but gets %s; add a flatten layer before it", lab, shs);
        if (need == 3 && rank != 3)
            return at_layer(s, l, e, "%s expects a [C, H, W] input but gets the flat %s; move it before the flatten "
                            "layer", lab, shs);
        switch (l->kind) {
        case XT_L_CONV2D:
        case XT_L_MAXPOOL2D:
        case XT_L_AVGPOOL2D: rc = infer_window(s, l, lab, sh, e); break;
        case XT_L_BATCHNORM2D: l->params = (long)(2 * sh[0]); break;
        case XT_L_FLATTEN:
            if (rank == 3) sh[0] = sh[0] * sh[1] * sh[2];
            rank = 1;
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
        default: break; /* relu, dropout, log_softmax keep the shape */
        }
        if (rc) return rc;
        long long elems = rank == 3 ? sh[0] * sh[1] * sh[2] : sh[0];
        if (elems > MAX_ELEMS || l->params > MAX_ELEMS || (total += l->params) > MAX_ELEMS)
            return at_layer(s, l, e, "%s: the model gets too large here (more than %d values or parameters); use "
                            "fewer channels or features", lab, MAX_ELEMS);
        l->out_rank = rank;
        for (int d = 0; d < 3; d++) l->out_shape[d] = d < rank ? (int)sh[d] : 0;
    }
    const xt_layer *last = s->nlayers ? &s->layers[s->nlayers - 1] : NULL;
    s->num_classes = last && last->out_rank == 1 ? last->out_shape[0] : 0;
    return 0;
}

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

void xt_spec_summary(const xt_spec *s, FILE *out) {
    int wn = 5, wt = 4, ws = 12, wp = 7;   /* widths of "Layer", "Type", "Output Shape", "Param #" */
    char buf[64], num[32];
    for (int i = 0; i < s->nlayers; i++) {
        const xt_layer *l = &s->layers[i];
        int n = (int)strlen(l->name), t = (int)strlen(kinds[l->kind].name);
        int sw = (int)strlen(shape_str(l->out_rank, l->out_shape, buf, sizeof buf));
        int pw = (int)strlen(xt_commas(num, (unsigned long long)l->params));
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
        fprintf(out, "%-*s  %-*s  %-*s  %*s\n", wn, l->name, wt, kinds[l->kind].name, ws,
                shape_str(l->out_rank, l->out_shape, buf, sizeof buf), wp,
                xt_commas(num, (unsigned long long)l->params));
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

void xt_spec_print_yaml(const xt_spec *s, FILE *out, int indent) {
    char f[32];
    fprintf(out, "%*sinput: [%d, %d, %d]\n%*slayers:\n", indent, "", s->input[0], s->input[1], s->input[2], indent, "");
    for (int i = 0; i < s->nlayers; i++) {
        const xt_layer *l = &s->layers[i];
        /* quoted when plain text would read back as something else ("null") */
        fprintf(out, "%*s  - %s: {name: ", indent, "", kinds[l->kind].name);
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
        if (l->kind == XT_L_CONV2D || l->kind == XT_L_LINEAR) fprintf(out, ", bias: %s", l->bias ? "true" : "false");
        if (l->kind == XT_L_BATCHNORM2D) {
            fprintf(out, ", eps: %s", xt_fmt_float(l->eps, f, sizeof f));
            fprintf(out, ", momentum: %s", xt_fmt_float(l->momentum, f, sizeof f));
        }
        if (l->kind == XT_L_DROPOUT) fprintf(out, ", p: %s", xt_fmt_float(l->p, f, sizeof f));
        fputs("}\n", out);
    }
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
    }
    return (unsigned long long)h;
}

void xt_spec_free(xt_spec *s) {
    free(s->layers);
    s->layers = NULL;
    s->nlayers = 0;
    s->num_classes = 0;
}

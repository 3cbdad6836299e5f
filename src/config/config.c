/* config.c — load the FLAGS file: walk the YAML document against the key
 * table, apply --set overrides, load the model spec, check keys against each
 * other; print the resolved config and hash the model. See config.h.
 *
 * What each key is (type, default, range, help) lives in config_keys.c; this
 * file only knows where values come from, so every message can say
 * "<file>:<line>:<col>" or "--set KEY=VALUE".
 */
#include "config/config.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config_keys.h"
#include "config/config_yaml.h"
#include "config/model_find.h"
#include "kernels/bf16.h"
#include "kernels/simd.h"

/* The [C, H, W] each dataset delivers, by xt_dataset_kind (run.c checks the
 * loaded data against the model again). */
static const int dataset_inputs[][3] = {
    [XT_DS_MNIST] = {1, 28, 28}, [XT_DS_FASHION_MNIST] = {1, 28, 28}, [XT_DS_SYNTHETIC] = {1, 28, 28},
    [XT_DS_CIFAR10] = {3, 32, 32}, [XT_DS_SYNTHETIC_CIFAR10] = {3, 32, 32},
    [XT_DS_FOLDER] = {0, 0, 0}, /* the model's input decides (check_folder); run.c counts the classes */
};
#define DATASET_CLASSES 10

enum { FROM_DEFAULT = 0, FROM_FILE = -1 }; /* or k > 0: the k-th --set */

typedef struct {
    int how;        /* FROM_DEFAULT, FROM_FILE or a 1-based --set index */
    int line, col;  /* of the key in the file */
} origin;

typedef struct {
    xt_config *c;
    const char *file;           /* config path, NULL when there is none */
    const char *const *sets;
    int cur_set;                /* 1-based --set being applied; 0 while reading the file */
    yaml_document_t *doc;       /* the document being walked */
    origin org[XT_NKEYS_MAX];   /* per key, where its value came from */
    int model_from;             /* 0 none yet, 1 a path in c->model_path, 2 inline in c->spec */
    xt_err *e;
} lctx;

/* ---- messages ---------------------------------------------------------------- */

static void where_node(const lctx *x, const yaml_node_t *n, char *buf, size_t cap) {
    if (x->cur_set) snprintf(buf, cap, "--set %.200s", x->sets[x->cur_set - 1]);
    else snprintf(buf, cap, "%s:%d:%d", x->file, n ? xt_yaml_line(n) : 1, n ? xt_yaml_col(n) : 1);
}

/* Where key ki got its value; a default is blamed on the top of the file. */
static void where_key(const lctx *x, int ki, char *buf, size_t cap) {
    const origin *o = &x->org[ki];
    if (o->how > 0) snprintf(buf, cap, "--set %.200s", x->sets[o->how - 1]);
    else if (o->how == FROM_FILE) snprintf(buf, cap, "%s:%d:%d", x->file, o->line, o->col);
    else if (x->file) snprintf(buf, cap, "%s:1:1", x->file);
    else snprintf(buf, cap, "configuration");
}

static int failv(lctx *x, const char *where, const char *fmt, va_list ap) {
    char msg[800];
    vsnprintf(msg, sizeof msg, fmt, ap);
    return xt_fail(x->e, XT_EUSAGE, "%s: %s", where, msg);
}

__attribute__((format(printf, 3, 4))) static int fail_node(lctx *x, const yaml_node_t *n, const char *fmt, ...) {
    char where[300];
    va_list ap;
    where_node(x, n, where, sizeof where);
    va_start(ap, fmt);
    int rc = failv(x, where, fmt, ap);
    va_end(ap);
    return rc;
}

__attribute__((format(printf, 3, 4))) static int fail_key(lctx *x, int ki, const char *fmt, ...) {
    char where[300];
    va_list ap;
    where_key(x, ki, where, sizeof where);
    va_start(ap, fmt);
    int rc = failv(x, where, fmt, ap);
    va_end(ap);
    return rc;
}

/* "unknown key 'batchsize'; did you mean 'batch_size'?" — `group` is the
 * enclosing map ("optimizer") or NULL at the top level. */
static int unknown_key(lctx *x, const yaml_node_t *at, const char *group, const char *key) {
    const char *cands[2 * XT_NKEYS_MAX];
    char hint[160] = "", q[64], full[160], groups[XT_NKEYS_MAX][32];
    int n = 0;
    const char *h = NULL;
    snprintf(full, sizeof full, "%s%s%s", group ? group : "", group ? "." : "", key);
    if (group) {
        size_t gl = strlen(group);
        for (int i = 0; i < xt_nkeys; i++)
            if (!strncmp(xt_keys[i].name, group, gl) && xt_keys[i].name[gl] == '.') cands[n++] = xt_keys[i].name + gl + 1;
        if ((h = xt_suggest(key, cands, n))) snprintf(hint, sizeof hint, "; did you mean '%s.%s'?", group, h);
        else if (xt_key_find(key) >= 0)
            snprintf(hint, sizeof hint, "; '%s' is a top-level key: move it out of '%s'", key, group);
    } else {
        /* whole names and group names first, then the part after the dot
         * ("nesterov" -> "optimizer.nesterov") */
        for (int i = 0; i < xt_nkeys; i++) {
            cands[n++] = xt_keys[i].name;
            const char *dot = strchr(xt_keys[i].name, '.');
            if (dot && (i == 0 || strncmp(xt_keys[i - 1].name, xt_keys[i].name, (size_t)(dot - xt_keys[i].name) + 1))) {
                snprintf(groups[i], sizeof groups[i], "%.*s", (int)(dot - xt_keys[i].name), xt_keys[i].name);
                cands[n++] = groups[i];
            }
        }
        if ((h = xt_suggest(key, cands, n))) snprintf(hint, sizeof hint, "; did you mean '%s'?", h);
        for (int i = 0; i < xt_nkeys && !h; i++) {
            const char *dot = strchr(xt_keys[i].name, '.');
            if (dot && xt_edit_distance(key, dot + 1) <= (strlen(key) <= 4 ? 0 : 1)) {
                h = xt_keys[i].name;
                snprintf(hint, sizeof hint, "; did you mean '%s'?", h);
            }
        }
    }
    /* a layer spec given as the config: say what it is and where it goes */
    if (!group && (!strcmp(key, "input") || !strcmp(key, "layers")))
        snprintf(hint, sizeof hint, "; this file is a layer spec, not a FLAGS file: give it to a config as 'model: <this file>' "
                 "(see configs/)");
    if (!hint[0]) snprintf(hint, sizeof hint, "; 'xlatrain --help' lists the keys");
    return fail_node(x, at, "unknown key %s%s", xt_quote(full, q, sizeof q), hint);
}

/* ---- applying values ------------------------------------------------------------ */

static int apply_model(lctx *x, const yaml_node_t *v) {
    xt_config *c = x->c;
    char got[96];
    const char *t = xt_yaml_text(v);
    if (t && !xt_scalar_null(t, xt_yaml_plain(v))) {
        if (strlen(t) >= sizeof c->model_path)
            return fail_node(x, v, "model: the path is longer than %zu bytes", sizeof c->model_path - 1);
        xt_spec_free(&c->spec);
        snprintf(c->model_path, sizeof c->model_path, "%s", t);
        x->model_from = 1;
        return 0;
    }
    if (!v || v->type != YAML_MAPPING_NODE)
        return fail_node(x, v, "model: expected a layer-spec path (model: models/fashion_cnn.yaml) or an inline "
                         "mapping with input and layers, got %s", xt_yaml_describe(v, got, sizeof got));
    xt_spec_free(&c->spec);
    c->model_path[0] = 0;
    x->model_from = 0;
    int rc = xt_spec_from_yaml(&c->spec, x->cur_set ? "--set model" : x->file, x->doc, (void *)v, x->e);
    if (!rc) x->model_from = 2;
    return rc;
}

static int apply_value(lctx *x, int ki, const yaml_node_t *k, const yaml_node_t *v) {
    const xt_key *key = &xt_keys[ki];
    origin *o = &x->org[ki];
    int how = x->cur_set ? x->cur_set : FROM_FILE;
    if (o->how == how)
        return fail_node(x, k, "duplicate key '%s' (first at line %d)", key->name, o->line);
    *o = (origin){how, k ? xt_yaml_line(k) : 1, k ? xt_yaml_col(k) : 1};
    if (key->type == XT_K_MODEL) return apply_model(x, v);
    char why[400];
    if (xt_key_set(key, x->c, x->doc, v, why, sizeof why)) return fail_node(x, v ? v : k, "%s: %s", key->name, why);
    return 0;
}

/* The keys of one mapping: the whole document (group NULL) or a group's map. */
static int apply_map(lctx *x, const char *group, const yaml_node_t *map) {
    const yaml_node_t *groups_seen[XT_NKEYS_MAX];
    int ngroups = 0;
    char got[96];
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(x->doc, p->key), *v = yaml_document_get_node(x->doc, p->value);
        const char *key = xt_yaml_text(k);
        char full[160];
        if (!key || xt_scalar_null(key, xt_yaml_plain(k)))
            return fail_node(x, k, "keys must be plain names like batch_size, got %s", xt_yaml_describe(k, got, sizeof got));
        if (strlen(key) > 100) return unknown_key(x, k, group, key);
        snprintf(full, sizeof full, "%s%s%s", group ? group : "", group ? "." : "", key);
        int ki = xt_key_find(full), rc;
        if (ki >= 0) {
            rc = apply_value(x, ki, k, v);
        } else if (!group && xt_key_is_group(full)) {
            for (int i = 0; i < ngroups; i++)
                if (!strcmp(xt_yaml_text(groups_seen[i]), full))
                    return fail_node(x, k, "duplicate key '%s' (first at line %d)", full, xt_yaml_line(groups_seen[i]));
            groups_seen[ngroups++] = k;
            if (v->type != YAML_MAPPING_NODE)
                return fail_node(x, v, "'%s' must be a mapping of its keys (for example %s: {name: ...}; or write "
                                 "%s.name: ...), got %s", full, full, full, xt_yaml_describe(v, got, sizeof got));
            rc = apply_map(x, full, v);
        } else {
            rc = unknown_key(x, k, group, key);
        }
        if (rc) return rc;
    }
    return 0;
}

/* One --set KEY=VALUE. String keys take VALUE verbatim (paths may hold ':'
 * or '#'); other values are read as YAML, so --set train_subset=[0,100] and
 * --set model={input: [1,28,28], layers: [flatten]} work. */
static int apply_set(lctx *x, int i) {
    const char *arg = x->sets[i];
    const char *eq = arg ? strchr(arg, '=') : NULL;
    char key[160];
    x->cur_set = i + 1;
    if (!arg || !eq || eq == arg)
        return fail_node(x, NULL, "expected KEY=VALUE, e.g. --set batch_size=64");
    if ((size_t)(eq - arg) >= sizeof key) return unknown_key(x, NULL, NULL, "(a very long key)");
    snprintf(key, sizeof key, "%.*s", (int)(eq - arg), arg);
    int ki = xt_key_find(key);
    if (ki >= 0 && xt_keys[ki].type == XT_K_STR) {
        char why[400];
        x->org[ki] = (origin){x->cur_set, 1, 1};
        if (xt_key_set_text(&xt_keys[ki], x->c, eq + 1, 1, why, sizeof why)) return fail_node(x, NULL, "%s: %s", key, why);
        return 0;
    }
    if (ki < 0 && !xt_key_is_group(key)) return unknown_key(x, NULL, NULL, key);
    yaml_document_t doc;
    char name[300];
    snprintf(name, sizeof name, "--set %.200s", arg);
    int rc = xt_yaml_parse(&doc, name, eq + 1, strlen(eq + 1), x->e);
    if (rc) return rc;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    x->doc = &doc;
    if (ki >= 0) rc = apply_value(x, ki, NULL, root);
    else if (root && root->type == YAML_MAPPING_NODE) rc = apply_map(x, key, root);
    else rc = fail_node(x, NULL, "'%s' holds nested keys; set one of them, as in --set %s.name=...", key, key);
    x->doc = NULL;
    yaml_document_delete(&doc);
    return rc;
}

/* ---- after all values: the model and checks across keys ---------------------------- */

/* `model:` is a path or a bare model name, found as model_find.h says:
 * as written, next to the config file, then in the models directories of
 * the installation and the source tree. */
static int resolve_model(lctx *x) {
    xt_config *c = x->c;
    int ki = xt_key_find("model");
    if (x->model_from == 2) return 0;
    if (x->model_from == 0)
        return fail_key(x, ki, "no model; set model: fashion_cnn (a name from xlatrain --list-models), a layer-spec file "
                        "(model: models/fashion_cnn.yaml), or an inline mapping with input and layers");
    char path[4096], hint[64], q[64];
    if (xt_model_find(c->model_path, x->file, path, sizeof path, hint, sizeof hint)) {
        if (hint[0])
            return fail_key(x, ki, "model %s not found; did you mean '%s'? (xlatrain --list-models lists them)",
                            xt_quote(c->model_path, q, sizeof q), hint);
        return fail_key(x, ki, "model %s not found (%s); xlatrain --list-models lists the models",
                        xt_quote(c->model_path, q, sizeof q), path);
    }
    if (strlen(path) >= sizeof c->model_path) return fail_key(x, ki, "model: the resolved path is too long");
    memcpy(c->model_path, path, strlen(path) + 1);
    return xt_spec_load(&c->spec, c->model_path, x->e);
}

/* precision: the config's value wins; unset, XLA_USE_BF16=1 selects bf16 as it
 * does for torch_xla users. precision_from says which, for the log's first line. */
static int resolve_precision(lctx *x) {
    xt_config *c = x->c;
    int kp = xt_key_find("precision");
    const char *env = getenv("XLA_USE_BF16");
    int on = 0;
    if (env && *env) {
        if (!strcmp(env, "1") || !strcmp(env, "true")) on = 1;
        else if (strcmp(env, "0") && strcmp(env, "false"))
            return xt_fail(x->e, XT_EUSAGE, "XLA_USE_BF16=%s: expected 1 (bf16) or 0 (fp32); unset it or set precision in the config",
                           env);
    }
    const char *path = NULL; /* the kernels' path override: its values are bf16.h's */
    if (k_bf16_env_check(&path))
        return xt_fail(x->e, XT_EUSAGE, "XLATRAIN_BF16_PATH=%s: expected ref (the portable bf16 kernels) or auto; unset it for auto",
                       path);
    if (x->org[kp].how) {
        snprintf(c->precision_from, sizeof c->precision_from, "%s%s", x->org[kp].how == FROM_FILE ? "config" : "--set",
                 env && *env ? (on == (c->precision == XT_PRECISION_BF16) ? "" : ", XLA_USE_BF16 ignored") : "");
    } else if (on) {
        c->precision = XT_PRECISION_BF16;
        snprintf(c->precision_from, sizeof c->precision_from, "XLA_USE_BF16=%s", env);
    } else {
        snprintf(c->precision_from, sizeof c->precision_from, "default");
    }
    return 0;
}

/* dataset: folder: the images become whatever the model's input is, so
 * only its channels and resize are checked here; the classes are counted
 * when the folder is read (run.c). */
static int check_folder(lctx *x) {
    const xt_config *c = x->c;
    const xt_spec *s = &c->spec;
    int kt = xt_key_find("train_dir"), kv = xt_key_find("val_fraction"), kr = xt_key_find("resize");
    if (!c->train_dir[0])
        return fail_key(x, xt_key_find("dataset"), "dataset: folder needs train_dir: a folder with one subfolder of "
                        "PNG/JPEG images per class (train_dir: data/pets/train)");
    if (!c->test_dir[0] && c->val_fraction <= 0)
        return fail_key(x, kt, "dataset: folder needs a test set: set test_dir (the same class subfolders), or "
                        "val_fraction (e.g. 0.2) to hold out part of train_dir");
    if (c->test_dir[0] && c->val_fraction > 0)
        return fail_key(x, kv, "val_fraction and test_dir are both set; keep one: test_dir is the test set, or "
                        "val_fraction splits it off train_dir");
    if (s->input[0] != 1 && s->input[0] != 3)
        return fail_key(x, xt_key_find("model"), "the model's input has %d channels; folder images decode to 1 (grey) or "
                        "3 (RGB): set input: [1, %d, %d] or [3, %d, %d] in %s", s->input[0], s->input[1], s->input[2],
                        s->input[1], s->input[2], s->source);
    if ((c->resize[0] || c->resize[1]) && (c->resize[0] != s->input[1] || c->resize[1] != s->input[2]))
        return fail_key(x, kr, "resize is [%d, %d] but the model's input is %d x %d; set resize: [%d, %d] (or [0, 0] "
                        "when every image already has the model's size)", c->resize[0], c->resize[1], s->input[1],
                        s->input[2], s->input[1], s->input[2]);
    if (xt_spec_last(s)->out_rank != 1)
        return fail_key(x, xt_key_find("model"), "the model must end with one score per class; end it with flatten and "
                        "linear: {out: N} (N = the number of class folders) in %s", s->source);
    return 0;
}

/* kernel_choice: XLATRAIN_KERNEL_CHOICE wins over the config (for bisecting
 * a run without editing it); kernel_choice_from says which, for the log. */
static int resolve_kernel_choice(lctx *x) {
    xt_config *c = x->c;
    int kp = xt_key_find("kernel_choice");
    const char *env = getenv("XLATRAIN_KERNEL_CHOICE");
    if (env && *env) {
        if (strcmp(env, "measured") && strcmp(env, "fixed"))
            return xt_fail(x->e, XT_EUSAGE, "XLATRAIN_KERNEL_CHOICE=%s: expected measured or fixed; unset it to use the config's kernel_choice",
                           env);
        c->kernel_choice = !strcmp(env, "fixed");
        snprintf(c->kernel_choice_from, sizeof c->kernel_choice_from, "XLATRAIN_KERNEL_CHOICE=%s%s", env,
                 x->org[kp].how ? ", the config's ignored" : "");
    } else {
        snprintf(c->kernel_choice_from, sizeof c->kernel_choice_from, "%s",
                 x->org[kp].how == FROM_FILE ? "config" : x->org[kp].how ? "--set" : "default");
    }
    return 0;
}

/* isa: XLATRAIN_ISA wins over the config (as XLATRAIN_KERNEL_CHOICE does:
 * for measuring a cap without editing the config); isa_from says which, for
 * the log. The values are kernels/simd.h's (k_isa_parse). */
static int resolve_isa(lctx *x) {
    xt_config *c = x->c;
    int kp = xt_key_find("isa");
    const char *env = NULL;
    if (k_isa_env_check(&env))
        return xt_fail(x->e, XT_EUSAGE, "XLATRAIN_ISA=%s: expected avx512, avx2, generic or auto; unset it to use the config's isa",
                       env);
    if (env && *env) {
        c->isa = k_isa_parse(env) + 1;
        snprintf(c->isa_from, sizeof c->isa_from, "XLATRAIN_ISA=%.24s%s", env, x->org[kp].how ? ", the config's ignored" : "");
    } else {
        snprintf(c->isa_from, sizeof c->isa_from, "%s",
                 x->org[kp].how == FROM_FILE ? "config" : x->org[kp].how ? "--set" : "default");
    }
    return 0;
}

static int check_model_fits_data(lctx *x) {
    const xt_config *c = x->c;
    const xt_spec *s = &c->spec;
    const char *ds = xt_keys[xt_key_find("dataset")].choices[c->dataset];
    int ki = xt_key_find("model");
    if (c->dataset == XT_DS_FOLDER) return check_folder(x);
    const int *dataset_input = dataset_inputs[c->dataset];
    /* a model made for the other family of images (a shipped one, say): name the
     * models and datasets that fit, not an edit of the model */
    if (s->input[0] != dataset_input[0] && (s->input[0] == 1 || s->input[0] == 3) && (dataset_input[0] == 1 || dataset_input[0] == 3))
        return fail_key(x, ki, "the model's input is [%d, %d, %d] but %s images are [%d, %d, %d]; instead of %s choose a model "
                        "made for %s images (%s; xlatrain --list-models), or a dataset of [%d, %d, %d] images (%s)",
                        s->input[0], s->input[1], s->input[2], ds, dataset_input[0], dataset_input[1], dataset_input[2],
                        s->source, dataset_input[0] == 1 ? "28x28 grey" : "32x32 colour",
                        dataset_input[0] == 1 ? "model: resnet8_mnist or fashion_cnn" : "model: resnet20 or cifar_cnn",
                        s->input[0], s->input[1], s->input[2],
                        s->input[0] == 3 ? "dataset: synthetic_cifar10 or cifar10" : "dataset: synthetic, mnist or fashion_mnist");
    if (memcmp(s->input, dataset_input, sizeof dataset_inputs[0]))
        return fail_key(x, ki, "the model's input is [%d, %d, %d] but %s images are [%d, %d, %d]; set input: [%d, %d, "
                        "%d] in %s", s->input[0], s->input[1], s->input[2], ds, dataset_input[0], dataset_input[1],
                        dataset_input[2], dataset_input[0], dataset_input[1], dataset_input[2], s->source);
    const xt_layer *last = xt_spec_last(s);
    if (last->out_rank != 1)
        return fail_key(x, ki, "the model ends with [%d, %d, %d] but must end with [%d] (one score per class); end it "
                        "with flatten and linear: {out: %d} in %s", last->out_shape[0], last->out_shape[1],
                        last->out_shape[2], DATASET_CLASSES, DATASET_CLASSES, s->source);
    if (s->num_classes != DATASET_CLASSES)
        return fail_key(x, ki, "the model outputs %d scores but %s has %d classes; give the last linear layer out: %d "
                        "in %s", s->num_classes, ds, DATASET_CLASSES, DATASET_CLASSES, s->source);
    return 0;
}

/* random_resized_crop: each pair in order, and not on top of the padded crop
 * (two crops of one image is no recipe; auto padding gives way instead). */
static int check_resized_crop(lctx *x) {
    const xt_config *c = x->c;
    int ks = xt_key_find("random_resized_crop.scale"), kr = xt_key_find("random_resized_crop.ratio");
    if (c->rrc_scale[0] > c->rrc_scale[1])
        return fail_key(x, ks, "random_resized_crop.scale is [%g, %g] but a must not exceed b; give the smaller share "
                        "first, e.g. scale: [0.08, 1]", c->rrc_scale[0], c->rrc_scale[1]);
    if (c->rrc_ratio[0] > c->rrc_ratio[1])
        return fail_key(x, kr, "random_resized_crop.ratio is [%g, %g] but r0 must not exceed r1; give the smaller "
                        "ratio first, e.g. ratio: [0.75, 1.3333]", c->rrc_ratio[0], c->rrc_ratio[1]);
    if (c->rrc_scale[0] < 1 && c->random_crop_padding > 0)
        return fail_key(x, xt_key_find("random_crop_padding"), "random_crop_padding %d and random_resized_crop both crop "
                        "each training image; set random_crop_padding: 0 or random_resized_crop.scale: [1, 1]",
                        c->random_crop_padding);
    return 0;
}

static int validate(lctx *x) {
    xt_config *c = x->c;
    int rc;
    /* datadir is where the files are found; all four given by path need none */
    int all_files = c->train_images[0] && c->train_labels[0] && c->test_images[0] && c->test_labels[0];
    if (c->dataset != XT_DS_SYNTHETIC && c->dataset != XT_DS_SYNTHETIC_CIFAR10 && c->dataset != XT_DS_FOLDER && !c->datadir[0] && !all_files) {
        int kd = xt_key_find("datadir"), ks = xt_key_find("dataset");
        const char *ds = xt_keys[ks].choices[c->dataset];
        int cifar = c->dataset == XT_DS_CIFAR10;
        return fail_key(x, x->org[kd].how ? kd : ks, "datadir is not set, but dataset %s reads its %s files from "
                        "there; set datadir (e.g. datadir: data/%s) or use dataset: %s", ds, cifar ? "CIFAR-10" : "IDX",
                        ds, cifar ? "synthetic_cifar10" : "synthetic");
    }
    if (c->nesterov && (c->optimizer != XT_OPT_SGD || c->momentum <= 0))
        return fail_key(x, xt_key_find("optimizer.nesterov"), "optimizer.nesterov needs optimizer.name: sgd and "
                        "momentum > 0 (as in PyTorch)");
    int km = xt_key_find("momentum");
    int nnotes_max = (int)(sizeof c->notes / sizeof c->notes[0]);
    if (c->optimizer != XT_OPT_SGD && c->momentum != 0 && x->org[km].how && c->nnotes < nnotes_max)
        /* torch.optim.Adam has no momentum argument; its beta1 (the first of betas) plays that part */
        snprintf(c->notes[c->nnotes++], sizeof c->notes[0], "momentum %g is not used by %s (SGD only); %s uses "
                 "the first of optimizer.betas (%g) instead", c->momentum, xt_keys[xt_key_find("optimizer.name")].choices[c->optimizer],
                 xt_keys[xt_key_find("optimizer.name")].choices[c->optimizer], c->beta1);
    /* a warm-up longer than the run is what a shortened CI run of a long recipe has: a warning */
    if (c->warmup_epochs >= c->num_epochs && c->warmup_epochs > 0 && !c->fast_dev_run && c->nnotes < nnotes_max)
        snprintf(c->notes[c->nnotes++], sizeof c->notes[0], "schedule.warmup_epochs (%d) is not less than num_epochs "
                 "(%d): the schedule never finishes warming up (the learning rate stays below learning_rate)",
                 c->warmup_epochs, c->num_epochs);
    if (c->fast_dev_run) { /* as Lightning's fast_dev_run: the smallest run that still writes everything */
        c->num_epochs = 1;
        c->max_steps = 1;
        c->limit_test_batches = 1;
        c->warmup_epochs = 0;
        c->target_accuracy = 0; /* one step learns nothing: the verdict is whether every output worked */
    }
    if ((rc = check_resized_crop(x))) return rc;
    if ((rc = check_model_fits_data(x))) return rc;
    int ko = xt_key_find("output_dir"), kg = xt_key_find("save_graphs");
    c->output_dir_set = x->org[ko].how != 0;
    if (!x->org[ko].how) snprintf(c->output_dir, sizeof c->output_dir, "runs/%s", c->name);
    else if (!c->output_dir[0])
        return fail_key(x, ko, "output_dir is empty; name a directory for checkpoints and metrics");
    if ((rc = resolve_precision(x))) return rc;
    if ((rc = resolve_kernel_choice(x))) return rc;
    if ((rc = resolve_isa(x))) return rc;
    const char *env = getenv("XLATRAIN_SAVE_GRAPHS");
    if (!x->org[kg].how && env && *env) {
        if (strlen(env) >= sizeof c->save_graphs)
            return xt_fail(x->e, XT_EUSAGE, "XLATRAIN_SAVE_GRAPHS is longer than %zu bytes", sizeof c->save_graphs - 1);
        snprintf(c->save_graphs, sizeof c->save_graphs, "%s", env);
    }
    return 0;
}

/* ---- public ------------------------------------------------------------------------ */

void xt_config_defaults(xt_config *c) {
    char why[200];
    memset(c, 0, sizeof *c);
    xt_keys_apply_defaults(c, why, sizeof why); /* cannot fail: a test checks every default */
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    c->num_cores = n < 1 ? 1 : n > 256 ? 256 : (int)n;
    snprintf(c->name, sizeof c->name, "xlatrain");
    snprintf(c->output_dir, sizeof c->output_dir, "runs/%s", c->name);
}

/* "configs/mnist.yaml" -> "mnist" */
static void config_name(const char *path, char *out, size_t cap) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    int len = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
    snprintf(out, cap, "%.*s", len, base);
    if (!out[0]) snprintf(out, cap, "config");
}

/* The file's document (from disk, or from `text` when it is not NULL), then
 * the --set overrides, the model and the checks across keys. */
static int load(xt_config *c, const char *path, const char *text, size_t len, const char *const *sets, int nset,
                xt_err *e) {
    xt_config_defaults(c);
    lctx *x = calloc(1, sizeof *x);
    if (!x) return xt_fail(e, XT_EUSAGE, "out of memory");
    *x = (lctx){.c = c, .file = path, .sets = sets, .e = e};
    int rc = 0;
    if (path) {
        yaml_document_t doc;
        char got[96];
        snprintf(c->source, sizeof c->source, "%s", path);
        config_name(path, c->name, sizeof c->name);
        if ((rc = text ? xt_yaml_parse(&doc, path, text, len, e) : xt_yaml_load_file(&doc, path, e))) goto out;
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        x->doc = &doc;
        if (!root || root->type != YAML_MAPPING_NODE)
            rc = fail_node(x, root, "a config must be a mapping of 'key: value' lines, got %s",
                           root ? xt_yaml_describe_doc(root, got, sizeof got) : "an empty document");
        else
            rc = apply_map(x, NULL, root);
        x->doc = NULL;
        yaml_document_delete(&doc);
        if (rc) goto out;
    }
    for (int i = 0; i < nset && !rc; i++) rc = apply_set(x, i);
    x->cur_set = 0;
    if (!rc) rc = resolve_model(x);
    if (!rc) rc = validate(x);
out:
    free(x);
    if (rc) xt_config_free(c);
    return rc;
}

int xt_config_load(xt_config *c, const char *path, const char *const *sets, int nset, xt_err *e) {
    return load(c, path, NULL, 0, sets, nset, e);
}

int xt_config_load_buffer(xt_config *c, const char *name, const char *text, size_t len, const char *const *sets,
                          int nset, xt_err *e) {
    xt_config_defaults(c); /* so that, as after xt_config_load, nothing is left to free on failure */
    if (!name || !text) return xt_fail(e, XT_EUSAGE, "xt_config_load_buffer: no name or no text");
    if (len > XT_YAML_MAX_BYTES)
        return xt_fail(e, XT_EUSAGE, "%s: larger than %u MB; is this really a YAML config?", name,
                       XT_YAML_MAX_BYTES >> 20);
    return load(c, name, text, len, sets, nset, e);
}

void xt_config_print(const xt_config *c, FILE *out) {
    const char *open = "";   /* the group whose "name:" line is printed */
    size_t open_len = 0;
    for (int i = 0; i < xt_nkeys; i++) {
        const xt_key *k = &xt_keys[i];
        const char *dot = strchr(k->name, '.'), *leaf = dot ? dot + 1 : k->name;
        size_t gl = dot ? (size_t)(dot - k->name) : 0;
        if (gl != open_len || strncmp(open, k->name, gl)) {
            if (gl) fprintf(out, "%.*s:\n", (int)gl, k->name);
            open = k->name;
            open_len = gl;
        }
        fprintf(out, "%*s%s:", gl ? 2 : 0, "", leaf);
        if (k->type == XT_K_MODEL && !c->model_path[0] && c->spec.nlayers) {
            fputc('\n', out);
            xt_spec_print_yaml(&c->spec, out, 2);
            continue;
        }
        fputc(' ', out);
        xt_key_print_value(k, c, out);
        fputc('\n', out);
    }
}

void xt_config_print_keys(FILE *out) {
    char type[160];
    for (int i = 0; i < xt_nkeys; i++) {
        const xt_key *k = &xt_keys[i];
        fprintf(out, "  %-24s %s; default %s\n      %s\n", k->name, xt_key_type_doc(k, type, sizeof type), k->def,
                k->help);
    }
}

void xt_config_free(xt_config *c) { xt_spec_free(&c->spec); }

unsigned long long xt_config_model_hash(const xt_config *c) { return xt_spec_hash(&c->spec); }

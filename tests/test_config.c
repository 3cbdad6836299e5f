/* test_config.c — the FLAGS file: defaults, the shipped configs, --set,
 * inline models, printing, and one deliberately broken config per error
 * class (each must say file:line:col or "--set KEY=VALUE" and name the key). */
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_keys.h"
#include "test.h"

/* A config file in the test's scratch dir; models/ paths resolve from the
 * repository root, where the runner is started. */
static int load_text(const char *text, xt_config *c, xt_err *e, const char **path, const char *const *sets, int nset) {
    const char *p = test_write_file("c.yaml", text);
    if (path) *path = p;
    return xt_config_load(c, p, sets, nset, e);
}

static void expect_err(int at, const char *text, const char *const *sets, int nset, const char *where_suffix,
                       const char *n1, const char *n2) {
    xt_config c;
    xt_err e = {0};
    const char *path;
    int rc = load_text(text, &c, &e, &path, sets, nset);
    char prefix[700];
    /* where_suffix: ":L:C" after the file name, or a whole "--set ..." prefix */
    if (where_suffix[0] == ':') snprintf(prefix, sizeof prefix, "%s%s: ", path, where_suffix);
    else snprintf(prefix, sizeof prefix, "%s: ", where_suffix);
    if (rc != XT_EUSAGE || e.code != XT_EUSAGE) test_fail_at(__FILE__, at, "rc %d code %d, want 2 (%s)", rc, e.code, e.msg);
    if (strncmp(e.msg, prefix, strlen(prefix))) test_fail_at(__FILE__, at, "want prefix \"%s\" in: %s", prefix, e.msg);
    if (n1 && !strstr(e.msg, n1)) test_fail_at(__FILE__, at, "want \"%s\" in: %s", n1, e.msg);
    if (n2 && !strstr(e.msg, n2)) test_fail_at(__FILE__, at, "want \"%s\" in: %s", n2, e.msg);
    if (strchr(e.msg, '\n')) test_fail_at(__FILE__, at, "newline in: %s", e.msg);
    if (c.spec.layers) test_fail_at(__FILE__, at, "spec not freed after an error");
    xt_config_free(&c);
}
#define CFG_ERR(text, where, n1, n2) expect_err(__LINE__, text, NULL, 0, where, n1, n2)
#define SET_ERR(text, set, where, n1, n2)                     \
    do {                                                      \
        const char *s_[] = {set};                             \
        expect_err(__LINE__, text, s_, 1, where, n1, n2);     \
    } while (0)

#define OK_HEAD "dataset: synthetic\nmodel: models/fashion_cnn.yaml\n"

static void load_ok(const char *text, xt_config *c, const char *const *sets, int nset) {
    xt_err e = {0};
    int rc = load_text(text, c, &e, NULL, sets, nset);
    CHECK_MSG(rc == 0, "load failed: %s", e.msg);
}

static char *print_to_string(const xt_config *c) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    xt_config_print(c, f);
    fclose(f);
    return buf;
}

/* ---- defaults and the shipped configs ------------------------------------------------ */

TEST(config_every_default_parses) {
    xt_config c;
    char why[300] = "";
    memset(&c, 0, sizeof c);
    CHECK_MSG(xt_keys_apply_defaults(&c, why, sizeof why) == 0, "%s", why);
    CHECK(xt_nkeys <= XT_NKEYS_MAX);
    for (int i = 0; i < xt_nkeys; i++) {
        CHECK_MSG(xt_keys[i].help && strlen(xt_keys[i].help) > 10, "%s: no help", xt_keys[i].name);
        CHECK_MSG(xt_key_find(xt_keys[i].name) == i, "%s twice in the table", xt_keys[i].name);
    }
}

TEST(config_defaults) {
    xt_config c;
    xt_config_defaults(&c);
    CHECK_EQ(c.batch_size, 128);
    CHECK_EQ(c.num_workers, 4);
    CHECK_NEAR(c.learning_rate, 0.01, 1e-15);
    CHECK_NEAR(c.momentum, 0.5, 1e-15);
    CHECK_EQ(c.num_epochs, 18);
    CHECK(c.num_cores >= 1 && c.num_cores <= 256);
    CHECK_EQ(c.log_steps, 20);
    CHECK_EQ(c.metrics_debug, 0);
    CHECK_EQ(c.dataset, XT_DS_MNIST);
    CHECK_EQ(c.seed, 1);
    CHECK_NEAR(c.target_accuracy, 0, 0);
    CHECK_EQ(c.test_batch_size, 1000);
    CHECK_EQ(c.progress, -1);
    CHECK_EQ(c.train_subset[0], 0);
    CHECK_EQ(c.train_subset[1], -1);
    CHECK_EQ(c.test_subset[1], -1);
    CHECK_EQ(c.download, 0);
    CHECK_EQ(c.synthetic_train_size, 6000);
    CHECK_EQ(c.synthetic_test_size, 1000);
    CHECK(c.norm_mean < 0 && c.norm_std < 0);
    CHECK_EQ(c.random_crop_padding, -1); /* auto: by dataset */
    CHECK_EQ(c.random_flip, -1);
    CHECK_EQ(c.shuffle, 1);
    CHECK_EQ(c.drop_last, 1);
    CHECK_EQ(c.loader_prefetch_size, 8);
    CHECK_EQ(c.device_prefetch_size, 4);
    CHECK_EQ(c.optimizer, XT_OPT_SGD);
    CHECK_EQ(c.nesterov, 0);
    CHECK_NEAR(c.weight_decay, 0, 0);
    CHECK_NEAR(c.beta1, 0.9, 1e-15);
    CHECK_NEAR(c.beta2, 0.999, 1e-15);
    CHECK_NEAR(c.adam_eps, 1e-8, 1e-20);
    CHECK_EQ(c.schedule, XT_SCHED_CONSTANT);
    CHECK_EQ(c.step_size, 10);
    CHECK_NEAR(c.gamma, 0.1, 1e-15);
    CHECK_EQ(c.warmup_epochs, 0);
    CHECK_EQ(c.scale_lr_by_world_size, 1);
    CHECK_EQ(c.checkpoint_every, 1);
    CHECK_EQ(c.keep_checkpoints, 3);
    CHECK_EQ(c.pin_cores, 0);
    CHECK_EQ(c.worker_timeout, 300);
    CHECK_EQ(c.blas_threads, 1);
    CHECK_EQ(c.datadir[0], 0);
    CHECK_EQ(c.save_graphs[0], 0);
    CHECK_EQ(c.train_images[0], 0);
    CHECK(c.spec.layers == NULL);
    xt_config_free(&c);
}

TEST(config_shipped_seed_configs) {
    static const char *files[] = {"configs/mnist.yaml", "configs/fashion_mnist.yaml"};
    for (int i = 0; i < 2; i++) {
        xt_config c;
        xt_err e = {0};
        int rc = xt_config_load(&c, files[i], NULL, 0, &e);
        CHECK_MSG(rc == 0, "%s: %s", files[i], e.msg);
        if (rc) continue;
        CHECK_EQ(c.dataset, i == 0 ? XT_DS_MNIST : XT_DS_FASHION_MNIST);
        CHECK(!strcmp(c.datadir, i == 0 ? "data/mnist" : "data/fashion_mnist"));
        CHECK_EQ(c.batch_size, 128);
        CHECK_EQ(c.num_workers, 4);
        CHECK_NEAR(c.learning_rate, 0.01, 1e-15);
        CHECK_NEAR(c.momentum, 0.5, 1e-15);
        CHECK_EQ(c.num_epochs, 50);
        CHECK_EQ(c.log_steps, 20);
        CHECK_EQ(c.metrics_debug, 0);
        CHECK(!strcmp(c.model_path, "models/fashion_cnn.yaml"));
        CHECK_EQ(xt_spec_total_params(&c.spec), 21900);
        CHECK(!strcmp(c.output_dir, i == 0 ? "runs/mnist" : "runs/fashion_mnist"));
        CHECK(!strcmp(c.name, i == 0 ? "mnist" : "fashion_mnist"));
        CHECK(!strcmp(c.source, files[i]));
        xt_config d;
        xt_config_defaults(&d);
        CHECK_EQ(c.num_cores, d.num_cores); /* absent = the machine's CPUs */
        xt_config_free(&c);
    }
}

TEST(config_shipped_smoke_and_t10k) {
    xt_config c;
    xt_err e = {0};
    int rc = xt_config_load(&c, "configs/smoke.yaml", NULL, 0, &e);
    CHECK_MSG(rc == 0, "%s", e.msg);
    /* a few seconds on one core without a download, with a target so that
     * `make demo` checks learning end to end (the exact figures are tuned in
     * the file) */
    CHECK_EQ(c.dataset, XT_DS_SYNTHETIC);
    CHECK_EQ(c.synthetic_train_size, 4000);
    CHECK_EQ(c.synthetic_test_size, 1000);
    CHECK(c.num_epochs >= 1 && c.num_epochs <= 5);
    CHECK_EQ(c.num_cores, 1);
    CHECK(c.target_accuracy >= 90);
    xt_config_free(&c);
    rc = xt_config_load(&c, "configs/real_t10k.yaml", NULL, 0, &e);
    CHECK_MSG(rc == 0, "%s", e.msg);
    CHECK(!strcmp(c.datadir, "../shared/data/mnist-t10k"));
    CHECK(!strcmp(c.train_images, "../shared/data/mnist-t10k/t10k-images-idx3-ubyte.gz"));
    CHECK(!strcmp(c.test_labels, "../shared/data/mnist-t10k/t10k-labels-idx1-ubyte.gz"));
    CHECK_EQ(c.train_subset[0], 0);
    CHECK_EQ(c.train_subset[1], 8000);
    CHECK_EQ(c.test_subset[0], 8000);
    CHECK_EQ(c.test_subset[1], 10000);
    CHECK_EQ(c.num_epochs, 10);
    CHECK_EQ(c.num_cores, 1);
    xt_config_free(&c);
}

/* That every key is documented, in man/xlatrain.yaml.5, is tests/test_docs.c's. */

/* ---- values: types, nesting, --set -------------------------------------------------------- */

TEST(config_all_kinds_of_values) {
    xt_config c;
    load_ok(OK_HEAD "batch_size: 64\nlearning_rate: 1e-3\nmomentum: 0\nseed: 1234567890123\n"
                    "shuffle: no\ndrop_last: off\nprogress: true\nnormalize:\n  mean: 0.5\n  std: auto\n"
                    "optimizer:\n  name: adamw\n  betas: [0.8, 0.99]\n  eps: 1.0e-6\n  weight_decay: 0.01\n"
                    "schedule.name: cosine\nschedule: {warmup_epochs: 2}\ncheckpoint: {every: 0, keep_last: 5}\n"
                    "train_subset: [100, 200]\ntest_subset: [0, -1]\nsave_graphs: \"graphs dir\"\n"
                    "output_dir: ~/runs/x\ntarget_accuracy: 98.5\n",
            &c, NULL, 0);
    CHECK_EQ(c.batch_size, 64);
    CHECK_NEAR(c.learning_rate, 1e-3, 1e-18);
    CHECK_NEAR(c.momentum, 0, 0);
    CHECK_EQ(c.seed, 1234567890123LL);
    CHECK_EQ(c.shuffle, 0);
    CHECK_EQ(c.drop_last, 0);
    CHECK_EQ(c.progress, 1);
    CHECK_NEAR(c.norm_mean, 0.5, 0);
    CHECK(c.norm_std < 0);
    CHECK_EQ(c.optimizer, XT_OPT_ADAMW);
    CHECK_NEAR(c.beta1, 0.8, 1e-15);
    CHECK_NEAR(c.beta2, 0.99, 1e-15);
    CHECK_NEAR(c.adam_eps, 1e-6, 1e-20);
    CHECK_NEAR(c.weight_decay, 0.01, 1e-15);
    CHECK_EQ(c.schedule, XT_SCHED_COSINE);
    CHECK_EQ(c.warmup_epochs, 2);
    CHECK_EQ(c.checkpoint_every, 0);
    CHECK_EQ(c.keep_checkpoints, 5);
    CHECK_EQ(c.train_subset[0], 100);
    CHECK_EQ(c.train_subset[1], 200);
    CHECK(!strcmp(c.save_graphs, "graphs dir"));
    CHECK(!strcmp(c.output_dir, "~/runs/x"));
    CHECK_NEAR(c.target_accuracy, 98.5, 0);
    xt_config_free(&c);
}

TEST(config_set_overrides) {
    const char *sets[] = {"batch_size=64",
                          "optimizer.name=adam",
                          "schedule={name: step, step_size: 3, gamma: 0.5}",
                          "datadir=/data/a:b #c",
                          "train_subset=[0,100]",
                          "learning_rate=0.1",
                          "learning_rate=0.2",
                          "output_dir=runs/lr0.2",
                          "save_graphs="};
    xt_config c;
    load_ok(OK_HEAD "batch_size: 32\nsave_graphs: g\n", &c, sets, 9);
    CHECK_EQ(c.batch_size, 64);
    CHECK_EQ(c.optimizer, XT_OPT_ADAM);
    CHECK_EQ(c.schedule, XT_SCHED_STEP);
    CHECK_EQ(c.step_size, 3);
    CHECK_NEAR(c.gamma, 0.5, 0);
    CHECK(!strcmp(c.datadir, "/data/a:b #c"));
    CHECK_EQ(c.train_subset[1], 100);
    CHECK_NEAR(c.learning_rate, 0.2, 0); /* the last --set wins */
    CHECK(!strcmp(c.output_dir, "runs/lr0.2"));
    CHECK_EQ(c.save_graphs[0], 0);
    xt_config_free(&c);
}

TEST(config_set_model_and_dataset) {
    const char *sets[] = {"model=models/wide_cnn.yaml", "dataset=synthetic"};
    xt_config c;
    load_ok("datadir: d\nmodel: models/does_not_exist.yaml\n", &c, sets, 2);
    CHECK_EQ(xt_spec_total_params(&c.spec), 1199882);
    CHECK_EQ(c.dataset, XT_DS_SYNTHETIC);
    xt_config_free(&c);
    const char *inl[] = {"model={input: [1, 28, 28], layers: [flatten, {linear: {out: 10}}, log_softmax]}"};
    load_ok(OK_HEAD, &c, inl, 1);
    CHECK_EQ(xt_spec_total_params(&c.spec), 7850);
    CHECK_EQ(c.model_path[0], 0);
    xt_config_free(&c);
}

TEST(config_no_file_only_sets) {
    const char *sets[] = {"dataset=synthetic", "model=models/mlp.yaml"};
    xt_config c;
    xt_err e = {0};
    int rc = xt_config_load(&c, NULL, sets, 2, &e);
    CHECK_MSG(rc == 0, "%s", e.msg);
    CHECK_EQ(xt_spec_total_params(&c.spec), 203530);
    xt_config_free(&c);
}

TEST(config_model_next_to_the_config) {
    test_write_file("tiny.yaml", "input: [1, 28, 28]\nlayers: [flatten, {linear: {out: 10}}]\n");
    xt_config c;
    load_ok("dataset: synthetic\nmodel: tiny.yaml\n", &c, NULL, 0);
    CHECK_EQ(xt_spec_total_params(&c.spec), 7850);
    CHECK_STR_CONTAINS(c.model_path, "/tiny.yaml");
    CHECK_STR_CONTAINS(c.spec.source, "/tiny.yaml");
    xt_config_free(&c);
}

TEST(config_inline_model) {
    xt_config c;
    const char *path;
    xt_err e = {0};
    int rc = load_text("dataset: synthetic\n"
                       "model:\n"
                       "  input: [1, 28, 28]\n"
                       "  layers:\n"
                       "    - conv2d: {name: conv1, out: 10, kernel: 5}\n"
                       "    - maxpool2d: {kernel: 2}\n"
                       "    - relu\n"
                       "    - batchnorm2d: {name: bn1}\n"
                       "    - conv2d: {name: conv2, out: 20, kernel: 5}\n"
                       "    - maxpool2d: {kernel: 2}\n"
                       "    - relu\n"
                       "    - batchnorm2d: {name: bn2}\n"
                       "    - flatten\n"
                       "    - linear: {name: fc1, out: 50}\n"
                       "    - relu\n"
                       "    - linear: {name: fc2, out: 10}\n"
                       "    - log_softmax\n",
                       &c, &e, &path, NULL, 0);
    CHECK_MSG(rc == 0, "%s", e.msg);
    if (rc) return;
    CHECK_EQ(xt_spec_total_params(&c.spec), 21900);
    CHECK_EQ(c.model_path[0], 0);
    CHECK(!strcmp(c.spec.source, path));
    CHECK_EQ(c.spec.layers[0].line, 5);
    /* the same model as the file: same hash, so checkpoints are interchangeable */
    xt_config f;
    load_ok(OK_HEAD, &f, NULL, 0);
    CHECK(xt_config_model_hash(&c) == xt_config_model_hash(&f));
    xt_config_free(&f);
    xt_config_free(&c);
}

TEST(config_model_hash_differs_between_models) {
    xt_config a, b;
    load_ok(OK_HEAD, &a, NULL, 0);
    const char *sets[] = {"model=models/lenet5.yaml"};
    load_ok(OK_HEAD, &b, sets, 1);
    CHECK(xt_config_model_hash(&a) != xt_config_model_hash(&b));
    CHECK(xt_config_model_hash(&a) == xt_spec_hash(&a.spec));
    xt_config_free(&a);
    xt_config_free(&b);
}

TEST(config_save_graphs_from_environment) {
    xt_config c;
    setenv("XLATRAIN_SAVE_GRAPHS", "/tmp/graphs", 1);
    load_ok(OK_HEAD, &c, NULL, 0);
    CHECK(!strcmp(c.save_graphs, "/tmp/graphs"));
    xt_config_free(&c);
    load_ok(OK_HEAD "save_graphs: mine\n", &c, NULL, 0);
    CHECK(!strcmp(c.save_graphs, "mine")); /* the file wins over the environment */
    xt_config_free(&c);
    unsetenv("XLATRAIN_SAVE_GRAPHS");
}

TEST(config_print_round_trips) {
    static const char *texts[] = {
        OK_HEAD "batch_size: 7\nlearning_rate: 0.1\nnormalize: {mean: 0.25}\noptimizer: {name: adam, betas: [0.5, 0.75]}\n"
                "train_subset: [5, 10]\nsave_graphs: \"a: b\"\ndatadir: \"null\"\nprogress: false\n",
        "dataset: synthetic\nmodel:\n  input: [1, 28, 28]\n  layers: [{conv2d: {out: 2, kernel: [3, 5], padding: [1, 2]}},"
        " {dropout: {p: 0.3}}, {batchnorm2d: {eps: 0.001, momentum: 0.2}}, flatten, {linear: {out: 10, bias: false}}]\n",
    };
    for (int t = 0; t < 2; t++) {
        xt_config a, b;
        load_ok(texts[t], &a, NULL, 0);
        char *out = print_to_string(&a);
        xt_err e = {0};
        int rc = xt_config_load(&b, test_write_file("printed.yaml", out), NULL, 0, &e);
        CHECK_MSG(rc == 0, "reloading the printed config: %s\n%s", e.msg, out);
        if (rc == 0) {
            char *out2 = print_to_string(&b);
            CHECK_MSG(!strcmp(out, out2), "printed twice differently:\n%s\n---\n%s", out, out2);
            CHECK(xt_config_model_hash(&a) == xt_config_model_hash(&b));
            free(out2);
            xt_config_free(&b);
        }
        if (t == 0) {
            CHECK_STR_CONTAINS(out, "batch_size: 7\n");
            CHECK_STR_CONTAINS(out, "optimizer:\n  name: adam\n");
            CHECK_STR_CONTAINS(out, "  betas: [0.5, 0.75]\n");
            CHECK_STR_CONTAINS(out, "normalize:\n  mean: 0.25\n  std: auto\n");
            CHECK_STR_CONTAINS(out, "save_graphs: \"a: b\"\n");
            CHECK_STR_CONTAINS(out, "datadir: \"null\"\n");
            CHECK_STR_CONTAINS(out, "model: models/fashion_cnn.yaml\n");
            CHECK_STR_CONTAINS(out, "output_dir: runs/c\n");
        }
        free(out);
        xt_config_free(&a);
    }
}

/* ---- one broken config per error class ------------------------------------------------------- */

TEST(config_err_unknown_key_with_suggestion) {
    CFG_ERR(OK_HEAD "batchsize: 64\n", ":3:1", "unknown key 'batchsize'; did you mean 'batch_size'?", NULL);
    CFG_ERR(OK_HEAD "learning_rat: 0.1\n", ":3:1", "unknown key 'learning_rat'", "did you mean 'learning_rate'?");
    CFG_ERR(OK_HEAD "frobnicate: 1\n", ":3:1", "unknown key 'frobnicate'", "'xlatrain --help' lists the keys");
}

TEST(config_err_unknown_nested_key) {
    CFG_ERR(OK_HEAD "optimizer:\n  name: sgd\n  nestrov: true\n", ":5:3", "unknown key 'optimizer.nestrov'",
            "did you mean 'optimizer.nesterov'?");
    CFG_ERR(OK_HEAD "nesterov: true\n", ":3:1", "unknown key 'nesterov'", "did you mean 'optimizer.nesterov'?");
    CFG_ERR(OK_HEAD "optimizer: {learning_rate: 0.1}\n", ":3:13", "unknown key 'optimizer.learning_rate'",
            "'learning_rate' is a top-level key");
    CFG_ERR(OK_HEAD "optimiser:\n  name: sgd\n", ":3:1", "unknown key 'optimiser'", "did you mean 'optimizer'?");
}

TEST(config_err_wrong_type) {
    CFG_ERR(OK_HEAD "batch_size: abc\n", ":3:13", "batch_size: expected an integer, got 'abc'", NULL);
    CFG_ERR(OK_HEAD "batch_size: 12.5\n", ":3:13", "batch_size: expected an integer, got '12.5'", NULL);
    CFG_ERR(OK_HEAD "batch_size: \"128\"\n", ":3:13", "batch_size: expected an integer, got the quoted string '128'",
            "remove the quotes");
    CFG_ERR(OK_HEAD "learning_rate: fast\n", ":3:16", "learning_rate: expected a number, got 'fast'", NULL);
    CFG_ERR(OK_HEAD "shuffle: maybe\n", ":3:10", "shuffle: expected true or false, got 'maybe'", NULL);
    CFG_ERR(OK_HEAD "batch_size: [1, 2]\n", ":3:13", "batch_size: expected integer", "got a list");
    CFG_ERR(OK_HEAD "batch_size:\n", ":3:12", "batch_size: expected", "got nothing");
    CFG_ERR(OK_HEAD "progress: sometimes\n", ":3:11", "progress: expected auto, true or false", NULL);
    CFG_ERR(OK_HEAD "learning_rate: .inf\n", ":3:16", "learning_rate: expected a number, got '.inf'", NULL);
}

TEST(config_err_out_of_range) {
    CFG_ERR(OK_HEAD "batch_size: 0\n", ":3:13", "batch_size: '0' is out of range; it must be from 1 to 65536", NULL);
    CFG_ERR(OK_HEAD "num_cores: 300\n", ":3:12", "num_cores: '300' is out of range; it must be from 1 to 256", NULL);
    CFG_ERR(OK_HEAD "learning_rate: -0.1\n", ":3:16", "learning_rate: '-0.1' is out of range; it must be > 0", NULL);
    CFG_ERR(OK_HEAD "momentum: 1\n", ":3:11", "momentum: '1' is out of range; it must be in [0, 1)", NULL);
    CFG_ERR(OK_HEAD "target_accuracy: 101\n", ":3:18", "target_accuracy:", "[0, 100]");
    CFG_ERR(OK_HEAD "seed: 99999999999999999999\n", ":3:7", "seed: '99999999999999999999' is out of range", NULL);
    CFG_ERR(OK_HEAD "optimizer: {betas: [0.9, 1.5]}\n", ":3:20", "optimizer.betas: '1.5' is out of range", NULL);
    CFG_ERR(OK_HEAD "num_workers: -1\n", ":3:14", "num_workers: '-1' is out of range", NULL);
}

TEST(config_err_enum_with_suggestion) {
    CFG_ERR(OK_HEAD "optimizer: {name: adamm}\n", ":3:19", "optimizer.name: expected one of sgd, adam, adamw, got "
            "'adamm'", "did you mean 'adam'?");
    CFG_ERR("dataset: minst\nmodel: models/mlp.yaml\n", ":1:10", "dataset: expected one of mnist, fashion_mnist, "
            "synthetic, cifar10, synthetic_cifar10, folder, got 'minst'", "did you mean 'mnist'?");
}

TEST(config_err_pairs) {
    CFG_ERR(OK_HEAD "train_subset: [10, 5]\n", ":3:15", "train_subset: end 5 must be greater than start 10", NULL);
    CFG_ERR(OK_HEAD "test_subset: [-1, 5]\n", ":3:14", "test_subset: start -1 must be >= 0", NULL);
    CFG_ERR(OK_HEAD "train_subset: 5\n", ":3:15", "train_subset: expected a list [start, end], got '5'", NULL);
    CFG_ERR(OK_HEAD "optimizer:\n  betas: [0.9]\n", ":4:10", "optimizer.betas: expected a list [a, b], got a list "
            "of 1", NULL);
}

TEST(config_err_missing_datadir) {
    CFG_ERR("model: models/mlp.yaml\n", ":1:1", "datadir is not set", "dataset: synthetic");
    CFG_ERR("model: models/mlp.yaml\ndataset: fashion_mnist\n", ":2:1", "datadir is not set, but dataset "
            "fashion_mnist", "set datadir (e.g. datadir: data/fashion_mnist)");
    CFG_ERR("model: models/mlp.yaml\ndatadir: \"\"\n", ":2:1", "datadir is not set", NULL);
}

TEST(config_err_duplicate_keys) {
    CFG_ERR(OK_HEAD "batch_size: 1\nbatch_size: 2\n", ":4:1", "duplicate key 'batch_size' (first at line 3)", NULL);
    CFG_ERR(OK_HEAD "optimizer.name: sgd\noptimizer: {name: adam}\n", ":4:13", "duplicate key 'optimizer.name' "
            "(first at line 3)", NULL);
    CFG_ERR(OK_HEAD "optimizer: {name: sgd}\noptimizer: {nesterov: false}\n", ":4:1", "duplicate key 'optimizer'",
            NULL);
}

TEST(config_err_document_shape) {
    CFG_ERR("- batch_size: 1\n", ":1:1", "a config must be a mapping of 'key: value' lines, got a list", NULL);
    CFG_ERR("", ":1:1", "a config must be a mapping", "an empty document");
    CFG_ERR("just words\n", ":1:1", "a config must be a mapping", "got a document of plain text");
    CFG_ERR(OK_HEAD "optimizer: adam\n", ":3:12", "'optimizer' must be a mapping", "optimizer.name");
    CFG_ERR(OK_HEAD "[a]: 1\n", ":3:1", "keys must be plain names", "got a list");
    CFG_ERR(OK_HEAD "---\nbatch_size: 1\n", ":3:1", "a second YAML document", NULL);
}

TEST(config_err_malformed_yaml) {
    CFG_ERR(OK_HEAD "batch_size: [1, 2\n", ":4:1", "invalid YAML: did not find expected ',' or ']'", NULL);
    CFG_ERR(OK_HEAD "\tbatch_size: 1\n", ":3:1", "invalid YAML: found a tab character that violates indentation", NULL);
    CFG_ERR(OK_HEAD "batch_size: 1\n  momentum: 0.5\n", ":4:11", "invalid YAML: mapping values are not allowed", NULL);
    CFG_ERR(OK_HEAD "seed: \xff\n", ":3:7", "invalid YAML: invalid leading UTF-8 octet", NULL);
}

TEST(config_err_model) {
    CFG_ERR("dataset: synthetic\n", ":1:1", "no model", "models/fashion_cnn.yaml");
    CFG_ERR("dataset: synthetic\nmodel: models/nope.yaml\n", ":2:1", "model 'models/nope.yaml' not found", NULL);
    CFG_ERR("dataset: synthetic\nmodel: [a]\n", ":2:8", "model: expected a layer-spec path", "got a list");
    test_write_file("rgb.yaml", "input: [3, 32, 32]\nlayers: [flatten, {linear: {out: 10}}]\n");
    CFG_ERR("dataset: synthetic\nmodel: rgb.yaml\n", ":2:1", "the model's input is [3, 32, 32] but synthetic images "
            "are [1, 28, 28]", "rgb.yaml");
    test_write_file("w20.yaml", "input: [1, 28, 28]\nlayers: [flatten, {linear: {out: 20}}]\n");
    CFG_ERR("dataset: synthetic\nmodel: w20.yaml\n", ":2:1", "the model outputs 20 scores but synthetic has 10 "
            "classes", NULL);
    test_write_file("conv.yaml", "input: [1, 28, 28]\nlayers: [{conv2d: {out: 10, kernel: 5}}]\n");
    CFG_ERR("dataset: synthetic\nmodel: conv.yaml\n", ":2:1", "the model ends with [10, 24, 24] but must end with "
            "[10]", "flatten");
}

TEST(config_err_inline_model_points_into_the_config) {
    CFG_ERR("dataset: synthetic\nmodel:\n  input: [1, 28, 28]\n  layers:\n    - conv2d: {name: conv1, out: 20, kernel: 24}\n"
            "    - linear: {name: fc1, out: 10}\n",
            ":6:7", "layer 'fc1' (linear) expects a flat input but gets [20, 5, 5]; add a flatten layer before it", NULL);
}

TEST(config_err_cross_key_checks) {
    CFG_ERR(OK_HEAD "optimizer:\n  name: adam\n  nesterov: true\n", ":5:3", "optimizer.nesterov needs optimizer.name: sgd",
            NULL);
    CFG_ERR(OK_HEAD "momentum: 0\noptimizer.nesterov: true\n", ":4:1", "optimizer.nesterov needs", "momentum > 0");
    CFG_ERR(OK_HEAD "output_dir: \"\"\n", ":3:1", "output_dir is empty", NULL);
}

TEST(config_err_string_too_long) {
    char text[2000];
    snprintf(text, sizeof text, OK_HEAD "datadir: %0900d\n", 7);
    CFG_ERR(text, ":3:10", "datadir: the value is 900 bytes long; at most 511 are allowed", NULL);
}

TEST(config_err_set) {
    SET_ERR(OK_HEAD, "batch_size=abc", "--set batch_size=abc", "batch_size: expected an integer, got 'abc'", NULL);
    SET_ERR(OK_HEAD, "batchsize=64", "--set batchsize=64", "unknown key 'batchsize'; did you mean 'batch_size'?", NULL);
    SET_ERR(OK_HEAD, "optimizer.nestrov=true", "--set optimizer.nestrov=true", "unknown key 'optimizer.nestrov'",
            "did you mean 'optimizer.nesterov'?");
    SET_ERR(OK_HEAD, "batch_size", "--set batch_size", "expected KEY=VALUE", NULL);
    SET_ERR(OK_HEAD, "=3", "--set =3", "expected KEY=VALUE", NULL);
    SET_ERR(OK_HEAD, "num_cores=0", "--set num_cores=0", "num_cores: '0' is out of range", NULL);
    SET_ERR(OK_HEAD, "optimizer.name=rmsprop", "--set optimizer.name=rmsprop", "expected one of sgd, adam, adamw", NULL);
    SET_ERR(OK_HEAD, "batch_size=[1", "--set batch_size=[1:2:1", "invalid YAML", NULL);
    SET_ERR(OK_HEAD, "optimizer=adam", "--set optimizer=adam", "'optimizer' holds nested keys", "optimizer.name");
    SET_ERR(OK_HEAD, "momentum=", "--set momentum=", "momentum: expected a number, got nothing", NULL);
    SET_ERR(OK_HEAD, "model=models/nope.yaml", "--set model=models/nope.yaml", "model 'models/nope.yaml' not found",
            NULL);
    SET_ERR("model: models/mlp.yaml\n", "dataset=mnist", "--set dataset=mnist", "datadir is not set", NULL);
    SET_ERR(OK_HEAD, "model={input: [1, 28, 28], layers: [relu, {linear: {out: 10}}]}", "--set model:1:37",
            "layer 'fc1' (linear) expects a flat input", NULL);
}

/* Hostile files must fail cleanly: no crash, hang or leak (ASan checks the
 * last two); the fuzzing issue grows this list. */
TEST(config_hostile_inputs_fail_cleanly) {
    static char deep[30000];
    memset(deep, '{', sizeof deep - 1);
    static char many[400000];
    for (size_t i = 0; i + 12 < sizeof many; i += 12) memcpy(many + i, "k0000000: 1\n", 12);
    static const char *cases[] = {
        deep,
        many,
        "a: &a [*a]\n",
        "optimizer: &o {name: *o}\n",
        "model: &m {input: *m, layers: *m}\ndataset: synthetic\n",
        "model: &m {input: [1, 28, 28], layers: [*m]}\ndataset: synthetic\n",
        "? !!map {a: b}\n: 1\n",
        "batch_size: !!int 0x10\n",
        "datadir: *undefined\n",
        "&a a: 1\n*a : 2\n",
        "%TAG ! tag:x,2000:\n--- !foo\nbatch_size: 1\n",
        "\"\\u0000\": 1\n",
        "batch_size: 1\n...\n---\n",
        "\xef\xbb\xbf" "batch_size: 1\nmodel: models/nope.yaml\n",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        xt_config c;
        xt_err e = {0};
        int rc = load_text(cases[i], &c, &e, NULL, NULL, 0);
        CHECK_MSG(rc == XT_EUSAGE, "case %zu: rc %d", i, rc);
        CHECK_MSG(e.msg[0] && !strchr(e.msg, '\n'), "case %zu: message '%s'", i, e.msg);
        xt_config_free(&c);
    }
}

TEST(config_missing_file) {
    xt_config c;
    xt_err e = {0};
    CHECK_EQ(xt_config_load(&c, "configs/nope.yaml", NULL, 0, &e), XT_EUSAGE);
    CHECK_STR_CONTAINS(e.msg, "configs/nope.yaml: cannot open: No such file or directory");
    CHECK_EQ(xt_config_load(&c, "configs", NULL, 0, &e), XT_EUSAGE);
    CHECK_STR_CONTAINS(e.msg, "configs");
}

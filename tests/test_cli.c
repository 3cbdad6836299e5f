/* test_cli.c — the xlatrain binary as a user runs it: --dry-run, --help,
 * --version, usage errors and config errors (exit codes and the one-line
 * "xlatrain: ..." message). Needs the built binary ($XLATRAIN_BIN). */
#include <string.h>
#include <unistd.h>

#include "test.h"

static char out[1 << 16];

/* Run `xlatrain ARGS` (stdout and stderr together); returns the exit code. */
static int run(const char *args) {
    char cmd[2048];
    if (access(test_bin(), X_OK) != 0) test_skip("the xlatrain binary is not built (make builds it first)");
    snprintf(cmd, sizeof cmd, "%s %s", test_bin(), args);
    return test_run(cmd, out, sizeof out);
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

TEST(cli_dry_run_fashion_mnist) {
    CHECK_EQ(run("--config configs/fashion_mnist.yaml --dry-run"), 0);
    CHECK_STR_CONTAINS(out, "# resolved configuration");
    CHECK_STR_CONTAINS(out, "dataset: fashion_mnist\n");
    CHECK_STR_CONTAINS(out, "batch_size: 128\n");
    CHECK_STR_CONTAINS(out, "21,900");
    CHECK_STR_CONTAINS(out, "[10]");
    CHECK_STR_CONTAINS(out, "fc1");
}

TEST(cli_dry_run_every_shipped_config_and_model) {
    static const char *cfgs[] = {"configs/mnist.yaml", "configs/fashion_mnist.yaml", "configs/smoke.yaml",
                                 "configs/real_t10k.yaml", "configs/real_t10k_resnet8.yaml"};
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) {
        char args[256];
        snprintf(args, sizeof args, "--config %s --dry-run", cfgs[i]);
        CHECK_MSG(run(args) == 0, "%s: %s", cfgs[i], out);
    }
    static const struct { const char *model, *params; } models[] = {
        {"models/lenet5.yaml", "Total params: 61,706"},
        {"models/mlp.yaml", "Total params: 203,530"},
        {"models/wide_cnn.yaml", "Trainable params: 1,199,882"},
        {"models/resnet8_mnist.yaml", "Total params: 77,754"},
    };
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        char args[256];
        snprintf(args, sizeof args, "--config configs/smoke.yaml --set model=%s --dry-run", models[i].model);
        CHECK_MSG(run(args) == 0, "%s: %s", models[i].model, out);
        CHECK_STR_CONTAINS(out, models[i].params);
    }
}

TEST(cli_set_and_equals_forms) {
    CHECK_EQ(run("--config=configs/smoke.yaml --set batch_size=64 --set=optimizer.name=adam --dry-run"), 0);
    CHECK_STR_CONTAINS(out, "batch_size: 64\n");
    CHECK_STR_CONTAINS(out, "optimizer:\n  name: adam\n");
}

TEST(cli_broken_config_exits_2_with_one_line) {
    const char *cfg = test_write_file("broken.yaml", "dataset: synthetic\nmodel: models/mlp.yaml\nbatchsize: 64\n");
    char args[1024];
    snprintf(args, sizeof args, "--config %s --dry-run", cfg);
    CHECK_EQ(run(args), 2);
    CHECK_EQ(count_lines(out), 1);
    CHECK(!strncmp(out, "xlatrain: ", 10));
    CHECK_STR_CONTAINS(out, "broken.yaml:3:1: unknown key 'batchsize'; did you mean 'batch_size'?");
}

TEST(cli_broken_spec_exits_2_with_one_line) {
    const char *spec = test_write_file("bad.yaml", "input: [1, 28, 28]\nlayers:\n  - linear: {name: fc1, out: 10}\n");
    char args[1024];
    snprintf(args, sizeof args, "--config configs/smoke.yaml --set model=%s --dry-run", spec);
    CHECK_EQ(run(args), 2);
    CHECK_EQ(count_lines(out), 1);
    CHECK_STR_CONTAINS(out, "bad.yaml:3:5: layer 'fc1' (linear) expects a flat input but gets [1, 28, 28]");
}

TEST(cli_set_type_error) {
    CHECK_EQ(run("--config configs/smoke.yaml --set batch_size=abc --dry-run"), 2);
    CHECK_EQ(count_lines(out), 1);
    CHECK_STR_CONTAINS(out, "xlatrain: --set batch_size=abc: batch_size: expected an integer, got 'abc'");
}

TEST(cli_missing_config_file) {
    CHECK_EQ(run("--config configs/does_not_exist.yaml"), 2);
    CHECK_EQ(count_lines(out), 1);
    CHECK_STR_CONTAINS(out, "xlatrain: configs/does_not_exist.yaml: cannot open");
}

TEST(cli_help) {
    CHECK_EQ(run("--help"), 0);
    CHECK_STR_CONTAINS(out, "usage: xlatrain --config FILE");
    CHECK_STR_CONTAINS(out, "exit status");
    CHECK_STR_CONTAINS(out, "130");
    CHECK_STR_CONTAINS(out, "optimizer.nesterov");
    CHECK_EQ(run("-h"), 0);
}

TEST(cli_version) {
    CHECK_EQ(run("--version"), 0);
    /* the version, then whether multi-host support (MPI) is compiled in */
    CHECK(!strncmp(out, "xlatrain 0.1.0 (", 16));
    CHECK(strstr(out, "Open MPI v") || strstr(out, "no MPI; make MPI=1 builds multi-host support"));
    CHECK(strchr(out, '\n') == out + strlen(out) - 1);
}

TEST(cli_usage_errors_exit_2) {
    static const struct { const char *args, *msg; } cases[] = {
        {"--frobnicate", "xlatrain: unknown option '--frobnicate'; try 'xlatrain --help'"},
        {"", "xlatrain: missing --config FILE; try 'xlatrain --help'"},
        {"--config", "option '--config' needs a value"},
        {"--config configs/smoke.yaml stray", "unexpected argument 'stray'"},
        {"--config configs/smoke.yaml --dry-run=yes", "option '--dry-run' takes no value"},
        {"--config configs/smoke.yaml --set batch_size", "--set batch_size: expected KEY=VALUE"},
        {"--config configs/smoke.yaml --output x.csv", "--output goes with --predict"},
        {"--config configs/smoke.yaml --eval-only --predict x.idx", "choose one of --eval-only and --predict"},
        {"--config a.yaml --config b.yaml", "option '--config' given twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = run(cases[i].args);
        CHECK_MSG(rc == 2, "'%s': exit %d", cases[i].args, rc);
        CHECK_MSG(count_lines(out) == 1, "'%s': not one line: %s", cases[i].args, out);
        CHECK_STR_CONTAINS(out, cases[i].msg);
        CHECK_STR_CONTAINS(out, "try 'xlatrain --help'");
    }
}

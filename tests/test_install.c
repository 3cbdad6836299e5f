/* test_install.c — an installed xlatrain, as a user gets it from `make
 * install`: run from another directory it finds its models by name, lists
 * them, suggests the right name for a typo, `man xlatrain` and `man
 * xlatrain.yaml` find its two pages, its bash completion offers the
 * options, the config keys and the model names, and `make uninstall`
 * removes every file it installed. */
#include <string.h>

#include "test.h"

static char g_out[1 << 16];

/* make install into <tmp>/root with PREFIX=/usr; returns <tmp>/root. The
 * inner make runs as if typed by hand: under `make -j2 test` it would inherit
 * a jobserver it cannot use, and its warning would read as a leftover file. */
static const char *install_into_tmp(void) {
    static char root[1024];
    snprintf(root, sizeof root, "%s/root", test_tmpdir());
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s install DESTDIR=%s PREFIX=/usr", root);
    int rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "make install failed: %s", g_out);
    return root;
}

TEST(install_finds_models_by_name_from_another_directory) {
    const char *root = install_into_tmp();
    char cmd[4096];
    const char *files[] = {"usr/bin/xlatrain", "usr/share/man/man1/xlatrain.1", "usr/share/man/man5/xlatrain.yaml.5",
                           "usr/share/xlatrain/models/lenet5.yaml",
                           "usr/share/xlatrain/configs/smoke.yaml", "usr/share/bash-completion/completions/xlatrain"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(cmd, sizeof cmd, "test -f %s/%s", root, files[i]);
        CHECK_MSG(test_run(cmd, NULL, 0) == 0, "not installed: %s", files[i]);
    }
    snprintf(cmd, sizeof cmd, "cd / && %s/usr/bin/xlatrain --list-models", root);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
    CHECK_STR_CONTAINS(g_out, "lenet5");
    CHECK_STR_CONTAINS(g_out, "61,706");
    CHECK_STR_CONTAINS(g_out, "fashion_cnn");
    /* a config in a directory with no models, run from / */
    const char *cfg = test_write_file("by_name.yaml", "dataset: synthetic\nmodel: lenet5\n");
    snprintf(cmd, sizeof cmd, "cd / && %s/usr/bin/xlatrain --config %s --dry-run", root, cfg);
    int rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK_STR_CONTAINS(g_out, "61,706");
    /* the installed configs name their model as models/...: found under share/xlatrain */
    snprintf(cmd, sizeof cmd, "cd / && %s/usr/bin/xlatrain --config %s/usr/share/xlatrain/configs/smoke.yaml --dry-run", root, root);
    rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK_STR_CONTAINS(g_out, "21,900");
    /* a typo gets the right name */
    cfg = test_write_file("typo.yaml", "dataset: synthetic\nmodel: lenet\n");
    snprintf(cmd, sizeof cmd, "cd / && %s/usr/bin/xlatrain --config %s --dry-run", root, cfg);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 2);
    CHECK_STR_CONTAINS(g_out, "did you mean 'lenet5'?");
}

/* The installed real_t10k.yaml names its data as ../shared/...: relative to
 * the working directory, as every data path is. Run from elsewhere, it is
 * exit 3 naming the key, that directory, and the two ways out (#56 item 8),
 * before any output directory is claimed. */
TEST(install_real_t10k_config_names_the_working_directory_of_its_relative_data) {
    const char *root = install_into_tmp();
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd / && %s/usr/bin/xlatrain --config %s/usr/share/xlatrain/configs/real_t10k.yaml "
             "--set output_dir=%s/run", root, root, test_tmpdir());
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 3);
    CHECK_STR_CONTAINS(g_out, "../shared/data/mnist-t10k/t10k-images-idx3-ubyte.gz: no such file (the value of "
                              "train_images, relative to the working directory /); correct train_images where it is set "
                              "(the config file or --set), or run from the directory that path is relative to");
    snprintf(cmd, sizeof cmd, "test -e %s/run", test_tmpdir());
    CHECK(test_run(cmd, NULL, 0) != 0);
}

/* man finds both installed pages by name, through MANPATH as a user with
 * that prefix would have it, and formats them. */
TEST(install_man_finds_both_pages) {
    if (test_run("command -v man", NULL, 0) != 0)
        test_skip("man is not installed (Debian: man-db; .ci/run installs it)");
    const char *root = install_into_tmp();
    char cmd[4096];
    static const struct { const char *name, *path, *text; } pages[] = {
        {"xlatrain", "usr/share/man/man1/xlatrain.1", "--config"},
        {"xlatrain.yaml", "usr/share/man/man5/xlatrain.yaml.5", "LAYER SPEC"},
    };
    for (size_t i = 0; i < sizeof pages / sizeof *pages; i++) {
        snprintf(cmd, sizeof cmd, "MANPATH=%s/usr/share/man man -w %s", root, pages[i].name);
        CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
        CHECK_STR_CONTAINS(g_out, pages[i].path);
        /* formatted to plain text: the page's own words, not only its file */
        snprintf(cmd, sizeof cmd, "MANPATH=%s/usr/share/man MANWIDTH=80 man -P cat %s", root, pages[i].name);
        CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
        CHECK_STR_CONTAINS(g_out, pages[i].text);
    }
}

/* COMPREPLY of the installed completion for the words given. */
static void complete(const char *root, const char *words, int cword) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "bash -c 'source %s/usr/share/bash-completion/completions/xlatrain; COMP_WORDS=(%s); COMP_CWORD=%d; "
             "_xlatrain; printf \"%%s\\n\" \"${COMPREPLY[@]}\"'",
             root, words, cword);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
}

TEST(install_bash_completion_offers_options_keys_choices_and_models) {
    const char *root = install_into_tmp();
    char words[2048];
    complete(root, "xlatrain --li", 1);
    CHECK_STR_CONTAINS(g_out, "--list-models");
    complete(root, "xlatrain --set batch_", 2);
    CHECK_STR_CONTAINS(g_out, "batch_size=");
    complete(root, "xlatrain --set optimizer.", 2);
    CHECK_STR_CONTAINS(g_out, "optimizer.name=");
    complete(root, "xlatrain --set optimizer.name = ad", 4);
    CHECK_STR_CONTAINS(g_out, "adam\nadamw");
    snprintf(words, sizeof words, "%s/usr/bin/xlatrain --set model = len", root);
    complete(root, words, 4);
    CHECK_STR_CONTAINS(g_out, "lenet5");
}

TEST(uninstall_removes_every_installed_file) {
    const char *root = install_into_tmp();
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s uninstall DESTDIR=%s PREFIX=/usr && find %s -type f", root, root);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
    CHECK_MSG(g_out[0] == 0, "left after uninstall: %s", g_out);
}

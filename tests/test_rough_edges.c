/* test_rough_edges.c — the small inconsistencies a careful new user meets,
 * each pinned down through the binary: option typos get a suggestion,
 * momentum with Adam is named as unused, a missing data file given with
 * --set is not blamed on the config file, and "Finished training epoch" is
 * printed once per epoch (by the master, as torch_xla's xm.master_print). */
#include <stdlib.h>
#include <string.h>

#include "test.h"

static char g_out[1 << 16];

static int run(const char *args) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s", test_bin(), args);
    return test_run(cmd, g_out, sizeof g_out);
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

TEST(rough_option_typos_get_a_suggestion) {
    CHECK_EQ(run("--confg configs/smoke.yaml"), 2);
    CHECK_STR_CONTAINS(g_out, "unknown option '--confg' (did you mean '--config'?)");
    CHECK_EQ(run("--eval_only --config configs/smoke.yaml"), 2);
    CHECK_STR_CONTAINS(g_out, "did you mean '--eval-only'?");
    CHECK_EQ(run("--frobnicate"), 2);
    CHECK(strstr(g_out, "did you mean") == NULL);
}

TEST(rough_momentum_with_adam_is_named_as_unused) {
    CHECK_EQ(run("--config configs/smoke.yaml --set optimizer.name=adam --dry-run"), 0);
    CHECK_STR_CONTAINS(g_out, "note: momentum 0.5 is not used by adam");
    CHECK_EQ(run("--config configs/smoke.yaml --dry-run"), 0); /* SGD uses it: no note */
    CHECK(strstr(g_out, "note:") == NULL);
}

TEST(rough_missing_data_file_from_set_is_not_blamed_on_the_config) {
    char args[2048];
    snprintf(args, sizeof args, "--config configs/smoke.yaml --set dataset=mnist --set datadir=%s --set train_images=%s/nope.gz "
             "--set output_dir=%s/r", test_tmpdir(), test_tmpdir(), test_tmpdir());
    CHECK(run(args) != 0);
    CHECK_STR_CONTAINS(g_out, "nope.gz: no such file");
    CHECK(strstr(g_out, "in the config") == NULL);
    CHECK_STR_CONTAINS(g_out, "where it is set (the config file or --set)");
}

TEST(rough_finished_training_epoch_is_printed_once_per_epoch) {
    char args[2048];
    snprintf(args, sizeof args, "--config configs/smoke.yaml --set synthetic_train_size=512 --set synthetic_test_size=128 "
             "--set num_epochs=2 --set num_cores=2 --set log_steps=0 --set target_accuracy=0 --set output_dir=%s/r2", test_tmpdir());
    int rc = run(args);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK_EQ(count(g_out, "Finished training epoch 1"), 1);
    CHECK_EQ(count(g_out, "Finished training epoch 2"), 1);
}

/* Below target with several workers: the master worker writes the summary
 * and exits 6; its parent used to write a second one over it, without the
 * master's figures (samples_per_sec 0), and print it as a second last line. */
TEST(rough_below_target_with_two_workers_leaves_one_summary_with_the_masters_figures) {
    char args[2048], path[1200];
    snprintf(args, sizeof args, "--config configs/smoke.yaml --set synthetic_train_size=512 --set synthetic_test_size=128 "
             "--set num_epochs=1 --set num_cores=2 --set log_steps=0 --set target_accuracy=99.99 --set output_dir=%s/b",
             test_tmpdir());
    CHECK_EQ(run(args), 6);
    CHECK_EQ(count(g_out, "{\"status\":\"below_target\""), 1);
    snprintf(path, sizeof path, "cat %s/b/results.json", test_tmpdir());
    CHECK_EQ(test_run(path, g_out, sizeof g_out), 0);
    CHECK_STR_CONTAINS(g_out, "\"status\":\"below_target\"");
    const char *sps = strstr(g_out, "\"samples_per_sec\":");
    CHECK_MSG(sps && atof(sps + strlen("\"samples_per_sec\":")) > 0, "results.json: %s", g_out);
}

TEST(rough_metrics_jsonl_step_counts_within_the_epoch_as_stdout_does) {
    char args[2048];
    /* 512 images, batch 128: 4 steps per epoch */
    snprintf(args, sizeof args, "--config configs/smoke.yaml --set synthetic_train_size=512 --set synthetic_test_size=128 "
             "--set num_epochs=2 --set num_cores=1 --set log_steps=2 --set target_accuracy=0 --set output_dir=%s/m", test_tmpdir());
    int rc = run(args);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK_EQ(count(g_out, "[xla:0](4) Loss="), 2); /* step 4 of epoch 1 and of epoch 2 */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cat %s/m/metrics.jsonl", test_tmpdir());
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
    CHECK_STR_CONTAINS(g_out, "\"epoch\":1,\"step\":4,\"global_step\":4,");
    CHECK_STR_CONTAINS(g_out, "\"epoch\":2,\"step\":4,\"global_step\":8,");
    CHECK_STR_CONTAINS(g_out, "\"type\":\"epoch\",\"epoch\":2,\"global_step\":8,");
}

/* results.json's final_loss is the last epoch's mean loss, as curves.png and
 * metrics.jsonl's epoch line show it (not the last batch's); target_accuracy
 * is written as configured. */
TEST(rough_final_loss_is_the_epoch_mean_and_target_is_as_configured) {
    char args[2048], cmd[2048];
    snprintf(args, sizeof args, "--config configs/smoke.yaml --set synthetic_train_size=512 --set synthetic_test_size=128 "
             "--set num_epochs=2 --set num_cores=1 --set log_steps=0 --set target_accuracy=0 --set output_dir=%s/f", test_tmpdir());
    int rc = run(args);
    CHECK_MSG(rc == 0, "%s", g_out);
    snprintf(cmd, sizeof cmd, "grep -o '\"final_loss\":[^,]*' %s/f/results.json | cut -d: -f2; "
             "grep '\"type\":\"epoch\",\"epoch\":2' %s/f/metrics.jsonl | grep -o '\"loss\":[^,]*' | cut -d: -f2; "
             "grep -o '\"target_accuracy\":[^,]*' %s/f/results.json", test_tmpdir(), test_tmpdir(), test_tmpdir());
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
    double final_loss = 0, epoch_loss = -1;
    CHECK(sscanf(g_out, "%lf\n%lf", &final_loss, &epoch_loss) == 2);
    CHECK_NEAR(final_loss, epoch_loss, 1e-5 * epoch_loss);
    CHECK_STR_CONTAINS(g_out, "\"target_accuracy\":0");
}

/* --eval-only loads no training data: its banner says what it evaluates,
 * not "(0 train / N test samples)". */
TEST(rough_eval_only_banner_names_what_it_evaluates) {
    char args[2048];
    snprintf(args, sizeof args, "--config configs/smoke.yaml --set synthetic_train_size=512 --set synthetic_test_size=128 "
             "--set num_epochs=1 --set log_steps=0 --set target_accuracy=0 --set output_dir=%s/e", test_tmpdir());
    CHECK_EQ(run(args), 0);
    snprintf(args + strlen(args), sizeof args - strlen(args), " --eval-only");
    CHECK_EQ(run(args), 0);
    CHECK_STR_CONTAINS(g_out, "evaluating");
    CHECK_STR_CONTAINS(g_out, "(128 test samples)");
    CHECK(strstr(g_out, "0 train") == NULL);
}

/* With 2 workers the learning rate is scaled by the world size (as
 * torch_xla's script does: lr * xm.xrt_world_size()); results.json gives the
 * configured rate and the one the optimizer used. */
TEST(rough_results_give_the_effective_learning_rate) {
    char args[2048], cmd[2048];
    snprintf(args, sizeof args, "--config configs/smoke.yaml --set synthetic_train_size=512 --set synthetic_test_size=128 "
             "--set num_epochs=1 --set num_cores=2 --set learning_rate=0.01 --set log_steps=0 --set target_accuracy=0 "
             "--set output_dir=%s/lr", test_tmpdir());
    CHECK_EQ(run(args), 0);
    snprintf(cmd, sizeof cmd, "cat %s/lr/results.json", test_tmpdir());
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
    CHECK_STR_CONTAINS(g_out, "\"learning_rate\":0.01,");
    CHECK_STR_CONTAINS(g_out, "\"effective_learning_rate\":0.02,");
}

/* The man page's description of the smoke run says as many epochs as
 * configs/smoke.yaml runs. */
TEST(rough_man_page_smoke_run_matches_its_config) {
    CHECK_EQ(test_run("grep -c '^num_epochs: 3$' configs/smoke.yaml", g_out, sizeof g_out), 0);
    CHECK_EQ(test_run("grep -c 'A three.*epoch run on synthetic data' man/xlatrain.1", g_out, sizeof g_out), 0);
}

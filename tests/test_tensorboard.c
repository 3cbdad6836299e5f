/* test_tensorboard.c — the TensorBoard event files a run writes (run/tb.c,
 * io/tfevents.c), decoded by an independent reader: tests/tb/event.proto
 * compiled by Debian's protoc, parsed by python3-protobuf, every CRC checked
 * with python3-crcmod, the images decoded with python3-pil, and every value
 * compared with metrics.jsonl and confusion.json (tests/tb/check_events.py).
 * Also where the files go: logdir auto, a logdir of one's own, "" for none,
 * --logdir, a resumed run's second file, --overwrite, and a sweep's runs.
 * Skips, with the reason, only where protoc or a python package is missing
 * (.ci/run installs them). */
#include <string.h>

#include "test.h"

static char g_out[1 << 16];

#define CFG                                                                                         \
    "dataset: synthetic\nsynthetic_train_size: %d\nsynthetic_test_size: 96\nnum_epochs: 2\n"        \
    "batch_size: 32\nlearning_rate: 0.05\nmomentum: 0.5\nlog_steps: 2\ntarget_accuracy: 0\n"        \
    "model: models/fashion_cnn.yaml\n"

static const char *config(void) {
    char text[1024];
    snprintf(text, sizeof text, CFG, test_sanitized() ? 256 : 640);
    return test_write_file("tb.yaml", text);
}

/* The independent reader, or a skip saying what is missing. */
static void need_reader(void) {
    if (test_run("protoc --version >/dev/null 2>&1", NULL, 0) != 0)
        test_skip("Debian's protobuf-compiler (protoc) is not installed: the event files are not decoded (.ci/run installs it)");
    if (test_run("/usr/bin/python3 -c 'import google.protobuf, crcmod, PIL' 2>/dev/null", NULL, 0) != 0)
        test_skip("Debian's python3-protobuf, python3-crcmod or python3-pil is not installed: the event files are not decoded (.ci/run installs them)");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/pb && protoc -I tests/tb --python_out=%s/pb tests/tb/event.proto", test_tmpdir(), test_tmpdir());
    int rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "protoc: %s", g_out);
}

static void check_events(const char *logdir, const char *run, int world, int resumed) {
    char cmd[3072];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/tb/check_events.py %s/pb %s %s %d%s", test_tmpdir(), logdir, run, world,
             resumed ? " --resumed" : "");
    int rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK_STR_CONTAINS(g_out, "RESULT files=");
}

static int count_event_files(const char *dir) {
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "ls %s 2>/dev/null | grep -c '^events\\.out\\.tfevents\\.'", dir);
    test_run(cmd, g_out, sizeof g_out);
    return atoi(g_out);
}

TEST(tensorboard_two_workers_one_file_equal_to_the_metrics) {
    const char *d = test_tmpdir(), *cfg = config();
    char cmd[4096], run[1024], tb[1100];
    snprintf(run, sizeof run, "%s/run", d);
    snprintf(tb, sizeof tb, "%s/tb", run);
    snprintf(cmd, sizeof cmd, "%s --config %s --set num_cores=2 --set output_dir=%s", test_bin(), cfg, run);
    int rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK_EQ(count_event_files(tb), 1); /* the master alone writes */
    need_reader();
    check_events(tb, run, 2, 0);
}

TEST(tensorboard_resume_appends_a_file_and_continues_the_steps) {
    const char *d = test_tmpdir(), *cfg = config();
    char cmd[4096], run[1024], tb[1100];
    snprintf(run, sizeof run, "%s/run", d);
    snprintf(tb, sizeof tb, "%s/tb", run);
    snprintf(cmd, sizeof cmd, "%s --config %s --set num_cores=1 --set output_dir=%s && %s --config %s --set num_cores=1 "
             "--set output_dir=%s --set num_epochs=3 --resume latest", test_bin(), cfg, run, test_bin(), cfg, run);
    int rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK_EQ(count_event_files(tb), 2);
    need_reader();
    check_events(tb, run, 1, 1);
}

TEST(tensorboard_logdir_choices) {
    const char *d = test_tmpdir(), *cfg = config();
    char cmd[4096], dir[1100];
    /* "" writes none */
    snprintf(cmd, sizeof cmd, "%s --config %s --set num_cores=1 --set num_epochs=1 --set output_dir=%s/off --set logdir=", test_bin(), cfg, d);
    CHECK_MSG(test_run(cmd, g_out, sizeof g_out) == 0, "%s", g_out);
    snprintf(cmd, sizeof cmd, "test ! -e %s/off/tb", d);
    CHECK_EQ(test_run(cmd, NULL, 0), 0);
    /* --logdir DIR is the key, recorded in config.yaml */
    snprintf(cmd, sizeof cmd, "%s --config %s --set num_cores=1 --set num_epochs=1 --set output_dir=%s/own --logdir %s/mine", test_bin(), cfg, d, d);
    CHECK_MSG(test_run(cmd, g_out, sizeof g_out) == 0, "%s", g_out);
    snprintf(dir, sizeof dir, "%s/mine", d);
    CHECK_EQ(count_event_files(dir), 1);
    snprintf(cmd, sizeof cmd, "grep -x 'logdir: %s/mine' %s/own/config.yaml", d, d);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
    /* --overwrite starts the default logdir afresh */
    snprintf(cmd, sizeof cmd, "%s --config %s --set num_cores=1 --set num_epochs=1 --set output_dir=%s/ow && "
             "%s --config %s --set num_cores=1 --set num_epochs=1 --set output_dir=%s/ow --overwrite", test_bin(), cfg, d, test_bin(), cfg, d);
    CHECK_MSG(test_run(cmd, g_out, sizeof g_out) == 0, "%s", g_out);
    snprintf(dir, sizeof dir, "%s/ow/tb", d);
    CHECK_EQ(count_event_files(dir), 1);
}

TEST(tensorboard_sweep_runs_get_their_own_directories) {
    const char *d = test_tmpdir(), *cfg = config();
    char cmd[4096], dir[1200];
    /* a logdir of one's own: one subdirectory per run, named as the run's directory */
    snprintf(cmd, sizeof cmd, "%s --config %s --set num_cores=1 --set num_epochs=1 --set output_dir=%s/sw --logdir %s/tbs "
             "--sweep seed=1,2", test_bin(), cfg, d, d);
    CHECK_MSG(test_run(cmd, g_out, sizeof g_out) == 0, "%s", g_out);
    snprintf(dir, sizeof dir, "%s/tbs/1-seed=1", d);
    CHECK_EQ(count_event_files(dir), 1);
    snprintf(dir, sizeof dir, "%s/tbs/2-seed=2", d);
    CHECK_EQ(count_event_files(dir), 1);
    /* auto: each run's own <run>/tb, so tensorboard --logdir on the sweep shows both */
    snprintf(cmd, sizeof cmd, "%s --config %s --set num_cores=1 --set num_epochs=1 --set output_dir=%s/sa --sweep seed=1,2",
             test_bin(), cfg, d);
    CHECK_MSG(test_run(cmd, g_out, sizeof g_out) == 0, "%s", g_out);
    snprintf(dir, sizeof dir, "%s/sa/1-seed=1/tb", d);
    CHECK_EQ(count_event_files(dir), 1);
    snprintf(dir, sizeof dir, "%s/sa/2-seed=2/tb", d);
    CHECK_EQ(count_event_files(dir), 1);
}

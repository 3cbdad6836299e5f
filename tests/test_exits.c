/* test_exits.c — issue #56 through the binary, as a sweep script or a CI job
 * meets it: a run that cannot train is an error before any directory is
 * claimed, every JSON line parses, writers never destroy what they are
 * pointed at, directories and --resume mean what users think, one
 * evaluation graph, and the small exits. Small synthetic sets keep each run
 * short. */
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/safetensors.h"
#include "synth_idx.h"
#include "test.h"

#define SMOKE "--config configs/smoke.yaml --set target_accuracy=0"
#define SMALL SMOKE " --set synthetic_train_size=512 --set synthetic_test_size=256 --set num_epochs=1"

static char g_out[1 << 16];

static int exists(const char *fmt, const char *a) {
    char path[1024];
    snprintf(path, sizeof path, fmt, a);
    struct stat st;
    return lstat(path, &st) == 0;
}

/* <dir>/img.idx: 20 MNIST-shaped images to --predict. */
static void test_write_synth_idx_in(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/img.idx", dir);
    test_write_synth_idx(path, 20);
}

/* Every line of a JSONL text parses (jansson refuses NaN and Infinity). */
static int all_lines_parse(const char *text, int *nlines) {
    char *copy = strdup(text), *save = NULL;
    int ok = 1;
    *nlines = 0;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_error_t err;
        json_t *j = json_loads(line, 0, &err);
        if (!j) {
            fprintf(stderr, "    not JSON (%s): %s\n", err.text, line);
            ok = 0;
        }
        json_decref(j);
        ++*nlines;
    }
    free(copy);
    return ok;
}

/* Item 1: zero steps per epoch is exit 2, naming the numbers, and no
 * directory is claimed (so the corrected run can take it). */
TEST(exits_zero_step_run_refused_before_claim) {
    const char *d = test_tmpdir();
    int rc = test_xl(g_out, sizeof g_out, "$XL " SMOKE " --set batch_size=10000 --set output_dir=%s/a", d);
    CHECK_EQ(rc, 2);
    CHECK_STR_CONTAINS(g_out, "no training step would run: 4000 training samples over 1 worker");
    CHECK_STR_CONTAINS(g_out, "lower batch_size to at most 4000");
    CHECK(!exists("%s/a", d));
    /* two workers, a 100-image subset: 50 per worker, batch 128 */
    rc = test_xl(g_out, sizeof g_out, "$XL " SMOKE " --set num_cores=2 --set 'train_subset=[0, 100]' --set output_dir=%s/b", d);
    CHECK_EQ(rc, 2);
    CHECK_STR_CONTAINS(g_out, "100 training samples over 2 workers are 50 per worker, fewer than batch_size 128");
    CHECK(!exists("%s/b", d));
    CHECK(!strstr(g_out, "\"status\": \"ok\"") && !strstr(g_out, "\"status\":\"ok\""));
}

/* Item 1: more workers than CPUs is a warning (and the run is refused for
 * its empty shards before any worker forks). */
TEST(exits_num_cores_over_cpus_warns) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu >= 64) test_skip("this machine has 64 CPUs or more");
    int rc = test_xl(g_out, sizeof g_out, "$XL " SMOKE " --set num_cores=64 --set synthetic_train_size=8000 --set output_dir=%s/a",
                     test_tmpdir());
    CHECK_EQ(rc, 2);
    CHECK_STR_CONTAINS(g_out, "warning: num_cores 64 is more than the");
    CHECK_STR_CONTAINS(g_out, "125 per worker, fewer than batch_size 128");
}

/* Item 1: a non-finite number in metrics.jsonl is null: learning_rate
 * 1e308 scaled by two workers is an infinite lr, logged on the first step
 * before the loss turns NaN. */
TEST(exits_metrics_jsonl_nonfinite_is_null) {
    const char *d = test_tmpdir();
    int rc = test_xl(g_out, sizeof g_out, "$XL " SMALL " --set num_cores=2 --set learning_rate=1e308 --set log_steps=1 --set output_dir=%s/a", d);
    CHECK_MSG(rc != 0, "a diverged run exits non-zero: %s", g_out);
    char path[1024];
    snprintf(path, sizeof path, "%s/a/metrics.jsonl", d);
    const char *m = test_slurp("%s", path);
    int n = 0;
    CHECK(all_lines_parse(m, &n));
    CHECK(n >= 1);
    CHECK_STR_CONTAINS(m, "\"lr\":null");
    json_error_t err;
    snprintf(path, sizeof path, "%s/a/results.json", d);
    json_t *res = json_load_file(path, 0, &err);
    CHECK_MSG(res != NULL, "results.json parses: %s", err.text);
    json_decref(res);
}

/* ---- item 3: writers never destroy what they are pointed at ---------------- */

/* A one-epoch run in <tmpdir>/run (its checkpoint: checkpoint-epoch001). */
/* <tmpdir>/run: a SMALL run, trained once for every test that asks (in the
 * runner's shared directory, by the first one) and copied for each, so that
 * what one test does to its copy cannot reach another's. */
static const char *trained_run(void) {
    const char *d = test_tmpdir();
    int rc = test_xl(g_out, sizeof g_out, "S=%s/exits-run; grep -qs '\"status\":\"ok\"' $S/results.json || { rm -rf $S; $XL " SMALL
                     " --set output_dir=$S || exit; }; cp -a $S %s/run", test_shared_dir(), d);
    CHECK_MSG(rc == 0, "training the run to export: %s", g_out);
    if (rc) test_skip("no run to export");
    return d;
}

TEST(exits_output_that_is_not_a_regular_file_is_refused) {
    const char *d = trained_run();
    test_write_file("target.pt", "keep me");
    /* a symbolic link (as /dev/stdout is), a FIFO: refused, left as they are */
    CHECK_EQ(test_xl(g_out, sizeof g_out, "cd %s && ln -s target.pt link.pt && mkfifo fifo.csv", d), 0);
    int rc = test_xl(g_out, sizeof g_out, "cd %s && $XL --export run --output link.pt", d);
    CHECK_EQ(rc, 5);
    CHECK_STR_CONTAINS(g_out, "link.pt: it is a symbolic link, and xlatrain replaces only regular files");
    CHECK_EQ(test_xl(g_out, sizeof g_out, "cd %s && test -L link.pt && cat target.pt", d), 0);
    CHECK_STR_CONTAINS(g_out, "keep me");
    test_write_synth_idx_in(d);
    rc = test_xl(g_out, sizeof g_out, "D=%s; $XL " SMALL " --set output_dir=$D/run --predict $D/img.idx --output $D/fifo.csv", d);
    CHECK_EQ(rc, 5);
    CHECK_STR_CONTAINS(g_out, "fifo.csv: it is a FIFO");
    CHECK_EQ(test_xl(g_out, sizeof g_out, "test -p %s/fifo.csv", d), 0);
}

TEST(exits_output_dash_writes_standard_output) {
    const char *d = trained_run();
    int rc = test_xl(g_out, sizeof g_out, "cd %s && $XL --export run --output - 2>/dev/null | wc -c", d);
    CHECK_EQ(rc, 0);
    CHECK(strtol(g_out, NULL, 10) > 1000);
    CHECK(!exists("%s/-", d));
    test_write_synth_idx_in(d);
    rc = test_xl(g_out, sizeof g_out, "D=%s; $XL " SMALL " --set output_dir=$D/run --predict $D/img.idx --output - 2>/dev/null | head -1", d);
    CHECK_EQ(rc, 0);
    CHECK_STR_CONTAINS(g_out, "index,predicted");
    CHECK(!exists("%s/-", d));
}

/* exporting a checkpoint over itself would make it weights only: --resume
 * then fails */
TEST(exits_output_that_is_the_input_is_refused) {
    const char *d = trained_run();
    int rc = test_xl(g_out, sizeof g_out, "cd %s && cp run/checkpoint-epoch001.safetensors copy && "
                                          "$XL --export run/checkpoint-epoch001.safetensors --output ./run/../run/checkpoint-epoch001.safetensors", d);
    CHECK_EQ(rc, 2);
    CHECK_STR_CONTAINS(g_out, "is the checkpoint being exported");
    CHECK_EQ(test_xl(g_out, sizeof g_out, "cd %s && cmp copy run/checkpoint-epoch001.safetensors", d), 0);
    /* and --predict's CSV over its own input */
    test_write_synth_idx_in(d);
    rc = test_xl(g_out, sizeof g_out, "D=%s; cp $D/img.idx $D/img.copy; $XL " SMALL " --set output_dir=$D/run --predict $D/img.idx --output $D/img.idx; r=$?; cmp $D/img.idx $D/img.copy && exit $r", d);
    CHECK_EQ(rc, 2);
    CHECK_STR_CONTAINS(g_out, "is the --predict input");
}

/* an export killed mid-write (here by the file size limit: SIGXFSZ) leaves
 * no temporary file */
TEST(exits_killed_export_leaves_no_temporary_file) {
    const char *d = trained_run();
    int rc = test_xl(g_out, sizeof g_out, "cd %s && mkdir out && (ulimit -f 40; exec $XL --export run --output out/w.pt); ls -A out", d);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK_MSG(strstr(g_out, "w.pt") == NULL, "left behind: %s", g_out);
    rc = test_xl(g_out, sizeof g_out, "cd %s && (ulimit -f 40; exec $XL --export run --output out/w.safetensors); ls -A out", d);
    CHECK_MSG(strstr(g_out, "w.safetensors") == NULL, "left behind: %s", g_out);
}

/* a shape whose strides overflow int64 (numel 0, so the safetensors reader
 * takes it) is refused, not written with wrapped strides */
TEST(exits_export_refuses_a_shape_whose_strides_overflow) {
    const char *d = test_tmpdir();
    char path[1024];
    snprintf(path, sizeof path, "%s/odd.safetensors", d);
    float w = 1;
    xt_st_tensor t[2] = {{"fc.weight", XT_ST_F32, 1, {1}, &w, 0},
                         {"odd.weight", XT_ST_F32, 3, {0, (int64_t)1 << 62, (int64_t)1 << 62}, NULL, 0}};
    xt_err e = {0};
    CHECK_EQ(xt_st_write(path, t, 2, NULL, 0, &e), 0);
    int rc = test_xl(g_out, sizeof g_out, "cd %s && $XL --export odd.safetensors --output odd.pt", d);
    CHECK_EQ(rc, 5);
    CHECK_STR_CONTAINS(g_out, "tensor 'odd.weight' has a shape whose strides or size do not fit in 64 bits");
    CHECK(!exists("%s/odd.pt", d));
}

/* ---- item 5: directories and resume mean what users think ------------------ */

/* missing data claims nothing: the corrected run takes the directory */
TEST(exits_refused_run_leaves_the_directory_free) {
    const char *d = test_tmpdir();
    int rc = test_xl(g_out, sizeof g_out, "$XL " SMALL " --set dataset=mnist --set datadir=%s/nodata --set output_dir=%s/a", d, d);
    CHECK_EQ(rc, 3);
    CHECK(!exists("%s/a", d));
    rc = test_xl(g_out, sizeof g_out, "$XL " SMALL " --set output_dir=%s/a", d);
    CHECK_MSG(rc == 0, "the corrected run: %s", g_out);
}

/* without output_dir, --resume latest takes the config's newest run */
TEST(exits_resume_latest_takes_the_newest_default_run) {
    const char *d = test_tmpdir();
    char repo[1024];
    CHECK(getcwd(repo, sizeof repo) != NULL);
    const char *opts = "--set target_accuracy=0 --set synthetic_train_size=512 --set synthetic_test_size=256";
    int rc = test_xl(g_out, sizeof g_out, "cd %s && $XL --config %s/configs/smoke.yaml %s --set num_epochs=1 && sleep 0.05 && "
                     "$XL --config %s/configs/smoke.yaml %s --set num_epochs=1", d, repo, opts, repo, opts);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK(exists("%s/runs/smoke-2/checkpoint-epoch001.safetensors", d));
    rc = test_xl(g_out, sizeof g_out, "cd %s && $XL --config %s/configs/smoke.yaml %s --set num_epochs=2 --resume latest", d, repo, opts);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK_STR_CONTAINS(g_out, "runs/smoke-2 is the newest of this config's 2 runs");
    CHECK(exists("%s/runs/smoke-2/checkpoint-epoch002.safetensors", d));
    CHECK(!exists("%s/runs/smoke/checkpoint-epoch002.safetensors", d));
}

#define TINY_SWEEP SMALL " --set log_steps=0"

/* a finished sweep run again is named as a sweep, with --sweep-resume */
TEST(exits_rerun_of_a_finished_sweep_names_sweep_resume) {
    const char *d = test_tmpdir();
    int rc = test_xl(g_out, sizeof g_out, "$XL " TINY_SWEEP " --set output_dir=%s/s --sweep seed=1,2 >/dev/null 2>&1; echo $?", d);
    CHECK_EQ(rc, 0);
    CHECK_EQ(atoi(g_out), 0);
    rc = test_xl(g_out, sizeof g_out, "$XL " TINY_SWEEP " --set output_dir=%s/s --sweep seed=1,2", d);
    CHECK_EQ(rc, 2);
    CHECK_STR_CONTAINS(g_out, "holds a sweep (summary.csv)");
    CHECK_STR_CONTAINS(g_out, "--sweep-resume");
    CHECK(!strstr(g_out, "--overwrite"));
}

/* --sweep-resume with another grid is refused, and summary.csv keeps its rows */
TEST(exits_sweep_resume_with_another_grid_is_refused) {
    const char *d = test_tmpdir();
    int rc = test_xl(g_out, sizeof g_out, "$XL " TINY_SWEEP " --set output_dir=%s/s --sweep seed=1,2 >/dev/null 2>&1", d);
    CHECK_EQ(rc, 0);
    char before[4096];
    snprintf(before, sizeof before, "%s", test_slurp("%s/s/summary.csv", d));
    rc = test_xl(g_out, sizeof g_out, "$XL " TINY_SWEEP " --set output_dir=%s/s --sweep seed=3,4 --sweep-resume", d);
    CHECK_EQ(rc, 2);
    CHECK_STR_CONTAINS(g_out, "holds a sweep over another grid (its run ");
    CHECK_STR_CONTAINS(g_out, " is not this grid's)");
    CHECK_STR_EQ(test_slurp("%s/s/summary.csv", d), before);
    /* the same grid extended keeps its runs and adds the new one */
    rc = test_xl(g_out, sizeof g_out, "$XL " TINY_SWEEP " --set output_dir=%s/s --sweep seed=1,2,3 --sweep-resume 2>&1", d);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK(exists("%s/s/3-seed=3", d));
    CHECK_EQ(test_xl(g_out, sizeof g_out, "tail -n +2 %s/s/summary.csv | wc -l", d), 0);
    CHECK_EQ(atoi(g_out), 3);
}

/* ---- item 6: one evaluation graph for any test-set size --------------------- */

/* A number after "key": in a JSON text (NaN when absent). */
static double json_num(const char *text, const char *key) {
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    const json_t *v = j ? json_object_get(j, key) : NULL;
    double x = json_is_number(v) ? json_number_value(v) : NAN;
    json_decref(j);
    return x;
}

/* 256 test images in batches of 1000 were chunks of 250 + 6: two graphs.
 * Padded, the 6 compile nothing new, and count as 6: the accuracy and the
 * test loss are those of an unpadded evaluation (test_batch_size 256). */
TEST(exits_eval_compiles_once_whatever_the_test_set_size) {
    const char *d = test_tmpdir();
    const char *mon = "--set early_stopping.monitor=test_loss --set early_stopping.patience=5";
    int rc = test_xl(g_out, sizeof g_out, "$XL " SMALL " %s --max-compiles 2 --set output_dir=%s/a", mon, d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    rc = test_xl(g_out, sizeof g_out, "$XL " SMALL " %s --set test_batch_size=256 --set output_dir=%s/b", mon, d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    const char *a = test_slurp("%s/a/results.json", d), *b = test_slurp("%s/b/results.json", d);
    CHECK(json_num(a, "final_accuracy") == json_num(b, "final_accuracy"));
    CHECK(!isnan(json_num(a, "final_accuracy")));
    json_error_t err;
    json_t *ja = json_loads(a, 0, &err), *jb = json_loads(b, 0, &err);
    double la = json_number_value(json_object_get(json_object_get(ja, "best"), "value"));
    double lb = json_number_value(json_object_get(json_object_get(jb, "best"), "value"));
    CHECK_NEAR(la, lb, 1e-4 * fabs(lb));
    CHECK(lb > 0);
    json_decref(ja);
    json_decref(jb);
    /* and with three workers, shards of 86 */
    rc = test_xl(g_out, sizeof g_out, "$XL " SMALL " --set num_cores=3 --set batch_size=32 --max-compiles 2 --set output_dir=%s/c", d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
}

/* a warm-up longer than the run (a shortened CI run) is a note, not exit 2 */
TEST(exits_warmup_longer_than_the_run_is_a_warning) {
    int rc = test_xl(g_out, sizeof g_out, "$XL " SMALL " --set schedule.warmup_epochs=3 --set output_dir=%s/a", test_tmpdir());
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "note: schedule.warmup_epochs (3) is not less than num_epochs (1): the schedule never finishes warming up");
}

/* ---- item 8: the small ones -------------------------------------------------- */

/* the four files given by path need no datadir */
TEST(exits_four_data_files_need_no_datadir) {
    const char *d = test_tmpdir();
    char dir[600];
    snprintf(dir, sizeof dir, "%s/data", d);
    test_write_idx_set(dir, 256, 64, 0);
    int rc = test_xl(g_out, sizeof g_out, "D=%s/data; $XL " SMALL " --set dataset=mnist --set batch_size=32 --set train_images=$D/train-images-idx3-ubyte "
                     "--set train_labels=$D/train-labels-idx1-ubyte --set test_images=$D/t10k-images-idx3-ubyte "
                     "--set test_labels=$D/t10k-labels-idx1-ubyte --set output_dir=%s/a", d, d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
}

/* the Adam note names a key that exists */
TEST(exits_adam_momentum_note_names_optimizer_betas) {
    int rc = test_xl(g_out, sizeof g_out, "$XL " SMALL " --set optimizer.name=adam --set momentum=0.9 --dry-run");
    CHECK_EQ(rc, 0);
    CHECK_STR_CONTAINS(g_out, "uses the first of optimizer.betas (0.9) instead");
    CHECK(!strstr(g_out, "optimizer.beta1"));
}

/* ---- item 4: a summary on every ending, including the early ones ------------- */

/* SIGTERM while a large synthetic set is made (before the first step): the
 * handlers are in place, so it is an interrupt (130) with nothing claimed,
 * or, had the directory been claimed already, with its results.json. */
/* sh: wait (at most 20 s) until process $p catches SIGTERM (bit 15 of
 * SigCgt, the low 16 bits being the last 4 hex digits), so the signal sent
 * next meets xlatrain's handler and not the dynamic loader's default */
#define WAIT_SIGTERM_CAUGHT \
    "i=0; while [ $i -lt 2000 ]; do c=$(awk '/^SigCgt/{print substr($2,13,4)}' /proc/$p/status 2>/dev/null); " \
    "[ $((0x${c:-0} & 0x4000)) -ne 0 ] && break; i=$((i+1)); sleep 0.01; done; "

/* The signal as soon as the process catches it: main installs the handlers
 * before it reads the config, so it lands before the run starts, whatever
 * the machine's load (it once slept 0.4 s and got 143 from a slow start). */
TEST(exits_sigterm_before_the_first_step_is_an_interrupt) {
    const char *d = test_tmpdir();
    int rc = test_xl(g_out, sizeof g_out, "$XL " SMALL " --set output_dir=%s/a > %s/log 2>&1 & p=$!; "
                     WAIT_SIGTERM_CAUGHT "kill -TERM $p; wait $p; echo rc=$?; cat %s/log", d, d, d);
    CHECK_EQ(rc, 0);
    CHECK_STR_CONTAINS(g_out, "rc=130");
    CHECK_STR_CONTAINS(g_out, "interrupted by SIGTERM before the run started: nothing was trained or written");
    CHECK(!strstr(g_out, "run directory"));
    CHECK(!exists("%s/a", d));
}

/* strace delivers the SIGTERM exactly when the binary opens FILE (inject=
 * ...:signal=, strace(1)), so the moment is the same on every run. Under
 * make asan, LeakSanitizer cannot run under ptrace: the leak check of this
 * ending is exits_sigterm_before_the_first_step_is_an_interrupt's. */
#define SIGTERM_AT_OPEN_OF "ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 strace -f -qq -o /dev/null -e trace=openat -e inject=openat:signal=TERM:when=1 -P "

/* The two moments of the interrupt before the first step, made
 * deterministic: while the config file is opened (before, the handlers
 * were installed after the config was parsed, and this was the default
 * death, 143) nothing is claimed or written; at the lock, just after the
 * claim, the run ends interrupted with its summary and no checkpoint or
 * temporary file. */
TEST(exits_sigterm_while_the_config_is_read_or_the_directory_claimed_is_an_interrupt) {
    if (test_run("command -v strace", NULL, 0) != 0) test_skip("no strace on PATH (apt-get install strace)");
    const char *d = test_tmpdir();
    int rc = test_xl(g_out, sizeof g_out, SIGTERM_AT_OPEN_OF "configs/smoke.yaml $XL " SMALL " --set output_dir=%s/a", d);
    CHECK_MSG(rc == 130, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "interrupted by SIGTERM before the run started: nothing was trained or written");
    CHECK(!exists("%s/a", d));
    rc = test_xl(g_out, sizeof g_out, SIGTERM_AT_OPEN_OF "%s/b/xlatrain.lock $XL " SMALL " --set output_dir=%s/b; echo rc=$?; ls -a %s/b", d, d, d);
    CHECK_STR_CONTAINS(g_out, "rc=130");
    CHECK_STR_CONTAINS(g_out, "interrupted by SIGTERM before the first step: nothing was trained");
    CHECK_STR_CONTAINS(test_slurp("%s/b/results.json", d), "\"status\":\"interrupted\"");
    CHECK(!strstr(g_out, ".safetensors"));
    CHECK(!strstr(g_out, ".tmp."));
}

/* ---- item 7: grad_clip_norm and label_smoothing through the binary ---------- */

/* The keys train (their numbers against PyTorch: test_golden_steps.c),
 * config.yaml records them, and --resume treats them as the trajectory. */
TEST(exits_grad_clip_norm_and_label_smoothing_train_and_are_recorded) {
    const char *d = test_tmpdir();
    int rc = test_xl(g_out, sizeof g_out, "$XL " SMALL " --set output_dir=%s/a && $XL " SMALL
                     " --set grad_clip_norm=0.05 --set label_smoothing=0.1 --set output_dir=%s/b", d, d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    double la = json_num(test_slurp("%s/a/results.json", d), "final_loss");
    double lb = json_num(test_slurp("%s/b/results.json", d), "final_loss");
    CHECK_MSG(isfinite(la) && isfinite(lb) && la != lb, "final_loss %g and %g", la, lb);
    const char *cfg = test_slurp("%s/b/config.yaml", d);
    CHECK_STR_CONTAINS(cfg, "grad_clip_norm: 0.05");
    CHECK_STR_CONTAINS(cfg, "label_smoothing: 0.1");
    rc = test_xl(g_out, sizeof g_out, "$XL " SMALL " --set num_epochs=2 --set grad_clip_norm=1 --set label_smoothing=0.1 --set output_dir=%s/b --resume latest", d);
    CHECK_EQ(rc, 2);
    CHECK_STR_CONTAINS(g_out, "grad_clip_norm: 0.05 -> 1");
    rc = test_xl(g_out, sizeof g_out, "$XL " SMALL " --set label_smoothing=1 --dry-run");
    CHECK_EQ(rc, 2);
}

TEST(exits_export_of_a_missing_run_exits_3) {
    int rc = test_xl(g_out, sizeof g_out, "cd %s && $XL --export nothere --output x.pt", test_tmpdir());
    CHECK_EQ(rc, 3);
    CHECK_STR_CONTAINS(g_out, "--export nothere: cannot read it");
}

TEST(exits_export_into_a_missing_directory_says_so) {
    const char *d = trained_run();
    int rc = test_xl(g_out, sizeof g_out, "cd %s && $XL --export run --output missing/dir/x.pt", d);
    CHECK_EQ(rc, 5);
    CHECK_STR_CONTAINS(g_out, "cannot write missing/dir/x.pt: No such file or directory; create the directory first");
    CHECK(!strstr(g_out, "temporary file"));
}

TEST(exits_export_name_must_choose_the_format) {
    const char *d = trained_run();
    int rc = test_xl(g_out, sizeof g_out, "cd %s && $XL --export run --output x.npz", d);
    CHECK_EQ(rc, 2);
    CHECK_STR_CONTAINS(g_out, "--output x.npz: the name chooses the format");
    CHECK(!exists("%s/x.npz", d));
}

TEST(exits_bash_completion_after_sweep_offers_keys) {
    int rc = test_xl(g_out, sizeof g_out, "export XL; bash -c 'source <($XL --bash-completion); COMP_WORDS=(xlatrain --sweep learn); COMP_CWORD=2; "
                                          "_xlatrain; echo \"${COMPREPLY[@]}\"'");
    CHECK_EQ(rc, 0);
    CHECK_STR_CONTAINS(g_out, "learning_rate=");
    CHECK(!strstr(g_out, "--"));
}

TEST(exits_help_exit_0_names_early_stopped) {
    CHECK_EQ(test_xl(g_out, sizeof g_out, "$XL --help | grep -A1 '^  0 '"), 0);
    CHECK_STR_CONTAINS(g_out, "[early_stopped]");
}

TEST(exits_eval_only_with_two_workers_prints_the_global_accuracy) {
    const char *d = test_tmpdir();
    int rc = test_xl(g_out, sizeof g_out, "$XL " SMALL " --set num_cores=2 --set batch_size=64 --set output_dir=%s/a >/dev/null 2>&1 && "
                     "$XL " SMALL " --set num_cores=2 --set batch_size=64 --set output_dir=%s/a --eval-only 2>/dev/null", d, d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "Global accuracy=");
    CHECK_STR_CONTAINS(g_out, "/256 over 2 replicas)");
}

/* an interrupt mid-epoch still measures the steps it trained */
TEST(exits_interrupted_run_reports_its_rate) {
    const char *d = test_tmpdir();
    int rc = test_xl(g_out, sizeof g_out, "$XL " SMOKE " --set synthetic_train_size=20000 --set num_epochs=1 --set log_steps=1 --set output_dir=%s/a > %s/log 2>&1 & p=$!; "
                     "for i in $(seq 300); do grep -q '(5) Loss' %s/log 2>/dev/null && break; sleep 0.05; done; kill -TERM $p; wait $p; echo rc=$?",
                     d, d, d);
    CHECK_EQ(rc, 0);
    CHECK_STR_CONTAINS(g_out, "rc=130");
    double sps = json_num(test_slurp("%s/a/results.json", d), "samples_per_sec");
    CHECK_MSG(sps > 0, "samples_per_sec %g", sps);
}

/* a worker that dies after a checkpoint: exit 4 says where to go on from */
TEST(exits_dead_worker_names_resume_latest) {
    const char *d = test_tmpdir();
    int rc = test_xl(g_out, sizeof g_out, "$XL " SMOKE " --set num_cores=2 --set synthetic_train_size=4000 --set num_epochs=50 --set batch_size=32 "
                     "--set output_dir=%s/a > %s/log 2>&1 & p=$!; "
                     "for i in $(seq 600); do ls %s/a/checkpoint-epoch001.safetensors >/dev/null 2>&1 && break; sleep 0.05; done; "
                     "kill -KILL $(pgrep -P $p | head -1); wait $p; echo rc=$?; cat %s/log", d, d, d, d);
    CHECK_EQ(rc, 0);
    CHECK_STR_CONTAINS(g_out, "rc=4");
    CHECK_STR_CONTAINS(g_out, "the newest checkpoint is");
    CHECK_STR_CONTAINS(g_out, "(continue with --resume latest --set output_dir=");
}

/* the lock of a training run whose PID is gone (its workers still ending)
 * is not blamed on --eval-only or --predict */
TEST(exits_lock_of_a_training_run_is_named_as_one) {
    const char *d = test_tmpdir();
    int rc = test_xl(g_out, sizeof g_out, "mkdir -p %s/a && echo 999999 > %s/a/xlatrain.lock && "
                     "flock -x %s/a/xlatrain.lock sleep 3 & sleep 0.3; $XL " SMALL " --set output_dir=%s/a; echo rc=$?", d, d, d, d);
    CHECK_EQ(rc, 0);
    CHECK_STR_CONTAINS(g_out, "rc=2");
    CHECK_STR_CONTAINS(g_out, "is in use by another xlatrain training run");
    CHECK(!strstr(g_out, "--eval-only or --predict)"));
}

/* --eval-only writes eval.json: a read-only directory is refused first */
TEST(exits_eval_only_into_a_read_only_directory_is_refused_first) {
    const char *d = trained_run();
    const char *as = "";
    if (geteuid() == 0) {
        if (access("/usr/bin/setpriv", X_OK) != 0) test_skip("running as root and no setpriv to drop privileges");
        as = "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups ";
        CHECK_EQ(test_xl(g_out, sizeof g_out, "chmod -R a+rX %s", d), 0);
    }
    char dir[600];
    snprintf(dir, sizeof dir, "%s/run", d);
    CHECK(chmod(dir, 0555) == 0);
    int rc = test_xl(g_out, sizeof g_out, "%s$XL " SMALL " --set output_dir=%s --eval-only", as, dir);
    chmod(dir, 0777);
    CHECK_MSG(rc == 5, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "Permission denied");
    CHECK(!strstr(g_out, "Accuracy="));
}

/* the README's sweep and CI recipes write ci/ and runs/ in a clone */
TEST(exits_recipe_output_directories_are_ignored_by_git) {
    if (test_run("git rev-parse --git-dir >/dev/null 2>&1", NULL, 0) != 0) test_skip("not in a git checkout");
    CHECK_EQ(test_run("git check-ignore -q ci/summary.csv && git check-ignore -q runs/smoke/results.json", g_out, sizeof g_out), 0);
}

TEST(exits_a_number_too_large_for_a_double_is_named_so) {
    int rc = test_xl(g_out, sizeof g_out, "$XL " SMALL " --set learning_rate=1e400 --dry-run");
    CHECK_EQ(rc, 2);
    CHECK_STR_CONTAINS(g_out, "'1e400' is not a finite number");
    CHECK(!strstr(g_out, "must be > 0"));
}

TEST(exits_a_layer_spec_given_as_the_config_is_named_so) {
    int rc = test_xl(g_out, sizeof g_out, "$XL --config models/lenet5.yaml --dry-run");
    CHECK_EQ(rc, 2);
    CHECK_STR_CONTAINS(g_out, "this file is a layer spec, not a FLAGS file: give it to a config as 'model: <this file>'");
}

TEST(exits_a_model_for_other_images_names_the_ones_that_fit) {
    int rc = test_xl(g_out, sizeof g_out, "$XL " SMALL " --set model=resnet20 --dry-run");
    CHECK_EQ(rc, 2);
    CHECK_STR_CONTAINS(g_out, "model: resnet8_mnist");
    CHECK_STR_CONTAINS(g_out, "dataset: synthetic_cifar10");
    CHECK(!strstr(g_out, "set input:"));
}

/* a labels file beside the --predict images that cannot be the label
 * column is said, not dropped silently */
TEST(exits_predict_says_why_a_label_column_is_missing) {
    const char *d = trained_run();
    char path[1024];
    snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte", d);
    test_write_synth_idx(path, 20);
    /* 5 labels for 20 images */
    CHECK_EQ(test_xl(g_out, sizeof g_out, "printf '\\0\\0\\10\\1\\0\\0\\0\\5\\1\\2\\3\\4\\5' > %s/t10k-labels-idx1-ubyte", d), 0);
    int rc = test_xl(g_out, sizeof g_out, "D=%s; $XL " SMALL " --set output_dir=$D/run --predict $D/t10k-images-idx3-ubyte --output $D/p.csv", d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "note: no label column:");
    CHECK_STR_CONTAINS(g_out, "has 5 labels for 20 images");
}

/* item 4: mpirun's exit status is not the run's; --help says what to read */
TEST(exits_help_tells_scripts_to_read_results_json_under_mpirun) {
    CHECK_EQ(test_xl(g_out, sizeof g_out, "$XL --help"), 0);
    CHECK_STR_CONTAINS(g_out, "mpirun's\nown exit status is not the run's");
    CHECK_STR_CONTAINS(g_out, "scripts read results.json's status and exit_code");
}

/* --predict with a checkpoint named needs no --config: the checkpoint
 * records it, and the CSV goes beside the checkpoint */
TEST(exits_predict_with_a_checkpoint_needs_no_config) {
    const char *d = trained_run();
    test_write_synth_idx_in(d);
    int rc = test_xl(g_out, sizeof g_out, "D=%s; $XL --predict $D/img.idx --resume $D/run/checkpoint-epoch001.safetensors", d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "using the config");
    CHECK_STR_CONTAINS(test_slurp("%s/run/predictions.csv", d), "index,predicted,p0");
    rc = test_xl(g_out, sizeof g_out, "D=%s; $XL --predict $D/img.idx", d);
    CHECK_EQ(rc, 2);
    CHECK_STR_CONTAINS(g_out, "missing --config FILE (or --resume CHECKPOINT");
}

/* a .gz of several members (files gzipped in parts and concatenated) is
 * read as gzip -d reads it, not reported as truncated */
TEST(exits_concatenated_gzip_members_are_read_whole) {
    const char *d = test_tmpdir();
    char dir[600];
    snprintf(dir, sizeof dir, "%s/data", d);
    test_write_idx_set(dir, 256, 64, 0);
    int rc = test_xl(g_out, sizeof g_out, "cd %s/data && for f in *-ubyte; do head -c 1000 $f | gzip > a && tail -c +1001 $f | gzip > b && "
                     "cat a b > $f.gz && rm $f a b || exit 1; done", d);
    CHECK_EQ(rc, 0);
    rc = test_xl(g_out, sizeof g_out, "$XL " SMALL " --set dataset=mnist --set batch_size=32 --set datadir=%s/data --set output_dir=%s/a", d, d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    CHECK(!strstr(g_out, "truncated"));
    /* bytes after the last member that are no member are still refused */
    rc = test_xl(g_out, sizeof g_out, "printf 'xyz' >> %s/data/t10k-labels-idx1-ubyte.gz && $XL " SMALL " --set dataset=mnist --set batch_size=32 "
                 "--set datadir=%s/data --set output_dir=%s/b", d, d, d);
    CHECK_EQ(rc, 3);
    CHECK_STR_CONTAINS(g_out, "3 bytes of garbage after the end of the gzip data");
}

/* test_run_safety.c — runs that sweeps and CI can trust, driven through the
 * real binary as a sweep script drives it: one run per output directory
 * (reuse refused, --overwrite, the default runs/<name>-N), the lock, the
 * recorded config (config.yaml and --dry-run read back), a summary on every
 * exit, --eval-only leaving results.json alone, the resume guard, and exit
 * codes for unreadable inputs, and a stop that an unread stdout cannot hold
 * up. Small synthetic sets keep each run short. */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/ckptdir.h"
#include "test.h"

#define SMALL "--config configs/smoke.yaml --set synthetic_train_size=1024 --set synthetic_test_size=256 --set log_steps=4 --set num_epochs=1 --set target_accuracy=0"
/* long enough to be caught running: a few seconds per epoch */
#define LONG "--config configs/smoke.yaml --set synthetic_train_size=20000 --set synthetic_test_size=256 --set log_steps=1 --set num_epochs=50 --set target_accuracy=0"

static char g_out[1 << 16];

/* Run a shell command built from fmt; "$XL" in it stands for the binary. */
#define sh(...) test_xl(g_out, sizeof g_out, __VA_ARGS__)
/* The whole of a small file ("" when missing). */
#define slurp test_slurp

/* The text after `"key":` in a JSON object, up to the next ',' or '}'. */
static const char *field(const char *json, const char *key, char *out, size_t cap) {
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(json, pat);
    out[0] = 0;
    if (!p) return out;
    p += strlen(pat);
    size_t n = strcspn(p, ",}");
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
    return out;
}

/* ---- 1. one run per directory --------------------------------------------- */

TEST(run_safety_reuse_refused_and_first_run_untouched) {
    const char *d = test_tmpdir();
    CHECK_EQ(sh("$XL " SMALL " --set output_dir=%s/a > /dev/null 2>&1", d), 0);
    CHECK_EQ(sh("cd %s/a && find . -type f | sort | xargs md5sum > ../before", d), 0);
    int rc = sh("$XL " SMALL " --set seed=2 --set output_dir=%s/a 2>&1", d);
    CHECK_EQ(rc, 2);
    CHECK_STR_CONTAINS(g_out, "/a already holds a run");
    CHECK_STR_CONTAINS(g_out, "--resume latest");
    CHECK_STR_CONTAINS(g_out, "--overwrite");
    CHECK_EQ(sh("cd %s/a && find . -type f | sort | xargs md5sum > ../after && cmp ../before ../after", d), 0);
}

TEST(run_safety_overwrite_removes_every_file_of_the_old_run_and_nothing_else) {
    const char *d = test_tmpdir();
    CHECK_EQ(sh("$XL " SMALL " --set num_epochs=2 --set output_dir=%s/a > /dev/null 2>&1", d), 0);
    CHECK_EQ(sh("echo mine > %s/a/notes.txt && touch %s/a/checkpoint-epoch009.safetensors.tmp.123", d, d), 0);
    CHECK_EQ(sh("$XL " SMALL " --set output_dir=%s/a --overwrite > /dev/null 2>&1", d), 0);
    CHECK_EQ(sh("ls %s/a | tr '\\n' ' '", d), 0);
    CHECK(strstr(g_out, "checkpoint-epoch002") == NULL);
    CHECK(strstr(g_out, ".tmp.") == NULL);
    CHECK_STR_CONTAINS(g_out, "notes.txt");
    CHECK_STR_CONTAINS(g_out, "checkpoint-epoch001.safetensors");
    CHECK_EQ(sh("grep -c '\"type\":\"epoch\"' %s/a/metrics.jsonl", d), 0);
    CHECK_STR_CONTAINS(g_out, "1\n");
    CHECK(!strcmp(slurp("%s/a/notes.txt", d), "mine\n"));
}

TEST(run_safety_default_output_dir_never_reuses_a_run) {
    const char *d = test_tmpdir();
    char root[PATH_MAX];
    CHECK(getcwd(root, sizeof root) != NULL);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(sh("cd %s && $XL --config %s/configs/smoke.yaml --set model=%s/models/fashion_cnn.yaml "
                    "--set synthetic_train_size=512 --set num_epochs=1 --set target_accuracy=0 > out%d 2> err%d",
                    d, root, root, i, i), 0);
    CHECK_STR_CONTAINS(slurp("%s/err0", d), "run directory runs/smoke\n");
    CHECK_STR_CONTAINS(slurp("%s/err1", d), "run directory runs/smoke-2\n");
    CHECK_STR_CONTAINS(slurp("%s/runs/smoke-2/results.json", d), "\"output_dir\":\"runs/smoke-2\"");
    CHECK_STR_CONTAINS(slurp("%s/runs/smoke/results.json", d), "\"output_dir\":\"runs/smoke\"");
}

/* ---- 2. the lock ------------------------------------------------------------ */

/* A two-worker run holds the directory; a second run, --resume, --overwrite
 * and --eval-only into it are each refused at once, naming the PID. */
TEST(run_safety_busy_directory_refused_without_waiting) {
    const char *d = test_tmpdir();
    sh("$XL " LONG " --set num_cores=2 --set output_dir=%s/a > %s/log 2>&1 & echo $! > %s/pid; "
       "for i in $(seq 400); do grep -q 'Loss=' %s/log 2>/dev/null && break; sleep 0.05; done",
       d, d, d, d);
    const char *pid = slurp("%s/pid", d);
    long holder = strtol(pid, NULL, 10);
    char want[64];
    snprintf(want, sizeof want, "PID %ld", holder);
    static const char *const extra[] = {"", "--resume latest", "--overwrite", "--eval-only"};
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++) {
        /* Refused while the holder still runs: a claim that waited on the
         * lock could only return once the holder had ended. (No wall-clock
         * bound: on a loaded machine an ASan start alone can take a second.) */
        int rc = sh("timeout 60 $XL " SMALL " --set output_dir=%s/a %s 2>&1; rc=$?; "
                    "kill -0 %ld 2>/dev/null && echo holder-alive; exit $rc", d, extra[i], holder);
        CHECK_MSG(rc == 2, "'%s' exit %d: %s", extra[i], rc, g_out);
        if (i < 3) CHECK_STR_CONTAINS(g_out, want);
        CHECK_STR_CONTAINS(g_out, "is in use by");
        CHECK_MSG(strstr(g_out, "holder-alive") != NULL, "'%s' returned only after the holder ended", extra[i]);
    }
    sh("kill -TERM %ld; wait; sleep 0.5", strtol(pid, NULL, 10));
    /* the first run still owns what it wrote: its log only has its own lines */
    CHECK_EQ(sh("grep -c '\"type\":\"step\"' %s/a/metrics.jsonl", d), 0);
    CHECK(strstr(slurp("%s/log", d), "already holds") == NULL);
}

/* The lock dies with its holder: after a SIGKILL (no checkpoint yet) the
 * directory can be claimed again at once. */
TEST(run_safety_lock_released_when_the_holder_dies) {
    const char *d = test_tmpdir();
    sh("$XL " LONG " --set output_dir=%s/a > %s/log 2>&1 & p=$!; "
       "for i in $(seq 400); do grep -q '(5) Loss' %s/log 2>/dev/null && break; sleep 0.05; done; "
       "kill -KILL $p; wait $p", d, d, d);
    int rc = sh("$XL " SMALL " --set output_dir=%s/a --overwrite 2>&1", d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
}

/* ---- 3. the run records itself ------------------------------------------------ */

TEST(run_safety_config_yaml_reproduces_the_run) {
    const char *d = test_tmpdir();
    CHECK_EQ(sh("$XL " SMALL " --set learning_rate=0.07 --set seed=3 --set output_dir=%s/a > %s/out 2>&1", d, d), 0);
    const char *cfg = slurp("%s/a/config.yaml", d);
    CHECK_STR_CONTAINS(cfg, "# command: ");
    CHECK_STR_CONTAINS(cfg, "--set learning_rate=0.07 --set seed=3");
    CHECK_STR_CONTAINS(cfg, "# xlatrain 0.1.0, 20");
    CHECK_STR_CONTAINS(cfg, "learning_rate: 0.07\n");
    CHECK_STR_CONTAINS(cfg, "seed: 3\n");
    CHECK_EQ(sh("$XL --config %s/a/config.yaml --set output_dir=%s/b > /dev/null 2>&1", d, d), 0);
    const char *ra = slurp("%s/a/results.json", d), *rb = slurp("%s/b/results.json", d);
    char fa[64], fb[64];
    CHECK_MSG(!strcmp(field(ra, "final_loss", fa, sizeof fa), field(rb, "final_loss", fb, sizeof fb)), "%s vs %s", fa, fb);
    CHECK(!strcmp(field(ra, "best_accuracy", fa, sizeof fa), field(rb, "best_accuracy", fb, sizeof fb)));
    CHECK(!strcmp(field(ra, "seed", fa, sizeof fa), "3"));
    CHECK(!strcmp(field(ra, "learning_rate", fa, sizeof fa), "0.07"));
    CHECK(!strcmp(field(ra, "momentum", fa, sizeof fa), "0.5"));
    CHECK(!strcmp(field(ra, "optimizer", fa, sizeof fa), "\"sgd\""));
    CHECK(!strcmp(field(ra, "version", fa, sizeof fa), "\"0.1.0\""));
}

TEST(run_safety_dry_run_output_reads_back) {
    const char *d = test_tmpdir();
    CHECK_EQ(sh("$XL --config configs/smoke.yaml --set batch_size=64 --set optimizer.name=adam --dry-run > %s/r.yaml 2> %s/err", d, d), 0);
    CHECK_STR_CONTAINS(slurp("%s/err", d), "Total params");
    CHECK_EQ(sh("$XL --config %s/r.yaml --dry-run > %s/r2.yaml 2> /dev/null", d, d), 0);
    CHECK_EQ(sh("grep -v '^#' %s/r.yaml > %s/a && grep -v '^#' %s/r2.yaml > %s/b && cmp %s/a %s/b", d, d, d, d, d, d), 0);
    CHECK_EQ(sh("$XL --config %s/r.yaml --set synthetic_train_size=512 --set num_epochs=1 --set target_accuracy=0 "
                "--set output_dir=%s/run > %s/out 2>&1", d, d, d), 0);
    CHECK_STR_CONTAINS(slurp("%s/run/results.json", d), "\"batch_size\":64");
}

/* ---- 4. a summary on every exit -------------------------------------------- */

/* The last stdout line is results.json's object, with status and exit code. */
static void check_summary(const char *d, const char *run, const char *status, int code) {
    char want[64], got[64];
    CHECK_EQ(sh("tail -n 1 %s/stdout | cmp - %s/%s/results.json", d, d, run), 0);
    const char *r = slurp("%s/%s/results.json", d, run);
    snprintf(want, sizeof want, "\"%s\"", status);
    CHECK_MSG(!strcmp(field(r, "status", got, sizeof got), want), "status %s, want %s", got, want);
    CHECK_EQ(atoi(field(r, "exit_code", got, sizeof got)), code);
    CHECK_EQ(sh("python3 -c 'import json,sys; json.load(open(sys.argv[1]))' %s/%s/results.json", d, run), 0);
}

TEST(run_safety_diverged_run_leaves_a_summary) {
    const char *d = test_tmpdir();
    for (int cores = 1; cores <= 2; cores++) {
        char run[16];
        snprintf(run, sizeof run, "c%d", cores);
        int rc = sh("$XL " SMALL " --set learning_rate=1000 --set num_cores=%d --set output_dir=%s/%s > %s/stdout 2> %s/stderr",
                    cores, d, run, d, d);
        CHECK_EQ(rc, 4);
        check_summary(d, run, "diverged", 4);
        CHECK_STR_CONTAINS(slurp("%s/%s/results.json", d, run), "loss is NaN");
    }
}

TEST(run_safety_sigterm_run_leaves_a_summary_with_what_was_learned) {
    const char *d = test_tmpdir();
    int rc = sh("$XL " LONG " --set synthetic_train_size=2000 --set output_dir=%s/a > %s/stdout 2> %s/stderr & p=$!; "
                "for i in $(seq 400); do grep -q '\"type\":\"epoch\",\"epoch\":2' %s/a/metrics.jsonl 2>/dev/null && break; sleep 0.05; done; "
                "kill -TERM $p; wait $p", d, d, d, d);
    CHECK_EQ(rc, 130);
    check_summary(d, "a", "interrupted", 130);
    const char *r = slurp("%s/a/results.json", d);
    char v[64];
    CHECK(strcmp(field(r, "best_accuracy", v, sizeof v), "null"));
    CHECK_STR_CONTAINS(field(r, "last_checkpoint", v, sizeof v), "checkpoint-epoch");
}

TEST(run_safety_eval_only_leaves_results_json_unchanged) {
    const char *d = test_tmpdir();
    CHECK_EQ(sh("$XL " SMALL " --set output_dir=%s/a > /dev/null 2>&1", d), 0);
    CHECK_EQ(sh("cd %s/a && md5sum results.json metrics.jsonl curves.png predictions.png > ../before", d), 0);
    CHECK_EQ(sh("$XL " SMALL " --set output_dir=%s/a --eval-only > %s/stdout 2>&1", d, d), 0);
    CHECK_EQ(sh("cd %s/a && md5sum -c ../before", d), 0);
    CHECK_EQ(sh("tail -n 1 %s/stdout | cmp - %s/a/eval.json", d, d), 0);
    CHECK_STR_CONTAINS(slurp("%s/a/eval.json", d), "\"status\":\"ok\"");
    char png[700];
    snprintf(png, sizeof png, "%s/a/eval-predictions.png", d);
    CHECK_EQ(access(png, F_OK), 0);
    /* --resume of a finished run trains nothing and leaves its results.json and config.yaml too */
    CHECK_EQ(sh("cd %s/a && md5sum config.yaml >> ../before", d), 0);
    CHECK_EQ(sh("$XL " SMALL " --set output_dir=%s/a --resume latest > %s/stdout 2>&1", d, d), 0);
    CHECK_EQ(sh("cd %s/a && md5sum -c ../before", d), 0);
    CHECK_EQ(sh("tail -n 1 %s/stdout | cmp - %s/a/results.json", d, d), 0);
}

/* ---- 5. resume guard ------------------------------------------------------------ */

TEST(run_safety_resume_with_a_changed_batch_size_exits_2) {
    const char *d = test_tmpdir();
    CHECK_EQ(sh("$XL " SMALL " --set output_dir=%s/a > /dev/null 2>&1", d), 0);
    /* the lock file names the last run that held the directory; all else stays */
    CHECK_EQ(sh("cd %s/a && find . -type f ! -name xlatrain.lock | sort | xargs md5sum > ../before", d), 0);
    int rc = sh("$XL " SMALL " --set num_epochs=2 --set batch_size=64 --set seed=5 --set output_dir=%s/a --resume latest 2>&1", d);
    CHECK_EQ(rc, 2);
    CHECK_STR_CONTAINS(g_out, "batch_size: 128 -> 64");
    CHECK_STR_CONTAINS(g_out, "seed: 1 -> 5");
    CHECK_STR_CONTAINS(g_out, "--allow-config-change");
    CHECK_EQ(sh("cd %s/a && find . -type f ! -name xlatrain.lock | sort | xargs md5sum > ../after && cmp ../before ../after", d), 0);
    /* num_epochs and logging may change freely */
    CHECK_EQ(sh("$XL " SMALL " --set num_epochs=2 --set log_steps=2 --set output_dir=%s/a --resume latest > /dev/null 2>&1", d), 0);
}

/* ---- 7. exit codes ------------------------------------------------------------- */

TEST(run_safety_unreadable_inputs_are_not_the_output_error) {
    const char *d = test_tmpdir();
    CHECK_EQ(sh("$XL " SMALL " --set output_dir=%s/a --resume %s/missing.safetensors 2>&1", d, d), 3);
    CHECK_STR_CONTAINS(g_out, "missing.safetensors");
    CHECK_EQ(sh("$XL " SMALL " --set output_dir=%s/a > /dev/null 2>&1", d), 0);
    CHECK_EQ(sh("$XL " SMALL " --set output_dir=%s/a --predict %s/missing-images-idx3-ubyte 2>&1", d, d), 3);
    CHECK_EQ(sh("$XL --config %s/missing.yaml 2>&1", d), 2);
}

/* ---- 6. honest mid-epoch checkpoints ------------------------------------------- */

/* metrics.jsonl without the wall-clock fields (rate, time), which no two runs
 * share; the test loss stays: every replica evaluates worker 0's batch-norm
 * statistics, the same in a straight and a resumed run (loop.c). */
#define STRIP "sed -e 's/\"rate\":[^,]*,//' -e 's/,\"time\":[^}]*//'"

/* A run interrupted mid-epoch and resumed ends with the same final
 * checkpoint, curves.png and metrics.jsonl as one that ran straight
 * through; its interrupt checkpoint is named by epoch and step. */
static void interrupted_run_matches(int cores) {
    const char *d = test_tmpdir();
    char base[512];
    snprintf(base, sizeof base, "--config configs/smoke.yaml --set synthetic_train_size=%d --set synthetic_test_size=256 "
             "--set log_steps=1 --set num_epochs=2 --set target_accuracy=0 --set num_cores=%d", test_train_size(24000), cores);
    CHECK_EQ(sh("$XL %s --set output_dir=%s/full > /dev/null 2>&1", base, d), 0);
    int rc = sh("$XL %s --set output_dir=%s/part > %s/log 2>&1 & p=$!; "
                "for i in $(seq 400); do grep -q '(7) Loss' %s/log 2>/dev/null && break; sleep 0.02; done; "
                "kill -TERM $p; wait $p", base, d, d, d);
    CHECK_MSG(rc == 130, "exit %d: %s", rc, slurp("%s/log", d));
    /* wherever the signal landed (normally epoch 1), the checkpoint is named by its step */
    CHECK_EQ(sh("ls %s/part | grep -c 'checkpoint-epoch00[12]-step[0-9]*.safetensors'", d), 0);
    CHECK_EQ(sh("$XL %s --set output_dir=%s/part --resume latest > /dev/null 2>&1", base, d), 0);
    CHECK_EQ(sh("cmp %s/full/checkpoint-epoch002.safetensors %s/part/checkpoint-epoch002.safetensors", d, d), 0);
    CHECK_EQ(sh("cmp %s/full/curves.png %s/part/curves.png", d, d), 0);
    CHECK_EQ(sh(STRIP " %s/full/metrics.jsonl > %s/m.full && " STRIP " %s/part/metrics.jsonl > %s/m.part && "
                "cmp %s/m.full %s/m.part", d, d, d, d, d, d), 0);
}

TEST(run_safety_mid_epoch_interrupt_and_resume_match_one_core) { interrupted_run_matches(1); }
TEST(run_safety_mid_epoch_interrupt_and_resume_match_two_cores) { interrupted_run_matches(2); }

/* latest is by training position: epoch 4 step 18 comes after the end of
 * epoch 3 and before the end of epoch 4; pruning keeps the newest. */
TEST(run_safety_latest_orders_mid_epoch_checkpoints_by_position) {
    const char *d = test_tmpdir();
    CHECK_EQ(sh("cd %s && touch checkpoint-epoch003.safetensors checkpoint-epoch004-step018.safetensors "
                "checkpoint-epoch004-step002.safetensors checkpoint-epoch002.safetensors", d), 0);
    char path[1024];
    xt_err e = {0};
    CHECK_EQ(xt_st_find_latest(d, path, sizeof path, &e), 0);
    CHECK_STR_CONTAINS(path, "/checkpoint-epoch004-step018.safetensors");
    CHECK_EQ(sh("touch %s/checkpoint-epoch004.safetensors", d), 0);
    CHECK_EQ(xt_st_find_latest(d, path, sizeof path, &e), 0);
    CHECK_STR_CONTAINS(path, "/checkpoint-epoch004.safetensors");
    CHECK_EQ(xt_st_prune_checkpoints(d, 2, 4, &e), 0);
    CHECK_EQ(sh("ls %s | tr '\\n' ' '", d), 0);
    CHECK(!strcmp(g_out, "checkpoint-epoch004-step018.safetensors checkpoint-epoch004.safetensors "));
}

/* A run killed before its first checkpoint (here by the pipe it printed to
 * closing, as `xlatrain ... | head` does) leaves its config.yaml: the next
 * run in that directory is refused (exit 2), and the message says the one
 * thing that works (--overwrite), not --resume, which has nothing to load;
 * --overwrite then trains there. */
TEST(run_killed_before_its_first_checkpoint_is_refused_naming_overwrite) {
    const char *t = test_tmpdir();
    sh("\"$XL\" " LONG " --set output_dir=%s/early | head -n 1 >/dev/null", t);
    CHECK(slurp("%s/early/config.yaml", t)[0] != 0);
    CHECK_EQ(sh("\"$XL\" --config configs/smoke.yaml --set output_dir=%s/early 2>&1", t), 2);
    CHECK_STR_CONTAINS(g_out, "stopped before its first checkpoint; start it again with --overwrite");
    CHECK_EQ(sh("\"$XL\" --config configs/smoke.yaml --set output_dir=%s/early --set num_epochs=1 --set target_accuracy=0 "
                "--overwrite 2>&1", t), 0);
}

/* ---- 6. a stop that an unread stdout cannot hold up ----------------------------
 * The run's stdout is a one-page pipe, or a pty, that nobody reads, as a
 * rank's is once mpirun has been signalled (it stops forwarding output) or
 * a terminal held by Ctrl-S. Once it is full and the run is blocked on it,
 * SIGTERM to the run's own process must still give the interrupt
 * checkpoint, results.json and exit 130 within seconds. With two cores the
 * signal goes to the supervisor only: its workers hear of the stop through
 * shared memory, not through a signal that would interrupt their write. A
 * pty says it has room for less than a line, so a worker whose write waited
 * there would wait for good. On the pty, stderr is the same full terminal:
 * the run's last message must not hold up the exit either. */
static void stop_with_stdout_unread(int cores, int use_pty) {
    const char *d = test_tmpdir();
    if (access(test_bin(), X_OK) != 0) test_skip("the xlatrain binary is not built (make builds it first)");
    char bin[PATH_MAX], cmd[8192];
    if (!realpath(test_bin(), bin)) snprintf(bin, sizeof bin, "%s", test_bin());
    snprintf(cmd, sizeof cmd, "exec %s " LONG " --set num_cores=%d --set progress=false --set output_dir=%s/a%s", bin, cores,
             d, use_pty ? "" : " 2> \"$0\"/stderr");
    int rd, wr; /* the end nobody reads, the run's stdout */
    if (use_pty) {
        rd = posix_openpt(O_RDWR | O_NOCTTY);
        CHECK(rd >= 0 && grantpt(rd) == 0 && unlockpt(rd) == 0);
        wr = open(ptsname(rd), O_RDWR | O_NOCTTY);
        CHECK(wr >= 0);
    } else {
        int pfd[2];
        CHECK_EQ(pipe(pfd), 0);
        rd = pfd[0];
        wr = pfd[1];
        CHECK(fcntl(wr, F_SETPIPE_SZ, 4096) >= 4096); /* full after ~60 lines */
    }
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0); /* its own group, so a failure below can kill its workers too */
        dup2(wr, STDOUT_FILENO);
        if (use_pty) dup2(wr, STDERR_FILENO);
        close(rd);
        close(wr);
        execl("/bin/sh", "sh", "-c", cmd, d, (char *)NULL);
        _exit(127);
    }
    close(wr);
    /* blocked: the unread end holds more than the banner lines (so training
     * has started, and with it the signal handlers) and has not changed for
     * 0.5 s (one line per step). On the pty the banner shares it: under ASan
     * the banner alone once sat unchanged for 0.5 s of setup, and SIGTERM came
     * before the handlers were installed. */
    int last = -1, still = 0;
    for (int i = 0; i < 1200 && still < 10; i++) {
        usleep(50000);
        int n = 0;
        ioctl(rd, FIONREAD, &n);
        still = n > 1024 && n == last ? still + 1 : 0;
        last = n;
    }
    CHECK_MSG(still >= 10, "the run never filled its stdout: %s", slurp("%s/stderr", d));
    CHECK(kill(pid, SIGTERM) == 0);
    int status = 0, waited = 0;
    for (; waited < 300 && waitpid(pid, &status, WNOHANG) == 0; waited++) usleep(100000);
    if (waited == 300) { /* held up: end it, and fail */
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
        test_fail_at(__FILE__, __LINE__, "the run did not stop within 30 s of SIGTERM while its stdout was full");
    }
    /* what the run wrote at the end, when stderr is the pty: read it now */
    char tail[1 << 16];
    size_t got = 0;
    if (use_pty) {
        fcntl(rd, F_SETFL, O_NONBLOCK);
        for (ssize_t k; got < sizeof tail - 1 && (k = read(rd, tail + got, sizeof tail - 1 - got)) > 0;) got += (size_t)k;
    }
    tail[got] = 0;
    close(rd);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status 0x%x: %s", status, use_pty ? tail : slurp("%s/stderr", d));
    const char *r = slurp("%s/a/results.json", d);
    char v[64];
    CHECK_STR_CONTAINS(field(r, "status", v, sizeof v), "interrupted");
    CHECK_STR_CONTAINS(field(r, "last_checkpoint", v, sizeof v), "checkpoint-epoch");
    if (!use_pty) { /* on the pty, the note itself may find no room */
        CHECK_STR_CONTAINS(slurp("%s/stderr", d), "[xla:0]");
        CHECK_STR_CONTAINS(slurp("%s/stderr", d), "of output dropped while stopping: stdout had no room");
    }
}

TEST(run_stops_with_its_checkpoint_while_stdout_is_unread_one_core) { stop_with_stdout_unread(1, 0); }
TEST(run_stops_with_its_checkpoint_while_stdout_is_unread_two_cores) { stop_with_stdout_unread(2, 0); }
TEST(run_stops_with_its_checkpoint_while_its_terminal_is_unread_one_core) { stop_with_stdout_unread(1, 1); }
TEST(run_stops_with_its_checkpoint_while_its_terminal_is_unread_two_cores) { stop_with_stdout_unread(2, 1); }

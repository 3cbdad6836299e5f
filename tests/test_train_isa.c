/* test_train_isa.c — the ISA cap through the real binary: XLATRAIN_ISA or the
 * config's isa (the environment wins, and the log says so), named on the
 * log's first lines and in results.json, a bad value a one-line usage error
 * (exit 2) before anything is written, and a capped run that trains as the
 * uncapped one does (not to the bit: the methods differ between levels, so
 * the sums run in another order). Not here: the cap inside the kernels and
 * the engine (test_kernels_misc.c, test_engine_tiling.c). */
#include <jansson.h>
#include <string.h>
#include <unistd.h>

#include "kernels/simd.h"
#include "test.h"

/* make test-isa's own cap is not passed on: each command sets its own */
#define XL "env -u XLATRAIN_ISA "
#define SMALL "--config configs/smoke.yaml --set synthetic_train_size=1024 --set synthetic_test_size=256 --set log_steps=4 " \
              "--set target_accuracy=0 --set num_epochs=1"
#define LEARN "--config configs/smoke.yaml --set synthetic_train_size=1024 --set synthetic_test_size=256 " \
              "--set target_accuracy=0 --set num_epochs=2"

static char g_out[1 << 16];

/* A field of <dir>/results.json: its string in str (cap bytes, "" when not
 * one), its number returned (NAN when not one). */
static double result_field(const char *dir, const char *key, char *str, size_t cap) {
    char path[600];
    snprintf(path, sizeof path, "%s/results.json", dir);
    char *text = test_read_file(path, NULL);
    json_t *root = text ? json_loads(text, 0, NULL) : NULL, *v = json_object_get(root, key);
    if (str) snprintf(str, cap, "%s", json_is_string(v) ? json_string_value(v) : "");
    double num = json_is_number(v) ? json_number_value(v) : NAN;
    json_decref(root);
    free(text);
    return num;
}

/* Train `args` into <tmp>/<sub> under `env`; it must succeed, its log say
 * `log`, and results.json name `isa`. */
static void run_reports(const char *env, const char *args, const char *sub, const char *log, const char *isa) {
    char dir[600], got[64];
    snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), sub);
    int rc = test_xl(g_out, sizeof g_out, XL "%s $XL %s --set output_dir=%s", env, args, dir);
    CHECK_MSG(rc == 0, "%s: exit %d: %s", sub, rc, g_out);
    CHECK_STR_CONTAINS(g_out, log);
    result_field(dir, "isa", got, sizeof got);
    CHECK_STR_EQ(got, isa);
}

TEST(train_isa_bad_values_are_usage_errors_before_anything_is_written) {
    const char *d = test_tmpdir();
    CHECK_EQ(test_xl(g_out, sizeof g_out, XL "XLATRAIN_ISA=avx3 $XL " SMALL " --set output_dir=%s/a", d), 2);
    CHECK_STR_CONTAINS(g_out, "xlatrain: XLATRAIN_ISA=avx3: expected avx512, avx2, generic or auto; unset it to use the config's isa");
    CHECK_MSG(!strchr(g_out, '\n') || strchr(g_out, '\n') == g_out + strlen(g_out) - 1, "not one line: %s", g_out);
    /* the values are lower case, as the key's */
    CHECK_EQ(test_xl(g_out, sizeof g_out, XL "XLATRAIN_ISA=AVX2 $XL " SMALL " --set output_dir=%s/b", d), 2);
    CHECK_EQ(test_xl(g_out, sizeof g_out, XL "$XL " SMALL " --set isa=sse4 --set output_dir=%s/c", d), 2);
    CHECK_STR_CONTAINS(g_out, "isa: expected one of auto, generic, avx2, avx512, got 'sse4'");
    char p[600];
    for (const char *sub = "abc"; *sub; sub++) {
        snprintf(p, sizeof p, "%s/%c", d, *sub);
        CHECK_MSG(access(p, F_OK) != 0, "%s was created by a refused run", p);
    }
}

TEST(train_isa_cap_is_named_in_the_log_and_results_json) {
    const char *hw = k_simd_name(k_simd_hardware());
    char want[256], dir[600], from[128];
    snprintf(want, sizeof want, "1 core, isa %s (detected), batch", hw);
    run_reports("", SMALL, "default", want, hw);
    snprintf(dir, sizeof dir, "%s/default", test_tmpdir());
    result_field(dir, "isa_from", from, sizeof from);
    CHECK_STR_EQ(from, "detected");

    run_reports("XLATRAIN_ISA=generic", SMALL, "env", "1 core, isa generic (XLATRAIN_ISA=generic), batch", "generic");
    snprintf(dir, sizeof dir, "%s/env", test_tmpdir());
    result_field(dir, "isa_from", from, sizeof from);
    CHECK_STR_EQ(from, "XLATRAIN_ISA=generic");
    run_reports("", SMALL " --set isa=generic", "set", "isa generic (--set)", "generic");

    /* the environment wins over the config, and says so; a cap at or above the CPU changes nothing */
    char args[700];
    snprintf(args, sizeof args, "--config %s",
             test_write_file("isa.yaml", "dataset: synthetic\nmodel: models/mlp.yaml\nisa: avx512\nnum_epochs: 1\n"
                                         "num_cores: 1\nsynthetic_train_size: 256\nsynthetic_test_size: 64\n"));
    run_reports("XLATRAIN_ISA=generic", args, "file", "isa generic (XLATRAIN_ISA=generic, the config's ignored)", "generic");
    if (k_simd_hardware() == K_SIMD_AVX512) snprintf(want, sizeof want, "isa avx512 (config)");
    else snprintf(want, sizeof want, "isa %s (detected; config asks for avx512, above this CPU)", hw);
    run_reports("", args, "above", want, hw);
}

/* At every level below the CPU's the run trains and ends where the uncapped
 * one does, within what another summation order moves (the kernels differ:
 * im2col + OpenBLAS below AVX2, no rows method below AVX-512, no sparse ones below AVX2). */
TEST(train_isa_capped_runs_learn_as_the_uncapped_run) {
    char dir[600], env[64];
    run_reports("", LEARN, "auto", "(detected)", k_simd_name(k_simd_hardware()));
    snprintf(dir, sizeof dir, "%s/auto", test_tmpdir());
    double acc0 = result_field(dir, "final_accuracy", NULL, 0), loss0 = result_field(dir, "final_loss", NULL, 0);
    CHECK_MSG(acc0 > 50, "the uncapped run learned nothing: %g%%", acc0);
    for (int lvl = K_SIMD_GENERIC; lvl < k_simd_hardware(); lvl++) {
        snprintf(env, sizeof env, "XLATRAIN_ISA=%s", k_simd_name(lvl));
        run_reports(env, LEARN, k_simd_name(lvl), env, k_simd_name(lvl));
        snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), k_simd_name(lvl));
        double acc = result_field(dir, "final_accuracy", NULL, 0), loss = result_field(dir, "final_loss", NULL, 0);
        CHECK_MSG(fabs(acc - acc0) <= 2.0, "%s: accuracy %g%% against %g%% uncapped", env, acc, acc0);
        CHECK_MSG(fabs(loss - loss0) <= 0.01 * loss0, "%s: final loss %g against %g uncapped", env, loss, loss0);
    }
}

/* A checkpoint's kernel choices are keyed by the ISA they were made at. A
 * resume at a lower cap does not take them (none of them may name a kernel
 * the cap rules out, as the rows and sparse methods below AVX-512), and its
 * log says so instead of "reused"; the checkpoint it writes records the new
 * ISA, whose choices the next resume at that cap does reuse. */
TEST(train_isa_resume_at_another_isa_says_the_checkpoints_choices_are_not_used) {
    int hw = k_simd_hardware();
    if (hw == K_SIMD_GENERIC) test_skip("the CPU has no level below generic to resume at");
    const char *d = test_tmpdir(), *lower = k_simd_name(hw - 1);
#define TINY "--config configs/smoke.yaml --set synthetic_train_size=256 --set synthetic_test_size=128 --set log_steps=0 --set target_accuracy=0"
    int rc = test_xl(g_out, sizeof g_out, XL "$XL " TINY " --set num_epochs=1 --set output_dir=%s/a", d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    rc = test_xl(g_out, sizeof g_out, XL "XLATRAIN_ISA=%s $XL " TINY " --set num_epochs=2 --set output_dir=%s/a --resume latest --allow-config-change",
                 lower, d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    char want[200];
    snprintf(want, sizeof want, "the checkpoint's choices not used: they were made at %s", k_simd_name(hw));
    CHECK_STR_CONTAINS(g_out, want);
    snprintf(want, sizeof want, "this run is at %s", lower);
    CHECK_STR_CONTAINS(g_out, want);
    CHECK(!strstr(g_out, "choices reused"));
    CHECK_MSG(!strstr(g_out, "(agreed)"), "a choice of the checkpoint was taken:\n%s", g_out);
    CHECK_STR_CONTAINS(g_out, "(timed)"); /* chosen again, at the cap (this test's own choice cache is empty there) */
    /* the rows method runs at AVX-512 only (the sparse passes now run at AVX2 too: #59) */
    if (hw - 1 < K_SIMD_AVX512) CHECK_MSG(!strstr(g_out, "-> fp32-rows"), "%s", g_out);
    rc = test_xl(g_out, sizeof g_out, XL "XLATRAIN_ISA=%s $XL " TINY " --set num_epochs=3 --set output_dir=%s/a --resume latest --allow-config-change",
                 lower, d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "the checkpoint's choices reused;");
    CHECK(!strstr(g_out, "not used"));
#undef TINY
}

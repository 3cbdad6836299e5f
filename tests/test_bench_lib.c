/* test_bench_lib.c — the helpers `make bench` pins its one-worker runs with
 * (tests/bench/lib.sh): which CPU repetition i runs on, and that the command
 * then runs there, or runs unpinned where the system refuses to pin.
 * Is not: a test of the benchmark's figures (make bench prints those). */
#include <stdio.h>
#include <string.h>

#include "test.h"

static char g_out[4096];

/* prints the CPU list of the process that runs it */
#define ALLOWED_CPUS "sed -n \"s/^Cpus_allowed_list:[[:space:]]*//p\" /proc/self/status"

/* Output of `sh -c '. tests/bench/lib.sh; BODY'`, trailing newline cut. */
static const char *lib_sh(const char *body) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "sh -c '. tests/bench/lib.sh; %s'", body);
    int rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "%s exited %d: %s", cmd, rc, g_out);
    size_t n = strlen(g_out);
    while (n && g_out[n - 1] == '\n') g_out[--n] = '\0';
    return g_out;
}

TEST(bench_nth_cpu_walks_a_cpu_list_round_robin) {
    CHECK_STR_EQ(lib_sh("nth_cpu 0-1 0"), "0");
    CHECK_STR_EQ(lib_sh("nth_cpu 0-1 1"), "1");
    CHECK_STR_EQ(lib_sh("nth_cpu 0-1 2"), "0");
    /* ranges and single CPUs mixed, as a cgroup or taskset leaves them */
    CHECK_STR_EQ(lib_sh("echo $(for i in 0 1 2 3 4; do nth_cpu 0,2-3,7 $i; done)"), "0 2 3 7 0");
    CHECK_STR_EQ(lib_sh("nth_cpu 12 5"), "12");
    CHECK_STR_EQ(lib_sh("echo \"[$(nth_cpu \"\" 0)]\""), "[]"); /* nothing to pin to: an empty answer */
}

/* What a process started through `pinned I` may run on: the one CPU cpu_of
 * gives for I where taskset can pin here, else what the caller may. */
TEST(bench_pinned_runs_the_command_on_that_cpu_or_unpinned) {
    char mine[256], want[64], can[8], got[256], body[512];
    snprintf(mine, sizeof mine, "%s", lib_sh(ALLOWED_CPUS));
    for (int i = 0; i < 3; i++) {
        snprintf(body, sizeof body, "cpu_of %d", i);
        snprintf(want, sizeof want, "%s", lib_sh(body));
        CHECK_MSG(want[0] != '\0', "cpu_of %d gave nothing: no Cpus_allowed_list in /proc/self/status?", i);
        snprintf(body, sizeof body, "taskset -c %s true 2>/dev/null && echo yes || echo no", want);
        snprintf(can, sizeof can, "%s", lib_sh(body));
        snprintf(body, sizeof body, "pinned %d " ALLOWED_CPUS, i);
        snprintf(got, sizeof got, "%s", lib_sh(body));
        if (!strcmp(can, "yes")) CHECK_STR_EQ(got, want); /* pinned: that one CPU */
        else CHECK_STR_EQ(got, mine);                      /* refused: runs as the caller does */
    }
}

TEST(bench_on_cpus_pins_one_worker_only) {
    char mine[256];
    snprintf(mine, sizeof mine, "%s", lib_sh(ALLOWED_CPUS));
    /* two workers: the command runs as the caller does, with the repetition index dropped */
    CHECK_STR_EQ(lib_sh("on_cpus 2 1 " ALLOWED_CPUS), mine);
    /* one worker: the repetition index picks the CPU, and is not passed to the command */
    CHECK_STR_EQ(lib_sh("on_cpus 1 0 echo run"), "run");
}

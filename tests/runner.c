/* runner.c — runs every registered TEST in its own forked child.
 *
 * A child exits 0 (pass), 1 (a CHECK failed), 77 (skipped, with a reason) or
 * dies (crash, sanitizer abort, or the per-test alarm) — all but 0 and 77 are
 * failures. Each result line carries the test's wall time, and the slowest
 * tests are listed before the last line, "N passed, N failed, N skipped", so
 * that CI can read the outcome and a slow test is seen before it makes CI slow.
 */
#include "test.h"

#include "kernels/simd.h" /* the ISA cap make test-isa sets */
#include "run/log.h"     /* xt_wall_s */

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TEST_TIMEOUT_S 600
#define SLOWEST_SHOWN 5

typedef struct {
    const char *name, *file;
    test_fn fn;
    double seconds; /* wall time of its child, once run */
} test_case;

/* grown as constructors register tests: no cap to outgrow silently */
static test_case *g_tests;
static int g_ntests, g_cap;
static int g_failures;           /* in the child: CHECK failures so far */
static char g_tmpdir[256];       /* in the child: its scratch dir */
static char g_shared[256];       /* every test's: made before the first, removed after the last */

void test_register(const char *name, const char *file, test_fn fn) {
    if (g_ntests == g_cap) {
        g_cap = g_cap ? 2 * g_cap : 256;
        g_tests = realloc(g_tests, (size_t)g_cap * sizeof *g_tests);
        if (!g_tests) {
            fprintf(stderr, "run_tests: out of memory registering %s\n", name);
            _exit(1);
        }
    }
    g_tests[g_ntests++] = (test_case){name, file, fn, 0};
}

void test_fail_at(const char *file, int line, const char *fmt, ...) {
    if (g_failures++ < 20) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "    %s:%d: ", file, line);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

void test_skip(const char *why) {
    fprintf(stderr, "    skipped: %s\n", why);
    fflush(NULL);
    _exit(77);
}

const char *test_tmpdir(void) {
    if (!g_tmpdir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(g_tmpdir, sizeof g_tmpdir, "%s/xlatrain-test-XXXXXX", base ? base : "/tmp");
        if (!mkdtemp(g_tmpdir)) {
            perror("mkdtemp");
            _exit(1);
        }
    }
    return g_tmpdir;
}

const char *test_shared_dir(void) { return g_shared; }

const char *test_write_file(const char *name, const char *text) {
    static char paths[16][512];
    static int next;
    char *p = paths[next++ % 16];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    FILE *f = fopen(p, "wb");
    if (!f) {
        test_fail_at(__FILE__, __LINE__, "cannot write %s", p);
        return p;
    }
    fputs(text, f);
    fclose(f);
    return p;
}

int test_run(const char *cmd, char *out, size_t cap) {
    char full[8192];
    snprintf(full, sizeof full, "( %s ) 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t n = 0;
    if (out && cap) {
        n = fread(out, 1, cap - 1, p);
        out[n] = 0;
    }
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0) {}
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int test_xl(char *out, size_t cap, const char *fmt, ...) {
    char cmd[8192], full[8192 + PATH_MAX + 16], bin[PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (access(test_bin(), X_OK) != 0) test_skip("the xlatrain binary is not built (make builds it first)");
    if (!realpath(test_bin(), bin)) snprintf(bin, sizeof bin, "%s", test_bin());
    snprintf(full, sizeof full, "XL=%s; %s", bin, cmd);
    return test_run(full, out, cap);
}

const char *test_slurp(const char *fmt, ...) {
    static char buf[4][1 << 16];
    static int which;
    char path[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof path, fmt, ap);
    va_end(ap);
    char *b = buf[which++ % 4];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(b, 1, sizeof buf[0] - 1, f) : 0;
    if (f) fclose(f);
    b[n] = 0;
    return b;
}

char *test_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long len = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
    if (len >= 0 && !fseek(f, 0, SEEK_SET) && (buf = malloc((size_t)len + 1)) &&
        fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (!buf) return NULL;
    buf[len] = 0;
    if (n) *n = (size_t)len;
    return buf;
}

const char *test_bin(void) {
    const char *b = getenv("XLATRAIN_BIN");
    return b && *b ? b : "./xlatrain";
}

int test_sanitized(void) { return getenv("XLATRAIN_SANITIZED") != NULL; }

int test_train_size(int release_size) { return test_sanitized() ? release_size / 4 : release_size; }

static int slower_first(const void *a, const void *b) {
    double sa = g_tests[*(const int *)a].seconds, sb = g_tests[*(const int *)b].seconds;
    return (sa < sb) - (sa > sb);
}

/* "slowest: a 12.0 s, b 3.1 s, ..." over the tests that ran (seconds > 0) */
static void print_slowest(void) {
    int *order = malloc((size_t)g_ntests * sizeof *order), n = 0;
    if (!order) return;
    for (int i = 0; i < g_ntests; i++)
        if (g_tests[i].seconds > 0) order[n++] = i;
    qsort(order, (size_t)n, sizeof *order, slower_first);
    if (n > SLOWEST_SHOWN) n = SLOWEST_SHOWN;
    if (n >= 2) {
        printf("slowest:");
        for (int k = 0; k < n; k++) printf("%s %s %.1f s", k ? "," : "", g_tests[order[k]].name, g_tests[order[k]].seconds);
        printf("\n");
    }
    free(order);
}

static void rm_rf(const char *path) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", path);
}

/* The test is named by one of the patterns (a substring of its name or
 * file), or there are none. */
static int selected(const test_case *t, int npat, char **pat) {
    int any = 0;
    for (int i = 0; i < npat; i++) {
        if (!*pat[i]) continue;
        any = 1;
        if (strstr(t->name, pat[i]) || strstr(t->file, pat[i])) return 1;
    }
    return !any;
}

int main(int argc, char **argv) {
    int passed = 0, failed = 0, skipped = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* make test-isa runs the suite under a cap: a misspelt one would test the CPU's best level instead */
    const char *isa = NULL;
    if (k_isa_env_check(&isa)) {
        fprintf(stderr, "run_tests: XLATRAIN_ISA=%s: expected avx512, avx2, generic or auto\n", isa);
        return 2;
    }
    if (isa && *isa) {
        char why[128];
        int lvl = k_isa_reason(why, sizeof why);
        printf("isa %s (%s)\n", k_simd_name(lvl), why);
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(g_shared, sizeof g_shared, "%s/xlatrain-shared-XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(g_shared)) {
        perror("mkdtemp");
        return 1;
    }
    for (int i = 0; i < g_ntests; i++) {
        test_case *t = &g_tests[i];
        if (!selected(t, argc - 1, argv + 1)) continue;
        /* the scratch dir name is fixed before fork so the parent can clean it */
        char dir[256];
        const char *base = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/xlatrain-test-XXXXXX", base ? base : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            return 1;
        }
        fflush(NULL);
        double start = xt_wall_s();
        pid_t pid = fork();
        if (pid == 0) {
            snprintf(g_tmpdir, sizeof g_tmpdir, "%s", dir);
            /* the kernel choice cache of every run the test starts: its own, so a
             * second run of the test reuses the first's choices, and no test
             * reads or writes the user's ~/.cache */
            char cache[320];
            snprintf(cache, sizeof cache, "%s/kernel-choice-cache", dir);
            setenv("XLATRAIN_CACHE_DIR", cache, 1);
            alarm(TEST_TIMEOUT_S);
            t->fn();
            /* exit(), not _exit(): LeakSanitizer checks for leaks at exit */
            exit(g_failures ? 1 : 0);
        }
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
        t->seconds = xt_wall_s() - start;
        rm_rf(dir);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            passed++;
            printf("PASS %s (%.2f s)\n", t->name, t->seconds);
        } else if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
            skipped++;
            printf("SKIP %s\n", t->name);
        } else {
            failed++;
            if (WIFSIGNALED(st))
                printf("FAIL %s (%s: killed by signal %d%s, %.1f s)\n", t->name, t->file, WTERMSIG(st),
                       WTERMSIG(st) == SIGALRM ? ", timed out" : "", t->seconds);
            else
                printf("FAIL %s (%s, %.1f s)\n", t->name, t->file, t->seconds);
        }
    }
    rm_rf(g_shared);
    print_slowest();
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}

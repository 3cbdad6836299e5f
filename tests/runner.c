/* runner.c — runs every registered TEST in its own forked child.
 *
 * A child exits 0 (pass), 1 (a CHECK failed), 77 (skipped, with a reason) or
 * dies (crash, sanitizer abort, or the per-test alarm) — all but 0 and 77 are
 * failures. The last line is "N passed, N failed, N skipped" so CI can read it.
 */
#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TESTS 1024
#define TEST_TIMEOUT_S 600

typedef struct {
    const char *name, *file;
    test_fn fn;
} test_case;

static test_case g_tests[MAX_TESTS];
static int g_ntests;
static int g_failures;           /* in the child: CHECK failures so far */
static char g_tmpdir[256];       /* in the child: its scratch dir */

void test_register(const char *name, const char *file, test_fn fn) {
    if (g_ntests < MAX_TESTS) g_tests[g_ntests++] = (test_case){name, file, fn};
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

const char *test_bin(void) {
    const char *b = getenv("XLATRAIN_BIN");
    return b && *b ? b : "./xlatrain";
}

static void rm_rf(const char *path) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", path);
}

int main(int argc, char **argv) {
    const char *filter = argc > 1 ? argv[1] : NULL;
    int passed = 0, failed = 0, skipped = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 0; i < g_ntests; i++) {
        test_case *t = &g_tests[i];
        if (filter && *filter && !strstr(t->name, filter) && !strstr(t->file, filter)) continue;
        /* the scratch dir name is fixed before fork so the parent can clean it */
        char dir[256];
        const char *base = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/xlatrain-test-XXXXXX", base ? base : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            return 1;
        }
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            snprintf(g_tmpdir, sizeof g_tmpdir, "%s", dir);
            alarm(TEST_TIMEOUT_S);
            t->fn();
            /* exit(), not _exit(): LeakSanitizer checks for leaks at exit */
            exit(g_failures ? 1 : 0);
        }
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
        rm_rf(dir);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            passed++;
            printf("PASS %s\n", t->name);
        } else if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
            skipped++;
            printf("SKIP %s\n", t->name);
        } else {
            failed++;
            if (WIFSIGNALED(st))
                printf("FAIL %s (%s: killed by signal %d%s)\n", t->name, t->file, WTERMSIG(st),
                       WTERMSIG(st) == SIGALRM ? ", timed out" : "");
            else
                printf("FAIL %s (%s)\n", t->name, t->file);
        }
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}

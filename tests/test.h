/* test.h — the xlatrain test harness (plain C, no framework).
 *
 *   TEST(parse_rejects_unknown_key) { CHECK(x == 1); CHECK_NEAR(a, b, 1e-5); }
 *
 * Tests register themselves at load time; tests/runner.c forks one child per
 * test (a crash fails that test, not the run) and prints the closing line
 * "N passed, N failed, N skipped". `run_tests PATTERN` runs the tests whose
 * name contains PATTERN (`make test T=config`).
 */
#ifndef XT_TEST_H
#define XT_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*test_fn)(void);
void test_register(const char *name, const char *file, test_fn fn);
void test_fail_at(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void test_skip(const char *why) __attribute__((noreturn));

/* A fresh empty directory for this test (removed by the runner afterwards). */
const char *test_tmpdir(void);
/* A directory every test of this run of the runner sees (removed by the
 * runner at its end), for what several tests would otherwise each make the
 * same way, e.g. one trained run they copy and then use as their own. */
const char *test_shared_dir(void);
/* Write `text` to <tmpdir>/<name>; returns the full path (static storage per call slot). */
const char *test_write_file(const char *name, const char *text);
/* Run a shell command, capture stdout+stderr (truncated to cap) and return its exit code. */
int test_run(const char *cmd, char *out, size_t cap);
/* Run a shell command built from fmt as test_run does, with $XL set to the
 * binary under test (skips the test when it is not built). */
int test_xl(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The whole of a small file ("" when missing), in one of four static
 * buffers of 64 KiB. */
const char *test_slurp(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The whole of a file of any size, NUL-terminated, malloc'd (the caller
 * frees it); NULL when it cannot be read. *n (when n is not NULL) gets its
 * size. */
char *test_read_file(const char *path, size_t *n);
/* Path of the xlatrain binary under test ($XLATRAIN_BIN, default ./xlatrain). */
const char *test_bin(void);
/* 1 under make asan (it sets XLATRAIN_SANITIZED), where a training step runs
 * 10-40x slower than in the release build. */
int test_sanitized(void);
/* A synthetic training-set size chosen for the release build's speed (long
 * enough that a signal sent once the run has started lands mid-run): a
 * quarter of it under the sanitizers, which still run it for longer. */
int test_train_size(int release_size);

#define TEST(name)                                                     \
    static void name(void);                                            \
    __attribute__((constructor)) static void test_reg_##name(void) {   \
        test_register(#name, __FILE__, name);                          \
    }                                                                  \
    static void name(void)

#define CHECK(cond)                                                    \
    do {                                                               \
        if (!(cond)) test_fail_at(__FILE__, __LINE__, "CHECK(%s)", #cond); \
    } while (0)

#define CHECK_MSG(cond, ...)                                           \
    do {                                                               \
        if (!(cond)) test_fail_at(__FILE__, __LINE__, __VA_ARGS__);    \
    } while (0)

#define CHECK_EQ(a, b)                                                 \
    do {                                                               \
        long long va_ = (long long)(a), vb_ = (long long)(b);          \
        if (va_ != vb_)                                                \
            test_fail_at(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, va_, vb_); \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                          \
    do {                                                               \
        double va_ = (double)(a), vb_ = (double)(b);                   \
        if (!(fabs(va_ - vb_) <= (tol)))                               \
            test_fail_at(__FILE__, __LINE__, "%s ~= %s: %.9g vs %.9g (tol %g)", #a, #b, va_, vb_, (double)(tol)); \
    } while (0)

#define CHECK_STR_EQ(got, want)                                        \
    do {                                                               \
        const char *g_ = (got), *w_ = (want);                          \
        if (!g_ || strcmp(g_, w_))                                     \
            test_fail_at(__FILE__, __LINE__, "%s: \"%s\", expected \"%s\"", #got, g_ ? g_ : "(null)", w_); \
    } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                \
    do {                                                               \
        const char *h_ = (hay), *n_ = (needle);                        \
        if (!h_ || !strstr(h_, n_))                                    \
            test_fail_at(__FILE__, __LINE__, "expected \"%s\" in: %s", n_, h_ ? h_ : "(null)"); \
    } while (0)

#endif

/* test_layering.c — no two .c files of src/ depend on each other, directly
 * or around a circle (tests/check_circles.sh over the objects of the build
 * this test binary belongs to), and the check itself fails on a circle:
 * small trees compiled here with cc, one per way a file can depend on
 * another (a call, an include).
 *
 * Run from the top of the tree, as make test does (src/ and tests/ are
 * found from the current directory). */
#include <libgen.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

#define SCRIPT "tests/check_circles.sh"

static char out[1 << 16];

/* The directory holding this test binary: build/release, build/asan,
 * build/mpi or build/asan-mpi, where the Makefile puts the objects it is
 * linked from (OBJ_DIR/src/P.o for src/P.c). */
static const char *own_build_dir(void) {
    static char dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n <= 0) return NULL;
    dir[n] = 0;
    return dirname(dir);
}

TEST(layering_src_has_no_circles) {
    const char *obj = own_build_dir();
    CHECK_MSG(obj != NULL, "cannot read /proc/self/exe to find this build's objects");
    CHECK_MSG(access(SCRIPT, R_OK) == 0 && access("src", R_OK) == 0, "run from the top of the tree (no %s, src/)", SCRIPT);
    if (!obj) return;
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "sh %s '%s' src", SCRIPT, obj);
    int rc = test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "%s exited %d:\n%s", cmd, rc, out);
}

typedef struct src_file {
    const char *path; /* under src/ of the test's tree */
    const char *text;
} src_file;

/* Writes the files into a src/ of the test's temp dir, compiles each .c into
 * obj/src/ as the Makefile lays objects out, and runs the check there;
 * returns its exit status (its output in out). */
static int check_tree(const src_file *files, int n) {
    char root[PATH_MAX], path[PATH_MAX + 300], cmd[2 * PATH_MAX + 600];
    const char *tmp = test_tmpdir();
    if (!getcwd(root, sizeof root)) return -1;
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/src/%s", tmp, files[i].path);
        snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
        if (test_run(cmd, out, sizeof out)) return -1;
        FILE *f = fopen(path, "w");
        if (!f) return -1;
        fputs(files[i].text, f);
        fclose(f);
    }
    snprintf(cmd, sizeof cmd,
             "cd '%s' && for c in $(find src -name '*.c'); do mkdir -p \"obj/$(dirname $c)\" && "
             "cc -Isrc -c $c -o \"obj/${c%%.c}.o\" || exit 99; done && sh '%s/%s' obj src",
             tmp, root, SCRIPT);
    return test_run(cmd, out, sizeof out);
}

TEST(layering_check_finds_a_call_circle) {
    /* one.c and two.c call each other; three.c calls into the circle but is not on it */
    const src_file tree[] = {
        {"p/one.c", "int two(void);\nint one(void) { return two() + 1; }\n"},
        {"p/two.c", "int one(void);\nint two(void) { return 2; }\nint twice(void) { return 2 * one(); }\n"},
        {"p/three.c", "int one(void);\nint three(void) { return one() + 2; }\n"},
    };
    CHECK_EQ(check_tree(tree, 3), 1);
    CHECK_STR_CONTAINS(out, "circle of 2 files: src/p/one.c src/p/two.c");
    CHECK_MSG(!strstr(out, "three.c"), "three.c is not on the circle:\n%s", out);
}

TEST(layering_check_finds_an_include_circle) {
    /* a.c uses only b.h's inline code, no symbol of b.c, and b.c calls a.c:
     * the include alone closes the circle, across folders too */
    const src_file tree[] = {
        {"a/a.c", "#include \"b/b.h\"\nint a(void) { return b_twice(1); }\n"},
        {"b/b.h", "static inline int b_twice(int x) { return 2 * x; }\n"},
        {"b/b.c", "int a(void);\nint b(void) { return a(); }\n"},
    };
    CHECK_EQ(check_tree(tree, 3), 1);
    CHECK_STR_CONTAINS(out, "circle of 2 files: src/a/a.c src/b/b.c");
    CHECK_STR_CONTAINS(out, "#include:b/b.h");
}

TEST(layering_check_passes_layers) {
    /* top.c -> mid.c -> low.c by calls and includes, and top.c -> low.c too */
    const src_file tree[] = {
        {"x/low.h", "int low(void);\n"},
        {"x/low.c", "#include \"x/low.h\"\nint low(void) { return 1; }\n"},
        {"x/mid.h", "int mid(void);\n"},
        {"x/mid.c", "#include \"x/low.h\"\n#include \"x/mid.h\"\nint mid(void) { return low() + 1; }\n"},
        {"x/top.c", "#include \"x/low.h\"\n#include \"x/mid.h\"\nint top(void) { return mid() + low(); }\n"},
    };
    int rc = check_tree(tree, 5);
    CHECK_MSG(rc == 0, "exit %d:\n%s", rc, out);
}

TEST(layering_check_fails_without_objects) {
    /* a check that finds nothing to check must not pass */
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "sh %s '%s' src", SCRIPT, test_tmpdir());
    CHECK_EQ(test_run(cmd, out, sizeof out), 2);
    CHECK_STR_CONTAINS(out, "no objects");
}

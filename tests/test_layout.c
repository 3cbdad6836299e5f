/* test_layout.c — the source tree's layering, read from its #include lines.
 *
 * Is: a check that src/ keeps its shape: only main.c at the root; no circle
 * in the module graph (foo.c and foo.h are one module; an edge for every
 * quoted include); no circle in the folder graph (folder A -> folder B when a
 * file in A includes one in B; util/ and same-folder includes ignored); and
 * every quoted include written from src/ (so none is silently unresolved).
 * A header without a .c of its own (engine/internal.h, distributed/
 * shm_layout.h, run/cli.h) is no module: it holds no code to depend on, so
 * its includes count as made by the file that includes it. A failure names
 * the circle, with the include that makes each edge.
 * Is not: a check of which folder may include which (the circles are what
 * break builds and reviews; the intended order is main -> run -> optim ->
 * nn -> engine/data/config/io -> kernels -> util).
 * Runs from the repository root, as `make test` does.
 */
#include <dirent.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include "test.h"

#define MAX_FILES 1024
#define MAX_INCLUDES 64
#define PATH_CAP 256

typedef struct src_file {
    char path[PATH_CAP];             /* under the root: "run/loop.c" */
    char module[PATH_CAP];           /* "run/loop"; "" for a header without a .c */
    char folder[PATH_CAP];           /* "run"; "." for the root */
    int ninc;
    int inc[MAX_INCLUDES];           /* index of each included file */
    int inc_line[MAX_INCLUDES];
} src_file;

typedef struct tree {
    const char *root;
    src_file f[MAX_FILES];
    int n;
    char *report;                    /* what failed, one line each */
    size_t len, cap;
    int problems;
} tree;

static void vsay(tree *t, const char *fmt, va_list ap) {
    int n = vsnprintf(t->report + t->len, t->cap - t->len, fmt, ap);
    if (n > 0) t->len += (size_t)n < t->cap - t->len ? (size_t)n : t->cap - t->len - 1;
}

/* Add to the report. */
__attribute__((format(printf, 2, 3))) static void say(tree *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsay(t, fmt, ap);
    va_end(ap);
}

/* Add a problem to the report (its first line). */
__attribute__((format(printf, 2, 3))) static void problem(tree *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsay(t, fmt, ap);
    va_end(ap);
    t->problems++;
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static int find_file(const tree *t, const char *path) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->f[i].path, path)) return i;
    return -1;
}

/* Every .c and .h under dir (relative to the root; "" for the root itself). */
static void collect(tree *t, const char *dir) {
    char full[PATH_CAP * 2];
    snprintf(full, sizeof full, "%s%s%s", t->root, *dir ? "/" : "", dir);
    DIR *d = opendir(full);
    if (!d) {
        problem(t, "cannot open %s\n", full);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char rel[PATH_CAP], sub[PATH_CAP * 3];
        if ((size_t)snprintf(rel, sizeof rel, "%s%s%s", dir, *dir ? "/" : "", de->d_name) >= sizeof rel) {
            problem(t, "%s/%s: path too long for %s\n", dir, de->d_name, __FILE__);
            continue;
        }
        snprintf(sub, sizeof sub, "%s/%s", t->root, rel);
        struct stat st;
        if (stat(sub, &st)) continue;
        if (S_ISDIR(st.st_mode)) {
            collect(t, rel);
        } else if (ends_with(rel, ".c") || ends_with(rel, ".h")) {
            if (t->n == MAX_FILES) {
                problem(t, "more than %d source files: raise MAX_FILES in %s\n", MAX_FILES, __FILE__);
                break;
            }
            src_file *f = &t->f[t->n++];
            memset(f, 0, sizeof *f);
            snprintf(f->path, sizeof f->path, "%s", rel);
            snprintf(f->folder, sizeof f->folder, "%s", *dir ? dir : ".");
        }
    }
    closedir(d);
}

/* foo.c and foo.h are module "foo"; a .h without a .c is none. */
static void name_modules(tree *t) {
    for (int i = 0; i < t->n; i++) {
        src_file *f = &t->f[i];
        char stem[PATH_CAP], c_path[PATH_CAP + 2];
        snprintf(stem, sizeof stem, "%.*s", (int)strlen(f->path) - 2, f->path);
        snprintf(c_path, sizeof c_path, "%s.c", stem);
        if (ends_with(f->path, ".c") || find_file(t, c_path) >= 0) snprintf(f->module, sizeof f->module, "%s", stem);
    }
}

/* The quoted #include lines of file i, resolved against the root. */
static void read_includes(tree *t, int i) {
    src_file *f = &t->f[i];
    char full[PATH_CAP * 2], line[1024];
    snprintf(full, sizeof full, "%s/%s", t->root, f->path);
    FILE *in = fopen(full, "r");
    if (!in) {
        problem(t, "cannot read %s\n", full);
        return;
    }
    for (int ln = 1; fgets(line, sizeof line, in); ln++) {
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p++ != '#') continue;
        while (*p == ' ' || *p == '\t') p++;
        if (strncmp(p, "include", 7)) continue;
        p += 7;
        while (*p == ' ' || *p == '\t') p++;
        if (*p++ != '"') continue;
        const char *q = strchr(p, '"');
        if (!q) continue;
        char target[PATH_CAP];
        snprintf(target, sizeof target, "%.*s", (int)(q - p), p);
        if (!ends_with(target, ".c") && !ends_with(target, ".h")) continue; /* ops.def and such: data, not a module */
        int k = find_file(t, target);
        if (k < 0) {
            problem(t, "%s:%d: #include \"%s\" is not a file under src/; write includes from src/ (\"folder/file.h\")\n", f->path, ln, target);
            continue;
        }
        if (f->ninc == MAX_INCLUDES) {
            problem(t, "%s: more than %d includes: raise MAX_INCLUDES in %s\n", f->path, MAX_INCLUDES, __FILE__);
            break;
        }
        f->inc_line[f->ninc] = ln;
        f->inc[f->ninc++] = k;
    }
    fclose(in);
}

/* ---- graphs over nodes named by strings ------------------------------------ */

typedef struct g_edge {
    int from, to;
    char why[PATH_CAP * 2];          /* the include that made the edge */
} g_edge;

typedef struct graph {
    int n, nedges, cap;
    char (*name)[PATH_CAP];          /* (MAX_FILES) */
    g_edge *e;                       /* (cap), grown as needed */
} graph;

static void graph_init(graph *g) {
    memset(g, 0, sizeof *g);
    g->name = calloc(MAX_FILES, sizeof *g->name);
}

static void graph_free(graph *g) {
    free(g->name);
    free(g->e);
}

static int node(graph *g, const char *name) {
    for (int i = 0; i < g->n; i++)
        if (!strcmp(g->name[i], name)) return i;
    snprintf(g->name[g->n], PATH_CAP, "%s", name); /* at most one node per file */
    return g->n++;
}

static void edge(graph *g, const char *from, const char *to, const char *why) {
    if (!strcmp(from, to)) return;
    int a = node(g, from), b = node(g, to);
    for (int i = 0; i < g->nedges; i++)
        if (g->e[i].from == a && g->e[i].to == b) return;
    if (g->nedges == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 256;
        g->e = realloc(g->e, (size_t)g->cap * sizeof *g->e);
    }
    g_edge *x = &g->e[g->nedges++];
    x->from = a;
    x->to = b;
    snprintf(x->why, sizeof x->why, "%s", why);
}

/* Depth-first search; each back edge closes a circle, described from the stack. */
static void dfs(const graph *g, int v, unsigned char *color, const g_edge **stack, int depth, tree *t, const char *what) {
    color[v] = 1;
    for (int i = 0; i < g->nedges; i++) {
        const g_edge *x = &g->e[i];
        if (x->from != v) continue;
        stack[depth] = x;
        if (color[x->to] == 1) {
            int s = depth;
            while (stack[s]->from != x->to) s--;
            problem(t, "%s circle:", what);
            for (int k = s; k <= depth; k++)
                say(t, "\n    %s -> %s   (%s)", g->name[stack[k]->from], g->name[stack[k]->to], stack[k]->why);
            say(t, "\n");
        } else if (!color[x->to]) {
            dfs(g, x->to, color, stack, depth + 1, t, what);
        }
    }
    color[v] = 2;
}

static void find_circles(const graph *g, tree *t, const char *what) {
    unsigned char *color = calloc((size_t)g->n + 1, 1);
    const g_edge **stack = calloc((size_t)g->n + 1, sizeof *stack);
    for (int v = 0; v < g->n; v++)
        if (!color[v]) dfs(g, v, color, stack, 0, t, what);
    free(color);
    free(stack);
}

/* ---- the three checks ------------------------------------------------------- */

static void check_root(tree *t) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->f[i].folder, ".") && strcmp(t->f[i].path, "main.c"))
            problem(t, "src/%s: only main.c belongs at the root of src/; move it into the folder of its layer\n", t->f[i].path);
}

/* Edges from module m for file i's includes, following headers that are no
 * module into their own includes (seen: headers already followed). */
static void module_edges(tree *t, graph *g, const char *m, int i, const char *via, unsigned char *seen) {
    const src_file *f = &t->f[i];
    for (int k = 0; k < f->ninc; k++) {
        const src_file *to = &t->f[f->inc[k]];
        char why[PATH_CAP * 2];
        if (via) snprintf(why, sizeof why, "%s, via %s:%d", via, f->path, f->inc_line[k]);
        else snprintf(why, sizeof why, "%s:%d", f->path, f->inc_line[k]);
        if (to->module[0]) {
            edge(g, m, to->module, why);
        } else if (!seen[f->inc[k]]) {
            seen[f->inc[k]] = 1;
            module_edges(t, g, m, f->inc[k], why, seen);
        }
    }
}

static void check_modules(tree *t) {
    graph g;
    graph_init(&g);
    unsigned char *seen = malloc((size_t)t->n);
    for (int i = 0; i < t->n; i++) {
        if (!t->f[i].module[0]) continue;
        node(&g, t->f[i].module);
        memset(seen, 0, (size_t)t->n);
        module_edges(t, &g, t->f[i].module, i, NULL, seen);
    }
    find_circles(&g, t, "module");
    free(seen);
    graph_free(&g);
}

static void check_folders(tree *t) {
    graph g;
    graph_init(&g);
    for (int i = 0; i < t->n; i++) {
        const src_file *f = &t->f[i];
        for (int k = 0; k < f->ninc; k++) {
            const src_file *to = &t->f[f->inc[k]];
            if (!strcmp(f->folder, "util") || !strcmp(to->folder, "util")) continue;
            char why[PATH_CAP * 2];
            snprintf(why, sizeof why, "%s:%d includes %s", f->path, f->inc_line[k], to->path);
            edge(&g, f->folder, to->folder, why);
        }
    }
    find_circles(&g, t, "folder");
    graph_free(&g);
}

/* Check the tree at root; returns the number of problems, described in report. */
static int check_layout(const char *root, char *report, size_t cap) {
    tree *t = calloc(1, sizeof *t);
    t->root = root;
    t->report = report;
    t->cap = cap;
    report[0] = 0;
    collect(t, "");
    name_modules(t);
    for (int i = 0; i < t->n; i++) read_includes(t, i);
    check_root(t);
    check_modules(t);
    check_folders(t);
    int n = t->problems;
    free(t);
    return n;
}

static char g_report[1 << 16];

TEST(layout_src_has_no_circles) {
    int n = check_layout("src", g_report, sizeof g_report);
    CHECK_MSG(n == 0, "%d layout problem(s) in src/:\n%s", n, g_report);
}

/* The checker itself, on small trees: each rule fails when broken. */
static const char *mini_tree(const char *name, const char *const *files) {
    static char root[600];
    snprintf(root, sizeof root, "%s/%s", test_tmpdir(), name);
    for (int i = 0; files[i]; i += 2) {
        char path[900], cmd[2000];
        snprintf(path, sizeof path, "%s/%s", root, files[i]);
        snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
        if (test_run(cmd, NULL, 0)) return NULL;
        FILE *f = fopen(path, "w");
        if (!f) return NULL;
        fputs(files[i + 1], f);
        fclose(f);
    }
    return root;
}

TEST(layout_checker_names_each_kind_of_circle) {
    static const char *const good[] = {
        "main.c", "#include \"run/a.h\"\n",
        "run/a.c", "#include \"run/a.h\"\n#include \"run/b.h\"\n#include \"run/private.h\"\n",
        "run/a.h", "",
        "run/b.c", "#include \"run/b.h\"\n#include \"util/u.h\"\n",
        "run/b.h", "",
        "run/private.h", "#include \"run/a.h\"\n", /* no module: not a circle with a.c */
        "run/c.h", "",
        "util/u.c", "#include \"run/c.h\"\n",      /* run -> util -> run: util/ is ground, ignored */
        "util/u.h", "",
        NULL};
    const char *root = mini_tree("good", good);
    CHECK(root != NULL);
    CHECK_MSG(check_layout(root, g_report, sizeof g_report) == 0, "%s", g_report);

    static const char *const stray[] = {"main.c", "", "helper.c", "", NULL};
    root = mini_tree("stray", stray);
    CHECK_EQ(check_layout(root, g_report, sizeof g_report), 1);
    CHECK_STR_CONTAINS(g_report, "src/helper.c: only main.c");

    static const char *const modules[] = {
        "main.c", "",
        "run/a.c", "#include \"run/b.h\"\n",
        "run/a.h", "",
        "run/b.c", "#include \"run/all.h\"\n",
        "run/b.h", "",
        "run/all.h", "#include \"run/a.h\"\n", /* one header declaring everything hides nothing */
        NULL};
    root = mini_tree("modules", modules);
    CHECK_EQ(check_layout(root, g_report, sizeof g_report), 1);
    CHECK_STR_CONTAINS(g_report, "module circle:");
    CHECK_STR_CONTAINS(g_report, "run/a -> run/b   (run/a.c:1)");
    CHECK_STR_CONTAINS(g_report, "run/b -> run/a   (run/b.c:1, via run/all.h:1)");

    static const char *const folders[] = {
        "main.c", "",
        "x/p.c", "#include \"y/q.h\"\n",
        "x/p.h", "",
        "y/q.c", "",
        "y/q.h", "",
        "y/r.c", "#include \"x/s.h\"\n", /* y -> x without a module circle */
        "x/s.h", "",
        NULL};
    root = mini_tree("folders", folders);
    CHECK_EQ(check_layout(root, g_report, sizeof g_report), 1);
    CHECK_STR_CONTAINS(g_report, "folder circle:");
    CHECK_STR_CONTAINS(g_report, "x -> y   (x/p.c:1 includes y/q.h)");

    static const char *const unresolved[] = {"main.c", "#include \"nowhere.h\"\n", NULL};
    root = mini_tree("unresolved", unresolved);
    CHECK_EQ(check_layout(root, g_report, sizeof g_report), 1);
    CHECK_STR_CONTAINS(g_report, "main.c:1: #include \"nowhere.h\" is not a file under src/");
}

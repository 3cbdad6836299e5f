/* folder.c — scan a class-per-subfolder tree; see folder.h.
 *
 * Why (device, inode) of every folder on the current path: symlinks are
 * followed (a class folder is often a link to where the photos live), and a
 * link back to an ancestor would otherwise be walked for ever. A folder met
 * again on the path is a loop; met again elsewhere (two links to one folder)
 * it is just read twice, as torchvision does.
 */
#include "data/folder.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/rng.h"

#define MAX_DEPTH 64

typedef struct scan {
    xt_folder *f;
    const char *key;
    int skip;
    xt_folder_warn_fn warn;
    void *ctx;
    xt_err *e;
    int64_t cap;
    dev_t dev[MAX_DEPTH];
    ino_t ino[MAX_DEPTH];
    int depth;
} scan;

static const char *SKIP_FIX = "or set on_bad_image: skip to leave it out";

/* One bad entry: an error, or with skip a warning and a count. */
static int bad(scan *s, const char *path, const char *what, const char *fix) {
    if (!s->skip) return xt_fail(s->e, XT_EDATA, "%s: %s; %s (%s)", path, what, fix, SKIP_FIX);
    char line[1400];
    snprintf(line, sizeof line, "warning: %s: %s; skipped (on_bad_image: skip)", path, what);
    if (s->warn) s->warn(s->ctx, line);
    s->f->skipped++;
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static int cmp_file(const void *a, const void *b) {
    const xt_folder_file *x = a, *y = b;
    return x->label != y->label ? x->label - y->label : strcmp(x->path, y->path);
}

static char *join(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *p = malloc(la + lb + 2);
    if (!p) return NULL;
    memcpy(p, a, la);
    p[la] = '/';
    memcpy(p + la + 1, b, lb + 1);
    return p;
}

/* The visible names in dir, sorted; NULL with *n = -1 when it cannot be read. */
static char **list_dir(const char *dir, int *n, int *err) {
    DIR *d = opendir(dir);
    *n = -1;
    if (!d) return *err = errno, NULL;
    int cap = 16, k = 0;
    char **v = malloc(sizeof *v * (size_t)cap);
    struct dirent *de;
    while (v && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        if (k == cap) {
            char **nv = realloc(v, sizeof *v * (size_t)(cap *= 2));
            if (!nv) break;
            v = nv;
        }
        if (!(v[k] = strdup(de->d_name))) break;
        k++;
    }
    closedir(d);
    if (!v || de) { /* out of memory mid-way */
        for (int i = 0; v && i < k; i++) free(v[i]);
        free(v);
        return *err = ENOMEM, NULL;
    }
    qsort(v, (size_t)k, sizeof *v, cmp_str);
    *n = k;
    return v;
}

static void free_list(char **v, int n) {
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

static int add_file(scan *s, char *path, int label, const struct stat *st) {
    xt_folder *f = s->f;
    if (f->n == s->cap) {
        int64_t nc = s->cap ? s->cap * 2 : 256;
        xt_folder_file *nf = realloc(f->files, sizeof *nf * (size_t)nc);
        if (!nf) return free(path), xt_fail(s->e, XT_ERUNTIME, "out of memory listing %s", f->root);
        f->files = nf, s->cap = nc;
    }
    f->files[f->n++] = (xt_folder_file){path, label, (int64_t)st->st_size,
                                        (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec};
    return 0;
}

/* Walk dir (already stat'ed as st) for class `label`. */
static int walk(scan *s, const char *dir, const struct stat *st, int label) {
    for (int i = 0; i < s->depth; i++)
        if (s->dev[i] == st->st_dev && s->ino[i] == st->st_ino)
            return bad(s, dir, "a symlink loop (this folder contains a link back to itself or a parent)",
                       "remove the link");
    if (s->depth == MAX_DEPTH) return bad(s, dir, "folders nested more than 64 deep", "flatten the tree");
    int n, err = 0, rc = 0;
    char **names = list_dir(dir, &n, &err);
    if (!names) {
        if (err == ENOMEM) return xt_fail(s->e, XT_ERUNTIME, "out of memory listing %s", dir);
        char what[160];
        snprintf(what, sizeof what, "cannot list this folder: %s", strerror(err));
        return bad(s, dir, what, "fix its permissions (chmod a+rx)");
    }
    s->dev[s->depth] = st->st_dev, s->ino[s->depth] = st->st_ino, s->depth++;
    for (int i = 0; i < n && !rc; i++) {
        char *path = join(dir, names[i]);
        struct stat cs;
        if (!path) {
            rc = xt_fail(s->e, XT_ERUNTIME, "out of memory listing %s", dir);
            break;
        }
        if (stat(path, &cs) != 0) { /* follows links: a dangling or self-referencing one fails here */
            char what[160];
            snprintf(what, sizeof what, "cannot be read: %s%s", strerror(errno),
                     errno == ELOOP ? " (a symlink loop)" : errno == ENOENT ? " (a symlink to nothing)" : "");
            rc = bad(s, path, what, "remove it or fix the link");
            free(path);
        } else if (S_ISDIR(cs.st_mode)) {
            rc = walk(s, path, &cs, label);
            free(path);
        } else if (!S_ISREG(cs.st_mode)) {
            rc = bad(s, path, "not a regular file (a FIFO, socket or device)", "remove it");
            free(path);
        } else {
            rc = add_file(s, path, label, &cs); /* takes path */
        }
    }
    s->depth--;
    free_list(names, n);
    return rc;
}

int xt_folder_scan(xt_folder *f, const char *root, const char *key, int skip, xt_folder_warn_fn warn, void *ctx, xt_err *e) {
    memset(f, 0, sizeof *f);
    snprintf(f->root, sizeof f->root, "%s", root);
    scan s = {.f = f, .key = key, .skip = skip, .warn = warn, .ctx = ctx, .e = e};
    struct stat st;
    if (!root[0]) return xt_fail(e, XT_EUSAGE, "%s is not set; dataset: folder needs it (a folder with one subfolder per class)", key);
    if (stat(root, &st) != 0)
        return xt_fail(e, XT_EDATA, "%s: %s (the value of %s); point %s at a folder with one subfolder per class", root,
                       strerror(errno), key, key);
    if (!S_ISDIR(st.st_mode))
        return xt_fail(e, XT_EDATA, "%s: not a folder (the value of %s); point %s at a folder with one subfolder per class",
                       root, key, key);
    int n, err = 0, rc = 0;
    char **names = list_dir(root, &n, &err);
    if (!names) return xt_fail(e, err == ENOMEM ? XT_ERUNTIME : XT_EDATA, "%s: cannot list it: %s", root, strerror(err));
    /* classes: the subfolders (links to folders count) */
    f->classes = malloc(sizeof *f->classes * (size_t)(n ? n : 1));
    if (!f->classes) rc = xt_fail(e, XT_ERUNTIME, "out of memory listing %s", root);
    for (int i = 0; i < n && !rc; i++) {
        char *path = join(root, names[i]);
        struct stat cs;
        if (!path) rc = xt_fail(e, XT_ERUNTIME, "out of memory listing %s", root);
        else if (stat(path, &cs) == 0 && S_ISDIR(cs.st_mode)) {
            f->classes[f->nclasses++] = names[i];
            names[i] = NULL;
        }
        free(path);
    }
    free_list(names, n);
    if (!rc && f->nclasses == 0)
        rc = xt_fail(e, XT_EDATA, "%s: no class folders in it; put each class's images in a subfolder named after the "
                     "class (%s/cat/1.png, %s/dog/1.png)", root, root, root);
    if (!rc && f->nclasses > XT_FOLDER_MAX_CLASSES)
        rc = xt_fail(e, XT_EDATA, "%s: %d class folders; at most %d are supported", root, f->nclasses, XT_FOLDER_MAX_CLASSES);
    s.dev[0] = st.st_dev, s.ino[0] = st.st_ino, s.depth = 1; /* a link back to the root is a loop too */
    for (int k = 0; k < f->nclasses && !rc; k++) {
        char *dir = join(root, f->classes[k]);
        struct stat cs;
        int64_t before = f->n;
        if (!dir) rc = xt_fail(e, XT_ERUNTIME, "out of memory listing %s", root);
        else if (stat(dir, &cs) == 0) rc = walk(&s, dir, &cs, k);
        if (!rc && f->n == before)
            rc = bad(&s, dir, "an empty class folder (no files in it)", "put images in it or remove the folder");
        free(dir);
    }
    if (rc) {
        xt_folder_free(f);
        return rc;
    }
    qsort(f->files, (size_t)f->n, sizeof *f->files, cmp_file);
    return 0;
}

void xt_folder_split(const xt_folder *f, double fraction, uint64_t seed, uint8_t *val) {
    int64_t n = f->n, nval = (int64_t)(n * fraction + 0.5);
    memset(val, 0, (size_t)n);
    if (nval <= 0) return;
    /* a partial Fisher-Yates: the first nval of a permutation keyed by seed */
    int64_t *perm = malloc(sizeof *perm * (size_t)n);
    xt_rng r;
    xt_rng_init(&r, seed, XT_RNG_SPLIT, (uint64_t)n, 0);
    if (!perm) { /* no memory for the table: every k-th file, still deterministic */
        for (int64_t i = 0; i < nval; i++) val[i * n / nval] = 1;
        return;
    }
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = 0; i < nval; i++) {
        int64_t j = i + (int64_t)xt_rng_below(&r, (uint64_t)(n - i));
        int64_t t = perm[i];
        perm[i] = perm[j], perm[j] = t;
        val[perm[i]] = 1;
    }
    free(perm);
}

void xt_folder_free(xt_folder *f) {
    for (int k = 0; k < f->nclasses; k++) free(f->classes[k]);
    free(f->classes);
    for (int64_t i = 0; i < f->n; i++) free(f->files[i].path);
    free(f->files);
    memset(f, 0, sizeof *f);
}

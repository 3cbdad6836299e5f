/* ckptdir.c — checkpoint names, listing, latest (by training position, so
 * a mid-epoch checkpoint sorts between its neighbours) and pruning; see
 * ckptdir.h. */
#include "io/ckptdir.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PREFIX "checkpoint-epoch"
#define SUFFIX ".safetensors"

int xt_st_checkpoint_path(char *out, size_t cap, const char *dir, int epoch, xt_err *e) {
    if (epoch < 0) return xt_fail(e, XT_EIO, "checkpoint for epoch %d: negative epoch; this is a bug, please report it", epoch);
    int n = snprintf(out, cap, "%s/" PREFIX "%03d" SUFFIX, dir && *dir ? dir : ".", epoch);
    if (n < 0 || (size_t)n >= cap)
        return xt_fail(e, XT_EIO, "checkpoint path in '%.200s' is longer than %zu bytes; use a shorter output_dir", dir, cap);
    return 0;
}

int xt_st_checkpoint_step_path(char *out, size_t cap, const char *dir, int epoch, long long step, xt_err *e) {
    if (epoch < 1 || step < 1) return xt_fail(e, XT_EIO, "checkpoint for epoch %d step %lld: out of range; this is a bug, please report it", epoch, step);
    int n = snprintf(out, cap, "%s/" PREFIX "%03d-step%03lld" SUFFIX, dir && *dir ? dir : ".", epoch, step);
    if (n < 0 || (size_t)n >= cap)
        return xt_fail(e, XT_EIO, "checkpoint path in '%.200s' is longer than %zu bytes; use a shorter output_dir", dir, cap);
    return 0;
}

/* Up to 9 digits (keeps the value in int range) at s[0..n); -1 if not. */
static long long parse_digits(const char *s, size_t n) {
    if (n == 0 || n > 9) return -1;
    long long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* "checkpoint-epoch<digits>[-step<digits>].safetensors" into c->epoch and
 * c->step (0 for the end of an epoch); 0, or -1 for another name. */
static int parse_name(const char *name, xt_st_ckpt *c) {
    size_t pl = strlen(PREFIX), sl = strlen(SUFFIX), n = strlen(name);
    if (n <= pl + sl || strncmp(name, PREFIX, pl) != 0 || strcmp(name + n - sl, SUFFIX) != 0) return -1;
    const char *mid = name + pl, *dash = memchr(mid, '-', n - pl - sl);
    size_t ne = dash ? (size_t)(dash - mid) : n - pl - sl;
    long long ep = parse_digits(mid, ne), st = 0;
    if (dash) {
        size_t ns = n - pl - sl - ne;
        st = ns > 5 && !strncmp(dash, "-step", 5) ? parse_digits(dash + 5, ns - 5) : -1;
        if (st < 1 || ep < 1) return -1;
    }
    if (ep < 0) return -1;
    c->epoch = (int)ep;
    c->step = st;
    return 0;
}

/* Training position: the end of epoch N is (N, 0); step S of epoch E is
 * (E - 1, S), after the end of epoch E - 1 and before the end of epoch E. */
static long long pos_epoch(const xt_st_ckpt *c) { return c->step ? c->epoch - 1 : c->epoch; }

static int ckpt_cmp(const void *pa, const void *pb) {
    const xt_st_ckpt *a = pa, *b = pb;
    if (pos_epoch(a) != pos_epoch(b)) return pos_epoch(a) < pos_epoch(b) ? -1 : 1;
    if (a->step != b->step) return a->step < b->step ? -1 : 1;
    return strcmp(a->name, b->name);
}

int xt_st_list_checkpoints(const char *dir, xt_st_ckpt **list, int *n, xt_err *e) {
    *list = NULL;
    *n = 0;
    const char *d = dir && *dir ? dir : ".";
    DIR *dp = opendir(d);
    if (!dp) {
        if (errno == ENOENT) return 0;
        return xt_fail(e, XT_EIO, "cannot read directory %s: %s; check output_dir", d, strerror(errno));
    }
    xt_st_ckpt *v = NULL;
    int cnt = 0, cap = 0, rc = 0;
    struct dirent *de;
    errno = 0;
    while ((de = readdir(dp)) != NULL) {
        xt_st_ckpt c;
        if (parse_name(de->d_name, &c) || strlen(de->d_name) >= sizeof v->name) continue;
        if (cnt == cap) {
            int nc = cap ? cap * 2 : 16;
            xt_st_ckpt *nv = realloc(v, (size_t)nc * sizeof *nv);
            if (!nv) {
                rc = xt_fail(e, XT_EIO, "cannot list %s: out of memory; free some memory and retry", d);
                goto out;
            }
            v = nv;
            cap = nc;
        }
        v[cnt] = c;
        strcpy(v[cnt].name, de->d_name);
        cnt++;
        errno = 0;
    }
    if (errno) {
        rc = xt_fail(e, XT_EIO, "cannot read directory %s: %s; check output_dir", d, strerror(errno));
        goto out;
    }
    if (cnt) qsort(v, (size_t)cnt, sizeof *v, ckpt_cmp);
out:
    closedir(dp);
    if (rc) {
        free(v);
        return rc;
    }
    *list = v;
    *n = cnt;
    return 0;
}

int xt_st_find_latest(const char *dir, char *out, size_t cap, xt_err *e) {
    xt_st_ckpt *v;
    int n, rc = xt_st_list_checkpoints(dir, &v, &n, e);
    if (rc) return rc;
    const char *d = dir && *dir ? dir : ".";
    if (n == 0)
        return xt_fail(e, XT_EUSAGE, "no " PREFIX "NNN" SUFFIX " in %s; train first (checkpoint.every > 0) or pass --resume PATH",
                       d);
    int len = snprintf(out, cap, "%s/%s", d, v[n - 1].name);
    free(v);
    if (len < 0 || (size_t)len >= cap)
        return xt_fail(e, XT_EIO, "checkpoint path in '%.200s' is longer than %zu bytes; use a shorter output_dir", d, cap);
    return 0;
}

int xt_st_prune_checkpoints(const char *dir, int keep, int keep_epoch, xt_err *e) {
    return xt_st_prune_checkpoints_at(dir, keep, keep_epoch, 0, e);
}

int xt_st_prune_checkpoints_at(const char *dir, int keep, int keep_epoch, long long keep_step, xt_err *e) {
    if (keep < 1) return 0;
    xt_st_ckpt *v;
    int n, rc = xt_st_list_checkpoints(dir, &v, &n, e);
    if (rc) return rc;
    const char *d = dir && *dir ? dir : ".";
    int excess = n - keep;
    for (int i = 0; i < n && excess > 0; i++) {
        if (v[i].epoch == keep_epoch && v[i].step == keep_step) continue;
        char path[PATH_MAX];
        int len = snprintf(path, sizeof path, "%s/%s", d, v[i].name);
        if (len < 0 || (size_t)len >= sizeof path) continue; /* cannot name it, cannot have written it */
        if (unlink(path) != 0 && errno != ENOENT) {
            rc = xt_fail(e, XT_EIO, "cannot remove old checkpoint %s: %s; make the directory writable or raise checkpoint.keep_last",
                         path, strerror(errno));
            break;
        }
        excess--;
    }
    free(v);
    return rc;
}

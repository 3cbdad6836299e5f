/* hosts.c — the agreements of a run across hosts before training; see hosts.h. */
#include "run/hosts.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/md5.h"
#include "distributed/cluster.h"
#include "run/record.h"

static int g_agreed;

int xt_hosts_failure_agreed(void) { return g_agreed; }

int xt_hosts_fail_everywhere(xt_err *e, int code, const char *fmt, ...) {
    g_agreed = 1;
    if (xt_cluster_rank() != 0) return xt_fail(e, code, "%s", ""); /* said once, by host 0 */
    va_list ap;
    va_start(ap, fmt);
    char msg[sizeof e->msg];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return xt_fail(e, code, "%s", msg);
}

int xt_hosts_layout(const xt_config *c, int *world, int *offset, xt_err *e) {
    int H = xt_cluster_size(), me = xt_cluster_rank();
    int *cores = malloc((size_t)H * sizeof *cores);
    if (!cores) return xt_fail(e, XT_ERUNTIME, "out of memory for %d hosts", H);
    int rc = xt_cluster_allgather(&c->num_cores, cores, sizeof *cores, e);
    long long sum = 0, before = 0;
    for (int h = 0; h < H && !rc; h++) {
        if (h == me) before = sum;
        sum += cores[h];
    }
    free(cores);
    if (rc) return rc;
    if (sum > XT_MAX_REPLICAS)
        return xt_fail(e, XT_EUSAGE, "%d hosts with their num_cores make %lld workers; at most %d in all: lower num_cores or use fewer hosts",
                       H, sum, XT_MAX_REPLICAS);
    *world = (int)sum;
    *offset = (int)before;
    return 0;
}

/* What a host says about its trajectory against host 0's. */
typedef struct traj_id {
    int32_t n;          /* keys that differ from host 0's (model included) */
    char host[64];
    char diff[700];     /* "key: host 0's -> this host's; ..." */
} traj_id;

int xt_hosts_check_trajectory(const xt_run *r, xt_err *e) {
    int H = xt_cluster_size();
    if (H == 1) return 0;
    /* host 0's resolved config and model, on every host */
    uint64_t len = xt_cluster_rank() == 0 ? strlen(r->config_yaml) + 1 : 0, model = r->model_hash;
    int rc = xt_cluster_bcast(&len, sizeof len, e);
    if (!rc) rc = xt_cluster_bcast(&model, sizeof model, e);
    if (rc) return rc;
    char *root = malloc(len ? len : 1);
    if (!root) return xt_fail(e, XT_ERUNTIME, "out of memory for host 0's config (%llu bytes)", (unsigned long long)len);
    if (xt_cluster_rank() == 0) memcpy(root, r->config_yaml, len);
    rc = xt_cluster_bcast(root, len, e);
    traj_id mine = {0}, *all = NULL;
    if (!rc) {
        root[len ? len - 1 : 0] = 0;
        mine.n = xt_record_host_diff(root, r->config_yaml, mine.diff, sizeof mine.diff);
        if (model != r->model_hash) {
            size_t o = strlen(mine.diff);
            snprintf(mine.diff + o, sizeof mine.diff - o, "%smodel: another layer spec", mine.n ? "; " : "");
            mine.n++;
        }
        if (gethostname(mine.host, sizeof mine.host - 1)) snprintf(mine.host, sizeof mine.host, "?");
        all = malloc((size_t)H * sizeof *all);
        if (!all) rc = xt_fail(e, XT_ERUNTIME, "out of memory for %d hosts", H);
    }
    free(root);
    if (!rc) rc = xt_cluster_allgather(&mine, all, sizeof mine, e);
    for (int h = 1; h < H && !rc; h++) {
        if (!all[h].n) continue;
        const char *d = all[h].diff;
        int seed = !strncmp(d, "seed: ", 6) || strstr(d, "; seed: ");
        rc = xt_hosts_fail_everywhere(e, XT_EUSAGE, "MPI rank %d (%s) was started with another trajectory than rank 0 (%s): %s%d key%s differ%s (%s, rank 0's -> rank %d's); start every rank with the same config file and --set options",
                                      h, all[h].host, all[0].host, seed ? "seed differs; " : "", all[h].n, all[h].n > 1 ? "s" : "",
                                      all[h].n > 1 ? "" : "s", d, h);
    }
    free(all);
    return rc;
}

/* What a host says about its data: whether it opened, sizes, checksum. */
typedef struct data_id {
    int32_t rc;
    int32_t have_train;
    int64_t ntrain, ntest;
    uint8_t md5[16];
    char host[64];
} data_id;

static void fingerprint(const xt_run *r, int open_rc, data_id *id) {
    memset(id, 0, sizeof *id);
    id->rc = open_rc;
    if (gethostname(id->host, sizeof id->host - 1)) snprintf(id->host, sizeof id->host, "?");
    if (open_rc) return;
    xt_md5 m;
    xt_md5_init(&m);
    const xt_dataset *sets[2] = {r->have_train ? &r->train : NULL, &r->test};
    for (int i = 0; i < 2; i++) {
        const xt_dataset *d = sets[i];
        if (!d) continue;
        xt_md5_update(&m, d->images, (size_t)d->n * (size_t)d->rows * (size_t)d->cols);
        xt_md5_update(&m, d->labels, (size_t)d->n);
    }
    xt_md5_final(&m, id->md5);
    id->have_train = r->have_train;
    id->ntrain = r->have_train ? r->train.n : 0;
    id->ntest = r->test.n;
}

/* The first host whose data differs from host 0's, or fails; -1 if none. */
static int first_odd(const data_id *all, int H) {
    for (int h = 0; h < H; h++)
        if (all[h].rc) return h;
    for (int h = 1; h < H; h++)
        if (all[h].ntrain != all[0].ntrain || all[h].ntest != all[0].ntest || memcmp(all[h].md5, all[0].md5, 16)) return h;
    return -1;
}

int xt_hosts_check_data(xt_run *r, int open_rc, xt_err *e) {
    int H = xt_cluster_size();
    if (H == 1) return open_rc;
    xt_err own = *e;
    data_id mine, *all = malloc((size_t)H * sizeof *all);
    if (!all) return xt_fail(e, XT_ERUNTIME, "out of memory for %d hosts", H);
    fingerprint(r, open_rc, &mine);
    int rc = xt_cluster_allgather(&mine, all, sizeof mine, e);
    int h = rc ? -1 : first_odd(all, H);
    if (!rc && h >= 0) {
        g_agreed = 1;
        rc = all[h].rc ? all[h].rc : XT_EDATA;
        if (xt_cluster_rank() == h && all[h].rc) *e = own; /* the failing host says why itself */
        else if (xt_cluster_rank() != 0) xt_fail(e, rc, "%s", "");
        else if (all[h].rc) xt_fail(e, rc, "MPI rank %d (%s) cannot read its dataset (exit code %d, its message above); every host needs the same data in its datadir", h, all[h].host, all[h].rc);
        else
            xt_fail(e, rc, "MPI rank %d (%s) has another dataset than rank 0 (%s): %lld train / %lld test samples vs %lld / %lld%s; give every host the same files in its datadir",
                    h, all[h].host, all[0].host, (long long)all[h].ntrain, (long long)all[h].ntest, (long long)all[0].ntrain,
                    (long long)all[0].ntest, all[h].ntrain == all[0].ntrain && all[h].ntest == all[0].ntest ? ", same sizes but another checksum" : "");
    }
    free(all);
    return rc;
}

/* The position and history a checkpoint gives (checkpoint.c's load). */
typedef struct position {
    int32_t rc, start_epoch, nhist, npart, resumed, mon_best_epoch, mon_wait, pad;
    int64_t start_step_in_epoch, global_step, optim_steps;
    double best_acc, mon_best; /* the early-stopping monitor: every host must stop at the same epoch */
} position;

int xt_hosts_share_state(xt_run *r, int rc, xt_err *e) {
    if (xt_cluster_size() == 1 || !r->cli->resume) return rc;
    position p = {.rc = rc, .start_epoch = r->start_epoch, .nhist = r->nhist, .npart = r->npart, .resumed = r->resumed,
                  .start_step_in_epoch = r->start_step_in_epoch, .global_step = r->global_step,
                  .optim_steps = r->optim.steps, .best_acc = r->best_acc, .mon_best = r->mon_best,
                  .mon_best_epoch = r->mon_best_epoch, .mon_wait = r->mon_wait};
    xt_err ignored = {0};
    /* host 0's failure ends the job through its MPI_Abort; the others only
     * need to know whether there is a state to receive */
    if (xt_cluster_bcast(&p, sizeof p, xt_cluster_rank() ? e : &ignored)) return e->code ? e->code : XT_ERUNTIME;
    if (p.rc) { /* host 0 says why; every host stops alike */
        g_agreed = 1;
        return xt_cluster_rank() ? xt_fail(e, p.rc, "%s", "") : rc;
    }
    int brc = xt_cluster_bcast(r->store.block, r->store.block_floats * sizeof(float), e);
    if (!brc) brc = xt_cluster_bcast(r->hist_loss, (size_t)p.nhist * sizeof *r->hist_loss, e);
    if (!brc) brc = xt_cluster_bcast(r->hist_acc, (size_t)p.nhist * sizeof *r->hist_acc, e);
    if (!brc) brc = xt_cluster_bcast(r->part_loss_sum, sizeof r->part_loss_sum, e);
    if (!brc) brc = xt_cluster_bcast(r->part_loss_n, sizeof r->part_loss_n, e);
    for (int l = 0; l < r->model.spec->nlayers && !brc; l++)
        brc = xt_cluster_bcast(&r->model.layers[l].num_batches_tracked, sizeof r->model.layers[l].num_batches_tracked, e);
    if (brc) return brc;
    r->start_epoch = p.start_epoch;
    r->nhist = p.nhist;
    r->npart = p.npart;
    r->resumed = p.resumed;
    r->start_step_in_epoch = p.start_step_in_epoch;
    r->global_step = p.global_step;
    r->optim.steps = p.optim_steps;
    r->best_acc = p.best_acc;
    r->mon_best = p.mon_best;
    r->mon_best_epoch = p.mon_best_epoch;
    r->mon_wait = p.mon_wait;
    return 0;
}

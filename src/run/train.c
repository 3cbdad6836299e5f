/* train.c — a training run (or --eval-only) from start to end: set the run
 * up (run.c) before any fork, so every replica starts equal, resume from a
 * checkpoint, open the data, then run the loop in-process (one core) or in N
 * supervised worker processes. Not here: the loop itself (loop.c), the
 * end-of-run outputs (finish.c), or --predict (predict.c). */
#include "run/train.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "distributed/spawn.h"
#include "io/atomic.h"
#include "run/checkpoint.h"
#include "run/loop.h"
#include "run/run.h"
#include "run/signals.h"

/* --resume: load the checkpoint it names into r. */
static int resume(xt_run *r, xt_err *e) {
    const xt_cli *cli = r->cli;
    if (cli->eval_only && !cli->resume)
        return xt_fail(e, XT_EUSAGE, "--eval-only needs trained weights: add --resume PATH (or --resume latest for the newest checkpoint in %s)", r->outdir);
    if (!cli->resume) return 0;
    char path[1024];
    int rc = xt_ckpt_resolve(r, cli->resume, path, sizeof path, e);
    if (!rc) rc = xt_ckpt_load(r, path, e);
    if (!rc && !cli->eval_only)
        fprintf(stderr, "xlatrain: resuming from %s at epoch %d step %lld\n", path, r->start_epoch + 1, r->start_step_in_epoch);
    return rc;
}

/* A fresh run starts a fresh metrics log. */
static int remove_old_metrics(const xt_run *r, xt_err *e) {
    char path[700];
    snprintf(path, sizeof path, "%s/metrics.jsonl", r->outdir);
    if (unlink(path) && errno != ENOENT) return xt_fail(e, XT_EIO, "%s: cannot remove the old metrics log: %s", path, strerror(errno));
    return 0;
}

static void print_banner(const xt_run *r) {
    const xt_config *c = r->c;
    fprintf(stderr, "xlatrain: %s: %s on %s (%lld train / %lld test samples), %d core%s, batch %d per core, output in %s\n",
            c->name, c->spec.source, xt_data_kind_name(xt_run_data_kind(c->dataset)), (long long)(r->have_train ? r->train.n : 0),
            (long long)r->test.n, r->world, r->world > 1 ? "s" : "", c->batch_size, r->outdir);
}

/* The replicas: forked and supervised, or this process alone. */
static int run_replicas(xt_run *r, xt_err *e) {
    if (r->world == 1) {
        xt_signals_install();
        int rc = xt_worker_main(0, r);
        xt_signals_restore();
        if (rc) *e = r->err;
        return rc;
    }
    int rc = xt_dist_create(&r->dist, r->world, xt_run_grad_floats(r), e);
    if (rc) return rc;
    xt_spawn_opts so = {.pin_cores = r->c->pin_cores, .timeout_s = r->c->worker_timeout};
    rc = xt_spawn(r->dist, r->world, xt_worker_main, r, &so, e);
    xt_dist_destroy(r->dist);
    xt_tmp_sweep(r->outdir); /* a master killed mid-checkpoint leaves its temp file */
    return rc;
}

int xt_train_main(const xt_config *c, const xt_cli *cli, xt_err *e) {
    static xt_run r;
    int rc = xt_run_open(&r, c, cli, e);
    if (!rc) rc = resume(&r, e);
    if (!rc) rc = xt_run_open_data(&r, e);
    if (!rc && !cli->resume) rc = remove_old_metrics(&r, e);
    if (!rc) {
        print_banner(&r);
        rc = run_replicas(&r, e);
    }
    xt_run_close(&r);
    return rc;
}

/* train.c — a training run (or --eval-only) from start to end: set the run
 * up (run.c) before any fork, so every replica starts equal, resume from a
 * checkpoint (refusing one made with another trajectory), open the data,
 * then run the loop in-process (one core) or in N supervised worker
 * processes; whatever ends the run after its directory is claimed, write
 * the summary. Not here: the loop itself (loop.c), the
 * end-of-run outputs (finish.c), or --predict (predict.c). */
#include "run/train.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "distributed/spawn.h"
#include "distributed/uplink.h"
#include "io/atomic.h"
#include "io/ckptdir.h"
#include "kernels/simd.h"
#include "run/checkpoint.h"
#include "run/finish.h"
#include "run/hosts.h"
#include "run/record.h"
#include "run/results_file.h"
#include "run/log.h"
#include "run/loop.h"
#include "run/monitor.h"
#include "run/run.h"
#include "run/signals.h"

/* --resume over a checkpoint whose recorded config differs in a key that
 * changes the trajectory: refused, or (--allow-config-change) accepted and
 * recorded as no longer bit-identical. */
static int check_config(xt_run *r, const char *path, xt_err *e) {
    if (!r->resumed_config || r->cli->eval_only) return 0;
    char diff[900];
    int n = xt_record_trajectory_diff(r->resumed_config, r->config_yaml, diff, sizeof diff);
    if (!n) return 0;
    if (!r->cli->allow_config_change)
        return xt_fail(e, XT_EUSAGE, "%s was made with another config (%s); resume with the same settings, or add --allow-config-change to continue anyway", path, diff);
    fprintf(stderr, "xlatrain: resuming with a changed config (%s); the run is no longer bit-identical to an uninterrupted one\n", diff);
    r->config_changed = 1;
    return 0;
}

/* --resume: load the checkpoint it names into r. A path that cannot be
 * read is an input error (3), not an output one. */
static int resume(xt_run *r, xt_err *e) {
    const xt_cli *cli = r->cli;
    if (!cli->resume) return 0;
    char path[1024];
    int rc = xt_ckpt_resolve(r, cli->resume, path, sizeof path, e);
    if (!rc && access(path, R_OK))
        rc = xt_fail(e, XT_EDATA, "--resume %s: cannot read it: %s; check the path (or use --resume latest)", path, strerror(errno));
    if (!rc) rc = xt_ckpt_load(r, path, e);
    if (!rc) rc = check_config(r, path, e);
    if (rc) return rc;
    snprintf(r->last_ckpt, sizeof r->last_ckpt, "%s", path);
    r->resumed = 1;
    if (cli->eval_only) return 0;
    fprintf(stderr, "xlatrain: resuming from %s at epoch %d step %lld\n", path, r->start_epoch + 1, r->start_step_in_epoch);
    return 0;
}

/* --resume of a run with nothing left to train: its results.json stands
 * (reprinted as the last line), with the exit code it recorded. */
static int already_finished(const xt_run *r, xt_err *e) {
    xt_results_file f;
    int have = xt_results_read(r->outdir, &f) == 0;
    if (xt_monitor_should_stop(r))
        fprintf(stderr, "xlatrain: %s was stopped early (%s did not improve for %d epochs); raise early_stopping.patience to train further\n",
                r->outdir, xt_monitor_name(r->c), r->mon_wait);
    else if (r->c->max_steps > 0 && r->global_step >= r->c->max_steps)
        fprintf(stderr, "xlatrain: %s already trained max_steps (%lld steps); raise max_steps to train further\n", r->outdir, r->c->max_steps);
    else
        fprintf(stderr, "xlatrain: %s already trained %d epochs; raise num_epochs to train further\n", r->outdir, r->c->num_epochs);
    const json_t *code = have ? json_object_get(f.root, "exit_code") : NULL;
    int rc = json_is_integer(code) ? (int)json_integer_value(code) : 0;
    if (have) xt_out("%s", f.text);
    if (have) xt_results_free(&f);
    if (rc) xt_fail(e, rc, "%s: the run ended with exit code %d (see results.json)", r->outdir, rc);
    return rc;
}

/* "2 cores" on one machine, "4 cores (2 hosts)" across hosts. */
static const char *cores_text(const xt_run *r, char *buf, size_t cap) {
    if (r->hosts > 1) snprintf(buf, cap, "%d cores (%d hosts)", r->world, r->hosts);
    else snprintf(buf, cap, "%d core%s", r->world, r->world > 1 ? "s" : "");
    return buf;
}

/* "precision bf16 (XLA_USE_BF16=1)": which one runs, and what chose it. */
static const char *precision_text(const xt_config *c, char *buf, size_t cap) {
    snprintf(buf, cap, "precision %s (%s)", c->precision == XT_PRECISION_BF16 ? "bf16" : "fp32",
             c->precision_from[0] ? c->precision_from : "default");
    return buf;
}

/* "isa avx2 (XLATRAIN_ISA=avx2)": the vector instructions the kernels run, and what capped them. */
static const char *isa_text(char *buf, size_t cap) {
    char why[128];
    int isa = k_isa_reason(why, sizeof why);
    snprintf(buf, cap, "isa %s (%s)", k_simd_name(isa), why);
    return buf;
}

static void print_banner(const xt_run *r) {
    const xt_config *c = r->c;
    char cores[64], prec[96], isa[200];
    if (r->host != 0) return; /* said once, by the global master */
    if (r->cli->eval_only) { /* no training data is loaded: say what is evaluated, not "0 train" */
        fprintf(stderr, "xlatrain: %s: evaluating %s on %s (%lld test samples), %s, %s, %s, output in %s\n", c->name,
                c->spec.source, xt_data_kind_name(xt_run_data_kind(c->dataset)), (long long)r->test.n,
                cores_text(r, cores, sizeof cores), isa_text(isa, sizeof isa), precision_text(c, prec, sizeof prec),
                r->outdir);
        return;
    }
    fprintf(stderr, "xlatrain: %s: %s on %s (%lld train / %lld test samples), %s, %s, batch %d per core, %s, output in %s\n",
            c->name, c->spec.source, xt_data_kind_name(xt_run_data_kind(c->dataset)), (long long)(r->have_train ? r->train.n : 0),
            (long long)r->test.n, cores_text(r, cores, sizeof cores), isa_text(isa, sizeof isa), c->batch_size,
            precision_text(c, prec, sizeof prec), r->outdir);
}

/* Workers beyond the CPUs this process may run on share them: slower, and
 * the same result, so a warning, not an error. */
static void warn_cpus(int num_cores) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set)) return;
    int ncpu = CPU_COUNT(&set);
    if (ncpu > 0 && num_cores > ncpu)
        fprintf(stderr, "xlatrain: warning: num_cores %d is more than the %d CPU%s this process may use; the workers will share them (slower, same result): lower num_cores to %d\n",
                num_cores, ncpu, ncpu > 1 ? "s" : "", ncpu);
}

/* A training run in which some worker takes no step is refused (before its
 * directory is claimed): it would report ok over untrained weights. Every
 * replica's shard has ceil(n / world) samples (sampler.h), and drop_last
 * drops the partial batch. The numbers are the same on every host. */
static int check_steps(const xt_run *r, xt_err *e) {
    const xt_config *c = r->c;
    if (r->cli->eval_only || !r->have_train) return 0;
    long long n = r->train.n, per = (n + r->world - 1) / r->world, bs = c->batch_size;
    long long steps = c->drop_last ? per / bs : (per + bs - 1) / bs;
    if (steps >= 1) return 0;
    return xt_hosts_fail_everywhere(e, XT_EUSAGE,
        "no training step would run: %lld training samples over %d worker%s are %lld per worker, fewer than batch_size %lld%s; "
        "lower batch_size to at most %lld, lower num_cores, or train on more samples",
        n, r->world, r->world > 1 ? "s" : "", per, bs, c->drop_last ? " (drop_last drops a partial batch)" : "", per);
}

/* The replicas: forked and supervised, or this process alone. */
static int run_replicas(xt_run *r, xt_err *e) {
    if (r->world == 1 && r->hosts == 1) { /* the handlers of xt_train_main serve it */
        int rc = xt_worker_main(0, r);
        if (rc) *e = r->err;
        return rc;
    }
    /* across hosts, even one local worker is forked: the parent serves the uplink */
    int rc = xt_dist_create(&r->dist, r->local_world, xt_run_grad_floats(r), e);
    if (rc) return rc;
    xt_dist_set_uplink(r->dist, r->hosts, r->world, r->rank_offset);
    /* a SIGINT/SIGTERM since stopped_before_start's look (main's handler took it) stops the workers too */
    xt_spawn_opts so = {.pin_cores = r->c->pin_cores, .timeout_s = r->c->worker_timeout, .stop_pending = xt_stop_requested};
    rc = xt_spawn(r->dist, r->local_world, xt_worker_main, r, &so, e);
    /* the master worker's summary (below_target, say) stands: a second one
     * from here would hide its figures */
    if (xt_dist_summary_written(r->dist)) r->summary_written = 1;
    xt_dist_destroy(r->dist);
    /* say which host; rank 0 writes the summary, then its MPI_Abort ends the
     * others (a message from another host already names that one) */
    if (rc && r->hosts > 1 && rc != XT_EINTR && rc != XT_EBELOW && !strstr(e->msg, "MPI rank ")) {
        char msg[sizeof e->msg], host[64] = "?";
        memcpy(msg, e->msg, sizeof msg);
        gethostname(host, sizeof host - 1);
        xt_fail(e, rc, "MPI rank %d (%s): %.900s", r->host, host, msg);
    }
    if (r->host != 0) return rc;
    xt_tmp_sweep(r->outdir); /* a master killed mid-checkpoint leaves its temp file */
    /* the master's message died with it (a stop), or a worker died or hung:
     * say where the run can go on from */
    int worker_lost = rc == XT_ERUNTIME && !strstr(e->msg, "loss is NaN") && !strstr(e->msg, "loss is Inf");
    if (rc == XT_EINTR || worker_lost) {
        char ck[1024], msg[sizeof e->msg];
        xt_err ignored = {0};
        if (!xt_st_find_latest(r->outdir, ck, sizeof ck, &ignored)) {
            memcpy(msg, e->msg, sizeof msg);
            xt_fail(e, rc, "%.200s; %s %.400s (continue with --resume latest --set output_dir=%.380s)", msg,
                    rc == XT_EINTR ? "checkpoint written to" : "the newest checkpoint is", ck, r->outdir);
        }
    }
    return rc;
}

/* SIGINT/SIGTERM while the run was being set up (its config read, its data
 * made, its checkpoint read): it stops before the first step, with its
 * summary once the directory is claimed (main's handlers are installed
 * before the config is read). */
static int stopped_before_start(const xt_run *r, xt_err *e) {
    int sig = xt_stop_requested();
    if (!sig) return 0;
    if (!r->claimed) return xt_stopped_before_start(e);
    return xt_fail(e, XT_EINTR, "interrupted by %s before the first step: nothing was trained; run it again%s", sig == SIGINT ? "SIGINT" : "SIGTERM",
                   r->cli->resume ? " with --resume latest" : " (with --overwrite, or another output_dir)");
}

/* The status a failure gets in the summary. */
static const char *failure_status(const xt_run *r, const xt_err *e, int in_replicas) {
    if (e->code == XT_EINTR) return "interrupted";
    if (e->code == XT_EBELOW) return "below_target";
    if (e->code == XT_ECOMPILE) return "compile_limit";
    if (e->code == XT_ERUNTIME && (strstr(e->msg, "loss is NaN") || strstr(e->msg, "loss is Inf"))) return "diverged";
    if (e->code == XT_ERUNTIME && in_replicas && r->world > 1) return "worker_failed";
    return "error";
}

/* Every ending of a claimed run leaves a summary (finish.c writes the
 * successful one): what was learned so far, and why it stopped. With
 * several workers their figures died with them; the newest checkpoint has
 * them. */
static void failure_summary(xt_run *r, const xt_err *e, int in_replicas) {
    if (!r->claimed || r->summary_written) return;
    /* a refused --resume or --eval-only (no or bad checkpoint, changed config)
     * leaves the directory as it was */
    if (r->cli->resume && !r->resumed) return;
    char ckpt[1024] = "";
    xt_err ignored = {0};
    if (!xt_st_find_latest(r->outdir, ckpt, sizeof ckpt, &ignored) && r->world > 1 && in_replicas)
        xt_ckpt_load_progress(r, ckpt, &ignored);
    if (r->cli->eval_only) snprintf(ckpt, sizeof ckpt, "%s", r->last_ckpt);
    xt_summary s = {.status = failure_status(r, e, in_replicas), .exit_code = e->code, .message = e->msg,
                    .final_loss = xt_run_final_loss(r), .checkpoint = ckpt};
    xt_run_summary(r, &s, &ignored); /* the run's own error is the one to report */
    r->summary_written = 1;
}

int xt_train_main(const xt_config *c, const xt_cli *cli, xt_err *e) {
    static xt_run r;
    /* across hosts the run sees num_cores as the global world (config.yaml
     * records it so, and --resume compares trajectories by it) */
    static xt_config gc;
    int world = c->num_cores, offset = 0, in_replicas = 0;
    int rc = xt_hosts_layout(c, &world, &offset, e);
    if (rc) return rc;
    warn_cpus(c->num_cores);
    gc = *c;
    gc.num_cores = world;
    /* a stop ends with a summary once the directory is claimed; with
     * workers, xt_spawn takes the signals over while they run. main has
     * installed the handlers already (this nests, for other callers) */
    xt_signals_install();
    rc = xt_run_open(&r, &gc, cli, e);
    r.local_world = c->num_cores;
    r.rank_offset = offset;
    /* everything that can refuse the run from its config, model or data
     * comes before the directory is claimed: a refused run leaves none */
    if (!rc) rc = xt_hosts_check_trajectory(&r, e);
    if (!rc) rc = xt_hosts_check_data(&r, xt_run_open_data(&r, e), e);
    if (!rc) rc = check_steps(&r, e);
    if (!rc) rc = stopped_before_start(&r, e);
    if (!rc) rc = xt_run_claim(&r, e);
    if (!rc && r.host == 0) rc = resume(&r, e); /* host 0 reads the checkpoint, */
    rc = xt_hosts_share_state(&r, rc, e);      /* and hands it to the others */
    /* nothing left: all epochs trained, early stopping stopped it, or max_steps is reached
     * (the state every host decides it from is host 0's, shared above) */
    if (!rc && cli->resume && !cli->eval_only &&
        (r.start_epoch >= c->num_epochs || xt_monitor_should_stop(&r) || (c->max_steps > 0 && r.global_step >= c->max_steps))) {
        if (r.host == 0) rc = already_finished(&r, e);
        r.summary_written = 1;
    } else {
        /* a resumed run records the config it goes on with, once --resume has accepted it */
        if (!rc && cli->resume && !cli->eval_only && r.host == 0) rc = xt_record_write_config(r.outdir, &gc, cli, e);
        if (!rc && cli->resume && !cli->eval_only) rc = xt_run_note_norm(&r, e);
        if (!rc) rc = stopped_before_start(&r, e);
        if (!rc) {
            print_banner(&r);
            in_replicas = 1;
            rc = run_replicas(&r, e);
        }
    }
    if (rc == XT_EINTR) xt_out_stopping(); /* the summary line must not hold up the exit either */
    if (rc) failure_summary(&r, e, in_replicas);
    xt_out_note_dropped(r.world == 1 && r.hosts == 1 ? r.rank_offset : -1);
    xt_run_close(&r);
    xt_signals_restore();
    return rc;
}

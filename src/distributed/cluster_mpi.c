/* cluster_mpi.c — cluster.h over Open MPI (compiled only by `make MPI=1`).
 *
 * Every collective is non-blocking (MPI_Iallgather, MPI_Ialltoallv, ...) and
 * completed by polling MPI_Test with short sleeps: a blocking MPI call spins
 * a core at 100% while it waits for the slowest host, and that core is one a
 * forked worker of this host needs. The sleep starts at a few microseconds
 * (sched_yield) and grows to 200 us, so a wait of a millisecond costs about
 * 10% in latency and nothing in CPU.
 *
 * The reduction never uses MPI_Allreduce: its summation order is the
 * library's choice (it depends on the algorithm picked for the message size
 * and the number of ranks), so bits would change with the layout. Instead
 * each rank receives every rank's copy of its slice and adds them itself in
 * rank order.
 */
#include "distributed/cluster.h"

#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_joined, g_rank, g_size = 1;
static float *g_recv;         /* reduce-scatter: size x slice floats */
static size_t g_recv_cap;
static int *g_counts;         /* 4 x size ints: send/recv counts and displacements */
static const _Atomic uint32_t *g_watch; /* xt_cluster_watch() */
static int64_t g_watch_grace_ns;

/* Started by mpirun (Open MPI's ORTE), srun or another PMI launcher. */
static int launched_by_mpi(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK") || getenv("PMI_SIZE");
}

int xt_cluster_init(int *argc, char ***argv, xt_err *e) {
    if (!launched_by_mpi()) return 0;
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return xt_fail(e, XT_ERUNTIME, "MPI_Init failed; run xlatrain under mpirun (or srun) with a working Open MPI");
    g_joined = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    /* errors come back as codes and go into one clear line, not MPI's abort */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    g_counts = calloc(4 * (size_t)g_size, sizeof *g_counts);
    if (!g_counts) return xt_fail(e, XT_ERUNTIME, "out of memory for %d MPI ranks", g_size);
    return 0;
}

int xt_cluster_rank(void) { return g_rank; }
int xt_cluster_size(void) { return g_size; }

const char *xt_cluster_library(void) {
    static char buf[64];
    int major = 0, minor = 0, release = 0;
#ifdef OMPI_MAJOR_VERSION
    major = OMPI_MAJOR_VERSION;
    minor = OMPI_MINOR_VERSION;
    release = OMPI_RELEASE_VERSION;
    snprintf(buf, sizeof buf, "Open MPI v%d.%d.%d", major, minor, release);
#else
    MPI_Get_version(&major, &minor);
    snprintf(buf, sizeof buf, "MPI %d.%d", major, minor);
#endif
    return buf;
}

static int mpi_error(int rc, const char *what, xt_err *e) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return xt_fail(e, XT_ERUNTIME, "MPI rank %d: %s failed: %.*s; check that every host runs the same xlatrain and config",
                   g_rank, what, len, text);
}

void xt_cluster_watch(const _Atomic uint32_t *stop, double grace_s) {
    g_watch = stop;
    g_watch_grace_ns = (int64_t)(grace_s * 1e9);
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The tag of a failure note (xt_cluster_exit -> rank 0): apart from the
 * collectives, which use none. */
enum { TAG_FAILURE = 0x5e1 };

int xt_cluster_failure_note(xt_err *e) {
    if (!g_joined || g_size == 1 || g_rank != 0) return 0;
    int flag = 0, len = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_FAILURE, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS || !flag) return 0;
    char note[sizeof e->msg];
    MPI_Get_count(&st, MPI_CHAR, &len);
    if (len < 1 || len > (int)sizeof note) len = (int)sizeof note;
    if (MPI_Recv(note, len, MPI_CHAR, st.MPI_SOURCE, TAG_FAILURE, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        snprintf(note, sizeof note, "MPI rank %d failed (its message was lost)", st.MPI_SOURCE);
    note[sizeof note - 1] = 0;
    return xt_fail(e, XT_ERUNTIME, "%s", note);
}

/* Complete req without spinning a core: yield first, then sleep up to 200 us.
 * Rank 0 also listens for another rank's failure note meanwhile: that rank
 * will never join this collective. */
static int finish(MPI_Request *req, const char *what, xt_err *e) {
    int64_t stop_seen = 0;
    for (long i = 0;; i++) {
        int done = 0;
        int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return mpi_error(rc, what, e);
        if (done) return 0;
        if ((i & 15) == 15 && xt_cluster_failure_note(e)) return e->code;
        if (g_watch && atomic_load(g_watch) && (i & 63) == 0) {
            int64_t now = now_ns();
            if (!stop_seen) stop_seen = now;
            else if (now - stop_seen > g_watch_grace_ns)
                return xt_fail(e, XT_ERUNTIME, "MPI rank %d: %s still waits for the other hosts %.0f s after the stop request; one of them is gone",
                               g_rank, what, (double)g_watch_grace_ns / 1e9);
        }
        if (i < 64) {
            sched_yield();
        } else {
            long us = i < 1000 ? 20 : 200;
            struct timespec ts = {0, us * 1000};
            nanosleep(&ts, NULL);
        }
    }
}

int xt_cluster_allgather(const void *mine, void *all, size_t bytes, xt_err *e) {
    if (g_size == 1) {
        memmove(all, mine, bytes);
        return 0;
    }
    if (bytes > INT32_MAX) return xt_fail(e, XT_ERUNTIME, "MPI all-gather of %zu bytes per rank: more than MPI's int count", bytes);
    MPI_Request req;
    int rc = MPI_Iallgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, MPI_COMM_WORLD, &req);
    return rc != MPI_SUCCESS ? mpi_error(rc, "MPI_Iallgather", e) : finish(&req, "MPI_Iallgather", e);
}

int xt_cluster_bcast(void *buf, size_t bytes, xt_err *e) {
    if (g_size == 1) return 0;
    for (size_t off = 0; off < bytes;) { /* MPI counts are ints: big buffers go in pieces */
        size_t m = bytes - off < (size_t)1 << 30 ? bytes - off : (size_t)1 << 30;
        MPI_Request req;
        int rc = MPI_Ibcast((char *)buf + off, (int)m, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
        if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Ibcast", e);
        if ((rc = finish(&req, "MPI_Ibcast", e))) return rc;
        off += m;
    }
    return 0;
}

/* Rank r's slice of n floats: whole 16-float groups, as the shared-memory reduce. */
static void slice(size_t n, int r, size_t *lo, size_t *hi) {
    size_t groups = (n + 15) / 16;
    *lo = groups * (size_t)r / (size_t)g_size * 16;
    *hi = groups * (size_t)(r + 1) / (size_t)g_size * 16;
    if (*hi > n) *hi = n;
    if (*lo > n) *lo = n;
}

/* One piece of at most INT32_MAX / size floats. */
static int sum_piece(float *buf, size_t n, float scale, xt_err *e) {
    int H = g_size, *sc = g_counts, *sd = g_counts + H, *rc_ = g_counts + 2 * H, *rd = g_counts + 3 * H;
    size_t mlo, mhi;
    slice(n, g_rank, &mlo, &mhi);
    size_t m = mhi - mlo;
    if ((size_t)H * m > g_recv_cap) {
        float *p = realloc(g_recv, (size_t)H * m * sizeof *p);
        if (!p) return xt_fail(e, XT_ERUNTIME, "out of memory for the cross-host reduce (%zu floats)", (size_t)H * m);
        g_recv = p;
        g_recv_cap = (size_t)H * m;
    }
    for (int r = 0; r < H; r++) { /* send rank r its slice of buf; receive my slice from every rank */
        size_t lo, hi;
        slice(n, r, &lo, &hi);
        sc[r] = (int)(hi - lo);
        sd[r] = (int)lo;
        rc_[r] = (int)m;
        rd[r] = (int)((size_t)r * m);
    }
    MPI_Request req;
    int rc = MPI_Ialltoallv(buf, sc, sd, MPI_FLOAT, g_recv, rc_, rd, MPI_FLOAT, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Ialltoallv", e);
    if ((rc = finish(&req, "MPI_Ialltoallv (reduce-scatter)", e))) return rc;
    for (size_t i = 0; i < m; i++) { /* rank order: the same bits whatever the slicing */
        float s = g_recv[i];
        for (int r = 1; r < H; r++) s += g_recv[(size_t)r * m + i];
        buf[mlo + i] = s * scale;
    }
    rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, buf, sc, sd, MPI_FLOAT, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Iallgatherv", e);
    return finish(&req, "MPI_Iallgatherv (all-gather)", e);
}

int xt_cluster_sum_floats(float *buf, size_t n, float scale, xt_err *e) {
    if (g_size == 1) {
        for (size_t i = 0; i < n; i++) buf[i] = buf[i] * scale;
        return 0;
    }
    size_t piece = ((size_t)INT32_MAX / 2 / 16) * 16;
    for (size_t off = 0; off < n; off += piece) {
        int rc = sum_piece(buf + off, n - off < piece ? n - off : piece, scale, e);
        if (rc) return rc;
    }
    return 0;
}

int xt_cluster_sum_doubles(double *vals, int k, xt_err *e) {
    if (g_size == 1 || k <= 0) return 0;
    double *all = malloc((size_t)g_size * (size_t)k * sizeof *all);
    if (!all) return xt_fail(e, XT_ERUNTIME, "out of memory for a cross-host sum of %d values", k);
    int rc = xt_cluster_allgather(vals, all, (size_t)k * sizeof *vals, e);
    for (int j = 0; j < k && !rc; j++) {
        double s = all[j];
        for (int r = 1; r < g_size; r++) s += all[(size_t)r * (size_t)k + (size_t)j];
        vals[j] = s;
    }
    free(all);
    return rc;
}

/* A rank that failed alone: tell rank 0 why, and give it time to write the
 * run's summary and end the job (its MPI_Abort ends this process too). */
static void tell_rank0(const char *why) {
    char note[1024];
    snprintf(note, sizeof note, "%s", why && *why ? why : "failed (no message)");
    MPI_Request req;
    if (MPI_Isend(note, (int)strlen(note) + 1, MPI_CHAR, 0, TAG_FAILURE, MPI_COMM_WORLD, &req) != MPI_SUCCESS) return;
    int64_t deadline = now_ns() + (int64_t)(XT_CLUSTER_FAIL_WAIT_S * 1e9);
    while (now_ns() < deadline) {
        int done = 0;
        MPI_Test(&req, &done, MPI_STATUS_IGNORE); /* progress the send; rank 0 ends us */
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}

void xt_cluster_exit(int code, int agreed, const char *why) {
    if (!g_joined) return;
    fflush(NULL);
    if (!agreed && g_size > 1) {
        if (g_rank != 0) tell_rank0(why);
        MPI_Abort(MPI_COMM_WORLD, code ? code : XT_ERUNTIME);
    }
    /* mpirun tears the job down as soon as one rank exits non-zero (130 after
     * a stop, 6 below target): wait until every rank is done writing first */
    MPI_Request req;
    xt_err ignored = {0};
    if (g_size > 1 && MPI_Ibarrier(MPI_COMM_WORLD, &req) == MPI_SUCCESS) finish(&req, "MPI_Ibarrier", &ignored);
    MPI_Finalize();
    free(g_recv);
    free(g_counts);
    g_joined = 0;
}

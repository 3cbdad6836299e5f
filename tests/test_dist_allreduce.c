/* test_dist_allreduce.c — collectives over forked workers: all-reduce against
 * a fixed-order serial sum (bitwise), chunking, mesh-reduce, barrier under
 * contention, serial sections, collective mismatch, world of one. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "distributed/allreduce.h"
#include "distributed/shm.h"
#include "distributed/spawn.h"
#include "test.h"

/* MAP_SHARED scratch the test and its workers share (the region under test is not used for this). */
static void *shared(size_t size) {
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        _exit(1);
    }
    return p;
}

/* Rank r's gradient element i at step s: an integer of up to 16 bits times a
 * power of two in 2^-12..2^11, so sums round and the order of summation
 * matters; the product is exact, so fused multiply-add cannot change it. */
static float val(int r, int s, size_t i) {
    static const float pw[24] = {1.f / 4096, 1.f / 2048, 1.f / 1024, 1.f / 512, 1.f / 256, 1.f / 128, 1.f / 64, 1.f / 32,
                                 1.f / 16,   1.f / 8,    1.f / 4,    1.f / 2,   1.f,       2.f,       4.f,      8.f,
                                 16.f,       32.f,       64.f,       128.f,     256.f,     512.f,     1024.f,   2048.f};
    uint32_t h = (uint32_t)i * 2654435761u ^ ((uint32_t)r * 0x9E3779B9u + (uint32_t)s * 0x85EBCA6Bu);
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    return (float)((int)(h & 0xFFFF) - 32768) * pw[(h >> 16) % 24];
}

/* The reference: rows summed in ordinal order in float, then scaled by 1/n. */
static float ref(int n, int s, size_t i) {
    float sum = val(0, s, i);
    for (int r = 1; r < n; r++) sum += val(r, s, i);
    return sum * (1.0f / (float)n);
}

typedef struct {
    xt_dist *d;
    const size_t *lens;
    int nlens;
} ar_args;

static int fail_report(xt_dist *d, int rank, const char *fmt, size_t a, int b, size_t c, float got, float want) {
    xt_err e = {0};
    xt_fail(&e, 1, fmt, a, b, c, (double)got, (double)want);
    xt_dist_report(d, rank, &e);
    return 1;
}

static int ar_worker(int rank, void *arg) {
    ar_args *a = arg;
    int n = xt_dist_world(a->d);
    xt_err e = {0};
    for (int li = 0; li < a->nlens; li++) {
        size_t len = a->lens[li];
        int steps = len <= 1000 ? 60 : len <= 21900 ? 8 : 2;
        float *own = malloc(len * sizeof(float));
        if (!own) return 2;
        for (int s = 0; s < steps; s++) {
            int salt = li * 1000 + s;
            /* step % 3: 0 a private buffer, 1 the shared row in place, 2 the zero-copy variant */
            int way = len <= xt_dist_grad_cap(a->d) ? s % 3 : 0;
            float *buf = way ? xt_dist_grad_row(a->d, rank) : own;
            for (size_t i = 0; i < len; i++) buf[i] = val(rank, salt, i);
            const float *res = buf;
            if (way == 2) res = xt_allreduce_row(a->d, rank, len, &e);
            else if (xt_allreduce(a->d, rank, buf, len, &e)) res = NULL;
            if (!res) {
                xt_dist_report(a->d, rank, &e);
                free(own);
                return e.code;
            }
            for (size_t i = 0; i < len; i++) {
                float want = ref(n, salt, i);
                if (memcmp(&res[i], &want, sizeof want) != 0) {
                    float got = res[i];
                    free(own);
                    return fail_report(a->d, rank, "len %zu step %d: element %zu is %a, want %a", len, s, i, got, want);
                }
            }
        }
        free(own);
    }
    return 0;
}

TEST(dist_allreduce_matches_fixed_order_sum) {
    static const size_t lens[] = {1, 2, 15, 16, 17, 1000, 21900, 65537, 1 << 20};
    for (int n = 1; n <= 8; n++) {
        xt_dist *d;
        xt_err e = {0};
        CHECK_EQ(xt_dist_create(&d, n, 1 << 20, &e), 0);
        ar_args a = {d, lens, (int)(sizeof lens / sizeof lens[0])};
        int rc = xt_spawn(d, n, ar_worker, &a, NULL, &e);
        CHECK_MSG(rc == 0, "N=%d: rc %d: %s", n, rc, e.msg);
        xt_dist_destroy(d);
    }
}

TEST(dist_allreduce_longer_than_capacity_is_chunked) {
    static const size_t lens[] = {999, 1000, 1001, 21900, 65537};
    xt_dist *d;
    xt_err e = {0};
    CHECK_EQ(xt_dist_create(&d, 3, 1000, &e), 0);
    ar_args a = {d, lens, 5};
    int rc = xt_spawn(d, 3, ar_worker, &a, NULL, &e);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, e.msg);
    xt_dist_destroy(d);
}

TEST(dist_allreduce_result_is_identical_in_every_rank_and_run) {
    /* the reduced vector does not depend on N's slicing: run it twice, compare the bits */
    enum { LEN = 21900 };
    float *out = shared(2 * LEN * sizeof(float));
    for (int run = 0; run < 2; run++) {
        xt_dist *d;
        xt_err e = {0};
        CHECK_EQ(xt_dist_create(&d, 3, LEN, &e), 0);
        xt_dist_set_wait_timeout(d, 20);
        pid_t kids[3];
        for (int r = 0; r < 3; r++) {
            kids[r] = fork();
            if (kids[r] == 0) {
                float *g = malloc(LEN * sizeof(float));
                for (size_t i = 0; i < LEN; i++) g[i] = val(r, 7, i);
                int rc = xt_allreduce(d, r, g, LEN, &e);
                if (r == run) memcpy(out + (size_t)run * LEN, g, LEN * sizeof(float)); /* a different rank each run */
                free(g);
                _exit(rc);
            }
        }
        for (int r = 0; r < 3; r++) {
            int st = 0;
            waitpid(kids[r], &st, 0);
            CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        }
        xt_dist_destroy(d);
    }
    CHECK(memcmp(out, out + LEN, LEN * sizeof(float)) == 0);
    munmap(out, 2 * LEN * sizeof(float));
}

/* ---- mesh-reduce -------------------------------------------------------- */

static int mesh_worker(int rank, void *arg) {
    xt_dist *d = arg;
    int n = xt_dist_world(d);
    xt_err e = {0};
    for (int it = 0; it < 2000; it++) {
        int k = 1 + it % XT_MESH_MAX;
        double v[XT_MESH_MAX];
        for (int j = 0; j < k; j++) v[j] = (double)(rank * 1000003 + it * 31 + j);
        if (xt_mesh_reduce_sum(d, rank, v, k, &e)) return 4;
        for (int j = 0; j < k; j++) {
            double want = 0;
            for (int r = 0; r < n; r++) want += (double)(r * 1000003 + it * 31 + j);
            if (v[j] != want) return 1;
        }
    }
    double too_many[XT_MESH_MAX + 1] = {0};
    if (xt_mesh_reduce_sum(d, rank, too_many, XT_MESH_MAX + 1, &e) != XT_ERUNTIME) return 1;
    if (!strstr(e.msg, "at most")) return 1;
    return 0;
}

TEST(dist_mesh_reduce_sums_across_replicas) {
    xt_dist *d;
    xt_err e = {0};
    CHECK_EQ(xt_dist_create(&d, 5, 0, &e), 0);
    int rc = xt_spawn(d, 5, mesh_worker, d, NULL, &e);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, e.msg);
    xt_dist_destroy(d);
}

/* ---- barrier under contention --------------------------------------------- */

typedef struct {
    xt_dist *d;
    volatile int *round; /* round[rank]: the last round that rank entered */
    int rounds;
} bar_args;

static int bar_worker(int rank, void *arg) {
    bar_args *a = arg;
    int n = xt_dist_world(a->d);
    xt_err e = {0};
    for (int r = 0; r < a->rounds; r++) {
        a->round[rank * 16] = r;
        if (xt_dist_barrier(a->d, rank, &e)) return 4;
        /* after barrier r everyone entered round r, and nobody can be past round r+1 */
        for (int k = 0; k < n; k++) {
            int v = a->round[k * 16];
            if (v != r && v != r + 1) return 1;
        }
        if ((r & 255) == 0) xt_dist_heartbeat(a->d, rank, r);
    }
    return 0;
}

TEST(dist_barrier_under_contention_8_workers) {
    xt_dist *d;
    xt_err e = {0};
    CHECK_EQ(xt_dist_create(&d, 8, 0, &e), 0);
    bar_args a = {d, shared(8 * 16 * sizeof(int)), 4000};
    xt_spawn_opts o = {.timeout_s = 20};
    int rc = xt_spawn(d, 8, bar_worker, &a, &o, &e);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, e.msg);
    munmap((void *)a.round, 8 * 16 * sizeof(int));
    xt_dist_destroy(d);
}

/* ---- serial sections ---------------------------------------------------------- */

typedef struct {
    xt_dist *d;
    volatile int *log; /* [0] = inside, [1] = count, [2..] = ranks in order */
} ser_args;

typedef struct {
    ser_args *a;
    int rank;
} ser_call;

static int ser_fn(void *arg, xt_err *e) {
    ser_call *c = arg;
    volatile int *log = c->a->log;
    if (__atomic_fetch_add(&log[0], 1, __ATOMIC_SEQ_CST) != 0) return xt_fail(e, 1, "two processes in the serial section");
    usleep(2000);
    log[2 + log[1]] = c->rank;
    log[1] = log[1] + 1;
    __atomic_fetch_sub(&log[0], 1, __ATOMIC_SEQ_CST);
    return c->rank == 2 ? XT_EDATA : 0; /* a failing section still passes the turn on */
}

static int ser_worker(int rank, void *arg) {
    ser_args *a = arg;
    ser_call c = {a, rank};
    xt_err e = {0};
    for (int round = 0; round < 3; round++) {
        int rc = xt_dist_serial(a->d, rank, ser_fn, &c, &e);
        if (rc != (rank == 2 ? XT_EDATA : 0)) return 1;
    }
    return 0;
}

TEST(dist_serial_runs_one_at_a_time_in_ordinal_order) {
    xt_dist *d;
    xt_err e = {0};
    CHECK_EQ(xt_dist_create(&d, 4, 0, &e), 0);
    ser_args a = {d, shared(4096)};
    int rc = xt_spawn(d, 4, ser_worker, &a, NULL, &e);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, e.msg);
    CHECK_EQ(a.log[1], 12);
    for (int i = 0; i < 12; i++) CHECK_EQ(a.log[2 + i], i % 4);
    munmap((void *)a.log, 4096);
    xt_dist_destroy(d);
}

/* ---- misuse -------------------------------------------------------------------- */

static int mismatch_worker(int rank, void *arg) {
    xt_dist *d = arg;
    xt_err e = {0};
    float g[200] = {0};
    int rc = xt_allreduce(d, rank, g, rank == 0 ? 100 : 200, &e);
    if (rc != XT_ERUNTIME || !strstr(e.msg, "collective mismatch")) return 1;
    xt_dist_report(d, rank, &e);
    return rc;
}

TEST(dist_collective_mismatch_is_detected_not_garbage) {
    xt_dist *d;
    xt_err e = {0};
    CHECK_EQ(xt_dist_create(&d, 2, 256, &e), 0);
    int rc = xt_spawn(d, 2, mismatch_worker, d, NULL, &e);
    CHECK_EQ(rc, XT_ERUNTIME);
    CHECK_STR_CONTAINS(e.msg, "collective mismatch");
    CHECK_STR_CONTAINS(e.msg, "all-reduce of 100 floats");
    CHECK_STR_CONTAINS(e.msg, "all-reduce of 200 floats");
    xt_dist_destroy(d);
}

static int mixed_worker(int rank, void *arg) {
    xt_dist *d = arg;
    xt_err e = {0};
    double v[2] = {1, 2};
    int rc = rank == 0 ? xt_mesh_reduce_sum(d, rank, v, 2, &e) : xt_dist_barrier(d, rank, &e);
    return rc == XT_ERUNTIME && strstr(e.msg, "mesh-reduce of 2 values") ? 0 : 1;
}

TEST(dist_mixed_collectives_are_detected) {
    xt_dist *d;
    xt_err e = {0};
    CHECK_EQ(xt_dist_create(&d, 2, 0, &e), 0);
    int rc = xt_spawn(d, 2, mixed_worker, d, NULL, &e);
    /* both workers returned 0, but the run was aborted by the mismatch */
    CHECK_EQ(rc, XT_ERUNTIME);
    CHECK_STR_CONTAINS(e.msg, "collective mismatch");
    xt_dist_destroy(d);
}

static int count_calls(void *arg, xt_err *e) {
    (*(int *)arg)++;
    return 0;
}

TEST(dist_world_of_one_in_process) {
    xt_err e = {0};
    float g[33];
    for (int i = 0; i < 33; i++) g[i] = (float)i * 0.5f;
    double v[3] = {1, 2, 3};
    int calls = 0;
    /* NULL context: everything is a no-op on one replica */
    CHECK_EQ(xt_allreduce(NULL, 0, g, 33, &e), 0);
    CHECK_EQ(xt_mesh_reduce_sum(NULL, 0, v, 3, &e), 0);
    CHECK_EQ(xt_dist_barrier(NULL, 0, &e), 0);
    CHECK_EQ(xt_dist_serial(NULL, 0, count_calls, &calls, &e), 0);
    CHECK_EQ(xt_dist_should_stop(NULL), 0);
    CHECK_EQ(xt_dist_world(NULL), 1);
    /* a real context of one, no fork */
    xt_dist *d;
    CHECK_EQ(xt_dist_create(&d, 1, 64, &e), 0);
    CHECK_EQ(xt_allreduce(d, 0, g, 33, &e), 0);
    CHECK_EQ(xt_allreduce(d, 0, g, 1000, &e), 0); /* longer than the capacity: still fine */
    for (int i = 0; i < 33; i++) CHECK(g[i] == (float)i * 0.5f);
    CHECK_EQ(xt_mesh_reduce_sum(d, 0, v, 3, &e), 0);
    CHECK(v[0] == 1 && v[1] == 2 && v[2] == 3);
    CHECK_EQ(xt_dist_barrier(d, 0, &e), 0);
    CHECK_EQ(xt_dist_serial(d, 0, count_calls, &calls, &e), 0);
    CHECK_EQ(calls, 2);
    CHECK_EQ(xt_dist_should_stop(d), 0);
    xt_dist_request_stop(d, 0);
    CHECK_EQ(xt_dist_should_stop(d), 1);
    CHECK_EQ(xt_allreduce(d, 1, g, 33, &e), XT_ERUNTIME); /* rank out of range */
    CHECK_STR_CONTAINS(e.msg, "rank 1");
    xt_dist_abort(d, 0, "test %d", 42);
    CHECK_EQ(xt_dist_barrier(d, 0, &e), XT_ERUNTIME);
    CHECK_STR_CONTAINS(e.msg, "test 42");
    /* and the alignment promises */
    CHECK(((uintptr_t)xt_dist_grad_row(d, 0) & 63) == 0);
    CHECK(((uintptr_t)xt_dist_grad_sum(d) & 63) == 0);
    xt_dist_destroy(d);
    CHECK_EQ(xt_dist_create(&d, 0, 10, &e), XT_EUSAGE);
    CHECK(d == NULL);
}

TEST(dist_rows_are_aligned_for_every_world) {
    xt_err e = {0};
    for (int n = 1; n <= 8; n++) {
        xt_dist *d;
        CHECK_EQ(xt_dist_create(&d, n, 21900 + (size_t)n, &e), 0);
        for (int r = 0; r < n; r++) CHECK(((uintptr_t)xt_dist_grad_row(d, r) & 63) == 0);
        CHECK(((uintptr_t)xt_dist_grad_sum(d) & 63) == 0);
        CHECK(xt_dist_grad_cap(d) == 21900 + (size_t)n);
        xt_dist_destroy(d);
    }
}

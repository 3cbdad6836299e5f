// Build and run (from the repository root):
// cc -std=c11 -D_GNU_SOURCE -O3 -march=native -DXT_ALLREDUCE_BENCH_MAIN -Isrc src/util/err.c src/distributed/*.c tests/bench/allreduce_bench.c -o /tmp/allreduce_bench -lpthread -lm -lrt && /tmp/allreduce_bench

/* allreduce_bench.c — time xt_allreduce for the seed CNN (21,900 floats) and
 * wide_cnn (1,199,882 floats) at N = 1, 2, 4 forked workers.
 *
 * Each iteration: every worker writes fresh gradients (as backward would)
 * and meets the others at a barrier (both untimed), then times one
 * xt_allreduce. Reported: the median (and 10th/90th percentiles) over the
 * iterations of the slowest worker's time, for a private buffer ("copy":
 * copied into the shared row and back), for gradients written straight into
 * the worker's shared row ("in row": one copy fewer), and for
 * xt_allreduce_row() ("zero-copy": the result is read from the shared
 * reduced vector, no copy at all).
 *
 * Without -DXT_ALLREDUCE_BENCH_MAIN this file is empty, so the Makefile's
 * glob of tests/ can link it into the test runner without a second main().
 */
#ifndef XT_ALLREDUCE_BENCH_MAIN
typedef int xt_allreduce_bench_not_built; /* ISO C wants a declaration in every file */
#else

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "distributed/allreduce.h"
#include "distributed/barrier.h"
#include "distributed/shm.h"
#include "distributed/spawn.h"

typedef struct {
    xt_dist *d;
    size_t len;
    int iters, way; /* 0 copy, 1 in row, 2 zero-copy */
    double *times; /* (world, iters) seconds, MAP_SHARED */
} bench_args;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int bench_worker(int rank, void *arg) {
    bench_args *a = arg;
    xt_err e = {0};
    float *own = malloc(a->len * sizeof(float));
    if (!own) return XT_ERUNTIME;
    float *buf = a->way ? xt_dist_grad_row(a->d, rank) : own;
    int warmup = a->iters / 10 + 2;
    for (int it = -warmup; it < a->iters; it++) {
        /* as backward() would: fresh gradients every step (this moves the cache lines back to this core) */
        for (size_t i = 0; i < a->len; i++) buf[i] = (float)((i + (size_t)it) % 97) * 0.01f + (float)rank;
        if (xt_dist_barrier(a->d, rank, &e)) return e.code;
        double t0 = now_s();
        if (a->way == 2 ? !xt_allreduce_row(a->d, rank, a->len, &e) : xt_allreduce(a->d, rank, buf, a->len, &e) != 0)
            return e.code;
        double t1 = now_s();
        if (it >= 0) a->times[(size_t)rank * (size_t)a->iters + (size_t)it] = t1 - t0;
    }
    free(own);
    return 0;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Median, p10, p90 (microseconds) of the per-iteration slowest worker. */
static int measure(size_t len, int n, int iters, int way, double out[3]) {
    xt_err e = {0};
    xt_dist *d;
    if (xt_dist_create(&d, n, len, &e)) {
        fprintf(stderr, "allreduce_bench: %s\n", e.msg);
        return 1;
    }
    size_t bytes = (size_t)n * (size_t)iters * sizeof(double);
    double *times = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (times == MAP_FAILED) return 1;
    bench_args a = {d, len, iters, way, times};
    xt_spawn_opts o = {.timeout_s = 60};
    int rc = xt_spawn(d, n, bench_worker, &a, &o, &e);
    if (rc) {
        fprintf(stderr, "allreduce_bench: %s\n", e.msg);
        return 1;
    }
    double *worst = malloc((size_t)iters * sizeof(double));
    for (int it = 0; it < iters; it++) {
        worst[it] = 0;
        for (int r = 0; r < n; r++)
            if (times[(size_t)r * (size_t)iters + (size_t)it] > worst[it]) worst[it] = times[(size_t)r * (size_t)iters + (size_t)it];
    }
    qsort(worst, (size_t)iters, sizeof(double), cmp_double);
    out[0] = worst[iters / 2] * 1e6;
    out[1] = worst[iters / 10] * 1e6;
    out[2] = worst[iters * 9 / 10] * 1e6;
    free(worst);
    munmap(times, bytes);
    xt_dist_destroy(d);
    return 0;
}

int main(void) {
    static const struct {
        const char *model;
        size_t len;
        int iters;
    } cases[] = {{"seed_cnn", 21900, 4000}, {"wide_cnn", 1199882, 300}};
    static const int worlds[] = {1, 2, 4};
    printf("xt_allreduce (sum, then x 1/N): median [p10, p90] in microseconds of the slowest worker per iteration; %d CPUs available\n",
           xt_cpus_allowed());
    printf("%-9s %10s %2s %6s  %-27s %-27s %-27s\n", "model", "floats", "N", "iters", "copy", "in row", "zero-copy");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
            char num[32], col[3][64];
            for (int way = 0; way < 3; way++) {
                double t[3];
                if (measure(cases[c].len, worlds[w], cases[c].iters, way, t)) return 1;
                snprintf(col[way], sizeof col[way], "%8.1f [%7.1f, %7.1f]", t[0], t[1], t[2]);
            }
            xt_commas(num, cases[c].len);
            printf("%-9s %10s %2d %6d  %-27s %-27s %-27s\n", cases[c].model, num, worlds[w], cases[c].iters, col[0], col[1], col[2]);
        }
    return 0;
}

#endif

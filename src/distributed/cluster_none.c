/* cluster_none.c — cluster.h for the default build (no MPI): this process is
 * the whole cluster, rank 0 of 1, and every collective is the identity (or
 * the scaling). `make MPI=1` compiles cluster_mpi.c instead. */
#include "distributed/cluster.h"

#include <string.h>

int xt_cluster_init(int *argc, char ***argv, xt_err *e) {
    (void)argc;
    (void)argv;
    (void)e;
    return 0;
}

int xt_cluster_rank(void) { return 0; }
int xt_cluster_size(void) { return 1; }
const char *xt_cluster_library(void) { return "no MPI; make MPI=1 builds multi-host support"; }

int xt_cluster_allgather(const void *mine, void *all, size_t bytes, xt_err *e) {
    (void)e;
    memmove(all, mine, bytes);
    return 0;
}

int xt_cluster_bcast(void *buf, size_t bytes, xt_err *e) {
    (void)buf;
    (void)bytes;
    (void)e;
    return 0;
}

int xt_cluster_sum_floats(float *buf, size_t n, float scale, xt_err *e) {
    (void)e;
    for (size_t i = 0; i < n; i++) buf[i] = buf[i] * scale;
    return 0;
}

int xt_cluster_sum_doubles(double *vals, int k, xt_err *e) {
    (void)vals;
    (void)k;
    (void)e;
    return 0;
}

void xt_cluster_watch(const _Atomic uint32_t *stop, double grace_s) {
    (void)stop;
    (void)grace_s;
}

void xt_cluster_exit(int code, int agreed, const char *why) {
    (void)code;
    (void)agreed;
    (void)why;
}

int xt_cluster_failure_note(xt_err *e) {
    (void)e;
    return 0;
}

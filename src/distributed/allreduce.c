/* allreduce.c — reduce-scatter + all-gather over the shared staging rows; see allreduce.h.
 *
 * Per chunk of up to grad_cap floats, with two barriers:
 *   1. rank r copies its chunk into row r                      (own row only)
 *   barrier A (+ every rank checks the others called the same collective)
 *   2. rank r sums rows 0..N-1 over its slice into the reduced vector
 *   barrier B
 *   3. rank r copies the whole reduced vector back
 * With other hosts (uplink.h) the local sum is left unscaled and, between
 * barrier B and phase 3, local rank 0 hands it to the parent, which returns
 * the global mean in the same place.
 * Two barriers suffice across steps: the next step's phase 1 writes row r,
 * which others read only in phase 2 (finished before barrier B); its phase 2
 * writes the reduced vector only after the next barrier A, which everyone
 * reaches after finishing phase 3.
 *
 * Slices are whole groups of 16 floats (64 bytes: one cache line, one
 * AVX-512 register), so no two ranks write the same cache line. The rows are
 * 64-byte aligned and padded to a multiple of 16 floats, so the last group
 * may run past len into the padding (harmless: never read back).
 */
#include "distributed/allreduce.h"

#include <string.h>

#include "distributed/shm_layout.h"
#include "distributed/uplink.h"

/* 16 floats; the compiler maps it onto whatever SIMD width the target has. */
typedef float xt_v16 __attribute__((vector_size(64), may_alias));

/* out[g] = (rows_0[g] + rows_1[g] + ... + rows_{n-1}[g]) * scale for groups g0..g1-1,
 * summed in row order (the result does not depend on the slicing). */
static void reduce_groups(float *out, const float *rows, size_t stride, int n, size_t g0, size_t g1, float scale) {
    xt_v16 *o = (xt_v16 *)out;
    const xt_v16 *r = (const xt_v16 *)rows;
    size_t vs = stride / 16;
    xt_v16 sc = {0};
    sc += scale;
    switch (n) { /* the common world sizes without the inner loop */
    case 2:
        for (size_t g = g0; g < g1; g++) o[g] = (r[g] + r[vs + g]) * sc;
        return;
    case 4:
        for (size_t g = g0; g < g1; g++) o[g] = (((r[g] + r[vs + g]) + r[2 * vs + g]) + r[3 * vs + g]) * sc;
        return;
    default:
        for (size_t g = g0; g < g1; g++) {
            xt_v16 s = r[g];
            for (int k = 1; k < n; k++) s += r[(size_t)k * vs + g];
            o[g] = s * sc;
        }
    }
}

/* The all-reduce of buf[0..len) through the shared rows; copy_out = 0 leaves
 * the result in the reduced vector only (then len <= cap, buf is the row). */
static int allreduce(xt_dist *d, int rank, float *buf, size_t len, int copy_out, xt_err *e) {
    int n = d->world;
    float *row = xt_dist_rows(d) + (size_t)rank * d->stride;
    float *sum = xt_dist_sum(d);
    /* linked to other hosts: the local sum goes out unscaled, the parent scales the global one */
    float scale = d->hosts > 1 ? 1.0f : 1.0f / (float)n;
    int rc = 0;
    for (size_t off = 0; off < len;) {
        size_t m = len - off < d->cap ? len - off : d->cap;
        if (buf + off != row) memcpy(row, buf + off, m * sizeof(float));
        rc = off == 0 ? xt_dist_collective(d, rank, XT_COLL_ALLREDUCE, len, NULL, e) : xt_dist_wait(d, rank, "all-reduce", e);
        if (rc) return rc;
        size_t groups = (m + 15) / 16;
        size_t g0 = groups * (size_t)rank / (size_t)n, g1 = groups * (size_t)(rank + 1) / (size_t)n;
        reduce_groups(sum, xt_dist_rows(d), d->stride, n, g0, g1, scale);
        rc = xt_dist_wait(d, rank, "all-reduce", e);
        if (!rc && d->hosts > 1) rc = xt_uplink_exchange(d, rank, XT_COLL_ALLREDUCE, m, NULL, e);
        if (rc) return rc;
        if (copy_out) memcpy(buf + off, sum, m * sizeof(float));
        off += m;
    }
    return 0;
}

int xt_allreduce(xt_dist *d, int rank, float *buf, size_t len, xt_err *e) {
    if (!d) return 0;
    int rc = xt_dist_check(d, rank, "all-reduce", e);
    if (rc) return rc;
    if ((d->world == 1 && d->hosts <= 1) || len == 0) return 0;
    if (d->cap == 0)
        return xt_fail(e, XT_ERUNTIME, "xla:%d: all-reduce of %zu floats: the shared region has no gradient block (created with grad_cap 0)", rank, len);
    return allreduce(d, rank, buf, len, 1, e);
}

const float *xt_allreduce_row(xt_dist *d, int rank, size_t len, xt_err *e) {
    if (!d) {
        xt_fail(e, XT_ERUNTIME, "all-reduce in the shared row: no shared region");
        return NULL;
    }
    if (xt_dist_check(d, rank, "all-reduce", e)) return NULL;
    float *row = xt_dist_rows(d) + (size_t)rank * d->stride;
    if (len > d->cap) {
        xt_fail(e, XT_ERUNTIME, "xla:%d: all-reduce of %zu floats in the shared row, which holds %zu", rank, len, d->cap);
        return NULL;
    }
    if (d->world == 1 && d->hosts <= 1) return row; /* the sum of one */
    if (len == 0) return xt_dist_sum(d);
    return allreduce(d, rank, row, len, 0, e) ? NULL : xt_dist_sum(d);
}

const float *xt_allreduce_result(xt_dist *d, int rank) {
    if (!d) return NULL;
    return d->world == 1 && d->hosts <= 1 ? xt_dist_rows(d) + (size_t)rank * d->stride : xt_dist_sum(d);
}

int xt_mesh_reduce_sum(xt_dist *d, int rank, double *vals, int k, xt_err *e) {
    if (!d) return 0;
    int rc = xt_dist_check(d, rank, "mesh-reduce", e);
    if (rc) return rc;
    if (k < 0 || k > XT_MESH_MAX)
        return xt_fail(e, XT_ERUNTIME, "xla:%d: mesh-reduce of %d values; at most %d per call", rank, k, XT_MESH_MAX);
    int n = d->world;
    if ((n == 1 && d->hosts <= 1) || k == 0) return 0;
    /* double-buffered by call parity: one barrier per call is enough */
    uint32_t call = xt_dist_slot(d, rank)->calls;
    double *scratch = xt_dist_mesh(d) + (size_t)(call & 1) * (size_t)n * XT_MESH_MAX;
    memcpy(scratch + (size_t)rank * XT_MESH_MAX, vals, (size_t)k * sizeof(double));
    rc = xt_dist_collective(d, rank, XT_COLL_MESH, (uint64_t)k, &call, e);
    if (rc) return rc;
    for (int j = 0; j < k; j++) {
        double s = scratch[j];
        for (int r = 1; r < n; r++) s += scratch[(size_t)r * XT_MESH_MAX + j];
        vals[j] = s;
    }
    return d->hosts > 1 ? xt_uplink_exchange(d, rank, XT_COLL_MESH, (uint64_t)k, vals, e) : 0;
}

/* allreduce.h — collectives over the shared region (shm.h): gradient
 * all-reduce, small-vector sum, barrier (shm.h).
 *
 * Every rank must call the same collectives in the same order with the same
 * lengths (a length mismatch is detected and aborts the run). A NULL context
 * or a world of one makes them no-ops. Results are bitwise identical on every
 * rank and from run to run: the N contributions are always summed in ordinal
 * order 0, 1, ..., N-1.
 */
#ifndef XT_DIST_ALLREDUCE_H
#define XT_DIST_ALLREDUCE_H

#include <stddef.h>

#include "distributed/shm.h"
#include "util/err.h"

/* In place: buf[i] = (buf_0[i] + buf_1[i] + ... + buf_{N-1}[i]) * (1.0f / N),
 * where buf_r is rank r's buf (the mean gradient, as xm.all_reduce with
 * scale 1/world_size). How: each rank copies buf into its shared row,
 * barrier, each rank sums the rows over its own 16-float-aligned slice into
 * the reduced vector (reduce-scatter), barrier, each rank copies the reduced
 * vector back into buf (all-gather). buf == xt_dist_grad_row(d, rank) skips
 * the first copy. len may exceed the context's grad_cap (done in chunks).
 * Returns 0, or XT_ERUNTIME if the run was aborted, a wait timed out or the
 * ranks disagree on len; e says which. */
int xt_allreduce(xt_dist *d, int rank, float *buf, size_t len, xt_err *e);

/* Zero-copy variant: the caller has written its len (<= grad_cap) floats
 * into xt_dist_grad_row(d, rank); returns the reduced vector (the shared
 * xt_dist_grad_sum(), or the row itself in a world of one) without copying
 * it back, valid until this rank's next all-reduce. NULL on error (e says). */
const float *xt_allreduce_row(xt_dist *d, int rank, size_t len, xt_err *e);
/* Where xt_allreduce_row leaves the mean: the same address on every call,
 * so a plan can read it in place (xt_engine_opts.collective_result). */
const float *xt_allreduce_result(xt_dist *d, int rank);

/* vals[j] = sum over ranks of vals[j], j < k <= XT_MESH_MAX, in double,
 * summed in ordinal order, result on every rank (like xm.mesh_reduce with a
 * sum: e.g. correct/total counts during eval). */
int xt_mesh_reduce_sum(xt_dist *d, int rank, double *vals, int k, xt_err *e);

/* Wait for every rank; declared in shm.h, repeated here for convenience. */
int xt_dist_barrier(xt_dist *d, int rank, xt_err *e);

#endif

/* cluster.h — the transport between hosts: the few MPI operations xlatrain
 * needs, behind one interface with two implementations. cluster_mpi.c
 * (built by `make MPI=1`, through mpicc) uses Open MPI; cluster_none.c (the
 * default build) is a cluster of one host, so the rest of the code never
 * asks which build it is in.
 *
 * One MPI rank per host (or socket): the process mpirun/srun started. Only
 * that process calls these functions; the workers it forks never touch MPI
 * (a forked copy of an MPI process must not use it). Every rank must make
 * the same calls in the same order, as with any MPI collective.
 *
 * Results are deterministic: sums go over the ranks in rank order
 * (0, 1, ..., H-1), never in an order the MPI library picks, so a layout
 * gives the same bits run after run.
 *
 * Not here: the shared-memory side of a host (shm.c, allreduce.c), or when a
 * host's leader exchanges what (uplink.c).
 */
#ifndef XT_DIST_CLUSTER_H
#define XT_DIST_CLUSTER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* Join the cluster when this process was started by mpirun or srun (their
 * environment says so); otherwise, and always in a build without MPI, this
 * process is the whole cluster (rank 0 of 1). Call first thing in main. */
int xt_cluster_init(int *argc, char ***argv, xt_err *e);

int xt_cluster_rank(void);  /* 0 .. size-1 */
int xt_cluster_size(void);  /* hosts (MPI ranks); 1 without mpirun */

/* "Open MPI v4.1.4" in an MPI build, "no MPI" otherwise (--version). */
const char *xt_cluster_library(void);

/* all[r * bytes .. (r + 1) * bytes) = rank r's mine[0 .. bytes), on every rank. */
int xt_cluster_allgather(const void *mine, void *all, size_t bytes, xt_err *e);

/* buf on every rank = rank 0's buf. */
int xt_cluster_bcast(void *buf, size_t bytes, xt_err *e);

/* In place, on every rank: buf[i] = (buf_0[i] + buf_1[i] + ... + buf_{H-1}[i]) * scale,
 * buf_r being rank r's buf, summed in rank order in float. A reduce-scatter
 * (each rank sums its slice of whole 16-float groups) then an all-gather, so
 * each rank sends and receives about 2 n (H-1)/H floats. */
int xt_cluster_sum_floats(float *buf, size_t n, float scale, xt_err *e);

/* vals[j] = sum over ranks of vals[j] (double, rank order), on every rank. */
int xt_cluster_sum_doubles(double *vals, int k, xt_err *e);

/* While a collective waits for the other ranks and *stop is non-zero (a
 * stop was asked: SIGTERM from mpirun, which also goes to a job being torn
 * down after another rank's MPI_Abort), give the others grace_s more, then
 * fail the collective: a rank that is gone never answers. NULL: wait on. */
void xt_cluster_watch(const _Atomic uint32_t *stop, double grace_s);

/* Leave the cluster. agreed: every rank ends the same way (success, a stop
 * they agreed on, a failure they all know about): wait for the others
 * (MPI_Finalize), so none is killed while it writes. Otherwise this rank
 * failed alone: MPI_Abort ends every rank's processes with exit code code.
 * A rank other than 0 first sends `why` (its one-line message) to rank 0,
 * which holds the run's directory, and waits up to XT_CLUSTER_FAIL_WAIT_S
 * for rank 0 to write its summary and take the job down itself (see
 * xt_cluster_failure_note); only then does it abort the job alone.
 * A no-op for a cluster of one. */
void xt_cluster_exit(int code, int agreed, const char *why);

#define XT_CLUSTER_FAIL_WAIT_S 10.0

/* Rank 0: XT_ERUNTIME with another rank's failure message (as its
 * xt_cluster_exit sent it) once one has arrived, else 0. Polled by the
 * uplink between exchanges and by every wait for a collective, so a rank
 * that failed alone is heard even while rank 0 waits for its part of an
 * exchange. Other ranks and a cluster of one: always 0. */
int xt_cluster_failure_note(xt_err *e);

#endif

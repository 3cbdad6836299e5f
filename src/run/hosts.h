/* hosts.h — what a run across several hosts (MPI ranks, cluster.h) must
 * agree on before its workers start: the layout (each host's num_cores ->
 * the global world and this host's first global ordinal), the dataset (every
 * host reads its own copy: same size and checksum, checked before the first
 * step), and a --resume checkpoint's state (read by host 0, which alone owns
 * the output directory, and sent to the others).
 * With one host every function is a no-op. Not here: the exchanges during
 * training (distributed/uplink.h) or the transport (distributed/cluster.h).
 */
#ifndef XT_RUN_HOSTS_H
#define XT_RUN_HOSTS_H

#include "config/config.h"
#include "run/run.h"
#include "util/err.h"

/* Every host's num_cores -> *world (their sum) and *offset (the sum over the
 * hosts before this one). 2 when the world exceeds XT_MAX_REPLICAS. */
int xt_hosts_layout(const xt_config *c, int *world, int *offset, xt_err *e);

/* Every host compares its resolved config (the keys that change the
 * trajectory, record.h, but not where it finds its data) and its model
 * with host 0's, before any data is read: a host started with another
 * learning_rate or seed would train silently on another trajectory. On a
 * difference every host returns 2, host 0 with the message naming the
 * rank, its host and the keys ("seed differs" when the seed does). */
int xt_hosts_check_trajectory(const xt_run *r, xt_err *e);

/* Every host opened its data with result open_rc (e from that). All hosts
 * compare their datasets; on a mismatch or a failure anywhere every host
 * returns the same code, host 0 with the message naming the host that
 * differs (the others with an empty one: it is said once). */
int xt_hosts_check_data(xt_run *r, int open_rc, xt_err *e);

/* After host 0 loaded the --resume checkpoint (or not: rc), the weights,
 * optimizer state and training position it read, on every host. */
int xt_hosts_share_state(xt_run *r, int rc, xt_err *e);

/* The failure being returned is known to every host (they all stop the
 * same way: no MPI_Abort needed). */
int xt_hosts_failure_agreed(void);

/* Fail with a verdict that every host reaches alike from the same inputs
 * (so no MPI_Abort is needed): host 0 carries the message, the others an
 * empty one (it is said once). Returns code. */
int xt_hosts_fail_everywhere(xt_err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif

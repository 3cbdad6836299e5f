/* sampler.h — torch.utils.data.distributed.DistributedSampler in C: which
 * dataset indices replica `rank` of `num_replicas` visits in an epoch.
 *
 *   len  = drop_last ? n / R : ceil(n / R)            (per replica)
 *   all  = shuffle ? permutation(n, seed, epoch) : 0..n-1
 *   all  = drop_last ? all[:len*R] : all + all[:len*R - n] (wrapping)
 *   mine = all[rank::R]
 *
 * so the replicas partition the dataset (padding only repeats indices) and
 * every replica takes the same number of steps. The permutation is a
 * Fisher-Yates shuffle driven by the data PRNG keyed by (seed, epoch): the
 * same on every replica and reproducible, but not torch.randperm's order.
 * Not here: batching (loader.c).
 */
#ifndef XT_DATA_SAMPLER_H
#define XT_DATA_SAMPLER_H

#include <stdint.h>

#include "util/err.h"

typedef struct xt_sampler {
    int64_t n;             /* dataset size */
    int num_replicas, rank;
    int shuffle, drop_last;
    uint64_t seed;
    int64_t num_samples;   /* per replica: xt_sampler_len() */
    int64_t epoch;         /* set by xt_sampler_set_epoch (0 initially) */
    int64_t *indices;      /* (num_samples) this rank's order for `epoch` */
    int64_t *work;         /* (n) scratch for the full permutation */
} xt_sampler;

/* Returns 0, or XT_EUSAGE for num_replicas < 1, rank outside [0, num_replicas)
 * or n < 1, and XT_ERUNTIME when memory runs out. Starts at epoch 0. */
int xt_sampler_init(xt_sampler *s, int64_t n, int num_replicas, int rank, int shuffle, uint64_t seed, int drop_last,
                    xt_err *e);
void xt_sampler_free(xt_sampler *s);

/* Indices per replica per epoch. */
int64_t xt_sampler_len(const xt_sampler *s);

/* Recompute s->indices for `epoch` (what DistributedSampler.set_epoch does
 * before iteration). */
void xt_sampler_set_epoch(xt_sampler *s, int64_t epoch);

/* The pure form: this rank's indices for `epoch` into out (xt_sampler_len()
 * entries), using work (s->n entries) as scratch. Leaves s untouched, so a
 * loader can hold a const sampler. */
void xt_sampler_fill(const xt_sampler *s, int64_t epoch, int64_t *out, int64_t *work);

#endif

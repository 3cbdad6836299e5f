/* sampler.c — distributed sampler; see sampler.h. */
#include "data/sampler.h"

#include <stdlib.h>
#include <string.h>

#include "data/rng.h"

int xt_sampler_init(xt_sampler *s, int64_t n, int num_replicas, int rank, int shuffle, uint64_t seed, int drop_last,
                    xt_err *e) {
    memset(s, 0, sizeof *s);
    if (num_replicas < 1)
        return xt_fail(e, XT_EUSAGE, "sampler: num_replicas is %d; it must be at least 1", num_replicas);
    if (rank < 0 || rank >= num_replicas)
        return xt_fail(e, XT_EUSAGE, "sampler: rank %d is outside [0, %d)", rank, num_replicas);
    if (n < 1) return xt_fail(e, XT_EUSAGE, "sampler: the dataset is empty");
    s->n = n;
    s->num_replicas = num_replicas;
    s->rank = rank;
    s->shuffle = !!shuffle;
    s->drop_last = !!drop_last;
    s->seed = seed;
    /* DistributedSampler: ceil((n - R) / R) when dropping an uneven tail, which is floor(n / R). */
    s->num_samples = drop_last ? n / num_replicas : (n + num_replicas - 1) / num_replicas;
    if (s->num_samples < 1)
        return xt_fail(e, XT_EUSAGE, "sampler: %lld samples cannot feed %d replicas with drop_last", (long long)n,
                       num_replicas);
    s->indices = malloc((size_t)s->num_samples * sizeof *s->indices);
    s->work = malloc((size_t)n * sizeof *s->work);
    if (!s->indices || !s->work) {
        xt_sampler_free(s);
        return xt_fail(e, XT_ERUNTIME, "sampler: out of memory for %lld indices", (long long)n);
    }
    xt_sampler_set_epoch(s, 0);
    return 0;
}

void xt_sampler_free(xt_sampler *s) {
    free(s->indices);
    free(s->work);
    memset(s, 0, sizeof *s);
}

int64_t xt_sampler_len(const xt_sampler *s) { return s->num_samples; }

void xt_sampler_fill(const xt_sampler *s, int64_t epoch, int64_t *out, int64_t *work) {
    const int64_t n = s->n, R = s->num_replicas;
    for (int64_t i = 0; i < n; i++) work[i] = i;
    if (s->shuffle) {
        xt_rng r;
        xt_rng_init(&r, s->seed, XT_RNG_SHUFFLE, (uint64_t)epoch, 0);
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)xt_rng_below(&r, (uint64_t)i + 1), t = work[i];
            work[i] = work[j];
            work[j] = t;
        }
    }
    /* Position p of the padded list is work[p % n]: wrapping repeats the head
     * as many times as needed, like torch's `indices * ceil(pad / n)`. */
    for (int64_t k = 0; k < s->num_samples; k++) out[k] = work[(s->rank + k * R) % n];
}

void xt_sampler_set_epoch(xt_sampler *s, int64_t epoch) {
    s->epoch = epoch;
    xt_sampler_fill(s, epoch, s->indices, s->work);
}

/* loader.h — the prefetching batch loader (torch_xla's ParallelLoader minus the
 * device copy): `num_workers` threads assemble batches in sampler order
 * (gather u8 images of any (channels, rows, cols), normalize to float, augment) into a fixed pool of
 * recycled buffers, and the consumer receives them strictly in order.
 *
 *   xt_loader l;
 *   if (xt_loader_open(&l, &train, &sampler, &opts, &err)) return err.code;
 *   for (epoch = 1; ...) {
 *       xt_loader_start_epoch(&l, epoch);        // shuffles by (seed, epoch)
 *       const xt_batch *b;
 *       while ((b = xt_loader_next(&l))) { step(b->x, b->y, b->n); xt_loader_release(&l, b); }
 *   }
 *   xt_loader_close(&l);
 *
 * Batch k of an epoch always holds the same samples whatever num_workers is:
 * workers claim batch numbers in order and the consumer waits for the next
 * number. The pool holds prefetch_size + max_held buffers, so workers keep
 * prefetch_size batches ahead while the consumer holds up to max_held (the
 * engine's device_prefetch_size) before releasing; nothing is allocated
 * after xt_loader_open. Waits use condition variables; nothing spins.
 * Threads do not survive fork(): open loaders in the process that uses them.
 * One consumer thread calls next/release/start_epoch/close.
 * Not here: which indices (sampler.c), pixel transforms (transform.c).
 */
#ifndef XT_DATA_LOADER_H
#define XT_DATA_LOADER_H

#include <pthread.h>
#include <stdint.h>

#include "data/dataset.h"
#include "data/sampler.h"
#include "data/transform.h"
#include "util/err.h"

typedef struct xt_batch {
    int n;               /* samples: batch_size, or fewer in a final partial batch */
    int64_t number;      /* position in the epoch, from 0 */
    int64_t epoch;
    float *x;            /* (n, channels, rows, cols) normalized pixels */
    void *scratch;       /* the transform's, for whichever thread fills this buffer (NULL when it needs none) */
    int32_t *y;          /* (n) labels */
    int64_t *index;      /* (n) dataset indices (add dataset->first for the file index) */
} xt_batch;

typedef struct xt_loader_opts {
    int batch_size;           /* 128 */
    int num_workers;          /* 4 threads; 0 = assemble in the consumer's thread at next() */
    int prefetch_size;        /* 8: batches assembled ahead (loader_prefetch_size) */
    int max_held;             /* 4: batches the consumer may hold unreleased (device_prefetch_size) */
    int drop_last;            /* drop the final partial batch */
    int random_crop_padding;  /* P > 0: pad by P and crop back at random; 0 = off */
    int random_flip;          /* 1: flip horizontally with probability 1/2; 0 = off */
    int random_resized_crop;  /* 1: RandomResizedCrop(scale, ratio) instead of the padded crop; 0 = off */
    double resized_scale[2];  /* its area share [a, b], 0 < a <= b <= 1 */
    double resized_ratio[2];  /* its aspect (w/h) range [r0, r1], 0 < r0 <= r1 */
    uint64_t seed;            /* augmentation stream; crops and flips depend on (seed, epoch, index) */
} xt_loader_opts;

typedef struct xt_loader {
    /* private: use the functions below */
    const xt_dataset *ds;
    const xt_sampler *sampler;
    xt_loader_opts o;
    xt_transform tf;
    int nbuf;                /* prefetch_size + max_held */
    xt_batch *bufs;          /* (nbuf) */
    unsigned char *state;    /* (nbuf) FREE, FILLING, READY, HELD */
    int *free_stack, nfree;  /* (nbuf) indices of FREE buffers */
    int *ring;               /* (nbuf) READY buffer of batch k at k % nbuf, or -1 */
    int64_t *order, *work;   /* (len) the epoch's sample order; (n) sampler scratch */
    int64_t norder, nbatches, next_claim, next_out, epoch;
    int active, shutdown, inflight, held;
    pthread_mutex_t mu;
    pthread_cond_t cv_work;  /* workers: a buffer or a batch became available, or shutdown */
    pthread_cond_t cv_done;  /* consumer: a batch is ready, or the workers went idle */
    pthread_t *threads;
    int nthreads;
    xt_err err;              /* misuse seen by next() */
    int opened;              /* the mutex and condition variables exist */
} xt_loader;

void xt_loader_opts_defaults(xt_loader_opts *o);

/* Allocate every buffer and start the workers (idle until start_epoch). The
 * dataset and sampler must outlive the loader; sampler->n must be ds->n.
 * Returns 0, XT_EUSAGE for bad options, XT_ERUNTIME when memory or threads
 * run out. */
int xt_loader_open(xt_loader *l, const xt_dataset *ds, const xt_sampler *sampler, const xt_loader_opts *o, xt_err *e);

/* Begin `epoch` (sampler order for that epoch). Abandons what is left of the
 * previous epoch: waits for busy workers, recycles undelivered batches.
 * Batches the consumer still holds stay valid until released. */
void xt_loader_start_epoch(xt_loader *l, int64_t epoch);

/* Batches in the current epoch. */
int64_t xt_loader_num_batches(const xt_loader *l);

/* The next batch in order, blocking until it is assembled; NULL at the end of
 * the epoch, before the first start_epoch, or when the consumer already holds
 * every buffer (a bug: then l->err says so). */
const xt_batch *xt_loader_next(xt_loader *l);

/* Give a batch's buffer back for reuse; any order, any time before close. */
void xt_loader_release(xt_loader *l, const xt_batch *b);

/* Stop and join the workers (even mid-epoch) and free everything; batches
 * still held become invalid. Safe on a zeroed or already closed loader. */
void xt_loader_close(xt_loader *l);

#endif

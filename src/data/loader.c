/* loader.c — ordered prefetching batch loader; see loader.h.
 *
 * Why batches come out in order without a reorder queue: a worker claims the
 * next batch number and a free buffer in one critical section, so claims are
 * made in batch order and every claimed-but-undelivered batch owns a buffer.
 * The batch the consumer waits for is therefore either being filled or is
 * the next one to claim, and a free buffer exists as long as the consumer
 * does not hold them all: no deadlock, at most nbuf batches in flight, and
 * READY batches can be looked up in a ring of nbuf slots by number.
 */
#include "data/loader.h"
#include "data/batch_pixels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { FREE, FILLING, READY, HELD };

void xt_loader_opts_defaults(xt_loader_opts *o) {
    memset(o, 0, sizeof *o);
    o->batch_size = 128;
    o->num_workers = 4;
    o->prefetch_size = 8;
    o->max_held = 4;
    o->seed = 1;
}

/* Assemble batch k into buffer b. Runs without the lock: order[] and epoch
 * only change in start_epoch while no batch is being filled. */
static void fill(xt_loader *l, int b, int64_t k) {
    const xt_dataset *ds = l->ds;
    const size_t px = xt_dataset_image_bytes(ds);
    const int64_t first = k * l->o.batch_size;
    int64_t count = l->norder - first;
    if (count > l->o.batch_size) count = l->o.batch_size;
    xt_batch *bt = &l->bufs[b];
    for (int64_t j = 0; j < count; j++) {
        int64_t idx = l->order[first + j];
        xt_transform_apply(&l->tf, ds->images + (size_t)idx * px, bt->x + (size_t)j * px, l->epoch, idx, bt->scratch);
        bt->y[j] = ds->labels[idx];
        bt->index[j] = idx;
    }
    bt->n = (int)count;
    bt->number = k;
    bt->epoch = l->epoch;
}

static void publish(xt_loader *l, int b, int64_t k) {
    l->state[b] = READY;
    l->ring[k % l->nbuf] = b;
}

static void *worker(void *arg) {
    xt_loader *l = arg;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->shutdown && !(l->active && l->next_claim < l->nbatches && l->nfree > 0))
            pthread_cond_wait(&l->cv_work, &l->mu);
        if (l->shutdown) break;
        int64_t k = l->next_claim++;
        int b = l->free_stack[--l->nfree];
        l->state[b] = FILLING;
        l->inflight++;
        pthread_mutex_unlock(&l->mu);
        fill(l, b, k);
        pthread_mutex_lock(&l->mu);
        publish(l, b, k);
        l->inflight--;
        pthread_cond_broadcast(&l->cv_done);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

int xt_loader_open(xt_loader *l, const xt_dataset *ds, const xt_sampler *sampler, const xt_loader_opts *o, xt_err *e) {
    memset(l, 0, sizeof *l);
    if (o->batch_size < 1 || o->num_workers < 0 || o->num_workers > 256 || o->prefetch_size < 1 || o->max_held < 1 ||
        o->random_crop_padding < 0)
        return xt_fail(e, XT_EUSAGE,
                       "loader: batch_size %d, num_workers %d, prefetch %d, max_held %d, crop padding %d; need "
                       "batch_size, prefetch and max_held >= 1, 0 <= num_workers <= 256, padding >= 0",
                       o->batch_size, o->num_workers, o->prefetch_size, o->max_held, o->random_crop_padding);
    if (o->random_resized_crop &&
        !(o->resized_scale[0] > 0 && o->resized_scale[0] <= o->resized_scale[1] && o->resized_scale[1] <= 1 &&
          o->resized_ratio[0] > 0 && o->resized_ratio[0] <= o->resized_ratio[1] && isfinite(o->resized_ratio[1])))
        return xt_fail(e, XT_EUSAGE, "loader: random resized crop scale [%g, %g], ratio [%g, %g]; need 0 < a <= b <= 1 "
                       "and 0 < r0 <= r1", o->resized_scale[0], o->resized_scale[1], o->resized_ratio[0],
                       o->resized_ratio[1]);
    if (sampler->n != ds->n)
        return xt_fail(e, XT_EUSAGE, "loader: the sampler covers %lld samples but the dataset has %lld",
                       (long long)sampler->n, (long long)ds->n);
    l->ds = ds;
    l->sampler = sampler;
    l->o = *o;
    if (ds->channels < 1 || ds->channels > XT_TRANSFORM_MAX_CHANNELS)
        return xt_fail(e, XT_EUSAGE, "loader: images of %d channels; 1 to %d are supported", ds->channels,
                       XT_TRANSFORM_MAX_CHANNELS);
    xt_transform_init(&l->tf, ds->channels, ds->rows, ds->cols, ds->mean, ds->std, o->random_crop_padding,
                      o->random_flip, o->seed);
    if (o->random_resized_crop) xt_transform_set_resized_crop(&l->tf, o->resized_scale, o->resized_ratio);
    /* one scratch per buffer: a buffer is filled by one thread at a time, so
     * no thread index is needed and nothing is allocated per sample */
    const size_t scratch = xt_transform_scratch_bytes(&l->tf);
    l->nbuf = o->prefetch_size + o->max_held;
    const size_t px = xt_dataset_image_bytes(ds), B = (size_t)o->batch_size;
    l->bufs = calloc((size_t)l->nbuf, sizeof *l->bufs);
    l->state = calloc((size_t)l->nbuf, 1);
    l->free_stack = malloc((size_t)l->nbuf * sizeof *l->free_stack);
    l->ring = malloc((size_t)l->nbuf * sizeof *l->ring);
    l->order = malloc((size_t)xt_sampler_len(sampler) * sizeof *l->order);
    l->work = malloc((size_t)sampler->n * sizeof *l->work);
    l->threads = calloc((size_t)(o->num_workers ? o->num_workers : 1), sizeof *l->threads);
    int ok = l->bufs && l->state && l->free_stack && l->ring && l->order && l->work && l->threads;
    for (int i = 0; ok && i < l->nbuf; i++) {
        l->bufs[i].x = xt_batch_pixels_alloc(B * px); /* on a 64-byte line: batch_pixels.h */
        l->bufs[i].y = malloc(B * sizeof(int32_t));
        l->bufs[i].index = malloc(B * sizeof(int64_t));
        l->bufs[i].scratch = scratch ? malloc(scratch) : NULL;
        ok = l->bufs[i].x && l->bufs[i].y && l->bufs[i].index && (!scratch || l->bufs[i].scratch);
        l->free_stack[l->nfree++] = l->nbuf - 1 - i; /* pop order 0, 1, 2, ... */
        l->ring[i] = -1;
    }
    if (!ok) {
        int nbuf = l->nbuf;
        xt_loader_close(l);
        return xt_fail(e, XT_ERUNTIME, "loader: out of memory for %d batches of %d", nbuf, o->batch_size);
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv_work, NULL);
    pthread_cond_init(&l->cv_done, NULL);
    l->opened = 1;
    for (int i = 0; i < o->num_workers; i++) {
        if (pthread_create(&l->threads[i], NULL, worker, l) != 0) {
            xt_loader_close(l);
            return xt_fail(e, XT_ERUNTIME, "loader: could not start worker thread %d of %d", i + 1, o->num_workers);
        }
        l->nthreads++;
    }
    return 0;
}

void xt_loader_start_epoch(xt_loader *l, int64_t epoch) {
    pthread_mutex_lock(&l->mu);
    l->active = 0;
    while (l->inflight > 0) pthread_cond_wait(&l->cv_done, &l->mu);
    /* Undelivered batches of the old epoch go back to the pool. */
    for (int i = 0; i < l->nbuf; i++) {
        if (l->state[i] == READY) {
            l->state[i] = FREE;
            l->free_stack[l->nfree++] = i;
        }
        l->ring[i] = -1;
    }
    l->epoch = epoch;
    l->norder = xt_sampler_len(l->sampler);
    xt_sampler_fill(l->sampler, epoch, l->order, l->work);
    l->nbatches = l->o.drop_last ? l->norder / l->o.batch_size
                                 : (l->norder + l->o.batch_size - 1) / l->o.batch_size;
    l->next_claim = l->next_out = 0;
    l->active = 1;
    pthread_cond_broadcast(&l->cv_work);
    pthread_mutex_unlock(&l->mu);
}

int64_t xt_loader_num_batches(const xt_loader *l) { return l->nbatches; }

const xt_batch *xt_loader_next(xt_loader *l) {
    const xt_batch *out = NULL;
    pthread_mutex_lock(&l->mu);
    if (!l->active || l->next_out >= l->nbatches) goto done;
    if (l->held >= l->nbuf) {
        xt_fail(&l->err, XT_ERUNTIME, "loader: next() while holding all %d batch buffers; release batches first",
                l->nbuf);
        goto done;
    }
    int64_t k = l->next_out;
    if (l->nthreads == 0) {
        /* Synchronous mode: claim and fill here, exactly as a worker would. */
        int b = l->free_stack[--l->nfree];
        l->state[b] = FILLING;
        l->next_claim = k + 1;
        fill(l, b, k);
        publish(l, b, k);
    }
    int b;
    while ((b = l->ring[k % l->nbuf]) < 0 || l->state[b] != READY || l->bufs[b].number != k)
        pthread_cond_wait(&l->cv_done, &l->mu);
    l->ring[k % l->nbuf] = -1;
    l->state[b] = HELD;
    l->held++;
    l->next_out++;
    out = &l->bufs[b];
done:
    pthread_mutex_unlock(&l->mu);
    return out;
}

void xt_loader_release(xt_loader *l, const xt_batch *bt) {
    if (!bt) return;
    int b = (int)(bt - l->bufs);
    pthread_mutex_lock(&l->mu);
    if (b >= 0 && b < l->nbuf && l->state[b] == HELD) {
        l->state[b] = FREE;
        l->free_stack[l->nfree++] = b;
        l->held--;
        pthread_cond_signal(&l->cv_work);
    }
    pthread_mutex_unlock(&l->mu);
}

void xt_loader_close(xt_loader *l) {
    if (l->opened) {
        pthread_mutex_lock(&l->mu);
        l->shutdown = 1;
        pthread_cond_broadcast(&l->cv_work);
        pthread_mutex_unlock(&l->mu);
        for (int i = 0; i < l->nthreads; i++) pthread_join(l->threads[i], NULL);
        pthread_cond_destroy(&l->cv_work);
        pthread_cond_destroy(&l->cv_done);
        pthread_mutex_destroy(&l->mu);
    }
    for (int i = 0; l->bufs && i < l->nbuf; i++) {
        free(l->bufs[i].x);
        free(l->bufs[i].y);
        free(l->bufs[i].index);
        free(l->bufs[i].scratch);
    }
    free(l->bufs);
    free(l->state);
    free(l->free_stack);
    free(l->ring);
    free(l->order);
    free(l->work);
    free(l->threads);
    memset(l, 0, sizeof *l);
}

// build (from the repo root): cc -std=c11 -D_GNU_SOURCE -O3 -DXT_LOADER_BENCH -Isrc src/util/err.c src/data/*.c tests/bench/loader_bench.c -o build/loader_bench -lz -lpthread -lm && build/loader_bench
/* loader_bench.c — batches/s the prefetching loader delivers (batch 128,
 * synthetic set, consumer doing nothing but touch each batch), for 0 (in the
 * consumer's thread), 1, 2 and 4 workers, plain and with random-crop
 * augmentation. A standalone program, not part of the test runner; the build
 * command is the first line. Optional argument: seconds per measurement.
 *
 * Everything is inside #ifdef XT_LOADER_BENCH because the Makefile compiles
 * every tests/ file into the test runner, which has its own main().
 */
#ifdef XT_LOADER_BENCH

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "data/dataset.h"
#include "data/loader.h"
#include "data/sampler.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Batches per second over whole epochs, at least `seconds` of them. */
static double measure(const xt_dataset *ds, const xt_sampler *s, int workers, int pad, double seconds) {
    xt_loader_opts o;
    xt_loader_opts_defaults(&o);
    o.batch_size = 128;
    o.num_workers = workers;
    o.random_crop_padding = pad;
    o.drop_last = 1;
    xt_loader l;
    xt_err e = {0};
    if (xt_loader_open(&l, ds, s, &o, &e)) {
        fprintf(stderr, "loader_bench: %s\n", e.msg);
        exit(1);
    }
    volatile float sink = 0;
    long batches = 0;
    double t0 = now(), t = t0;
    for (int epoch = 0; t - t0 < seconds; epoch++) {
        xt_loader_start_epoch(&l, epoch);
        const xt_batch *b;
        while ((b = xt_loader_next(&l))) {
            sink += b->x[b->n * 784 - 1]; /* touch the last pixel written */
            xt_loader_release(&l, b);
            batches++;
        }
        t = now();
    }
    xt_loader_close(&l);
    (void)sink;
    return batches / (t - t0);
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.5;
    xt_data_opts d;
    xt_data_opts_defaults(&d);
    d.kind = XT_DATA_SYNTHETIC;
    d.synthetic_train_size = 12800;
    xt_dataset ds;
    xt_sampler s;
    xt_err e = {0};
    double t0 = now();
    if (xt_dataset_open(&ds, &d, XT_SPLIT_TRAIN, &e) || xt_sampler_init(&s, ds.n, 1, 0, 1, 1, 0, &e)) {
        fprintf(stderr, "loader_bench: %s\n", e.msg);
        return 1;
    }
    printf("synthetic: %lld images generated in %.2f s\n", (long long)ds.n, now() - t0);
    printf("loader, batch 128, prefetch 8, shuffled (batches/s; samples/s = x128)\n");
    printf("%-8s %14s %14s\n", "workers", "plain", "crop pad 2");
    const int workers[] = {0, 1, 2, 4};
    for (int i = 0; i < 4; i++) {
        double plain = measure(&ds, &s, workers[i], 0, seconds);
        double crop = measure(&ds, &s, workers[i], 2, seconds);
        printf("%-8d %14.0f %14.0f\n", workers[i], plain, crop);
    }
    xt_sampler_free(&s);
    xt_dataset_free(&ds);
    return 0;
}

#else
typedef int xt_loader_bench_not_built; /* keeps the translation unit non-empty */
#endif

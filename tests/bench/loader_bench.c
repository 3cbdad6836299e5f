// build: make _bench_bins (build/release/bench/loader_bench); it links every src/ object
/* loader_bench.c — batches/s the prefetching loader delivers (batch 128,
 * synthetic set, consumer doing nothing but touch each batch), for 0 (in the
 * consumer's thread), 1, 2 and 4 workers, plain and with random-crop
 * augmentation; then the folder dataset (#58): the same digits written as
 * PNG class folders, the first pass's decode rate (images/s, per thread) at
 * 1 and 2 decoding threads, and samples/s of the loader from the mapped
 * cache beside the same images read from an IDX file.
 * A standalone program, not part of the test runner. Optional arguments:
 * seconds per measurement (1.5), images in the folder (12800); a quick check
 * that it runs: `loader_bench 0.1 500`.
 *
 * Everything is inside #ifdef XT_LOADER_BENCH because the Makefile compiles
 * every tests/ file into the test runner, which has its own main().
 */
#ifdef XT_LOADER_BENCH

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "data/dataset.h"
#include "data/loader.h"
#include "data/sampler.h"
#include "io/png.h"

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

static void die(const char *what, const xt_err *e) {
    fprintf(stderr, "loader_bench: %s: %s\n", what, e->msg);
    exit(1);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f) {
    (void)st, (void)flag, (void)f;
    return remove(path);
}

/* The synthetic digits (ds) as <root>/png/<label>/<i>.png (grey as RGB, which
 * decodes back to the same grey) and as <root>/images.idx + labels.idx. */
static void write_copies(const xt_dataset *ds, const char *root) {
    char path[1200];
    xt_err e = {0};
    snprintf(path, sizeof path, "%s/png", root);
    mkdir(path, 0755);
    for (int k = 0; k < 10; k++) {
        snprintf(path, sizeof path, "%s/png/%d", root, k);
        mkdir(path, 0755);
    }
    xt_image img;
    if (xt_image_init(&img, ds->cols, ds->rows, (xt_rgb){0, 0, 0}, &e)) die("image", &e);
    const int hw = ds->rows * ds->cols;
    for (int64_t i = 0; i < ds->n; i++) {
        for (int p = 0; p < hw; p++) memset(img.px + 3 * p, ds->images[i * hw + p], 3);
        snprintf(path, sizeof path, "%s/png/%d/%06lld.png", root, ds->labels[i], (long long)i);
        if (xt_png_write(path, &img, &e)) die("png", &e);
    }
    xt_image_free(&img);
    /* IDX: big-endian magic and sizes, then the bytes */
    const unsigned char ih[16] = {0, 0, 8, 3, (unsigned char)(ds->n >> 24), (unsigned char)(ds->n >> 16),
                                  (unsigned char)(ds->n >> 8), (unsigned char)ds->n, 0, 0, 0, 28, 0, 0, 0, 28};
    const unsigned char lhead[8] = {0, 0, 8, 1, ih[4], ih[5], ih[6], ih[7]}; /* labels: magic 0x801, the same count */
    snprintf(path, sizeof path, "%s/images.idx", root);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(ih, 1, 16, f) != 16 || fwrite(ds->images, 1, (size_t)(ds->n * hw), f) != (size_t)(ds->n * hw) || fclose(f))
        fprintf(stderr, "loader_bench: cannot write %s\n", path), exit(1);
    snprintf(path, sizeof path, "%s/labels.idx", root);
    f = fopen(path, "wb");
    if (!f || fwrite(lhead, 1, 8, f) != 8 || fwrite(ds->labels, 1, (size_t)ds->n, f) != (size_t)ds->n || fclose(f))
        fprintf(stderr, "loader_bench: cannot write %s\n", path), exit(1);
}

/* The folder as a dataset, decoding into cache_dir with `threads` threads. */
static void open_folder(xt_dataset *ds, const char *root, const char *cache, int threads) {
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/png", root);
    xt_data_opts o;
    xt_data_opts_defaults(&o);
    o.kind = XT_DATA_FOLDER;
    o.train_dir = dir;
    o.test_dir = dir; /* the test split is not measured; the training split is then every file */
    o.channels = 1, o.rows = 28, o.cols = 28;
    o.cache_dir = cache;
    o.threads = threads;
    o.norm_mean = 0.13, o.norm_std = 0.3; /* no measuring pass: only the decoding is timed */
    xt_err e = {0};
    if (xt_dataset_open(ds, &o, XT_SPLIT_TRAIN, &e)) die("folder", &e);
}

static void folder_section(const xt_dataset *synth, double seconds) {
    char root[] = "/tmp/xt-loader-bench-XXXXXX", path[1200], path2[1200];
    if (!mkdtemp(root)) perror("loader_bench: mkdtemp"), exit(1);
    write_copies(synth, root);
    printf("\nfolder dataset: %lld PNG files (28x28 grey written as RGB) in 10 class folders\n", (long long)synth->n);
    printf("  first pass (decode into the cache):");
    xt_dataset fd;
    for (int threads = 1; threads <= 2; threads++) {
        snprintf(path, sizeof path, "%s/cache%d", root, threads);
        double t0 = now();
        open_folder(&fd, root, path, threads);
        double dt = now() - t0, rate = fd.n / dt;
        printf(" %d thread%s %.0f images/s (%.0f per thread)%s", threads, threads > 1 ? "s" : "", rate, rate / threads,
               threads < 2 ? "," : "\n");
        xt_dataset_free(&fd);
    }
    /* from the cache (mapped, no decoding) against the same pixels from IDX */
    snprintf(path, sizeof path, "%s/cache1", root);
    double t0 = now();
    open_folder(&fd, root, path, 1);
    printf("  cache reopened (mapped) in %.3f s\n", now() - t0);
    snprintf(path, sizeof path, "%s/images.idx", root);
    snprintf(path2, sizeof path2, "%s/labels.idx", root);
    xt_data_opts o;
    xt_data_opts_defaults(&o);
    o.kind = XT_DATA_MNIST;
    o.datadir = root;
    o.train_images = path, o.train_labels = path2;
    xt_dataset idx;
    xt_err e = {0};
    if (xt_dataset_open(&idx, &o, XT_SPLIT_TRAIN, &e)) die("idx", &e);
    xt_sampler sf, si;
    if (xt_sampler_init(&sf, fd.n, 1, 0, 1, 1, 0, &e) || xt_sampler_init(&si, idx.n, 1, 0, 1, 1, 0, &e)) die("sampler", &e);
    printf("  loader from the cache beside IDX (samples/s, batch 128, shuffled; %lld and %lld images)\n", (long long)fd.n,
           (long long)idx.n);
    printf("  %-8s %14s %14s %7s\n", "workers", "folder", "idx", "ratio");
    const int workers[] = {0, 1, 2};
    for (int i = 0; i < 3; i++) {
        double a = measure(&fd, &sf, workers[i], 0, seconds) * 128, b = measure(&idx, &si, workers[i], 0, seconds) * 128;
        printf("  %-8d %14.0f %14.0f %6.2fx\n", workers[i], a, b, a / b);
    }
    xt_sampler_free(&sf);
    xt_sampler_free(&si);
    xt_dataset_free(&fd);
    xt_dataset_free(&idx);
    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.5;
    long folder_images = argc > 2 ? atol(argv[2]) : 12800;
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
    d.synthetic_train_size = (int)folder_images;
    if (xt_dataset_open(&ds, &d, XT_SPLIT_TRAIN, &e)) die("synthetic", &e);
    folder_section(&ds, seconds);
    xt_dataset_free(&ds);
    return 0;
}

#else
typedef int xt_loader_bench_not_built; /* keeps the translation unit non-empty */
#endif

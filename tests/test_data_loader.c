/* test_data_loader.c — transforms and the prefetching loader: batch k holds
 * the same samples (and the same augmented pixels) whatever num_workers is,
 * contents follow the sampler, drop_last, holding batches, misuse, restarting
 * and closing mid-epoch, subsets and ranks.
 */
#include <stdint.h>
#include <string.h>

#include "data/dataset.h"
#include "data/image_resize.h"
#include "data/loader.h"
#include "data/sampler.h"
#include "data/synthetic.h"
#include "data/transform.h"
#include "test.h"

/* ---- transforms ------------------------------------------------------------ */

TEST(transform_normalizes_like_torchvision) {
    xt_transform t;
    xt_transform_init(&t, 1, 28, 28, (double[]){0.1307}, (double[]){0.3081}, 0, 0, 1);
    CHECK_NEAR(t.lut[0][0], -0.1307 / 0.3081, 1e-6);
    CHECK_NEAR(t.lut[0][255], (1 - 0.1307) / 0.3081, 1e-6);
    CHECK_NEAR(t.lut[0][128], (128 / 255.0 - 0.1307) / 0.3081, 1e-6);
    uint8_t src[784];
    float dst[784];
    for (int i = 0; i < 784; i++) src[i] = (uint8_t)(i * 31);
    xt_transform_apply(&t, src, dst, 0, 0, NULL);
    for (int i = 0; i < 784; i++) CHECK_NEAR(dst[i], t.lut[0][src[i]], 0);
}

TEST(transform_random_crop_pads_with_zero_and_shifts) {
    const int P = 3;
    xt_transform t;
    xt_transform_init(&t, 1, 28, 28, (double[]){0.5}, (double[]){0.25}, P, 0, 11);
    uint8_t src[784];
    float dst[784];
    for (int i = 0; i < 784; i++) src[i] = (uint8_t)(1 + i % 250); /* no zeros: padding is recognizable */
    int hits[7][7] = {{0}};
    for (int64_t idx = 0; idx < 2000; idx++) {
        int dy, dx, dy2, dx2, f, f2;
        xt_transform_choice(&t, 4, idx, &dy, &dx, &f);
        xt_transform_choice(&t, 4, idx, &dy2, &dx2, &f2);
        CHECK(dy == dy2 && dx == dx2); /* a function of (seed, epoch, index) */
        CHECK(!f && !f2);             /* no flip unless asked */
        CHECK(dy >= 0 && dy <= 2 * P && dx >= 0 && dx <= 2 * P);
        hits[dy][dx]++;
        if (idx < 60) {
            xt_transform_apply(&t, src, dst, 4, idx, NULL);
            for (int y = 0; y < 28; y++)
                for (int x = 0; x < 28; x++) {
                    int sy = y + dy - P, sx = x + dx - P;
                    float want = sy < 0 || sy >= 28 || sx < 0 || sx >= 28 ? t.lut[0][0] : t.lut[0][src[sy * 28 + sx]];
                    CHECK_NEAR(dst[y * 28 + x], want, 0);
                }
        }
    }
    for (int y = 0; y < 7; y++)
        for (int x = 0; x < 7; x++) CHECK_MSG(hits[y][x] > 10, "offset (%d,%d) drawn %d times", y, x, hits[y][x]);
    /* another epoch draws other offsets */
    int same = 0;
    for (int64_t idx = 0; idx < 200; idx++) {
        int a, b, c, d, f;
        xt_transform_choice(&t, 4, idx, &a, &b, &f);
        xt_transform_choice(&t, 5, idx, &c, &d, &f);
        same += a == c && b == d;
    }
    CHECK(same < 30);
}

/* ---- random resized crop ----------------------------------------------------- */

/* A 28x28 ramp with a bright block: any crop, shift or flip shows. */
static void ramp(uint8_t *src, int H, int W) {
    for (int i = 0; i < H * W; i++) src[i] = (uint8_t)((i * 7) % 251);
    for (int y = 3; y < 9; y++)
        for (int x = 2; x < 6; x++) src[y * W + x] = 255;
}

TEST(resized_crop_at_scale_one_ratio_one_is_the_identity) {
    enum { S = 28 };
    uint8_t src[S * S];
    ramp(src, S, S);
    xt_transform plain, t;
    xt_transform_init(&plain, 1, S, S, (double[]){0.2}, (double[]){0.3}, 0, 0, 9);
    xt_transform_init(&t, 1, S, S, (double[]){0.2}, (double[]){0.3}, 0, 0, 9);
    xt_transform_set_resized_crop(&t, (double[]){1, 1}, (double[]){1, 1});
    CHECK(xt_transform_scratch_bytes(&t) > 0);
    CHECK_EQ(xt_transform_scratch_bytes(&plain), 0);
    void *scratch = malloc(xt_transform_scratch_bytes(&t));
    float want[S * S], got[S * S];
    xt_transform_apply(&plain, src, want, 0, 0, NULL);
    for (int64_t idx = 0; idx < 50; idx++) {
        int y, x, h, w;
        xt_transform_resized_box(&t, 3, idx, &y, &x, &h, &w);
        CHECK(y == 0 && x == 0 && h == S && w == S);
        xt_transform_apply(&t, src, got, 3, idx, scratch);
        CHECK_MSG(memcmp(got, want, sizeof want) == 0, "sample %lld is not the image itself", (long long)idx);
    }
    free(scratch);
}

TEST(resized_crop_honours_scale_and_ratio_and_resamples_with_image_resize) {
    enum { H = 40, W = 48, C = 3 };
    const double scale[2] = {0.2, 0.5}, ratio[2] = {0.75, 4.0 / 3};
    static uint8_t src[C * H * W];
    for (int c = 0; c < C; c++) ramp(src + c * H * W, H, W);
    xt_transform t;
    double mean[3] = {0, 0, 0}, sd[3] = {1, 1, 1};
    xt_transform_init(&t, C, H, W, mean, sd, 0, 1, 21);
    xt_transform_set_resized_crop(&t, scale, ratio);
    uint8_t *scratch = malloc(xt_transform_scratch_bytes(&t));
    double amin = 1, amax = 0;
    int flips = 0, distinct = 0, py = -1, px = -1;
    for (int64_t idx = 0; idx < 400; idx++) {
        int y, x, h, w, dy, dx, fl;
        xt_transform_resized_box(&t, 2, idx, &y, &x, &h, &w);
        CHECK(y >= 0 && x >= 0 && h >= 1 && w >= 1 && y + h <= H && x + w <= W);
        /* the drawn area T and aspect r, up to the rounding of w = sqrt(T r) and
         * h = sqrt(T / r) to whole pixels */
        double share = (double)h * w / (H * W);
        CHECK_MSG((w + 0.5) * (h + 0.5) >= scale[0] * H * W && (w - 0.5) * (h - 0.5) <= scale[1] * H * W,
                  "sample %lld: %dx%d is %.3f of the area", (long long)idx, h, w, share);
        CHECK_MSG((w + 0.5) / (h - 0.5) >= ratio[0] && (w - 0.5) / (h + 0.5) <= ratio[1], "sample %lld: %dx%d",
                  (long long)idx, h, w);
        amin = share < amin ? share : amin, amax = share > amax ? share : amax;
        distinct += y != py || x != px, py = y, px = x;
        /* the same key gives the same window */
        int y2, x2, h2, w2;
        xt_transform_resized_box(&t, 2, idx, &y2, &x2, &h2, &w2);
        CHECK(y2 == y && x2 == x && h2 == h && w2 == w);
        /* pixels: image_resize.c's filter over the window, then the flip */
        xt_transform_choice(&t, 2, idx, &dy, &dx, &fl);
        CHECK(dy == 0 && dx == 0); /* no padded crop alongside */
        flips += fl;
        if (idx % 40) continue;
        static float got[C * H * W];
        xt_transform_apply(&t, src, got, 2, idx, scratch);
        for (int c = 0; c < C; c++) {
            static uint8_t win[H * W], want[H * W];
            for (int r = 0; r < h; r++) memcpy(win + r * w, src + c * H * W + (y + r) * W + x, (size_t)w);
            CHECK_EQ(xt_image_resize(win, h, w, want, H, W, 1), 0);
            int bad = 0;
            for (int r = 0; r < H; r++)
                for (int q = 0; q < W; q++)
                    bad += got[c * H * W + r * W + q] != (float)(want[r * W + (fl ? W - 1 - q : q)] / 255.0);
            CHECK_MSG(bad == 0, "sample %lld channel %d: %d pixels differ from xt_image_resize of the window", (long long)idx, c, bad);
        }
    }
    /* the draws cover the range and vary; the flip stream is untouched (about half) */
    CHECK(amin < scale[0] + 0.05 && amax > scale[1] - 0.05);
    CHECK(distinct > 300);
    CHECK(flips > 150 && flips < 250);
    free(scratch);
}

/* ---- loader ----------------------------------------------------------------- */

enum { N = 600, B = 64 };

static xt_dataset synth(long first, long end) {
    xt_data_opts o;
    xt_data_opts_defaults(&o);
    o.kind = XT_DATA_SYNTHETIC;
    o.synthetic_train_size = N;
    o.train_subset[0] = first, o.train_subset[1] = end;
    xt_dataset d;
    xt_err e = {0};
    CHECK_MSG(xt_dataset_open(&d, &o, XT_SPLIT_TRAIN, &e) == 0, "%s", e.msg);
    return d;
}

static xt_loader_opts lopts(int workers, int prefetch, int held, int drop_last, int pad) {
    xt_loader_opts o;
    xt_loader_opts_defaults(&o);
    o.batch_size = B;
    o.num_workers = workers;
    o.prefetch_size = prefetch;
    o.max_held = held;
    o.drop_last = drop_last;
    o.random_crop_padding = pad;
    o.seed = 5;
    return o;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static uint64_t batch_hash(const xt_batch *b) {
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv(h, &b->n, sizeof b->n);
    h = fnv(h, &b->number, sizeof b->number);
    h = fnv(h, b->x, (size_t)b->n * 784 * sizeof(float));
    h = fnv(h, b->y, (size_t)b->n * sizeof(int32_t));
    return fnv(h, b->index, (size_t)b->n * sizeof(int64_t));
}

/* Hashes of every batch of epochs 1 and 2; returns the count. */
static int run_epochs(const xt_dataset *d, const xt_sampler *s, xt_loader_opts o, uint64_t *out) {
    xt_loader l;
    xt_err e = {0};
    CHECK_MSG(xt_loader_open(&l, d, s, &o, &e) == 0, "%s", e.msg);
    int count = 0;
    for (int epoch = 1; epoch <= 2; epoch++) {
        xt_loader_start_epoch(&l, epoch);
        const xt_batch *b;
        int k = 0;
        while ((b = xt_loader_next(&l))) {
            CHECK_EQ(b->number, k++);
            CHECK_EQ(b->epoch, epoch);
            out[count++] = batch_hash(b);
            xt_loader_release(&l, b);
        }
        CHECK_EQ(k, xt_loader_num_batches(&l));
    }
    xt_loader_close(&l);
    return count;
}

TEST(loader_same_batches_whatever_num_workers) {
    xt_dataset d = synth(0, -1);
    xt_sampler s;
    xt_err e = {0};
    CHECK_EQ(xt_sampler_init(&s, d.n, 1, 0, 1, 3, 0, &e), 0);
    uint64_t ref[32], got[32];
    int nref = run_epochs(&d, &s, lopts(0, 2, 1, 0, 2), ref);
    CHECK_EQ(nref, 2 * 10); /* ceil(600 / 64) per epoch */
    CHECK(ref[0] != ref[10]); /* epochs differ */
    const int workers[] = {1, 2, 4};
    for (int w = 0; w < 3; w++) {
        CHECK_EQ(run_epochs(&d, &s, lopts(workers[w], 3, 2, 0, 2), got), nref);
        for (int i = 0; i < nref; i++) CHECK_MSG(got[i] == ref[i], "workers %d: batch %d differs", workers[w], i);
    }
    xt_sampler_free(&s);
    xt_dataset_free(&d);
}

TEST(loader_resized_crop_same_batches_whatever_num_workers) {
    xt_dataset d = synth(0, -1);
    xt_sampler s;
    xt_err e = {0};
    CHECK_EQ(xt_sampler_init(&s, d.n, 1, 0, 1, 3, 0, &e), 0);
    uint64_t ref[32], got[32], plain[32];
    xt_loader_opts o = lopts(0, 2, 1, 0, 0);
    o.random_flip = 1;
    run_epochs(&d, &s, o, plain);
    o.random_resized_crop = 1;
    o.resized_scale[0] = 0.3, o.resized_scale[1] = 0.9;
    o.resized_ratio[0] = 0.75, o.resized_ratio[1] = 4.0 / 3;
    int nref = run_epochs(&d, &s, o, ref);
    CHECK_EQ(nref, 20);
    for (int i = 0; i < nref; i++) CHECK_MSG(ref[i] != plain[i], "batch %d is not cropped", i);
    const int workers[] = {1, 2, 4};
    for (int w = 0; w < 3; w++) {
        xt_loader_opts ow = o;
        ow.num_workers = workers[w], ow.prefetch_size = 3, ow.max_held = 2;
        CHECK_EQ(run_epochs(&d, &s, ow, got), nref);
        for (int i = 0; i < nref; i++) CHECK_MSG(got[i] == ref[i], "workers %d: batch %d differs", workers[w], i);
    }
    /* a bad scale is refused, not clamped */
    xt_loader l;
    o.resized_scale[0] = 0;
    CHECK_EQ(xt_loader_open(&l, &d, &s, &o, &e), XT_EUSAGE);
    CHECK_STR_CONTAINS(e.msg, "need 0 < a <= b <= 1");
    xt_sampler_free(&s);
    xt_dataset_free(&d);
}

TEST(loader_batches_follow_the_sampler) {
    xt_dataset d = synth(0, -1);
    xt_sampler s;
    xt_err e = {0};
    CHECK_EQ(xt_sampler_init(&s, d.n, 1, 0, 1, 3, 0, &e), 0);
    xt_loader_opts o = lopts(2, 4, 1, 0, 1);
    xt_loader l;
    CHECK_EQ(xt_loader_open(&l, &d, &s, &o, &e), 0);
    xt_transform t;
    xt_transform_init(&t, 1, 28, 28, d.mean, d.std, 1, 0, o.seed);
    xt_sampler_set_epoch(&s, 7);
    xt_loader_start_epoch(&l, 7);
    const xt_batch *b;
    int64_t pos = 0;
    float want[784];
    while ((b = xt_loader_next(&l))) {
        CHECK_EQ(b->n, b->number < 9 ? B : N - 9 * B);
        for (int j = 0; j < b->n; j++, pos++) {
            int64_t idx = s.indices[pos];
            CHECK_EQ(b->index[j], idx);
            CHECK_EQ(b->y[j], d.labels[idx]);
            xt_transform_apply(&t, d.images + idx * 784, want, 7, idx, NULL);
            CHECK(memcmp(b->x + j * 784, want, sizeof want) == 0);
        }
        xt_loader_release(&l, b);
    }
    CHECK_EQ(pos, N);
    CHECK(xt_loader_next(&l) == NULL); /* stays at the end */
    xt_loader_close(&l);
    xt_sampler_free(&s);
    xt_dataset_free(&d);
}

TEST(loader_drop_last_drops_the_partial_batch) {
    xt_dataset d = synth(0, -1);
    xt_sampler s;
    xt_err e = {0};
    CHECK_EQ(xt_sampler_init(&s, d.n, 1, 0, 0, 0, 0, &e), 0);
    xt_loader_opts o = lopts(2, 2, 1, 1, 0);
    xt_loader l;
    CHECK_EQ(xt_loader_open(&l, &d, &s, &o, &e), 0);
    xt_loader_start_epoch(&l, 0);
    CHECK_EQ(xt_loader_num_batches(&l), 9);
    const xt_batch *b;
    int count = 0;
    while ((b = xt_loader_next(&l))) {
        CHECK_EQ(b->n, B);
        CHECK_EQ(b->index[0], count * B); /* unshuffled */
        count++;
        xt_loader_release(&l, b);
    }
    CHECK_EQ(count, 9);
    xt_loader_close(&l);
    xt_sampler_free(&s);
    xt_dataset_free(&d);
}

TEST(loader_consumer_holds_up_to_max_held) {
    xt_dataset d = synth(0, -1);
    xt_sampler s;
    xt_err e = {0};
    CHECK_EQ(xt_sampler_init(&s, d.n, 1, 0, 1, 3, 0, &e), 0);
    uint64_t ref[32];
    run_epochs(&d, &s, lopts(0, 1, 1, 0, 0), ref);
    /* like the engine staging device_prefetch_size batches: take 3, then
     * release the oldest as each new one arrives */
    xt_loader_opts o = lopts(4, 2, 3, 0, 0);
    xt_loader l;
    CHECK_EQ(xt_loader_open(&l, &d, &s, &o, &e), 0);
    for (int epoch = 1; epoch <= 2; epoch++) {
        xt_loader_start_epoch(&l, epoch);
        const xt_batch *held[3] = {0};
        for (int k = 0;; k++) {
            const xt_batch *b = xt_loader_next(&l);
            if (k >= 3) {
                /* the batch held longest is still intact while the workers refilled others */
                CHECK(held[k % 3]->number == k - 3);
                CHECK(batch_hash(held[k % 3]) == ref[(epoch - 1) * 10 + k - 3]);
                xt_loader_release(&l, held[k % 3]);
            }
            if (!b) {
                for (int j = k - 2 > 0 ? k - 2 : 0; j < k; j++) xt_loader_release(&l, held[j % 3]);
                break;
            }
            held[k % 3] = b;
            CHECK(l.err.code == 0);
        }
    }
    xt_loader_close(&l);
    xt_sampler_free(&s);
    xt_dataset_free(&d);
}

TEST(loader_holding_every_buffer_is_reported) {
    xt_dataset d = synth(0, 200);
    xt_sampler s;
    xt_err e = {0};
    CHECK_EQ(xt_sampler_init(&s, d.n, 1, 0, 1, 3, 0, &e), 0);
    for (int workers = 0; workers <= 2; workers += 2) {
        xt_loader_opts o = lopts(workers, 1, 1, 0, 0);
        xt_loader l;
        CHECK_EQ(xt_loader_open(&l, &d, &s, &o, &e), 0);
        CHECK(xt_loader_next(&l) == NULL); /* no epoch started */
        xt_loader_start_epoch(&l, 1);
        const xt_batch *a = xt_loader_next(&l), *b = xt_loader_next(&l);
        CHECK(a && b && a != b);
        CHECK(xt_loader_next(&l) == NULL); /* would wait forever: refused */
        CHECK_EQ(l.err.code, XT_ERUNTIME);
        CHECK_STR_CONTAINS(l.err.msg, "holding all 2 batch buffers");
        xt_loader_release(&l, a);
        const xt_batch *c = xt_loader_next(&l);
        CHECK(c && c->number == 2);
        xt_loader_release(&l, b);
        xt_loader_release(&l, c);
        xt_loader_release(&l, c); /* a second release is ignored */
        xt_loader_close(&l);
    }
    xt_sampler_free(&s);
    xt_dataset_free(&d);
}

TEST(loader_close_mid_epoch_joins_busy_workers) {
    xt_dataset d = synth(0, -1);
    xt_sampler s;
    xt_err e = {0};
    CHECK_EQ(xt_sampler_init(&s, d.n, 1, 0, 1, 3, 0, &e), 0);
    for (int round = 0; round < 30; round++) {
        xt_loader_opts o = lopts(1 + round % 4, 8, 4, 0, round % 3);
        xt_loader l;
        CHECK_EQ(xt_loader_open(&l, &d, &s, &o, &e), 0);
        if (round % 5 == 0) { /* never started */
            xt_loader_close(&l);
            continue;
        }
        xt_loader_start_epoch(&l, round);
        for (int k = 0; k < round % 4; k++) {
            const xt_batch *b = xt_loader_next(&l);
            CHECK(b != NULL);
            if (k % 2) xt_loader_release(&l, b); /* some released, some still held at close */
        }
        xt_loader_close(&l); /* workers are still filling the queue */
        xt_loader_close(&l); /* idempotent */
    }
    xt_loader zero;
    memset(&zero, 0, sizeof zero);
    xt_loader_close(&zero);
    xt_sampler_free(&s);
    xt_dataset_free(&d);
}

TEST(loader_restart_epoch_midway) {
    xt_dataset d = synth(0, -1);
    xt_sampler s;
    xt_err e = {0};
    CHECK_EQ(xt_sampler_init(&s, d.n, 1, 0, 1, 3, 0, &e), 0);
    uint64_t ref[32];
    run_epochs(&d, &s, lopts(0, 1, 1, 0, 2), ref);
    xt_loader_opts o = lopts(3, 4, 2, 0, 2);
    xt_loader l;
    CHECK_EQ(xt_loader_open(&l, &d, &s, &o, &e), 0);
    xt_loader_start_epoch(&l, 1);
    const xt_batch *old = xt_loader_next(&l);
    for (int k = 0; k < 3; k++) xt_loader_release(&l, xt_loader_next(&l));
    xt_loader_start_epoch(&l, 2); /* abandon epoch 1 with a batch still held */
    CHECK(batch_hash(old) == ref[0]); /* still valid until released */
    xt_loader_release(&l, old);
    const xt_batch *b;
    int k = 0;
    while ((b = xt_loader_next(&l))) {
        CHECK(batch_hash(b) == ref[10 + k]);
        k++;
        xt_loader_release(&l, b);
    }
    CHECK_EQ(k, 10);
    xt_loader_close(&l);
    xt_sampler_free(&s);
    xt_dataset_free(&d);
}

TEST(loader_subset_over_two_ranks) {
    xt_dataset d = synth(100, 400);
    CHECK_EQ(d.n, 300);
    CHECK_EQ(d.first, 100);
    int seen[300] = {0};
    for (int rank = 0; rank < 2; rank++) {
        xt_sampler s;
        xt_err e = {0};
        CHECK_EQ(xt_sampler_init(&s, d.n, 2, rank, 1, 9, 0, &e), 0);
        xt_loader_opts o = lopts(2, 2, 1, 0, 0);
        xt_loader l;
        CHECK_EQ(xt_loader_open(&l, &d, &s, &o, &e), 0);
        xt_loader_start_epoch(&l, 1);
        CHECK_EQ(xt_loader_num_batches(&l), 3); /* 150 per rank: 64 + 64 + 22 */
        const xt_batch *b;
        uint8_t img[784];
        while ((b = xt_loader_next(&l))) {
            for (int j = 0; j < b->n; j++) {
                seen[b->index[j]]++;
                /* dataset index + first = the synthetic stream's index */
                CHECK_EQ(b->y[j], xt_synth_sample(1, XT_SPLIT_TRAIN, d.first + b->index[j], img));
                CHECK_NEAR(b->x[j * 784 + 400], (img[400] / 255.0 - d.mean[0]) / d.std[0], 1e-5);
            }
            xt_loader_release(&l, b);
        }
        xt_loader_close(&l);
        xt_sampler_free(&s);
    }
    for (int i = 0; i < 300; i++) CHECK_EQ(seen[i], 1);
    xt_dataset_free(&d);
}

TEST(loader_rejects_bad_options) {
    xt_dataset d = synth(0, 100);
    xt_sampler s, other;
    xt_err e = {0};
    CHECK_EQ(xt_sampler_init(&s, d.n, 1, 0, 1, 3, 0, &e), 0);
    CHECK_EQ(xt_sampler_init(&other, 99, 1, 0, 1, 3, 0, &e), 0);
    xt_loader l;
    xt_loader_opts o = lopts(1, 1, 1, 0, 0);
    o.batch_size = 0;
    CHECK_EQ(xt_loader_open(&l, &d, &s, &o, &e), XT_EUSAGE);
    CHECK_STR_CONTAINS(e.msg, "batch_size 0");
    o = lopts(1, 0, 1, 0, 0);
    CHECK_EQ(xt_loader_open(&l, &d, &s, &o, &e), XT_EUSAGE);
    o = lopts(1, 1, 1, 0, 0);
    CHECK_EQ(xt_loader_open(&l, &d, &other, &o, &e), XT_EUSAGE);
    CHECK_STR_CONTAINS(e.msg, "sampler covers 99 samples but the dataset has 100");
    xt_loader_close(&l);
    xt_sampler_free(&s), xt_sampler_free(&other);
    xt_dataset_free(&d);
}

/* test_data_sampler.c — the distributed sampler against
 * torch.utils.data.distributed.DistributedSampler's rules: replicas partition
 * the dataset for every world size, padding only repeats, drop_last drops the
 * uneven tail, and the epoch order is a reproducible function of (seed, epoch).
 */
#include <stdint.h>
#include <string.h>

#include "data/sampler.h"
#include "test.h"

static int64_t expected_len(int64_t n, int R, int drop_last) { return drop_last ? n / R : (n + R - 1) / R; }

/* For every n, world size 1..8, shuffle and drop_last: lengths match torch,
 * every index is valid, the union covers the dataset (or all but the dropped
 * tail), and the only repeats are the padding. */
TEST(sampler_partitions_for_every_world_size) {
    const int64_t ns[] = {1, 2, 3, 7, 8, 10, 63, 64, 100, 101, 997};
    for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
        const int64_t n = ns[ni];
        int *seen = calloc((size_t)n, sizeof *seen);
        for (int R = 1; R <= 8; R++)
            for (int shuffle = 0; shuffle < 2; shuffle++)
                for (int drop = 0; drop < 2; drop++) {
                    if (drop && n < R) continue; /* nothing to give each replica */
                    memset(seen, 0, (size_t)n * sizeof *seen);
                    int64_t len = expected_len(n, R, drop), total = 0;
                    for (int rank = 0; rank < R; rank++) {
                        xt_sampler s;
                        xt_err e = {0};
                        CHECK_EQ(xt_sampler_init(&s, n, R, rank, shuffle, 42, drop, &e), 0);
                        xt_sampler_set_epoch(&s, 3);
                        CHECK_EQ(xt_sampler_len(&s), len);
                        for (int64_t k = 0; k < len; k++) {
                            int64_t i = s.indices[k];
                            CHECK(i >= 0 && i < n);
                            if (i >= 0 && i < n) seen[i]++;
                        }
                        total += len;
                        xt_sampler_free(&s);
                    }
                    int64_t covered = 0, repeats = 0;
                    for (int64_t i = 0; i < n; i++) {
                        covered += seen[i] > 0;
                        repeats += seen[i] > 1 ? seen[i] - 1 : 0;
                    }
                    CHECK_EQ(total, len * R);
                    if (drop) {
                        CHECK_EQ(repeats, 0);          /* no padding */
                        CHECK_EQ(covered, len * R);    /* n % R samples dropped */
                    } else {
                        CHECK_EQ(covered, n);          /* nothing lost */
                        CHECK_EQ(repeats, len * R - n);/* padding only duplicates */
                    }
                }
        free(seen);
    }
}

/* Unshuffled orders are torch's exactly. */
TEST(sampler_matches_torch_without_shuffle) {
    xt_sampler s;
    xt_err e = {0};
    /* n=10, world 3: [0..9] + [0, 1]; rank r takes [r::3] */
    const int64_t want[3][4] = {{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}};
    for (int r = 0; r < 3; r++) {
        CHECK_EQ(xt_sampler_init(&s, 10, 3, r, 0, 0, 0, &e), 0);
        for (int k = 0; k < 4; k++) CHECK_EQ(s.indices[k], want[r][k]);
        xt_sampler_free(&s);
    }
    /* drop_last: total 9 */
    CHECK_EQ(xt_sampler_init(&s, 10, 3, 2, 0, 0, 1, &e), 0);
    CHECK_EQ(xt_sampler_len(&s), 3);
    CHECK_EQ(s.indices[0], 2);
    CHECK_EQ(s.indices[1], 5);
    CHECK_EQ(s.indices[2], 8);
    xt_sampler_free(&s);
    /* n=2, world 5: padding longer than the data wraps repeatedly: [0,1,0,1,0] */
    for (int r = 0; r < 5; r++) {
        CHECK_EQ(xt_sampler_init(&s, 2, 5, r, 0, 0, 0, &e), 0);
        CHECK_EQ(xt_sampler_len(&s), 1);
        CHECK_EQ(s.indices[0], r % 2);
        xt_sampler_free(&s);
    }
}

static void order(int64_t n, int R, int rank, uint64_t seed, int64_t epoch, int64_t *out) {
    xt_sampler s;
    xt_err e = {0};
    CHECK_EQ(xt_sampler_init(&s, n, R, rank, 1, seed, 0, &e), 0);
    xt_sampler_set_epoch(&s, epoch);
    memcpy(out, s.indices, (size_t)xt_sampler_len(&s) * sizeof *out);
    xt_sampler_free(&s);
}

TEST(sampler_epoch_order_reproducible_and_changes) {
    enum { N = 500 };
    int64_t a[N], b[N], c[N], d[N];
    order(N, 1, 0, 7, 1, a);
    order(N, 1, 0, 7, 1, b);
    CHECK(memcmp(a, b, sizeof a) == 0);
    order(N, 1, 0, 7, 2, c);
    CHECK(memcmp(a, c, sizeof a) != 0);
    order(N, 1, 0, 8, 1, d);
    CHECK(memcmp(a, d, sizeof a) != 0);
    /* a real shuffle: few fixed points, and a permutation */
    int fixed = 0, hit[N] = {0};
    for (int i = 0; i < N; i++) fixed += a[i] == i, hit[a[i]]++;
    CHECK(fixed < 10);
    for (int i = 0; i < N; i++) CHECK_EQ(hit[i], 1);
    /* every rank sees the same global permutation: rank r's k-th = rank 0's
     * view of the same list at position k*R + r */
    int64_t r0[N], r1[N / 2 + 1], r2[N / 2 + 1];
    order(N, 1, 0, 7, 4, r0);
    order(N, 2, 0, 7, 4, r1);
    order(N, 2, 1, 7, 4, r2);
    for (int k = 0; k < N / 2; k++) {
        CHECK_EQ(r1[k], r0[2 * k]);
        CHECK_EQ(r2[k], r0[2 * k + 1]);
    }
}

TEST(sampler_set_epoch_equals_fill) {
    xt_sampler s;
    xt_err e = {0};
    CHECK_EQ(xt_sampler_init(&s, 77, 3, 1, 1, 9, 0, &e), 0);
    CHECK_EQ(s.epoch, 0);
    int64_t out[26], work[77];
    xt_sampler_fill(&s, 5, out, work);
    xt_sampler_set_epoch(&s, 5);
    CHECK_EQ(s.epoch, 5);
    CHECK(memcmp(out, s.indices, sizeof out) == 0);
    xt_sampler_free(&s);
}

TEST(sampler_rejects_bad_arguments) {
    xt_sampler s;
    xt_err e = {0};
    CHECK_EQ(xt_sampler_init(&s, 10, 0, 0, 1, 1, 0, &e), XT_EUSAGE);
    CHECK_STR_CONTAINS(e.msg, "num_replicas is 0");
    CHECK_EQ(xt_sampler_init(&s, 10, 4, 4, 1, 1, 0, &e), XT_EUSAGE);
    CHECK_STR_CONTAINS(e.msg, "rank 4 is outside [0, 4)");
    CHECK_EQ(xt_sampler_init(&s, 0, 1, 0, 1, 1, 0, &e), XT_EUSAGE);
    CHECK_EQ(xt_sampler_init(&s, 3, 4, 0, 1, 1, 1, &e), XT_EUSAGE);
    CHECK_STR_CONTAINS(e.msg, "cannot feed 4 replicas");
    CHECK(s.indices == NULL);
}

/* synth_idx.h — test helper: an IDX images file of synthetic digits, for
 * --predict runs (test_export.c, test_resnet_run.c), and a datadir of the
 * four MNIST files (test_mpi.c, test_exits.c). */
#ifndef XT_TESTS_SYNTH_IDX_H
#define XT_TESTS_SYNTH_IDX_H

/* Write n 28x28 synthetic digits of the test split (from index 5000, seed 3)
 * to `path` as an uncompressed IDX images file; a failure fails the test. */
void test_write_synth_idx(const char *path, int n);

/* A directory of the four MNIST files by their usual names (uncompressed):
 * ntrain and ntest 28x28 images (pixels (7i + salt) mod 256) and labels
 * (i mod 10). Created if missing; a failure fails the test. */
void test_write_idx_set(const char *dir, int ntrain, int ntest, int salt);

#endif

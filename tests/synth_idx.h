/* synth_idx.h — test helper: an IDX images file of synthetic digits, for
 * --predict runs (test_export.c, test_resnet_run.c). */
#ifndef XT_TESTS_SYNTH_IDX_H
#define XT_TESTS_SYNTH_IDX_H

/* Write n 28x28 synthetic digits of the test split (from index 5000, seed 3)
 * to `path` as an uncompressed IDX images file; a failure fails the test. */
void test_write_synth_idx(const char *path, int n);

#endif

/* fuzz_util.h — shared by the libFuzzer harnesses in tests/fuzz/.
 *
 * Parsers that only take a path get the input through one scratch file per
 * process, rewritten for every input: a private directory made with mkdtemp
 * under $TMPDIR, else /dev/shm (tmpfs: no disk traffic), else /tmp, removed at
 * exit (with whatever the harness wrote there). FUZZ_ASSERT turns a broken invariant (a round trip that does not give
 * back what went in) into a crash libFuzzer records as a finding.
 */
#ifndef XT_FUZZ_UTIL_H
#define XT_FUZZ_UTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FUZZ_ASSERT(cond, ...)                                               \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "fuzz invariant failed: %s (%s:%d): ", #cond, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
            abort();                                                         \
        }                                                                    \
    } while (0)

/* XT_FUZZ_VERBOSE=1: say on stderr how each input ended (to check that seeds
 * get as far as intended: `XT_FUZZ_VERBOSE=1 build/fuzz/fuzz_spec FILE`). */
static inline void fuzz_note(const char *what, const char *msg) {
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("XT_FUZZ_VERBOSE") && *getenv("XT_FUZZ_VERBOSE") == '1';
    if (verbose) fprintf(stderr, "fuzz: %s%s%s\n", what, msg && *msg ? ": " : "", msg ? msg : "");
}

static char fuzz_dir_[512];
static char fuzz_file_[600];

static inline void fuzz_cleanup_(void) {
    DIR *d = fuzz_dir_[0] ? opendir(fuzz_dir_) : NULL;
    for (struct dirent *de; d && (de = readdir(d));) {
        char p[800];
        if (de->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", fuzz_dir_, de->d_name);
        unlink(p);
    }
    if (d) closedir(d);
    if (fuzz_dir_[0]) rmdir(fuzz_dir_);
}

/* This process's scratch directory (created on first use). */
static inline const char *fuzz_scratch_dir(void) {
    if (fuzz_dir_[0]) return fuzz_dir_;
    const char *base = getenv("TMPDIR");
    struct stat st;
    if (!base || !*base) base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0
                                    ? "/dev/shm" : "/tmp";
    snprintf(fuzz_dir_, sizeof fuzz_dir_, "%s/xlatrain-fuzz-XXXXXX", base);
    if (!mkdtemp(fuzz_dir_)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(fuzz_cleanup_);
    return fuzz_dir_;
}

/* Write data to <scratch>/<name> (the same file for every input) and return its path. */
static inline const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size) {
    snprintf(fuzz_file_, sizeof fuzz_file_, "%s/%s", fuzz_scratch_dir(), name);
    FILE *f = fopen(fuzz_file_, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror("fuzz: writing the scratch file");
        abort();
    }
    return fuzz_file_;
}

#endif

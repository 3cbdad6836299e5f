/* cifar_source.c — xt_cifar_read: any CIFAR-10 source, read by the reader
 * its kind needs (a directory, cifar-10-binary.tar.gz, one .bin file); see
 * cifar.h.
 *
 * Is: the choice between the readers, above both of them. Is not: a reader
 * (records, files and directories are cifar.c's, the archive is
 * cifar_archive.c's, which uses cifar.c's records; with the choice in
 * cifar.c the two files would call each other).
 */
#include <stdint.h>
#include <sys/stat.h>

#include "data/cifar.h"
#include "io/infile.h"

int xt_cifar_read(const char *path, int split, xt_cifar *out, xt_err *e) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return xt_cifar_read_dir(path, split, out, e);
    const xt_in_opts o = {XT_EDATA, XT_EDATA, "pass a CIFAR-10 batch file (.bin) or cifar-10-binary.tar.gz"};
    xt_infile in;
    int rc = xt_in_open(&in, path, &o, e);
    if (rc) return rc;
    uint8_t m[2];
    int gz = in.size >= 2 && xt_in_pread(&in, m, 2, 0) == 0 && m[0] == 0x1f && m[1] == 0x8b; /* gzip's magic */
    xt_in_close(&in);
    return gz ? xt_cifar_read_archive(path, split, out, e) : xt_cifar_read_file(path, out, e);
}

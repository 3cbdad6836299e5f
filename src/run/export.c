/* export.c — xlatrain --export CKPT --output FILE: the model's state_dict
 * alone, under PyTorch's names (conv1.weight, bn1.running_mean,
 * bn1.num_batches_tracked), in the checkpoint's order: no optimizer state
 * (optim.*), no training position. FILE.pt / FILE.pth is written in
 * torch.save's format (io/torch_save.h), so `model.load_state_dict(
 * torch.load(FILE), strict=True)` needs nothing but PyTorch;
 * .safetensors (or "-", standard output) gets safetensors; any other name
 * is refused, as is an --output that is the checkpoint itself (same device
 * and inode). Needs no config: the checkpoint names its tensors.
 * Is not: a converter of anything but xlatrain's own checkpoints. */
#include "run/export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/atomic.h"
#include "io/ckptdir.h"
#include "io/safetensors.h"
#include "io/torch_save.h"

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* A directory means its latest checkpoint. What cannot be read is an
 * input error (3), not an output one. */
static int resolve(const char *ckpt, char *path, size_t cap, xt_err *e) {
    struct stat st;
    if (stat(ckpt, &st) != 0)
        return xt_fail(e, XT_EDATA, "--export %s: cannot read it: %s; give a checkpoint (.safetensors) or a run directory", ckpt, strerror(errno));
    if (S_ISDIR(st.st_mode)) return xt_st_find_latest(ckpt, path, cap, e);
    if ((size_t)snprintf(path, cap, "%s", ckpt) >= cap) return xt_fail(e, XT_EUSAGE, "--export: path too long");
    if (access(path, R_OK) != 0)
        return xt_fail(e, XT_EDATA, "--export %s: cannot read it: %s; check its permissions", path, strerror(errno));
    return 0;
}

/* The format the name asks for: 1 PyTorch's, 0 safetensors (also "-",
 * standard output), -1 a name that says neither. */
static int torch_format(const char *out) {
    if (ends_with(out, ".pt") || ends_with(out, ".pth")) return 1;
    return ends_with(out, ".safetensors") || !strcmp(out, "-") ? 0 : -1;
}

int xt_export_main(const char *ckpt, const char *out, xt_err *e) {
    char path[4096];
    int torch = torch_format(out);
    if (torch < 0)
        return xt_fail(e, XT_EUSAGE, "--output %s: the name chooses the format: .pt or .pth for PyTorch's, .safetensors for safetensors ('-': safetensors on standard output)", out);
    int rc = resolve(ckpt, path, sizeof path, e);
    if (rc) return rc;
    if (xt_same_file(out, path))
        return xt_fail(e, XT_EUSAGE, "--output %s is the checkpoint being exported (%s); writing the weights alone over it would end its run's --resume: choose another name",
                       out, path);
    xt_st_file f;
    if ((rc = xt_st_read(path, &f, e))) return rc;
    xt_st_tensor *keep = calloc((size_t)f.ntensors + 1, sizeof *keep);
    if (!keep) {
        xt_st_close(&f);
        return xt_fail(e, XT_ERUNTIME, "out of memory exporting %s", path);
    }
    int n = 0;
    for (int i = 0; i < f.ntensors; i++)
        if (strncmp(f.tensors[i].name, "optim.", 6)) keep[n++] = f.tensors[i];
    if (n == 0) rc = xt_fail(e, XT_ERUNTIME, "%s: no model tensors in it; export a checkpoint written by xlatrain", path);
    else if (torch) rc = xt_torch_save(out, keep, n, e);
    else rc = xt_st_write(out, keep, n, NULL, 0, e);
    if (!rc) fprintf(stderr, "xlatrain: exported %d tensors of %s to %s\n", n, path, strcmp(out, "-") ? out : "standard output");
    free(keep);
    xt_st_close(&f);
    return rc;
}

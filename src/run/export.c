/* export.c — xlatrain --export CKPT --output FILE: the model's state_dict
 * alone, under PyTorch's names (conv1.weight, bn1.running_mean,
 * bn1.num_batches_tracked), in the checkpoint's order: no optimizer state
 * (optim.*), no training position. FILE.pt / FILE.pth is written in
 * torch.save's format (io/torch_save.h), so `model.load_state_dict(
 * torch.load(FILE), strict=True)` needs nothing but PyTorch; .safetensors (or
 * "-", standard output) gets safetensors; FILE.onnx (or --format onnx) the
 * whole model in ONNX (export_onnx.h); any other name is refused, as is an
 * --output that is the checkpoint itself (same device and inode). Needs no
 * config: the checkpoint names its tensors.
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
#include "run/export_onnx.h"

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

enum { FMT_BAD = -1, FMT_SAFETENSORS, FMT_PT, FMT_ONNX };

/* The format --format names, else the one --output's name asks for
 * ("-", standard output, is safetensors); FMT_BAD for a name that says none. */
static int format_of(const char *out, const char *format) {
    if (format) return !strcmp(format, "onnx") ? FMT_ONNX : !strcmp(format, "pt") ? FMT_PT : FMT_SAFETENSORS;
    if (ends_with(out, ".onnx")) return FMT_ONNX;
    if (ends_with(out, ".pt") || ends_with(out, ".pth")) return FMT_PT;
    return ends_with(out, ".safetensors") || !strcmp(out, "-") ? FMT_SAFETENSORS : FMT_BAD;
}

/* The state_dict of checkpoint `path` into out: torch.save's format, or safetensors. */
static int export_weights(const char *path, const char *out, int torch, xt_err *e) {
    xt_st_file f;
    int rc = xt_st_read(path, &f, e);
    if (rc) return rc;
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

int xt_export_as(const char *ckpt, const char *out, const char *format, xt_err *e) {
    int fmt = format_of(out, format);
    if (fmt == FMT_BAD)
        return xt_fail(e, XT_EUSAGE, "--output %s: the name chooses the format: .pt or .pth for PyTorch's, .onnx for ONNX, .safetensors for safetensors ('-': safetensors on standard output), or say it with --format onnx|pt|safetensors", out);
    char path[4096];
    int rc = resolve(ckpt, path, sizeof path, e);
    if (rc) return rc;
    if (xt_same_file(out, path))
        return xt_fail(e, XT_EUSAGE, "--output %s is the checkpoint being exported (%s); writing over it would end its run's --resume: choose another name",
                       out, path);
    if (fmt == FMT_ONNX) return xt_export_onnx(path, out, e);
    return export_weights(path, out, fmt == FMT_PT, e);
}

int xt_export_main(const char *ckpt, const char *out, xt_err *e) { return xt_export_as(ckpt, out, NULL, e); }

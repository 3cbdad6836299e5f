/* export.c — xlatrain --export CKPT --output FILE: the model's state_dict
 * alone, under PyTorch's names (conv1.weight, bn1.running_mean,
 * bn1.num_batches_tracked), in the checkpoint's order: no optimizer state
 * (optim.*), no training position. FILE.pt / FILE.pth is written in
 * torch.save's format (io/torch_save.h), so `model.load_state_dict(
 * torch.load(FILE), strict=True)` needs nothing but PyTorch; any other name
 * gets safetensors; FILE.onnx (or --format onnx) the whole model in ONNX
 * (export_onnx.h). Needs no config: the checkpoint names its tensors.
 * Is not: a converter of anything but xlatrain's own checkpoints. */
#include "run/export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/ckptdir.h"
#include "io/safetensors.h"
#include "io/torch_save.h"
#include "run/export_onnx.h"

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* A directory means its latest checkpoint. */
static int resolve(const char *ckpt, char *path, size_t cap, xt_err *e) {
    struct stat st;
    if (!stat(ckpt, &st) && S_ISDIR(st.st_mode)) return xt_st_find_latest(ckpt, path, cap, e);
    if ((size_t)snprintf(path, cap, "%s", ckpt) >= cap) return xt_fail(e, XT_EUSAGE, "--export: path too long");
    return 0;
}

/* The state_dict of ckpt into out: torch.save's format, or safetensors. */
static int export_weights(const char *ckpt, const char *out, int torch, xt_err *e) {
    char path[4096];
    int rc = resolve(ckpt, path, sizeof path, e);
    if (rc) return rc;
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
    if (!rc) fprintf(stderr, "xlatrain: exported %d tensors of %s to %s\n", n, path, out);
    free(keep);
    xt_st_close(&f);
    return rc;
}

int xt_export_main(const char *ckpt, const char *out, xt_err *e) {
    return export_weights(ckpt, out, ends_with(out, ".pt") || ends_with(out, ".pth"), e);
}

int xt_export_as(const char *ckpt, const char *out, const char *format, xt_err *e) {
    if (format ? !strcmp(format, "onnx") : ends_with(out, ".onnx")) return xt_export_onnx(ckpt, out, e);
    if (format) return export_weights(ckpt, out, !strcmp(format, "pt"), e);
    return xt_export_main(ckpt, out, e);
}

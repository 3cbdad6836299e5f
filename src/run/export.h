/* export.h — xlatrain --export: a checkpoint's model weights alone, for
 * PyTorch. */
#ifndef XT_RUN_EXPORT_H
#define XT_RUN_EXPORT_H

#include "util/err.h"

/* Write the state_dict of checkpoint `ckpt` (a checkpoint file, or a run
 * directory for its latest checkpoint) to `out`: PyTorch's own format when
 * `out` ends in .pt or .pth, safetensors otherwise. Returns an exit code. */
int xt_export_main(const char *ckpt, const char *out, xt_err *e);

/* The same, with --format's choice (NULL: by the name; .onnx is ONNX):
 * "onnx" (export_onnx.h), "pt" or "safetensors". Returns an exit code. */
int xt_export_as(const char *ckpt, const char *out, const char *format, xt_err *e);

#endif

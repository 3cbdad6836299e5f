/* export.h — xlatrain --export: a checkpoint's model weights alone, for
 * PyTorch. */
#ifndef XT_RUN_EXPORT_H
#define XT_RUN_EXPORT_H

#include "util/err.h"

/* Write the state_dict of checkpoint `ckpt` (a checkpoint file, or a run
 * directory for its latest checkpoint) to `out`, in the format its name
 * asks for: PyTorch's own for .pt or .pth, ONNX for .onnx, safetensors for
 * .safetensors or "-" (standard output); another name is a usage error.
 * Returns an exit code. */
int xt_export_main(const char *ckpt, const char *out, xt_err *e);

/* The same, with --format's choice (NULL: by the name; .onnx is ONNX):
 * "onnx" (export_onnx.h), "pt" or "safetensors". Returns an exit code. */
int xt_export_as(const char *ckpt, const char *out, const char *format, xt_err *e);

#endif

/* export_onnx.h — xlatrain --export CKPT --output model.onnx: the trained
 * model as an ONNX graph that onnxruntime, OpenVINO or TensorRT run.
 *
 * The graph is the model in eval form, opset 17, IR version 8: conv2d ->
 * Conv, batchnorm2d -> BatchNormalization (running statistics), relu ->
 * Relu, maxpool2d -> MaxPool, avgpool2d and adaptive_avgpool2d ->
 * AveragePool (count_include_pad=1, as xlatrain and PyTorch count padding;
 * the spec has already turned an adaptive pool into kernel = stride =
 * input / output), dropout -> nothing, flatten -> Flatten, linear -> Gemm
 * (transB=1), log_softmax -> LogSoftmax(axis=1), a residual block ->
 * its body and shortcut (identity when empty) joined by Add, then Relu.
 * Input "input" is float [N, C, H, W] with a symbolic batch N; output
 * "log_probs" (a model ending in log_softmax) or "logits" is [N, classes].
 * Weights are raw_data initializers named as PyTorch's state_dict keys
 * (conv1.weight, layer2.0.shortcut.1.running_var). The pixels' scaling is
 * not in the graph (as in PyTorch): doc_string and metadata_props say it
 * (pixels / 255, then (x - mean) / std per channel), with the class names,
 * the xlatrain version and the model hash.
 * The model comes from the checkpoint itself (its "xlatrain.model" copy of
 * the spec; older checkpoints: the spec their recorded config names), and
 * must have the checkpoint's model hash. Written atomically (io/atomic.h).
 * Is not: a general converter, or an importer.
 */
#ifndef XT_RUN_EXPORT_ONNX_H
#define XT_RUN_EXPORT_ONNX_H

#include "util/err.h"

/* ckpt: a checkpoint, or a run directory for its latest one. Returns an
 * exit code (XT_EDATA unreadable, XT_ERUNTIME foreign or damaged, XT_EIO
 * the output). */
int xt_export_onnx(const char *ckpt, const char *out, xt_err *e);

#endif

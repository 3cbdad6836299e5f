/* torch_save.h — write tensors as a PyTorch state_dict in PyTorch's own
 * serialization format, so that
 *
 *   model.load_state_dict(torch.load("w.pt"), strict=True)
 *
 * works with nothing but PyTorch installed.
 *
 * The format is the zip archive torch.save has written since PyTorch 1.6:
 * every record under one top-level folder ("archive/"), stored uncompressed:
 *   archive/data.pkl   the pickled OrderedDict: name -> tensor, each tensor
 *                      torch._utils._rebuild_tensor_v2(storage, 0, size,
 *                      stride, False, OrderedDict()), each storage a
 *                      persistent id ("storage", torch.FloatStorage, key,
 *                      "cpu", numel) whose bytes are the record data/<key>
 *   archive/data/0..   the raw little-endian tensor bytes, one per tensor
 *   archive/byteorder  "little"
 *   archive/version    "3"
 * The archive is written here in one pass (records stored, data 64-byte
 * aligned, no ZIP64: at most 4 GiB) through atomic.h, so a killed export
 * leaves no temporary file, a non-regular `path` is refused and "-" writes
 * to standard output. Shapes are checked first: every size and stride
 * must fit in int64, as PyTorch holds them.
 * Is not: a reader (xlatrain reads its own safetensors checkpoints), or
 * anything beyond plain contiguous CPU tensors.
 */
#ifndef XT_IO_TORCH_SAVE_H
#define XT_IO_TORCH_SAVE_H

#include "io/safetensors.h"
#include "util/err.h"

/* Write the n tensors (in order, as the state_dict's keys) to `path`.
 * Returns 0, or XT_EIO with e naming the path. */
int xt_torch_save(const char *path, const xt_st_tensor *t, int n, xt_err *e);

#endif

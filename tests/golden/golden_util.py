"""Shared by the golden-fixture scripts in tests/golden/ (run them with
Debian's /usr/bin/python3, which has python3-torch, from the repo root):
the seed CNN as PyTorch defines it, and a safetensors writer that records
where the numbers came from in the file's __metadata__."""
import json
import platform
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class SeedCNN(nn.Module):
    """PyTorch/XLA test_train_mp_mnist.py's MNIST net (models/fashion_cnn.yaml)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, 5)
        self.bn1 = nn.BatchNorm2d(10)
        self.conv2 = nn.Conv2d(10, 20, 5)
        self.bn2 = nn.BatchNorm2d(20)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = self.bn1(x)
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = self.bn2(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def provenance(script):
    """Metadata naming the generator and the library versions behind the numbers."""
    return {
        "generator": script,
        "torch.version": torch.__version__,
        "numpy.version": np.__version__,
        "python.version": platform.python_version(),
        "torch.num_threads": str(torch.get_num_threads()),
    }


def write_safetensors(path, tensors, metadata):
    """tensors: name -> numpy array (float32, float64 or int32); metadata: str -> str."""
    header, blobs, off = {"__metadata__": dict(metadata)}, [], 0
    for k, a in tensors.items():
        a = np.ascontiguousarray(a)
        dt = {np.float32: "F32", np.float64: "F64", np.int32: "I32"}[a.dtype.type]
        b = a.tobytes()
        header[k] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def steps_setup(seed, batch_sizes):
    """The seed CNN's starting point for a few-step fixture, from `seed`: its
    initial state_dict (non-trivial batch-norm affine parameters; no
    num_batches_tracked) and one random batch of each size, in that order."""
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    model = SeedCNN()
    with torch.no_grad():  # non-trivial BN affine parameters
        for bn in (model.bn1, model.bn2):
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.2, 0.2)
    init = {k: v.detach().clone() for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}
    batches = [(torch.randn(n, 1, 28, 28), torch.randint(0, 10, (n,))) for n in batch_sizes]
    return init, batches


def steps_inputs(out, init, batches):
    """The initial weights (init.<name>) and the batches (x.<s>, y.<s>) of a steps fixture."""
    for k, v in init.items():
        out["init." + k] = v.numpy().astype(np.float32)
    for s, (x, y) in enumerate(batches):
        out["x.%d" % s] = x.numpy()
        out["y.%d" % s] = y.numpy().astype(np.int32)


def steps_variant(out, meta, name, opt_name, kw, s32, l32, s64):
    """One variant of a steps fixture: its float32 state after the steps
    (<name>.<state_dict name>), its losses, its optimizer's hyperparameters
    and how far float32 is from float64 (<name>.f32_vs_f64: the worst
    tensor's max|a32 - a64| / max|a64|). Returns that gap."""
    worst = 0.0
    for k, v in s32.items():
        out[name + "." + k] = v.numpy()
        ref = s64[k].numpy()
        worst = max(worst, float(np.max(np.abs(v.numpy().astype(np.float64) - ref)) / np.max(np.abs(ref))))
    out[name + ".loss"] = np.array(l32, dtype=np.float32)
    meta[name + ".optimizer"] = opt_name.lower()
    for key in ("lr", "momentum", "weight_decay"):
        meta[name + "." + key] = repr(float(kw.get(key, 0.0)))
    meta[name + ".nesterov"] = "1" if kw.get("nesterov") else "0"
    meta[name + ".f32_vs_f64"] = "%.3g" % worst
    return worst

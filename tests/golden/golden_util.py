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

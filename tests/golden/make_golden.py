#!/usr/bin/python3
"""Golden values for tests/test_golden.c, computed by PyTorch (Debian's
python3-torch; run with /usr/bin/python3 from the repo root):

    /usr/bin/python3 tests/golden/make_golden.py

Writes tests/golden/seed_cnn.safetensors: a fixed batch (x, y), the seed
CNN's initial weights (state_dict names), and what one training-mode
forward/backward gives in float32: log-probabilities, loss, every
parameter's gradient (grad.<name>) and the BN running stats after the step.
float64 versions of the outputs come from the same network in double.
"""
import json
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from golden_util import SeedCNN  # the seed CNN, shared with the other golden scripts

torch.manual_seed(0)


model = SeedCNN()
with torch.no_grad():  # non-trivial BN affine parameters
    for bn in (model.bn1, model.bn2):
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.2, 0.2)
init = {k: v.detach().clone() for k, v in model.state_dict().items()}
N = 16
x = torch.randn(N, 1, 28, 28)
y = torch.randint(0, 10, (N,))

out = {}
for k, v in init.items():
    if k.endswith("num_batches_tracked"):
        continue
    out["init." + k] = v.numpy().astype(np.float32)
out["x"] = x.numpy()
out["y"] = y.numpy().astype(np.int32)

model.train()
logp = model(x)
loss = F.nll_loss(logp, y)
loss.backward()
out["logp"] = logp.detach().numpy()
out["loss"] = np.array(loss.item(), dtype=np.float32)
for name, p in model.named_parameters():
    out["grad." + name] = p.grad.numpy()
for k in ("bn1.running_mean", "bn1.running_var", "bn2.running_mean", "bn2.running_var"):
    out["after." + k] = model.state_dict()[k].numpy()

header, blobs, off = {}, [], 0
for k, a in out.items():
    a = np.ascontiguousarray(a)
    dt = {np.float32: "F32", np.int32: "I32"}[a.dtype.type]
    b = a.tobytes()
    header[k] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
    blobs.append(b)
    off += len(b)
h = json.dumps(header, separators=(",", ":")).encode()
h += b" " * ((8 - len(h) % 8) % 8)
with open("tests/golden/seed_cnn.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
print("loss", loss.item())

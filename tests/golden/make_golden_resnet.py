#!/usr/bin/python3
"""Golden values for tests/test_golden_resnet.c, computed by PyTorch (Debian's
python3-torch; run with /usr/bin/python3 from the repo root):

    /usr/bin/python3 tests/golden/make_golden_resnet.py

Writes tests/golden/resnet20.safetensors: a fixed batch (x: 8 x 3x32x32, y),
ResNet-20's initial weights (init.<state_dict name>, BN affine parameters
drawn away from 1/0 so they matter) and what one training-mode forward and
backward of the cross-entropy loss gives in float32: logits, loss, every
parameter's gradient (grad.<name>) and the BN running stats after the step
(after.<name>). Its __metadata__ also holds, for each model of
tests/golden/resnet_util.py (resnet20, resnet18_cifar, resnet8_mnist), the
parameter count PyTorch reports (params.<model>) and the state_dict as
"name:shape" lines (state_dict.<model>), which the test compares with what
xlatrain declares from models/<model>.yaml.
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_util import provenance, write_safetensors  # noqa: E402
from resnet_util import MODELS  # noqa: E402

torch.manual_seed(0)
torch.set_num_threads(1)

model = MODELS["resnet20"][0]()
with torch.no_grad():
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.weight.uniform_(0.5, 1.5)
            m.bias.uniform_(-0.2, 0.2)
init = {k: v.detach().clone() for k, v in model.state_dict().items()}
N = 8
x = torch.randn(N, 3, 32, 32)
y = torch.randint(0, 10, (N,))

out = {}
for k, v in init.items():
    if not k.endswith("num_batches_tracked"):
        out["init." + k] = v.numpy().astype(np.float32)
out["x"] = x.numpy()
out["y"] = y.numpy().astype(np.int32)

model.train()
logits = model(x)
loss = F.cross_entropy(logits, y)
loss.backward()
out["logits"] = logits.detach().numpy()
out["loss"] = np.array(loss.item(), dtype=np.float32)
for name, p in model.named_parameters():
    out["grad." + name] = p.grad.numpy()
for k, v in model.state_dict().items():
    if k.endswith("running_mean") or k.endswith("running_var"):
        out["after." + k] = v.numpy()

meta = provenance("tests/golden/make_golden_resnet.py")
for name, (make, _shape) in MODELS.items():
    m = make()
    meta["params." + name] = str(sum(p.numel() for p in m.parameters()))
    meta["state_dict." + name] = "\n".join(f"{k}:{list(v.shape)}" for k, v in m.state_dict().items())
write_safetensors("tests/golden/resnet20.safetensors", out, meta)
print("loss", loss.item(), "params", {k: v for k, v in meta.items() if k.startswith("params.")})

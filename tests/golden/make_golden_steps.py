#!/usr/bin/python3
"""Golden values for tests/test_golden_steps.c, computed by PyTorch (Debian's
python3-torch; run with /usr/bin/python3 from the repo root):

    /usr/bin/python3 tests/golden/make_golden_steps.py

Writes tests/golden/seed_cnn_steps.safetensors: the seed CNN's initial
weights (init.<state_dict name>), five fixed batches (x.<s>, y.<s>; the last
one partial, as a final batch with drop_last false), and for each optimizer
variant every parameter and BN running_mean/running_var after five
training-mode steps (<variant>.<state_dict name>) plus the loss of each step
(<variant>.loss). Everything in float32, one thread. The variants'
hyperparameters, the PyTorch version and, per variant, how far PyTorch's own
float32 run is from the same run in float64 (<variant>.f32_vs_f64: the worst
tensor's max|a32 - a64| / max|a64|, a measure of float32 rounding after five
steps) are in the file's __metadata__.
"""
import sys

sys.dont_write_bytecode = True
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from golden_util import SeedCNN, provenance, steps_inputs, steps_setup, steps_variant, write_safetensors  # noqa: E402

OUT = "tests/golden/seed_cnn_steps.safetensors"
BATCH_SIZES = [8, 8, 8, 8, 5]

# name -> (torch.optim class name, kwargs); lr is constant over the five steps
VARIANTS = {
    "sgd": ("SGD", dict(lr=0.05, momentum=0.5)),
    "sgd_nesterov_wd": ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    "adam": ("Adam", dict(lr=1e-3)),
    "adamw": ("AdamW", dict(lr=1e-3, weight_decay=0.1)),
}

init, batches = steps_setup(1, BATCH_SIZES)


def train(opt_name, kw, dtype):
    m = SeedCNN().to(dtype)
    m.load_state_dict({k: v.to(dtype) for k, v in init.items()}, strict=False)
    m.train()
    opt = getattr(torch.optim, opt_name)(m.parameters(), **kw)
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = F.nll_loss(m(x.to(dtype)), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    state = {k: v.detach().clone() for k, v in m.state_dict().items() if not k.endswith("num_batches_tracked")}
    nbt = m.state_dict()["bn1.num_batches_tracked"].item()
    assert nbt == len(batches), nbt
    return state, losses


out, meta = {}, provenance("tests/golden/make_golden_steps.py")
meta["steps"] = str(len(BATCH_SIZES))
meta["variants"] = ",".join(VARIANTS)
steps_inputs(out, init, batches)
for name, (opt_name, kw) in VARIANTS.items():
    s32, l32 = train(opt_name, kw, torch.float32)
    s64, _ = train(opt_name, kw, torch.float64)
    worst = steps_variant(out, meta, name, opt_name, kw, s32, l32, s64)
    print("%-16s losses %s  float32 vs float64: %.3g" % (name, " ".join("%.5f" % v for v in l32), worst))
write_safetensors(OUT, out, meta)
print("wrote", OUT, "torch", torch.__version__)

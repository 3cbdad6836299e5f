#!/usr/bin/python3
"""Golden values for grad_clip_norm and label_smoothing in
tests/test_golden_steps.c, computed by PyTorch (Debian's python3-torch; run
with /usr/bin/python3 from the repo root):

    /usr/bin/python3 tests/golden/make_golden_clip_smooth.py

Writes tests/golden/seed_cnn_clip_smooth.safetensors in the layout of
make_golden_steps.py (init.*, x.<s>, y.<s>, <variant>.* after the steps,
<variant>.loss per step), for variants that train with
torch.nn.utils.clip_grad_norm_(parameters, max_norm) between backward and
step, and with F.cross_entropy(logits, y, label_smoothing=eps) as the loss
(the seed CNN ends in log_softmax, which cross_entropy's own log_softmax
leaves as it is). Each variant's grad_clip_norm and label_smoothing are in
the metadata, with <variant>.clip_norms: the gradients' total norms before
clipping, step by step, so that a test can see the clipping was active.
"""
import sys

sys.dont_write_bytecode = True
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from golden_util import SeedCNN, provenance, steps_inputs, steps_setup, steps_variant, write_safetensors  # noqa: E402

OUT = "tests/golden/seed_cnn_clip_smooth.safetensors"
BATCH_SIZES = [8, 8, 8, 8, 5]

# name -> (optimizer, kwargs, grad_clip_norm (0: none), label_smoothing)
VARIANTS = {
    "sgd_clip": ("SGD", dict(lr=0.05, momentum=0.5), 0.5, 0.0),
    "sgd_smooth": ("SGD", dict(lr=0.05, momentum=0.5), 0.0, 0.1),
    "sgd_nesterov_wd_clip_smooth": ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01), 1.0, 0.2),
}

init, batches = steps_setup(7, BATCH_SIZES)


def train(opt_name, kw, clip, smooth, dtype):
    m = SeedCNN().to(dtype)
    m.load_state_dict({k: v.to(dtype) for k, v in init.items()}, strict=False)
    m.train()
    opt = getattr(torch.optim, opt_name)(m.parameters(), **kw)
    losses, norms = [], []
    for x, y in batches:
        opt.zero_grad()
        loss = F.cross_entropy(m(x.to(dtype)), y, label_smoothing=smooth)
        loss.backward()
        if clip > 0:
            norms.append(float(torch.nn.utils.clip_grad_norm_(m.parameters(), clip)))
        opt.step()
        losses.append(loss.item())
    state = {k: v.detach().clone() for k, v in m.state_dict().items() if not k.endswith("num_batches_tracked")}
    return state, losses, norms


out, meta = {}, provenance("tests/golden/make_golden_clip_smooth.py")
meta["steps"] = str(len(BATCH_SIZES))
meta["variants"] = ",".join(VARIANTS)
steps_inputs(out, init, batches)
for name, (opt_name, kw, clip, smooth) in VARIANTS.items():
    s32, l32, n32 = train(opt_name, kw, clip, smooth, torch.float32)
    s64, _, _ = train(opt_name, kw, clip, smooth, torch.float64)
    worst = steps_variant(out, meta, name, opt_name, kw, s32, l32, s64)
    meta[name + ".grad_clip_norm"] = repr(float(clip))
    meta[name + ".label_smoothing"] = repr(float(smooth))
    meta[name + ".clip_norms"] = ",".join("%.6g" % v for v in n32)
    print("%-28s losses %s  norms %s  float32 vs float64: %.3g"
          % (name, " ".join("%.5f" % v for v in l32), " ".join("%.3f" % v for v in n32), worst))
write_safetensors(OUT, out, meta)
print("wrote", OUT, "torch", torch.__version__)

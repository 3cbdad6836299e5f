#!/usr/bin/python3
"""Golden values for tests/test_optim.c, computed by torch.optim (Debian's
python3-torch; run with /usr/bin/python3 from the repo root):

    /usr/bin/python3 tests/golden/make_golden_optim.py

Writes tests/golden/optim.safetensors:
  w0                      float32 [6]: the starting weights of every variant
  grad                    float32 [STEPS, 6]: the gradient given at each step
  <variant>.lr            float64 [steps]: the learning rate of each step
                          (param_group["lr"] set before the step, as a
                          scheduler does)
  <variant>.w             float32 [steps, 6]: the weights after each step
  sched.step / sched.cosine
                          float64 [11]: lr at epochs 0..10 of StepLR(step_size=3,
                          gamma=0.5) and CosineAnnealingLR(T_max=10), base lr 0.1
  sched.warmup            float64 [25]: lr at steps 0..24 of LinearLR(
                          start_factor=1/20, total_iters=19) stepped per batch:
                          a 2-epoch warm-up at 10 steps per epoch, base lr 0.1
The variants' hyperparameters and the PyTorch version are in __metadata__.
"""
import sys

sys.dont_write_bytecode = True
import numpy as np  # noqa: E402
import torch  # noqa: E402

from golden_util import provenance, write_safetensors  # noqa: E402

OUT = "tests/golden/optim.safetensors"
W0 = [1.0, -2.0, 0.5, 0.0, 3.0, -0.25]
GRAD = [  # a zero, sign changes, a gradient that vanishes later
    [0.1, 0.2, -0.3, 0.0, 1.5, -0.05],
    [0.12, -0.1, -0.25, 0.0, 1.0, 0.02],
    [0.08, 0.3, -0.4, 0.0, -0.5, 0.0],
    [0.1, 0.05, -0.2, 0.0, 0.25, -0.01],
    [0.11, -0.2, -0.35, 0.0, 0.0, 0.04],
]
STEPS = len(GRAD)
DECAYING = [0.01, 0.008, 0.006, 0.004, 0.002]

# name -> (torch.optim class, kwargs other than lr, lr per step)
VARIANTS = {
    "sgd_plain": ("SGD", dict(), [0.5] * STEPS),
    "sgd_momentum": ("SGD", dict(momentum=0.9), [0.1] * STEPS),
    "sgd_nesterov_wd": ("SGD", dict(momentum=0.5, nesterov=True, weight_decay=0.01), [0.1] * STEPS),
    "sgd_momentum_wd_lr_changes": ("SGD", dict(momentum=0.9, weight_decay=0.1), [0.1, 0.05, 0.05, 0.02, 0.01]),
    "adam": ("Adam", dict(weight_decay=0.03), [0.01] * STEPS),
    "adam_betas_eps_lr_changes": ("Adam", dict(betas=(0.8, 0.99), eps=1e-3), DECAYING),
    "adamw": ("AdamW", dict(weight_decay=0.5), [0.01] * STEPS),
    "adamw_lr_changes": ("AdamW", dict(weight_decay=0.5, betas=(0.85, 0.95)), DECAYING),
}

out, meta = {}, provenance("tests/golden/make_golden_optim.py")
out["w0"] = np.array(W0, dtype=np.float32)
out["grad"] = np.array(GRAD, dtype=np.float32)
meta["variants"] = ",".join(VARIANTS)
for name, (cls, kw, lrs) in VARIANTS.items():
    w = torch.tensor(W0, dtype=torch.float32, requires_grad=True)
    opt = getattr(torch.optim, cls)([w], lr=lrs[0], **kw)
    traj = []
    for s, lr in enumerate(lrs):
        for group in opt.param_groups:
            group["lr"] = lr
        w.grad = torch.tensor(GRAD[s], dtype=torch.float32)
        opt.step()
        traj.append(w.detach().clone().numpy())
    out[name + ".lr"] = np.array(lrs, dtype=np.float64)
    out[name + ".w"] = np.stack(traj)
    meta[name + ".optimizer"] = cls.lower()
    meta[name + ".momentum"] = repr(float(kw.get("momentum", 0.0)))
    meta[name + ".nesterov"] = "1" if kw.get("nesterov") else "0"
    meta[name + ".weight_decay"] = repr(float(kw.get("weight_decay", 0.0)))
    b1, b2 = kw.get("betas", (0.9, 0.999))
    meta[name + ".beta1"], meta[name + ".beta2"] = repr(float(b1)), repr(float(b2))
    meta[name + ".eps"] = repr(float(kw.get("eps", 1e-8)))
    print("%-28s %s" % (name, " ".join("%.7g" % v for v in traj[-1])))


def lrs_per_epoch(make, n):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=0.1)
    sched = make(opt)
    got = []
    for _ in range(n):
        got.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return np.array(got, dtype=np.float64)


out["sched.step"] = lrs_per_epoch(lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5), 11)
out["sched.cosine"] = lrs_per_epoch(lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10), 11)
out["sched.warmup"] = lrs_per_epoch(
    lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=1 / 20, end_factor=1.0, total_iters=19), 25)
for k in ("sched.step", "sched.cosine", "sched.warmup"):
    print(k, " ".join("%.6g" % v for v in out[k]))
write_safetensors(OUT, out, meta)
print("wrote", OUT, "torch", torch.__version__)

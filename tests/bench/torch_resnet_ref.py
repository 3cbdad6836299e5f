#!/usr/bin/python3
"""PyTorch's ResNet-20 training throughput, the reference `make bench` puts
beside xlatrain's (tests/bench/run.sh), in the manner of
../shared/bench/torch_ref.py --bench: synthetic N(0,1) 3x32x32 batches and
random labels, SGD (lr 0.01, momentum 0.5), batch 128 per process, one thread
per process; --procs N forks N processes joined by DistributedDataParallel
over gloo (gradients all-reduced, BN statistics local, as xlatrain's
workers). The network is tests/golden/resnet_util.py's, the one the golden
test checks models/resnet20.yaml against. Run with Debian's /usr/bin/python3.

    torch_resnet_ref.py [--model resnet20] [--procs 1] [--batch 128] [--bench-seconds 10] [--bf16]

--bf16: the forward and the loss under torch.autocast("cpu", torch.bfloat16),
as ../shared/bench/torch_ref.py --bf16 (oneDNN then runs AMX where the CPU
has it). Prints "RESULT model=... precision=... procs=... samples_per_s=... median_step_ms=...
fwd_macs=... peak_rss_mb=...".
"""
import argparse
import math
import os
import resource
import socket
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--model", default="resnet20")
ap.add_argument("--procs", type=int, default=1)
ap.add_argument("--batch", type=int, default=128)
ap.add_argument("--bench-seconds", type=float, default=10.0)
ap.add_argument("--warmup", type=int, default=3)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--bf16", action="store_true", help="bf16 autocast for the forward and the loss")
A = ap.parse_args()
# one thread per process, pinned before torch (and its OpenMP / OpenBLAS) loads
for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[v] = "1"
os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden"))
from resnet_util import MODELS  # noqa: E402


def fwd_macs(model, shape):
    """Multiply-adds of one sample's forward pass through the convs and linear layers."""
    total = [0]

    def hook(mod, inp, out):
        if isinstance(mod, nn.Conv2d):
            total[0] += out[0].numel() * mod.kernel_size[0] * mod.kernel_size[1] * mod.in_channels // mod.groups
        else:
            total[0] += mod.in_features * mod.out_features
    hs = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    model.eval()
    with torch.no_grad():
        model(torch.zeros(1, *shape))
    for h in hs:
        h.remove()
    return total[0]


def worker(rank, port):
    torch.set_num_threads(1)
    dist = None
    if A.procs > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=A.procs)

    def allmax(v):
        if dist is None:
            return v
        t = torch.tensor([v], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    make, shape = MODELS[A.model]
    torch.manual_seed(A.seed)
    net = make()
    model = nn.parallel.DistributedDataParallel(net, broadcast_buffers=False) if dist else net
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    g = torch.Generator().manual_seed(A.seed + 1000 * rank)
    xs = [torch.randn(A.batch, *shape, generator=g) for _ in range(4)]
    ys = [torch.randint(0, 10, (A.batch,), generator=g) for _ in range(4)]
    model.train()
    it = [0]

    def step():
        i = it[0] % len(xs)
        it[0] += 1
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=A.bf16):
            loss = F.cross_entropy(model(xs[i]), ys[i])
        loss.backward()
        opt.step()
        return loss

    for _ in range(A.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(2):
        step()
    per = allmax((time.perf_counter() - t0) / 2)
    nsteps = max(5, int(math.ceil(A.bench_seconds / per)))
    times = []
    if dist:
        dist.barrier()
    t0 = time.perf_counter()
    for _ in range(nsteps):
        ts = time.perf_counter()
        loss = step()
        times.append(time.perf_counter() - ts)
    if dist:
        dist.barrier()
    elapsed = allmax(time.perf_counter() - t0)
    rss = allmax(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
    if rank == 0:
        print(f"RESULT model={A.model} precision={'bf16' if A.bf16 else 'fp32'} procs={A.procs} batch={A.batch} steps={nsteps} "
              f"samples_per_s={A.procs * A.batch * nsteps / elapsed:.1f} "
              f"median_step_ms={1000 * float(np.median(times)):.1f} fwd_macs={fwd_macs(make(), shape)} "
              f"peak_rss_mb={rss:.1f} last_loss={loss.item():.3f} torch={torch.__version__}", flush=True)
    if dist:
        # as torch_ref.py: torch 1.13 + gloo can hang in interpreter teardown
        dist.barrier()
        sys.stdout.flush()
        os._exit(0)


if __name__ == "__main__":
    if A.procs == 1:
        worker(0, 0)
    else:
        import torch.multiprocessing as mp
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        mp.start_processes(worker, args=(port,), nprocs=A.procs, join=True, start_method="fork")

#!/usr/bin/python3
"""Check an `xlatrain --export` file with PyTorch alone (Debian's
python3-torch; run with /usr/bin/python3). tests/test_export.c runs it.

    check_export.py WEIGHTS.pt IMAGES.idx PREDICTIONS.csv [--mean 0.1307 --std 0.3081]
                    [--model seed_cnn|resnet8_mnist|resnet20|resnet18_cifar]

Loads WEIGHTS.pt with torch.load (weights_only=True: tensors and an
OrderedDict, nothing else), puts it into the model (the seed CNN of
golden_util.py, or a residual network of resnet_util.py) with
load_state_dict(strict=True), predicts every image of the raw IDX file and
compares with xlatrain's --predict CSV (index,predicted,p0..p9): the class
must agree on every image and each probability within 1e-4 (the CSV has 5
decimals). Prints "RESULT n=... agree=... max_prob_diff=... torch=..." and
exits 0 only when all agree.
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_util import SeedCNN  # noqa: E402
from resnet_util import MODELS  # noqa: E402


def read_idx_images(path):
    raw = open(path, "rb").read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("weights")
    ap.add_argument("images")
    ap.add_argument("predictions")
    ap.add_argument("--mean", type=float, default=0.1307)
    ap.add_argument("--std", type=float, default=0.3081)
    ap.add_argument("--model", default="seed_cnn", choices=["seed_cnn"] + sorted(MODELS))
    a = ap.parse_args()
    torch.set_num_threads(1)
    state = torch.load(a.weights, weights_only=True)
    model = SeedCNN() if a.model == "seed_cnn" else MODELS[a.model][0]()
    model.load_state_dict(state, strict=True)
    model.eval()
    x = (read_idx_images(a.images).astype(np.float32) / 255.0 - a.mean) / a.std
    with torch.no_grad():
        # softmax of log-probabilities (the seed CNN) or of logits (the ResNets) is the probabilities
        prob = torch.softmax(model(torch.from_numpy(np.ascontiguousarray(x)).unsqueeze(1)), 1).numpy()
    rows = [line.strip().split(",") for line in open(a.predictions) if line[:1].isdigit()]
    agree, worst = 0, 0.0
    for r in rows:
        i, theirs = int(r[0]), np.array([float(v) for v in r[-10:]])
        agree += int(r[1]) == int(prob[i].argmax())
        worst = max(worst, float(np.abs(theirs - prob[i]).max()))
    n = len(x)
    print(f"RESULT n={n} rows={len(rows)} agree={agree} max_prob_diff={worst:.2e} torch={torch.__version__}")
    sys.exit(0 if len(rows) == n and agree == n and worst <= 1e-4 else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Check an `xlatrain --export ... --output model.onnx` with Debian's
python3-onnx, then run it in onnxruntime (node, tests/onnx/ort_run.js) and
compare with xlatrain's own --predict. tests/test_onnx.c runs it.

    check_onnx.py MODEL.onnx WEIGHTS.safetensors IMAGES.idx PREDICTIONS.csv

1. onnx.checker.check_model(full_check=True) and strict shape inference,
   which must give the output [N, classes] with N symbolic;
2. the opset is 17 and the IR version 8; the input is float [N, C, H, W];
3. the initializers are the state_dict of the --export safetensors file
   (every float tensor: names, shapes and bytes; num_batches_tracked is not
   a weight), all as raw_data;
4. metadata_props carry the normalization, class names, version and model
   hash, and doc_string says them too;
5. onnxruntime's outputs on every image, after log_softmax (a no-op on
   log-probabilities), give --predict's class on 100% of the images and its
   log-probabilities (the log of the CSV's probabilities) within 1e-4.
Prints "RESULT n=... agree=... max_logp_diff=..." and exits 0 only if all hold.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def read_safetensors(path):
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    head = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, t in head.items():
        if name == "__metadata__" or t["dtype"] != "F32":
            continue
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(raw[base + a:base + b], dtype="<f4").reshape(t["shape"])
    return out


def main():
    model_path, weights, images, predictions = sys.argv[1:5]
    m = onnx.load(model_path)
    onnx.checker.check_model(m, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    if m.ir_version != 8 or [(o.domain, o.version) for o in m.opset_import] != [("", 17)]:
        fail(f"ir_version {m.ir_version}, opsets {m.opset_import}")
    g = inferred.graph
    (inp,) = g.input
    idims = [d.dim_param or d.dim_value for d in inp.type.tensor_type.shape.dim]
    (out,) = g.output
    odims = [d.dim_param or d.dim_value for d in out.type.tensor_type.shape.dim]
    if inp.type.tensor_type.elem_type != onnx.TensorProto.FLOAT or idims[0] != "N" or len(idims) != 4:
        fail(f"input {inp.name} {idims}")
    if odims[0] != "N" or len(odims) != 2:
        fail(f"output {out.name} {odims}")
    # the state_dict, by name, shape and bytes
    sd = read_safetensors(weights)
    inits = {t.name: t for t in m.graph.initializer}
    if set(inits) != set(sd):
        fail(f"initializers {sorted(set(inits) ^ set(sd))} differ from the state_dict")
    for name, t in inits.items():
        if not t.raw_data or t.data_type != onnx.TensorProto.FLOAT:
            fail(f"{name} is not float raw_data")
        if not np.array_equal(numpy_helper.to_array(t), sd[name]):
            fail(f"{name} differs from the state_dict")
    props = {p.key: p.value for p in m.metadata_props}
    for key in ("normalize_mean", "normalize_std", "class_names", "xlatrain_version", "model_hash"):
        if not props.get(key):
            fail(f"metadata_props has no {key}")
        if key != "class_names" and props[key] not in m.doc_string:
            fail(f"doc_string does not say {key} {props[key]}")
    classes = json.loads(props["class_names"])
    if len(classes) != odims[1]:
        fail(f"{len(classes)} class names for {odims[1]} outputs")
    mean, std = float(props["normalize_mean"]), float(props["normalize_std"])
    # onnxruntime on every image
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        res = os.path.join(tmp, "out.json")
        subprocess.run(["node", os.path.join(here, "ort_run.js"), model_path, images, repr(mean), repr(std), res],
                       check=True)
        r = json.load(open(res))
    y = np.array(r["data"], dtype=np.float64).reshape(r["dims"])
    logp = y - y.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    rows = [line.strip().split(",") for line in open(predictions) if line[:1].isdigit()]
    k = odims[1]
    agree, worst = 0, 0.0
    for row in rows:
        i = int(row[0])
        theirs = np.array([math.log(float(v)) if float(v) > 0 else -math.inf for v in row[-k:]])
        agree += int(row[1]) == int(logp[i].argmax())
        worst = max(worst, float(np.abs(theirs - logp[i]).max()))
    n = y.shape[0]
    print(f"RESULT n={n} rows={len(rows)} agree={agree} max_logp_diff={worst:.2e} output={r['output']} "
          f"initializers={len(inits)} onnx={onnx.__version__} runtime={r['backend']}")
    sys.exit(0 if len(rows) == n and agree == n and worst <= 1e-4 else 1)


if __name__ == "__main__":
    main()

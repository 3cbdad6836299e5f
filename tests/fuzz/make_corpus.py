#!/usr/bin/env python3
"""make_corpus.py — (re)write the fuzzers' seed corpora in tests/fuzz/corpus/.

Run from the repository root: python3 tests/fuzz/make_corpus.py
Standard library only. The seeds are small valid inputs (and a few near
misses) for each harness; the files are committed, so CI needs no Python.
The config and spec seeds are the repository's configs/ and models/ plus a
few inline variants; the binary formats are built here from their specs
(IDX: big-endian magic and sizes; safetensors: 8-byte LE header length, JSON
header, data, with the "xlatrain.crc32" xlatrain writes).
"""
import gzip
import io
import json
import os
import shutil
import struct
import tarfile
import zlib

ROOT = os.path.join("tests", "fuzz", "corpus")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def idx(ndim, dims, payload):
    return struct.pack(">I", 0x800 | ndim) + b"".join(struct.pack(">I", d) for d in dims) + payload


def gz(data, level=9):
    return gzip.compress(data, compresslevel=level, mtime=0)


def safetensors(tensors, meta=None, crc=True):
    """tensors: [(name, dtype, shape, bytes)]"""
    header, off, blob = {}, 0, b""
    meta = dict(meta or {})
    data = b"".join(t[3] for t in tensors)
    if crc:
        meta["xlatrain.crc32"] = "%08x" % (zlib.crc32(data) & 0xFFFFFFFF)
    if meta:
        header["__metadata__"] = meta
    for name, dtype, shape, b in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(b)]}
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def config_seeds():
    for d in ("configs",):
        for f in sorted(os.listdir(d)):
            shutil.copy(os.path.join(d, f), os.path.join(ROOT, "config", f))
    put("config", "inline_model.yaml",
        "dataset: synthetic\nnum_epochs: 2\noptimizer: {name: adamw, weight_decay: 0.01, betas: [0.9, 0.99]}\n"
        "schedule:\n  name: cosine\n  warmup_epochs: 1\ntrain_subset: [0, 100]\n"
        "model:\n  input: [1, 28, 28]\n  layers: [flatten, {linear: {out: 10}}, log_softmax]\n")
    put("config", "sets.yaml",
        "dataset: mnist\ndatadir: data/mnist\nmodel: models/mlp.yaml\n\0optimizer.name=sgd\0optimizer.nesterov=true\0"
        "momentum=0.9\0schedule={name: step, step_size: 2, gamma: 0.5}\0train_images=x:y#z.gz")
    put("config", "set_model.yaml",
        "dataset: synthetic\nnum_cores: 2\nbatch_size: 32\n\0model={input: [1, 28, 28], layers: [flatten, {linear: {out: 10}}]}\0seed=7")


def spec_seeds():
    for f in sorted(os.listdir("models")):
        shutil.copy(os.path.join("models", f), os.path.join(ROOT, "spec", f))
    put("spec", "every_kind.yaml",
        "input: [3, 32, 32]\nlayers:\n"
        "  - conv2d: {name: c1, in: 3, out: 4, kernel: [3, 5], stride: [1, 2], padding: [1, 2], bias: false}\n"
        "  - batchnorm2d: {eps: 0.001, momentum: 0.2}\n  - avgpool2d: {kernel: 2, stride: 1}\n"
        "  - maxpool2d: {kernel: [2, 3], padding: 1}\n  - relu\n  - dropout: {p: 0.25}\n  - flatten\n"
        "  - linear: {in: 320, out: 10, bias: true}\n  - log_softmax\n")
    put("spec", "flow.yaml", "{input: [1, 4, 4], layers: [flatten, {linear: {name: _x1, out: 3}}]}\n")


def idx_seeds():
    images = idx(3, [2, 3, 3], bytes(range(18)))
    labels = idx(1, [5], bytes([0, 1, 9, 3, 4]))
    mnist1 = idx(3, [1, 28, 28], bytes((i * 7) % 256 for i in range(784)))
    put("idx", "images_2x3x3.idx", images)
    put("idx", "labels_5.idx", labels)
    put("idx", "images_1x28x28.idx", mnist1)
    put("idx", "labels_bad_label.idx", idx(1, [2], bytes([1, 10])))
    put("idx", "images_trailing.idx", images + b"\0\0")
    # gz harness: mode byte, parameter byte, payload (see fuzz_idx_gz.c)
    put("idx_gz", "m0_images.gz", b"\x00\x00" + gz(images))
    put("idx_gz", "m0_labels.gz", b"\x00\x01" + gz(labels, 1))
    put("idx_gz", "m0_two_members.gz", b"\x00\x01" + gz(labels[:6]) + gz(labels[6:]))
    put("idx_gz", "m1_images.gz", b"\x25\x00" + images)   # mode 1, level 9
    put("idx_gz", "m1_mnist.gz", b"\x19\x00" + mnist1)    # mode 1, level 6
    put("idx_gz", "m0_mnist.gz", b"\x00\x02" + gz(mnist1))  # mode 0, read as 28x28
    put("idx_gz", "m2_cut.gz", b"\x02\x03" + labels)      # mode 2: last 4 bytes cut
    put("idx_gz", "m3_flip.gz", b"\x03\x11" + images)     # mode 3: one bit flipped


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


def safetensors_seeds():
    put("safetensors", "one_f32.safetensors", safetensors([("w", "F32", [2, 2], f32(1, 2, 3, 4))]))
    put("safetensors", "dtypes.safetensors", safetensors([
        ("a.f64", "F64", [2], struct.pack("<2d", 0.5, -1e300)),
        ("b.i32", "I32", [1, 1, 1], struct.pack("<i", -7)),
        ("c.i64", "I64", [], struct.pack("<q", 1 << 40)),
        ("d.u8", "U8", [3], b"\x00\x7f\xff"),
        ("e.empty", "F32", [0, 4], b""),
    ], {"format": "pt", "note": "caf\u00e9 \"quoted\" \\ \n"}))
    put("safetensors", "no_crc.safetensors", safetensors([("x", "U8", [4], b"abcd")], {"k": "v"}, crc=False))
    put("safetensors", "no_meta.safetensors", safetensors([("x", "I32", [2], struct.pack("<2i", 1, 2))], crc=False))
    put("safetensors", "out_of_order.safetensors",
        struct.pack("<Q", 120) + json.dumps({"b": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]},
                                             "a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}},
                                            separators=(",", ":")).encode().ljust(120) + b"wxyz")


def ckpt_meta_seeds():
    # KEY=VALUE lines (see fuzz_ckpt_meta.c); the model hash is added by the harness
    full = ("format=pt\nxlatrain.version=1\nxlatrain.config=fuzz\nxlatrain.optimizer=adam\nxlatrain.next_epoch=3\n"
            "xlatrain.step_in_epoch=0\nxlatrain.global_step=1500\nxlatrain.optimizer_steps=1500\n"
            "xlatrain.best_accuracy=97.1200\nxlatrain.seed=1\nxlatrain.world_size=2\n"
            "xlatrain.history.loss=0.512,0.201,0.113\nxlatrain.history.accuracy=91.2,95.8,97.12\n")
    put("ckpt_meta", "full.txt", full)
    put("ckpt_meta", "mid_epoch.txt", full.replace("step_in_epoch=0", "step_in_epoch=117")
        .replace("history.loss=0.512,0.201,0.113", "history.loss=0.5,1e-30,3e+38,inf,nan")
        .replace("history.accuracy=91.2,95.8,97.12", "history.accuracy=0,100,50"))
    put("ckpt_meta", "eval_only.txt", "!eval\nxlatrain.optimizer=sgd\n" + "\n".join(
        l for l in full.splitlines() if not l.startswith("xlatrain.optimizer=")) + "\n")
    put("ckpt_meta", "wrong_model.txt", "xlatrain.model_hash=0123456789abcdef\n" + full)
    put("ckpt_meta", "minimal.txt", "xlatrain.optimizer=adam\nxlatrain.next_epoch=0\nxlatrain.step_in_epoch=0\n"
        "xlatrain.global_step=0\nxlatrain.optimizer_steps=0\n")


def cifar_seeds():
    # mode byte, payload (see fuzz_cifar.c); records are 1 label byte + 3,072 pixels
    rec = lambda label, fill: bytes([label]) + bytes((fill + i) % 256 for i in range(3072))
    two = rec(3, 0) + rec(9, 7)
    put("cifar", "m0_two_records.bin", b"\x00" + two)
    put("cifar", "m0_short.bin", b"\x00" + two[:-100])
    put("cifar", "m0_label10.bin", b"\x00" + rec(10, 1))
    member = tarfile.TarInfo("cifar-10-batches-bin/test_batch.bin")
    member.size, member.mtime = len(two), 0
    meta = tarfile.TarInfo("cifar-10-batches-bin/batches.meta.txt")
    names = b"airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n"
    meta.size, meta.mtime = len(names), 0
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        t.addfile(member, io.BytesIO(two))
        t.addfile(meta, io.BytesIO(names))
    put("cifar", "m1_archive.tar.gz", b"\x01" + gz(buf.getvalue()))
    put("cifar", "m2_records.bin", b"\x02" + two)
    put("cifar", "m2_cut.bin", b"\x06" + two)             # mode 2, last byte cut
    put("cifar", "m3_meta.txt", b"\x03" + names)


if __name__ == "__main__":
    for t in ("config", "spec", "idx", "idx_gz", "safetensors", "ckpt_meta", "cifar"):
        shutil.rmtree(os.path.join(ROOT, t), ignore_errors=True)
        os.makedirs(os.path.join(ROOT, t))
    config_seeds()
    spec_seeds()
    idx_seeds()
    safetensors_seeds()
    ckpt_meta_seeds()
    cifar_seeds()

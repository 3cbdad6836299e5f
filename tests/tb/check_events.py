#!/usr/bin/python3
"""Decode the TensorBoard event files of an xlatrain run with an independent
reader and check them against the run's metrics.jsonl and confusion.json.
tests/test_tensorboard.c runs it.

    check_events.py PB_DIR LOGDIR RUN_DIR WORLD [--resumed]

PB_DIR holds event_pb2.py, compiled by Debian's protoc from tests/tb/event.proto.
Every record's framing is checked (u64 length, masked CRC-32C of the length
with python3-crcmod, the Event, masked CRC-32C of the Event), every file
starts with file_version "brain.Event:2", and
  train/loss, train/lr at every metrics.jsonl "step" line's global_step;
  train/samples_per_sec = its rate x WORLD;
  train/loss_smoothed = the debiased moving average (0.6) of the logged
    losses, restarted in each file (a resumed run starts afresh);
  train/epoch_loss, test/accuracy, test/loss at every "epoch" line;
  test/recall/<class> for every class at every evaluation, the last ones
    equal to confusion.json's per-class recall;
  time/epoch_s > 0 at every evaluation;
  the images test/predictions and test/confusion_matrix at every
    evaluation, decoded with python3-pil to their declared size, the last
    predictions image pixel for pixel predictions.png;
  with --resumed: two files, the second opening with SessionLog START at
    the step after the checkpoint it resumed from.
The lines a resumed run repeats are taken at their last value, as
TensorBoard does after the START. Prints "RESULT files=.. records=..
scalars=.. images=.." and exits 0 only if all of it holds.
"""
import glob
import io
import json
import math
import os
import struct
import sys

import crcmod.predefined
from PIL import Image

sys.path.insert(0, sys.argv[1])
import event_pb2  # noqa: E402

crc32c = crcmod.predefined.mkPredefinedCrcFun("crc-32c")
SMOOTHING = 0.6


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    raw = open(path, "rb").read()
    at, out = 0, []
    while at < len(raw):
        if len(raw) - at < 12:
            fail(f"{path}: {len(raw) - at} stray bytes at {at}")
        (n,) = struct.unpack_from("<Q", raw, at)
        (lcrc,) = struct.unpack_from("<I", raw, at + 8)
        if lcrc != masked(raw[at:at + 8]):
            fail(f"{path}: bad length CRC at {at}")
        data = raw[at + 12:at + 12 + n]
        (dcrc,) = struct.unpack_from("<I", raw, at + 12 + n)
        if len(data) != n or dcrc != masked(data):
            fail(f"{path}: bad data CRC at {at}")
        ev = event_pb2.Event()
        ev.ParseFromString(data)
        out.append(ev)
        at += 12 + n + 4
    return out


def near(a, b, rel, what):
    if not (abs(a - b) <= rel * max(1.0, abs(b))):
        fail(f"{what}: event {a!r} vs metrics.jsonl {b!r}")


def main():
    logdir, run, world = sys.argv[2], sys.argv[3], int(sys.argv[4])
    resumed = "--resumed" in sys.argv
    # in the order written: a file's last write precedes the next run's first
    files = sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*")), key=os.path.getmtime)
    if not files or (resumed and len(files) != 2) or (not resumed and len(files) != 1):
        fail(f"{len(files)} event files in {logdir}")
    scalars, images, nrec, smoothed = {}, {}, 0, {}
    starts = []
    for fi, path in enumerate(files):
        evs = records(path)
        nrec += len(evs)
        if not evs or evs[0].WhichOneof("what") != "file_version" or evs[0].file_version != "brain.Event:2":
            fail(f"{path}: the first record is not file_version brain.Event:2")
        ema, weight = 0.0, 1.0
        for ev in evs[1:]:
            kind = ev.WhichOneof("what")
            if kind == "session_log":
                if ev.session_log.status != event_pb2.SessionLog.START:
                    fail(f"{path}: session_log {ev.session_log}")
                starts.append((fi, ev.step))
                # TensorBoard drops what earlier files logged from this step on
                for d in (scalars, images):
                    for k in [k for k in d if k[1] >= ev.step]:
                        del d[k]
                for k in [k for k in smoothed if k >= ev.step]:
                    del smoothed[k]
                continue
            if kind != "summary":
                fail(f"{path}: unexpected {kind}")
            for v in ev.summary.value:
                which = v.WhichOneof("value")
                if which == "simple_value":
                    scalars[(v.tag, ev.step)] = v.simple_value
                    if v.tag == "train/loss":
                        ema = SMOOTHING * ema + (1 - SMOOTHING) * v.simple_value
                        weight *= SMOOTHING
                        smoothed[ev.step] = ema / (1 - weight)
                elif which == "image":
                    img = Image.open(io.BytesIO(v.image.encoded_image_string))
                    img.load()
                    if img.size != (v.image.width, v.image.height) or img.format != "PNG" or v.image.colorspace != 3:
                        fail(f"{v.tag} at {ev.step}: {img.format} {img.size} vs {v.image.width}x{v.image.height}")
                    images[(v.tag, ev.step)] = img
                else:
                    fail(f"{v.tag}: unexpected {which}")
    if resumed and (len(starts) != 1 or starts[0][0] != 1):
        fail(f"SessionLog START events {starts}: expected one, in the second file")

    steps, epochs = {}, {}
    for line in open(os.path.join(run, "metrics.jsonl")):
        j = json.loads(line)
        (steps if j["type"] == "step" else epochs)[j["global_step"]] = j  # repeated lines: the last wins
    if resumed:
        first_new = starts[0][1]
        if not any(s < first_new for s in steps) or not any(s >= first_new for s in steps):
            fail(f"the resumed run's steps do not continue the count: START at {first_new}, steps {sorted(steps)}")
    for s, j in steps.items():
        near(scalars.pop(("train/loss", s)), j["loss"], 1e-5, f"train/loss at {s}")
        near(scalars.pop(("train/lr", s)), j["lr"], 1e-5, f"train/lr at {s}")
        near(scalars.pop(("train/samples_per_sec", s)), j["rate"] * world, 0.01 * world / max(1.0, j["rate"] * world) + 1e-6,
             f"train/samples_per_sec at {s}")
    for s, want in smoothed.items():
        near(scalars.pop(("train/loss_smoothed", s)), want, 1e-5, f"train/loss_smoothed at {s}")
    conf = json.load(open(os.path.join(run, "confusion.json")))
    last = max(epochs)
    for s, j in epochs.items():
        near(scalars.pop(("train/epoch_loss", s)), j["loss"], 1e-5, f"train/epoch_loss at {s}")
        near(scalars.pop(("test/accuracy", s)), j["accuracy"], 2e-6, f"test/accuracy at {s}")
        near(scalars.pop(("test/loss", s)), j["test_loss"], 1e-5, f"test/loss at {s}")
        if not scalars.pop(("time/epoch_s", s)) > 0:
            fail(f"time/epoch_s at {s} is not positive")
        for c in conf["per_class"]:
            tag = "test/recall/" + c["class"].replace(" ", "_").replace("/", "_")
            got = scalars.pop((tag, s), None)
            if got is None:
                fail(f"no {tag} at {s}")
            if s == last:
                near(got, c["recall"], 1e-5, f"{tag} at {s}")
        for tag in ("test/predictions", "test/confusion_matrix"):
            if (tag, s) not in images:
                fail(f"no image {tag} at {s}")
    grid = Image.open(os.path.join(run, "predictions.png")).convert("RGB")
    if images[("test/predictions", last)].convert("RGB").tobytes() != grid.tobytes():
        fail("the last test/predictions image is not predictions.png")
    if scalars:
        fail(f"scalars with no metrics.jsonl line: {sorted(scalars)[:8]}")
    print(f"RESULT files={len(files)} records={nrec} steps={len(steps)} evaluations={len(epochs)} images={len(images)}")


if __name__ == "__main__":
    main()

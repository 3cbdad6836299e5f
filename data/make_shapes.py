#!/usr/bin/env python3
"""make_shapes.py — write a small folder dataset for `dataset: folder`:
circles, squares, triangles and crosses of random colour, size and place on
a random background, one subfolder per class, as PNG and JPEG (and a few
greyscale, palette and RGBA PNGs, and images of other sizes, to exercise
the loader's conversions and resize).

    /usr/bin/python3 data/make_shapes.py data/shapes [N_PER_CLASS]
    xlatrain --config configs/folder_example.yaml

Needs Pillow (Debian: python3-pil). Deterministic: the same files every time.
"""
import os
import random
import sys

from PIL import Image, ImageDraw

CLASSES = ["circle", "cross", "square", "triangle"]


def shape(draw, kind, cx, cy, r, colour, width):
    if kind == "circle":
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=colour)
    elif kind == "square":
        draw.rectangle([cx - r, cy - r, cx + r, cy + r], fill=colour)
    elif kind == "triangle":
        draw.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=colour)
    else:
        draw.line([cx - r, cy - r, cx + r, cy + r], fill=colour, width=width)
        draw.line([cx - r, cy + r, cx + r, cy - r], fill=colour, width=width)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "data/shapes"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    rnd = random.Random(58)
    for kind in CLASSES:
        d = os.path.join(out, kind)
        os.makedirs(d, exist_ok=True)
        for i in range(n):
            side = 32 if i % 5 else rnd.choice([24, 40, 64])  # one in five needs resize
            bg = tuple(rnd.randrange(0, 120) for _ in range(3))
            fg = tuple(rnd.randrange(120, 256) for _ in range(3))
            im = Image.new("RGB", (side, side), bg)
            s = side / 32
            shape(ImageDraw.Draw(im), kind, rnd.uniform(11, 21) * s, rnd.uniform(11, 21) * s,
                  rnd.uniform(5, 10) * s, fg, max(1, int(3 * s)))
            base = os.path.join(d, "%04d" % i)
            v = i % 7
            if v == 0:
                im.convert("L").save(base + ".png")
            elif v == 1:
                im.convert("P", palette=Image.ADAPTIVE, colors=16).save(base + ".png")
            elif v == 2:
                im.convert("RGBA").save(base + ".png")  # alpha: dropped by the loader
            elif v in (3, 4):
                im.save(base + ".jpg", quality=90)
            else:
                im.save(base + ".png")
    print("wrote %d images in %d class folders under %s" % (n * len(CLASSES), len(CLASSES), out))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes data/testdata/jpeg: small JPEGs made by PIL (libjpeg), with the
pixels libjpeg decodes them to (its defaults: the accurate integer IDCT,
fancy upsampling, as OpenCV's imread and so Caffe read them), for data's
TestJPEGMatchesLibjpeg.

For each NAME.jpg, NAME.bgr holds the decoded image as height x width x 3
bytes in B, G, R order (OpenCV's), or NAME.gray height x width bytes for
the grey ones. The images are smooth gradients with noise, like photos:
  c420.jpg         48x40 colour, 4:2:0 chroma, quality 90 (the common case)
  c444.jpg         33x21 colour, 4:4:4, quality 75, odd sides
  prog.jpg         40x32 colour, progressive, quality 85
  gray.jpg         30x20 grey
Usage: jpeg_fixture.py OUTDIR
"""
import os
import sys

import numpy as np
from PIL import Image


def photo(h, w, seed):
    rng = np.random.default_rng(seed)
    y = np.linspace(0, 1, h)[:, None]
    x = np.linspace(0, 1, w)[None, :]
    base = np.stack([(np.sin(6 * x) + 1) * (np.cos(4 * y) + 1) * 60,
                     x * y * 255 + 0 * x, (1 - x) * y * 200 + 0 * x], -1)
    return (base + rng.normal(0, 10, (h, w, 3))).clip(0, 255).astype(np.uint8)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    cases = [
        ("c420", photo(40, 48, 1), dict(quality=90, subsampling=2)),
        ("c444", photo(21, 33, 2), dict(quality=75, subsampling=0)),
        ("prog", photo(32, 40, 3), dict(quality=85, progressive=True)),
    ]
    for name, img, opts in cases:
        path = os.path.join(out, name + ".jpg")
        Image.fromarray(img).save(path, **opts)
        dec = np.asarray(Image.open(path).convert("RGB"))[:, :, ::-1]
        dec.tofile(os.path.join(out, name + ".bgr"))
    g = photo(20, 30, 4)[:, :, 1]
    path = os.path.join(out, "gray.jpg")
    Image.fromarray(g, "L").save(path, quality=80)
    np.asarray(Image.open(path)).tofile(os.path.join(out, "gray.gray"))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes data/testdata/hdf5tops: HDF5Data sources with tops beyond a class
label, made by h5py (an independent HDF5 writer), for data's
TestHDF5Tops and cmd/dsgd's TestHDF5Regression.

seq.h5 holds 12 items (the tests list it in a source file of their own):
  data   12x3x4  data[i,a,b] = i + a/10 + b/100
  target 12x2    target[i,k] = 0.25*i - 0.5*k + 0.125   (not whole numbers)
  cont   12      cont[i] = 0 if i % 4 == 0 else 1
reg.h5 is a regression set: x 64x5 uniform in [-1, 1), y = x @ W
with W fixed (5x2), for a linear net with EuclideanLoss.
Usage: hdf5_tops_fixture.py OUTDIR
"""
import os
import sys

import h5py
import numpy as np


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    i = np.arange(12, dtype=np.float64)
    data = i[:, None, None] + np.arange(3)[None, :, None] / 10 + np.arange(4)[None, None, :] / 100
    target = 0.25 * i[:, None] - 0.5 * np.arange(2)[None, :] + 0.125
    cont = np.where(np.arange(12) % 4 == 0, 0, 1)
    with h5py.File(os.path.join(out, "seq.h5"), "w") as f:
        f["data"] = data.astype(np.float32)
        f["target"] = target.astype(np.float32)
        f["cont"] = cont.astype(np.float32)
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, size=(64, 5))
    w = np.array([[0.5, -1.0], [0.25, 0.75], [-0.5, 0.5], [1.0, 0.0], [0.0, -0.25]])
    with h5py.File(os.path.join(out, "reg.h5"), "w") as f:
        f["x"] = x.astype(np.float32)
        f["y"] = (x @ w).astype(np.float32)


if __name__ == "__main__":
    main()

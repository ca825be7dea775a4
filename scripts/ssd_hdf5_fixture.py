#!/usr/bin/env python3
"""Writes data/testdata/hdf5tops/ssd.h5: a tiny SSD training set for
cmd/dsgd's TestSSDTrainHDF5, made by h5py (an independent HDF5 writer).

  data   4x3x16x16  N(0, 1) from numpy's generator, seed 11
  label  4x1x3x8    per image (HDF5Data's batch_size 1), SSD's ground-truth
                    rows [item_id label instance_id xmin ymin xmax ymax
                    difficult] as AnnotatedData writes them, item_id 0 (the
                    image in its batch of one), rows of -1 for none: image 0
                    two boxes, image 1 one, image 2 two (one difficult),
                    image 3 none.
Usage: ssd_hdf5_fixture.py OUTDIR (caffe_crosscheck.sh reruns it)
"""
import os
import sys

import h5py
import numpy as np


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(11)
    data = rng.normal(0, 1, size=(4, 3, 16, 16))
    none = [-1] * 8
    label = np.array([
        [[0, 1, 0, 0.1, 0.15, 0.45, 0.6, 0], [0, 2, 1, 0.5, 0.5, 0.9, 0.85, 0], none],
        [[0, 2, 0, 0.3, 0.2, 0.8, 0.7, 0], none, none],
        [[0, 1, 0, 0.05, 0.05, 0.35, 0.4, 1], [0, 1, 1, 0.55, 0.1, 0.95, 0.5, 0], none],
        [none, none, none],
    ], dtype=np.float64).reshape(4, 1, 3, 8)
    with h5py.File(os.path.join(out, "ssd.h5"), "w") as f:
        f.create_dataset("data", data=data.astype(np.float32), track_times=False)
        f.create_dataset("label", data=label.astype(np.float32), track_times=False)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes data/testdata/caffe/hdf5: the two files of Caffe's HDF5DataLayerTest
(BVLC/caffe src/caffe/test/test_data/generate_sample_data.py describes
them), made by h5py, for data's TestCaffeHDF5DataRead:

sample_data.h5       data   10x8x6x5 float32, data[i,...] = arange(2400) in row-major order
                     label  10x1 float32, 1 + row (1-indexed, so that data copied
                            into label would show)
                     label2 10x1 float32, label + 1
sample_data_2_gzip.h5  the same with data + 2400, every dataset gzip level 1,
                     the labels stored as uint8

Usage: caffe_hdf5_fixture.py OUTDIR
"""
import os
import sys

import h5py
import numpy as np


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rows, cols, h, w = 10, 8, 6, 5
    total = rows * cols * h * w
    data = np.arange(total).reshape(rows, cols, h, w).astype("float32")
    label = (1 + np.arange(rows)[:, None]).astype("float32")
    label2 = label + 1
    with h5py.File(os.path.join(out, "sample_data.h5"), "w") as f:
        f["data"] = data
        f["label"] = label
        f["label2"] = label2
    with h5py.File(os.path.join(out, "sample_data_2_gzip.h5"), "w") as f:
        f.create_dataset("data", data=data + total, compression="gzip", compression_opts=1)
        f.create_dataset("label", data=label, compression="gzip", compression_opts=1, dtype="uint8")
        f.create_dataset("label2", data=label2, compression="gzip", compression_opts=1, dtype="uint8")


if __name__ == "__main__":
    main()

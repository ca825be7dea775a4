#!/usr/bin/python3
"""Caffe's snapshot files of a net whose layers share parameters, written
and checked with independent tools: Python's protobuf (caffe_pb2 generated
by protoc from caffe/caffepb/caffe.proto) and h5py.

The net (a siamese pair, as Caffe's examples/siamese shares by param name):

  data   Input          tops a, b (2x4 each)
  ip1    InnerProduct   a -> fa, param { name: "w" } param { name: "b" lr_mult: 2 decay_mult: 0 }
  ip1_p  InnerProduct   b -> fb, the same two params: ip1's blobs, shared
  ip2    InnerProduct   fa -> out, its own weight and bias

Written to caffe/caffemodel/testdata (the layout of Caffe's own writers):
  siamese.caffemodel       Net::ToProto: every layer, each with all of its
                           blobs, so ip1_p holds w and b in full as ip1 does
  siamese.caffemodel.h5    Net::ToHDF5: group /data/LAYER per layer, dataset
                           "j" for blob j only where the layer owns it, so
                           /data/ip1_p is empty
  siamese.solverstate.h5   SnapshotSolverStateToHDF5: iter and current_step
                           (int32, one element), learned_net (a fixed-length
                           null-terminated string), /history/0..3 (one per
                           learnable blob: w, b, ip2's weight and bias)
  siamese.json             the values, for the Go tests

Run from the repository root: /usr/bin/python3 scripts/caffe_shared_fixtures.py
With "check DIR" instead, it checks the files dsgd wrote into DIR (the Go
test TestSharedWritersCrossCheck writes them when DSGD_CROSSCHECK_OUT=DIR)
against these, field by field.
"""
import json
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

OUT = "caffe/caffemodel/testdata"
ITER, STEP = 7, 1
MODEL_H5 = "siamese_iter_7.caffemodel.h5"


def caffe_pb2():
    d = tempfile.mkdtemp()
    subprocess.check_call(["protoc", "-Icaffe/caffepb", "--python_out=" + d, "caffe/caffepb/caffe.proto"])
    sys.path.insert(0, d)
    import caffe_pb2 as pb
    return pb


def values():
    """Exact binary fractions, so float32 holds them without rounding."""
    w = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5) / 8
    b = np.array([0.5, -0.25, 0.125], dtype=np.float32)
    w2 = (np.arange(6, dtype=np.float32).reshape(2, 3) - 2) / 4
    b2 = np.array([1.5, -1], dtype=np.float32)
    hist = [v * -0.5 for v in (w, b, w2, b2)]
    return w, b, w2, b2, hist


# name, type, bottoms, tops, param specs (name, lr_mult, decay_mult), blobs
def layers():
    w, b, w2, b2, _ = values()
    shared = [("w", 1, 1), ("b", 2, 0)]
    return [
        ("data", "Input", [], ["a", "b"], [], []),
        ("ip1", "InnerProduct", ["a"], ["fa"], shared, [(w, True), (b, True)]),
        ("ip1_p", "InnerProduct", ["b"], ["fb"], shared, [(w, False), (b, False)]),
        ("ip2", "InnerProduct", ["fa"], ["out"], [], [(w2, True), (b2, True)]),
    ]


def net_proto(pb):
    net = pb.NetParameter()
    net.name = "siamese"
    for name, typ, bottom, top, params, blobs in layers():
        l = net.layer.add()
        l.name, l.type, l.phase = name, typ, pb.TRAIN
        l.bottom.extend(bottom)
        l.top.extend(top)
        for pname, lr, decay in params:
            p = l.param.add()
            p.name, p.lr_mult, p.decay_mult = pname, lr, decay
        for arr, _owner in blobs:
            bp = l.blobs.add()
            bp.shape.dim.extend(arr.shape)
            bp.data.extend(arr.ravel().tolist())
    return net


def write_string(group, name, s):
    """A scalar fixed-length null-terminated string: HDF5's
    H5LTmake_dataset_string, which Caffe's hdf5_save_string calls."""
    raw = s.encode()
    tid = h5py.h5t.C_S1.copy()
    tid.set_size(len(raw) + 1)
    tid.set_strpad(h5py.h5t.STR_NULLTERM)
    sid = h5py.h5s.create(h5py.h5s.SCALAR)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_obj_track_times(False)  # no timestamp: the fixture stays byte-stable
    did = h5py.h5d.create(group.id, name.encode(), tid, sid, dcpl=dcpl)
    did.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array(raw + b"\0", dtype="S%d" % (len(raw) + 1)))


def write_all(pb):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "siamese.caffemodel"), "wb") as f:
        f.write(net_proto(pb).SerializeToString())
    with h5py.File(os.path.join(OUT, "siamese.caffemodel.h5"), "w") as f:
        data = f.create_group("data")
        for name, _t, _b, _t2, _p, blobs in layers():
            g = data.create_group(name)
            for j, (arr, owner) in enumerate(blobs):
                if owner:
                    g.create_dataset(str(j), data=arr.astype("<f4"), track_times=False)
    _, _, _, _, hist = values()
    with h5py.File(os.path.join(OUT, "siamese.solverstate.h5"), "w") as f:
        f.create_dataset("iter", data=np.array([ITER], dtype=np.int32), track_times=False)
        write_string(f, "learned_net", MODEL_H5)
        f.create_dataset("current_step", data=np.array([STEP], dtype=np.int32), track_times=False)
        h = f.create_group("history")
        for i, arr in enumerate(hist):
            h.create_dataset(str(i), data=arr.astype("<f4"), track_times=False)
    w, b, w2, b2, hist = values()
    meta = {"w": w.ravel().tolist(), "b": b.tolist(), "w2": w2.ravel().tolist(), "b2": b2.tolist(),
            "history": [h.ravel().tolist() for h in hist], "iter": ITER, "current_step": STEP,
            "learned_net": MODEL_H5}
    with open(os.path.join(OUT, "siamese.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print("wrote", OUT + "/siamese.{caffemodel,caffemodel.h5,solverstate.h5,json}")


def tree(f):
    """Every group and dataset of an HDF5 file: path -> (kind, dtype, shape, values)."""
    out = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            out[name] = ("dataset", obj.dtype.str, obj.shape, obj[()].tobytes() if obj.dtype.kind != "S" else obj[()])
        else:
            out[name] = ("group",)
    f.visititems(visit)
    return out


def check(d, pb):
    want = net_proto(pb)
    got = pb.NetParameter()
    with open(os.path.join(d, "siamese.caffemodel"), "rb") as f:
        got.ParseFromString(f.read())
    assert got == want, "dsgd's siamese.caffemodel differs from Caffe's layout:\n%s\nwant\n%s" % (got, want)
    print("ok: dsgd's .caffemodel equals Caffe's (every layer with all its blobs: ip1_p holds the shared w and b)")
    for name in ("siamese.caffemodel.h5", "siamese.solverstate.h5"):
        with h5py.File(os.path.join(OUT, name), "r") as f:
            want = tree(f)
        with h5py.File(os.path.join(d, name), "r") as f:
            got = tree(f)
            if name.endswith("solverstate.h5"):
                t = f["learned_net"].id.get_type()
                assert f["learned_net"].shape == () and t.get_strpad() == h5py.h5t.STR_NULLTERM, "learned_net is not a scalar null-terminated string"
                lnet = f["learned_net"][()].decode()
                assert t.get_size() == len(lnet) + 1, (t.get_size(), lnet)
                assert lnet.endswith(MODEL_H5), lnet
                got["learned_net"] = want["learned_net"]  # the directory differs
        assert got == want, "dsgd's %s differs from Caffe's layout:\n%s\nwant\n%s" % (name, got, want)
        print("ok: dsgd's %s has Caffe's groups, datasets, types, shapes and values (%d entries)" % (name, len(got)))


def main():
    pb = caffe_pb2()
    if len(sys.argv) == 3 and sys.argv[1] == "check":
        check(sys.argv[2], pb)
    else:
        write_all(pb)


if __name__ == "__main__":
    main()

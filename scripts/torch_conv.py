#!/usr/bin/python3
"""Writes engine/layers/testdata/torch_conv.json: PyTorch's float64 results for
Caffe's N-D Convolution and Deconvolution (issue 22): conv1d/conv3d and
conv_transpose1d/3d with per-axis stride, pad and dilation and groups, a
channel axis other than 1 (Caffe treats the axes before it as batch: a
reshape to (prod(leading), C, spatial...) around PyTorch's convolution),
Caffe's 0-D convolution (a linear map over the channel axis) and two
bottom/top pairs sharing the weights (the weight and bias gradients sum
over the pairs). Weights have Caffe's shapes, which are PyTorch's for
both convolution (out, in/g, k...) and transposed convolution (in,
out/g, k...). The format is torch_layers.py's with params (weight, bias)
and param_diffs; engine/layers' TestTorchConvFixtures compares. Run with
/usr/bin/python3 (python3-torch); `make torch-layers` reruns it and the Go
tests.
"""
import json
import math
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(2222)
D = torch.float64
cases = []


def f32(t):
    # Round to float32 so Go gets exactly the same inputs.
    return t.to(torch.float32).to(D)


def gauss(*shape):
    return f32(torch.randn(tuple(shape), dtype=D))


def flat(t):
    # 9 significant digits: float32 inputs round-trip exactly, and the
    # float64 results keep far more than the Go tests' tolerance.
    return [float("%.9g" % v) for v in t.detach().reshape(-1)]


def conv_fn(deconv, nsp, stride, pad, dil, groups, axis):
    """Caffe's (de)convolution of one bottom with the channel axis axis and
    nsp spatial axes after it."""
    def fn(x, w, b):
        lead = list(x.shape[:axis])
        xs = x.reshape([math.prod(lead)] + list(x.shape[axis:]))
        if nsp == 0:
            y = xs @ w.t()
            if b is not None:
                y = y + b
        elif deconv:
            op = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[nsp]
            y = op(xs, w, b, stride=stride, padding=pad, groups=groups, dilation=dil)
        else:
            op = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nsp]
            y = op(xs, w, b, stride=stride, padding=pad, dilation=dil, groups=groups)
        return y.reshape(lead + list(y.shape[1:]))
    return fn


def run(name, deconv, shape, num_output, kernel, stride=1, pad=0, dil=1, groups=1, axis=1, bias=True, pairs=1):
    nsp = len(shape) - axis - 1
    ch = shape[axis]
    k = list(kernel)
    if deconv:
        wshape = [ch, num_output // groups] + k
    else:
        wshape = [num_output, ch // groups] + k
    w = gauss(*wshape).requires_grad_(True)
    b = gauss(num_output).requires_grad_(True) if bias else None
    fn = conv_fn(deconv, nsp, stride, pad, dil, groups, axis)
    xs = [gauss(*shape).requires_grad_(True) for _ in range(pairs)]
    tops = [fn(x, w, b) for x in xs]
    top_diffs = [gauss(*t.shape) for t in tops]
    obj = sum((t * d).sum() for t, d in zip(tops, top_diffs))
    obj.backward()
    params = [w] + ([b] if bias else [])
    cases.append({
        "name": name,
        "bottoms": [{"shape": list(x.shape), "data": flat(x)} for x in xs],
        "params": [flat(p) for p in params],
        "tops": [{"shape": list(t.shape), "data": flat(t)} for t in tops],
        "top_diffs": [flat(d) for d in top_diffs],
        "bottom_diffs": [flat(x.grad) for x in xs],
        "param_diffs": [flat(p.grad) for p in params],
    })


run("Conv1D", False, [2, 4, 9], 6, [3], stride=2, pad=1, dil=2, groups=2)
run("Conv3D", False, [2, 3, 5, 6, 4], 4, [3, 2, 2], stride=(2, 1, 2), pad=(1, 0, 1), dil=(1, 2, 1))
run("Conv3DGroup", False, [1, 6, 4, 4, 4], 3, [2, 2, 2], groups=3, bias=False)
run("Conv3DTwoPairs", False, [2, 2, 4, 4, 3], 2, [2, 3, 2], pad=(0, 1, 0), pairs=2)
run("Conv2DAxis2", False, [2, 3, 4, 5, 6], 2, [3, 2], stride=(1, 2), pad=(1, 0), groups=2, axis=2)
run("Conv2DForceND", False, [2, 3, 6, 5], 4, [3, 3], stride=2, pad=1, pairs=2)
run("Conv0DAxis3", False, [2, 3, 6, 4], 3, [], axis=3)
run("Deconv3D", True, [2, 4, 2, 3, 2], 2, [2, 3, 2], stride=(2, 1, 2), pad=(1, 0, 0), dil=(1, 1, 2), groups=2)
run("Deconv1DTwoPairs", True, [2, 2, 5], 3, [3], stride=2, pad=1, pairs=2)
run("Deconv2DAxis2", True, [2, 2, 3, 3, 4], 2, [2, 2], stride=2, axis=2)

out = sys.argv[1] if len(sys.argv) > 1 else "engine/layers/testdata/torch_conv.json"
with open(out, "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
print("wrote %d cases to %s" % (len(cases), out))

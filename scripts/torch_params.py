#!/usr/bin/python3
"""Writes engine/layers/testdata/torch_params.json: PyTorch's float64 results,
with Caffe's semantics, for the layer parameters of issue 22 that PyTorch
can check independently: Pooling with round_mode FLOOR (PyTorch's
ceil_mode=False; no FLOOR window overhangs the padded input, so Caffe's
AVE divisor is the whole kernel, PyTorch's count_include_pad=True), MAX
pooling's mask top (PyTorch's return_indices: the index y*W + x within the
plane, as Caffe's), and InfogainLoss with its second top (the softmax
probabilities) along axis 2. The format is torch_layers.py's; engine/layers'
TestTorchParamFixtures compares. Run with /usr/bin/python3 (python3-torch);
`make torch-layers` reruns it and the Go tests.
"""
import json
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(22)
D = torch.float64
cases = []


def f32(t):
    # Round to float32 so Go gets exactly the same inputs.
    return t.to(torch.float32).to(D)


def gauss(*shape):
    return f32(torch.randn(tuple(shape), dtype=D))


def unif(lo, hi, *shape):
    return f32(torch.rand(tuple(shape), dtype=D) * (hi - lo) + lo)


def run(name, fn, bottoms, grad_bottoms=None, loss_weight=None):
    """fn(bottoms) -> list of tops; tops that do not require a gradient
    (a mask) take no top diff."""
    if grad_bottoms is None:
        grad_bottoms = list(range(len(bottoms)))
    bs = [b.clone().requires_grad_(i in grad_bottoms) for i, b in enumerate(bottoms)]
    tops = fn(bs)
    if loss_weight is not None:
        top_diffs = [torch.tensor(loss_weight, dtype=D)]
    else:
        top_diffs = [gauss(*t.shape) if t.requires_grad else torch.zeros(t.shape, dtype=D) for t in tops]
    obj = sum((t * d).sum() for t, d in zip(tops, top_diffs) if t.requires_grad)
    obj.backward()

    def flat(t):
        return [float(v) for v in t.detach().reshape(-1)]

    cases.append({
        "name": name,
        "bottoms": [{"shape": list(b.shape), "data": flat(b)} for b in bottoms],
        "params": [],
        "tops": [{"shape": list(t.shape), "data": flat(t)} for t in tops],
        "top_diffs": [flat(d) for d in top_diffs],
        "bottom_diffs": [flat(b.grad) if i in grad_bottoms else None for i, b in enumerate(bs)],
        "param_diffs": [],
    })


def max_floor(k, s, p, mask):
    def fn(b):
        y, idx = F.max_pool2d(b[0], k, s, p, ceil_mode=False, return_indices=True)
        return [y, idx.to(D)] if mask else [y]
    return fn


def ave_floor(k, s, p):
    return lambda b: [F.avg_pool2d(b[0], k, s, p, ceil_mode=False, count_include_pad=True)]


# Shapes where FLOOR and CEIL differ (7 + 2 - 3 = 6 is even, 8 + 2 - 3 = 7
# odd: CEIL has one more window on the width).
x = gauss(2, 3, 7, 8)
run("PoolMaxFloor", max_floor(3, 2, 1, False), [x])
run("PoolMaxFloorMask", max_floor(3, 2, 1, True), [x])
run("PoolAveFloor", ave_floor(3, 2, 1), [x])
run("PoolMaxFloorRect", max_floor((2, 3), (3, 2), 0, False), [gauss(2, 2, 9, 10)])
run("PoolAveFloorRect", ave_floor((3, 2), (2, 3), (1, 1)), [gauss(1, 2, 6, 10)])
# MAX with a mask top and Caffe's default CEIL: with no padding and these
# sizes every CEIL window lies inside the image, so CEIL equals FLOOR.
run("PoolMaxMaskTop", max_floor((3, 4), 2, 0, True), [gauss(2, 3, 7, 8)])


def infogain_axis2(b):
    # Caffe's InfogainLossLayerTest shapes: data 4x2x5x2 on axis 2, labels
    # 4x2x1x2, H 5x5; the loss is divided by the 16 labelled positions.
    p = torch.softmax(b[0], dim=2)
    lab = b[1].reshape(4, 2, 2).long()  # (outer0, outer1, inner)
    h = b[2].reshape(5, 5)[lab]  # (4, 2, 2, 5): H[label, k]
    logp = torch.log(torch.clamp(p, min=1e-20)).permute(0, 1, 3, 2)  # (4, 2, 2, 5)
    return [-(h * logp).sum() / 16, p]


labels = torch.randint(0, 5, (4, 2, 1, 2)).to(D)
run("InfogainLossProbTop", infogain_axis2, [unif(-0.5, 2, 4, 2, 5, 2), labels, unif(0.1, 2, 1, 1, 5, 5)],
    grad_bottoms=[0], loss_weight=1.3)

out = sys.argv[1] if len(sys.argv) > 1 else "engine/layers/testdata/torch_params.json"
with open(out, "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
print("wrote %d cases to %s" % (len(cases), out))

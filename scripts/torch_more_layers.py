#!/usr/bin/python3
"""Writes engine/layers/testdata/torch_more_layers.json, the PyTorch float64
oracle for the last BVLC Caffe layers dsgd added (issue 22): Clip, Swish,
MVN, SPP, Filter, BatchReindex, Im2col and Parameter, each written from
Caffe's semantics in plain tensor operations (SPP's windows and padding by
Caffe's rules, not PyTorch's pooling). Same format as torch_layers.json;
engine/layers' TestTorchMoreFixtures builds the layer by the case's name and
compares forward and backward. Run with /usr/bin/python3 (python3-torch);
`make torch-layers` reruns it.
"""
import functools
import math
import sys

import torch
import torch.nn.functional as F

import torchfix
from torchfix import D, gauss

torch.manual_seed(22)
cases = []
run = functools.partial(torchfix.run, cases)


x4 = gauss(2, 3, 4, 5)
# Clip: away from the kinks, where the derivative is defined.
xc = x4.clone()
xc[(xc + 1).abs() < 0.05] += 0.1
xc[(xc - 1.5).abs() < 0.05] += 0.1
run("Clip", lambda b, p: [b[0].clamp(-1, 1.5)], [xc])
run("Swish", lambda b, p: [b[0] * torch.sigmoid(b[0])], [x4])
run("SwishBeta", lambda b, p: [b[0] * torch.sigmoid(1.5 * b[0])], [x4])


def mvn(x, variance, across, eps):
    n = x.shape[0]
    g = x.reshape(n, -1) if across else x.reshape(n * x.shape[1], -1)
    y = g - g.mean(1, keepdim=True)
    if variance:
        # Caffe adds eps to the standard deviation.
        y = y / ((y * y).mean(1, keepdim=True).sqrt() + eps)
    shape = list(x.shape) + [1] * (4 - x.dim())
    return y.reshape(shape)


run("MVN", lambda b, p: [mvn(b[0], True, False, 1e-9)], [x4])
run("MVNMeanOnly", lambda b, p: [mvn(b[0], False, False, 1e-9)], [x4])
run("MVNAcrossChannels", lambda b, p: [mvn(b[0], True, True, 1e-9)], [x4])
# With a large eps the forward shows where Caffe adds it (to the standard
# deviation); Caffe's backward is not the derivative then (it treats the
# divisor as the standard deviation), so the Go test compares the forward only.
run("MVNEps2D", lambda b, p: [mvn(b[0], True, True, 0.1)], [gauss(3, 6)])


def caffe_pool(x, kh, kw, sh, sw, ph, pw, ave):
    """Caffe's pooling: output size by ceil, the last window starting inside
    the padded image; AVE divides by the window clipped to the padded
    image, MAX takes the maximum of the window clipped to the image."""
    h, w = x.shape[2], x.shape[3]

    def size(n, k, s, p):
        o = int(math.ceil((n + 2 * p - k) / s)) + 1
        if p > 0 and (o - 1) * s >= n + p:
            o -= 1
        return o

    oh, ow = size(h, kh, sh, ph), size(w, kw, sw, pw)
    rows = []
    for i in range(oh):
        cols = []
        for j in range(ow):
            hs, ws = i * sh - ph, j * sw - pw
            he, we = min(hs + kh, h + ph), min(ws + kw, w + pw)
            area = (he - hs) * (we - ws)
            win = x[:, :, max(hs, 0):min(he, h), max(ws, 0):min(we, w)]
            cols.append(win.sum((2, 3)) / area if ave else win.amax((2, 3)))
        rows.append(torch.stack(cols, -1))
    return torch.stack(rows, -2)


def spp(x, height, ave):
    h, w = x.shape[2], x.shape[3]
    outs = []
    for lvl in range(height):
        bins = 2 ** lvl
        kh, kw = -(-h // bins), -(-w // bins)
        ph, pw = (kh * bins - h + 1) // 2, (kw * bins - w + 1) // 2
        outs.append(caffe_pool(x, kh, kw, kh, kw, ph, pw, ave))
    if height == 1:
        return outs[0]
    return torch.cat([o.reshape(x.shape[0], -1) for o in outs], 1)


xs = gauss(2, 3, 9, 8)
run("SPPMax", lambda b, p: [spp(b[0], 3, False)], [xs])
run("SPPAve", lambda b, p: [spp(b[0], 3, True)], [xs])
run("SPPAveOdd", lambda b, p: [spp(b[0], 3, True)], [gauss(1, 2, 13, 11)])
run("SPPHeight1", lambda b, p: [spp(b[0], 1, False)], [xs])

sel = torch.tensor([0, 1, 1, 0, 1], dtype=D).reshape(5, 1)
lab = torch.tensor([3, 1, 4, 1, 5], dtype=D)
keep = [0 != v for v in sel.reshape(-1).tolist()]
idx = [i for i, k in enumerate(keep) if k]
run("Filter", lambda b, p: [b[0][idx], b[1][idx]], [gauss(5, 2, 3), lab, sel], grad_bottoms=[0, 1])

perm = torch.tensor([4, 0, 4, 0, 1, 2], dtype=D)
run("BatchReindex", lambda b, p: [b[0][b[1].long()]], [gauss(5, 4, 3, 2), perm], grad_bottoms=[0])


def im2col(x, k, s, pd, d):
    n = x.shape[0]
    oh = (x.shape[2] + 2 * pd[0] - (d[0] * (k[0] - 1) + 1)) // s[0] + 1
    ow = (x.shape[3] + 2 * pd[1] - (d[1] * (k[1] - 1) + 1)) // s[1] + 1
    return F.unfold(x, k, dilation=d, padding=pd, stride=s).reshape(n, -1, oh, ow)


run("Im2col", lambda b, p: [im2col(b[0], (3, 3), (2, 2), (0, 0), (1, 1))], [gauss(2, 3, 6, 5)])
run("Im2colPadDilated", lambda b, p: [im2col(b[0], (3, 2), (1, 2), (2, 1), (2, 3))], [gauss(2, 2, 7, 8)])
run("Parameter", lambda b, p: [p[0] * 1], [], [gauss(2, 3, 4)])

out = sys.argv[1] if len(sys.argv) > 1 else "engine/layers/testdata/torch_more_layers.json"
torchfix.write(cases, out)
print("wrote %d cases to %s" % (len(cases), out))

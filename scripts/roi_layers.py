#!/usr/bin/python3
"""Writes engine/layers/testdata/roi_layers.json, the float64 oracle for the
region layers of the Fast/Faster R-CNN and R-FCN forks and for SNN's SeLu,
written here from the forks' semantics in plain Python loops (torchvision's
roi_pool rounds otherwise), without dsgd's code:

  ROIPooling (rbgirshick/caffe-fast-rcnn, roi_pooling_layer.cu): corners
  round(x·spatial_scale) half away from zero, the region at least 1×1, bin
  bounds floor(p·bin)/ceil((p+1)·bin) in float32 from the region's start,
  clipped; the maximum of each bin (the first on ties), 0 for an empty bin;
  the gradient goes to the maximum.

  SeLu (HolmesShuan/SNNs-Self-Normalizing-Neural-Networks-Caffe-
  Reimplementation, selu_layer.cu): λx for x > 0, λα(exp(x) − 1)
  otherwise, with the proto's float defaults λ 1.050700987, α 1.67326324.

The coordinate arithmetic is done in float32 (numpy), as the forks do it;
the values and gradients in float64. Cases hold bottoms, tops, top diffs
and bottom diffs in the format of torch_layers.json (the regions take no
gradient: null). Run with /usr/bin/python3; `make torch-layers` reruns it.
"""
import math

import numpy as np
import torch

import torchfix
from torchfix import f32, gauss

torch.manual_seed(53)
F = np.float32
cases = []


def add(name, bottoms, tops, top_diffs, bottom_diffs):
    cases.append({
        "name": name,
        "bottoms": [{"shape": list(b.shape), "data": torchfix.flat(b)} for b in bottoms],
        "params": [],
        "tops": [{"shape": list(t.shape), "data": torchfix.flat(t)} for t in tops],
        "top_diffs": [torchfix.flat(d) for d in top_diffs],
        "bottom_diffs": [torchfix.flat(d) if d is not None else None for d in bottom_diffs],
        "param_diffs": [],
    })


def cround(v):
    """C's round: half away from zero."""
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def roi_bins(start, extent, pooled, size):
    """Fast R-CNN's bins along one axis: float32 bin size and products."""
    b = F(extent) / F(pooled)
    out = []
    for p in range(pooled):
        lo = int(math.floor(F(p) * b)) + start
        hi = int(math.ceil(F(p + 1) * b)) + start
        out.append((min(max(lo, 0), size), min(max(hi, 0), size)))
    return out


def roi_pooling(x, rois, ph, pw, scale, dtop):
    n, c, h, w = x.shape
    r = rois.shape[0]
    top = torch.zeros(r, c, ph, pw, dtype=torch.float64)
    dx = torch.zeros_like(x)
    s = F(scale)
    for i in range(r):
        row = [F(v) for v in rois[i].reshape(-1).tolist()]
        b = int(row[0])
        x1, y1, x2, y2 = (cround(float(F(v) * s)) for v in row[1:])
        hb = roi_bins(y1, max(y2 - y1 + 1, 1), ph, h)
        wb = roi_bins(x1, max(x2 - x1 + 1, 1), pw, w)
        for ch in range(c):
            for py, (h0, h1) in enumerate(hb):
                for px, (w0, w1) in enumerate(wb):
                    if h1 <= h0 or w1 <= w0:
                        continue
                    best, arg = -math.inf, None
                    for yy in range(h0, h1):
                        for xx in range(w0, w1):
                            v = float(x[b, ch, yy, xx])
                            if v > best:
                                best, arg = v, (yy, xx)
                    top[i, ch, py, px] = best
                    dx[b, ch, arg[0], arg[1]] += dtop[i, ch, py, px]
    return top, dx


def case_roi(name, x, rois, ph, pw, scale):
    rois = torch.tensor(rois, dtype=torch.float64)
    top_shape = (rois.shape[0], x.shape[1], ph, pw)
    dtop = gauss(*top_shape)
    top, dx = roi_pooling(x, rois, ph, pw, scale, dtop)
    add(name, [x, rois], [top], [dtop], [dx, None])


# Values of std 10 (as the fork's test), so that no two maxima are within
# the finite differences' step. Regions inside the map, one past its
# edges, one of a single pixel, one whose corners cross (taken as 1×1) and
# one wholly outside (all bins empty), at 1/2 scale with corners that round
# half away from zero.
case_roi("ROIPooling", gauss(2, 3, 10, 9, std=10), [
    [0, 2, 3, 13, 17],
    [1, 0.5, 1.5, 16.6, 19.4],
    [1, 5, 5, 5, 5],
    [0, 10, 12, 4, 4],
    [0, -7, -5, 30, 40],
    [1, 40, 40, 50, 50],
], 3, 4, 0.5)
# More bins than the region has pixels: bins overlap and repeat maxima.
case_roi("ROIPoolingFineBins", gauss(1, 2, 6, 7, std=10), [
    [0, 4, 3, 10, 6],
    [0, 0, 0, 27, 23],
], 7, 5, 0.25)
# Scale 1, pooled 1×1: the region's maximum (Fast R-CNN's SPP-like pool).
case_roi("ROIPoolingScale1", gauss(3, 2, 5, 5, std=10), [
    [2, 1, 1, 3, 2],
    [0, 0, 0, 4, 4],
    [1, 4.4, 0, 4.6, 3],
], 1, 1, 1.0)



def case_selu(name, x, lam=F(1.050700987), alpha=F(1.67326324)):
    lam, alpha = float(lam), float(alpha)
    # No input within 0.02 of the kink at 0, for the finite differences.
    x = torch.where(x.abs() < 0.02, x.sign() * 0.02 + x, x)
    x = f32(x)
    top = torch.where(x > 0, lam * x, lam * alpha * torch.expm1(x))
    dtop = gauss(*x.shape)
    dx = torch.where(x > 0, lam * dtop, lam * alpha * torch.exp(x) * dtop)
    add(name, [x], [top], [dtop], [dx])


case_selu("SeLu", gauss(2, 3, 4, 5, std=2))
case_selu("SeLuParams", gauss(3, 7, std=1.5), lam=F(1.5), alpha=F(0.5))
case_selu("SeLuInPlace", gauss(2, 10, std=2))

torchfix.write(cases, "engine/layers/testdata/roi_layers.json")

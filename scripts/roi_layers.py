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

  PSROIPooling (daijifeng001/caffe-rfcn, psroi_pooling_layer.cu): corners
  round(x) half away from zero times spatial_scale (the far ones plus 1
  first), the region at least 0.1 on a side, bins floor(p·bin + start) to
  ceil((p+1)·bin + start) in float32, clipped; the average over bin (i, j)
  of output channel c read from channel (c·k + i)·k + j, 0 for an empty
  bin; the gradient spread over the bin's pixels.

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



def ps_bins(start, extent, k, size):
    """R-FCN's bins along one axis, in float32."""
    b = F(extent) / F(k)
    out = []
    for p in range(k):
        lo = int(math.floor(F(F(p) * b) + start))
        hi = int(math.ceil(F(F(p + 1) * b) + start))
        out.append((min(max(lo, 0), size), min(max(hi, 0), size)))
    return out


def psroi_pooling(x, rois, output_dim, k, scale, dtop):
    n, c, h, w = x.shape
    r = rois.shape[0]
    top = torch.zeros(r, output_dim, k, k, dtype=torch.float64)
    dx = torch.zeros_like(x)
    s = F(scale)
    for i in range(r):
        row = [F(v) for v in rois[i].reshape(-1).tolist()]
        b = int(row[0])
        x1, y1 = F(cround(float(row[1]))) * s, F(cround(float(row[2]))) * s
        x2, y2 = F(cround(float(row[3])) + 1) * s, F(cround(float(row[4])) + 1) * s
        hb = ps_bins(y1, max(F(y2 - y1), F(0.1)), k, h)
        wb = ps_bins(x1, max(F(x2 - x1), F(0.1)), k, w)
        for ct in range(output_dim):
            for ph, (h0, h1) in enumerate(hb):
                for pw, (w0, w1) in enumerate(wb):
                    if h1 <= h0 or w1 <= w0:
                        continue
                    ch = (ct * k + ph) * k + pw
                    area = (h1 - h0) * (w1 - w0)
                    top[i, ct, ph, pw] = x[b, ch, h0:h1, w0:w1].sum() / area
                    dx[b, ch, h0:h1, w0:w1] += dtop[i, ct, ph, pw] / area
    return top, dx


def case_psroi(name, x, rois, output_dim, k, scale):
    rois = torch.tensor(rois, dtype=torch.float64)
    dtop = gauss(rois.shape[0], output_dim, k, k)
    top, dx = psroi_pooling(x, rois, output_dim, k, scale, dtop)
    add(name, [x, rois], [top], [dtop], [dx, None])


# R-FCN's k = 3 at 1/4 scale: regions inside the map, one past its edges,
# one of a single pixel, one whose corners cross (taken as 0.1 on a side),
# one wholly outside (all bins empty), and corners that round half away
# from zero and land between pixels after scaling.
case_psroi("PSROIPooling", gauss(2, 2 * 9, 8, 7), [
    [0, 2, 3, 21, 27],
    [1, 0.5, 1.5, 16.6, 19.4],
    [1, 9, 9, 9, 9],
    [0, 20, 22, 4, 4],
    [0, -7, -5, 40, 50],
    [1, 60, 60, 70, 70],
], 2, 3, 0.25)
# k = 2, scale 1/2, three output channels, one image.
case_psroi("PSROIPoolingK2", gauss(1, 3 * 4, 5, 6), [
    [0, 1, 1, 9, 7],
    [0, 3.5, 2.5, 5.5, 8.4],
], 3, 2, 0.5)
# k = 1: plain average pooling of each region, scale 1.
case_psroi("PSROIPoolingK1", gauss(3, 2, 4, 4), [
    [2, 0, 0, 3, 3],
    [0, 1, 2, 2, 2],
], 2, 1, 1.0)


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

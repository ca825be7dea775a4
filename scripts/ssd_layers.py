#!/usr/bin/python3
"""Writes engine/layers/testdata/ssd_layers.json, the float64 oracle for
SSD's inference layers (weiliu89/caffe, branch ssd) that dsgd runs: PriorBox
and DetectionOutput, written here from the fork's semantics (its
prior_box_layer.cpp, detection_output_layer.cpp and bbox_util.cpp's CPU
path) in plain float64 tensor operations, without dsgd's code. Neither
layer has a gradient, so a case holds only bottoms and tops, in the format
of torch_layers.json; engine/layers' TestSSDFixtures builds each case's
layer by its name. Inputs are float32 values (torchfix.f32); the scores are
random, so no two tie. Run with /usr/bin/python3 (python3-torch);
`make torch-layers` reruns it.
"""
import math

import torch

import torchfix
from torchfix import D, f32, gauss, unif

torch.manual_seed(47)
cases = []


def add(name, bottoms, tops):
    cases.append({
        "name": name,
        "bottoms": [{"shape": list(b.shape), "data": torchfix.flat(b)} for b in bottoms],
        "params": [],
        "tops": [{"shape": list(t.shape), "data": torchfix.flat(t)} for t in tops],
    })


def prior_box(fh, fw, ih, iw, min_size, max_size=(), ar=(), flip=True, clip=False,
              variance=(0.1,), step=None, offset=0.5):
    """SSD's PriorBox forward: a 1×2×(fh·fw·P·4) tensor."""
    ratios = [1.0]
    for r in ar:
        if all(abs(r - a) >= 1e-6 for a in ratios):
            ratios.append(r)
            if flip:
                ratios.append(1.0 / r)
    sh, sw = step if step else (ih / fh, iw / fw)
    boxes = []
    for h in range(fh):
        for w in range(fw):
            cx, cy = (w + offset) * sw, (h + offset) * sh
            for s, mn in enumerate(min_size):
                mn = int(mn)  # the fork reads sizes into ints
                sizes = [(mn, mn)]
                if max_size:
                    side = math.sqrt(mn * int(max_size[s]))
                    sizes.append((side, side))
                sizes += [(mn * math.sqrt(r), mn / math.sqrt(r)) for r in ratios if abs(r - 1) >= 1e-6]
                for bw, bh in sizes:
                    boxes.append([(cx - bw / 2) / iw, (cy - bh / 2) / ih, (cx + bw / 2) / iw, (cy + bh / 2) / ih])
    b = torch.tensor(boxes, dtype=D).reshape(-1)
    if clip:
        b = b.clamp(0, 1)
    v = torch.tensor(variance, dtype=D)
    var = v.repeat(b.numel() // 4) if len(variance) == 4 else torch.full_like(b, variance[0])
    return torch.stack([b, var]).reshape(1, 2, -1)


def zeros(*shape):
    return torch.zeros(shape, dtype=D)


# SSD300's conv4_3 head on a 5×5 map of a 40×40 image.
add("PriorBoxSSD", [zeros(1, 2, 5, 5), zeros(1, 3, 40, 40)],
    [prior_box(5, 5, 40, 40, [30.0], [60.0], [2.0], variance=(0.1, 0.1, 0.2, 0.2), step=(8, 8))])
# Fractional sizes (truncated), duplicate ratios, clipping, img_h/img_w.
add("PriorBoxMultiSizeClip", [zeros(1, 1, 3, 4), zeros(1, 1, 7, 7)],
    [prior_box(3, 4, 30, 20, [4.7, 6.0], [9.0, 11.5], [2.0, 3.0, 0.5, 1.0], clip=True, variance=(0.3,))])
# No flip, no max_size, step_h/step_w, another offset, the default variance.
add("PriorBoxNoFlipStep", [zeros(2, 1, 4, 3), zeros(1, 1, 13, 11)],
    [prior_box(4, 3, 13, 11, [5.0], [], [2.0, 3.0], flip=False, step=(3.0, 2.5), offset=0.25)])


def size(b):
    w, h = b[2] - b[0], b[3] - b[1]
    return 0.0 if w < 0 or h < 0 else w * h


def iou(a, b):
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return 0.0
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w > 0 and h > 0:
        return w * h / (size(a) + size(b) - w * h)
    return 0.0


def decode(prior, var, p, code, encoded):
    if encoded:
        var = [1.0] * 4
    x0, y0, x1, y1 = prior
    if code == "CORNER":
        return [x0 + var[0] * p[0], y0 + var[1] * p[1], x1 + var[2] * p[2], y1 + var[3] * p[3]]
    pw, ph = x1 - x0, y1 - y0
    if code == "CORNER_SIZE":
        return [x0 + var[0] * p[0] * pw, y0 + var[1] * p[1] * ph, x1 + var[2] * p[2] * pw, y1 + var[3] * p[3] * ph]
    cx = var[0] * p[0] * pw + (x0 + x1) / 2
    cy = var[1] * p[1] * ph + (y0 + y1) / 2
    w = math.exp(var[2] * p[2]) * pw
    h = math.exp(var[3] * p[3]) * ph
    return [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]


def nms(boxes, scores, thr, nms_thr, eta, top_k):
    order = sorted((i for i in range(len(scores)) if scores[i] > thr), key=lambda i: -scores[i])
    if top_k > -1:
        order = order[:top_k]
    kept, t = [], nms_thr
    for i in order:
        if all(iou(boxes[i], boxes[k]) <= t for k in kept):
            kept.append(i)
            if eta < 1 and t > 0.5:
                t *= eta
    return kept


def detection_output(loc, conf, priors, nc, share=True, bg=0, nms_thr=0.3, top_k=-1, eta=1.0,
                     code="CORNER", encoded=False, keep_top_k=-1, thr=-3.4e38):
    """SSD's DetectionOutput forward: a 1×1×D×7 tensor."""
    n = loc.shape[0]
    npri = priors.shape[2] // 4
    nlc = 1 if share else nc
    pb = priors.reshape(2, npri, 4).tolist()
    rows = []
    for i in range(n):
        lo = loc[i].reshape(npri, nlc, 4).tolist()
        co = conf[i].reshape(npri, nc)
        boxes = [[decode(pb[0][p], pb[1][p], lo[p][c], code, encoded) for p in range(npri)] for c in range(nlc)]
        dets = []
        for c in range(nc):
            if c == bg:
                continue
            sc = co[:, c].tolist()
            for k in nms(boxes[0 if share else c], sc, thr, nms_thr, eta, top_k):
                dets.append((sc[k], c, k))
        if keep_top_k > -1 and len(dets) > keep_top_k:
            dets = sorted(dets, key=lambda d: -d[0])[:keep_top_k]
            dets = sorted(dets, key=lambda d: d[1])  # stable: each label's by score
        for s, c, k in dets:
            rows.append([i, c, s] + boxes[0 if share else c][k])
    if not rows:
        rows = [[i] + [-1] * 6 for i in range(n)]
    return torch.tensor(rows, dtype=D).reshape(1, 1, -1, 7)


def softmax_conf(n, npri, nc, scale):
    return f32(torch.softmax(gauss(n, npri, nc) * scale, dim=2).reshape(n, -1))


# Priors of a 4×4 map of a 32×32 image, 4 per cell (64 priors), clipped
# and as float32.
pri = f32(prior_box(4, 4, 32, 32, [8.0], [16.0], [2.0], clip=True, variance=(0.1, 0.1, 0.2, 0.2)))
NP = pri.shape[2] // 4

loc = gauss(2, NP * 4, std=0.5)
conf = softmax_conf(2, NP, 3, 2.5)
add("DetectionOutputCenterSize", [loc, conf, pri],
    [detection_output(loc, conf, pri, 3, nms_thr=0.45, top_k=10, code="CENTER_SIZE", keep_top_k=6, thr=0.1)])

loc = gauss(2, NP * 3 * 4, std=0.05)
conf = softmax_conf(2, NP, 3, 2.0)
add("DetectionOutputCornerNoShare", [loc, conf, pri],
    [detection_output(loc, conf, pri, 3, share=False, bg=-1, nms_thr=0.7, eta=0.8, code="CORNER", thr=0.5)])

loc = gauss(1, NP * 4, std=0.1)
conf = softmax_conf(1, NP, 4, 3.0)
add("DetectionOutputCornerSizeEncoded", [loc, conf, pri],
    [detection_output(loc, conf, pri, 4, bg=1, nms_thr=0.3, top_k=5, code="CORNER_SIZE", encoded=True, keep_top_k=8, thr=0.05)])

loc = gauss(2, NP * 4, std=0.5)
conf = softmax_conf(2, NP, 3, 1.0)
add("DetectionOutputEmpty", [loc, conf, pri],
    [detection_output(loc, conf, pri, 3, code="CENTER_SIZE", thr=0.999)])

torchfix.write(cases, "engine/layers/testdata/ssd_layers.json")

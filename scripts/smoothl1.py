#!/usr/bin/python3
"""Writes engine/layers/testdata/smoothl1.json, the float64 oracle for Fast
and Faster R-CNN's SmoothL1Loss (rbgirshick/caffe-fast-rcnn,
smooth_L1_loss_layer.cu, the fork's only implementation: its CPU
Forward and Backward are NOT_IMPLEMENTED), without dsgd's code:

  d = w_in·(pred − target); loss = Σ w_out·f(d) / N, N = pred's first axis,
  f(d) = 0.5·(σd)² for |d| < 1/σ², |d| − 0.5/σ² otherwise.

f is torch's smooth_l1_loss with beta = 1/σ² (0.5·x²/beta below beta,
|x| − 0.5·beta above), and the gradients are torch's autograd of that
expression with the loss weight as the top's diff; the weights take no
gradient (null), as in the fork. Inputs are float32 values (torchfix), and
no |d| lies within 0.05 of the kink 1/σ², for the finite differences.
Four bottoms are Faster R-CNN's (inside and outside weights), three Fast
R-CNN's older form (inside weights only). Run with /usr/bin/python3;
`make torch-layers` reruns it.
"""
import numpy as np
import torch
import torch.nn.functional as Fn

import torchfix
from torchfix import f32, gauss, unif

torch.manual_seed(71)


def away_from_kink(pred, target, w_in, s2):
    """Moves target so that no |w_in·(pred − target)| is within 0.05 of
    1/σ² (nor within 0.01 of 0 where w_in is not 0)."""
    k = 1.0 / s2
    w = torch.where(w_in == 0, torch.ones_like(w_in), w_in)
    d = w * (pred - target)
    a = d.abs()
    d = torch.where((a - k).abs() < 0.05, d.sign() * (k + 0.06) + 0 * d, d)
    d = torch.where(d.abs() < 0.01, torch.full_like(d, 0.02), d)
    return f32(pred - d / w)


cases = []


def case(name, shape, sigma, weights=0, loss_weight=1.0, target_shape=None, std=1.0):
    s = float(np.float32(sigma))
    s2 = s * s
    pred = gauss(*shape, std=std)
    w_in = torch.ones(shape, dtype=torchfix.D)
    if weights:
        # Fast/Faster R-CNN's inside weights are 0 or 1 (the class's four
        # coordinates); fractions too, to check their factor.
        w_in = f32(torch.where(torch.rand(shape, dtype=torchfix.D) < 0.3,
                               torch.zeros(shape, dtype=torchfix.D),
                               unif(0.5, 2, *shape)))
    target = away_from_kink(pred, gauss(*shape, std=std), w_in, s2)
    bottoms = [pred, target]
    if weights >= 1:
        bottoms.append(w_in)
    if weights >= 2:
        bottoms.append(unif(0.1, 1.5, *shape))
    if target_shape is not None:
        bottoms[1] = bottoms[1].reshape(target_shape)

    def fn(bs, _):
        p, t = bs[0], bs[1].reshape(shape)
        d = p - t
        if len(bs) > 2:
            d = bs[2] * d
        e = Fn.smooth_l1_loss(d, torch.zeros_like(d), reduction="none", beta=1.0 / s2)
        if len(bs) > 3:
            e = bs[3] * e
        return [e.sum() / shape[0]]

    grad = [0, 1]
    torchfix.run(cases, name, fn, bottoms, grad_bottoms=grad, loss_weight=loss_weight)


# Plain: predictions and targets, sigma 1.
case("SmoothL1Loss", (4, 6), 1.0, std=1.5)
# Faster R-CNN's RPN loss: sigma 3, inside and outside weights, 1×36×H×W.
case("SmoothL1LossWeights", (2, 12, 3, 4), 3.0, weights=2, std=0.5)
# Fast R-CNN's three bottoms (inside weights), loss_weight 2, N×84.
case("SmoothL1LossInside", (5, 8), 1.0, weights=1, loss_weight=2.0, std=2)
# sigma 0.5 (kink at 4), loss weight 0.25, targets N×K×1×1 against N×K
# predictions, as the fork's num/channels/height/width checks accept.
case("SmoothL1LossSigmaHalf", (3, 7), 0.5, loss_weight=0.25, target_shape=(3, 7, 1, 1), std=4)

torchfix.write(cases, "engine/layers/testdata/smoothl1.json")

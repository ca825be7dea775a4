#!/usr/bin/python3
"""Writes engine/layers/testdata/torch_layers.json: for each case, inputs and
params (float32 values) and what PyTorch computes in float64 with Caffe's
semantics for the layer's tops, and the gradients of bottoms and params
given the top diffs. engine/layers' TestTorchFixtures builds the same layer by
the case's name and compares. Run with /usr/bin/python3 (python3-torch);
`make torch-layers` reruns it and the Go test.
"""
import functools
import sys

import torch
import torch.nn.functional as F

import torchfix
from torchfix import D, gauss, unif

torch.manual_seed(12)
cases = []
run = functools.partial(torchfix.run, cases)


def labels(n, k):
    return torch.randint(0, k, (n,)).to(D)


def unary(name, f, x):
    run(name, lambda b, p: [f(b[0])], [x])


x = gauss(2, 3, 4)
unary("AbsVal", torch.abs, x)
unary("BNLL", F.softplus, x)
unary("ELU", lambda v: F.elu(v, alpha=0.7), x)
unary("Power", lambda v: (1.5 + 0.8 * v) ** 2.5, unif(-1, 1, 2, 3, 4))
unary("Exp", lambda v: 2.0 ** (0.3 + 0.5 * v), x)
unary("Log", lambda v: torch.log(3 + 2 * v) / torch.log(torch.tensor(10.0, dtype=D)), unif(-0.9, 1, 2, 3, 4))
unary("Threshold", lambda v: (v > 0.2).to(D) + 0 * v, x)

x4 = gauss(2, 3, 4, 5)
run("PReLU", lambda b, p: [F.prelu(b[0], p[0])], [x4], [unif(0.1, 0.5, 3)])
run("PReLUShared", lambda b, p: [F.prelu(b[0], p[0])], [x4], [unif(0.1, 0.5, 1)])

run("Slice", lambda b, p: list(torch.split(b[0], [1, 2, 2], dim=1)), [gauss(2, 5, 3)])
run("Split", lambda b, p: [b[0] * 1, b[0] * 1], [gauss(2, 3)])
run("Reshape", lambda b, p: [b[0].reshape(2, 12)], [gauss(2, 3, 4)])
run("Crop", lambda b, p: [b[0][:, :, 1:4, 2:6]], [gauss(2, 3, 6, 7), gauss(2, 3, 3, 4)], grad_bottoms=[0])
run("Tile", lambda b, p: [b[0].repeat(1, 3, 1)], [gauss(2, 3, 4)])
xr = gauss(2, 3, 4)
run("ReductionSum", lambda b, p: [b[0].reshape(2, -1).sum(1)], [xr])
run("ReductionASum", lambda b, p: [b[0].abs().sum()], [xr])
run("ReductionSumSq", lambda b, p: [0.5 * (b[0] ** 2).reshape(2, -1).sum(1)], [xr])
run("ReductionMean", lambda b, p: [2 * b[0].mean(2)], [xr])
xa = gauss(3, 2, 5)


def argmax_noaxis(b, p):
    v = b[0].detach().reshape(3, -1)
    vals, idx = torch.sort(v, dim=1, descending=True, stable=True)
    return [torch.cat([idx[:, :2].to(D), vals[:, :2]], 1).reshape(3, 2, 2)]


def argmax_axis(b, p):
    vals, idx = torch.sort(b[0].detach(), dim=1, descending=True, stable=True)
    return [idx[:, :1].to(D)]


run("ArgMax", argmax_noaxis, [xa], grad_bottoms=[])
run("ArgMaxAxis", argmax_axis, [xa], grad_bottoms=[])
run("Bias", lambda b, p: [b[0] + p[0].reshape(1, 3, 1)], [gauss(2, 3, 4)], [gauss(3)])
run("Bias2", lambda b, p: [b[0] + b[1].reshape(1, 3, 4)], [gauss(2, 3, 4), gauss(3, 4)])
idx = torch.tensor([[0, 3, 4], [2, 2, 1]], dtype=D)
run("Embed", lambda b, p: [F.embedding(b[0].long(), p[0]) + p[1]], [idx], [gauss(5, 4), gauss(4)], grad_bottoms=[])

a, bb = gauss(4, 3), gauss(4, 3)
run("EuclideanLoss", lambda b, p: [((b[0] - b[1]) ** 2).sum() / 4 / 2], [a, bb], loss_weight=1.7)
t = unif(0, 1, 4, 3)
run("SigmoidCrossEntropyLoss", lambda b, p: [F.binary_cross_entropy_with_logits(b[0], b[1], reduction="sum") / 4],
    [gauss(4, 3, std=3), t], grad_bottoms=[0], loss_weight=1.3)
sim = torch.tensor([1, 0, 0, 1, 0], dtype=D)
fa, fb = gauss(5, 3, std=0.5), gauss(5, 3, std=0.5)


class CaffeSqrt(torch.autograd.Function):
    """sqrt whose gradient is 1/(2(sqrt(x) + 1e-4)), as Caffe's
    ContrastiveLoss backward divides by (d + 1e-4)."""

    @staticmethod
    def forward(ctx, x):
        y = torch.sqrt(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g / (2 * (y + 1e-4))


def contrastive(b, p, legacy=False):
    d2 = ((b[0] - b[1]) ** 2).sum(1)
    if legacy:
        dis = torch.clamp(1.5 - d2, min=0)
    else:
        dis = torch.clamp(1.5 - CaffeSqrt.apply(d2), min=0) ** 2
    return [(b[2] * d2 + (1 - b[2]) * dis).sum() / 5 / 2]


run("ContrastiveLoss", contrastive, [fa, fb, sim], grad_bottoms=[0, 1], loss_weight=0.9)
run("ContrastiveLossLegacy", lambda b, p: contrastive(b, p, True), [fa, fb, sim], grad_bottoms=[0, 1], loss_weight=0.9)
sc, lab = gauss(4, 5), labels(4, 5)


def hinge(b, p, sq):
    s = -torch.ones(4, 5, dtype=D)
    s[torch.arange(4), b[1].long()] = 1
    h = torch.clamp(1 - s * b[0], min=0)
    return [(h ** 2 if sq else h).sum() / 4]


run("HingeLossL1", lambda b, p: hinge(b, p, False), [sc, lab], grad_bottoms=[0], loss_weight=1.1)
run("HingeLossL2", lambda b, p: hinge(b, p, True), [sc, lab], grad_bottoms=[0], loss_weight=1.1)
H = unif(0, 1, 5, 5)
lab6 = torch.tensor([0, 4, 2, 2, 1, 3], dtype=D)


def infogain(b, p):
    logp = torch.log_softmax(b[0], dim=1)  # (2, 5, 3)
    lab = b[1].reshape(2, 3).long()
    h = b[2][lab]  # (2, 3, 5)
    return [-(h.permute(0, 2, 1) * logp).sum() / 6]


run("InfogainLoss", infogain, [gauss(2, 5, 3), lab6, H], grad_bottoms=[0], loss_weight=1.2)
prob = unif(0.05, 1, 4, 5)
run("MultinomialLogisticLoss", lambda b, p: [-torch.log(b[0][torch.arange(4), b[1].long()]).sum() / 4],
    [prob, lab], grad_bottoms=[0], loss_weight=0.8)
run("Deconvolution", lambda b, p: [F.conv_transpose2d(b[0], p[0], p[1], stride=2, padding=1, groups=2)],
    [gauss(2, 4, 3, 3)], [gauss(4, 3, 3, 3), gauss(6)])
run("ConvolutionDilated", lambda b, p: [F.conv2d(b[0], p[0], p[1], stride=1, padding=2, dilation=2)],
    [gauss(2, 3, 7, 6)], [gauss(4, 3, 3, 3), gauss(4)])
run("ConvolutionDilatedStrided", lambda b, p: [F.conv2d(b[0], p[0], None, stride=(2, 1), padding=(1, 0), dilation=(3, 2))],
    [gauss(2, 2, 9, 8)], [gauss(3, 2, 2, 3)])

out = sys.argv[1] if len(sys.argv) > 1 else "engine/layers/testdata/torch_layers.json"
torchfix.write(cases, out)
print("wrote %d cases to %s" % (len(cases), out))

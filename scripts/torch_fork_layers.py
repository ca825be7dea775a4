#!/usr/bin/python3
"""Writes engine/layers/testdata/torch_fork_layers.json, the PyTorch float64
oracle for the Caffe forks' layers dsgd runs: ConvolutionDepthwise and
DepthwiseConvolution (a grouped F.conv2d), ReLU6, Axpy (SENet), ShuffleChannel
(ShuffleNet), Permute and Normalize (SSD), Interp (PSPNet: a bilinear
F.interpolate with align_corners=True of the cropped input) and Upsample
(SegNet: F.max_unpool2d by a max pooling's indices) and PSPNet's BN on its
stored statistics, each written from
the fork's semantics in plain tensor operations. Normalize's gradient is
autograd's, the derivative of SSD's forward (see layers.NormalizeConfig).
Same format as torch_layers.json; engine/layers' TestTorchForkFixtures builds
the layer by the case's name and compares forward and backward. Run with
/usr/bin/python3 (python3-torch); `make torch-layers` reruns it.
"""
import functools
import sys

import torch
import torch.nn.functional as F

import torchfix
from torchfix import D, f32, gauss

torch.manual_seed(31)
cases = []
run = functools.partial(torchfix.run, cases)


# Depthwise convolution: Caffe's grouped Convolution with group = channels.
xd = gauss(2, 4, 7, 6)
run("ConvolutionDepthwise",
    lambda b, p: [F.conv2d(b[0], p[0], p[1], stride=2, padding=1, groups=4)],
    [xd], [gauss(4, 1, 3, 3), gauss(4)])
run("DepthwiseConvolutionMultiplier",
    lambda b, p: [F.conv2d(b[0], p[0], None, stride=1, padding=(1, 0), dilation=2, groups=4)],
    [xd], [gauss(8, 1, 3, 2)])


def away(x, kinks, gap=0.05):
    """Moves x away from the non-differentiable points."""
    x = x.clone()
    for k in kinks:
        x[(x - k).abs() < gap] += 2 * gap
    return x


xr = away(gauss(2, 3, 4, 5, std=4), [0, 6])
run("ReLU6", lambda b, p: [b[0].clamp(0, 6)], [xr])
run("ReLU6Slope",
    lambda b, p: [torch.minimum(b[0].clamp(min=0) + 0.1 * b[0].clamp(max=0), torch.tensor(6.0, dtype=D))],
    [xr])

xa = gauss(2, 3, 4, 5)
run("Axpy", lambda b, p: [b[0] * b[1] + b[2]], [gauss(2, 3, 1, 1), xa, gauss(2, 3, 4, 5)])
run("Axpy2D", lambda b, p: [b[0].reshape(2, 3, 1, 1) * b[1] + b[2]], [gauss(2, 3), xa, gauss(2, 3, 4, 5)])


def shuffle(x, g):
    n, c = x.shape[0], x.shape[1]
    return x.reshape(n, g, c // g, *x.shape[2:]).transpose(1, 2).reshape(x.shape)


run("ShuffleChannel", lambda b, p: [shuffle(b[0], 3)], [gauss(2, 6, 3, 2)])
run("ShuffleChannel2D", lambda b, p: [shuffle(b[0], 2)], [gauss(3, 8)])

run("Permute", lambda b, p: [b[0].permute(0, 2, 3, 1)], [gauss(2, 3, 4, 5)])
run("PermutePartial", lambda b, p: [b[0].permute(1, 0, 2)], [gauss(2, 3, 4)])


def normalize(x, s, across, eps=1e-10):
    n, c = x.shape[0], x.shape[1]
    if across:
        norm = (x.reshape(n, -1).pow(2).sum(1) + eps).sqrt().reshape(n, *([1] * (x.dim() - 1)))
    else:
        norm = (x.pow(2).sum(1, keepdim=True) + eps).sqrt()
    sc = s.reshape(1, c, *([1] * (x.dim() - 2))) if s.dim() > 0 else s
    return x / norm * sc


xn = gauss(2, 3, 4, 5)
run("NormalizeSSD", lambda b, p: [normalize(b[0], p[0], False)], [xn], [f32(torch.rand(3, dtype=D) * 10 + 10)])
run("NormalizeAcrossShared", lambda b, p: [normalize(b[0], p[0], True)], [xn], [f32(torch.tensor(2.5, dtype=D))])
run("NormalizeAcrossChannels", lambda b, p: [normalize(b[0], p[0], True)], [xn], [gauss(3)])
run("NormalizeSharedPerPosition", lambda b, p: [normalize(b[0], p[0], False)], [gauss(2, 4, 3, 3)], [f32(torch.tensor(0.7, dtype=D))])


def interp(x, oh, ow, pad_beg=0, pad_end=0):
    h, w = x.shape[2], x.shape[3]
    x = x[:, :, -pad_beg:h + pad_end, -pad_beg:w + pad_end]
    return F.interpolate(x, size=(oh, ow), mode="bilinear", align_corners=True)


run("InterpZoom", lambda b, p: [interp(b[0], 7, 9)], [gauss(2, 3, 4, 5)])         # zoom_factor 2
run("InterpShrink", lambda b, p: [interp(b[0], 5, 4)], [gauss(1, 2, 9, 7)])       # shrink_factor 2
run("InterpSize", lambda b, p: [interp(b[0], 5, 11)], [gauss(2, 2, 4, 6)])        # height 5 width 11
run("InterpCropZoom", lambda b, p: [interp(b[0], 10, 13, -1, -1)], [gauss(1, 2, 6, 7)])  # pads -1, zoom 3
run("InterpShrinkZoom", lambda b, p: [interp(b[0], 13, 10)], [gauss(1, 1, 9, 8)])  # shrink 2 then zoom 3
run("InterpDown", lambda b, p: [interp(b[0], 3, 1)], [gauss(1, 2, 8, 5)])         # height 3 width 1


# Upsample (SegNet): max-unpooling by the argmax mask of a MAX pooling,
# the mask a bottom of its own (indices within each plane, as floats).
def pooled(shape, ceil):
    x = gauss(*shape)
    y, idx = F.max_pool2d(x, 2, 2, ceil_mode=ceil, return_indices=True)
    return y, idx.to(D)


yu, mu = pooled((2, 3, 6, 8), False)
run("Upsample", lambda b, p: [F.max_unpool2d(b[0], b[1].long(), 2, 2, output_size=(6, 8))], [yu, mu], grad_bottoms=[0])
yo, mo = pooled((1, 2, 5, 7), True)
run("UpsamplePadOut", lambda b, p: [F.max_unpool2d(b[0], b[1].long(), 2, 2, output_size=(5, 7))], [yo, mo], grad_bottoms=[0])
run("UpsampleSize", lambda b, p: [F.max_unpool2d(b[0], b[1].long(), 2, 2, output_size=(5, 7))], [yo, mo], grad_bottoms=[0])


# PSPNet's BN with its stored statistics: frozen, the blobs take no
# gradient (the fork computes none); in the TEST phase, not frozen, the
# slope and bias do.
def bn(x, slope, bias, mean, var, eps=1e-5):
    return slope * (x - mean) / (var + eps).sqrt() + bias


def bn_params(c):
    return [gauss(1, c, 1, 1), gauss(1, c, 1, 1), gauss(1, c, 1, 1), f32(torch.rand(1, c, 1, 1, dtype=D) + 0.5)]


run("BNPSPNetFrozen", lambda b, p: [bn(b[0], *p)], [gauss(2, 3, 4, 5)], bn_params(3), grad_params=[])
run("BNPSPNetTest", lambda b, p: [bn(b[0], *p, eps=1e-3)], [gauss(2, 4, 3, 3)], bn_params(4), grad_params=[0, 1])

out = sys.argv[1] if len(sys.argv) > 1 else "engine/layers/testdata/torch_fork_layers.json"
torchfix.write(cases, out)
print("wrote %d cases to %s" % (len(cases), out))

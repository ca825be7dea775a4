#!/usr/bin/env python3
"""The peer of scripts/bench-frozen.sh: BVLC's CaffeNet fine-tuned with
conv3-fc7 frozen (requires_grad False, as lr_mult 0 in Caffe) and conv1,
conv2 and fc8 learnt, one
forward-backward pass per iteration on random data; prints the median ms.
Usage: torch_frozen.py --batch N --threads T --iters I"""
import argparse
import statistics
import time

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--batch", type=int, default=32)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--iters", type=int, default=3)
a = p.parse_args()
torch.set_num_threads(a.threads)
lrn = lambda: nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=1.0)
front = nn.Sequential(nn.Conv2d(3, 96, 11, stride=4), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True), lrn(),
                      nn.Conv2d(96, 256, 5, padding=2, groups=2), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True), lrn())
frozen = nn.Sequential(nn.Conv2d(256, 384, 3, padding=1), nn.ReLU(),
                       nn.Conv2d(384, 384, 3, padding=1, groups=2), nn.ReLU(),
                       nn.Conv2d(384, 256, 3, padding=1, groups=2), nn.ReLU(),
                       nn.MaxPool2d(3, 2, ceil_mode=True), nn.Flatten(),
                       nn.Linear(256 * 6 * 6, 4096), nn.ReLU(), nn.Dropout(0.5),
                       nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(0.5))
for q in frozen.parameters():
    q.requires_grad_(False)
net = nn.Sequential(front, frozen, nn.Linear(4096, 1000))
x = torch.randn(a.batch, 3, 227, 227)
y = torch.randint(0, 1000, (a.batch,))
lossf = nn.CrossEntropyLoss()
times = []
for i in range(1 + a.iters):
    t0 = time.perf_counter()
    net.zero_grad(set_to_none=False)
    lossf(net(x), y).backward()
    if i > 0:
        times.append((time.perf_counter() - t0) * 1e3)
print(f"frozen caffenet batch {a.batch} threads {a.threads}: fwd+bwd median {statistics.median(times):.2f} ms")

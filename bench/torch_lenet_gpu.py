#!/usr/bin/env python3
"""LeNet's forward+backward per iteration in PyTorch on a GPU: the peer of
`dsgd bench --gpu` for LeNet (the shared peers time LeNet by training it on
the CPU; torch_nets.py has no LeNet). Caffe's examples/mnist/lenet_train_test.prototxt
layer for layer: conv 20 5x5, max pool 2/2, conv 50 5x5, max pool 2/2, fc 500,
ReLU, fc 10, softmax loss; random 1x28x28 data. Timing as torch_nets.py: cuDNN
autotuning on, TF32 off unless --tf32, each iteration between CUDA
synchronisations. Prints the line torch_nets.py prints.
Usage: torch_lenet_gpu.py --batch B --iters N [--warmup W] [--tf32]
"""
import argparse, statistics, time

ap = argparse.ArgumentParser()
ap.add_argument("--model", default="lenet")
ap.add_argument("--batch", type=int, default=64)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--iters", type=int, default=200)
ap.add_argument("--warmup", type=int, default=20)
ap.add_argument("--device", default="cuda")
ap.add_argument("--tf32", action="store_true")
a = ap.parse_args()
import torch
import torch.nn as nn

torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = a.tf32
torch.backends.cuda.matmul.allow_tf32 = a.tf32
dev = torch.device(a.device)
net = nn.Sequential(nn.Conv2d(1, 20, 5), nn.MaxPool2d(2, 2), nn.Conv2d(20, 50, 5), nn.MaxPool2d(2, 2),
                    nn.Flatten(), nn.Linear(800, 500), nn.ReLU(), nn.Linear(500, 10)).to(dev)
x = torch.randn(a.batch, 1, 28, 28, device=dev)
y = torch.randint(0, 10, (a.batch,), device=dev)
lossf = nn.CrossEntropyLoss()
times = []
for i in range(a.warmup + a.iters):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    net.zero_grad(set_to_none=False)
    lossf(net(x), y).backward()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    if i >= a.warmup:
        times.append((t1 - t0) * 1e3)
print(f"lenet batch {a.batch} threads {a.threads}: fwd+bwd median {statistics.median(times):.2f} ms "
      f"(min {min(times):.2f}, max {max(times):.2f}) on {torch.cuda.get_device_name(0)} ({'tf32' if a.tf32 else 'fp32'})")

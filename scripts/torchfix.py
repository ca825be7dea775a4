"""What the PyTorch fixture scripts (scripts/torch_*.py) share: float64
tensors rounded to float32 values (so Go reads exactly the inputs PyTorch
used), random inputs from torch's generator (each script seeds it), and
run(), which computes a layer's tops and, for random top diffs, the
gradients of its bottoms and params, and appends them as one case of the
JSON format engine/layers' loadTorchFixture reads.
"""
import json
import sys

import torch

D = torch.float64


def f32(t):
    # Round to float32 so Go gets exactly the same inputs.
    return t.to(torch.float32).to(D)


def gauss(*shape, std=1.0):
    return f32(torch.randn(tuple(shape), dtype=D) * std)


def unif(lo, hi, *shape):
    return f32(torch.rand(tuple(shape), dtype=D) * (hi - lo) + lo)


def flat(t):
    return [float(v) for v in t.detach().reshape(-1)]


def run(cases, name, fn, bottoms, params=(), grad_bottoms=None, grad_params=None, loss_weight=None):
    """Appends to cases the case name: fn(bottoms, params) -> list of tops.
    grad_bottoms and grad_params: the indices that get a gradient (default
    all). The objective is sum(top * diff) over the tops, with random diffs,
    or loss_weight as the one top's diff."""
    if grad_bottoms is None:
        grad_bottoms = list(range(len(bottoms)))
    if grad_params is None:
        grad_params = list(range(len(params)))
    bs = [b.clone().requires_grad_(i in grad_bottoms) for i, b in enumerate(bottoms)]
    ps = [p.clone().requires_grad_(i in grad_params) for i, p in enumerate(params)]
    tops = fn(bs, ps)
    if loss_weight is not None:
        top_diffs = [torch.tensor(loss_weight, dtype=D)]
    else:
        top_diffs = [gauss(*t.shape) for t in tops]
    obj = sum((t * d).sum() for t, d in zip(tops, top_diffs) if t.requires_grad)
    if isinstance(obj, torch.Tensor) and obj.requires_grad:
        obj.backward()

    def grad(t):
        return flat(t.grad) if t.grad is not None else [0.0] * t.numel()

    cases.append({
        "name": name,
        "bottoms": [{"shape": list(b.shape), "data": flat(b)} for b in bottoms],
        "params": [flat(p) for p in params],
        "tops": [{"shape": list(t.shape), "data": flat(t)} for t in tops],
        "top_diffs": [flat(d) for d in top_diffs],
        "bottom_diffs": [grad(b) if i in grad_bottoms else None for i, b in enumerate(bs)],
        "param_diffs": [grad(p) for p in ps],
    })


def write(cases, default):
    """Writes the cases to the path in argv[1], else to default."""
    out = sys.argv[1] if len(sys.argv) > 1 else default
    with open(out, "w") as f:
        json.dump({"torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))

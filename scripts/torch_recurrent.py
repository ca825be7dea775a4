#!/usr/bin/python3
"""Writes engine/layers/testdata/torch_recurrent.json: Caffe's LSTM and RNN
layers computed by PyTorch's own cells (torch.nn.LSTMCell, RNNCell) in
float64, as an oracle independent of the Go code: inputs and params
(float32 values), the tops, and the gradients of bottoms and params given
random top diffs. Same format as torch_layers.json; engine/layers'
TestTorchRecurrent builds the layer by the case's name and compares.

Caffe's conventions, mapped onto torch's:
  - x is T x N x ..., flattened from axis 2; cont (T x N) multiplies the
    previous h and c, so a 0 starts a new sequence (binary cont only:
    Caffe's backward through the forget gate is exact for 0 and 1).
  - Caffe's 4H gate rows are i, f, o, g; torch's are i, f, g, o.
  - A static input x_static (N x ...) enters every timestep through its
    own weight: here it is appended to x_t, its weight to W_x.
  - With expose_hidden, h0 (and c0) are bottoms, hT (and cT) tops.
Run with /usr/bin/python3 (python3-torch); `make torch-layers` reruns it.
"""
import json
import sys

import torch
from torch.nn.utils.stateless import functional_call

torch.manual_seed(22)
D = torch.float64
cases = []


def f32(t):
    # Round to float32 so Go gets exactly the same inputs.
    return t.to(torch.float32).to(D)


def gauss(*shape, std=1.0):
    return f32(torch.randn(tuple(shape), dtype=D) * std)


def caffe_to_torch_gates(w, H):
    # Rows i, f, o, g (Caffe) -> i, f, g, o (torch).
    return torch.cat([w[0:H], w[H:2 * H], w[3 * H:4 * H], w[2 * H:3 * H]])


def lstm(T, N, H, static, expose):
    def fn(b, p):
        x, c_in = b[0], b[1]
        wx, bx = p[0], p[1]
        ws = p[2] if static else None
        wh = p[-1]
        cell = torch.nn.LSTMCell(1, H).to(D)
        w_in = wx if ws is None else torch.cat([wx, ws], dim=1)
        weights = {
            "weight_ih": caffe_to_torch_gates(w_in, H),
            "weight_hh": caffe_to_torch_gates(wh, H),
            "bias_ih": caffe_to_torch_gates(bx, H),
            "bias_hh": torch.zeros(4 * H, dtype=D),
        }
        k = 3 if static else 2
        h = b[k].reshape(N, H) if expose else torch.zeros(N, H, dtype=D)
        c = b[k + 1].reshape(N, H) if expose else torch.zeros(N, H, dtype=D)
        outs = []
        for t in range(T):
            inp = x[t].reshape(N, -1)
            if static:
                inp = torch.cat([inp, b[2].reshape(N, -1)], dim=1)
            m = c_in[t].reshape(N, 1)
            h, c = functional_call(cell, weights, (inp, (m * h, m * c)))
            outs.append(h)
        tops = [torch.stack(outs)]
        if expose:
            tops += [h.reshape(1, N, H), c.reshape(1, N, H)]
        return tops
    return fn


def rnn(T, N, H, static, expose):
    def fn(b, p):
        x, c_in = b[0], b[1]
        wx, bx = p[0], p[1]
        ws = p[2] if static else None
        wh, wo, bo = p[-3], p[-2], p[-1]
        cell = torch.nn.RNNCell(1, H, nonlinearity="tanh").to(D)
        weights = {
            "weight_ih": wx if ws is None else torch.cat([wx, ws], dim=1),
            "weight_hh": wh,
            "bias_ih": bx,
            "bias_hh": torch.zeros(H, dtype=D),
        }
        k = 3 if static else 2
        h = b[k].reshape(N, H) if expose else torch.zeros(N, H, dtype=D)
        outs = []
        for t in range(T):
            inp = x[t].reshape(N, -1)
            if static:
                inp = torch.cat([inp, b[2].reshape(N, -1)], dim=1)
            h = functional_call(cell, weights, (inp, c_in[t].reshape(N, 1) * h))
            outs.append(torch.tanh(torch.nn.functional.linear(h, wo, bo)))
        tops = [torch.stack(outs)]
        if expose:
            tops.append(h.reshape(1, N, H))
        return tops
    return fn


def run(name, fn, bottoms, params, grad_bottoms):
    bs = [b.clone().requires_grad_(i in grad_bottoms) for i, b in enumerate(bottoms)]
    ps = [p.clone().requires_grad_(True) for p in params]
    tops = fn(bs, ps)
    top_diffs = [gauss(*t.shape) for t in tops]
    sum((t * d).sum() for t, d in zip(tops, top_diffs)).backward()

    def flat(t):
        return [float(v) for v in t.detach().reshape(-1)]

    cases.append({
        "name": name,
        "bottoms": [{"shape": list(b.shape), "data": flat(b)} for b in bottoms],
        "params": [flat(p) for p in params],
        "tops": [{"shape": list(t.shape), "data": flat(t)} for t in tops],
        "top_diffs": [flat(d) for d in top_diffs],
        "bottom_diffs": [flat(b.grad) if i in grad_bottoms else None for i, b in enumerate(bs)],
        "param_diffs": [flat(p.grad) for p in ps],
    })


T, N, H = 4, 3, 5
x = gauss(T, N, 2, 3)  # D = 6
xs = gauss(N, 2, 2)  # S = 4
# Sequences start at t = 0 and again mid-batch (stream 1 at t = 2, stream 2
# at t = 1).
cont = torch.tensor([[0, 0, 0], [1, 1, 0], [1, 0, 1], [1, 1, 1]], dtype=D)
# With an exposed initial state, streams 0 and 2 continue from it.
cont_exposed = torch.tensor([[1, 0, 1], [1, 1, 0], [1, 0, 1], [1, 1, 1]], dtype=D)
h0, c0 = gauss(1, N, H), gauss(1, N, H)

G = 4 * H
run("LSTM", lstm(T, N, H, False, False), [x, cont],
    [gauss(G, 6, std=0.5), gauss(G, std=0.5), gauss(G, H, std=0.5)], [0])
run("LSTMStaticExposed", lstm(T, N, H, True, True), [x, cont_exposed, xs, h0, c0],
    [gauss(G, 6, std=0.5), gauss(G, std=0.5), gauss(G, 4, std=0.5), gauss(G, H, std=0.5)], [0, 2, 3, 4])
run("RNN", rnn(T, N, H, False, False), [x, cont],
    [gauss(H, 6, std=0.5), gauss(H, std=0.5), gauss(H, H, std=0.5), gauss(H, H, std=0.5), gauss(H, std=0.5)], [0])
run("RNNStaticExposed", rnn(T, N, H, True, True), [x, cont_exposed, xs, h0],
    [gauss(H, 6, std=0.5), gauss(H, std=0.5), gauss(H, 4, std=0.5), gauss(H, H, std=0.5),
     gauss(H, H, std=0.5), gauss(H, std=0.5)], [0, 2, 3])

out = sys.argv[1] if len(sys.argv) > 1 else "engine/layers/testdata/torch_recurrent.json"
with open(out, "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
print("wrote %d cases to %s" % (len(cases), out))

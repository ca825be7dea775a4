#!/usr/bin/env python3
"""Writes bench/resnet18.prototxt: ResNet-18 (He et al. 2016, basic blocks)
in Caffe's layers as the ResNet model-zoo files write them -- Convolution
without bias, BatchNorm then Scale (bias_term) in place, ReLU in place,
Eltwise SUM shortcuts, 1x1/2 projections where the shape changes -- on
224x224 crops of synthetic 256x256 images, for `dsgd time` (BatchNorm's
per-layer cost on real ResNet shapes).

Usage: scripts/resnet_prototxt.py > bench/resnet18.prototxt
"""

out = []
w = out.append


def conv(name, bottom, n, k, s, p):
    w(f'layer {{ name: "{name}" type: "Convolution" bottom: "{bottom}" top: "{name}"\n'
      f'  convolution_param {{ num_output: {n} kernel_size: {k} stride: {s} pad: {p} bias_term: false '
      f'weight_filler {{ type: "msra" }} }} }}')
    w(f'layer {{ name: "bn_{name}" type: "BatchNorm" bottom: "{name}" top: "{name}" '
      f'batch_norm_param {{ moving_average_fraction: 0.999 eps: 1e-5 }} }}')
    w(f'layer {{ name: "scale_{name}" type: "Scale" bottom: "{name}" top: "{name}" scale_param {{ bias_term: true }} }}')
    return name


def relu(name):
    w(f'layer {{ name: "relu_{name}" type: "ReLU" bottom: "{name}" top: "{name}" }}')


w('# ResNet-18 in the layers of the ResNet model-zoo prototxts (written by')
w('# scripts/resnet_prototxt.py; see there).')
w('name: "ResNet-18"')
w('layer { name: "data" type: "Data" top: "data" top: "label" include { phase: TRAIN }\n'
  '  transform_param { mirror: true crop_size: 224 mean_value: 104 mean_value: 117 mean_value: 123 }\n'
  '  data_param { source: "synthetic:N=32,C=3,H=256,W=256,classes=1000" batch_size: 32 } }')
x = conv("conv1", "data", 64, 7, 2, 3)
relu(x)
w('layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1" pooling_param { pool: MAX kernel_size: 3 stride: 2 } }')
x, cin = "pool1", 64
for stage, c in enumerate([64, 128, 256, 512], start=2):
    for b in "ab":
        s = 2 if (b == "a" and stage > 2) else 1
        pre = f"res{stage}{b}"
        y = conv(pre + "_branch2a", x, c, 3, s, 1)
        relu(y)
        y = conv(pre + "_branch2b", y, c, 3, 1, 1)
        short = x
        if s != 1 or cin != c:
            short = conv(pre + "_branch1", x, c, 1, s, 0)
        w(f'layer {{ name: "{pre}" type: "Eltwise" bottom: "{short}" bottom: "{y}" top: "{pre}" eltwise_param {{ operation: SUM }} }}')
        relu(pre)
        x, cin = pre, c
w(f'layer {{ name: "pool5" type: "Pooling" bottom: "{x}" top: "pool5" pooling_param {{ pool: AVE kernel_size: 7 stride: 1 }} }}')
w('layer { name: "fc1000" type: "InnerProduct" bottom: "pool5" top: "fc1000" '
  'inner_product_param { num_output: 1000 weight_filler { type: "xavier" } } }')
w('layer { name: "loss" type: "SoftmaxWithLoss" bottom: "fc1000" bottom: "label" top: "loss" }')
print("\n".join(out))

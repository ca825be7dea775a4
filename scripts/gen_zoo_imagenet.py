#!/usr/bin/env python3
"""Writes caffe/zoo/models/caffenet.prototxt and caffe/zoo/models/googlenet.prototxt.

They mirror BVLC Caffe's models/bvlc_reference_caffenet/train_val.prototxt
and models/bvlc_googlenet/train_val.prototxt layer for layer: same layer
names, order, blobs, parameters, fillers and lr/decay multipliers. Only the
data layers differ: BVLC reads ImageNet LMDBs of 256x256 images; here a
synthetic data set of the same image size feeds them (crop, mirror and
mean as BVLC), so the nets build and time anywhere. Run from the
repository root: /usr/bin/python3 scripts/gen_zoo_imagenet.py
"""

SYNTH = "synthetic:N=250,C=3,H=256,W=256,classes=256"


def data_layers(crop, mean):
    out = []
    means = "".join("    mean_value: %s\n" % m for m in mean)
    for phase, mirror, batch in (("TRAIN", "true", None), ("TEST", "false", 50)):
        out.append(f"""layer {{
  name: "data"
  type: "Data"
  top: "data"
  top: "label"
  include {{
    phase: {phase}
  }}
  transform_param {{
    mirror: {mirror}
    crop_size: {crop}
{means}  }}
  data_param {{
    source: "{SYNTH}"
    batch_size: {batch or "BATCH"}
  }}
}}
""")
    return "".join(out)


def params():
    return """  param {
    lr_mult: 1
    decay_mult: 1
  }
  param {
    lr_mult: 2
    decay_mult: 0
  }
"""


def filler(kind, std=None):
    if kind == "xavier":
        return '{\n      type: "xavier"\n    }'
    if kind == "gaussian":
        return f'{{\n      type: "gaussian"\n      std: {std}\n    }}'
    raise ValueError(kind)


def conv(name, bottom, num, k, wf, bias, pad=0, stride=1, group=1, top=None):
    top = top or name
    body = f"    num_output: {num}\n"
    if pad:
        body += f"    pad: {pad}\n"
    body += f"    kernel_size: {k}\n"
    if stride != 1:
        body += f"    stride: {stride}\n"
    if group != 1:
        body += f"    group: {group}\n"
    body += f"    weight_filler {wf}\n"
    body += f'    bias_filler {{\n      type: "constant"\n      value: {bias}\n    }}\n'
    return f"""layer {{
  name: "{name}"
  type: "Convolution"
  bottom: "{bottom}"
  top: "{top}"
{params()}  convolution_param {{
{body}  }}
}}
"""


def ip(name, bottom, num, wf, bias):
    return f"""layer {{
  name: "{name}"
  type: "InnerProduct"
  bottom: "{bottom}"
  top: "{name}"
{params()}  inner_product_param {{
    num_output: {num}
    weight_filler {wf}
    bias_filler {{
      type: "constant"
      value: {bias}
    }}
  }}
}}
"""


def relu(name, blob):
    return f"""layer {{
  name: "{name}"
  type: "ReLU"
  bottom: "{blob}"
  top: "{blob}"
}}
"""


def pool(name, bottom, method, k, stride, pad=0):
    p = f"    pad: {pad}\n" if pad else ""
    return f"""layer {{
  name: "{name}"
  type: "Pooling"
  bottom: "{bottom}"
  top: "{name}"
  pooling_param {{
    pool: {method}
    kernel_size: {k}
    stride: {stride}
{p}  }}
}}
"""


def lrn(name, bottom):
    return f"""layer {{
  name: "{name}"
  type: "LRN"
  bottom: "{bottom}"
  top: "{name}"
  lrn_param {{
    local_size: 5
    alpha: 0.0001
    beta: 0.75
  }}
}}
"""


def dropout(name, blob, ratio):
    return f"""layer {{
  name: "{name}"
  type: "Dropout"
  bottom: "{blob}"
  top: "{blob}"
  dropout_param {{
    dropout_ratio: {ratio}
  }}
}}
"""


def accuracy(name, bottom, top_k=1):
    k = f"  accuracy_param {{\n    top_k: {top_k}\n  }}\n" if top_k != 1 else ""
    return f"""layer {{
  name: "{name}"
  type: "Accuracy"
  bottom: "{bottom}"
  bottom: "label"
  top: "{name}"
  include {{
    phase: TEST
  }}
{k}}}
"""


def loss(name, bottom, top, weight=None):
    w = f"  loss_weight: {weight}\n" if weight is not None else ""
    return f"""layer {{
  name: "{name}"
  type: "SoftmaxWithLoss"
  bottom: "{bottom}"
  bottom: "label"
  top: "{top}"
{w}}}
"""


def caffenet():
    g = lambda s: filler("gaussian", s)
    s = data_layers(227, (104, 117, 123)).replace("BATCH", "256")
    s += conv("conv1", "data", 96, 11, g(0.01), 0, stride=4) + relu("relu1", "conv1")
    s += pool("pool1", "conv1", "MAX", 3, 2) + lrn("norm1", "pool1")
    s += conv("conv2", "norm1", 256, 5, g(0.01), 0.4, pad=2, group=2) + relu("relu2", "conv2")
    s += pool("pool2", "conv2", "MAX", 3, 2) + lrn("norm2", "pool2")
    s += conv("conv3", "norm2", 384, 3, g(0.01), 0, pad=1) + relu("relu3", "conv3")
    s += conv("conv4", "conv3", 384, 3, g(0.01), 1, pad=1, group=2) + relu("relu4", "conv4")
    s += conv("conv5", "conv4", 256, 3, g(0.01), 0.4, pad=1, group=2) + relu("relu5", "conv5")
    s += pool("pool5", "conv5", "MAX", 3, 2)
    s += ip("fc6", "pool5", 4096, g(0.005), 0.4) + relu("relu6", "fc6") + dropout("drop6", "fc6", 0.5)
    s += ip("fc7", "fc6", 4096, g(0.005), 0.4) + relu("relu7", "fc7") + dropout("drop7", "fc7", 0.5)
    s += ip("fc8", "fc7", 1000, g(0.01), 0.1)
    s += accuracy("accuracy", "fc8") + loss("loss", "fc8", "loss")
    head = """# BVLC's reference CaffeNet
# (models/bvlc_reference_caffenet/train_val.prototxt), layer for layer:
# AlexNet with pooling before normalisation, five convolutions (two-group
# conv2, conv4, conv5), three fully connected layers with dropout, a 1000-way
# classifier; 60,965,224 parameters. BVLC reads ImageNet LMDBs of 256x256
# images with a mean image; here 250 synthetic 256x256 colour images (256
# classes) feed it, in BVLC's batches of 256, cropped to 227 and mirrored as
# BVLC does, with BVLC's alternative per-channel means, so it runs (and `dsgd
# time` and `dsgd bench` time it) without ImageNet. Pass --data to train on
# real data. Generated by scripts/gen_zoo_imagenet.py.
name: "CaffeNet"
"""
    return head + s


INCEPTIONS = [
    # name, bottom, 1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool proj
    ("3a", "pool2/3x3_s2", 64, 96, 128, 16, 32, 32),
    ("3b", "inception_3a/output", 128, 128, 192, 32, 96, 64),
    ("4a", "pool3/3x3_s2", 192, 96, 208, 16, 48, 64),
    ("4b", "inception_4a/output", 160, 112, 224, 24, 64, 64),
    ("4c", "inception_4b/output", 128, 128, 256, 24, 64, 64),
    ("4d", "inception_4c/output", 112, 144, 288, 32, 64, 64),
    ("4e", "inception_4d/output", 256, 160, 320, 32, 128, 128),
    ("5a", "pool4/3x3_s2", 256, 160, 320, 32, 128, 128),
    ("5b", "inception_5a/output", 384, 192, 384, 48, 128, 128),
]


def inception(name, bottom, c1, r3, c3, r5, c5, cp):
    x = filler("xavier")
    p = f"inception_{name}/"
    s = conv(p + "1x1", bottom, c1, 1, x, 0.2) + relu(p + "relu_1x1", p + "1x1")
    s += conv(p + "3x3_reduce", bottom, r3, 1, x, 0.2) + relu(p + "relu_3x3_reduce", p + "3x3_reduce")
    s += conv(p + "3x3", p + "3x3_reduce", c3, 3, x, 0.2, pad=1) + relu(p + "relu_3x3", p + "3x3")
    s += conv(p + "5x5_reduce", bottom, r5, 1, x, 0.2) + relu(p + "relu_5x5_reduce", p + "5x5_reduce")
    s += conv(p + "5x5", p + "5x5_reduce", c5, 5, x, 0.2, pad=2) + relu(p + "relu_5x5", p + "5x5")
    s += pool(p + "pool", bottom, "MAX", 3, 1, pad=1)
    s += conv(p + "pool_proj", p + "pool", cp, 1, x, 0.2) + relu(p + "relu_pool_proj", p + "pool_proj")
    s += f"""layer {{
  name: "{p}output"
  type: "Concat"
  bottom: "{p}1x1"
  bottom: "{p}3x3"
  bottom: "{p}5x5"
  bottom: "{p}pool_proj"
  top: "{p}output"
}}
"""
    return s


def aux(n, bottom):
    x = filler("xavier")
    p = f"loss{n}/"
    s = pool(p + "ave_pool", bottom, "AVE", 5, 3)
    s += conv(p + "conv", p + "ave_pool", 128, 1, x, 0.2) + relu(p + "relu_conv", p + "conv")
    s += ip(p + "fc", p + "conv", 1024, x, 0.2) + relu(p + "relu_fc", p + "fc") + dropout(p + "drop_fc", p + "fc", 0.7)
    s += ip(p + "classifier", p + "fc", 1000, x, 0)
    s += loss(p + "loss", p + "classifier", f"{p}loss{n}", 0.3)
    s += accuracy(p + "top-1", p + "classifier") + accuracy(p + "top-5", p + "classifier", 5)
    return s


def googlenet():
    x = filler("xavier")
    s = data_layers(224, (104, 117, 123)).replace("BATCH", "32")
    s += conv("conv1/7x7_s2", "data", 64, 7, x, 0.2, pad=3, stride=2) + relu("conv1/relu_7x7", "conv1/7x7_s2")
    s += pool("pool1/3x3_s2", "conv1/7x7_s2", "MAX", 3, 2) + lrn("pool1/norm1", "pool1/3x3_s2")
    s += conv("conv2/3x3_reduce", "pool1/norm1", 64, 1, x, 0.2) + relu("conv2/relu_3x3_reduce", "conv2/3x3_reduce")
    s += conv("conv2/3x3", "conv2/3x3_reduce", 192, 3, x, 0.2, pad=1) + relu("conv2/relu_3x3", "conv2/3x3")
    s += lrn("conv2/norm2", "conv2/3x3") + pool("pool2/3x3_s2", "conv2/norm2", "MAX", 3, 2)
    for inc in INCEPTIONS:
        s += inception(*inc)
        if inc[0] == "3b":
            s += pool("pool3/3x3_s2", "inception_3b/output", "MAX", 3, 2)
        if inc[0] == "4a":
            s += aux(1, "inception_4a/output")
        if inc[0] == "4d":
            s += aux(2, "inception_4d/output")
        if inc[0] == "4e":
            s += pool("pool4/3x3_s2", "inception_4e/output", "MAX", 3, 2)
    s += pool("pool5/7x7_s1", "inception_5b/output", "AVE", 7, 1)
    s += dropout("pool5/drop_7x7_s1", "pool5/7x7_s1", 0.4)
    s += ip("loss3/classifier", "pool5/7x7_s1", 1000, x, 0)
    s += loss("loss3/loss3", "loss3/classifier", "loss3/loss3", 1)
    s += accuracy("loss3/top-1", "loss3/classifier") + accuracy("loss3/top-5", "loss3/classifier", 5)
    head = """# BVLC's GoogLeNet (models/bvlc_googlenet/train_val.prototxt), layer for
# layer: a 7x7 stem with LRN, nine inception modules (1x1, 3x3, 5x5 and pooled
# branches concatenated), global average pooling, dropout and a 1000-way
# classifier, plus two auxiliary classifiers (after inception_4a and 4d) whose
# losses weigh 0.3; 13,378,280 parameters. BVLC reads ImageNet LMDBs of
# 256x256 images; here 250 synthetic 256x256 colour images (256 classes) feed
# it, in BVLC's batches of 32, cropped to 224 and mirrored with BVLC's means,
# so it runs (and `dsgd time` and `dsgd bench` time it) without ImageNet. Pass
# --data to train on real data. Generated by scripts/gen_zoo_imagenet.py.
name: "GoogleNet"
"""
    return head + s


if __name__ == "__main__":
    for name, text in (("caffenet", caffenet()), ("googlenet", googlenet())):
        with open(f"caffe/zoo/models/{name}.prototxt", "w") as f:
            f.write(text)

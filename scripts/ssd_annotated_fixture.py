#!/usr/bin/python3
"""Makes data/testdata/annotated: the oracle for SSD's AnnotatedData layer
(weiliu89/caffe, branch ssd: src/caffe/layers/annotated_data_layer.cpp,
data_transformer.cpp, util/im_transforms.cpp, util/bbox_util.cpp), computed
here independently: OpenCV (cv2.resize, cv2.cvtColor) for the pixels, numpy
float32 for the fork's box arithmetic.

    /usr/bin/python3 scripts/ssd_annotated_fixture.py data/testdata/annotated

It writes
  ops.json     resize (LINEAR, NEAREST, CUBIC, LANCZOS4, AREA), BGR<->HSV with the fork's saturation
               and hue adjustments, convertTo, crop and expand by a given box,
               the box helpers (jaccard, coverage, project, emit constraint,
               WARP's box update);
  anno_lmdb/   an LMDB of AnnotatedDatum records (the fork's messages, from
               caffe/caffepb/caffe.proto through protoc's Python output), PNG
               encoded as convert_annoset --encoded writes them;
  batches.json what the layer makes of it with a deterministic transform
               (resize WARP, mean_value, scale; no random step): the data
               and the 1x1xGx8 label rows of two batches.

Needs python3-opencv, numpy, lmdb, protobuf and protoc; CI does not: the
outputs are committed. data/annotated_test.go reads them.
"""
import importlib.util, json, os, shutil, subprocess, sys, tempfile
import cv2
import lmdb
import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.RandomState(7)
f32 = np.float32


def image(h, w):
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([(x * 9 + y * 3) % 256, (y * 11 + 5 * x) % 256, (x * y * 3) % 256], axis=2).astype(np.int32)
    img = (img + rng.randint(0, 60, size=img.shape)) % 256
    return img.astype(np.uint8)  # H x W x BGR, as cv2 keeps it


def planar(img):
    return [int(v) for v in img.transpose(2, 0, 1).reshape(-1)]


ops = {"resize": [], "hsv": [], "hsv2bgr": [], "convert": [], "crop": [], "expand": [], "boxes": [], "warp": []}

# Resize: down and up, both axes, odd factors, colour and gray.
modes = {"LINEAR": cv2.INTER_LINEAR, "NEAREST": cv2.INTER_NEAREST, "CUBIC": cv2.INTER_CUBIC, "LANCZOS4": cv2.INTER_LANCZOS4, "AREA": cv2.INTER_AREA}
for (h, w, oh, ow) in [(13, 17, 7, 5), (9, 11, 20, 23), (16, 16, 8, 8), (10, 30, 10, 12), (31, 29, 30, 7), (5, 7, 13, 29), (47, 61, 30, 30), (12, 9, 37, 41), (3, 2, 9, 7), (40, 33, 300 // 10, 31), (2, 5, 1, 1), (34, 18, 17, 9), (27, 30, 9, 10), (50, 37, 30, 30), (20, 20, 30, 14)]:
    img = image(h, w)
    for name, mode in modes.items():
        r = cv2.resize(img, (ow, oh), interpolation=mode)
        ops["resize"].append({"h": h, "w": w, "c": 3, "pix": planar(img), "oh": oh, "ow": ow, "mode": name, "out": planar(r)})
        g = img[:, :, 1].copy()
        rg = cv2.resize(g, (ow, oh), interpolation=mode)
        ops["resize"].append({"h": h, "w": w, "c": 1, "pix": [int(v) for v in g.reshape(-1)], "oh": oh, "ow": ow, "mode": name, "out": [int(v) for v in rg.reshape(-1)]})

# CUBIC on small random images, three of the draws of RandomState(11) that
# tell OpenCV's vertical passes apart (its float32 vector part of each row,
# 8 elements wide, and its fixed-point rest): draw 12 (4x10 BGR to 26x14),
# 27 (18x22 gray to 29x22), 105 (22x26 BGR to 5x6).
crng = np.random.RandomState(11)
for t in range(106):
    h, w = crng.randint(2, 30, 2)
    oh, ow = crng.randint(2, 30, 2)
    c = crng.choice([1, 3])
    img = crng.randint(0, 256, (h, w, c)).astype(np.uint8)
    if t not in (12, 27, 105):
        continue
    r = cv2.resize(img, (int(ow), int(oh)), interpolation=cv2.INTER_CUBIC).reshape(oh, ow, c)
    ops["resize"].append({"h": int(h), "w": int(w), "c": int(c), "pix": planar(img), "oh": int(oh), "ow": int(ow), "mode": "CUBIC", "out": planar(r)})

# HSV: the fork's AdjustSaturation and AdjustHue (convertTo on one channel
# between cvtColor BGR2HSV and HSV2BGR).
for (h, w, sat, hue) in [(6, 7, 1.37, 11.3), (5, 9, 0.62, -17.8), (4, 4, 1.5, 18.0), (20, 23, 0.8, 7.5), (32, 40, 1.21, -12.25), (17, 64, 1.49, 17.9)]:
    img = image(h, w)
    hsv = cv2.cvtColor(img, cv2.COLOR_BGR2HSV)
    s = hsv.copy()
    s[:, :, 1] = np.clip(np.rint(s[:, :, 1].astype(f32) * f32(sat)), 0, 255).astype(np.uint8)
    s_out = cv2.cvtColor(s, cv2.COLOR_HSV2BGR)
    u = hsv.copy()
    u[:, :, 0] = np.clip(np.rint(u[:, :, 0].astype(f32) + f32(hue)), 0, 255).astype(np.uint8)
    u_out = cv2.cvtColor(u, cv2.COLOR_HSV2BGR)
    ops["hsv"].append({"h": h, "w": w, "pix": planar(img), "hsv": planar(hsv), "sat": sat, "sat_out": planar(s_out), "hue": hue, "hue_out": planar(u_out)})

# HSV2BGR of arbitrary triples (hue up to 255, as a hue shift saturates
# it), rows narrower and wider than OpenCV's vector blocks (its 8-bit
# conversion rounds its scalar tail and truncates its vector blocks).
for (h, w) in [(3, 70), (4, 31), (2, 96)]:
    hsv = np.stack([rng.randint(0, 256, (h, w)), rng.randint(0, 256, (h, w)), rng.randint(0, 256, (h, w))], axis=2).astype(np.uint8)
    ops["hsv2bgr"].append({"h": h, "w": w, "hsv": planar(hsv), "out": planar(cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR))})

# convertTo (brightness: alpha 1, beta delta; contrast: alpha delta, beta 0):
# float32 product, rounded half to even, saturated.
for (alpha, beta) in [(1.0, 23.7), (1.0, -31.5), (0.73, 0.0), (1.41, 0.0)]:
    img = image(3, 5)
    o = np.clip(np.rint(img.astype(f32) * f32(alpha) + f32(beta)), 0, 255).astype(np.uint8)
    ops["convert"].append({"pix": planar(img), "alpha": alpha, "beta": beta, "out": planar(o)})


def clip(b):
    return [min(max(f32(v), f32(0)), f32(1)) for v in b]


def size(b):
    if b[2] < b[0] or b[3] < b[1]:
        return f32(0)
    return f32(f32(b[2] - b[0]) * f32(b[3] - b[1]))


# Crop by a normalised box (the fork's CropImage: clip, scale, truncate).
for (h, w, box) in [(12, 15, [0.1, 0.2, 0.7, 0.9]), (10, 10, [-0.2, 0.33, 0.5, 1.3]), (9, 14, [0.0, 0.0, 1.0, 1.0])]:
    img = image(h, w)
    c = clip(box)
    x0, y0, x1, y1 = f32(c[0] * f32(w)), f32(c[1] * f32(h)), f32(c[2] * f32(w)), f32(c[3] * f32(h))
    wo, ho, cw, ch = int(x0), int(y0), int(f32(x1 - x0)), int(f32(y1 - y0))
    crop = img[ho:ho + ch, wo:wo + cw]
    ops["crop"].append({"h": h, "w": w, "pix": planar(img), "box": [float(v) for v in box], "out_h": ch, "out_w": cw, "out": planar(crop)})

# Expand by a ratio at an offset, over the mean fill (the fork's ExpandImage).
for (h, w, ratio, hoff, woff, fill) in [(5, 6, 2.5, 3.0, 7.0, [104, 117, 123]), (4, 7, 1.7, 0.0, 4.0, [])]:
    img = image(h, w)
    H, W = int(f32(h) * f32(ratio)), int(f32(w) * f32(ratio))
    canvas = np.zeros((H, W, 3), np.uint8)
    for ch, v in enumerate(fill):
        canvas[:, :, ch] = v
    canvas[int(hoff):int(hoff) + h, int(woff):int(woff) + w] = img
    box = [f32(-f32(woff) / f32(w)), f32(-f32(hoff) / f32(h)), f32(f32(f32(W) - f32(woff)) / f32(w)), f32(f32(f32(H) - f32(hoff)) / f32(h))]
    ops["expand"].append({"h": h, "w": w, "pix": planar(img), "ratio": ratio, "hoff": hoff, "woff": woff, "fill": fill,
                          "out_h": H, "out_w": W, "out": planar(canvas), "box": [float(v) for v in box]})


def intersect(a, b):
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return [f32(0)] * 4
    return [max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])]


def jaccard(a, b):
    i = intersect(a, b)
    iw, ih = f32(i[2] - i[0]), f32(i[3] - i[1])
    if iw <= 0 or ih <= 0:
        return f32(0)
    s = f32(iw * ih)
    return f32(s / f32(f32(size(a) + size(b)) - s))


def coverage(a, b):
    s = size(intersect(a, b))
    if s <= 0:
        return f32(0)
    return f32(s / size(a))


def project(src, b):
    if b[0] >= src[2] or b[2] <= src[0] or b[1] >= src[3] or b[3] <= src[1]:
        return None
    sw, sh = f32(src[2] - src[0]), f32(src[3] - src[1])
    p = clip([f32(f32(b[0] - src[0]) / sw), f32(f32(b[1] - src[1]) / sh), f32(f32(b[2] - src[0]) / sw), f32(f32(b[3] - src[1]) / sh)])
    return p if size(p) > 0 else None


def meets(src, b, kind, overlap):
    if kind == "CENTER":
        xc, yc = f32(f32(b[0] + b[2]) / f32(2)), f32(f32(b[1] + b[3]) / f32(2))
        return bool(xc >= src[0] and xc <= src[2] and yc >= src[1] and yc <= src[3])
    return bool(coverage(b, src) > f32(overlap))


for _ in range(40):
    a = sorted(rng.uniform(-0.2, 1.2, 2).astype(f32))
    c = sorted(rng.uniform(-0.2, 1.2, 2).astype(f32))
    crop = [a[0], c[0], a[1], c[1]]
    d = sorted(rng.uniform(-0.1, 1.1, 2).astype(f32))
    e = sorted(rng.uniform(-0.1, 1.1, 2).astype(f32))
    box = [d[0], e[0], d[1], e[1]]
    ov = float(rng.choice([0.0, 0.3, 0.7]))
    p = project(crop, box)
    ops["boxes"].append({"crop": [float(v) for v in crop], "box": [float(v) for v in box],
                         "jaccard": float(jaccard(crop, box)), "coverage": float(coverage(box, crop)),
                         "center": meets(crop, box, "CENTER", 0), "overlap": ov, "min_overlap": meets(crop, box, "MIN_OVERLAP", ov),
                         "proj": None if p is None else [float(v) for v in p]})


def warp(b, ow, oh, nw, nh):
    nw, nh, ow, oh = f32(nw), f32(nh), f32(ow), f32(oh)
    x0, y0, x1, y1 = f32(b[0] * ow), f32(b[1] * oh), f32(b[2] * ow), f32(b[3] * oh)
    x0 = max(f32(0), f32(f32(x0 * nw) / ow))
    x1 = min(nw, f32(f32(x1 * nw) / ow))
    y0 = max(f32(0), f32(f32(y0 * nh) / oh))
    y1 = min(nh, f32(f32(y1 * nh) / oh))
    return [f32(x0 / nw), f32(y0 / nh), f32(x1 / nw), f32(y1 / nh)]


for _ in range(20):
    d = sorted(rng.uniform(-0.1, 1.1, 2).astype(f32))
    e = sorted(rng.uniform(-0.1, 1.1, 2).astype(f32))
    b = [d[0], e[0], d[1], e[1]]
    ow, oh, nw, nh = [int(v) for v in rng.randint(5, 500, 4)]
    ops["warp"].append({"box": [float(v) for v in b], "oldw": ow, "oldh": oh, "neww": nw, "newh": nh, "out": [float(v) for v in warp(b, ow, oh, nw, nh)]})

with open(os.path.join(out, "ops.json"), "w") as f:
    json.dump(ops, f)

# The fork's messages, through protoc's Python output of dsgd's caffe.proto.
tmp = tempfile.mkdtemp()
here = os.path.dirname(os.path.abspath(__file__))
proto_dir = os.path.join(here, "..", "caffe", "caffepb")
subprocess.check_call(["protoc", "--proto_path=" + proto_dir, "--python_out=" + tmp, os.path.join(proto_dir, "caffe.proto")])
spec = importlib.util.spec_from_file_location("caffe_pb2", os.path.join(tmp, "caffe_pb2.py"))
pb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pb)

records = [
    (image(20, 30), [(1, [(0, [0.1, 0.2, 0.5, 0.6], False), (3, [0.55, 0.05, 0.98, 0.4], True)]), (4, [(0, [-0.05, 0.3, 0.4, 1.02], False)])]),
    (image(24, 24), []),
    (image(16, 28), [(2, [(0, [0.25, 0.25, 0.75, 0.75], False)])]),
]
db_path = os.path.join(out, "anno_lmdb")
shutil.rmtree(db_path, ignore_errors=True)
env = lmdb.open(db_path, map_size=1 << 24, subdir=True)
with env.begin(write=True) as txn:
    for i, (img, groups) in enumerate(records):
        ad = pb.AnnotatedDatum()
        ad.type = pb.AnnotatedDatum.BBOX
        ok, png = cv2.imencode(".png", img)
        assert ok
        ad.datum.channels, ad.datum.height, ad.datum.width = 3, img.shape[0], img.shape[1]
        ad.datum.data = png.tobytes()
        ad.datum.encoded = True
        for label, annos in groups:
            g = ad.annotation_group.add()
            g.group_label = label
            for inst, b, diff in annos:
                a = g.annotation.add()
                a.instance_id = inst
                a.bbox.xmin, a.bbox.ymin, a.bbox.xmax, a.bbox.ymax = b
                a.bbox.difficult = diff
        txn.put(("%08d_img%d" % (i, i)).encode(), ad.SerializeToString())
env.close()
for name in os.listdir(db_path):
    if name.endswith("lock.mdb"):
        os.remove(os.path.join(db_path, name))

# The layer's two first batches of 2 with resize WARP 12x10 (LINEAR), mean
# values and scale: the data after cv2.resize, and the label rows.
RH, RW, MEAN, SCALE, BATCH = 12, 10, [104.0, 117.0, 123.0], 0.5, 2
batches = []
order = [0, 1, 2, 0]
for bi in range(2):
    data, rows = [], []
    for item in range(BATCH):
        img, groups = records[order[bi * BATCH + item]]
        h, w = img.shape[:2]
        r = cv2.resize(img, (RW, RH), interpolation=cv2.INTER_LINEAR).astype(f32)
        for c in range(3):
            data += [float(v) for v in ((r[:, :, c] - f32(MEAN[c])) * f32(SCALE)).reshape(-1)]
        for label, annos in groups:
            for inst, b, diff in annos:
                b32 = [f32(v) for v in b]
                p = project([f32(0), f32(0), f32(1), f32(1)], warp(b32, w, h, RW, RH))
                if p is None:
                    continue
                rows.append([float(item), float(label), float(inst)] + [float(v) for v in p] + [1.0 if diff else 0.0])
    if not rows:
        rows = [[-1.0] * 8]
    batches.append({"data": data, "rows": rows})
with open(os.path.join(out, "batches.json"), "w") as f:
    json.dump({"height": RH, "width": RW, "mean": MEAN, "scale": SCALE, "batch": BATCH, "batches": batches}, f)
shutil.rmtree(tmp)
print("wrote", out)

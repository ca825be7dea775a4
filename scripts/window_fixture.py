#!/usr/bin/python3
"""Makes data/testdata/window: two PNG images, a window file, a mean file and
the crops Caffe's WindowDataLayer (caffe/src/caffe/layers/window_data_layer.cpp,
load_batch) makes of each window, computed here independently with OpenCV
(cv2.resize INTER_LINEAR, as Caffe) and numpy float32.

    /usr/bin/python3 scripts/window_fixture.py data/testdata/window

Needs python3-opencv and python3-numpy (Debian); CI does not: the outputs are
committed. data/window_test.go reads them.
"""
import json, os, struct, sys
import cv2
import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.RandomState(12)

# Two colour images with structure (gradients + noise), BGR as cv2 keeps them.
def image(h, w):
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([(x * 5 + y) % 256, (y * 7 + 3 * x) % 256, (x * y) % 256], axis=2).astype(np.int32)
    img = (img + rng.randint(0, 40, size=img.shape)) % 256
    return img.astype(np.uint8)

imgs = [image(40, 50), image(30, 30)]
for i, im in enumerate(imgs):
    cv2.imwrite(os.path.join(out, "img%d.png" % i), im)

windows = [  # image, class, overlap, x1, y1, x2, y2
    (0, 1, 0.9, 5, 6, 30, 25),
    (0, 2, 0.7, 0, 0, 49, 39),
    (0, 0, 0.1, 10, 20, 20, 35),
    (0, 3, 0.4, 3, 3, 10, 10),
    (1, 4, 1.0, 20, 2, 29, 29),
    (1, 0, 0.0, 0, 0, 5, 5),
]
with open(os.path.join(out, "windows.txt"), "w") as f:
    for i, im in enumerate(imgs):
        ws = [w for w in windows if w[0] == i]
        f.write("# %d\nimg%d.png\n3\n%d\n%d\n%d\n" % (i, i, im.shape[0], im.shape[1], len(ws)))
        for w in ws:
            f.write("%d %g %d %d %d %d\n" % w[1:])

CROP = 10
# Mean file: a BlobProto 1x3x14x13 (width 13: Caffe centres the crop by the
# width, mean_off = (13 - 10) / 2 = 1, for both axes).
MH, MW = 14, 13
mean = (rng.rand(3, MH, MW) * 255).astype(np.float32)
def varint(v):
    b = b""
    while True:
        c = v & 0x7F
        v >>= 7
        b += bytes([c | (0x80 if v else 0)])
        if not v:
            return b
data = struct.pack("<%df" % mean.size, *mean.ravel())
blob = b"".join(bytes([f << 3]) + varint(v) for f, v in ((1, 1), (2, 3), (3, MH), (4, MW)))
blob += bytes([(5 << 3) | 2]) + varint(len(data)) + data
open(os.path.join(out, "mean.binaryproto"), "wb").write(blob)
MEANS = np.array([104, 117, 123], np.float32)

def cround(v):  # C's round: half away from zero
    v = np.float32(v)
    return int(np.sign(v) * np.floor(np.abs(v) + np.float32(0.5)))

def crop(win, context_pad, square, mirror, use_mean_file, scale):
    """Caffe's load_batch for one window, Dtype float."""
    img = imgs[win[0]]
    rows, cols = img.shape[:2]
    x1, y1, x2, y2 = win[3:]
    top = np.zeros((3, CROP, CROP), np.float32)
    size_w = size_h = CROP
    pad_w = pad_h = 0
    f = np.float32
    if context_pad > 0 or square:
        context_scale = f(CROP) / f(CROP - 2 * context_pad)
        half_height = f((y2 - y1 + 1) / 2.0)
        half_width = f((x2 - x1 + 1) / 2.0)
        center_x = f(x1) + half_width
        center_y = f(y1) + half_height
        if square:
            if half_height > half_width:
                half_width = half_height
            else:
                half_height = half_width
        x1 = cround(center_x - f(half_width * context_scale))
        x2 = cround(center_x + f(half_width * context_scale))
        y1 = cround(center_y - f(half_height * context_scale))
        y2 = cround(center_y + f(half_height * context_scale))
        unclipped_height, unclipped_width = y2 - y1 + 1, x2 - x1 + 1
        pad_x1, pad_y1 = max(0, -x1), max(0, -y1)
        pad_x2, pad_y2 = max(0, x2 - cols + 1), max(0, y2 - rows + 1)
        x1, x2, y1, y2 = x1 + pad_x1, x2 - pad_x2, y1 + pad_y1, y2 - pad_y2
        clipped_height, clipped_width = y2 - y1 + 1, x2 - x1 + 1
        scale_x = f(CROP) / f(unclipped_width)
        scale_y = f(CROP) / f(unclipped_height)
        size_w = cround(f(clipped_width) * scale_x)
        size_h = cround(f(clipped_height) * scale_y)
        pad_x1 = cround(f(pad_x1) * scale_x)
        pad_x2 = cround(f(pad_x2) * scale_x)
        pad_y1 = cround(f(pad_y1) * scale_y)
        pad_h = pad_y1
        pad_w = pad_x2 if mirror else pad_x1
        if pad_h + size_h > CROP:
            size_h = CROP - pad_h
        if pad_w + size_w > CROP:
            size_w = CROP - pad_w
    roi = img[y1:y2 + 1, x1:x2 + 1]
    warped = cv2.resize(roi, (size_w, size_h), interpolation=cv2.INTER_LINEAR)
    if mirror:
        warped = cv2.flip(warped, 1)
    mean_off = (MW - CROP) // 2
    for c in range(3):
        for h in range(warped.shape[0]):
            for w in range(warped.shape[1]):
                pixel = f(warped[h, w, c])
                m = mean[c, h + mean_off + pad_h, w + mean_off + pad_w] if use_mean_file else MEANS[c]
                top[c, h + pad_h, w + pad_w] = f((pixel - m) * f(scale))
    return top

cases, values = [], []
k = 0
for wi, win in enumerate(windows):
    for context_pad, square in ((0, False), (2, False), (0, True), (3, True)):
        for mirror in (False, True):
            use_mean_file = k % 3 == 0
            scale = 0.5 if k % 4 == 1 else 1.0
            k += 1
            cases.append({"window": wi, "context_pad": context_pad, "square": square, "mirror": mirror,
                          "mean_file": use_mean_file, "scale": scale, "offset": len(values)})
            values.extend(crop(win, context_pad, square, mirror, use_mean_file, scale).ravel().tolist())
json.dump({"crop": CROP, "mean_values": MEANS.tolist(), "windows": windows, "cases": cases}, open(os.path.join(out, "cases.json"), "w"), indent=0)
open(os.path.join(out, "crops.f32"), "wb").write(struct.pack("<%df" % len(values), *values))
print(len(cases), "cases,", len(values), "values")

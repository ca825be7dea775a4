#!/usr/bin/python3
"""Writes engine/layers/testdata/ap_oracle.json, an independent float64
oracle for SSD's ComputeAP (weiliu89/caffe, branch ssd, bbox_util.cpp)
in its three ap_version forms, without dsgd's code, from the PASCAL VOC
devkit's definitions:

  detections sorted by descending score (equal scores in list order),
  precision and recall after each one;
  11point (VOC2007): mean over t in 0, 0.1, ..., 1 of the highest
    precision at a recall of at least t (0 where none), the recalls
    float32 and compared with the double t, as in the fork (a recall of
    7/10 or 9/10 is below 0.7 or 0.9 there: float32(0.7) < 0.7);
  MaxIntegral (VOC2012, ILSVRC): the area under the precision envelope
    (each precision replaced by the highest at that or a higher recall);
  Integral: the sum of each detection's precision times the recall it
    adds.

Cases are seeded random lists (scores on a coarse grid, so that ties
occur) and edge cases: no ground truth, no detection, all true, all
false. Run with /usr/bin/python3 (numpy).
"""
import json
import os

import numpy as np

rng = np.random.default_rng(20261127)


def ap_all(scores, tp, num_pos):
    if len(scores) == 0 or num_pos == 0:
        return {"11point": 0.0, "MaxIntegral": 0.0, "Integral": 0.0}
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    t = np.asarray(tp, dtype=np.float64)[order]
    ctp = np.cumsum(t)
    cfp = np.cumsum(1 - t)
    prec = ctp / (ctp + cfp)
    rec = ctp / num_pos
    rec32 = (np.float32(1) * ctp.astype(np.float32) / np.float32(num_pos)).astype(np.float64)
    p11 = 0.0
    for j in range(11):
        sel = prec[rec32 >= j / 10.0]
        p11 += (sel.max() if sel.size else 0.0) / 11
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = np.concatenate(([0.0], prec, [0.0]))
    for i in range(len(mpre) - 2, -1, -1):
        mpre[i] = max(mpre[i], mpre[i + 1])
    idx = np.where(mrec[1:] != mrec[:-1])[0]
    maxint = float(np.sum((mrec[idx + 1] - mrec[idx]) * mpre[idx + 1]))
    integ = float(np.sum(prec * np.diff(np.concatenate(([0.0], rec)))))
    return {"11point": float(p11), "MaxIntegral": maxint, "Integral": integ}


cases = []
for k in range(40):
    n = int(rng.integers(1, 30))
    scores = (rng.integers(0, 12, n) / 11.0).astype(np.float32)
    tp = rng.integers(0, 2, n)
    num_pos = int(tp.sum()) + int(rng.integers(0, 4))
    if num_pos == 0:
        num_pos = 1
    cases.append((f"random{k}", scores.tolist(), tp.tolist(), num_pos))
cases += [
    ("no ground truth", [0.9, 0.5], [0, 0], 0),
    ("no detection", [], [], 3),
    ("all true", [0.9, 0.8, 0.7], [1, 1, 1], 3),
    ("all false", [0.9, 0.8], [0, 0], 2),
    ("half found", [0.9, 0.8], [1, 1], 4),
    ("ties", [0.9, 0.8, 0.8, 0.8, 0.6], [1, 0, 1, 1, 0], 4),
    # 7 of 10 found: float32 7/10 is below 0.7.
    ("float32 recall", [0.9] * 7 + [0.5] * 3, [1] * 7 + [0] * 3, 10),
]
out = []
for name, scores, tp, num_pos in cases:
    scores = [float(np.float32(s)) for s in scores]
    out.append({"name": name, "scores": scores, "tp": [int(x) for x in tp],
                "num_pos": num_pos, "ap": ap_all(scores, tp, num_pos)})
path = os.path.join(os.path.dirname(__file__), "..", "engine", "layers", "testdata", "ap_oracle.json")
with open(path, "w") as f:
    f.write("[\n" + ",\n".join(json.dumps(c) for c in out) + "\n]\n")

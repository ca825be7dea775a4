#!/usr/bin/python3
"""Writes engine/layers/testdata/multibox_loss.json, the float64 oracle for
SSD's MultiBoxLoss (weiliu89/caffe, branch ssd: multibox_loss_layer.cpp
and bbox_util.cpp's GetGroundTruth, MatchBBox, FindMatches,
MineHardExamples, EncodeBBox, EncodeLocPrediction, EncodeConfPrediction,
ApplyNMS), without dsgd's code.

The discrete part (which priors match which ground truth, which are mined)
is computed here in float64 Python from the fork's rules; the loss is then
a torch expression of the predictions (smooth L1 or 0.5·d² over the matched
boxes' encoded coordinates, softmax or sigmoid cross-entropy over the
chosen priors), normalised as the fork (VALID: by the matched priors,
FULL: N·P, BATCH_SIZE: N, NONE: 1; at least 1), and the gradients of the
location predictions and the confidences are torch's autograd with the
loss weight as the top's diff; the priors and the ground truth take none
(null). Every decision keeps a margin (overlaps from the thresholds,
maxima from the runners-up, the mined losses from the first one left out,
smooth L1's |d| from 1), checked here, so float32 arithmetic decides the
same; a seed whose data come too close is skipped for the next.

One departure from the fork, which dsgd shares: LOGISTIC without mining
puts the positives' targets on their own priors (the fork steps its target
pointer by P, not P·C, per image).

Run with /usr/bin/python3; `make torch-layers` reruns it.
"""
import math

import numpy as np
import torch
import torch.nn.functional as Fn

import torchfix
from torchfix import f32

MARGIN = 1e-4


class Close(Exception):
    pass


def margin(a, b, what):
    if abs(a - b) < MARGIN:
        raise Close(what)


def area(b):
    if b[2] < b[0] or b[3] < b[1]:
        return 0.0
    return (b[2] - b[0]) * (b[3] - b[1])


def iou(a, b):
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return 0.0
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    i = w * h
    return i / (area(a) + area(b) - i)


def decode(code, in_target, prior, var, p):
    v = [1.0] * 4 if in_target else var
    if code == "CORNER":
        return [prior[k] + v[k] * p[k] for k in range(4)]
    pw, ph = prior[2] - prior[0], prior[3] - prior[1]
    if code == "CORNER_SIZE":
        return [prior[0] + v[0] * p[0] * pw, prior[1] + v[1] * p[1] * ph,
                prior[2] + v[2] * p[2] * pw, prior[3] + v[3] * p[3] * ph]
    cx, cy = (prior[0] + prior[2]) / 2, (prior[1] + prior[3]) / 2
    dcx, dcy = v[0] * p[0] * pw + cx, v[1] * p[1] * ph + cy
    dw, dh = math.exp(v[2] * p[2]) * pw, math.exp(v[3] * p[3]) * ph
    return [dcx - dw / 2, dcy - dh / 2, dcx + dw / 2, dcy + dh / 2]


def encode(code, in_target, prior, var, g):
    v = [1.0] * 4 if in_target else var
    pw, ph = prior[2] - prior[0], prior[3] - prior[1]
    if code == "CORNER":
        return [(g[k] - prior[k]) / v[k] for k in range(4)]
    if code == "CORNER_SIZE":
        s = [pw, ph, pw, ph]
        return [(g[k] - prior[k]) / s[k] / v[k] for k in range(4)]
    gw, gh = g[2] - g[0], g[3] - g[1]
    return [((g[0] + g[2]) / 2 - (prior[0] + prior[2]) / 2) / pw / v[0],
            ((g[1] + g[3]) / 2 - (prior[1] + prior[3]) / 2) / ph / v[1],
            math.log(gw / pw) / v[2], math.log(gh / ph) / v[3]]


def outside(b):
    return any(c < 0 or c > 1 for c in b)


def match(cfg, gts, boxes, label):
    """MatchBBox: per box the matched gt index (-1 none, -2 ignored) and
    its best overlap."""
    n = len(boxes)
    idx, best = [-1] * n, [0.0] * n
    gi = [g for g, (lab, _) in enumerate(gts) if label == -1 or lab == label]
    if not gi:
        return idx, best
    ov = {}
    for i, b in enumerate(boxes):
        if cfg["ignore_cross_boundary_bbox"]:
            for c in b:
                margin(c, 0, "boundary")
                margin(c, 1, "boundary")
            if outside(b):
                idx[i] = -2
                continue
        for j, g in enumerate(gi):
            o = iou(b, gts[g][1])
            if o > 1e-6:
                best[i] = max(best[i], o)
                ov[(i, j)] = o
    pool = list(range(len(gi)))
    while pool:
        cands = sorted(((o, i, j) for (i, j), o in ov.items() if idx[i] == -1 and j in pool), reverse=True)
        if not cands:
            break
        if len(cands) > 1:
            margin(cands[0][0], cands[1][0], "bipartite")
        o, i, j = cands[0]
        idx[i], best[i] = gi[j], o
        pool.remove(j)
    if cfg["match_type"] == "PER_PREDICTION":
        thr = cfg["overlap_threshold"]
        for i in range(n):
            if idx[i] != -1:
                continue
            cands = sorted((ov[(i, j)], j) for j in range(len(gi)) if (i, j) in ov)
            for o, _ in cands:
                margin(o, thr, "overlap_threshold")
            cands = [c for c in cands if c[0] >= thr]
            if cands:
                if len(cands) > 1:
                    margin(cands[-1][0], cands[-2][0], "per-prediction")
                idx[i], best[i] = gi[cands[-1][1]], cands[-1][0]
    return idx, best


def conf_loss_np(cfg, s, label):
    s = np.asarray(s)
    if cfg["conf_loss_type"] == "SOFTMAX":
        m = s.max()
        return -(s[label] - m - math.log(np.exp(s - m).sum()))
    t = np.zeros_like(s)
    t[label] = 1
    return float(np.sum(np.logaddexp(0, s) - s * t))


def smooth(d, cfg):
    if cfg["loc_loss_type"] == "L2":
        return 0.5 * d * d
    margin(abs(d), 1.0, "smooth L1 kink")
    return 0.5 * d * d if abs(d) < 1 else abs(d) - 0.5


def nms(boxes, scores, thr, top_k):
    order = sorted(range(len(scores)), key=lambda k: -scores[k])  # stable
    for a, b in zip(order, order[1:]):
        margin(scores[a], scores[b], "nms order")
    if -1 < top_k < len(order):
        order = order[:top_k]
    kept = []
    while order:
        b = order.pop(0)
        if area(boxes[b]) < 1e-5:
            continue
        kept.append(b)
        if top_k > -1 and len(kept) >= top_k:
            break
        rest = []
        for c in order:
            if area(boxes[c]) < 1e-5:
                continue
            o = iou(boxes[b], boxes[c])
            margin(o, thr, "nms threshold")
            if o <= thr:
                rest.append(c)
        order = rest
    return kept


def plan(cfg, loc, conf, pri, gt, num, np_):
    """The fork's discrete decisions: the matched priors (image, loc class,
    prior, gt) in its order, and per image the mined negatives."""
    nc = cfg["num_classes"]
    share = cfg["share_location"]
    nlc = 1 if share else nc
    bg = cfg["background_label_id"]
    priors = [list(pri[0, 0, 4 * p:4 * p + 4]) for p in range(np_)]
    var = [list(pri[0, 1, 4 * p:4 * p + 4]) for p in range(np_)]
    gts = {}
    for r in gt.reshape(-1, 8):
        item = int(r[0])
        if item == -1:
            continue
        if r[7] and not cfg["use_difficult_gt"]:
            continue
        gts.setdefault(item, []).append((int(r[1]), list(r[3:7])))
    lp = loc.reshape(num, np_, nlc, 4)

    def pred_boxes(i, c):
        return [decode(cfg["code_type"], cfg["encode_variance_in_target"], priors[p], var[p], lp[i, p, c]) for p in range(np_)]

    matches = []
    for i in range(num):
        m = []
        g = gts.get(i, [])
        if g:
            if not cfg["use_prior_for_matching"]:
                for c in range(nlc):
                    label = -1 if share else c
                    if not share and label == bg:
                        continue
                    m.append([label] + list(match(cfg, g, pred_boxes(i, c), label)))
            else:
                idx, best = match(cfg, g, priors, -1)
                if share:
                    m.append([-1, idx, best])
                else:
                    for c in range(nlc):
                        if c == bg:
                            continue
                        m.append([c, [k if k > -1 and g[k][0] == c else -1 for k in idx], list(best)])
        matches.append(m)

    def positives():
        out = []
        for i in range(num):
            for label, idx, _ in matches[i]:
                for p, k in enumerate(idx):
                    if k > -1:
                        out.append((i, 0 if share else label, p, k))
        return out

    def obj_label(lab):
        return bg + 1 if cfg["map_object_to_agnostic"] else lab

    def enc(i, lc, p, k):
        t = encode(cfg["code_type"], cfg["encode_variance_in_target"], priors[p], var[p], gts[i][k][1])
        pr = list(lp[i, p, lc])
        inside = [True] * 4
        if cfg["bp_inside"]:
            mb = priors[p] if cfg["use_prior_for_matching"] else decode(cfg["code_type"], cfg["encode_variance_in_target"], priors[p], var[p], pr)
            for c in range(4):
                margin(mb[c], 0, "bp_inside")
                margin(mb[c], 1, "bp_inside")
            inside = [0 <= c <= 1 for c in mb]
        return t, inside

    negs = [[] for _ in range(num)]
    mining = cfg["mining_type"]
    if mining != "NONE":
        hard = mining == "HARD_EXAMPLE"
        locl = {}
        if hard:
            for (i, lc, p, k) in positives():
                t, inside = enc(i, lc, p, k)
                s = 0.0
                for c in range(4):
                    pv = lp[i, p, lc][c] if inside[c] else t[c]
                    d = pv - t[c]
                    if cfg["encode_variance_in_target"]:
                        d /= var[p][c]
                    s += smooth(d, cfg)
                locl[(i, p)] = s
        cs = conf.reshape(num, np_, nc)
        for i in range(num):
            if not matches[i]:
                continue
            loss = []
            for p in range(np_):
                label = bg
                for _, idx, _ in matches[i]:
                    if idx[p] > -1:
                        label = obj_label(gts[i][idx[p]][0])
                        break
                loss.append(conf_loss_np(cfg, cs[i, p], label) + locl.get((i, p), 0.0))
            for m in matches[i]:
                label, idx, best = m
                if not hard:
                    for p in range(np_):
                        if idx[p] == -1:
                            margin(best[p], cfg["neg_overlap"], "neg_overlap")
                elig = [p for p in range(np_) if hard or (idx[p] == -1 and best[p] < cfg["neg_overlap"])]
                if hard:
                    nsel = min(cfg["sample_size"], len(elig))
                else:
                    npos = sum(1 for k in idx if k > -1)
                    nsel = min(int(np.float32(npos) * np.float32(cfg["neg_pos_ratio"])), len(elig))
                if cfg.get("nms") and cfg["nms"][0] > 0:
                    thr, top_k = cfg["nms"]
                    if cfg["use_prior_for_nms"]:
                        boxes = [priors[p] for p in elig]
                    else:
                        dec = pred_boxes(i, 0)
                        boxes = [dec[p] for p in elig]
                    kept = nms(boxes, [loss[p] for p in elig], thr, top_k)
                    nsel = min(len(kept), nsel)
                    sel = {elig[k] for k in kept[:max(nsel, 0)]}
                else:
                    order = sorted(elig, key=lambda p: -loss[p])
                    if 0 < nsel < len(order):
                        margin(loss[order[nsel - 1]], loss[order[nsel]], "mining cut")
                    sel = set(order[:max(nsel, 0)])
                for p in range(np_):
                    if idx[p] > -1:
                        if hard and p not in sel:
                            idx[p] = -1
                    elif idx[p] == -1 and p in sel:
                        negs[i].append(p)
    return positives(), negs, gts, priors, var, obj_label


def multibox(cfg, bs, num, np_):
    loc, conf, pri, gt = bs
    nc = cfg["num_classes"]
    bg = cfg["background_label_id"]
    pos, negs, gts, priors, var, obj_label = plan(
        cfg, loc.detach().numpy(), conf.detach().numpy(), pri.detach().numpy(), gt.detach().numpy(), num, np_)
    share = cfg["share_location"]
    nlc = 1 if share else nc
    lp = loc.reshape(num, np_, nlc, 4)
    cs = conf.reshape(num, np_, nc)
    loc_loss = torch.zeros((), dtype=torchfix.D)
    for (i, lc, p, k) in pos:
        t = encode(cfg["code_type"], cfg["encode_variance_in_target"], priors[p], var[p], gts[i][k][1])
        inside = [True] * 4
        if cfg["bp_inside"]:
            mb = priors[p] if cfg["use_prior_for_matching"] else decode(
                cfg["code_type"], cfg["encode_variance_in_target"], priors[p], var[p], lp[i, p, lc].detach().tolist())
            inside = [0 <= c <= 1 for c in mb]
        for c in range(4):
            pv = lp[i, p, lc, c] if inside[c] else torch.tensor(t[c], dtype=torchfix.D)
            d = pv - t[c]
            if cfg["encode_variance_in_target"]:
                d = d / var[p][c]
            if cfg["loc_loss_type"] == "L2":
                loc_loss = loc_loss + 0.5 * d * d
            else:
                margin(abs(float(d)), 1.0, "smooth L1 kink")
                loc_loss = loc_loss + Fn.smooth_l1_loss(d, torch.zeros_like(d), beta=1.0)
    # The confidence rows and their targets.
    rows, labels = [], []
    if cfg["mining_type"] != "NONE":
        for i in range(num):
            for (j, lc, p, k) in pos:
                if j == i:
                    rows.append((i, p))
                    labels.append([obj_label(gts[i][k][0])])
            for p in negs[i]:
                rows.append((i, p))
                labels.append([bg])
    else:
        lab = {(i, p): [] for i in range(num) for p in range(np_)}
        for (i, lc, p, k) in pos:
            lab[(i, p)].append(obj_label(gts[i][k][0]))
        for i in range(num):
            for p in range(np_):
                rows.append((i, p))
                labels.append(lab[(i, p)])
    conf_loss = torch.zeros((), dtype=torchfix.D)
    for (i, p), ls in zip(rows, labels):
        s = cs[i, p]
        if cfg["conf_loss_type"] == "SOFTMAX":
            # No mining: the background unless matched; later classes'
            # matches overwrite earlier ones.
            label = ls[-1] if ls else bg
            conf_loss = conf_loss - torch.log_softmax(s, 0)[label]
        else:
            t = torch.zeros(nc, dtype=torchfix.D)
            for label in ls:
                t[label] = 1
            conf_loss = conf_loss + Fn.binary_cross_entropy_with_logits(s, t, reduction="sum")
    norm = {"FULL": num * np_, "VALID": len(pos), "BATCH_SIZE": num, "NONE": 1}[cfg["normalization"]]
    norm = max(norm, 1)
    total = torch.zeros((), dtype=torchfix.D)
    if not cfg.get("no_loc"):
        total = total + np.float32(cfg["loc_weight"]) * loc_loss / norm
    if not cfg.get("no_conf"):
        total = total + conf_loss / norm
    return [total]


DEFAULT = dict(
    loc_loss_type="SMOOTH_L1", conf_loss_type="SOFTMAX", loc_weight=1.0, num_classes=3,
    share_location=True, match_type="PER_PREDICTION", overlap_threshold=0.5,
    use_prior_for_matching=True, background_label_id=0, use_difficult_gt=True,
    neg_pos_ratio=3.0, neg_overlap=0.5, code_type="CENTER_SIZE",
    encode_variance_in_target=False, map_object_to_agnostic=False,
    ignore_cross_boundary_bbox=False, bp_inside=False, mining_type="MAX_NEGATIVE",
    nms=None, sample_size=64, use_prior_for_nms=False, normalization="VALID")

cases = []


def inputs(rng, num, np_, nc, nlc, gt_rows, loc_std):
    # Priors: boxes of side 0.1 to 0.45 around random centres, a few
    # reaching past the image's edges; variances SSD's 0.1, 0.1, 0.2, 0.2.
    pri = np.zeros((1, 2, np_ * 4))
    for p in range(np_):
        cx, cy = rng.uniform(0.05, 0.95, 2)
        w, h = rng.uniform(0.1, 0.45, 2)
        pri[0, 0, 4 * p:4 * p + 4] = [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]
        pri[0, 1, 4 * p:4 * p + 4] = [0.1, 0.1, 0.2, 0.2]
    loc = rng.normal(0, loc_std, (num, np_ * nlc * 4))
    conf = rng.normal(0, 1.5, (num, np_ * nc))
    gt = np.array(gt_rows, dtype=np.float64).reshape(1, 1, -1, 8)
    return [f32(torch.tensor(x)) for x in (loc, conf, pri, gt)]


# Image 0: two boxes (the second difficult); image 1: none; image 2: two
# boxes of two classes; then a row with item_id -1 (AnnotatedData's filler).
GT3 = [
    [0, 1, 0, 0.12, 0.15, 0.42, 0.5, 0],
    [0, 2, 1, 0.5, 0.45, 0.85, 0.9, 1],
    [2, 2, 0, 0.3, 0.2, 0.62, 0.55, 0],
    [2, 1, 1, 0.05, 0.55, 0.3, 0.95, 0],
    [-1, -1, -1, -1, -1, -1, -1, -1],
]
GT_BG1 = [[r[0], {1: 2, 2: 0}.get(r[1], r[1])] + r[2:] for r in GT3]


def case(name, loss_weight=1.0, num=3, np_=24, gt_rows=GT3, loc_std=0.3, seed=0, **kw):
    cfg = dict(DEFAULT, **kw)
    nc = cfg["num_classes"]
    nlc = 1 if cfg["share_location"] else nc
    for s in range(seed, seed + 200):
        rng = np.random.default_rng(1000 + s)
        bottoms = inputs(rng, num, np_, nc, nlc, gt_rows, loc_std)
        try:
            out = []
            torchfix.run(out, name, lambda bs, _: multibox(cfg, bs, num, np_), bottoms,
                         grad_bottoms=[0, 1], loss_weight=loss_weight)
        except Close:
            continue
        out[0]["config"] = cfg
        cases.append(out[0])
        return
    raise SystemExit(name + ": no seed keeps the decisions' margins")


# ssd_pascal.py's settings.
case("Default")
case("BipartiteNoDifficultFullCorner", match_type="BIPARTITE", use_difficult_gt=False,
     normalization="FULL", code_type="CORNER", loss_weight=2.0)
case("NoShareDecodedCornerSizeL2", share_location=False, mining_type="NONE", use_prior_for_matching=False,
     code_type="CORNER_SIZE", normalization="BATCH_SIZE", loc_loss_type="L2", background_label_id=1,
     gt_rows=GT_BG1, loc_std=0.2)
case("NoSharePriorMatch", share_location=False, mining_type="NONE", num_classes=4, loc_weight=0.5)
case("LogisticNoneVarianceInTarget", conf_loss_type="LOGISTIC", mining_type="NONE", normalization="NONE",
     encode_variance_in_target=True)
case("LogisticMaxNegCrossBoundary", conf_loss_type="LOGISTIC", ignore_cross_boundary_bbox=True, neg_pos_ratio=2.0)
case("HardExampleNMS", mining_type="HARD_EXAMPLE", sample_size=8, nms=(0.5, 20), loc_loss_type="L2")
case("HardExampleDecodedNoNMS", mining_type="HARD_EXAMPLE", sample_size=10, use_prior_for_matching=False)
case("MaxNegNMSPriorBPInsideCorner", nms=(0.45, 50), use_prior_for_nms=True, bp_inside=True, code_type="CORNER",
     loc_weight=2.0)
case("MaxNegNMSTopK0", nms=(0.45, 0))
case("BPInsideDecodedCornerSize", bp_inside=True, use_prior_for_matching=False, code_type="CORNER_SIZE",
     match_type="BIPARTITE", mining_type="NONE", loc_std=1.0)
case("Agnostic", map_object_to_agnostic=True, num_classes=2, mining_type="NONE", normalization="FULL",
     gt_rows=[r[:1] + [r[1] if r[1] < 1 else (1 if r[1] == 1 else 5)] + r[2:] for r in GT3])
case("NoConfLoss", no_conf=True)
case("NoLocLoss", no_loc=True, mining_type="NONE")
case("NoGroundTruth", gt_rows=[[-1] * 8], normalization="BATCH_SIZE")

torchfix.write(cases, "engine/layers/testdata/multibox_loss.json")

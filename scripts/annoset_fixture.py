#!/usr/bin/python3
"""The oracle for dsgd convert-annoset (make annoset-crosscheck).

Writes a few small images (OpenCV), PASCAL VOC XML and txt annotation
files, a label map and list files into OUT (data/testdata/annoset), and
OUT/expected.json: per case, the AnnotatedDatum records SSD's fork
(weiliu89/caffe, branch ssd) writes for them, computed here from the
files as its tools/convert_annoset.cpp and src/caffe/util/io.cpp
(ReadImageToDatum, ReadRichImageToAnnotatedDatum, ReadXMLToAnnotatedDatum,
ReadJSONToAnnotatedDatum, ReadTxtToAnnotatedDatum) do:

- keys %08d_IMAGE by the line's place in the list; an image OpenCV
  cannot read is skipped (its number is not reused);
- the Datum: label -1 for detection; with an encode type matching the
  file's extension and no resize, the file's own bytes (encoded, channels
  3, or 1 with --gray, and the image's height and width); otherwise the
  BGR pixels as C x H x W planes (encoded false), resized with
  cv2.resize INTER_LINEAR for --resize_height/--resize_width;
- type BBOX, and the boxes grouped by label in the order the labels first
  appear, instance ids counting from 0 in each group, normalised in
  float32 by the XML's size/width and size/height when both parse as
  integers, else by the image's real size (txt: always the image's);
  difficult as the last <difficult> seen before the box is "1"; a
  coordinate that is missing or not an integer is 0 (ptree's get with a
  default);
- no annotation file: no groups.

Run: /usr/bin/python3 scripts/annoset_fixture.py data/testdata/annoset
"""
import json
import os
import sys
import xml.etree.ElementTree as ET

import cv2
import numpy as np

F32 = np.float32

LABELMAP = """item {
  name: "none_of_the_above"
  label: 0
  display_name: "background"
}
item {
  name: "cat"
  label: 1
  display_name: "cat"
}
item {
  name: "dog"
  label: 2
  display_name: "dog"
}
item {
  name: "bird"
  label: 3
  display_name: "bird"
}
item {
  name: "18"
  label: 4
  display_name: "dog (COCO's category 18)"
}
"""
NAME_TO_LABEL = {"none_of_the_above": 0, "cat": 1, "dog": 2, "bird": 3, "18": 4}

XML = {
    # Two dogs and a difficult cat: groups dog (ids 0, 1) then cat; white
    # space around a coordinate; a <difficult> after its box does not
    # reach that box.
    "a": """<annotation>
  <folder>VOC2007</folder>
  <filename>a.jpg</filename>
  <size><width>12</width><height>10</height><depth>3</depth></size>
  <object><name>dog</name><pose>Left</pose><truncated>0</truncated><difficult>0</difficult>
    <bndbox><xmin> 1 </xmin><ymin>2</ymin><xmax>7</xmax><ymax>9</ymax></bndbox></object>
  <object><name>cat</name><difficult>1</difficult>
    <bndbox><xmin>3</xmin><ymin>1</ymin><xmax>11</xmax><ymax>5</ymax></bndbox></object>
  <object><name>dog</name>
    <bndbox><xmin>0</xmin><ymin>0</ymin><xmax>12</xmax><ymax>10</ymax></bndbox><difficult>1</difficult></object>
</annotation>
""",
    # The XML's size is twice the image's: the fork normalises by the
    # XML's (and warns). A box past the edge is kept (with a warning).
    "b": """<?xml version="1.0"?>
<annotation>
  <size>
    <width>18</width>
    <height>14</height>
  </size>
  <object>
    <name>bird</name>
    <bndbox><xmin>2</xmin><ymin>3</ymin><xmax>20</xmax><ymax>13</ymax></bndbox>
  </object>
  <object>
    <name>cat</name>
    <difficult>1</difficult>
    <bndbox><xmin>4</xmin><ymin>4</ymin><xmax>8</xmax><ymax>9</ymax></bndbox>
  </object>
  <object>
    <name>bird</name>
    <bndbox><xmin>0</xmin><ymin>0</ymin><xmax>5</xmax><ymax>5</ymax></bndbox>
  </object>
</annotation>
""",
    # No size element: the image's size (a warning). A coordinate that is
    # no integer reads as 0 (ptree's get with a default), as VOC2012's
    # 2011_003353.xml has one.
    "c": """<annotation><!-- no size -->
  <object><name>cat</name><bndbox><xmin>1</xmin><ymin>1.7</ymin><xmax>6</xmax><ymax>7</ymax></bndbox></object>
</annotation>
""",
}

# The fork's COCO JSON (ReadJSONToAnnotatedDatum): category ids looked up
# as the text written (18 is the name "18"), bbox [x, y, w, h], iscrowd a
# difficult box; b's width is no integer, so both sizes are the image's.
JSON = {
    "a": """{"image": {"file_name": "a.jpg", "height": 10, "width": 12, "id": 5},
 "annotation": [
  {"category_id": "dog", "bbox": [1.5, 2, 5.25, 7], "iscrowd": 0, "id": 1},
  {"category_id": 18, "bbox": [0, 0, 12, 10], "iscrowd": 1},
  {"category_id": "dog", "bbox": [3, 1, 8, 4.5]}
 ]}
""",
    "b": """{"image": {"height": "14", "width": 18.0},
 "annotation": [{"category_id": "bird", "bbox": ["2", 3, 4, 1e0], "iscrowd": true}]}
""",
}

TXT = {
    "a": "2 1 2 7 9\n1 3.5 1 11 5.25\n2 0 0 12 10\n",
    "b": "3 2 3 8.5 6\n",
}


def ptree_int(s):
    try:
        return int(s.strip(), 10)
    except (ValueError, AttributeError):
        return None


def xml_groups(path, img_h, img_w):
    root = ET.parse(path).getroot()
    assert root.tag == "annotation"
    h = w = None
    size = root.find("size")
    if size is not None:
        he, we = size.find("height"), size.find("width")
        h = ptree_int(he.text) if he is not None else None
        w = ptree_int(we.text) if we is not None else None
    if h is None or w is None:
        h, w = img_h, img_w
    groups = []
    for obj in root:
        if obj.tag != "object":
            continue
        anno = None
        difficult = False
        for e in obj:
            if e.tag == "name":
                anno = add(groups, NAME_TO_LABEL[e.text])
            elif e.tag == "difficult":
                difficult = e.text == "1"
            elif e.tag == "bndbox":
                c = []
                for k in ("xmin", "ymin", "xmax", "ymax"):
                    v = e.find(k)
                    n = ptree_int(v.text) if v is not None else None
                    c.append(0 if n is None else n)
                box(anno, [F32(v) for v in c], w, h, difficult)
    return groups


def ptree(v):
    """A JSON value as boost's read_json keeps it: (text, [(key, node)])."""
    if isinstance(v, list) and v and isinstance(v[0], tuple) or v == []:
        return "", [(k, ptree(x)) for k, x in v] if v and isinstance(v[0], tuple) else []
    if isinstance(v, list):
        return "", [("", ptree(x)) for x in v]
    if v is True or v is False:
        return ("true" if v else "false"), []
    if v is None:
        return "null", []
    return v, []


def pget(node, path):
    for k in path.split("."):
        node = next((c for kk, c in node[1] if kk == k), None)
        if node is None:
            return None
    return node


def json_groups(path, img_h, img_w):
    tree = ptree(json.loads(open(path).read(), object_pairs_hook=lambda p: list(p),
                            parse_int=str, parse_float=str, parse_constant=str))
    he, we = pget(tree, "image.height"), pget(tree, "image.width")
    h = ptree_int(he[0]) if he else None
    w = ptree_int(we[0]) if we else None
    if h is None or w is None:
        h, w = img_h, img_w
    groups = []
    for _, obj in pget(tree, "annotation")[1]:
        anno = add(groups, NAME_TO_LABEL[pget(obj, "category_id")[0]])
        c = pget(obj, "iscrowd")
        crowd = c is not None and (ptree_int(c[0]) or 0) != 0
        x, y, bw, bh = [F32(float(v[0])) for _, v in pget(obj, "bbox")[1]]
        box(anno, [x, y, F32(x + bw), F32(y + bh)], w, h, crowd)
    return groups


def txt_groups(path, img_h, img_w):
    vals = open(path).read().split()
    groups = []
    for i in range(0, len(vals), 5):
        anno = add(groups, int(vals[i]))
        box(anno, [F32(float(v)) for v in vals[i + 1:i + 5]], img_w, img_h, False)
    return groups


def add(groups, label):
    for g in groups:
        if g["label"] == label:
            a = {"id": len(g["annos"])}
            g["annos"].append(a)
            return a
    a = {"id": 0}
    groups.append({"label": label, "annos": [a]})
    return a


def box(anno, c, w, h, difficult):
    fw, fh = F32(w), F32(h)
    anno["box"] = [float(c[0] / fw), float(c[1] / fh), float(c[2] / fw), float(c[3] / fh)]
    anno["difficult"] = difficult


def planes(img):
    if img.ndim == 2:
        img = img[:, :, None]
    return np.ascontiguousarray(img.transpose(2, 0, 1)).tobytes()


def records(out, list_name, detection=True, label_type="xml", encode_type="", gray=False, rh=0, rw=0, guess=False):
    recs = []
    lines = [l.split() for l in open(os.path.join(out, list_name)) if l.strip()]
    for i, (image, second) in enumerate(lines):
        path = os.path.join(out, image)
        img = cv2.imread(path, cv2.IMREAD_GRAYSCALE if gray else cv2.IMREAD_COLOR)
        if img is None:
            continue
        oh, ow = img.shape[:2]
        if rh > 0:
            img = cv2.resize(img, (rw, rh), interpolation=cv2.INTER_LINEAR)
        ext = os.path.splitext(image)[1][1:].lower()
        if guess:
            # --encoded without --encode_type: the fork guesses ".jpg" (the
            # dot kept), which never matches the extension, so every image
            # is re-encoded in its file's format.
            encode_type = ext
        r = {"key": "%08d_%s" % (i, image), "channels": 1 if gray else 3,
             "height": img.shape[0], "width": img.shape[1],
             "label": -1 if detection else int(second)}
        if encode_type and not guess and rh == 0 and (ext == encode_type or (encode_type == "jpg" and ext == "jpeg")):
            r["encoded"] = True
            r["data"] = open(path, "rb").read().hex()
        elif encode_type:
            # Re-encoded: the bytes are the encoder's; the pixels must be
            # these within the format's loss.
            r["encoded"] = True
            r["reencoded"] = encode_type
            r["pixels"] = planes(img).hex()
        else:
            r["encoded"] = False
            r["data"] = planes(img).hex()
            r["resized"] = rh > 0
            r["jpeg"] = ext in ("jpg", "jpeg")
        if detection:
            r["type"] = 0
            apath = os.path.join(out, second)
            if not os.path.exists(apath):
                r["groups"] = []
            elif label_type == "xml":
                r["groups"] = xml_groups(apath, oh, ow)
            elif label_type == "json":
                r["groups"] = json_groups(apath, oh, ow)
            else:
                r["groups"] = txt_groups(apath, oh, ow)
        recs.append(r)
    return recs


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "JPEGImages"), exist_ok=True)
    os.makedirs(os.path.join(out, "Annotations"), exist_ok=True)
    os.makedirs(os.path.join(out, "labels"), exist_ok=True)
    rng = np.random.RandomState(7)
    # Smooth images, so that JPEG's loss stays small.
    def smooth(h, w, c):
        y, x = np.mgrid[0:h, 0:w]
        base = [40 + 8 * x + 5 * y + 30 * k for k in range(c)]
        img = np.stack(base, axis=-1).astype(np.float32) + rng.randint(0, 4, (h, w, c))
        return np.clip(img, 0, 255).astype(np.uint8)
    cv2.imwrite(os.path.join(out, "JPEGImages/a.jpg"), smooth(10, 12, 3), [cv2.IMWRITE_JPEG_QUALITY, 90])
    cv2.imwrite(os.path.join(out, "JPEGImages/b.png"), smooth(7, 9, 3))
    cv2.imwrite(os.path.join(out, "JPEGImages/c.png"), smooth(8, 8, 1)[:, :, 0])
    cv2.imwrite(os.path.join(out, "JPEGImages/d.jpg"), smooth(6, 5, 3), [cv2.IMWRITE_JPEG_QUALITY, 90])
    with open(os.path.join(out, "JPEGImages/bad.jpg"), "wb") as f:
        f.write(b"not an image\n")
    for k, v in XML.items():
        with open(os.path.join(out, "Annotations", k + ".xml"), "w") as f:
            f.write(v)
    for k, v in JSON.items():
        with open(os.path.join(out, "labels", k + ".json"), "w") as f:
            f.write(v)
    for k, v in TXT.items():
        with open(os.path.join(out, "labels", k + ".txt"), "w") as f:
            f.write(v)
    with open(os.path.join(out, "labelmap.prototxt"), "w") as f:
        f.write(LABELMAP)
    lists = {
        # create_list.sh's lines; d has no annotation file, bad.jpg is no
        # image.
        "voc.txt": "JPEGImages/a.jpg Annotations/a.xml\nJPEGImages/bad.jpg Annotations/a.xml\n"
                   "JPEGImages/b.png Annotations/b.xml\nJPEGImages/c.png Annotations/c.xml\n"
                   "JPEGImages/d.jpg Annotations/d.xml\n",
        "txt.txt": "JPEGImages/a.jpg labels/a.txt\nJPEGImages/b.png labels/b.txt\n",
        "json.txt": "JPEGImages/a.jpg labels/a.json\nJPEGImages/b.png labels/b.json\n",
        "cls.txt": "JPEGImages/a.jpg 3\nJPEGImages/b.png 0\n\nJPEGImages/c.png 7\n",
    }
    for k, v in lists.items():
        with open(os.path.join(out, k), "w") as f:
            f.write(v)
    # Each case: the command's flags (after ROOT/ LIST DB) and the records.
    cases = [
        {"name": "create_data", "list": "voc.txt",
         "flags": ["--anno_type=detection", "--label_map_file=@/labelmap.prototxt", "--check_label=True",
                   "--min_dim=0", "--max_dim=0", "--resize_height=0", "--resize_width=0", "--backend=lmdb",
                   "--shuffle=False", "--check_size=False", "--encode_type=jpg", "--encoded=True", "--gray=False"],
         "records": records(out, "voc.txt", encode_type="jpg")},
        {"name": "raw", "list": "voc.txt",
         "flags": ["--anno_type", "detection", "--label_map_file", "@/labelmap.prototxt"],
         "records": records(out, "voc.txt")},
        {"name": "gray_resize", "list": "voc.txt",
         "flags": ["--anno_type=detection", "--label_map_file=@/labelmap.prototxt", "--gray",
                   "--resize_height=6", "--resize_width=5", "--backend=leveldb"],
         "records": records(out, "voc.txt", gray=True, rh=6, rw=5)},
        {"name": "png", "list": "voc.txt",
         "flags": ["--anno_type=detection", "--label_map_file=@/labelmap.prototxt", "--encode_type=png"],
         "records": records(out, "voc.txt", encode_type="png")},
        {"name": "encoded_guess", "list": "voc.txt",
         "flags": ["--anno_type=detection", "--label_map_file=@/labelmap.prototxt", "--encoded"],
         "records": records(out, "voc.txt", guess=True)},
        {"name": "txt", "list": "txt.txt",
         "flags": ["--anno_type=detection", "--label_type=txt", "--label_map_file=@/labelmap.prototxt"],
         "records": records(out, "txt.txt", label_type="txt")},
        {"name": "json", "list": "json.txt",
         "flags": ["--anno_type=detection", "--label_type=json", "--label_map_file=@/labelmap.prototxt", "--check_label"],
         "records": records(out, "json.txt", label_type="json")},
        {"name": "classification", "list": "cls.txt", "flags": [],
         "records": records(out, "cls.txt", detection=False)},
    ]
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

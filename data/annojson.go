package data

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"dsgd/caffe/caffepb"
)

// ptree is a node of an annotation file as boost's property tree reads
// it, which the fork's readers walk: an XML element (key its name, text
// its text, line where it starts, children its child elements in order)
// or a JSON value (key its member name, text a scalar's text, children an
// object's members or an array's elements, with key "").
type ptree struct {
	key      string
	text     string
	line     int
	children []*ptree
}

// child is n's first child with key, as ptree's get_child, or nil.
func (n *ptree) child(key string) *ptree {
	for _, c := range n.children {
		if c.key == key {
			return c
		}
	}
	return nil
}

// path follows a dotted path of keys from n, or returns nil.
func (n *ptree) path(p string) *ptree {
	for _, k := range strings.Split(p, ".") {
		if n = n.child(k); n == nil {
			return nil
		}
	}
	return n
}

// parseJSONTree reads one JSON document into a ptree tree.
func parseJSONTree(src []byte) (*ptree, error) {
	if len(src) > maxXMLSize {
		return nil, fmt.Errorf("%d bytes; dsgd reads annotation files of at most %d", len(src), maxXMLSize)
	}
	d := json.NewDecoder(bytes.NewReader(src))
	d.UseNumber()
	lineAt := func() int { return 1 + bytes.Count(src[:min(int(d.InputOffset()), len(src))], []byte("\n")) }
	var value func(depth int) (*ptree, error)
	value = func(depth int) (*ptree, error) {
		if depth > maxXMLDepth {
			return nil, fmt.Errorf("line %d: values nest deeper than %d", lineAt(), maxXMLDepth)
		}
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		n := &ptree{}
		switch t := tok.(type) {
		case json.Delim:
			if t != '{' && t != '[' {
				return nil, fmt.Errorf("line %d: unexpected %q", lineAt(), t)
			}
			for d.More() {
				key := ""
				if t == '{' {
					k, err := d.Token()
					if err != nil {
						return nil, err
					}
					key, _ = k.(string)
				}
				c, err := value(depth + 1)
				if err != nil {
					return nil, err
				}
				c.key = key
				n.children = append(n.children, c)
			}
			if _, err := d.Token(); err != nil {
				return nil, err
			}
		case string:
			n.text = t
		case json.Number:
			n.text = string(t)
		case bool:
			n.text = strconv.FormatBool(t)
		case nil:
			n.text = "null"
		}
		return n, nil
	}
	root, err := value(0)
	if err != nil {
		return nil, fmt.Errorf("line %d: %v", lineAt(), err)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("line %d: more after the JSON value", lineAt())
	}
	return root, nil
}

// ParseCOCOJSON reads a detection annotation file in the JSON form SSD's
// fork's ReadJSONToAnnotatedDatum reads (its data/coco scripts write
// them): {"image": {"width", "height"}, "annotation": [{"category_id",
// "bbox": [x, y, w, h], "iscrowd"}, ...]}, for an image of imgH×imgW
// pixels. As the fork: boxes are normalised by image.width and
// image.height when both are integers, else (with a warning) by the
// image's size; category_id is looked up in nameToLabel as written (18
// and "18" are both the name "18"); the groups are ParseVOCXML's; a box
// is difficult when iscrowd is a non-zero integer. What the fork stops
// at (no annotation, no category_id, a name not in the map, a bbox
// without 4 numbers) is an error naming the file, and the line where
// there is one.
func ParseCOCOJSON(name string, src []byte, imgH, imgW int, nameToLabel map[string]int32, warn func(string)) ([]*caffepb.AnnotationGroup, error) {
	root, err := parseJSONTree(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	h, w := root.annoSize("image.height", "image.width", ".", imgH, imgW, name, warn)
	if warn != nil && (h != imgH || w != imgW) {
		warn(fmt.Sprintf("%s: image %dx%d differs from the image's real %dx%d (the fork normalises by the file's)", name, w, h, imgW, imgH))
	}
	if w == 0 || h == 0 {
		return nil, fmt.Errorf("%s: no valid image width/height (%dx%d)", name, w, h)
	}
	annos := root.child("annotation")
	if annos == nil {
		return nil, fmt.Errorf("%s: no \"annotation\" member", name)
	}
	var b annoBuilder
	for i, obj := range annos.children {
		at := fmt.Sprintf("%s: annotation %d", name, i)
		cat := obj.child("category_id")
		if cat == nil {
			return nil, fmt.Errorf("%s: no category_id", at)
		}
		label, ok := nameToLabel[cat.text]
		if !ok {
			return nil, fmt.Errorf("%s: category_id %q is not a name in the label map", at, cat.text)
		}
		a, err := b.add(label)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		crowd := false
		if e := obj.child("iscrowd"); e != nil {
			v, ok := ptreeInt(e.text)
			crowd = ok && v != 0
		}
		bb := obj.child("bbox")
		if bb == nil {
			return nil, fmt.Errorf("%s: no bbox", at)
		}
		if len(bb.children) != 4 {
			return nil, fmt.Errorf("%s: bbox has %d values, want [x, y, width, height]", at, len(bb.children))
		}
		var v [4]float32
		for j, c := range bb.children {
			f, err := strconv.ParseFloat(strings.TrimSpace(c.text), 32)
			if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || strings.ContainsAny(c.text, "xXpP_") {
				return nil, fmt.Errorf("%s: bbox value %q is not a finite float", at, c.text)
			}
			v[j] = float32(f)
		}
		x0, y0, x1, y1 := v[0], v[1], v[0]+v[2], v[1]+v[3]
		boxWarnings(at, x0, y0, x1, y1, w, h, warn)
		setBox(a, x0, y0, x1, y1, w, h, crowd)
	}
	return b.groups, nil
}

// annoSize is the integer height and width at paths hPath and wPath of n
// (an annotation's declared image size, by which the fork normalises its
// boxes), or the image's own imgH×imgW, with a warning naming the file
// and the paths (their keys joined by sep: the format's own way of
// writing them), when either is missing or not an integer.
func (n *ptree) annoSize(hPath, wPath, sep string, imgH, imgW int, name string, warn func(string)) (h, w int) {
	var hOK, wOK bool
	if e := n.path(hPath); e != nil {
		h, hOK = ptreeInt(e.text)
	}
	if e := n.path(wPath); e != nil {
		w, wOK = ptreeInt(e.text)
	}
	if !hOK || !wOK {
		if warn != nil {
			warn(fmt.Sprintf("%s: no integer %s and %s: boxes normalised by the image's %dx%d", name, strings.ReplaceAll(hPath, ".", sep), strings.ReplaceAll(wPath, ".", sep), imgW, imgH))
		}
		return imgH, imgW
	}
	return h, w
}

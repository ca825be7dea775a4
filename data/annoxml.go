package data

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"dsgd/caffe/caffepb"
)

// Limits on what ParseVOCXML (and ParseCOCOJSON) reads, so that a hostile file cannot exhaust
// memory or the stack.
const (
	maxXMLSize    = 16 << 20 // and JSON's
	maxXMLDepth   = 64
	maxAnnoBoxes  = 1 << 16
	maxTxtAnnoLen = 16 << 20
)

// parseXMLTree reads src into a tree under an unnamed root whose children
// are the document's top-level elements.
func parseXMLTree(src []byte) (*ptree, error) {
	if len(src) > maxXMLSize {
		return nil, fmt.Errorf("%d bytes; dsgd reads annotation files of at most %d", len(src), maxXMLSize)
	}
	d := xml.NewDecoder(bytes.NewReader(src))
	// rapidxml reads the bytes as they are, whatever encoding the
	// declaration names (annotation tools write ISO-8859-1 ones).
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	root := &ptree{}
	stack := []*ptree{root}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := d.InputPos()
		top := stack[len(stack)-1]
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) > maxXMLDepth {
				return nil, fmt.Errorf("line %d: elements nest deeper than %d", line, maxXMLDepth)
			}
			n := &ptree{key: t.Name.Local, line: line}
			if t.Name.Space != "" {
				n.key = t.Name.Space + ":" + t.Name.Local
			}
			top.children = append(top.children, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			// rapidxml, under boost's read_xml, skips a run of white
			// space before a tag and keeps any other run whole.
			if len(stack) > 1 && len(bytes.TrimSpace(t)) > 0 {
				top.text += string(t)
			}
		}
	}
	return root, nil
}

// ptreeInt parses s as boost's ptree get<int> does (a stream extraction):
// optional white space, an optional sign, decimal digits, optional white
// space, nothing else, within int's range.
func ptreeInt(s string) (int, bool) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil {
		return 0, false
	}
	return int(v), true
}

// annoBuilder adds annotations to groups by label as SSD's fork does: a
// label's first box opens a group (groups keep the order of their first
// box) and instance ids count up within each group from 0.
type annoBuilder struct {
	groups []*caffepb.AnnotationGroup
	n      int
}

func (b *annoBuilder) add(label int32) (*caffepb.Annotation, error) {
	if b.n >= maxAnnoBoxes {
		return nil, fmt.Errorf("more than %d boxes", maxAnnoBoxes)
	}
	b.n++
	for _, g := range b.groups {
		if g.GetGroupLabel() == label {
			id := int32(len(g.Annotation))
			a := &caffepb.Annotation{InstanceId: &id}
			g.Annotation = append(g.Annotation, a)
			return a, nil
		}
	}
	id := int32(0)
	a := &caffepb.Annotation{InstanceId: &id}
	l := label
	b.groups = append(b.groups, &caffepb.AnnotationGroup{GroupLabel: &l, Annotation: []*caffepb.Annotation{a}})
	return a, nil
}

// setBox stores a box normalised by w×h in float32, as the fork does.
func setBox(a *caffepb.Annotation, xmin, ymin, xmax, ymax float32, w, h int, difficult bool) {
	fw, fh := float32(w), float32(h)
	x0, y0, x1, y1 := xmin/fw, ymin/fh, xmax/fw, ymax/fh
	a.Bbox = &caffepb.NormalizedBBox{Xmin: &x0, Ymin: &y0, Xmax: &x1, Ymax: &y1, Difficult: &difficult}
}

// boxWarnings are the fork's warnings about a box outside the image or
// turned inside out.
func boxWarnings(name string, xmin, ymin, xmax, ymax float32, w, h int, warn func(string)) {
	if warn == nil {
		return
	}
	fw, fh := float32(w), float32(h)
	if xmin > fw || ymin > fh || xmax > fw || ymax > fh || xmin < 0 || ymin < 0 || xmax < 0 || ymax < 0 {
		warn(fmt.Sprintf("%s: bounding box (%g,%g)-(%g,%g) exceeds the image boundary %dx%d", name, xmin, ymin, xmax, ymax, w, h))
	}
	if xmin > xmax || ymin > ymax {
		warn(fmt.Sprintf("%s: bounding box (%g,%g)-(%g,%g) irregular", name, xmin, ymin, xmax, ymax))
	}
}

// ParseVOCXML reads a PASCAL VOC annotation file as SSD's fork's
// ReadXMLToAnnotatedDatum does, for an image of imgH×imgW pixels (its
// real size, before any resize): boxes are normalised by the file's
// size/width and size/height when both are integers, else (with a
// warning) by the image's; a size that differs from the image's is
// warned of and still used, as the fork does. Every object's name must be
// in nameToLabel (compared as written, white space included, as the fork
// does); its boxes go to groups by label in the order the labels first
// appear, with instance ids counting from 0 within each group, and carry
// the object's difficult flag (set when the element's text is exactly
// "1"). A box coordinate that is missing or not an integer is read as 0,
// as the fork does, with a warning. name names the file in errors and
// warnings; warn, when set, is told of the fork's warnings and those.
func ParseVOCXML(name string, src []byte, imgH, imgW int, nameToLabel map[string]int32, warn func(string)) ([]*caffepb.AnnotationGroup, error) {
	root, err := parseXMLTree(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	anno := root.child("annotation")
	if anno == nil {
		return nil, fmt.Errorf("%s: no <annotation> element at the top", name)
	}
	h, w := anno.annoSize("size.height", "size.width", "/", imgH, imgW, name, warn)
	if warn != nil && h != imgH {
		warn(fmt.Sprintf("%s: size/height %d differs from the image's %d (the fork normalises by the file's)", name, h, imgH))
	}
	if warn != nil && w != imgW {
		warn(fmt.Sprintf("%s: size/width %d differs from the image's %d (the fork normalises by the file's)", name, w, imgW))
	}
	if w == 0 || h == 0 {
		return nil, fmt.Errorf("%s: no valid image width/height (%dx%d)", name, w, h)
	}
	var b annoBuilder
	for _, obj := range anno.children {
		if obj.key != "object" {
			continue
		}
		var a *caffepb.Annotation
		difficult := false
		for _, e := range obj.children {
			switch e.key {
			case "name":
				label, ok := nameToLabel[e.text]
				if !ok {
					return nil, fmt.Errorf("%s:%d: object name %q is not in the label map", name, e.line, e.text)
				}
				if a, err = b.add(label); err != nil {
					return nil, fmt.Errorf("%s: %v", name, err)
				}
			case "difficult":
				difficult = e.text == "1"
			case "bndbox":
				if a == nil {
					return nil, fmt.Errorf("%s:%d: <bndbox> before the object's <name>: the fork stops at it", name, e.line)
				}
				var c [4]int
				for i, k := range [4]string{"xmin", "ymin", "xmax", "ymax"} {
					// The fork's ptree get(k, 0) reads a coordinate that
					// is missing or not an integer as 0; VOC2012 itself
					// has such values (2011_003353.xml's ymin
					// 45.70000076293945), so dsgd does the same, warning.
					v := e.child(k)
					if v == nil {
						if warn != nil {
							warn(fmt.Sprintf("%s:%d: <bndbox> has no <%s>: read as 0, as the fork does", name, e.line, k))
						}
						continue
					}
					n, ok := ptreeInt(v.text)
					if !ok && warn != nil {
						warn(fmt.Sprintf("%s:%d: <%s> %q is not an integer: read as 0, as the fork does", name, v.line, k, v.text))
					}
					c[i] = n
				}
				x0, y0, x1, y1 := float32(c[0]), float32(c[1]), float32(c[2]), float32(c[3])
				boxWarnings(fmt.Sprintf("%s:%d", name, e.line), x0, y0, x1, y1, w, h, warn)
				setBox(a, x0, y0, x1, y1, w, h, difficult)
			}
		}
	}
	return b.groups, nil
}

// ParseTxtAnno reads a plain-text annotation file as SSD's fork's
// ReadTxtToAnnotatedDatum does: "label xmin ymin xmax ymax" in pixels,
// normalised by the image's imgH×imgW, grouped by label as ParseVOCXML
// groups them, never difficult. Where the fork stops silently at the
// first field that does not parse, ParseTxtAnno refuses the file, naming
// the line.
func ParseTxtAnno(name string, src []byte, imgH, imgW int, warn func(string)) ([]*caffepb.AnnotationGroup, error) {
	if len(src) > maxTxtAnnoLen {
		return nil, fmt.Errorf("%s: %d bytes; dsgd reads annotation files of at most %d", name, len(src), maxTxtAnnoLen)
	}
	if imgH < 1 || imgW < 1 {
		return nil, fmt.Errorf("%s: no valid image width/height (%dx%d)", name, imgW, imgH)
	}
	var b annoBuilder
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 4096), maxTxtAnnoLen)
	line := 0
	var fields []string
	var lines []int
	for sc.Scan() {
		line++
		for _, f := range strings.Fields(sc.Text()) {
			fields = append(fields, f)
			lines = append(lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(fields)%5 != 0 {
		return nil, fmt.Errorf("%s:%d: %d fields: want \"label xmin ymin xmax ymax\" per box", name, lines[len(lines)-1], len(fields))
	}
	for i := 0; i < len(fields); i += 5 {
		at := fmt.Sprintf("%s:%d", name, lines[i])
		l, err := strconv.ParseInt(fields[i], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%s: label %q is not an integer", at, fields[i])
		}
		var c [4]float32
		for j := range 4 {
			v, err := strconv.ParseFloat(fields[i+1+j], 32)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s: coordinate %q is not a finite number", at, fields[i+1+j])
			}
			c[j] = float32(v)
		}
		a, err := b.add(int32(l))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		boxWarnings(at, c[0], c[1], c[2], c[3], imgW, imgH, warn)
		setBox(a, c[0], c[1], c[2], c[3], imgW, imgH, false)
	}
	return b.groups, nil
}

package data

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dsgd/caffe/caffepb"
)

var vocLabels = map[string]int32{"cat": 1, "dog": 2, "bird": 3}

// boxes flattens groups to "label:id:xmin,ymin,xmax,ymax[:d]" strings
// in order (":d" for difficult).
func boxes(gs []*caffepb.AnnotationGroup) []string {
	var out []string
	for _, g := range gs {
		for _, a := range g.Annotation {
			s := "nobox"
			if b := a.GetBbox(); b != nil {
				s = fmt.Sprintf("%.4f,%.4f,%.4f,%.4f", b.GetXmin(), b.GetYmin(), b.GetXmax(), b.GetYmax())
				if b.GetDifficult() {
					s += ":d"
				}
			}
			out = append(out, fmt.Sprintf("%d:%d:%s", g.GetGroupLabel(), a.GetInstanceId(), s))
		}
	}
	return out
}

// TestParseVOCXML holds the reader to the fork's ReadXMLToAnnotatedDatum
// on the cases its code decides: which size normalises, white space,
// difficult's placement and text, group order and instance ids.
func TestParseVOCXML(t *testing.T) {
	obj := func(name, extra string, x0, y0, x1, y1 string) string {
		return "<object><name>" + name + "</name>" + extra + "<bndbox><xmin>" + x0 + "</xmin><ymin>" + y0 + "</ymin><xmax>" + x1 + "</xmax><ymax>" + y1 + "</ymax></bndbox></object>"
	}
	size := "<size><width>10</width><height>20</height></size>"
	for _, tc := range []struct {
		name, xml string
		want      []string
		warn      string
		big       bool // the image is 40×40, not the 10×20 of size
	}{
		{"size from the file", "<annotation>" + size + obj("dog", "", "1", "2", "5", "10") + "</annotation>",
			[]string{"2:0:0.1000,0.1000,0.5000,0.5000"}, "differs from the image's", true},
		{"no size: the image's", "<annotation>" + obj("dog", "", "1", "2", "5", "10") + "</annotation>",
			[]string{"2:0:0.0250,0.0500,0.1250,0.2500"}, "no integer size", true},
		{"a size that is no integer: the image's", "<annotation><size><width>10.0</width><height>20</height></size>" + obj("dog", "", "4", "2", "5", "10") + "</annotation>",
			[]string{"2:0:0.1000,0.0500,0.1250,0.2500"}, "no integer size", true},
		{"groups by first appearance, ids per group", "<annotation>" + size + obj("cat", "", "0", "0", "1", "1") + obj("dog", "", "0", "0", "1", "1") + obj("cat", "", "0", "0", "2", "2") + obj("bird", "", "0", "0", "1", "1") + obj("dog", "", "0", "0", "2", "2") + "</annotation>",
			[]string{"1:0:0.0000,0.0000,0.1000,0.0500", "1:1:0.0000,0.0000,0.2000,0.1000", "2:0:0.0000,0.0000,0.1000,0.0500", "2:1:0.0000,0.0000,0.2000,0.1000", "3:0:0.0000,0.0000,0.1000,0.0500"}, "", false},
		{"difficult before the box", "<annotation>" + size + obj("dog", "<difficult>1</difficult>", "0", "0", "10", "20") + "</annotation>",
			[]string{"2:0:0.0000,0.0000,1.0000,1.0000:d"}, "", false},
		{"difficult only when exactly 1", "<annotation>" + size + obj("dog", "<difficult> 1</difficult>", "0", "0", "10", "20") + "</annotation>",
			[]string{"2:0:0.0000,0.0000,1.0000,1.0000"}, "", false},
		{"white space around numbers", "<annotation><size><width> 10\n</width><height>\n\t20 </height></size>" + obj("dog", "", " 5 ", "\n10\n", "10", "20") + "</annotation>",
			[]string{"2:0:0.5000,0.5000,1.0000,1.0000"}, "", false},
		{"a box past the edge is kept", "<annotation>" + size + obj("dog", "", "-1", "0", "12", "20") + "</annotation>",
			[]string{"2:0:-0.1000,0.0000,1.2000,1.0000"}, "exceeds the image boundary", false},
		{"an object with no box", "<annotation>" + size + "<object><name>cat</name></object></annotation>",
			[]string{"1:0:nobox"}, "", false},
		{"other elements, comments and the declaration", "<?xml version=\"1.0\"?>\n<!-- c --><annotation><folder>VOC</folder>" + size + "<segmented>0</segmented>" + obj("bird", "<pose>x</pose><truncated>1</truncated>", "0", "0", "10", "20") + "</annotation>",
			[]string{"3:0:0.0000,0.0000,1.0000,1.0000"}, "", false},
		{"a float coordinate is 0, as VOC2012's 2011_003353.xml in the fork", "<annotation>" + size + obj("dog", "", "5", "45.70000076293945", "10", "20") + "</annotation>",
			[]string{"2:0:0.5000,0.0000,1.0000,1.0000"}, `a.xml:1: <ymin> "45.70000076293945" is not an integer: read as 0, as the fork does`, false},
		{"a missing coordinate is 0", "<annotation>" + size + "<object><name>dog</name><bndbox><xmin>5</xmin><ymin>10</ymin><xmax>10</xmax></bndbox></object></annotation>",
			[]string{"2:0:0.5000,0.5000,1.0000,0.0000"}, "<bndbox> has no <ymax>: read as 0", false},
		{"an encoding declared, attributes", "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<annotation verified=\"yes\">" + size + obj("cat", "", "0", "0", "10", "20") + "</annotation>",
			[]string{"1:0:0.0000,0.0000,1.0000,1.0000"}, "", false},
		{"no objects", "<annotation>" + size + "</annotation>", nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warns []string
			h, w := 20, 10
			if tc.big {
				h, w = 40, 40
			}
			gs, err := ParseVOCXML("a.xml", []byte(tc.xml), h, w, vocLabels, func(m string) { warns = append(warns, m) })
			if err != nil {
				t.Fatal(err)
			}
			if got := boxes(gs); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("boxes %q, want %q", got, tc.want)
			}
			if w := strings.Join(warns, "\n"); (tc.warn == "") != (w == "") || !strings.Contains(w, tc.warn) {
				t.Errorf("warnings %q, want one with %q", w, tc.warn)
			}
		})
	}
}

// TestParseVOCXMLRefusals: every file the fork stops at (or reads wrong,
// silently) is an error naming the file, and the line where there is one.
func TestParseVOCXMLRefusals(t *testing.T) {
	size := "<size><width>10</width><height>20</height></size>"
	for _, tc := range []struct{ name, xml, want string }{
		{"unknown name", "<annotation>" + size + "<object>\n<name>horse</name></object></annotation>", `a.xml:2: object name "horse" is not in the label map`},
		{"name with white space", "<annotation>" + size + "<object><name> dog</name></object></annotation>", `object name " dog" is not in the label map`},
		{"box before the name", "<annotation>" + size + "<object><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2</xmax><ymax>2</ymax></bndbox><name>dog</name></object></annotation>", "a.xml:1: <bndbox> before the object's <name>"},
		{"zero size", "<annotation><size><width>0</width><height>20</height></size></annotation>", "a.xml: no valid image width/height (0x20)"},
		{"no annotation root", "<doc/>", "a.xml: no <annotation> element at the top"},
		{"not XML", "<annotation><size>", "a.xml: XML syntax error"},
		{"empty", "", "a.xml: no <annotation> element"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseVOCXML("a.xml", []byte(tc.xml), 40, 40, vocLabels, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// TestParseTxtAnno: the fork's "label xmin ymin xmax ymax" boxes by the
// image's size, grouped as the XML's; what it stops at silently, refused.
func TestParseTxtAnno(t *testing.T) {
	gs, err := ParseTxtAnno("a.txt", []byte("2 1 2 5 10\n1 0 0 10 20\n\n2 0.5 0 10 20 2 0 0 1 1\n"), 20, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2:0:0.1000,0.1000,0.5000,0.5000", "2:1:0.0500,0.0000,1.0000,1.0000", "2:2:0.0000,0.0000,0.1000,0.0500", "1:0:0.0000,0.0000,1.0000,1.0000"}
	if got := boxes(gs); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("boxes %q, want %q", got, want)
	}
	for _, tc := range []struct{ name, txt, want string }{
		{"short line", "2 1 2 5 10\n1 0 0\n", "a.txt:2: 8 fields"},
		{"label not an integer", "x 1 2 5 10\n", `a.txt:1: label "x" is not an integer`},
		{"coordinate not a number", "2 1 2 5 ten\n", `a.txt:1: coordinate "ten" is not a finite number`},
		{"nan", "2 1 2 5 nan\n", `coordinate "nan" is not a finite number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTxtAnno("a.txt", []byte(tc.txt), 20, 10, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// TestParseAnnoList: two fields a line, blank lines skipped, anything
// else refused naming the line.
func TestParseAnnoList(t *testing.T) {
	es, err := ParseAnnoList("l.txt", bufio.NewReader(strings.NewReader("a.jpg a.xml\n\n  b.jpg\tb.xml  \r\n")))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0] != (AnnoListEntry{"a.jpg", "a.xml", 1}) || es[1] != (AnnoListEntry{"b.jpg", "b.xml", 3}) {
		t.Fatalf("entries %+v", es)
	}
	for _, tc := range []struct{ name, list, want string }{
		{"one field", "a.jpg a.xml\nb.jpg\n", `l.txt:2: 1 fields ["b.jpg"]`},
		{"a space in a path", "my image.jpg a.xml\n", "l.txt:1: 3 fields"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseAnnoList("l.txt", bufio.NewReader(strings.NewReader(tc.list)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// FuzzParseVOCXML: any file is boxes or an error, never a panic; every
// box it returns has an id and a label from the map.
func FuzzParseVOCXML(f *testing.F) {
	for _, n := range []string{"a", "b", "c"} {
		src, err := os.ReadFile(filepath.Join("testdata", "annoset", "Annotations", n+".xml"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add([]byte("<annotation><object><bndbox/></object></annotation>"))
	f.Fuzz(func(t *testing.T, src []byte) {
		gs, err := ParseVOCXML("f.xml", src, 7, 9, vocLabels, func(string) {})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.xml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, g := range gs {
			if g.GroupLabel == nil || len(g.Annotation) == 0 {
				t.Fatalf("group %v", g)
			}
			for i, a := range g.Annotation {
				if a.GetInstanceId() != int32(i) {
					t.Fatalf("instance id %d at %d", a.GetInstanceId(), i)
				}
			}
		}
	})
}

// FuzzParseTxtAnno: any file is boxes or an error naming it.
func FuzzParseTxtAnno(f *testing.F) {
	f.Add([]byte("2 1 2 7 9\n1 3.5 1 11 5.25\n"))
	f.Add([]byte("1 0 0\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		if _, err := ParseTxtAnno("f.txt", src, 7, 9, nil); err != nil && !strings.HasPrefix(err.Error(), "f.txt") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}

// FuzzParseAnnoList: any list is entries of two fields or an error
// naming the list.
func FuzzParseAnnoList(f *testing.F) {
	f.Add([]byte("a.jpg a.xml\n\nb.jpg b.xml\n"))
	f.Add([]byte("a.jpg\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		es, err := ParseAnnoList("l.txt", bufio.NewReader(strings.NewReader(string(src))))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "l.txt:") {
				t.Fatalf("error does not name the list: %v", err)
			}
			return
		}
		for _, e := range es {
			if e.Image == "" || e.Anno == "" || e.Line < 1 {
				t.Fatalf("entry %+v", e)
			}
		}
	})
}

// TestParseCOCOJSON holds the reader to the fork's
// ReadJSONToAnnotatedDatum: which size normalises, category ids as
// written, [x, y, w, h] boxes, iscrowd as difficult; and what it stops
// at, refused naming the file.
func TestParseCOCOJSON(t *testing.T) {
	labels := map[string]int32{"cat": 1, "18": 4, "1.5": 5}
	for _, tc := range []struct {
		name, json string
		want       []string
		warn       string
	}{
		{"sizes from the file", `{"image": {"width": 10, "height": 20}, "annotation": [{"category_id": 18, "bbox": [1, 2, 4, 8], "iscrowd": 1}]}`,
			[]string{"4:0:0.1000,0.1000,0.5000,0.5000:d"}, "differs from the image's real"},
		{"no image: the image's", `{"annotation": [{"category_id": "cat", "bbox": [4, 4, 36, 36]}]}`,
			[]string{"1:0:0.1000,0.1000,1.0000,1.0000"}, "no integer image.height"},
		{"a size that is no integer: both the image's", `{"image": {"width": 10.5, "height": 20}, "annotation": [{"category_id": "cat", "bbox": [0, 0, 40, 40]}]}`,
			[]string{"1:0:0.0000,0.0000,1.0000,1.0000"}, "no integer image.height"},
		{"ids as written, strings as numbers, crowds", `{"image": {"width": 40, "height": 40}, "annotation": [{"category_id": 1.5, "bbox": ["4", 0, 4, 4], "iscrowd": true}, {"category_id": "18", "bbox": [0, 0, 4e0, 4], "iscrowd": "2"}, {"category_id": 1.5, "bbox": [0, 0, 40, 40], "iscrowd": 0}]}`,
			[]string{"5:0:0.1000,0.0000,0.2000,0.1000", "5:1:0.0000,0.0000,1.0000,1.0000", "4:0:0.0000,0.0000,0.1000,0.1000:d"}, ""},
		{"an object of annotations", `{"image": {"width": 40, "height": 40}, "annotation": {"a": {"category_id": "cat", "bbox": [0, 0, 4, 4]}}}`,
			[]string{"1:0:0.0000,0.0000,0.1000,0.1000"}, ""},
		{"no annotations", `{"image": {"width": 40, "height": 40}, "annotation": []}`, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warns []string
			gs, err := ParseCOCOJSON("a.json", []byte(tc.json), 40, 40, labels, func(m string) { warns = append(warns, m) })
			if err != nil {
				t.Fatal(err)
			}
			if got := boxes(gs); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("boxes %q, want %q", got, tc.want)
			}
			if w := strings.Join(warns, "\n"); (tc.warn == "") != (w == "") || !strings.Contains(w, tc.warn) {
				t.Errorf("warnings %q, want one with %q", w, tc.warn)
			}
		})
	}
	for _, tc := range []struct{ name, json, want string }{
		{"unknown category", `{"annotation": [{"category_id": 3, "bbox": [0, 0, 1, 1]}]}`, `a.json: annotation 0: category_id "3" is not a name in the label map`},
		{"no category", `{"annotation": [{"bbox": [0, 0, 1, 1]}]}`, "a.json: annotation 0: no category_id"},
		{"no bbox", `{"annotation": [{"category_id": "cat"}]}`, "annotation 0: no bbox"},
		{"three values", `{"annotation": [{"category_id": "cat", "bbox": [0, 0, 1]}]}`, "bbox has 3 values"},
		{"a word in the box", `{"annotation": [{"category_id": "cat", "bbox": [0, "x", 1, 1]}]}`, `bbox value "x" is not a finite float`},
		{"a float past float32", `{"annotation": [{"category_id": "cat", "bbox": [0, 1e40, 1, 1]}]}`, `bbox value "1e40" is not a finite float`},
		{"no annotation", `{"image": {}}`, `a.json: no "annotation" member`},
		{"zero size", `{"image": {"width": 0, "height": 3}, "annotation": []}`, "no valid image width/height (0x3)"},
		{"syntax", "{\n\"annotation\": [,]}", "a.json: line 2:"},
		{"two values", `{} {}`, "more after the JSON value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCOCOJSON("a.json", []byte(tc.json), 40, 40, labels, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// FuzzParseCOCOJSON: any file is boxes or an error naming it, never a
// panic.
func FuzzParseCOCOJSON(f *testing.F) {
	for _, n := range []string{"a", "b"} {
		src, err := os.ReadFile(filepath.Join("testdata", "annoset", "labels", n+".json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if _, err := ParseCOCOJSON("f.json", src, 7, 9, map[string]int32{"dog": 2, "18": 4}, func(string) {}); err != nil && !strings.HasPrefix(err.Error(), "f.json") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}

//go:build !purego

package data

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConvertAnnosetFailures: a bad annotation file fails the whole
// conversion naming the list line and the file's line, and leaves no
// database; so do the refusals of the config.
func TestConvertAnnosetFailures(t *testing.T) {
	dir := t.TempDir()
	fx := filepath.Join("testdata", "annoset")
	img, err := os.ReadFile(filepath.Join(fx, "JPEGImages", "b.png"))
	if err != nil {
		t.Fatal(err)
	}
	put := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "b.png"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	put("good.xml", "<annotation><object><name>cat</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2</xmax><ymax>2</ymax></bndbox></object></annotation>")
	put("bad.xml", "<annotation>\n<object>\n<name>horse</name></object></annotation>")
	put("list.txt", "b.png good.xml\nb.png bad.xml\n")
	put("cls.txt", "b.png 1\nb.png x\n")
	put("none.txt", "nope.png good.xml\n")
	put("a.json", `{"annotation": [{"category_id": "cat", "bbox": [1, 1, 2, 2]}, {"category_id": 7, "bbox": [1, 1, 2, 2]}]}`)
	put("json.txt", "b.png a.json\n")
	base := AnnosetConfig{Root: dir + "/", Detection: true, LabelType: "xml", NameToLabel: vocLabels}
	for _, tc := range []struct {
		name, list string
		cfg        func(*AnnosetConfig)
		want       string
	}{
		{"unknown object name", "list.txt", nil, `list.txt:2: ` + filepath.Join(dir, "bad.xml") + `:3: object name "horse" is not in the label map`},
		{"classification label", "cls.txt", func(c *AnnosetConfig) { c.Detection = false }, `cls.txt:2: label "x" is not an int32`},
		{"no readable image", "none.txt", nil, "none of its 1 images could be read"},
		{"yaml", "list.txt", func(c *AnnosetConfig) { c.LabelType = "yaml" }, `label type "yaml": dsgd reads xml, json and txt`},
		{"json name not in the map", "json.txt", func(c *AnnosetConfig) { c.LabelType = "json" }, `json.txt:1: ` + filepath.Join(dir, "a.json") + `: annotation 1: category_id "7" is not a name in the label map`},
		{"bmp", "list.txt", func(c *AnnosetConfig) { c.EncodeType = "bmp" }, `encode type "bmp": dsgd encodes jpg and png`},
		{"half a resize", "list.txt", func(c *AnnosetConfig) { c.ResizeHeight = 4 }, "resize 4x0 (HxW): give both"},
		{"check_size on encoded records", "list.txt", func(c *AnnosetConfig) {
			c.CheckSize, c.EncodeType = true, "png"
			c.NameToLabel = map[string]int32{"cat": 1, "horse": 5}
		}, "list.txt:2 (" + dir + "/b.png): --check_size: the record's data is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			out := filepath.Join(t.TempDir(), "db")
			_, err := ConvertAnnoset(filepath.Join(dir, tc.list), out, cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a failed conversion left %s (%v)", out, err)
			}
		})
	}
}

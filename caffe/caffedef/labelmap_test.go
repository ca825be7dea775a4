package caffedef

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLabelMapVOC reads the fixture's label map (the shape of the fork's
// labelmap_voc.prototxt) and maps its names.
func TestLabelMapVOC(t *testing.T) {
	m, err := ReadLabelMap(filepath.Join("..", "..", "data", "testdata", "annoset", "labelmap.prototxt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Items) != 5 || m.Items[0] != (LabelMapItem{Name: "none_of_the_above", Label: 0, DisplayName: "background", Pos: m.Items[0].Pos}) || m.Items[3].Pos.Line != 16 {
		t.Fatalf("items %+v", m.Items)
	}
	got, err := m.NameToLabel(true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int32{"none_of_the_above": 0, "cat": 1, "dog": 2, "bird": 3, "18": 4}
	if !maps.Equal(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
}

// TestLabelMapNameToLabel: without --check_label the last item of a name
// wins, as the fork's map assignment; with it a repeated name is refused
// naming both items; a label may repeat either way, as in the fork.
func TestLabelMapNameToLabel(t *testing.T) {
	src := "item { name: \"a\" label: 1 }\nitem { name: \"b\" label: 1 }\nitem { name: \"a\" label: 2 }\n"
	m, err := ParseLabelMap("m.prototxt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		strict bool
		want   map[string]int32
		err    string
	}{
		{false, map[string]int32{"a": 2, "b": 1}, ""},
		{true, nil, `m.prototxt:3:1: name "a" is given again (first at line 1): --check_label refuses duplicate names`},
	} {
		got, err := m.NameToLabel(tc.strict)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("strict %v: error %v, want %q", tc.strict, err, tc.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("strict %v: %v %v, want %v", tc.strict, got, err, tc.want)
		}
	}
}

// TestLabelMapRefusals: what protobuf's text parser refuses for a
// LabelMap, refused at its place.
func TestLabelMapRefusals(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"unknown field", "item { name: \"a\" }\nlabels: 3\n", `m.prototxt:2:1: unknown field "labels" in a LabelMap`},
		{"unknown item field", "item {\n  name: \"a\"\n  id: 3\n}\n", `m.prototxt:3:3: unknown item field "id"`},
		{"name twice", "item { name: \"a\" name: \"b\" }", "m.prototxt:1:18: item field name given twice"},
		{"label a string", "item { name: \"a\" label: \"1\" }", "m.prototxt:1:25: label must be an integer, found a string"},
		{"label too big", "item { label: 4294967296 }", "label 4294967296 does not fit an int32"},
		{"name unquoted", "item { name: a }", "m.prototxt:1:14: name must be a quoted string, found an identifier"},
		{"item scalar", "item: 3", "m.prototxt:1:1: item is a message"},
		{"syntax", "item { name: \"a\"", "m.prototxt:1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseLabelMap("m.prototxt", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
	if _, err := ReadLabelMap(filepath.Join(t.TempDir(), "none.prototxt")); err == nil || !strings.Contains(err.Error(), "label map: ") || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("a missing file: %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// FuzzParseLabelMap: any file is items or an error naming it, never a
// panic; NameToLabel either way.
func FuzzParseLabelMap(f *testing.F) {
	src, err := os.ReadFile(filepath.Join("..", "..", "data", "testdata", "annoset", "labelmap.prototxt"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(src)
	f.Add([]byte("item { name: \"a\" label: 1 } item { name: \"a\" label: 2 }"))
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := ParseLabelMap("m.prototxt", src)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "m.prototxt:") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		loose, err := m.NameToLabel(false)
		if err != nil {
			t.Fatal(err)
		}
		if strict, err := m.NameToLabel(true); err == nil && !maps.Equal(strict, loose) {
			t.Fatalf("strict %v, loose %v", strict, loose)
		}
	})
}

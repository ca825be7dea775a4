package caffedef

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"dsgd/caffe/prototxt"
)

// upgradedCanon parses a net file, upgrades it from V0 and V1 as the
// reader does, and prints its tree with each message's fields sorted by
// name (repeated fields keep their order) and no positions: two files that
// Caffe reads as the same net print the same.
func upgradedCanon(t *testing.T, path string) string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := prototxt.Parse(path, src)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := upgradeV0(msg); err != nil {
		t.Fatal(err)
	}
	if _, err := upgradeV1(msg); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	canon(&b, msg, "")
	return b.String()
}

func canon(b *strings.Builder, m *prototxt.Message, indent string) {
	fs := slices.Clone(m.Fields)
	slices.SortStableFunc(fs, func(x, y *prototxt.Field) int { return strings.Compare(x.Name, y.Name) })
	for _, f := range fs {
		if f.Kind == prototxt.KindMessage {
			b.WriteString(indent + f.Name + " {\n")
			canon(b, f.Msg, indent+"  ")
			b.WriteString(indent + "}\n")
			continue
		}
		v := f.Value
		if f.Kind == prototxt.KindInt || f.Kind == prototxt.KindFloat {
			if x, err := strconv.ParseFloat(strings.TrimSuffix(v, "f"), 64); err == nil {
				v = strconv.FormatFloat(x, 'g', -1, 64)
			}
		}
		b.WriteString(indent + f.Name + ": " + v + "\n")
	}
}

// TestCaffeUpgrade runs Caffe's upgrade tests (test_upgrade_proto.cpp; the
// nets are extracted by scripts/caffe_upgrade_fixtures.py): each V0 net,
// padding layers and all, reads as the same net as Caffe's upgraded V1 and
// current-format versions of it.
func TestCaffeUpgrade(t *testing.T) {
	dir := "testdata/caffe_upgrade"
	for _, c := range []struct {
		name  string
		roles []string
	}{
		{"PaddingLayerUpgradeTest.TestSimple", []string{"input", "expected"}},
		{"PaddingLayerUpgradeTest.TestTwoTops", []string{"input", "expected"}},
		{"PaddingLayerUpgradeTest.TestImageNet", []string{"input", "expected"}},
		{"NetUpgradeTest.TestSimple", []string{"v0", "v1", "v2"}},
		{"NetUpgradeTest.TestAllParams", []string{"v0", "v1"}},
		{"NetUpgradeTest.TestImageNet", []string{"v0", "v1", "v2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			first := upgradedCanon(t, filepath.Join(dir, c.name+"."+c.roles[0]+".prototxt"))
			if !strings.Contains(first, "layer {") {
				t.Fatalf("no layer after the upgrade:\n%s", first)
			}
			for _, r := range c.roles[1:] {
				got := upgradedCanon(t, filepath.Join(dir, c.name+"."+r+".prototxt"))
				if got != first {
					t.Errorf("%s and %s differ after the upgrade:\n%s\n---\n%s", c.roles[0], r, first, got)
				}
			}
		})
	}
	// The upgraded V0 ImageNet net decodes whole, with a note saying so.
	n, err := LoadNet(filepath.Join(dir, "NetUpgradeTest.TestImageNet.v0.prototxt"))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := LoadNet(filepath.Join(dir, "NetUpgradeTest.TestImageNet.v2.prototxt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Layers) != len(v2.Layers) || len(n.Notes) == 0 || !strings.Contains(n.Notes[0], "V0 net format") {
		t.Errorf("%d layers (want %d), notes %q", len(n.Layers), len(v2.Layers), n.Notes)
	}
}

func TestUpgradeV0Errors(t *testing.T) {
	for _, c := range []struct{ name, src, err string }{
		{"unknown type", "layers { layer { name: 'a' type: 'nosuch' } top: 'a' }", `f.prototxt:1:34: unknown V0 layer type "nosuch"`},
		{"padding into relu", "input: 'x' layers { layer { name: 'p' type: 'padding' pad: 1 } bottom: 'x' top: 'p' } " +
			"layers { layer { name: 'r' type: 'relu' } bottom: 'p' top: 'r' }", "a V0 padding layer feeds \"p\""},
		{"mixed", "layers { layer { name: 'a' type: 'relu' } } layers { name: 'b' type: RELU }", "without its 'layer'"},
		{"extra field", "layers { layer { name: 'a' type: 'relu' } name: 'x' }", "unknown field 'name' in a V0 'layers' block"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseNet("f.prototxt", []byte(c.src))
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("err %v, want %q", err, c.err)
			}
		})
	}
	// A field the type has no place for is dropped with a note naming it.
	n, err := ParseNet("f.prototxt", []byte("input: 'x' input_dim: [1, 1, 2, 2] layers { layer { name: 'r' type: 'relu' num_output: 3 } bottom: 'x' top: 'r' }"))
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Notes) != 2 || !strings.Contains(n.Notes[1], "V0 field 'num_output' has no place in a \"relu\" layer") {
		t.Errorf("notes %q", n.Notes)
	}
}

package data

import (
	"bytes"
	"slices"
	"testing"
)

func TestSyntheticDeterministic(t *testing.T) {
	cfg := SyntheticConfig{N: 50, C: 2, H: 5, W: 6, Classes: 4, Seed: 7}
	a, err := Synthetic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Synthetic(cfg)
	if !bytes.Equal(a.Pixels, b.Pixels) || !slices.Equal(a.Labels, b.Labels) {
		t.Error("same config gave different data")
	}
	if a.N != 50 || a.C != 2 || a.H != 5 || a.W != 6 || a.Classes != 4 || a.Name != "synthetic/train" {
		t.Errorf("got %s %dx%dx%dx%d classes %d", a.Name, a.N, a.C, a.H, a.W, a.Classes)
	}
	if err := a.Check(); err != nil {
		t.Error(err)
	}
	cfg.Seed = 8
	c, _ := Synthetic(cfg)
	if bytes.Equal(a.Pixels, c.Pixels) {
		t.Error("different seeds gave the same pixels")
	}
	cfg.Seed, cfg.Split = 7, Test
	d, _ := Synthetic(cfg)
	if bytes.Equal(a.Pixels, d.Pixels) || d.Name != "synthetic/test" {
		t.Error("test split repeats the training pixels")
	}
	for i, l := range a.Labels {
		if int(l) != i%4 {
			t.Fatalf("label %d = %d, want %d", i, l, i%4)
		}
	}
}

func TestSyntheticDefaults(t *testing.T) {
	d, err := Synthetic(SyntheticConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if d.N != 1000 || d.C != 1 || d.H != 28 || d.W != 28 || d.Classes != 10 {
		t.Errorf("defaults gave %dx%dx%dx%d, %d classes", d.N, d.C, d.H, d.W, d.Classes)
	}
	// No noise: every image equals its class pattern exactly.
	q, _ := Synthetic(SyntheticConfig{N: 20, Classes: 10, Noise: -1})
	if !bytes.Equal(q.Image(3), q.Image(13)) || bytes.Equal(q.Image(3), q.Image(4)) {
		t.Error("noiseless images of one class differ, or two classes coincide")
	}
	// Classes are distinct even when the pattern has a single cell.
	one, err := Synthetic(SyntheticConfig{N: 256, C: 1, H: 1, W: 1, Classes: 256, Noise: -1})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint8]bool{}
	for i := range 256 {
		seen[one.Pixels[i]] = true
	}
	if len(seen) != 256 {
		t.Errorf("256 one-pixel classes have %d distinct patterns", len(seen))
	}
}

// The test split is learnable from the training split: a nearest class
// mean classifier fit on one classifies the other almost perfectly.
func TestSyntheticLearnable(t *testing.T) {
	cfg := SyntheticConfig{N: 500, C: 3, H: 12, W: 12, Classes: 10, Seed: 3}
	tr, err := Synthetic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Split, cfg.N = Test, 200
	te, _ := Synthetic(cfg)
	sz := tr.ImageSize()
	means := make([]float64, tr.Classes*sz)
	counts := make([]int, tr.Classes)
	for i := range tr.N {
		l := int(tr.Labels[i])
		counts[l]++
		for j, v := range tr.Image(i) {
			means[l*sz+j] += float64(v)
		}
	}
	for l := range tr.Classes {
		for j := range sz {
			means[l*sz+j] /= float64(counts[l])
		}
	}
	right := 0
	for i := range te.N {
		best, bestD := -1, 0.0
		for l := range tr.Classes {
			d := 0.0
			for j, v := range te.Image(i) {
				e := float64(v) - means[l*sz+j]
				d += e * e
			}
			if best < 0 || d < bestD {
				best, bestD = l, d
			}
		}
		if best == int(te.Labels[i]) {
			right++
		}
	}
	if acc := float64(right) / float64(te.N); acc < 0.95 {
		t.Errorf("nearest-mean accuracy %.3f, want at least 0.95", acc)
	}
}

func TestParseSynthetic(t *testing.T) {
	good := []struct {
		spec string
		want SyntheticConfig
	}{
		{"synthetic", SyntheticConfig{}},
		{"synthetic:N=1000,C=1,H=28,W=28,classes=10,seed=1", SyntheticConfig{N: 1000, C: 1, H: 28, W: 28, Classes: 10, Seed: 1}},
		{"synthetic:n=5,CLASSES=3,noise=0", SyntheticConfig{N: 5, Classes: 3, Noise: -1}},
		{"synthetic:noise=9,seed=18446744073709551615", SyntheticConfig{Noise: 9, Seed: 1<<64 - 1}},
	}
	for _, tc := range good {
		got, err := ParseSynthetic(tc.spec)
		if err != nil || got != tc.want {
			t.Errorf("ParseSynthetic(%q) = %+v, %v; want %+v", tc.spec, got, err, tc.want)
		}
	}
	bad := []struct{ spec, want string }{
		{"synth", "want synthetic or"},
		{"syntheticN=3", "want synthetic or"},
		{"synthetic:", "nothing after the colon"},
		{"synthetic:N", `item 1 "N" is not KEY=VALUE`},
		{"synthetic:N=3,N=4", "N given twice"},
		{"synthetic:depth=3", `unknown key "depth"`},
		{"synthetic:N=-3", "want a positive integer"},
		{"synthetic:N=x", "want a positive integer"},
		{"synthetic:seed=-1", "not an unsigned integer"},
		{"synthetic:classes=70000", "classes=70000, want 1..65536"},
		{"synthetic:N=100000,H=1000,W=1000", "more than"},
		{"synthetic:noise=256", "noise=256"},
	}
	for _, tc := range bad {
		_, err := ParseSynthetic(tc.spec)
		wantErr(t, err, tc.spec, tc.want)
	}
}

func TestSubset(t *testing.T) {
	d, _ := Synthetic(SyntheticConfig{N: 10, H: 2, W: 2, Classes: 3})
	s := d.Subset(4)
	if s.N != 4 || len(s.Pixels) != 16 || len(s.Labels) != 4 || !bytes.Equal(s.Image(3), d.Image(3)) {
		t.Errorf("Subset(4): N=%d, %d pixels, %d labels", s.N, len(s.Pixels), len(s.Labels))
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
	if all := d.Subset(50); all.N != 10 {
		t.Errorf("Subset(50) of 10 has %d", all.N)
	}
	defer func() {
		if recover() == nil {
			t.Error("Subset(0) did not panic")
		}
	}()
	d.Subset(0)
}

func TestDatasetCheck(t *testing.T) {
	good := func() *Dataset {
		return &Dataset{Name: "hand", N: 2, C: 1, H: 1, W: 2, Classes: 3, Pixels: make([]uint8, 4), Labels: []int32{0, 2}}
	}
	cases := []struct {
		name string
		edit func(*Dataset)
		want string
	}{
		{"zero size", func(d *Dataset) { d.H = 0 }, "bad size"},
		{"classes", func(d *Dataset) { d.Classes = 0 }, "0 classes"},
		{"pixels", func(d *Dataset) { d.Pixels = d.Pixels[:3] }, "3 pixel bytes"},
		{"labels", func(d *Dataset) { d.Labels = d.Labels[:1] }, "1 labels for 2 images"},
		{"label range", func(d *Dataset) { d.Labels[1] = 3 }, "label 3 of image 1 out of range 0..2"},
	}
	if err := good().Check(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		d := good()
		tc.edit(d)
		wantErr(t, d.Check(), `"hand"`, tc.want)
	}
}

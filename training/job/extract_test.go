package job

import (
	"context"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

// TestLegacyShape: Caffe's Blob::LegacyShape, a missing axis counting 1,
// no legacy shape past four axes.
func TestLegacyShape(t *testing.T) {
	for _, c := range []struct {
		shape      tensor.Shape
		n, c, h, w int
		ok         bool
	}{
		{tensor.Shape{}, 1, 1, 1, 1, true}, // a scalar loss: one record per pass
		{tensor.Shape{7}, 7, 1, 1, 1, true},
		{tensor.Shape{7, 500}, 7, 500, 1, 1, true},
		{tensor.Shape{7, 3, 5}, 7, 3, 5, 1, true},
		{tensor.Shape{7, 6, 5, 4}, 7, 6, 5, 4, true},
		{tensor.Shape{7, 6, 5, 4, 2}, 0, 0, 0, 0, false},
	} {
		n, ch, h, w, ok := legacyShape(c.shape)
		if n != c.n || ch != c.c || h != c.h || w != c.w || ok != c.ok {
			t.Errorf("legacyShape(%v) = %d %d %d %d %v, want %d %d %d %d %v", c.shape, n, ch, h, w, ok, c.n, c.c, c.h, c.w, c.ok)
		}
	}
}

// TestExtractCheck: what extract_features refuses before reading a file,
// each error naming the field at fault.
func TestExtractCheck(t *testing.T) {
	ok := Extract{Weights: "w.caffemodel", Blobs: []string{"fc7"}, DBs: []string{"out"}, Batches: 1}
	for _, c := range []struct {
		name string
		edit func(*Extract)
		want string
	}{
		{"valid", func(*Extract) {}, ""},
		{"hdf5 weights", func(x *Extract) { x.Weights = "w.caffemodel.h5" }, ""},
		{"no batches", func(x *Extract) { x.Batches = 0 }, "Extract.Batches 0"},
		{"negative batches", func(x *Extract) { x.Batches = -3 }, "Extract.Batches -3"},
		{"no blobs", func(x *Extract) { x.Blobs, x.DBs = nil, nil }, "Extract.Blobs: no blob"},
		{"count", func(x *Extract) { x.DBs = []string{"a", "b"} }, "Extract.Blobs names 1 blobs (fc7) but Extract.DBs 2"},
		{"empty blob", func(x *Extract) { x.Blobs, x.DBs = []string{"fc7", ""}, []string{"a", "b"} }, "name 2 is empty"},
		{"empty db", func(x *Extract) { x.DBs = []string{""} }, "Extract.DBs"},
		{"db twice", func(x *Extract) { x.Blobs, x.DBs = []string{"a", "b"}, []string{"o", "o"} }, "o is named twice (for blobs a and b)"},
		{"snapshot", func(x *Extract) { x.Weights = "run.dsgdsnap" }, "Config.Weights run.dsgdsnap"},
	} {
		x := ok
		c.edit(&x)
		err := x.check()
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// The refusal comes before the job is looked at.
	if _, err := (&Job{}).ExtractFeatures(context.Background(), Extract{Batches: 0}); err == nil || !strings.Contains(err.Error(), "Extract.Batches") {
		t.Errorf("ExtractFeatures on a bad Extract: %v", err)
	}
}

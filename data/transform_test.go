package data

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// ramp is a one-image dataset whose pixel (c, y, x) is c*H*W + y*W + x.
func ramp(c, h, w int) *Dataset {
	d := &Dataset{Name: "ramp", N: 1, C: c, H: h, W: w, Classes: 1,
		Pixels: make([]uint8, c*h*w), Labels: []int32{0}}
	for i := range d.Pixels {
		d.Pixels[i] = uint8(i)
	}
	return d
}

// firstBatch returns a copy of the data of a loader's first batch.
func firstBatch(t *testing.T, ds *Dataset, cfg LoaderConfig) []float32 {
	t.Helper()
	l, err := NewLoader(ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b, err := l.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(b)
	return append([]float32(nil), b.Data...)
}

func TestTransformScaleAndMean(t *testing.T) {
	ds := ramp(3, 2, 2) // channel c holds 4c..4c+3
	cases := []struct {
		name string
		tf   TransformConfig
		want []float32
	}{
		{"identity", TransformConfig{}, []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
		{"scale", TransformConfig{Scale: 0.5}, []float32{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5}},
		{"one mean", TransformConfig{MeanValue: []float32{2}, Scale: 2},
			[]float32{-4, -2, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18}},
		{"mean per channel", TransformConfig{MeanValue: []float32{1, 5, 10}},
			[]float32{-1, 0, 1, 2, -1, 0, 1, 2, -2, -1, 0, 1}},
	}
	for _, tc := range cases {
		got := firstBatch(t, ds, LoaderConfig{BatchSize: 1, Transform: tc.tf})
		if !equalF(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTransformMeanFile(t *testing.T) {
	ds := ramp(1, 3, 3)
	mean := []float32{0, 1, 2, 3, 4, 5, 6, 7, 8.5}
	path := writeFile(t, t.TempDir(), "mean.binaryproto", meanProto(1, 3, 3, mean))
	got := firstBatch(t, ds, LoaderConfig{BatchSize: 1, Transform: TransformConfig{MeanFile: path, Scale: 2}})
	want := []float32{0, 0, 0, 0, 0, 0, 0, 0, -1}
	if !equalF(got, want) {
		t.Errorf("full image: got %v, want %v", got, want)
	}
	// Centred 1x1 crop in test: pixel (1,1) minus mean (1,1).
	mean[4] = 1
	writeFile(t, filepath.Dir(path), "mean.binaryproto", meanProto(1, 3, 3, mean))
	got = firstBatch(t, ds, LoaderConfig{BatchSize: 1, Transform: TransformConfig{MeanFile: path, CropSize: 1}})
	if !equalF(got, []float32{3}) {
		t.Errorf("centre crop: got %v, want [3]", got)
	}
}

// With crop and mirror the mean is taken at each pixel's source position,
// then the row is flipped, as in Caffe's DataTransformer.
func TestTransformMirrorCropMean(t *testing.T) {
	src := ramp(2, 4, 5).Pixels
	mean := make([]float32, 2*4*5)
	for i := range mean {
		mean[i] = float32(i%7) * 0.25
	}
	tr := &transformer{c: 2, h: 4, w: 5, oh: 2, ow: 3, scale: 0.5, mean: mean}
	dst := make([]float32, 2*2*3)
	tr.apply(dst, src, 1, 2, true)
	for c := range 2 {
		for y := range 2 {
			for x := range 3 {
				si := (c*4+1+y)*5 + 2 + x
				want := (float32(src[si]) - mean[si]) * 0.5
				if got := dst[(c*2+y)*3+(2-x)]; got != want {
					t.Errorf("(%d,%d,%d): got %v, want %v", c, y, x, got, want)
				}
			}
		}
	}
}

func TestTransformCrop(t *testing.T) {
	ds := ramp(1, 5, 5) // pixel (y, x) = 5y + x
	// Test phase: centred, offsets (1, 1).
	got := firstBatch(t, ds, LoaderConfig{BatchSize: 1, Transform: TransformConfig{CropSize: 3}})
	if want := []float32{6, 7, 8, 11, 12, 13, 16, 17, 18}; !equalF(got, want) {
		t.Errorf("centre crop: got %v, want %v", got, want)
	}
	// Training: random offsets in 0..2 each, every one of the 9 seen.
	l, err := NewLoader(ds, LoaderConfig{BatchSize: 1, Train: true, Seed: 5, Transform: TransformConfig{CropSize: 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Shape() != [4]int{1, 1, 3, 3} {
		t.Errorf("shape %v", l.Shape())
	}
	seen := map[[2]int]int{}
	for range 300 {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		h, w := int(b.Data[0])/5, int(b.Data[0])%5
		for i, v := range b.Data {
			if want := float32(5*(h+i/3) + w + i%3); v != want {
				t.Fatalf("batch %d is not a crop: value %d is %v, want %v", b.Seq, i, v, want)
			}
		}
		seen[[2]int{h, w}]++
		l.Release(b)
	}
	if len(seen) != 9 {
		t.Errorf("saw crop offsets %v, want all 9 of 0..2 x 0..2", seen)
	}
}

func TestTransformMirror(t *testing.T) {
	ds := ramp(1, 2, 3)
	plain := []float32{0, 1, 2, 3, 4, 5}
	flipped := []float32{2, 1, 0, 5, 4, 3}
	for _, train := range []bool{true, false} {
		l, err := NewLoader(ds, LoaderConfig{BatchSize: 1, Train: train, Seed: 1, Transform: TransformConfig{Mirror: true}})
		if err != nil {
			t.Fatal(err)
		}
		n := map[string]int{}
		for range 200 {
			b, _ := l.Next(context.Background())
			switch {
			case equalF(b.Data, plain):
				n["plain"]++
			case equalF(b.Data, flipped):
				n["flipped"]++
			default:
				t.Fatalf("train=%v: %v is neither the image nor its mirror", train, b.Data)
			}
			l.Release(b)
		}
		l.Close()
		// Caffe mirrors at random in either phase.
		if n["plain"] < 60 || n["flipped"] < 60 {
			t.Errorf("train=%v: mirrored %d of 200, want about half", train, n["flipped"])
		}
	}
}

func TestTransformErrors(t *testing.T) {
	ds := ramp(3, 4, 4)
	dir := t.TempDir()
	wrong := writeFile(t, dir, "wrong.binaryproto", meanProto(1, 4, 4, make([]float32, 16)))
	bad := writeFile(t, dir, "bad.binaryproto", []byte{0x08})
	cases := []struct {
		name string
		tf   TransformConfig
		want []string
	}{
		{"mean count", TransformConfig{MeanValue: []float32{1, 2}}, []string{"2 mean_value entries for 3-channel images; want 1 or 3"}},
		{"both means", TransformConfig{MeanValue: []float32{1}, MeanFile: wrong}, []string{"mutually exclusive"}},
		{"mean shape", TransformConfig{MeanFile: wrong}, []string{wrong, "mean shape 1x1x4x4 does not match the data's 3x4x4"}},
		{"mean corrupt", TransformConfig{MeanFile: bad}, []string{bad, "truncated varint"}},
		{"mean missing", TransformConfig{MeanFile: filepath.Join(dir, "none")}, []string{filepath.Join(dir, "none"), "no such file"}},
		{"crop too big", TransformConfig{CropSize: 5}, []string{"crop_size 5 is larger than the 4x4 images"}},
		{"crop negative", TransformConfig{CropSize: -1}, []string{"crop_size -1 is negative"}},
	}
	for _, tc := range cases {
		_, err := NewLoader(ds, LoaderConfig{BatchSize: 1, Transform: tc.tf})
		t.Run(tc.name, func(t *testing.T) { wantErr(t, err, append([]string{"loader for ramp"}, tc.want...)...) })
	}
}

// The lookup table gives exactly (x - mean) * scale computed in float32.
func TestTransformLUTExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		m, s := r.Float32()*255, r.Float32()*0.1
		tr, err := newTransformer("t", TransformConfig{MeanValue: []float32{m}, Scale: s}, 1, 16, 16, false)
		if err != nil {
			t.Fatal(err)
		}
		src := make([]uint8, 256)
		for i := range src {
			src[i] = uint8(i)
		}
		dst := make([]float32, 256)
		tr.apply(dst, src, 0, 0, false)
		for i, v := range dst {
			if want := (float32(i) - m) * s; v != want {
				t.Fatalf("x=%d: got %v, want %v", i, v, want)
			}
		}
	}
}

func equalF(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

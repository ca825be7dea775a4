package layers

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

// The region layers of the Fast/Faster R-CNN and R-FCN forks and SNN's
// SeLu against the float64 oracle of scripts/roi_layers.py
// (testdata/roi_layers.json), finite differences, the forks' own tests
// and their rules on parameters, shapes and regions.

// roiCases are the layer configurations of roi_layers.json, by fixture
// name.
func roiCases() map[string]caffeCase {
	noROIGrad := map[int]bool{1: true}
	cases := map[string]caffeCase{
		"ROIPooling":         {cfg: &ROIPoolingConfig{PooledH: 3, PooledW: 4, SpatialScale: 0.5}, skip: noROIGrad},
		"ROIPoolingFineBins": {cfg: &ROIPoolingConfig{PooledH: 7, PooledW: 5, SpatialScale: 0.25}, skip: noROIGrad},
		"ROIPoolingScale1":   {cfg: &ROIPoolingConfig{PooledH: 1, PooledW: 1, SpatialScale: 1}, skip: noROIGrad},
		"PSROIPooling":       {cfg: &PSROIPoolingConfig{SpatialScale: 0.25, OutputDim: 2, GroupSize: 3}, skip: noROIGrad},
		"PSROIPoolingK2":     {cfg: &PSROIPoolingConfig{SpatialScale: 0.5, OutputDim: 3, GroupSize: 2}, skip: noROIGrad},
		"PSROIPoolingK1":     {cfg: &PSROIPoolingConfig{SpatialScale: 1, OutputDim: 2, GroupSize: 1}, skip: noROIGrad},
		"SeLu":               {cfg: &SeLuConfig{Lambda: 1.050700987, Alpha: 1.67326324}},
		"SeLuParams":         {cfg: &SeLuConfig{Lambda: 1.5, Alpha: 0.5}},
		"SeLuInPlace":        {cfg: &SeLuConfig{Lambda: 1.050700987, Alpha: 1.67326324}},
	}
	for name, c := range cases { // max pooling copies values: the oracle's float32 inputs come back exactly
		c.tol, c.abs = 1e-6, true
		cases[name] = c
	}
	return cases
}

// closeTo fails unless got is within tol of want everywhere.
func closeTo(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) < len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i, w := range want {
		if g := float64(got[i]); math.Abs(g-w) > tol || math.IsNaN(g) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, g, w)
		}
	}
}

// TestROIFixtures compares each layer's top and bottom diffs with the
// oracle within 1e-6 (absolute), twice (the second pass on the reshaped
// top and with the diffs poisoned), then checks Backward against finite
// differences.
func TestROIFixtures(t *testing.T) {
	runTorchFixtures(t, loadTorchFixture(t, "testdata/roi_layers.json"), roiCases())
}

// TestROILayersNoAllocs: after a first pass, Forward and Backward allocate
// nothing.
func TestROILayersNoAllocs(t *testing.T) {
	checkFixturesNoAllocs(t, loadTorchFixture(t, "testdata/roi_layers.json"), roiCases(), false)
}

// roiFixture is caffe-fast-rcnn's test_roi_pooling_layer.cpp fixture: a
// 4×3×12×8 Gaussian (std 10) map and four regions given as 4×5×1×1.
func roiFixture(seed uint64) []*tensor.Blob {
	r := rand.New(rand.NewPCG(seed, 7))
	x := tensor.NewBlob("data", 4, 3, 12, 8)
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64() * 10)
	}
	rois := newBlobData([]int{4, 5, 1, 1}, []float32{
		0, 1, 1, 6, 6,
		2, 6, 2, 7, 11,
		1, 3, 1, 5, 10,
		0, 3, 3, 3, 3,
	})
	return []*tensor.Blob{x, rois}
}

// TestCaffeROIPooling ports caffe-fast-rcnn's test_roi_pooling_layer.cpp:
// its one test, TestGradient, checks the features' gradient exhaustively
// for pooled 6×6 over its four regions (a threshold of 1e-2, as the test's;
// the step is dsgd's float32 one, the Gaussian's std 10 keeping the maxima
// apart).
func TestCaffeROIPooling(t *testing.T) {
	t.Run("TestGradient", func(t *testing.T) {
		bottom := roiFixture(1)
		top := []*tensor.Blob{tensor.NewBlob("top")}
		l, err := (&ROIPoolingConfig{PooledH: 6, PooledW: 6, SpatialScale: 1}).Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Setup(bottom, top); err != nil {
			t.Fatal(err)
		}
		if err := l.Reshape(bottom, top); err != nil {
			t.Fatal(err)
		}
		if !top[0].Shape.Equal(tensor.Shape{4, 3, 6, 6}) {
			t.Fatalf("top %v, want 4×3×6×6", top[0].Shape)
		}
		checkGradients(t, l, bottom, top, gradCheck{Step: 1e-2, Threshold: 1e-2, Skip: map[int]bool{1: true}})
	})
}

// TestROIPoolingErrors: bad parameters and shapes are errors; bad regions
// panic with the region named (the net turns that into its error).
func TestROIPoolingErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  ROIPoolingConfig
		want string
	}{
		{ROIPoolingConfig{PooledH: 0, PooledW: 2, SpatialScale: 1}, "pooled_h and pooled_w must be positive"},
		{ROIPoolingConfig{PooledH: 2, PooledW: -1, SpatialScale: 1}, "pooled_h and pooled_w must be positive"},
		{ROIPoolingConfig{PooledH: 2, PooledW: 2}, "spatial_scale must be positive"},
		{ROIPoolingConfig{PooledH: 2, PooledW: 2, SpatialScale: float32(math.NaN())}, "spatial_scale must be positive"},
		{ROIPoolingConfig{PooledH: 2, PooledW: 2, SpatialScale: float32(math.Inf(1))}, "spatial_scale must be positive"},
	} {
		if _, err := c.cfg.Build(Context{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	good := &ROIPoolingConfig{PooledH: 2, PooledW: 2, SpatialScale: 1}
	for _, c := range []struct {
		shapes [][]int
		want   string
	}{
		{[][]int{{1, 2, 4, 4}}, "bottom"},
		{[][]int{{1, 2, 4}, {3, 5}}, "must be 4-D"},
		{[][]int{{1, 2, 4, 4}, {3, 4}}, "must be R×5"},
		{[][]int{{1, 2, 4, 4}, {3, 5, 2}}, "must be R×5"},
		{[][]int{{1, 2, 4, 4}, {15}}, "must be R×5"},
	} {
		if err := buildSetUp(good, c.shapes, -1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.shapes, err, c.want)
		}
	}
	nan := float32(math.NaN())
	for _, c := range []struct {
		roi  []float32
		want string
	}{
		{[]float32{2, 0, 0, 1, 1}, "region 0's batch index 2 is out of range for 2 images"},
		{[]float32{-1, 0, 0, 1, 1}, "batch index -1 is out of range"},
		{[]float32{nan, 0, 0, 1, 1}, "region 0 [NaN 0 0 1 1] is not finite"},
		{[]float32{0, 0, nan, 1, 1}, "is not finite"},
		{[]float32{0, 0, 0, float32(math.Inf(1)), 1}, "is not finite"},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), c.want) {
					t.Errorf("%v: panic %v, want %q", c.roi, r, c.want)
				}
			}()
			bottom := []*tensor.Blob{tensor.NewBlob("x", 2, 1, 4, 4), newBlobData([]int{1, 5}, c.roi)}
			top := []*tensor.Blob{tensor.NewBlob("top")}
			l := newTestLayer(t, good, Context{}, bottom, top)
			l.Forward(bottom, top)
		}()
	}
	// Huge corners clip to the map rather than overflow.
	bottom := []*tensor.Blob{tensor.NewBlob("x", 1, 1, 4, 4), newBlobData([]int{1, 5}, []float32{0, -3e38, -3e38, 3e38, 3e38})}
	for i := range bottom[0].Data {
		bottom[0].Data[i] = float32(i)
	}
	top := []*tensor.Blob{tensor.NewBlob("top")}
	l := newTestLayer(t, good, Context{}, bottom, top)
	l.Forward(bottom, top)
	for _, v := range top[0].Data {
		if v < 0 || v > 15 {
			t.Errorf("huge region: top %v", top[0].Data)
			break
		}
	}
}

// TestSeLuInPlace runs the SeLuInPlace fixture with the top replacing the
// bottom, as the fork's README writes SeLu: the layer keeps x for
// Backward, so the gradient is the oracle's (the fork's reads exp(y)
// there).
func TestSeLuInPlace(t *testing.T) {
	for _, tc := range loadTorchFixture(t, "testdata/roi_layers.json") {
		if tc.Name != "SeLuInPlace" {
			continue
		}
		l, err := (&SeLuConfig{Lambda: 1.050700987, Alpha: 1.67326324}).Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		b := newBlobData(tc.Bottoms[0].Shape, to32(tc.Bottoms[0].Data))
		blobs := []*tensor.Blob{b}
		if err := l.Setup(blobs, blobs); err != nil {
			t.Fatal(err)
		}
		if err := l.Reshape(blobs, blobs); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			copy(b.Data, to32(tc.Bottoms[0].Data))
			l.Forward(blobs, blobs)
			closeTo(t, "top", b.Data, tc.Tops[0].Data, 1e-6)
			copy(b.Diff, to32(tc.TopDiffs[0]))
			l.Backward(blobs, []bool{true}, blobs)
			closeTo(t, "bottom diff", b.Diff, tc.BottomDiffs[0], 1e-6)
		}
		return
	}
	t.Fatal("no SeLuInPlace fixture")
}

// TestSeLuErrors: lambda and alpha must be finite.
func TestSeLuErrors(t *testing.T) {
	for _, c := range []SeLuConfig{
		{Lambda: float32(math.NaN()), Alpha: 1},
		{Lambda: 1, Alpha: float32(math.Inf(-1))},
	} {
		if _, err := c.Build(Context{}); err == nil || !strings.Contains(err.Error(), "lambda and alpha must be finite") {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if err := buildSetUp(&SeLuConfig{Lambda: 1, Alpha: 1}, [][]int{{2, 3}, {2, 3}}, -1); err == nil {
		t.Error("two bottoms accepted")
	}
}

// TestPSROIPoolingErrors: bad parameters and shapes are errors (the score
// maps must have output_dim·group_size² channels); bad regions panic with
// the region named.
func TestPSROIPoolingErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  PSROIPoolingConfig
		want string
	}{
		{PSROIPoolingConfig{SpatialScale: 1, OutputDim: 0, GroupSize: 2}, "output_dim and group_size must be positive"},
		{PSROIPoolingConfig{SpatialScale: 1, OutputDim: 2, GroupSize: -1}, "output_dim and group_size must be positive"},
		{PSROIPoolingConfig{SpatialScale: 1, OutputDim: 1 << 20, GroupSize: 1 << 10}, "overflows the channel count"},
		{PSROIPoolingConfig{SpatialScale: 0, OutputDim: 2, GroupSize: 2}, "spatial_scale must be positive"},
		{PSROIPoolingConfig{SpatialScale: float32(math.Inf(1)), OutputDim: 2, GroupSize: 2}, "spatial_scale must be positive"},
	} {
		if _, err := c.cfg.Build(Context{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	good := &PSROIPoolingConfig{SpatialScale: 1, OutputDim: 2, GroupSize: 2}
	for _, c := range []struct {
		shapes [][]int
		want   string
	}{
		{[][]int{{1, 8, 4, 4}}, "bottom"},
		{[][]int{{1, 8, 4}, {3, 5}}, "must be 4-D"},
		{[][]int{{1, 6, 4, 4}, {3, 5}}, "must have output_dim·group_size² = 2·2² = 8 channels"},
		{[][]int{{1, 8, 4, 4}, {3, 6}}, "must be R×5"},
	} {
		if err := buildSetUp(good, c.shapes, -1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.shapes, err, c.want)
		}
	}
	for _, c := range []struct {
		roi  []float32
		want string
	}{
		{[]float32{1, 0, 0, 1, 1}, "PSROIPooling: region 0's batch index 1 is out of range for 1 images"},
		{[]float32{0, 0, float32(math.Inf(-1)), 1, 1}, "PSROIPooling: region 0 [0 0 -Inf 1 1] is not finite"},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), c.want) {
					t.Errorf("%v: panic %v, want %q", c.roi, r, c.want)
				}
			}()
			bottom := []*tensor.Blob{tensor.NewBlob("x", 1, 8, 4, 4), newBlobData([]int{1, 5}, c.roi)}
			top := []*tensor.Blob{tensor.NewBlob("top")}
			l := newTestLayer(t, good, Context{}, bottom, top)
			l.Forward(bottom, top)
		}()
	}
}

// FuzzRegionLayers: any region values (huge, negative, crossed, NaN) and
// scale give ROIPooling and PSROIPooling a top, or the panic naming the
// region that the net turns into its error; never another panic (an index
// out of range) and never a top outside the inputs' range.
func FuzzRegionLayers(f *testing.F) {
	f.Add(float32(0), float32(1), float32(1), float32(6), float32(6), float32(1))
	f.Add(float32(1), float32(-3e38), float32(2.5), float32(3e38), float32(-7), float32(0.0625))
	f.Add(float32(0.9), float32(10), float32(12), float32(4), float32(4), float32(3e38))
	f.Add(float32(0), float32(1e-45), float32(-0.5), float32(0.5), float32(1.5), float32(1e-38))
	f.Fuzz(func(t *testing.T, b, x1, y1, x2, y2, scale float32) {
		if !(scale > 0) || math.IsInf(float64(scale), 0) {
			return
		}
		for _, cfg := range []Config{
			&ROIPoolingConfig{PooledH: 3, PooledW: 2, SpatialScale: scale},
			&PSROIPoolingConfig{SpatialScale: scale, OutputDim: 2, GroupSize: 2},
		} {
			x := tensor.NewBlob("x", 2, 8, 5, 4)
			for i := range x.Data {
				x.Data[i] = float32(i%17) - 8
			}
			bottom := []*tensor.Blob{x, newBlobData([]int{1, 5}, []float32{b, x1, y1, x2, y2})}
			top := []*tensor.Blob{tensor.NewBlob("top")}
			l, err := cfg.Build(Context{})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Setup(bottom, top); err != nil {
				t.Fatal(err)
			}
			if err := l.Reshape(bottom, top); err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						if s, ok := r.(string); !ok || !strings.Contains(s, cfg.Type()+": region 0") {
							t.Fatalf("%s: panic %v", cfg.Type(), r)
						}
					}
				}()
				l.Forward(bottom, top)
				for _, v := range top[0].Data {
					if !(v >= -8 && v <= 8) {
						t.Fatalf("%s: top %v outside the inputs' range", cfg.Type(), top[0].Data)
					}
				}
				copy(top[0].Diff, top[0].Data)
				l.Backward(top, []bool{true, false}, bottom)
			}()
		}
	})
}

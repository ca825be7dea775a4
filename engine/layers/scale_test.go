package layers

import (
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

func TestScaleValues(t *testing.T) {
	// bottom 2×3×2, scale over axis 1: [1, 2, -1], bias [0.5, 0, 1].
	x := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	scale, bias := []float32{1, 2, -1}, []float32{0.5, 0, 1}
	dy := []float32{1, 1, 1, 2, 3, 1, 0, 1, 1, 1, 2, 2}
	wantY := []float32{1.5, 2.5, 6, 8, -4, -5, 7.5, 8.5, 18, 20, -10, -11}
	wantDx := []float32{1, 1, 2, 4, -3, -1, 0, 1, 2, 2, -2, -2}
	// d scale[d] = Σ dy·x, d bias[d] = Σ dy, over images and positions.
	wantDScale := []float32{1 + 2 + 0 + 8, 3 + 8 + 9 + 10, 15 + 6 + 22 + 24}
	wantDBias := []float32{1 + 1 + 0 + 1, 1 + 2 + 1 + 1, 3 + 1 + 2 + 2}

	t.Run("param scale and bias", func(t *testing.T) {
		bs := []*tensor.Blob{newBlobData([]int{2, 3, 2}, x)}
		ts := []*tensor.Blob{tensor.NewBlob("top")}
		l := newTestLayer(t, &ScaleConfig{Axis: 1, NumAxes: 1, BiasTerm: true}, Context{}, bs, ts)
		ps := l.Params()
		if len(ps) != 2 || !ps[0].Blob.Shape.Equal(tensor.Shape{3}) || !ps[1].Blob.Shape.Equal(tensor.Shape{3}) {
			t.Fatalf("params %v, want scale [3] and bias [3]", ps)
		}
		copy(ps[0].Blob.Data, scale)
		copy(ps[1].Blob.Data, bias)
		l.Forward(bs, ts)
		assertClose(t, "scale", ts[0].Data, wantY, 1e-6)
		copy(ts[0].Diff, dy)
		for _, p := range ps {
			p.Blob.ZeroDiff()
		}
		l.Backward(ts, []bool{true}, bs)
		assertClose(t, "scale bottom diff", bs[0].Diff, wantDx, 1e-6)
		assertClose(t, "scale param diff", ps[0].Blob.Diff, wantDScale, 1e-6)
		assertClose(t, "bias param diff", ps[1].Blob.Diff, wantDBias, 1e-6)
		// Param gradients accumulate.
		l.Backward(ts, []bool{false}, bs)
		for i := range wantDScale {
			wantDScale[i] *= 2
			wantDBias[i] *= 2
		}
		assertClose(t, "scale param diff, twice", ps[0].Blob.Diff, wantDScale, 1e-6)
		assertClose(t, "bias param diff, twice", ps[1].Blob.Diff, wantDBias, 1e-6)
		for i := range wantDScale {
			wantDScale[i] /= 2
		}
	})
	t.Run("scale from bottom 1", func(t *testing.T) {
		bs := []*tensor.Blob{newBlobData([]int{2, 3, 2}, x), newBlobData([]int{3}, scale)}
		ts := []*tensor.Blob{tensor.NewBlob("top")}
		l := newTestLayer(t, &ScaleConfig{Axis: 1}, Context{}, bs, ts)
		if len(l.Params()) != 0 {
			t.Fatalf("%d params, want none", len(l.Params()))
		}
		l.Forward(bs, ts)
		want := make([]float32, len(wantY))
		for i := range want {
			want[i] = x[i] * scale[i/2%3]
		}
		assertClose(t, "scale", ts[0].Data, want, 1e-6)
		copy(ts[0].Diff, dy)
		for i := range bs[1].Diff {
			bs[1].Diff[i] = 100 // overwritten, not added to
		}
		l.Backward(ts, []bool{true, true}, bs)
		assertClose(t, "scale bottom 0 diff", bs[0].Diff, wantDx, 1e-6)
		assertClose(t, "scale bottom 1 diff", bs[1].Diff, wantDScale, 1e-6)
	})
}

func TestScaleParamShapes(t *testing.T) {
	in := []int{2, 3, 4, 5}
	tests := []struct {
		axis, numAxes int
		want          []int
	}{
		{1, 1, []int{3}},
		{1, 2, []int{3, 4}},
		{1, -1, []int{3, 4, 5}},
		{0, 0, []int{}},
		{-1, 1, []int{5}},
		{-2, -1, []int{4, 5}},
	}
	for _, tc := range tests {
		bs := []*tensor.Blob{tensor.NewBlob("x", in...)}
		ts := []*tensor.Blob{tensor.NewBlob("top")}
		l := newTestLayer(t, &ScaleConfig{Axis: tc.axis, NumAxes: tc.numAxes, BiasTerm: true}, Context{}, bs, ts)
		for _, p := range l.Params() {
			if !p.Blob.Shape.Equal(tc.want) {
				t.Errorf("axis %d num_axes %d: param shape %v, want %v", tc.axis, tc.numAxes, p.Blob.Shape, tc.want)
			}
		}
	}
}

func TestScaleParamFillers(t *testing.T) {
	l, err := (&ScaleConfig{Axis: 1, NumAxes: 1, Filler: Filler{Value: 1}, BiasTerm: true, BiasFiller: Filler{Value: 0.5}}).Build(Context{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Setup([]*tensor.Blob{tensor.NewBlob("x", 2, 3)}, []*tensor.Blob{tensor.NewBlob("top")}); err != nil {
		t.Fatal(err)
	}
	ps := l.Params()
	if ps[0].Filler.Value != 1 || ps[1].Filler.Value != 0.5 {
		t.Errorf("fillers %+v, %+v: want the scale's and the bias's", ps[0].Filler, ps[1].Filler)
	}
}

func TestScaleGradient(t *testing.T) {
	tests := []struct {
		name   string
		cfg    ScaleConfig
		shapes [][]int
	}{
		{"param", ScaleConfig{Axis: 1, NumAxes: 1}, [][]int{{2, 3, 4}}},
		{"param with bias", ScaleConfig{Axis: 1, NumAxes: 1, BiasTerm: true}, [][]int{{2, 3, 4}}},
		{"param over two axes with bias", ScaleConfig{Axis: 1, NumAxes: 2, BiasTerm: true}, [][]int{{2, 3, 4}}},
		{"scalar param", ScaleConfig{Axis: 0, NumAxes: 0, BiasTerm: true}, [][]int{{2, 3, 4}}},
		{"bottom", ScaleConfig{Axis: 1}, [][]int{{2, 3, 4}, {3}}},
		{"bottom with bias", ScaleConfig{Axis: 1, BiasTerm: true}, [][]int{{2, 3, 4}, {3, 4}}},
		{"scalar bottom", ScaleConfig{Axis: 1}, [][]int{{2, 3, 4}, {}}},
		{"bottom at axis 0", ScaleConfig{Axis: 0, BiasTerm: true}, [][]int{{2, 3, 4}, {2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var bs []*tensor.Blob
			for i, s := range tc.shapes {
				bs = append(bs, randBlob(s, uint64(i+1)))
			}
			ts := []*tensor.Blob{tensor.NewBlob("top")}
			l := newTestLayer(t, &tc.cfg, Context{}, bs, ts)
			checkGradients(t, l, bs, ts, gradCheck{Threshold: 1e-3})
		})
	}
}

func TestScaleInPlace(t *testing.T) {
	checkInPlaceLayer(t, inPlaceCase{cfg: &ScaleConfig{Axis: 1, NumAxes: 1, BiasTerm: true}, shape: []int{2, 3, 4}})
	checkInPlaceLayer(t, inPlaceCase{cfg: &ScaleConfig{Axis: 1, BiasTerm: true}, shape: []int{2, 3, 4}, extra: [][]int{{3}}})
}

func TestScaleErrors(t *testing.T) {
	tests := []struct {
		name    string
		cfg     ScaleConfig
		shapes  [][]int
		wantErr string
	}{
		{"num_axes -2", ScaleConfig{NumAxes: -2}, nil, "num_axes -2"},
		{"bad filler", ScaleConfig{Filler: Filler{Type: "x"}}, nil, "filler"},
		{"bad bias filler", ScaleConfig{BiasFiller: Filler{Type: FillUniform, Min: 1}}, nil, "bias_filler"},
		{"too many axes", ScaleConfig{Axis: 1, NumAxes: 3}, [][]int{{2, 3, 4}}, "exceeds"},
		{"axis out of range", ScaleConfig{Axis: 3, NumAxes: 1}, [][]int{{2, 3, 4}}, "out of range"},
		{"bottom 1 mismatch", ScaleConfig{Axis: 1}, [][]int{{2, 3, 4}, {4}}, "does not match"},
		{"bottom 1 too long", ScaleConfig{Axis: 2}, [][]int{{2, 3, 4}, {4, 1}}, "does not match"},
		{"three bottoms", ScaleConfig{Axis: 1}, [][]int{{2, 3}, {3}, {3}}, "bottom"},
	}
	for _, tc := range tests {
		l, err := tc.cfg.Build(Context{})
		if err == nil {
			var bs []*tensor.Blob
			for _, s := range tc.shapes {
				bs = append(bs, tensor.NewBlob("", s...))
			}
			err = l.Setup(bs, []*tensor.Blob{tensor.NewBlob("top")})
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
		}
	}
	// A param scale cannot follow a change of the scaled axes.
	l, _ := (&ScaleConfig{Axis: 1, NumAxes: 1}).Build(Context{})
	top := []*tensor.Blob{tensor.NewBlob("top")}
	if err := l.Setup([]*tensor.Blob{tensor.NewBlob("x", 2, 3)}, top); err != nil {
		t.Fatal(err)
	}
	if err := l.Reshape([]*tensor.Blob{tensor.NewBlob("x", 2, 4)}, top); err == nil {
		t.Error("reshape to 4 channels: no error")
	}
	if err := l.Reshape([]*tensor.Blob{tensor.NewBlob("x", 5, 3, 7)}, top); err != nil {
		t.Errorf("reshape keeping the scaled axis: %v", err)
	}
}

func TestScaleParamViews(t *testing.T) {
	// After Setup the model swaps param storage for views; the layer must
	// read and accumulate into the new slices.
	bs := []*tensor.Blob{newBlobData([]int{1, 2, 1}, []float32{3, 4})}
	ts := []*tensor.Blob{tensor.NewBlob("top")}
	l := newTestLayer(t, &ScaleConfig{Axis: 1, NumAxes: 1, BiasTerm: true}, Context{}, bs, ts)
	data, diff := []float32{2, -1, 10, 20}, []float32{1, 1, 1, 1}
	ps := l.Params()
	ps[0].Blob.Data, ps[0].Blob.Diff = data[0:2], diff[0:2]
	ps[1].Blob.Data, ps[1].Blob.Diff = data[2:4], diff[2:4]
	l.Forward(bs, ts)
	assertClose(t, "top", ts[0].Data, []float32{16, 16}, 0)
	copy(ts[0].Diff, []float32{1, 2})
	l.Backward(ts, []bool{true}, bs)
	assertClose(t, "flat diffs", diff, []float32{1 + 3, 1 + 8, 1 + 1, 1 + 2}, 0)
}

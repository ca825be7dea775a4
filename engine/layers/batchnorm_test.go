package layers

import (
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

// bnInput is a 2×2×2 batch (N, C, spatial): channel 0 holds 1, 2, 3, 4
// (mean 2.5, biased variance 1.25), channel 1 holds 0, 0, 2, 2 (mean 1,
// variance 1).
var bnInput = []float32{1, 2, 0, 0, 3, 4, 2, 2}

func TestBatchNormTrainForwardAndStats(t *testing.T) {
	for _, inPlace := range []bool{false, true} {
		x := newBlobData([]int{2, 2, 2}, bnInput)
		top := tensor.NewBlob("top")
		if inPlace {
			top = x
		}
		bs, ts := []*tensor.Blob{x}, []*tensor.Blob{top}
		l := newTestLayer(t, &BatchNormConfig{MovingAverageFraction: 0.9}, Context{Phase: Train}, bs, ts)
		ps := l.Params()
		if len(ps) != 3 {
			t.Fatalf("%d params, want 3", len(ps))
		}
		for i, want := range [][]int{{2}, {2}, {1}} {
			if !ps[i].Frozen || !ps[i].Blob.Shape.Equal(want) {
				t.Fatalf("param %d: shape %v frozen %v, want %v frozen", i, ps[i].Blob.Shape, ps[i].Frozen, want)
			}
		}
		l.Forward(bs, ts)
		s := float32(0.894427191) // 1/sqrt(1.25)
		assertClose(t, "bn train", top.Data, []float32{-1.5 * s, -0.5 * s, -1, -1, 0.5 * s, 1.5 * s, 1, 1}, 1e-6)
		// Caffe's update from zero: f = 1, mean = μ, var = 4/3·σ².
		assertClose(t, "mean after 1", ps[0].Blob.Data, []float32{2.5, 1}, 1e-6)
		assertClose(t, "variance after 1", ps[1].Blob.Data, []float32{5.0 / 3, 4.0 / 3}, 1e-6)
		assertClose(t, "factor after 1", ps[2].Blob.Data, []float32{1}, 1e-6)

		// A gradient that is constant per channel is removed by the mean
		// subtraction.
		for i := range top.Diff {
			top.Diff[i] = float32(1 + i/2%2)
		}
		l.Backward(ts, []bool{true}, bs)
		assertClose(t, "bn train diff", x.Diff, make([]float32, 8), 1e-6)

		copy(x.Data, bnInput)
		l.Forward(bs, ts)
		// f = 1·0.9+1, mean = μ + 0.9·mean, var = 4/3·σ² + 0.9·var.
		assertClose(t, "mean after 2", ps[0].Blob.Data, []float32{4.75, 1.9}, 1e-6)
		assertClose(t, "variance after 2", ps[1].Blob.Data, []float32{1.9 * 5 / 3, 1.9 * 4 / 3}, 1e-6)
		assertClose(t, "factor after 2", ps[2].Blob.Data, []float32{1.9}, 1e-6)
	}
}

func TestBatchNormGlobalStats(t *testing.T) {
	no, yes := false, true
	tests := []struct {
		name   string
		global *bool
		phase  Phase
		want   bool // global statistics used
	}{
		{"test phase default", nil, Test, true},
		{"train phase default", nil, Train, false},
		{"forced in train", &yes, Train, true},
		{"forced off in test", &no, Test, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := newBlobData([]int{2, 2, 2}, bnInput)
			bs, ts := []*tensor.Blob{x}, []*tensor.Blob{tensor.NewBlob("top")}
			l := newTestLayer(t, &BatchNormConfig{UseGlobalStats: tc.global, MovingAverageFraction: 0.9}, Context{Phase: tc.phase}, bs, ts)
			ps := l.Params()
			// Stored as after two training batches: divided by f = 1.9
			// they give mean [2.5, 1] and variance [5/3, 4/3].
			copy(ps[0].Blob.Data, []float32{4.75, 1.9})
			copy(ps[1].Blob.Data, []float32{1.9 * 5 / 3, 1.9 * 4 / 3})
			ps[2].Blob.Data[0] = 1.9
			l.Forward(bs, ts)
			if !tc.want {
				// Batch statistics, and the stored ones move.
				if ps[2].Blob.Data[0] == 1.9 {
					t.Error("batch statistics did not update the stored factor")
				}
				return
			}
			a, b := float32(0.7745967), float32(0.8660254) // 1/sqrt(5/3), 1/sqrt(4/3)
			assertClose(t, "bn global", ts[0].Data, []float32{-1.5 * a, -0.5 * a, -b, -b, 0.5 * a, 1.5 * a, b, b}, 1e-5)
			assertClose(t, "stored mean unchanged", ps[0].Blob.Data, []float32{4.75, 1.9}, 0)
			for i := range ts[0].Diff {
				ts[0].Diff[i] = 2
			}
			l.Backward(ts, []bool{true}, bs)
			assertClose(t, "bn global diff", x.Diff, []float32{2 * a, 2 * a, 2 * b, 2 * b, 2 * a, 2 * a, 2 * b, 2 * b}, 1e-5)
		})
	}
}

func TestBatchNormZeroFactor(t *testing.T) {
	// With nothing accumulated (f = 0) the stored statistics count as 0.
	x := newBlobData([]int{2, 2, 2}, bnInput)
	bs, ts := []*tensor.Blob{x}, []*tensor.Blob{tensor.NewBlob("top")}
	l := newTestLayer(t, &BatchNormConfig{Eps: 0.25}, Context{Phase: Test}, bs, ts)
	l.Forward(bs, ts)
	want := make([]float32, len(bnInput))
	for i, v := range bnInput {
		want[i] = v * 2 // x / sqrt(0 + 0.25)
	}
	assertClose(t, "bn zero factor", ts[0].Data, want, 1e-6)
}

func TestBatchNormGradient(t *testing.T) {
	yes := true
	for _, global := range []*bool{nil, &yes} {
		bottom := []*tensor.Blob{randBlob([]int{3, 2, 2, 3}, 5)}
		top := []*tensor.Blob{tensor.NewBlob("top")}
		l := newTestLayer(t, &BatchNormConfig{UseGlobalStats: global, MovingAverageFraction: 0.999, Eps: 1e-5}, Context{Phase: Train}, bottom, top)
		ps := l.Params()
		copy(ps[0].Blob.Data, []float32{0.2, -0.4})
		copy(ps[1].Blob.Data, []float32{1.5, 0.8})
		ps[2].Blob.Data[0] = 1
		checkGradients(t, l, bottom, top, gradCheck{Threshold: 2e-3})
	}
}

func TestBatchNormInPlace(t *testing.T) {
	setStats := func(l Layer) {
		ps := l.Params()
		copy(ps[0].Blob.Data, []float32{0.1, 0.2, 0.3})
		copy(ps[1].Blob.Data, []float32{1, 2, 3})
		ps[2].Blob.Data[0] = 1
	}
	checkInPlaceLayer(t, inPlaceCase{cfg: &BatchNormConfig{MovingAverageFraction: 0.9, Eps: 1e-5}, shape: []int{4, 3, 2, 2}})
	checkInPlaceLayer(t, inPlaceCase{cfg: &BatchNormConfig{Eps: 1e-5}, ctx: Context{Phase: Test}, shape: []int{4, 3, 2, 2}, prepare: setStats})
}

func TestBatchNormParamViews(t *testing.T) {
	// The model swaps param storage for views into one flat buffer after
	// Setup; the statistics update must land there.
	x := newBlobData([]int{2, 2, 2}, bnInput)
	bs, ts := []*tensor.Blob{x}, []*tensor.Blob{tensor.NewBlob("top")}
	l := newTestLayer(t, &BatchNormConfig{MovingAverageFraction: 0.5}, Context{Phase: Train}, bs, ts)
	flat := make([]float32, 5)
	off := 0
	for _, p := range l.Params() {
		n := len(p.Blob.Data)
		p.Blob.Data, p.Blob.Diff = flat[off:off+n], make([]float32, n)
		off += n
	}
	l.Forward(bs, ts)
	assertClose(t, "flat statistics", flat, []float32{2.5, 1, 5.0 / 3, 4.0 / 3, 1}, 1e-6)
}

func TestBatchNormErrors(t *testing.T) {
	for _, cfg := range []BatchNormConfig{
		{MovingAverageFraction: 1.5},
		{MovingAverageFraction: -0.1},
		{Eps: -1},
	} {
		if _, err := cfg.Build(Context{}); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
	l, err := (&BatchNormConfig{}).Build(Context{})
	if err != nil {
		t.Fatal(err)
	}
	top := []*tensor.Blob{tensor.NewBlob("top")}
	if err := l.Setup([]*tensor.Blob{tensor.NewBlob("x", 2, 3, 4)}, top); err != nil {
		t.Fatal(err)
	}
	err = l.Reshape([]*tensor.Blob{tensor.NewBlob("x", 2, 4, 4)}, top)
	if err == nil || !strings.Contains(err.Error(), "3 channels") {
		t.Errorf("channel change: error %v, want one about 3 channels", err)
	}
}

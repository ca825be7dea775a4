package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"dsgd/tensor"
)

// Helpers for the ports of Caffe's own unit tests (src/caffe/test/*.cpp,
// issue 22). Each ported test is a subtest named after Caffe's, e.g.
// "PoolingLayerTest.TestForwardMaxPadded". Caffe types its tests over
// float/double and CPU/GPU; they are ported once, in float32.

// caffeRand is the random source of a port; Caffe seeds its tests with
// 1701, so do the ports (the streams differ: only the distributions match).
func caffeRand() *rand.Rand { return rand.New(rand.NewPCG(1701, 1701)) }

// caffeBlob returns a blob of the shape holding data (nil: zeros).
func caffeBlob(data []float32, shape ...int) *tensor.Blob {
	b := tensor.NewBlob("b", shape...)
	if data != nil {
		if len(data) != b.Count() {
			panic("caffeBlob: data does not match the shape")
		}
		copy(b.Data, data)
	}
	return b
}

// caffeGaussian is a blob filled as by Caffe's GaussianFiller.
func caffeGaussian(r *rand.Rand, mean, std float64, shape ...int) *tensor.Blob {
	b := tensor.NewBlob("b", shape...)
	for i := range b.Data {
		b.Data[i] = float32(mean + std*r.NormFloat64())
	}
	return b
}

// caffeUniform is a blob filled as by Caffe's UniformFiller.
func caffeUniform(r *rand.Rand, lo, hi float64, shape ...int) *tensor.Blob {
	b := tensor.NewBlob("b", shape...)
	for i := range b.Data {
		b.Data[i] = float32(lo + (hi-lo)*r.Float64())
	}
	return b
}

// blobs makes n empty tops.
func blobs(n int) []*tensor.Blob {
	out := make([]*tensor.Blob, n)
	for i := range out {
		out[i] = tensor.NewBlob("top")
	}
	return out
}

// caffeLayer builds and sets up a layer as Caffe's Layer::SetUp does,
// filling its params with the fillers of its config (not random noise, as
// newTestLayer does), then reshapes the tops.
func caffeLayer(t *testing.T, cfg Config, phase Phase, bottom, top []*tensor.Blob) Layer {
	t.Helper()
	return caffeLayerWith(t, cfg, Context{Phase: phase}, bottom, top)
}

// caffeLayerWith is caffeLayer with a given context.
func caffeLayerWith(t *testing.T, cfg Config, ctx Context, bottom, top []*tensor.Blob) Layer {
	t.Helper()
	l, err := caffeLayerErr(cfg, ctx, bottom, top)
	if err != nil {
		t.Fatalf("%s: %v", cfg.Type(), err)
	}
	return l
}

func caffeLayerErr(cfg Config, ctx Context, bottom, top []*tensor.Blob) (Layer, error) {
	if ctx.Rand == nil {
		ctx.Rand = rand.New(rand.NewPCG(1701, 7))
	}
	l, err := cfg.Build(ctx)
	if err != nil {
		return nil, err
	}
	if err := l.Setup(bottom, top); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(1701, 8))
	for _, p := range l.Params() {
		p.Filler.Fill(p.Blob, r)
	}
	if err := l.Reshape(bottom, top); err != nil {
		return nil, err
	}
	return l, nil
}

// wantShape fails unless b has the shape.
func wantShape(t *testing.T, what string, b *tensor.Blob, shape ...int) {
	t.Helper()
	if !b.Shape.Equal(shape) {
		t.Fatalf("%s shape %v, want %v", what, b.Shape, shape)
	}
}

// wantNear fails unless |got[i] - want[i]| <= eps for every i (Caffe's
// EXPECT_NEAR; eps 0 is EXPECT_EQ).
func wantNear(t *testing.T, what string, got, want []float32, eps float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= eps) {
			if bad < 5 {
				t.Errorf("%s[%d] = %.8g, want %.8g (±%g)", what, i, got[i], want[i], eps)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ", what, bad, len(got))
	}
}

// repeat returns n copies of pattern, end to end.
func repeat(pattern []float32, n int) []float32 {
	out := make([]float32, 0, len(pattern)*n)
	for range n {
		out = append(out, pattern...)
	}
	return out
}

// fwd runs Forward once.
func fwd(l Layer, bottom, top []*tensor.Blob) { l.Forward(bottom, top) }

// wantFloatEq is Caffe's EXPECT_FLOAT_EQ: equal within 4 units in the last
// place of float32.
func wantFloatEq(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if d := math.Abs(g - w); !(d <= 4*math.Max(math.Abs(g), math.Abs(w))*0x1p-23) {
			if bad < 5 {
				t.Errorf("%s[%d] = %.9g, want %.9g", what, i, got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ", what, bad, len(got))
	}
}

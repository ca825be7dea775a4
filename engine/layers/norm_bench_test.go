package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"dsgd/engine/tensor"
)

// benchLayer times one layer's Forward and Backward on a bottom of the
// given shape (a second bottom of labels for the loss layers), in place
// when inPlace is set, as sub-benchmarks name/fwd and name/bwd.
func benchLayer(b *testing.B, name string, cfg Config, ctx Context, shape []int, labels int, inPlace bool) {
	r := rand.New(rand.NewPCG(1, 2))
	bottom := hlBlob(r, "x", shape...)
	top := tensor.NewBlob("y")
	if inPlace {
		top = bottom
	}
	bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{top}
	if labels > 0 {
		lab := tensor.NewBlob("label", shape[0])
		for i := range lab.Data {
			lab.Data[i] = float32(r.IntN(labels))
		}
		bs = append(bs, lab)
	}
	if ctx.Rand == nil {
		ctx.Rand = r
	}
	l, err := cfg.Build(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Setup(bs, ts); err != nil {
		b.Fatal(err)
	}
	if err := l.Reshape(bs, ts); err != nil {
		b.Fatal(err)
	}
	for _, p := range l.Params() {
		if !p.Frozen {
			fillGaussian(p.Blob, 1, r)
		}
	}
	l.Forward(bs, ts)
	fillGaussianDiff(top, r)
	if labels > 0 {
		top.Diff[0] = 1
	}
	prop := make([]bool, len(bs))
	prop[0] = true
	b.Run(name+"/fwd", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l.Forward(bs, ts)
		}
	})
	b.Run(name+"/bwd", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l.Backward(ts, prop, bs)
		}
	})
}

// BenchmarkBatchNorm times BatchNorm and Scale on ResNet-50 shapes (res2's
// 64×56×56 and res4's 256×14×14, batch 16), in place as ResNet's
// prototxts run them, with batch statistics and with global ones.
func BenchmarkBatchNorm(b *testing.B) {
	global := true
	for _, shape := range [][]int{{16, 64, 56, 56}, {16, 256, 14, 14}} {
		for _, threads := range []int{1, 2} {
			ctx := Context{Threads: threads, Phase: Train}
			s := fmt.Sprintf("%dx%dx%dx%d/threads%d", shape[0], shape[1], shape[2], shape[3], threads)
			benchLayer(b, "bn/"+s, &BatchNormConfig{MovingAverageFraction: 0.999, Eps: 1e-5}, ctx, shape, 0, true)
			benchLayer(b, "bn-global/"+s, &BatchNormConfig{MovingAverageFraction: 0.999, Eps: 1e-5, UseGlobalStats: &global}, ctx, shape, 0, true)
			benchLayer(b, "scale/"+s, &ScaleConfig{Axis: 1, NumAxes: 1, BiasTerm: true}, ctx, shape, 0, true)
		}
	}
}

// BenchmarkSoftmax times Softmax and SoftmaxWithLoss on a 1000-class
// classifier's output (CaffeNet's and GoogLeNet's, batch 32).
func BenchmarkSoftmax(b *testing.B) {
	for _, threads := range []int{1, 2} {
		ctx := Context{Threads: threads, Phase: Train}
		s := fmt.Sprintf("32x1000/threads%d", threads)
		benchLayer(b, "softmax/"+s, &SoftmaxConfig{Axis: 1}, ctx, []int{32, 1000}, 0, false)
		benchLayer(b, "softmaxloss/"+s, &SoftmaxWithLossConfig{Axis: 1}, ctx, []int{32, 1000}, 1000, false)
	}
}

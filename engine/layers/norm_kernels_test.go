package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"dsgd/engine/tensor"
)

// normPass is what one Forward and Backward of a layer gave.
type normPass struct {
	top, bdiff, extraDiff []float32
	pdata, pdiff          [][]float32
}

// runNormPass runs l (already set up on bottoms shaped like bs) forward and
// backward on copies of bs's data and of topDiff, two times, so the
// statistics' update and the param diffs' accumulation are exercised.
func runNormPass(l interface {
	Forward(bottom, top []*tensor.Blob)
	Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob)
}, params []Param, in []*tensor.Blob, inPlace bool, topDiff []float32) normPass {
	var bs []*tensor.Blob
	for _, b := range in {
		c := tensor.NewBlob(b.Name, b.Shape...)
		copy(c.Data, b.Data)
		bs = append(bs, c)
	}
	top := tensor.NewBlob("y", in[0].Shape...)
	if inPlace {
		top = bs[0]
	}
	ts := []*tensor.Blob{top}
	prop := make([]bool, len(bs))
	for i := range prop {
		prop[i] = true
	}
	var out normPass
	for range 2 {
		for i, b := range in {
			copy(bs[i].Data, b.Data)
		}
		l.Forward(bs, ts)
		out.top = slices.Clone(top.Data)
		copy(top.Diff, topDiff)
		l.Backward(ts, prop, bs)
	}
	out.bdiff = slices.Clone(bs[0].Diff)
	if len(bs) > 1 {
		out.extraDiff = slices.Clone(bs[1].Diff)
	}
	for _, p := range params {
		out.pdata = append(out.pdata, slices.Clone(p.Blob.Data))
		out.pdiff = append(out.pdiff, slices.Clone(p.Blob.Diff))
	}
	return out
}

// TestNormLayersMatchReference holds BatchNorm and Scale on package simd's
// kernels to the Go loops they replaced (norm_ref_test.go): tops, bottom
// diffs, the running statistics and the param diffs within float32
// tolerance, in and out of place, at one and two threads; and the two
// thread counts to each other bit for bit, since every channel's sums are
// taken by one thread in a fixed order.
func TestNormLayersMatchReference(t *testing.T) {
	global := true
	cases := []struct {
		cfg   Config
		phase Phase
		shape []int
		extra []int // a second bottom (Scale's scale)
	}{
		{&BatchNormConfig{MovingAverageFraction: 0.9, Eps: 1e-5}, Train, []int{4, 3, 5, 7}, nil},
		{&BatchNormConfig{MovingAverageFraction: 0.999, Eps: 1e-5}, Train, []int{8, 32, 16, 17}, nil},
		{&BatchNormConfig{MovingAverageFraction: 0.9, Eps: 1e-3}, Train, []int{64, 40}, nil},
		{&BatchNormConfig{Eps: 1e-5, UseGlobalStats: &global}, Train, []int{8, 32, 16, 17}, nil},
		{&BatchNormConfig{Eps: 1e-5}, Test, []int{2, 5, 3, 3}, nil},
		{&ScaleConfig{Axis: 1, NumAxes: 1, BiasTerm: true}, Train, []int{8, 32, 16, 17}, nil},
		{&ScaleConfig{Axis: 1, NumAxes: 1}, Train, []int{4, 3, 5, 7}, nil},
		{&ScaleConfig{Axis: 1, NumAxes: 2, BiasTerm: true}, Train, []int{3, 4, 5, 2}, nil},
		{&ScaleConfig{Axis: 1}, Train, []int{8, 32, 16, 17}, []int{32}},
	}
	for i, tc := range cases {
		for _, inPlace := range []bool{false, true} {
			name := fmt.Sprintf("%d %s %v inPlace=%v", i, tc.cfg.Type(), tc.shape, inPlace)
			r := rand.New(rand.NewPCG(uint64(i), 5))
			in := []*tensor.Blob{hlBlob(r, "x", tc.shape...)}
			for j := range in[0].Data {
				in[0].Data[j] = in[0].Data[j]*2 + 3 // a mean and variance far from 0 and 1
			}
			if tc.extra != nil {
				in = append(in, hlBlob(r, "s", tc.extra...))
			}
			topDiff := make([]float32, in[0].Count())
			for j := range topDiff {
				topDiff[j] = float32(r.NormFloat64())
			}
			var byThreads []normPass
			for _, threads := range []int{1, 2} {
				bs := []*tensor.Blob{tensor.NewBlob("x", tc.shape...)}
				if tc.extra != nil {
					bs = append(bs, tensor.NewBlob("s", tc.extra...))
				}
				top := tensor.NewBlob("y")
				if inPlace {
					top = bs[0]
				}
				l := newTestLayer(t, tc.cfg, Context{Threads: threads, Phase: tc.phase}, bs, []*tensor.Blob{top})
				if bn, ok := l.(*batchNormLayer); ok {
					ps := bn.Params()
					for c := range bn.channels {
						ps[0].Blob.Data[c], ps[1].Blob.Data[c] = 0.3*float32(c), 1+0.1*float32(c)
					}
					ps[2].Blob.Data[0] = 1.5
				}
				if threads == 2 && in[0].Count() >= 2*bnPerThread {
					w := 0
					switch l := l.(type) {
					case *batchNormLayer:
						w = l.workers()
					case *scaleLayer:
						w = l.workers(in[0].Count())
					}
					if w != 2 {
						t.Fatalf("%s: %d workers at 2 threads, want 2", name, w)
					}
				}
				var ref interface {
					Forward(bottom, top []*tensor.Blob)
					Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob)
				}
				var refParams []Param
				switch l := l.(type) {
				case *batchNormLayer:
					rl := refBatchNorm(l)
					ref, refParams = rl, rl.params
				case *scaleLayer:
					rl := refScale(l)
					ref, refParams = rl, rl.params
				}
				got := runNormPass(l, l.Params(), in, inPlace, topDiff)
				want := runNormPass(ref, refParams, in, inPlace, topDiff)
				hlClose(t, name+": top", got.top, want.top, 1e-5)
				hlClose(t, name+": bottom diff", got.bdiff, want.bdiff, 1e-4)
				hlClose(t, name+": scale bottom diff", got.extraDiff, want.extraDiff, 1e-4)
				for k := range want.pdata {
					hlClose(t, fmt.Sprintf("%s: param %d", name, k), got.pdata[k], want.pdata[k], 1e-5)
					hlClose(t, fmt.Sprintf("%s: param %d diff", name, k), got.pdiff[k], want.pdiff[k], 1e-4)
				}
				byThreads = append(byThreads, got)
			}
			a, b := byThreads[0], byThreads[1]
			flat := func(p normPass) []float32 {
				v := slices.Concat(p.top, p.bdiff, p.extraDiff)
				for k := range p.pdata {
					v = slices.Concat(v, p.pdata[k], p.pdiff[k])
				}
				return v
			}
			fa, fb := flat(a), flat(b)
			for j := range fa {
				if math.Float32bits(fa[j]) != math.Float32bits(fb[j]) {
					t.Fatalf("%s: 1 and 2 threads differ at %d: %v vs %v", name, j, fa[j], fb[j])
				}
			}
		}
	}
}

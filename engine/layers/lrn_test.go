package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"dsgd/engine/tensor"
)

// refLRN is a direct (float64) LRN from the definitions in lrn.go.
func refLRN(x *tensor.Blob, c *LRNConfig) []float32 {
	n, ch, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	at := func(in, ci, y, xx int) float64 { return float64(x.Data[((in*ch+ci)*h+y)*w+xx]) }
	r := c.LocalSize / 2
	out := make([]float32, x.Count())
	for in := 0; in < n; in++ {
		for ci := 0; ci < ch; ci++ {
			for y := 0; y < h; y++ {
				for xx := 0; xx < w; xx++ {
					var sum, scale float64
					if c.NormRegion == AcrossChannels {
						for j := max(ci-r, 0); j <= min(ci+r, ch-1); j++ {
							sum += at(in, j, y, xx) * at(in, j, y, xx)
						}
						scale = float64(c.K) + float64(c.Alpha)/float64(c.LocalSize)*sum
					} else {
						for yy := max(y-r, 0); yy <= min(y+r, h-1); yy++ {
							for x2 := max(xx-r, 0); x2 <= min(xx+r, w-1); x2++ {
								sum += at(in, ci, yy, x2) * at(in, ci, yy, x2)
							}
						}
						scale = 1 + float64(c.Alpha)*sum/float64(c.LocalSize*c.LocalSize)
					}
					v := at(in, ci, y, xx) * math.Pow(scale, -float64(c.Beta))
					out[((in*ch+ci)*h+y)*w+xx] = float32(v)
				}
			}
		}
	}
	return out
}

type lrnCase struct {
	name       string
	cfg        LRNConfig
	n, c, h, w int
}

func lrnCases() []lrnCase {
	across := func(size int, alpha, beta, k float32) LRNConfig {
		return LRNConfig{LocalSize: size, Alpha: alpha, Beta: beta, K: k, NormRegion: AcrossChannels}
	}
	within := func(size int, alpha, beta float32) LRNConfig {
		return LRNConfig{LocalSize: size, Alpha: alpha, Beta: beta, K: 1, NormRegion: WithinChannel}
	}
	return []lrnCase{
		{"across_default", across(5, 1, 0.75, 1), 2, 7, 3, 3},
		{"across_size_gt_channels", across(5, 1, 0.75, 1), 2, 3, 2, 3},
		{"across_size3_k2", across(3, 0.5, 0.75, 2), 2, 6, 2, 2},
		{"across_size1", across(1, 1, 0.75, 1), 1, 4, 3, 2},
		{"across_beta_half", across(5, 1, 0.5, 1), 1, 6, 2, 3},
		{"across_beta_one", across(3, 1, 1, 1), 1, 5, 2, 3},
		{"across_beta_generic", across(5, 2, 0.6, 1.5), 2, 6, 2, 2},
		{"within_default", within(3, 1, 0.75), 2, 2, 5, 4},
		{"within_size5", within(5, 1, 0.75), 1, 2, 6, 7},
		{"within_size_gt_image", within(5, 1, 0.75), 1, 2, 2, 3},
		{"within_beta_generic", within(3, 2, 0.6), 2, 2, 4, 4},
		{"within_size1", within(1, 1, 0.75), 1, 3, 2, 2},
	}
}

func TestLRNForwardMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	for _, tc := range lrnCases() {
		for _, threads := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/threads%d", tc.name, threads), func(t *testing.T) {
				bottom := hlBlob(r, "x", tc.n, tc.c, tc.h, tc.w)
				top := tensor.NewBlob("y")
				l := newTestLayer(t, &tc.cfg, Context{Threads: threads}, []*tensor.Blob{bottom}, []*tensor.Blob{top})
				if !top.Shape.Equal(bottom.Shape) {
					t.Fatalf("top shape %v, want %v", top.Shape, bottom.Shape)
				}
				l.Forward([]*tensor.Blob{bottom}, []*tensor.Blob{top})
				hlClose(t, "top", top.Data, refLRN(bottom, &tc.cfg), 1e-5)
			})
		}
	}
}

func TestLRNGradients(t *testing.T) {
	for _, tc := range lrnCases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(53, 54))
			bottom := hlBlob(r, "x", tc.n, tc.c, tc.h, tc.w)
			top := tensor.NewBlob("y")
			bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{top}
			l := newTestLayer(t, &tc.cfg, Context{Threads: 2}, bs, ts)
			checkGradients(t, l, bs, ts, gradCheck{Seed: 8})
		})
	}
}

func TestLRNThreadsAndContract(t *testing.T) {
	for _, tc := range lrnCases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(55, 56))
			bottom := hlBlob(r, "x", 5, tc.c, tc.h, tc.w)
			var tops, diffs [][]float32
			for _, threads := range []int{1, 3} {
				top := tensor.NewBlob("y")
				bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{top}
				l := newTestLayer(t, &tc.cfg, Context{Threads: threads}, bs, ts)
				l.Forward(bs, ts)
				fillGaussianDiff(top, rand.New(rand.NewPCG(1, 1)))
				for i := range bottom.Diff {
					bottom.Diff[i] = 9
				}
				l.Backward(ts, []bool{false}, bs)
				for i, v := range bottom.Diff {
					if v != 9 {
						t.Fatalf("bottom diff[%d] = %v with propagateDown false, want untouched 9", i, v)
					}
				}
				l.Backward(ts, []bool{true}, bs)
				tops = append(tops, append([]float32(nil), top.Data...))
				diffs = append(diffs, append([]float32(nil), bottom.Diff...))
			}
			hlClose(t, "top", tops[1], tops[0], 0)
			hlClose(t, "bottom diff", diffs[1], diffs[0], 0)
		})
	}
}

func TestLRNErrors(t *testing.T) {
	ok := LRNConfig{LocalSize: 5, Alpha: 1, Beta: 0.75, K: 1}
	for _, tc := range []struct {
		name string
		mod  func(*LRNConfig)
		want string
	}{
		{"even_size", func(c *LRNConfig) { c.LocalSize = 4 }, "odd"},
		{"zero_size", func(c *LRNConfig) { c.LocalSize = 0 }, "odd"},
		{"region", func(c *LRNConfig) { c.NormRegion = 5 }, "norm_region"},
		{"nan_beta", func(c *LRNConfig) { c.Beta = float32(math.NaN()) }, "numbers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			_, err := c.Build(Context{})
			hlErrContains(t, err, tc.want)
		})
	}
	build := func() Layer {
		l, err := ok.Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	x := tensor.NewBlob("x", 2, 3, 4, 4)
	hlErrContains(t, build().Setup([]*tensor.Blob{x}, []*tensor.Blob{x}), "in place")
	hlErrContains(t, build().Setup([]*tensor.Blob{tensor.NewBlob("x", 2, 3, 4)}, []*tensor.Blob{tensor.NewBlob("y")}), "4-D")
	hlErrContains(t, build().Setup([]*tensor.Blob{x}, []*tensor.Blob{tensor.NewBlob("y"), tensor.NewBlob("z")}), "one top")
}

func TestLRNNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(57, 58))
	for _, tc := range lrnCases() {
		b := hlBlob(r, "x", tc.n, tc.c, tc.h, tc.w)
		top := tensor.NewBlob("y")
		l := newTestLayer(t, &tc.cfg, Context{Threads: 1}, []*tensor.Blob{b}, []*tensor.Blob{top})
		hlAllocs(t, l, []*tensor.Blob{b}, []*tensor.Blob{top}, []bool{true})
	}
}

// BenchmarkLRN times an AlexNet-style LRN (CIFAR-10 full's norm1 shape,
// batch 100) in both regions.
func BenchmarkLRN(b *testing.B) {
	for _, region := range []LRNRegion{AcrossChannels, WithinChannel} {
		for _, threads := range []int{1, 2} {
			cfg := &LRNConfig{LocalSize: 3, Alpha: 5e-5, Beta: 0.75, K: 1, NormRegion: region}
			r := rand.New(rand.NewPCG(1, 2))
			bottom := hlBlob(r, "x", 100, 32, 16, 16)
			top := tensor.NewBlob("y")
			bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{top}
			l, err := cfg.Build(Context{Threads: threads})
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Setup(bs, ts); err != nil {
				b.Fatal(err)
			}
			if err := l.Reshape(bs, ts); err != nil {
				b.Fatal(err)
			}
			l.Forward(bs, ts)
			fillGaussianDiff(top, r)
			name := fmt.Sprintf("region%d/threads%d", region, threads)
			b.Run(name+"/fwd", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					l.Forward(bs, ts)
				}
			})
			prop := []bool{true}
			b.Run(name+"/bwd", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					l.Backward(ts, prop, bs)
				}
			})
		}
	}
}

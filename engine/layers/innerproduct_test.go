package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"dsgd/engine/tensor"
)

// refInnerProduct is a direct (float64) inner product: x flattened to M×K
// at axis, weight N×K (K×N when transposed).
func refInnerProduct(x *tensor.Blob, weight, bias []float32, c *InnerProductConfig, axis int) []float32 {
	m, k := x.Shape.CountRange(0, axis), x.Shape.CountFrom(axis)
	n := c.NumOutput
	out := make([]float32, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			if bias != nil {
				s = float64(bias[j])
			}
			for p := 0; p < k; p++ {
				w := weight[j*k+p]
				if c.Transpose {
					w = weight[p*n+j]
				}
				s += float64(x.Data[i*k+p]) * float64(w)
			}
			out[i*n+j] = float32(s)
		}
	}
	return out
}

type ipCase struct {
	name  string
	cfg   InnerProductConfig
	shape []int
	axis  int // resolved axis
	top   []int
}

func ipCases() []ipCase {
	return []ipCase{
		{"axis1_4d", InnerProductConfig{NumOutput: 5, BiasTerm: true, Axis: 1}, []int{3, 2, 2, 3}, 1, []int{3, 5}},
		{"axis1_2d", InnerProductConfig{NumOutput: 4, BiasTerm: true, Axis: 1}, []int{6, 7}, 1, []int{6, 4}},
		{"no_bias", InnerProductConfig{NumOutput: 3, Axis: 1}, []int{4, 5}, 1, []int{4, 3}},
		{"transpose", InnerProductConfig{NumOutput: 5, BiasTerm: true, Axis: 1, Transpose: true}, []int{3, 2, 4}, 1, []int{3, 5}},
		{"transpose_no_bias", InnerProductConfig{NumOutput: 2, Axis: 1, Transpose: true}, []int{5, 6}, 1, []int{5, 2}},
		{"axis2", InnerProductConfig{NumOutput: 3, BiasTerm: true, Axis: 2}, []int{2, 3, 4, 2}, 2, []int{2, 3, 3}},
		{"axis_neg1", InnerProductConfig{NumOutput: 3, BiasTerm: true, Axis: -1}, []int{2, 3, 4}, 2, []int{2, 3, 3}},
		{"axis0", InnerProductConfig{NumOutput: 4, BiasTerm: true, Axis: 0}, []int{2, 3}, 0, []int{4}},
		{"wide", InnerProductConfig{NumOutput: 70, BiasTerm: true, Axis: 1}, []int{9, 40}, 1, []int{9, 70}},
		// Big enough (48·300·400 multiply-adds) for three threads to share
		// each GEMM's blocks, unevenly (300 outputs, 400 inputs: 3 and 4
		// blocks, the last ones partial).
		{"large", InnerProductConfig{NumOutput: 300, BiasTerm: true, Axis: 1}, []int{48, 16, 5, 5}, 1, []int{48, 300}},
		{"large_transpose", InnerProductConfig{NumOutput: 300, BiasTerm: true, Axis: 1, Transpose: true}, []int{48, 400}, 1, []int{48, 300}},
	}
}

func TestInnerProductForwardMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, tc := range ipCases() {
		for _, threads := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/threads%d", tc.name, threads), func(t *testing.T) {
				bottom := hlBlob(r, "x", tc.shape...)
				top := tensor.NewBlob("y")
				l := newTestLayer(t, &tc.cfg, Context{Threads: threads}, []*tensor.Blob{bottom}, []*tensor.Blob{top})
				if !top.Shape.Equal(tc.top) {
					t.Fatalf("top shape %v, want %v", top.Shape, tc.top)
				}
				k := bottom.Shape.CountFrom(tc.axis)
				wantW := tensor.Shape{tc.cfg.NumOutput, k}
				if tc.cfg.Transpose {
					wantW = tensor.Shape{k, tc.cfg.NumOutput}
				}
				ps := l.Params()
				if !ps[0].Blob.Shape.Equal(wantW) {
					t.Fatalf("weight shape %v, want %v", ps[0].Blob.Shape, wantW)
				}
				var bias []float32
				if tc.cfg.BiasTerm {
					if len(ps) != 2 || !ps[1].Blob.Shape.Equal(tensor.Shape{tc.cfg.NumOutput}) {
						t.Fatalf("want a bias of shape [%d]", tc.cfg.NumOutput)
					}
					bias = ps[1].Blob.Data
				} else if len(ps) != 1 {
					t.Fatalf("%d params without bias_term, want 1", len(ps))
				}
				l.Forward([]*tensor.Blob{bottom}, []*tensor.Blob{top})
				hlClose(t, "top", top.Data, refInnerProduct(bottom, ps[0].Blob.Data, bias, &tc.cfg, tc.axis), 1e-4)
			})
		}
	}
}

func TestInnerProductGradients(t *testing.T) {
	for _, tc := range ipCases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(43, 44))
			bottom := hlBlob(r, "x", tc.shape...)
			top := tensor.NewBlob("y")
			bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{top}
			l := newTestLayer(t, &tc.cfg, Context{Threads: 2}, bs, ts)
			checkGradients(t, l, bs, ts, gradCheck{Seed: 7, MaxPerBlob: 300})
		})
	}
}

// TestInnerProductBackwardContract: param diffs accumulate, bottom diffs
// are overwritten, and skipped without propagateDown; 1 and 3 threads agree.
func TestInnerProductBackwardContract(t *testing.T) {
	for _, tc := range ipCases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(45, 46))
			bottom := hlBlob(r, "x", tc.shape...)
			var results [][]float32
			for _, threads := range []int{1, 3} {
				top := tensor.NewBlob("y")
				bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{top}
				l := newTestLayer(t, &tc.cfg, Context{Threads: threads}, bs, ts)
				l.Forward(bs, ts)
				fillGaussianDiff(top, rand.New(rand.NewPCG(1, 1)))
				for _, p := range l.Params() {
					p.Blob.ZeroDiff()
				}
				l.Backward(ts, []bool{true}, bs)
				once := append([]float32(nil), l.Params()[0].Blob.Diff...)
				bd := append([]float32(nil), bottom.Diff...)
				l.Backward(ts, []bool{true}, bs)
				twice := make([]float32, len(once))
				for i, v := range once {
					twice[i] = 2 * v
				}
				hlClose(t, "weight diff after two passes", l.Params()[0].Blob.Diff, twice, 1e-5)
				hlClose(t, "bottom diff after two passes", bottom.Diff, bd, 0)
				for i := range bottom.Diff {
					bottom.Diff[i] = 3
				}
				l.Backward(ts, []bool{false}, bs)
				for i, v := range bottom.Diff {
					if v != 3 {
						t.Fatalf("bottom diff[%d] = %v with propagateDown false, want untouched 3", i, v)
					}
				}
				results = append(results, top.Data, bd, once)
			}
			// Threads hand OpenBLAS column blocks of another width, which
			// can change its kernels' summation order: results agree to
			// the rounding of sums of up to 400 terms of size ~1 (about
			// 400·6e-8 in the worst case), not necessarily bit for bit.
			hlClose(t, "top, threads 3 vs 1", results[3], results[0], 3e-5)
			hlClose(t, "bottom diff, threads 3 vs 1", results[4], results[1], 3e-5)
			hlClose(t, "weight diff, threads 3 vs 1", results[5], results[2], 3e-5)
		})
	}
}

func TestInnerProductErrors(t *testing.T) {
	if _, err := (&InnerProductConfig{NumOutput: 0, Axis: 1}).Build(Context{}); err == nil {
		t.Error("num_output 0: no error")
	} else {
		hlErrContains(t, err, "num_output")
	}
	setup := func(cfg InnerProductConfig, shape ...int) (Layer, error) {
		l, err := cfg.Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		return l, l.Setup([]*tensor.Blob{tensor.NewBlob("x", shape...)}, []*tensor.Blob{tensor.NewBlob("y")})
	}
	_, err := setup(InnerProductConfig{NumOutput: 3, Axis: 3}, 2, 3, 4)
	hlErrContains(t, err, "axis")
	_, err = setup(InnerProductConfig{NumOutput: 3, Axis: -4}, 2, 3, 4)
	hlErrContains(t, err, "axis")
	_, err = setup(InnerProductConfig{NumOutput: 3, Axis: 1}, 2, 0)
	hlErrContains(t, err, "no inputs")
	l, err := setup(InnerProductConfig{NumOutput: 3, Axis: 1}, 2, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	top := tensor.NewBlob("y")
	hlErrContains(t, l.Reshape([]*tensor.Blob{tensor.NewBlob("x", 2, 3, 5)}, []*tensor.Blob{top}), "set up for 12")
	// Another batch size with the same K is fine.
	if err := l.Reshape([]*tensor.Blob{tensor.NewBlob("x", 7, 4, 3)}, []*tensor.Blob{top}); err != nil {
		t.Errorf("reshape to 7x4x3 (K 12): %v", err)
	}
	if !top.Shape.Equal(tensor.Shape{7, 3}) {
		t.Errorf("top shape %v after reshape, want 7x3", top.Shape)
	}
}

func TestGemmThreads(t *testing.T) {
	tests := []struct{ threads, m, n, k, dim, want int }{
		{2, 64, 10, 500, 10, 1},   // LeNet ip2: too small to split
		{2, 64, 500, 800, 500, 2}, // LeNet ip1
		{8, 64, 500, 800, 500, 8}, // 25.6M multiply-adds: 8 threads
		{8, 64, 40, 800, 40, 3},   // only three units of 16 outputs
		{3, 48, 300, 400, 300, 3}, // the "large" test case
		{1, 4096, 4096, 4096, 4096, 1},
	}
	for _, tc := range tests {
		if got := gemmThreads(tc.threads, tc.m, tc.n, tc.k, tc.dim); got != tc.want {
			t.Errorf("gemmThreads(%d, %dx%dx%d, dim %d) = %d, want %d", tc.threads, tc.m, tc.n, tc.k, tc.dim, got, tc.want)
		}
	}
}

func TestInnerProductNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	for _, tc := range ipCases() {
		m, k := tensor.Shape(tc.shape).CountRange(0, tc.axis), tensor.Shape(tc.shape).CountFrom(tc.axis)
		if tensor.Backend != "openblas" && gonumParallel(m, tc.cfg.NumOutput, k) {
			// gonum's Sgemm starts goroutines, and allocates, for GEMMs
			// spanning four or more 64×64 blocks of C.
			continue
		}
		b := hlBlob(r, "x", tc.shape...)
		top := tensor.NewBlob("y")
		l := newTestLayer(t, &tc.cfg, Context{Threads: 1}, []*tensor.Blob{b}, []*tensor.Blob{top})
		hlAllocs(t, l, []*tensor.Blob{b}, []*tensor.Blob{top}, []bool{true})
	}
}

// gonumParallel says whether one of an inner product's GEMMs (C of m×n,
// n×k or m×k) is large enough for gonum's Sgemm to go parallel.
func gonumParallel(m, n, k int) bool {
	blocks := func(x int) int { return (x + 63) / 64 }
	return blocks(m)*blocks(n) >= 4 || blocks(n)*blocks(k) >= 4 || blocks(m)*blocks(k) >= 4
}

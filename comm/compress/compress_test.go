package compress

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"dsgd/comm/collective"
	"dsgd/comm/transport"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Spec
		bad  bool
	}{
		{in: "", want: Spec{}},
		{in: "none", want: Spec{}},
		{in: "fp16", want: Spec{Kind: FP16}},
		{in: "bf16", want: Spec{Kind: BF16}},
		{in: "powersgd:2", want: Spec{Kind: PowerSGD, Rank: 2}},
		{in: "topk:0.01", want: Spec{Kind: TopK, Fraction: 0.01}},
		{in: "topk:1", want: Spec{Kind: TopK, Fraction: 1}},
		{in: "powersgd:0", bad: true},
		{in: "powersgd:-1", bad: true},
		{in: "powersgd", bad: true},
		{in: "powersgd:x", bad: true},
		{in: "topk:0", bad: true},
		{in: "topk:1.5", bad: true},
		{in: "topk:-0.1", bad: true},
		{in: "topk:NaN", bad: true},
		{in: "topk", bad: true},
		{in: "bf16:2", bad: true},
		{in: "sign", want: Spec{Kind: Sign}},
		{in: "sign:1", bad: true},
		{in: "onebit", bad: true},
	} {
		got, err := Parse(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("Parse(%q) = %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if back, err := Parse(got.String()); err != nil || back != got {
			t.Errorf("Parse(%q.String() = %q) = %+v, %v", tc.in, got.String(), back, err)
		}
	}
}

// bf16Ref rounds x to bfloat16 by choosing the nearer of the two
// neighbouring bfloat16 values in float64, ties to the even mantissa.
func bf16Ref(x float32) float32 {
	b := math.Float32bits(x)
	down := math.Float32frombits(b &^ 0xffff)
	up := math.Float32frombits((b &^ 0xffff) + 0x10000)
	dd := math.Abs(float64(x) - float64(down))
	du := math.Abs(float64(up) - float64(x))
	switch {
	case dd < du:
		return down
	case du < dd:
		return up
	case (math.Float32bits(down)>>16)&1 == 0:
		return down
	}
	return up
}

func TestBF16Round(t *testing.T) {
	one := float32(1)
	for _, tc := range []struct {
		in, want float32
	}{
		{0, 0},
		{one, one},
		{1 + 1.0/256, 1},                       // halfway, 1 is even
		{1 + 3.0/256, 1 + 1.0/64},              // halfway, 1+2^-6 is even
		{1 + 1.0/256 + 1.0/65536, 1 + 1.0/128}, // just above halfway
		{-(1 + 3.0/256), -(1 + 1.0/64)},        // sign kept
		{float32(math.Inf(1)), float32(math.Inf(1))},
		{math.MaxFloat32, float32(math.Inf(1))}, // past the largest bfloat16 + half an ulp
	} {
		if got := BF16Round(tc.in); got != tc.want {
			t.Errorf("BF16Round(%g) = %g (%#x), want %g (%#x)", tc.in, got, math.Float32bits(got), tc.want, math.Float32bits(tc.want))
		}
	}
	if got := BF16Round(float32(math.NaN())); got == got {
		t.Errorf("BF16Round(NaN) = %g", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		// Finite values well inside the range, every mantissa pattern.
		b := rng.Uint32()&0x807fffff | (uint32(rng.IntN(200)+20) << 23)
		x := math.Float32frombits(b)
		if got, want := BF16Round(x), bf16Ref(x); got != want {
			t.Fatalf("BF16Round(%g = %#x) = %#x, want %#x", x, b, math.Float32bits(got), math.Float32bits(want))
		}
	}
}

func TestLargest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		n, k   int
		levels int // 0: continuous values; else integers in [-levels, levels], ties
	}{
		{1, 1, 0}, {10, 1, 0}, {10, 10, 0}, {100, 7, 0}, {1000, 10, 3}, {5000, 250, 0}, {777, 77, 2},
		{100000, 1000, 0}, {20000, 3000, 20}, {50, 50, 1}, {64, 63, 0}, {300, 299, 1},
	} {
		v := make([]float32, tc.n)
		for i := range v {
			if tc.levels > 0 {
				v[i] = float32(rng.IntN(2*tc.levels+1) - tc.levels)
			} else {
				v[i] = float32(rng.NormFloat64())
			}
		}
		got := Largest(nil, v, tc.k)
		ref := make([]int, tc.n)
		for i := range ref {
			ref[i] = i
		}
		slices.SortStableFunc(ref, func(a, b int) int {
			x, y := math.Abs(float64(v[a])), math.Abs(float64(v[b]))
			switch {
			case x > y:
				return -1
			case x < y:
				return 1
			}
			return 0
		})
		want := slices.Clone(ref[:tc.k])
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("n=%d k=%d: Largest = %v, want %v", tc.n, tc.k, got, want)
		}
	}
}

func TestGramSchmidt(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct{ n, r int }{{3, 1}, {10, 2}, {50, 4}, {500, 2}} {
		p := make([]float32, tc.n*tc.r)
		for i := range p {
			p[i] = float32(rng.NormFloat64())
		}
		GramSchmidt(p, tc.n, tc.r)
		for k := 0; k < tc.r; k++ {
			for l := 0; l <= k; l++ {
				var d float64
				for i := 0; i < tc.n; i++ {
					d += float64(p[i*tc.r+k]) * float64(p[i*tc.r+l])
				}
				want := 0.0
				if k == l {
					want = 1
				}
				if math.Abs(d-want) > 1e-5 {
					t.Errorf("%dx%d: column %d · column %d = %g, want %g", tc.n, tc.r, k, l, d, want)
				}
			}
		}
	}
}

// group runs fn on size Reducers over in-process collectives at once.
type group struct {
	eps   []transport.Endpoint
	execs []*collective.Executor
	reds  []*Reducer
}

type execColl struct {
	e  *collective.Executor
	ep transport.Endpoint
}

func (c execColl) Allreduce(ctx context.Context, b []float32) error {
	return c.e.Allreduce(ctx, b, collective.Ring)
}
func (c execColl) Allgather(ctx context.Context, b []float32) error { return c.e.Allgather(ctx, b) }
func (c execColl) Sent() int64                                      { return c.ep.Stats().BytesSent }

func newGroup(t testing.TB, spec Spec, blocks []Block, size, warmup int) *group {
	t.Helper()
	g := &group{eps: transport.NewInproc(size)}
	for r := 0; r < size; r++ {
		g.execs = append(g.execs, collective.NewExecutor(g.eps[r]))
		red, err := New(spec, blocks, r, size, warmup, 0)
		if err != nil {
			t.Fatal(err)
		}
		g.reds = append(g.reds, red)
	}
	t.Cleanup(func() {
		for r := range g.execs {
			g.execs[r].Close()
			g.eps[r].Close()
		}
	})
	return g
}

// reduce reduces bufs[r][lo:hi] on every rank at once.
func (g *group) reduce(t testing.TB, bufs [][]float32, lo, hi int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(bufs))
	for r := range bufs {
		wg.Go(func() {
			errs[r] = g.reds[r].Reduce(context.Background(), lo, bufs[r][lo:hi], execColl{g.execs[r], g.eps[r]})
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// layout is a small net's blocks: conv-like and fc-like matrices,
// biases, and a vector.
var layout = []Block{
	{Off: 0, Rows: 8, Cols: 25},    // 200: conv 8×1×5×5
	{Off: 200, Rows: 1, Cols: 8},   // bias
	{Off: 208, Rows: 30, Cols: 40}, // fc
	{Off: 1408, Rows: 1, Cols: 30}, // bias
	{Off: 1438, Rows: 4, Cols: 3},  // too small for rank 2
}

const layoutN = 1450

func TestPowerSGDLowRankExact(t *testing.T) {
	const size, R = 3, 2
	blocks := []Block{{Off: 0, Rows: 30, Cols: 40}}
	g := newGroup(t, Spec{Kind: PowerSGD, Rank: R}, blocks, size, 0)
	rng := rand.New(rand.NewPCG(7, 8))
	// Every worker's M = U C_w: one column space of dimension R.
	u := make([]float64, 30*R)
	for i := range u {
		u[i] = rng.NormFloat64()
	}
	sum := make([]float64, 1200)
	bufs := make([][]float32, size)
	for w := range bufs {
		c := make([]float64, 40*R)
		for i := range c {
			c[i] = rng.NormFloat64()
		}
		bufs[w] = make([]float32, 1200)
		for i := 0; i < 30; i++ {
			for j := 0; j < 40; j++ {
				var v float64
				for k := 0; k < R; k++ {
					v += u[i*R+k] * c[j*R+k]
				}
				bufs[w][i*40+j] = float32(v)
				sum[i*40+j] += float64(float32(v))
			}
		}
	}
	g.reduce(t, bufs, 0, 1200)
	for w := range bufs {
		for i, v := range bufs[w] {
			if math.Abs(float64(v)-sum[i]) > 1e-4*(1+math.Abs(sum[i])) {
				t.Fatalf("worker %d: value %d = %g, want the sum %g", w, i, v, sum[i])
			}
		}
		for i, e := range g.reds[w].state[0].residual {
			if math.Abs(float64(e)) > 1e-4 {
				t.Fatalf("worker %d: residual %d = %g, want ≈ 0 for a rank-%d gradient", w, i, e, R)
			}
		}
		if !slices.Equal(bufs[w], bufs[0]) {
			t.Fatalf("worker %d's sum differs from worker 0's", w)
		}
	}
	// The stored P is orthonormal.
	p := g.reds[0].state[0].p
	for k := 0; k < R; k++ {
		var d float64
		for i := 0; i < 30; i++ {
			d += float64(p[i*R+k]) * float64(p[i*R+k])
		}
		if math.Abs(d-1) > 1e-5 {
			t.Errorf("|P column %d|² = %g", k, d)
		}
	}
}

// TestErrorFeedback checks, for every lossy compressor, that nothing is
// lost: over T steps the reduced sums plus every worker's final residual
// add up to the sum of all gradients; that the first warm-up steps are
// exact sums; that the workers agree; and that the floats handed to the
// collectives are those Spec.Floats predicts.
func TestErrorFeedback(t *testing.T) {
	const size, steps, warmup = 3, 12, 2
	for _, spec := range []Spec{{Kind: BF16}, {Kind: PowerSGD, Rank: 1}, {Kind: PowerSGD, Rank: 2}, {Kind: TopK, Fraction: 0.05}, {Kind: TopK, Fraction: 0.2}, {Kind: Sign}} {
		t.Run(spec.String(), func(t *testing.T) {
			g := newGroup(t, spec, layout, size, warmup)
			rng := rand.New(rand.NewPCG(9, 10))
			gradSum := make([]float64, layoutN)
			outSum := make([]float64, layoutN)
			for step := range steps {
				bufs := make([][]float32, size)
				want := make([]float64, layoutN)
				for w := range bufs {
					bufs[w] = make([]float32, layoutN)
					for i := range bufs[w] {
						bufs[w][i] = float32(rng.NormFloat64() * (1 + float64(i%7)))
						gradSum[i] += float64(bufs[w][i])
						want[i] += float64(bufs[w][i])
					}
				}
				// Two ranges, as unpacked messages or overlap's buckets
				// would cut the buffer.
				g.reduce(t, bufs, 208, layoutN)
				g.reduce(t, bufs, 0, 208)
				for w := 1; w < size; w++ {
					if !slices.Equal(bufs[w], bufs[0]) {
						t.Fatalf("step %d: worker %d's sum differs from worker 0's", step, w)
					}
				}
				for i, v := range bufs[0] {
					outSum[i] += float64(v)
					if step < warmup && math.Abs(float64(v)-want[i]) > 1e-4*(1+math.Abs(want[i])) {
						t.Fatalf("warm-up step %d: value %d = %g, want the plain sum %g", step, i, v, want[i])
					}
				}
			}
			lossy := 0.0
			for i := range gradSum {
				got := outSum[i]
				for w := range size {
					if e := g.reds[w].state; true {
						for b, bl := range layout {
							if i >= bl.Off && i < bl.Off+bl.Len() && e[b].residual != nil {
								got += float64(e[b].residual[i-bl.Off])
							}
						}
					}
				}
				if math.Abs(got-gradSum[i]) > 1e-3*(1+math.Abs(gradSum[i])) {
					t.Fatalf("value %d: sums sent + residuals = %g, gradients summed %g", i, got, gradSum[i])
				}
				lossy += math.Abs(outSum[i] - gradSum[i])
			}
			if lossy == 0 {
				t.Errorf("the compressor lost nothing to its residuals: is it compressing?")
			}
			st := g.reds[0].Stats()
			c, p := spec.Floats(layout)
			if st.Compressed != 2*(steps-warmup) || st.Plain != 2*warmup {
				t.Errorf("reductions: %d compressed, %d plain; want %d, %d", st.Compressed, st.Plain, 2*(steps-warmup), 2*warmup)
			}
			if want := int64(c * (steps - warmup)); st.Floats != want {
				t.Errorf("compressed floats %d, want %d", st.Floats, want)
			}
			if want := int64(p * warmup); st.PlainFloats != want {
				t.Errorf("plain floats %d, want %d", st.PlainFloats, want)
			}
			if st.Bytes <= 0 || st.PlainBytes <= 0 {
				t.Errorf("bytes not counted: %+v", st)
			}
			if spec.Kind != BF16 && st.Bytes/int64(steps-warmup) >= st.PlainBytes/int64(warmup) {
				t.Errorf("compressed steps sent %d bytes each, plain ones %d", st.Bytes/int64(steps-warmup), st.PlainBytes/int64(warmup))
			}
		})
	}
}

func TestCompressible(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		b    Block
		want bool
	}{
		{Spec{Kind: PowerSGD, Rank: 2}, Block{Rows: 1, Cols: 500}, false},  // a vector
		{Spec{Kind: PowerSGD, Rank: 2}, Block{Rows: 4, Cols: 4}, false},    // 16 ≥ 2·8? 16 = 16
		{Spec{Kind: PowerSGD, Rank: 2}, Block{Rows: 5, Cols: 5}, true},     // 25 > 20
		{Spec{Kind: PowerSGD, Rank: 4}, Block{Rows: 500, Cols: 800}, true}, // LeNet's ip1
		{Spec{Kind: PowerSGD, Rank: 20}, Block{Rows: 20, Cols: 25}, false}, // R ≥ min(n, m)
		{Spec{Kind: TopK, Fraction: 0.1}, Block{Rows: 1, Cols: 10}, true},  // 1 pair of 10
		{Spec{Kind: TopK, Fraction: 0.5}, Block{Rows: 1, Cols: 10}, false}, // 5 pairs = 10 floats
		{Spec{Kind: TopK, Fraction: 0.01}, Block{Rows: 1, Cols: 1}, false},
		{Spec{Kind: BF16}, Block{Rows: 1, Cols: 1}, true},
		{Spec{Kind: Sign}, Block{Rows: 1, Cols: 2}, false}, // scale + 1 word
		{Spec{Kind: Sign}, Block{Rows: 1, Cols: 3}, true},
		{Spec{Kind: Sign}, Block{Rows: 1, Cols: 33}, true}, // 3 floats
	} {
		if got := tc.spec.Compressible(tc.b); got != tc.want {
			t.Errorf("%s on %dx%d: compressible %v, want %v", tc.spec, tc.b.Rows, tc.b.Cols, got, tc.want)
		}
	}
}

// TestSign: each worker's block travels as its mean magnitude times its
// signs (zero counting as positive); the sum adds them, and the residual
// keeps the rest.
func TestSign(t *testing.T) {
	blocks := []Block{{Off: 0, Rows: 1, Cols: 40}}
	g := newGroup(t, Spec{Kind: Sign}, blocks, 2, 0)
	bufs := [][]float32{make([]float32, 40), make([]float32, 40)}
	want := make([]float32, 40)
	for j := range 40 {
		bufs[0][j] = float32(j%5) - 2 // -2..2, mean |x| 1.2
		bufs[1][j] = 4                // mean 4
	}
	orig := [][]float32{slices.Clone(bufs[0]), slices.Clone(bufs[1])}
	for j := range want {
		s0 := float32(1.2)
		if bufs[0][j] < 0 {
			s0 = -1.2
		}
		want[j] = s0 + 4
	}
	g.reduce(t, bufs, 0, 40)
	for w := range bufs {
		for j, v := range bufs[w] {
			if math.Abs(float64(v-want[j])) > 1e-6 {
				t.Fatalf("worker %d value %d = %g, want %g", w, j, v, want[j])
			}
		}
	}
	for w := range bufs {
		e := g.reds[w].state[0].residual
		scale := float32(1.2)
		if w == 1 {
			scale = 4
		}
		for j, x := range orig[w] {
			sent := scale
			if x < 0 {
				sent = -scale
			}
			if math.Abs(float64(e[j]-(x-sent))) > 1e-6 {
				t.Fatalf("worker %d residual %d = %g, want %g", w, j, e[j], x-sent)
			}
		}
	}
	if c, _ := (Spec{Kind: Sign}).Floats(blocks); c != 3 {
		t.Errorf("a block of 40 travels as %d floats, want 3 (scale and two words of signs)", c)
	}
}

// lenet is LeNet's parameter blocks (431,080 values).
var lenet = []Block{
	{Off: 0, Rows: 20, Cols: 25}, {Off: 500, Rows: 1, Cols: 20},
	{Off: 520, Rows: 50, Cols: 500}, {Off: 25520, Rows: 1, Cols: 50},
	{Off: 25570, Rows: 500, Cols: 800}, {Off: 425570, Rows: 1, Cols: 500},
	{Off: 426070, Rows: 10, Cols: 500}, {Off: 431070, Rows: 1, Cols: 10},
}

// BenchmarkReduceLeNet times one compressed reduction of LeNet's
// gradients on 2 in-process workers (both ranks' work, side by side).
func BenchmarkReduceLeNet(b *testing.B) {
	const n = 431080
	for _, spec := range []Spec{{Kind: BF16}, {Kind: PowerSGD, Rank: 2}, {Kind: TopK, Fraction: 0.01}, {Kind: Sign}} {
		b.Run(spec.String(), func(b *testing.B) {
			g := newGroup(b, spec, lenet, 2, 0)
			rng := rand.New(rand.NewPCG(1, 1))
			bufs := [][]float32{make([]float32, n), make([]float32, n)}
			for b.Loop() {
				for _, buf := range bufs {
					for i := range buf {
						buf[i] = float32(rng.NormFloat64())
					}
				}
				g.reduce(b, bufs, 0, n)
			}
		})
	}
}

// BenchmarkLargest times top-k's selection on LeNet's largest block
// (400,000 values, 1%).
func BenchmarkLargest(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 2))
	v := make([]float32, 400000)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	var idx []int
	var mags []uint32
	for b.Loop() {
		idx, mags = largest(idx, mags, v, 4000)
	}
}

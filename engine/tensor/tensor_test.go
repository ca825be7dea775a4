package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// naiveGemm is the reference: C = alpha·op(A)·op(B) + beta·C in float64.
func naiveGemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += float64(av) * float64(bv)
			}
			c[i*ldc+j] = float32(float64(alpha)*s + float64(beta)*float64(c[i*ldc+j]))
		}
	}
}

// guarded returns a slice of n random values with NaN guard regions on
// both sides (as gonum's kernel tests do), and a check that the guards
// are intact.
func guarded(r *rand.Rand, n int) ([]float32, func(t *testing.T, name string)) {
	const g = 16
	buf := make([]float32, n+2*g)
	for i := range buf {
		buf[i] = float32(math.NaN())
	}
	x := buf[g : g+n : g+n]
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x, func(t *testing.T, name string) {
		t.Helper()
		for i := 0; i < g; i++ {
			if !math.IsNaN(float64(buf[i])) || !math.IsNaN(float64(buf[g+n+i])) {
				t.Fatalf("%s: write outside the slice", name)
			}
		}
	}
}

func TestGemm(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	type tc struct {
		tA, tB      bool
		m, n, k     int
		pad         int // extra leading dimension
		alpha, beta float32
	}
	var cases []tc
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			cases = append(cases,
				tc{tA, tB, 1, 1, 1, 0, 1, 0},
				tc{tA, tB, 7, 5, 3, 0, 1, 0},
				tc{tA, tB, 20, 64, 25, 0, 1, 1},
				tc{tA, tB, 33, 17, 65, 3, -0.5, 0.25},
				tc{tA, tB, 5, 9, 0, 0, 1, 0.5}, // k = 0 scales C by beta
				tc{tA, tB, 64, 500, 800, 2, 1, 0},
			)
		}
	}
	for _, c := range cases {
		name := fmt.Sprintf("tA=%v,tB=%v,%dx%dx%d,pad=%d", c.tA, c.tB, c.m, c.n, c.k, c.pad)
		t.Run(name, func(t *testing.T) {
			ar, ac := c.m, c.k
			if c.tA {
				ar, ac = c.k, c.m
			}
			br, bc := c.k, c.n
			if c.tB {
				br, bc = c.n, c.k
			}
			lda, ldb, ldc := max(ac, 1)+c.pad, max(bc, 1)+c.pad, c.n+c.pad
			a, checkA := guarded(r, max(ar*lda, 1))
			b, checkB := guarded(r, max(br*ldb, 1))
			cc, checkC := guarded(r, c.m*ldc)
			want := append([]float32(nil), cc...)
			naiveGemm(c.tA, c.tB, c.m, c.n, c.k, c.alpha, a, lda, b, ldb, c.beta, want, ldc)
			for _, threads := range []int{1, 2, 3} {
				got := append([]float32(nil), cc...)
				if threads == 1 {
					Gemm(c.tA, c.tB, c.m, c.n, c.k, c.alpha, a, lda, b, ldb, c.beta, got, ldc)
				} else {
					ParallelGemm(threads, c.tA, c.tB, c.m, c.n, c.k, c.alpha, a, lda, b, ldb, c.beta, got, ldc)
				}
				for i := 0; i < c.m; i++ {
					for j := 0; j < ldc; j++ {
						g, w := got[i*ldc+j], want[i*ldc+j]
						if j >= c.n { // padding columns of C are untouched
							w = cc[i*ldc+j]
						}
						if math.Abs(float64(g-w)) > 1e-4*math.Max(1, math.Abs(float64(w)))*math.Sqrt(float64(c.k+1)) {
							t.Fatalf("threads %d: C[%d,%d] = %v, want %v", threads, i, j, g, w)
						}
					}
				}
			}
			checkA(t, "A")
			checkB(t, "B")
			checkC(t, "C")
		})
	}
}

func TestGemmPanicsOnShortSlices(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("Gemm with a short C did not panic")
		}
	}()
	Gemm(false, false, 2, 2, 2, 1, make([]float32, 4), 2, make([]float32, 4), 2, 0, make([]float32, 3), 2)
}

func TestParallelFor(t *testing.T) {
	for _, c := range []struct{ n, threads int }{{0, 2}, {1, 4}, {10, 1}, {10, 3}, {7, 7}, {5, 9}, {1000, 2}} {
		seen := make([]int, c.n)
		workers := make([]bool, max(c.threads, 1))
		ParallelFor(c.n, c.threads, func(lo, hi, w int) {
			workers[w] = true
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		for i, s := range seen {
			if s != 1 {
				t.Fatalf("n=%d threads=%d: index %d visited %d times", c.n, c.threads, i, s)
			}
		}
		used := 0
		for _, u := range workers {
			if u {
				used++
			}
		}
		if want := min(c.n, max(c.threads, 1)); used != want {
			t.Fatalf("n=%d threads=%d: %d workers used, want %d", c.n, c.threads, used, want)
		}
	}
}

func TestShapeAndBlob(t *testing.T) {
	s := Shape{64, 1, 28, 28}
	if s.Count() != 50176 || s.CountFrom(1) != 784 || s.CountRange(1, 3) != 28 || (Shape{}).Count() != 1 {
		t.Fatal("shape counts wrong")
	}
	if !s.Equal(Shape{64, 1, 28, 28}) || s.Equal(Shape{64, 1, 28}) || s.String() != "64x1x28x28 (50176)" {
		t.Fatal("shape equality or format wrong")
	}
	b := NewBlob("x", 2, 3)
	data := b.Data
	b.Reshape(3, 2) // same count: storage kept
	if &b.Data[0] != &data[0] || b.Num() != 3 || b.Dim(-1) != 2 || b.Dim(5) != 1 {
		t.Fatal("reshape to the same count reallocated or dims wrong")
	}
	b.Reshape(4, 4)
	if len(b.Data) != 16 || len(b.Diff) != 16 {
		t.Fatal("reshape to a larger count did not grow")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("negative dimension did not panic")
		}
	}()
	b.Reshape(-1)
}

func TestVec(t *testing.T) {
	x, y := []float32{1, 2, 3}, []float32{4, 5, 6}
	Axpy(2, x, y)
	if y[0] != 6 || y[2] != 12 {
		t.Fatalf("Axpy: %v", y)
	}
	Scale(0.5, y)
	if y[1] != 4.5 {
		t.Fatalf("Scale: %v", y)
	}
	d := make([]float32, 3)
	Add(d, x, x)
	if d[2] != 6 || Dot(x, x) != 14 || SumSquares(x) != 14 {
		t.Fatal("Add/Dot wrong")
	}
}

func BenchmarkGemm512(b *testing.B) {
	const n = 512
	a, bb, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		// Non-zero values: gonum's kernel skips zero multipliers.
		a[i], bb[i] = float32(i%7)+1, float32(i%5)+1
	}
	b.ReportAllocs()
	for b.Loop() {
		Gemm(false, false, n, n, n, 1, a, n, bb, n, 0, c, n)
	}
	b.ReportMetric(2*n*n*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func TestFirstDiff(t *testing.T) {
	nan := math.Float32frombits(0x7fc00001)
	negZero := float32(math.Copysign(0, -1))
	tests := []struct {
		a, b []float32
		want int
	}{
		{nil, nil, 0},
		{[]float32{1, 2}, []float32{1, 2}, 2},
		{[]float32{1, 2}, []float32{1, 3}, 1},
		{[]float32{1}, []float32{1, 2}, -1},
		{[]float32{0}, []float32{negZero}, 0},
		{[]float32{nan}, []float32{nan}, 1},
		{[]float32{nan}, []float32{float32(math.NaN())}, 0},
	}
	for _, tt := range tests {
		if got := FirstDiff(tt.a, tt.b); got != tt.want {
			t.Errorf("FirstDiff(%v, %v) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got, want := SameBits(tt.a, tt.b), tt.want == len(tt.a); got != want {
			t.Errorf("SameBits(%v, %v) = %v, want %v", tt.a, tt.b, got, want)
		}
	}
}

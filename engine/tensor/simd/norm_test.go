package simd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// normLengths cover empty, tails only, whole blocks and blocks plus tails.
var normLengths = []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 1027, 3136}

func randVec(r *rand.Rand, n int, off float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() + off)
	}
	return x
}

func normSameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: [%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestNormReductionsMatchGo pins the assembly reductions to the portable
// versions bit for bit, and the portable versions to float64 sums.
func TestNormReductionsMatchGo(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range normLengths {
		x, y := randVec(r, n, 3), randVec(r, n, -1)
		mu := float32(2.9)
		got := []float32{Sum(x), SumSqDev(x, mu)}
		sx, sxy := SumDot(x, y)
		got = append(got, sx, sxy)
		wx, wxy := sumDotGo(x, y)
		want := []float32{sumGo(x), sumSqDevGo(x, mu), wx, wxy}
		normSameBits(t, "reductions", got, want)
		var s, q, p float64
		for i, v := range x {
			s += float64(v)
			d := float64(v) - float64(mu)
			q += d * d
			p += float64(v) * float64(y[i])
		}
		for i, ref := range []float64{s, q, s, p} {
			if tol := 1e-5 * (1 + math.Abs(ref)) * math.Sqrt(float64(n)+1); math.Abs(float64(want[i])-ref) > tol {
				t.Fatalf("n=%d: reduction %d = %v, float64 %v", n, i, want[i], ref)
			}
		}
	}
}

// TestNormElementwiseMatchGo pins the element-wise kernels to the portable
// versions bit for bit, out of place and in place, and the portable
// versions to their formulas.
func TestNormElementwiseMatchGo(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const a, b, inv = float32(0.37), float32(-1.25), float32(0.81)
	for _, n := range normLengths {
		x, y := randVec(r, n, 0.5), randVec(r, n, 0)
		got, got2, want, want2 := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)

		Normalize(got, nil, x, a, inv)
		normalizeGo(want, x, a, inv)
		normSameBits(t, "Normalize", got, want)
		Normalize(got, got2, x, a, inv)
		normalize2Go(want, want2, x, a, inv)
		normSameBits(t, "Normalize dst", got, want)
		normSameBits(t, "Normalize dst2", got2, want2)

		Affine(got, x, a, b)
		affineGo(want, x, a, b)
		normSameBits(t, "Affine", got, want)

		NormBackward(got, x, y, a, b, inv)
		normBackwardGo(want, x, y, a, b, inv)
		normSameBits(t, "NormBackward", got, want)

		for i, v := range x {
			if d := float64(want[i]) - (float64(v)-float64(a)-float64(b)*float64(y[i]))*float64(inv); math.Abs(d) > 1e-5*(1+math.Abs(float64(want[i]))) {
				t.Fatalf("NormBackward [%d] = %v, formula off by %v", i, want[i], d)
			}
		}

		// In place.
		in := append([]float32(nil), x...)
		Affine(in, in, a, b)
		affineGo(want, x, a, b)
		normSameBits(t, "Affine in place", in, want)
		copy(in, x)
		NormBackward(in, in, y, a, b, inv)
		normBackwardGo(want, x, y, a, b, inv)
		normSameBits(t, "NormBackward in place", in, want)
	}
}

func TestNormPanicsOnShort(t *testing.T) {
	short, long := make([]float32, 3), make([]float32, 4)
	for name, f := range map[string]func(){
		"SumDot":       func() { SumDot(long, short) },
		"Normalize":    func() { Normalize(long, nil, short, 0, 1) },
		"Normalize2":   func() { Normalize(long, short, long, 0, 1) },
		"Affine":       func() { Affine(long, short, 1, 0) },
		"NormBackward": func() { NormBackward(long, long, short, 0, 0, 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic for a short operand", name)
				}
			}()
			f()
		}()
	}
}

func BenchmarkNorm(b *testing.B) {
	x, y := make([]float32, 50176), make([]float32, 50176)
	b.Run("SumDot", func(b *testing.B) {
		b.SetBytes(8 * 50176)
		for b.Loop() {
			SumDot(x, y)
		}
	})
	b.Run("NormBackward", func(b *testing.B) {
		b.SetBytes(12 * 50176)
		for b.Loop() {
			NormBackward(x, x, y, 1, 2, 3)
		}
	})
}

package simd

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestSelectScaledMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40, -1e-40}
	for _, n := range []int{0, 1, 7, 8, 9, 16, 31, 100, 1027} {
		for _, s := range []float32{0, 0.1, -0.5, 1} {
			ref, v := make([]float32, n), make([]float32, n)
			for i := range ref {
				ref[i], v[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
				if i%5 == 0 {
					ref[i] = special[r.IntN(len(special))]
				}
				if i%7 == 0 {
					v[i] = special[r.IntN(len(special))]
				}
			}
			got, want := make([]float32, n), make([]float32, n)
			SelectScaled(got, ref, v, s)
			selectScaledGo(want, ref, v, s)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n=%d s=%v: dst[%d] = %v, want %v (ref %v, v %v)", n, s, i, got[i], want[i], ref[i], v[i])
				}
				// And the definition itself.
				def := s * v[i]
				if ref[i] > 0 {
					def = v[i]
				}
				if math.Float32bits(def) != math.Float32bits(want[i]) {
					t.Fatalf("scalar dst[%d] = %v, want %v", i, want[i], def)
				}
			}
		}
	}
}

func TestSelectScaledInPlace(t *testing.T) {
	x := []float32{-2, -1, 0, 1, 2, -3, 4, -5, 6}
	SelectScaled(x, x, x, 0)
	want := []float32{0, 0, 0, 1, 2, 0, 4, 0, 6}
	for i := range want {
		if x[i] != want[i] {
			t.Fatalf("in place: %v, want %v", x, want)
		}
	}
}

func TestSelectScaledPanicsOnShort(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a short ref")
		}
	}()
	SelectScaled(make([]float32, 4), make([]float32, 3), make([]float32, 4), 0)
}

func BenchmarkSelectScaled(b *testing.B) {
	n := 1 << 20
	x, y := make([]float32, n), make([]float32, n)
	b.SetBytes(int64(8 * n))
	for b.Loop() {
		SelectScaled(y, x, x, 0)
	}
}

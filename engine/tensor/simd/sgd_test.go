package simd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// sameBits is bitwise equality, with any NaN equal to any NaN (the
// hardware picks which operand's payload a NaN result carries).
func sameBits(a, b float32) bool {
	if a != a && b != b {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

func TestSGDMatchesScalar(t *testing.T) {
	// SGD (assembly on amd64) must equal the scalar loop bit for bit in
	// w and v, touch nothing past len(w), and cope with every tail length
	// and with special values, with and without the L2 term.
	rng := rand.New(rand.NewPCG(3, 4))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32, math.SmallestNonzeroFloat32, 1e-40}
	for _, l2 := range []bool{false, true} {
		for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 15, 16, 17, 100, 1001} {
			for _, off := range []int{0, 1, 3} {
				w := make([]float32, off+n+4)
				g := make([]float32, off+n+4)
				v := make([]float32, off+n+4)
				for i := range w {
					w[i] = float32(rng.NormFloat64())
					g[i] = float32(rng.NormFloat64() * 1e-2)
					v[i] = float32(rng.NormFloat64() * 1e-3)
					if rng.IntN(10) == 0 {
						g[i] = special[rng.IntN(len(special))]
					}
					if rng.IntN(10) == 0 {
						w[i] = special[rng.IntN(len(special))]
					}
				}
				scale, decay, lr, mom := float32(0.7), float32(5e-4), float32(0.01), float32(0.9)
				if n%2 == 0 {
					scale = 1
				}
				ws, vs := append([]float32(nil), w...), append([]float32(nil), v...)
				sgdGo(ws[off:off+n], g[off:off+n], vs[off:off+n], scale, decay, lr, mom, l2)
				// The scalar loop written out once more, as the solver had it.
				wr, vr := append([]float32(nil), w...), append([]float32(nil), v...)
				for i := off; i < off+n; i++ {
					gi := float32(g[i] * scale)
					if l2 {
						gi = gi + float32(decay*wr[i])
					}
					vi := float32(mom*vr[i]) + float32(lr*gi)
					vr[i] = vi
					wr[i] -= vi
				}
				SGD(w[off:off+n], g[off:off+n+2], v[off:off+n+1], scale, decay, lr, mom, l2)
				for i := range w {
					if !sameBits(w[i], wr[i]) || !sameBits(v[i], vr[i]) || !sameBits(ws[i], wr[i]) || !sameBits(vs[i], vr[i]) {
						t.Fatalf("l2=%v n=%d off=%d: element %d: w %v v %v (generic %v %v), want %v %v",
							l2, n, off, i, w[i], v[i], ws[i], vs[i], wr[i], vr[i])
					}
				}
			}
		}
	}
}

func TestSGDPanicsOnShort(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("SGD with a short v did not panic")
		}
	}()
	SGD(make([]float32, 4), make([]float32, 4), make([]float32, 3), 1, 0, 0.1, 0.9, false)
}

func BenchmarkSGD(b *testing.B) {
	const n = 431080 // LeNet's parameters
	w, g, v := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range w {
		w[i], g[i] = float32(i%13)*0.01, float32(i%7)*1e-3
	}
	b.SetBytes(4 * n)
	for b.Loop() {
		SGD(w, g, v, 1, 5e-4, 0.01, 0.9, true)
	}
}

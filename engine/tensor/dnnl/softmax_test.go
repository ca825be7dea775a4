//go:build !purego

package dnnl

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftmaxAgainstReference checks oneDNN's softmax, forward and
// backward, in and out of place, against the float64 definition.
func TestSoftmaxAgainstReference(t *testing.T) {
	if err := Load(); err != nil {
		t.Skipf("oneDNN not available: %v", err)
	}
	for _, sh := range [][3]int{{32, 1000, 1}, {5, 10, 1}, {3, 7, 1}, {1, 1, 1}} {
		outer, c, inner := sh[0], sh[1], sh[2]
		s, err := NewSoftmax(outer, c, inner)
		if err != nil {
			t.Fatalf("%v: %v", sh, err)
		}
		r := rand.New(rand.NewPCG(3, uint64(c)))
		n := outer * c * inner
		x, dy := randSlice(r, n), randSlice(r, n)
		for i := range x {
			x[i] *= 8 // a spread that would overflow exp without the max
		}
		y, dx := make([]float32, n), make([]float32, n)
		s.Forward(x, y)
		s.Backward(y, dy, dx)
		for o := range outer {
			for i := range inner {
				at := func(k int) int { return (o*c+k)*inner + i }
				m := math.Inf(-1)
				for k := range c {
					m = math.Max(m, float64(x[at(k)]))
				}
				var sum float64
				for k := range c {
					sum += math.Exp(float64(x[at(k)]) - m)
				}
				var dot float64
				for k := range c {
					p := math.Exp(float64(x[at(k)])-m) / sum
					if d := math.Abs(float64(y[at(k)]) - p); d > 2e-6*math.Max(p, 1e-3) && d > 1e-9 {
						t.Fatalf("%v: y[%d] = %v, want %v", sh, at(k), y[at(k)], p)
					}
					dot += float64(dy[at(k)]) * p
				}
				for k := range c {
					p := math.Exp(float64(x[at(k)])-m) / sum
					want := p * (float64(dy[at(k)]) - dot)
					// Relative to the terms of the difference, which may cancel.
					if d := math.Abs(float64(dx[at(k)]) - want); d > 1e-5*p*(math.Abs(float64(dy[at(k)]))+math.Abs(dot))+1e-9 {
						t.Fatalf("%v: dx[%d] = %v, want %v", sh, at(k), dx[at(k)], want)
					}
				}
			}
		}
		// In place gives the same bits.
		xi, dyi := append([]float32(nil), x...), append([]float32(nil), dy...)
		s.Forward(xi, xi)
		s.Backward(xi, dyi, dyi)
		for i := range y {
			if math.Float32bits(xi[i]) != math.Float32bits(y[i]) || math.Float32bits(dyi[i]) != math.Float32bits(dx[i]) {
				t.Fatalf("%v: in place differs at %d", sh, i)
			}
		}
		s.Close()
	}
	if _, err := NewSoftmax(0, 3, 1); err == nil {
		t.Error("empty softmax accepted")
	}
}

package tensor

import (
	"math"

	"dsgd/engine/tensor/simd"
)

// Axpy computes y += alpha·x. It panics if len(y) < len(x).
func Axpy(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

// Scale computes x *= alpha.
func Scale(alpha float32, x []float32) {
	for i := range x {
		x[i] *= alpha
	}
}

// Add computes dst[i] = a[i] + b[i]. It panics if a or b is shorter than dst.
func Add(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

// Dot returns the sum of x[i]·y[i], accumulated in float64.
func Dot(x, y []float32) float64 {
	y = y[:len(x)]
	var s float64
	for i, v := range x {
		s += float64(v) * float64(y[i])
	}
	return s
}

// SumSquares returns the sum of x[i]², accumulated in float64.
func SumSquares(x []float32) float64 { return Dot(x, x) }

// AddTo adds src into dst element by element (dst[i] += src[i]), bitwise
// what the scalar loop computes, with SIMD where the platform has it; it is
// every reduction's inner loop. It panics if src is shorter than dst.
func AddTo(dst, src []float32) { simd.AddTo(dst, src) }

// FirstDiff is the index of the first element where a and b differ in
// their bits (the sign of zero and NaN payloads included), len(a) when
// they hold the same bits, and -1 when their lengths differ.
func FirstDiff(a, b []float32) int {
	if len(a) != len(b) {
		return -1
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return len(a)
}

// SameBits reports whether a and b hold the same values bit for bit.
func SameBits(a, b []float32) bool { return FirstDiff(a, b) == len(a) }

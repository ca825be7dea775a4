//go:build !amd64 || purego

package simd

// DotRowsFused says DotRows4x3 runs fused multiply-adds in assembly: never
// in this build, whose Go loop rounds each product.
var DotRowsFused = false

func dotRows4x3(acc *[96]float32, dy *[4][]float32, x []float32, off *[3]int, rows, ow, wp int) {
	dotRows4x3Go(acc, dy, x, off, rows, ow, wp)
}

func convTaps4x3(out []float32, plane int, w, x []float32, xo *[3]int, off []int, bias []float32) {
	convTaps4x3Go(out, plane, w, x, xo, off, bias)
}

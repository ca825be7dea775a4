//go:build !amd64 || purego

package simd

func maxPoolRow(dst []float32, mask []int32, src []float32, w, rows, kw, stride int, i0 int32) {
	maxPoolRowGo(dst, mask, src, w, rows, kw, stride, i0)
}

func avePoolRow(dst []float32, src []float32, w, rows, kw, stride int, div float32) {
	avePoolRowGo(dst, src, w, rows, kw, stride, div)
}

func setPoolAVX2(bool) bool { return false }

// PoolImpl names the implementation of MaxPoolRow and AvePoolRow on this
// CPU in this build.
func PoolImpl() string { return "Go" }

func addStrided2(dst, v []float32) { addStrided2Go(dst, v) }

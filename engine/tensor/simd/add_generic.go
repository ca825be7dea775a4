//go:build !amd64 || purego

package simd

// AddTo adds src into dst element by element (dst[i] += src[i]). It panics
// if src is shorter than dst.
func AddTo(dst, src []float32) {
	if len(src) < len(dst) {
		panic("simd: AddTo: src shorter than dst")
	}
	addGo(dst, src)
}

//go:build amd64 && !purego

package simd

// addSSE is AddTo in SSE2 assembly (part of the amd64 baseline, so no
// feature check is needed). It requires len(src) >= len(dst).
//
//go:noescape
func addSSE(dst, src []float32)

// AddTo adds src into dst element by element (dst[i] += src[i]), bitwise
// what the scalar loop computes; it is every reduction's inner loop, about
// three times the scalar loop's speed on cached data. It panics if src is
// shorter than dst.
func AddTo(dst, src []float32) {
	if len(src) < len(dst) {
		panic("simd: AddTo: src shorter than dst")
	}
	addSSE(dst, src)
}

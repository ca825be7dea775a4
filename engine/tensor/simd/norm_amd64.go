//go:build amd64 && !purego

package simd

// The normalisation kernels in SSE2 assembly (norm_amd64.s); lengths are
// checked by the exported wrappers.

//go:noescape
func sumSSE(x []float32) float32

//go:noescape
func sumSqDevSSE(x []float32, mu float32) float32

//go:noescape
func sumDotSSE(x, y []float32) (sx, sxy float32)

//go:noescape
func normalizeSSE(dst, x []float32, mu, inv float32)

//go:noescape
func normalize2SSE(dst, dst2, x []float32, mu, inv float32)

//go:noescape
func affineSSE(dst, x []float32, a, b float32)

//go:noescape
func normBackwardSSE(dx, dy, y []float32, a, b, inv float32)

func sum(x []float32) float32                  { return sumSSE(x) }
func sumSqDev(x []float32, mu float32) float32 { return sumSqDevSSE(x, mu) }
func sumDot(x, y []float32) (float32, float32) { return sumDotSSE(x, y) }
func normalize(dst, x []float32, mu, inv float32) {
	normalizeSSE(dst, x, mu, inv)
}
func normalize2(dst, dst2, x []float32, mu, inv float32) {
	normalize2SSE(dst, dst2, x, mu, inv)
}
func affine(dst, x []float32, a, b float32) { affineSSE(dst, x, a, b) }
func normBackward(dx, dy, y []float32, a, b, inv float32) {
	normBackwardSSE(dx, dy, y, a, b, inv)
}

// Impl names the implementation of this package's kernels in this build.
func Impl() string { return "SSE2 assembly" }

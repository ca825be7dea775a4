//go:build !amd64 || purego

package simd

func sum(x []float32) float32                            { return sumGo(x) }
func sumSqDev(x []float32, mu float32) float32           { return sumSqDevGo(x, mu) }
func sumDot(x, y []float32) (float32, float32)           { return sumDotGo(x, y) }
func normalize(dst, x []float32, mu, inv float32)        { normalizeGo(dst, x, mu, inv) }
func normalize2(dst, dst2, x []float32, mu, inv float32) { normalize2Go(dst, dst2, x, mu, inv) }
func affine(dst, x []float32, a, b float32)              { affineGo(dst, x, a, b) }
func normBackward(dx, dy, y []float32, a, b, inv float32) {
	normBackwardGo(dx, dy, y, a, b, inv)
}

// Impl names the implementation of this package's kernels in this build.
func Impl() string { return "portable Go" }

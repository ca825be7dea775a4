//go:build amd64 && !purego

package collective

// addSSE is addTo in SSE2 assembly (part of the amd64 baseline, so no
// feature check is needed). It requires len(src) >= len(dst).
//
//go:noescape
func addSSE(dst, src []float32)

// addTo adds src into dst element by element (dst[i] += src[i]); it is the
// reduction's inner loop, about three times the scalar loop's speed on
// cached data.
func addTo(dst, src []float32) {
	if len(src) < len(dst) {
		panic("collective: addTo: src shorter than dst")
	}
	addSSE(dst, src)
}

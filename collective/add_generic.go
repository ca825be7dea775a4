//go:build !amd64 || purego

package collective

// addTo adds src into dst element by element (dst[i] += src[i]).
func addTo(dst, src []float32) { addGo(dst, src) }

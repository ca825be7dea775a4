//go:build amd64 && !purego

package simd

// selectScaledSSE is SelectScaled in SSE2 assembly; lengths are checked
// by the caller.
//
//go:noescape
func selectScaledSSE(dst, ref, v []float32, s float32)

func selectScaled(dst, ref, v []float32, s float32) { selectScaledSSE(dst, ref, v, s) }

//go:build amd64 && !purego

package simd

// sgdSSE and sgdL2SSE are SGD without and with the L2 term in SSE2
// assembly (the amd64 baseline). They require len(g), len(v) >= len(w).
//
//go:noescape
func sgdSSE(w, g, v []float32, scale, lr, mom float32)

//go:noescape
func sgdL2SSE(w, g, v []float32, scale, decay, lr, mom float32)

func sgd(w, g, v []float32, scale, decay, lr, mom float32, l2 bool) {
	if l2 {
		sgdL2SSE(w, g, v, scale, decay, lr, mom)
	} else {
		sgdSSE(w, g, v, scale, lr, mom)
	}
}

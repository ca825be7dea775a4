//go:build !amd64 || purego

package simd

func sgd(w, g, v []float32, scale, decay, lr, mom float32, l2 bool) {
	sgdGo(w, g, v, scale, decay, lr, mom, l2)
}

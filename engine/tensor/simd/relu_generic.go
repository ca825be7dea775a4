//go:build !amd64 || purego

package simd

func selectScaled(dst, ref, v []float32, s float32) { selectScaledGo(dst, ref, v, s) }

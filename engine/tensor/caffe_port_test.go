package tensor

import "testing"

// TestCaffePortGemm ports the CPU half of Caffe's test_util_blas.cpp
// (issue 22): caffe_cpu_gemm on Caffe's 2×3 and 3×4 matrices in all four
// transpose combinations, and caffe_cpu_gemv, which dsgd computes as a
// Gemm with one column. (The GPU half has no counterpart.)
func TestCaffePortGemm(t *testing.T) {
	data := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	aT := []float32{1, 4, 2, 5, 3, 6}                      // A (2×3) stored transposed, 3×2
	bT := []float32{1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12} // B (3×4) stored transposed, 4×3
	want := []float32{38, 44, 50, 56, 83, 98, 113, 128}
	eq := func(t *testing.T, what string, got, want []float32) {
		t.Helper()
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: C[%d] = %g, want %g", what, i, got[i], want[i])
			}
		}
	}
	t.Run("GemmTest.TestGemmCPUGPU", func(t *testing.T) {
		for _, c := range []struct {
			what           string
			transA, transB bool
			a, b           []float32
			lda, ldb       int
		}{
			{"NoTrans, NoTrans", false, false, data[:6], data, 3, 4},
			{"Trans, NoTrans", true, false, aT, data, 2, 4},
			{"Trans, Trans", true, true, aT, bT, 2, 3},
			{"NoTrans, Trans", false, true, data[:6], bT, 3, 3},
		} {
			cm := make([]float32, 8)
			Gemm(c.transA, c.transB, 2, 4, 3, 1, c.a, c.lda, c.b, c.ldb, 0, cm, 4)
			eq(t, c.what, cm, want)
		}
	})
	t.Run("GemmTest.TestGemvCPUGPU", func(t *testing.T) {
		a := data[:6]
		y := make([]float32, 2)
		Gemm(false, false, 2, 1, 3, 1, a, 3, data[:3], 1, 0, y, 1) // y = A·x
		eq(t, "A·x", y, []float32{14, 32})
		x := make([]float32, 3)
		Gemm(true, false, 3, 1, 2, 1, a, 3, data[:2], 1, 0, x, 1) // x = Aᵀ·y
		eq(t, "Aᵀ·y", x, []float32{9, 12, 15})
	})
}

//go:build purego

package tensor

func init() {
	gemmInfo = GemmInfo{Library: "gonum", Kernel: "pure Go", CPU: "unknown (purego build)",
		Note: "built with -tags purego"}
	Backend = gemmInfo.Library
}

func sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gonumSgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

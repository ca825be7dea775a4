package tensor

import "fmt"

// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices, where
// op(X) is X or its transpose (transA, transB), op(A) is m×k, op(B) is k×n
// and C is m×n with leading dimension ldc. It runs on one thread; see
// ParallelGemm. It panics if a slice is too short for its dimensions.
func Gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	checkGemm(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if k == 0 {
		// BLAS leaves C scaled by beta; do it here so both back ends agree.
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			if beta == 0 {
				clear(row)
			} else {
				for j := range row {
					row[j] *= beta
				}
			}
		}
		return
	}
	sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// ParallelGemm is Gemm with the rows of C (or, when C has few rows, its
// columns) split across threads goroutines, each calling the one-thread
// kernel on its block.
func ParallelGemm(threads int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	const minWork = 1 << 15 // multiply-adds below which threading costs more than it saves
	if threads <= 1 || m*n*k < minWork*threads {
		Gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if m >= n || m >= 4*threads {
		ParallelFor(m, threads, func(lo, hi, _ int) {
			var as []float32
			if transA {
				as = a[lo:] // A is k×m: rows of op(A) are its columns
			} else {
				as = a[lo*lda:]
			}
			Gemm(transA, transB, hi-lo, n, k, alpha, as, lda, b, ldb, beta, c[lo*ldc:], ldc)
		})
		return
	}
	ParallelFor(n, threads, func(lo, hi, _ int) {
		var bs []float32
		if transB {
			bs = b[lo*ldb:] // B is n×k
		} else {
			bs = b[lo:]
		}
		Gemm(transA, transB, m, hi-lo, k, alpha, a, lda, bs, ldb, beta, c[lo:], ldc)
	})
}

func checkGemm(transA, transB bool, m, n, k, la, lda, lb, ldb, lc, ldc int) {
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	switch {
	case lda < max(ac, 1) || ldb < max(bc, 1) || ldc < max(n, 1):
		panic(fmt.Sprintf("tensor: gemm leading dimension too small (lda=%d ldb=%d ldc=%d for %dx%d, %dx%d, %dx%d)", lda, ldb, ldc, ar, ac, br, bc, m, n))
	case la < (ar-1)*lda+ac:
		panic(fmt.Sprintf("tensor: gemm A has %d elements, needs %d", la, (ar-1)*lda+ac))
	case lb < (br-1)*ldb+bc:
		panic(fmt.Sprintf("tensor: gemm B has %d elements, needs %d", lb, (br-1)*ldb+bc))
	case lc < (m-1)*ldc+n:
		panic(fmt.Sprintf("tensor: gemm C has %d elements, needs %d", lc, (m-1)*ldc+n))
	}
}

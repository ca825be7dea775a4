package simd

// AddRuns adds rows runs of n floats of src into dst (dst[r·dstep+i] +=
// src[r·sstep+i] for r < rows, i < n), bitwise what the scalar loop
// computes: col2im's inner loop, whose runs are short (8 floats for
// LeNet's conv2) and many. It panics if a step is negative or a slice is
// too short for the last run.
func AddRuns(dst, src []float32, rows, n, dstep, sstep int) {
	if rows <= 0 || n <= 0 {
		return
	}
	if dstep < 0 || sstep < 0 {
		panic("simd: AddRuns: negative step")
	}
	// The reslices bounds-check the last run; every run lies below it.
	dst = dst[:(rows-1)*dstep+n]
	src = src[:(rows-1)*sstep+n]
	addRuns(dst, src, rows, n, dstep, sstep)
}

// addRunsGo is the portable AddRuns; the amd64 build runs SSE2 assembly
// for runs of a multiple of four floats and tests it against this.
func addRunsGo(dst, src []float32, rows, n, dstep, sstep int) {
	for r := 0; r < rows; r++ {
		d, s := dst[r*dstep:r*dstep+n], src[r*sstep:r*sstep+n]
		for i, v := range s {
			d[i] += v
		}
	}
}

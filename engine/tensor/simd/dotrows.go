package simd

// DotRows4x3 accumulates a 4×3 block of dot products over rows of eight
// lanes: for k < 4, t < 3 and lane l < 8,
//
//	acc[(3k+t)·8+l] += Σ_{y<rows} Σ_{v<ow/8} dy[k][y·ow+8v+l] · x[off[t]+y·wp+8v+l]
//
// each product added to the lane's running sum in the order of (y, v).
// It is the inner loop of a convolution's weights pass over few input
// channels (engine/layers' conv_thin.go): dy holds four output channels'
// gradients (rows of ow), x an image padded so that tap t's window starts
// at off[t] (rows of wp). The lanes are summed by the caller, in a fixed
// order. On amd64 with AVX2 and FMA (DotRowsFused) each product is fused
// into the sum (VFMADD231PS, one rounding); elsewhere the Go loop rounds
// the product, then the sum. ow must be a positive multiple of 8. It
// panics if the arguments do not fit.
func DotRows4x3(acc *[96]float32, dy *[4][]float32, x []float32, off *[3]int, rows, ow, wp int) {
	if rows <= 0 {
		return
	}
	if ow <= 0 || ow%8 != 0 || wp < ow {
		panic("simd: DotRows4x3: ow must be a positive multiple of 8 no wider than wp")
	}
	for k := range dy {
		if len(dy[k]) < rows*ow {
			panic("simd: DotRows4x3: dy row shorter than rows·ow")
		}
	}
	for _, o := range off {
		if o < 0 || len(x) < o+(rows-1)*wp+ow {
			panic("simd: DotRows4x3: x shorter than a tap's rows")
		}
	}
	dotRows4x3(acc, dy, x, off, rows, ow, wp)
}

// dotRows4x3Go is the portable DotRows4x3.
func dotRows4x3Go(acc *[96]float32, dy *[4][]float32, x []float32, off *[3]int, rows, ow, wp int) {
	for k := range 4 {
		for t := range 3 {
			a := acc[(3*k+t)*8 : (3*k+t+1)*8]
			for y := range rows {
				d := dy[k][y*ow : (y+1)*ow]
				s := x[off[t]+y*wp : off[t]+y*wp+ow]
				for v := 0; v < ow; v += 8 {
					for l := range 8 {
						a[l] += d[v+l] * s[v+l]
					}
				}
			}
		}
	}
}

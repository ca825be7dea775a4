package simd

// Taps are a convolution's taps: each one's offset in a padded image,
// with their least and greatest kept so that ConvTaps4x3 checks its
// bounds in constant time.
type Taps struct {
	off    []int
	lo, hi int
}

// NewTaps returns the taps at these offsets (a copy), at least one.
func NewTaps(off []int) *Taps {
	if len(off) == 0 {
		panic("simd: NewTaps: no taps")
	}
	t := &Taps{off: append([]int(nil), off...), lo: off[0], hi: off[0]}
	for _, o := range off {
		t.lo, t.hi = min(t.lo, o), max(t.hi, o)
	}
	return t
}

// Len is the number of taps.
func (t *Taps) Len() int { return len(t.off) }

// ConvTaps4x3 computes a block of a stride-1 convolution's forward, 4
// output channels × 3 vectors of 8 outputs, straight from a padded input:
// for k < 4, v < 3 and lane l < 8,
//
//	out[k·plane+8v+l] = Σ_{t<T} w[k·T+t] · x[xo[v]+off[t]+l]  (+ bias[k])
//
// summed over the taps in order onto +0, then the bias added (none when
// bias is nil). It is the forward of a convolution over few input
// channels (engine/layers' conv_thin.go): taps holds the T taps' offsets
// off in the padded image, xo each vector's first window. On amd64 with AVX2 and
// FMA (DotRowsFused) each product is fused into the sum; elsewhere the Go
// loop rounds the product, then the sum. It panics if the arguments do
// not fit.
func ConvTaps4x3(out []float32, plane int, w, x []float32, xo *[3]int, taps *Taps, bias []float32) {
	switch {
	case plane < 24 || len(out) < 3*plane+24:
		panic("simd: ConvTaps4x3: out shorter than the block")
	case len(w) < 4*taps.Len():
		panic("simd: ConvTaps4x3: w shorter than 4 rows of taps")
	case bias != nil && len(bias) < 4:
		panic("simd: ConvTaps4x3: bias shorter than 4")
	}
	for _, b := range xo {
		if b+taps.lo < 0 || b+taps.hi+8 > len(x) {
			panic("simd: ConvTaps4x3: a tap's window lies outside x")
		}
	}
	convTaps4x3(out, plane, w, x, xo, taps.off, bias)
}

// convTaps4x3Go is the portable ConvTaps4x3.
func convTaps4x3Go(out []float32, plane int, w, x []float32, xo *[3]int, off []int, bias []float32) {
	taps := len(off)
	for k := range 4 {
		for v := range 3 {
			for l := range 8 {
				var s float32
				for t, o := range off {
					s += w[k*taps+t] * x[xo[v]+o+l]
				}
				if bias != nil {
					s += bias[k]
				}
				out[k*plane+8*v+l] = s
			}
		}
	}
}

package dnnl

// ConvSpec is one 2-D convolution's geometry, in Caffe's terms.
type ConvSpec struct {
	N, C, H, W int // batch and input shape
	OC, OH, OW int // output channels and spatial size
	KH, KW     int // kernel
	SH, SW     int // stride
	PT, PL     int // padding before (top, left)
	PB, PR     int // padding after (bottom, right): what makes OH, OW come out as Caffe's floor rule says
	DH, DW     int // dilation (1: none), as Caffe counts it
	Groups     int
	Bias       bool
}

// Valid reports whether the spec is one a Conv can be made for.
func (s ConvSpec) Valid() bool {
	pos := s.N > 0 && s.C > 0 && s.H > 0 && s.W > 0 && s.OC > 0 && s.OH > 0 && s.OW > 0 &&
		s.KH > 0 && s.KW > 0 && s.SH > 0 && s.SW > 0 && s.DH > 0 && s.DW > 0 && s.Groups > 0
	return pos && s.PT >= 0 && s.PL >= 0 && s.PB >= 0 && s.PR >= 0 && s.C%s.Groups == 0 && s.OC%s.Groups == 0
}

// PadAfter returns the bottom (or right) padding that makes a dimension of
// size in, with padding pad before it, kernel k, stride s and dilation d,
// give out outputs: Caffe pads both sides by pad and floors, so the far
// side may use less than pad. It is negative when out is not reachable.
func PadAfter(in, pad, k, s, d, out int) int {
	return (out-1)*s + (k-1)*d + 1 - in - pad
}

// Sizes returns the element counts of the input, the weights and the
// output.
func (s ConvSpec) Sizes() (src, wei, dst int) {
	return s.N * s.C * s.H * s.W, s.OC * (s.C / s.Groups) * s.KH * s.KW, s.N * s.OC * s.OH * s.OW
}

// PoolSpec is one 2-D pooling's geometry: Caffe's, with the far-side
// padding that makes OH and OW come out as Caffe's ceil rule says. Max
// selects MAX pooling; otherwise it is the average over each window's part
// inside the image, which is Caffe's AVE exactly when there is no padding.
type PoolSpec struct {
	N, C, H, W     int
	OH, OW         int
	KH, KW         int
	SH, SW         int
	PT, PL, PB, PR int
	Max            bool
}

// Valid reports whether the spec is one a Pool can be made for.
func (s PoolSpec) Valid() bool {
	return s.N > 0 && s.C > 0 && s.H > 0 && s.W > 0 && s.OH > 0 && s.OW > 0 && s.KH > 0 && s.KW > 0 &&
		s.SH > 0 && s.SW > 0 && s.PT >= 0 && s.PL >= 0 && s.PB >= 0 && s.PR >= 0
}

// Sizes returns the element counts of the input and the output.
func (s PoolSpec) Sizes() (src, dst int) {
	return s.N * s.C * s.H * s.W, s.N * s.C * s.OH * s.OW
}

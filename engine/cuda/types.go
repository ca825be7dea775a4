package cuda

// Ptr is a device address (CUdeviceptr); 0 is none. Offsets into a
// buffer are byte offsets added to its address (Ptr.Add).
type Ptr uint64

// Add is p advanced by n float32s.
func (p Ptr) Add(n int) Ptr { return p + Ptr(4*n) }

// Pool is a pooling window's geometry over planes of H×W into PH×PW.
type Pool struct {
	Planes, H, W, PH, PW, KH, KW, SH, SW, PadH, PadW int
}

// ConvGeom is a convolution's shape: input N×C×H×W, K outputs of OH×OW,
// kernel, padding, stride, dilation and groups, as Caffe gives them.
type ConvGeom struct {
	N, C, H, W, K, KH, KW, OH, OW, PadH, PadW, StrideH, StrideW, DilationH, DilationW, Groups int
	Bias                                                                                      bool
}

// ChanParts is how many blocks share each of c channels of m values in
// the per-channel sums (BatchNorm's statistics, Scale's gradients):
// enough for about a thousand blocks in all, each with at least a
// thousand values.
func ChanParts(c, m int) int {
	return max(1, min((1024+c-1)/max(c, 1), m/1024))
}

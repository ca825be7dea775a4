package cuda

import (
	"fmt"
	"math"
)

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

// maxArgs is the most arguments a kernel launch passes.
const maxArgs = 32

// packArgs writes a kernel's arguments into vals as the driver reads
// them, one 8-byte slot each: an int as an int32 and a uint32 or float32
// in the low 4 bytes, the rest zero; a Ptr in all 8. args does not
// escape, so a launch boxes its arguments on the stack.
func packArgs(vals *[maxArgs]uint64, args []any) error {
	if len(args) > maxArgs {
		return fmt.Errorf("%d arguments, at most %d", len(args), maxArgs)
	}
	for i, a := range args {
		switch v := a.(type) {
		case int:
			vals[i] = uint64(uint32(int32(v)))
		case uint32:
			vals[i] = uint64(v)
		case float32:
			vals[i] = uint64(math.Float32bits(v))
		case Ptr:
			vals[i] = uint64(v)
		default:
			// Not a in the message: passing it on would make every
			// launch's arguments escape to the heap.
			return fmt.Errorf("argument %d is not an int, uint32, float32 or Ptr", i)
		}
	}
	return nil
}

package dnnl

import (
	"errors"
	"fmt"
	"strings"
)

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
	// Winograd asks for oneDNN's Winograd kernels (F(4x4, 3x3): 3x3,
	// stride 1, no dilation or groups, AVX-512 and up in oneDNN 2.6) for
	// all three passes, and takes the direct ones where oneDNN has no
	// Winograd kernel for any of them. Impl names what was built.
	Winograd bool
	// Plain runs the primitives on the caller's NCHW activations (src,
	// dst and their gradients), with no reorder to a blocked layout:
	// oneDNN then picks its kernel for plain layouts (a JIT-GEMM one,
	// x64:gemm:jit, where it has no direct kernel for them). The weights
	// keep the layout oneDNN picks.
	Plain bool
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
// side may use less than pad. Where the stride leaves the input's last
// rows in no window (a 1×1 stride-2 projection over an even size, as in
// every ResNet), it is 0: oneDNN floors the output size as Caffe does, so
// no padding gives out too, and those rows get a zero gradient. It is
// negative only when out is not reachable at all.
func PadAfter(in, pad, k, s, d, out int) int {
	p := (out-1)*s + (k-1)*d + 1 - in - pad
	if p < 0 && (in+pad-((k-1)*d+1))/s+1 == out {
		return 0
	}
	return p
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

// Layout is the memory layout a primitive runs on: Plain (the caller's
// NCHW, no reorder) or channels blocked by 8 or 16 (oneDNN's nChw8c and
// nChw16c), reordered from and to NCHW inside each call.
type Layout int

const (
	// Plain is NCHW, Caffe's layout.
	Plain Layout = 0
	// Block8 is nChw8c: channels in blocks of 8, AVX2's register width.
	Block8 Layout = 8
	// Block16 is nChw16c: channels in blocks of 16, AVX-512's.
	Block16 Layout = 16
	// Blocked is whatever blocked layout oneDNN picks for the kernel (a
	// convolution's activations).
	Blocked Layout = -1
)

func (l Layout) String() string {
	switch l {
	case Plain:
		return "nchw"
	case Block8:
		return "nChw8c"
	case Block16:
		return "nChw16c"
	case Blocked:
		return "blocked"
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// Impl names the oneDNN implementations a primitive runs ("jit:avx2",
// "jit:avx512_core", or reference code such as "simple_nchw:any" and
// "lrn_ref:any") and the layout it runs them on.
type Impl struct {
	Forward, Backward string
	Layout            Layout
}

// JIT says whether both passes run on oneDNN's JIT-compiled kernels
// ("jit:avx2", "lrn_jit:avx512_core", "x64:gemm:jit") rather than its
// reference code ("simple_nchw:any", "lrn_ref:any", "ref:any").
func (i Impl) JIT() bool { return isJIT(i.Forward) && isJIT(i.Backward) }

func isJIT(name string) bool { return strings.Contains(name, "jit") && !strings.Contains(name, "ref") }

// String is "jit:avx2 on nChw8c", with both passes' names where they
// differ ("jit:avx2 / ref:any on nchw").
func (i Impl) String() string {
	name := i.Forward
	if i.Backward != i.Forward {
		name += " / " + i.Backward
	}
	return name + " on " + i.Layout.String()
}

// ErrNoJIT is wrapped by NewPool and NewLRN when oneDNN would run the
// primitive on its reference code on every layout tried.
var ErrNoJIT = errors.New("no JIT kernel")

// NoJITError is NewPool's and NewLRN's error when oneDNN has no JIT
// kernel for the primitive on any layout tried: What is the primitive,
// Tried each layout's implementation ("simple_nchw:any on nchw").
type NoJITError struct {
	What  string
	Tried []string
}

func (e *NoJITError) Error() string {
	return fmt.Sprintf("dnnl: %s: %v on any layout (%s)", e.What, ErrNoJIT, strings.Join(e.Tried, "; "))
}

// Unwrap makes errors.Is(err, ErrNoJIT) hold.
func (e *NoJITError) Unwrap() error { return ErrNoJIT }

// Short is the reason without the geometry, for a layer's report:
// "oneDNN has only reference code here: simple_nchw:any on nchw".
func (e *NoJITError) Short() string {
	return "oneDNN has only reference code here: " + strings.Join(e.Tried, "; ")
}

package layers

// This file declares the configuration of every layer type dsgd supports:
// the fields of Caffe's *_param messages, with Caffe's defaults noted. The
// caffedef package fills these from prototxt; tests and the model zoo may
// build them directly. Zero values are NOT Caffe's defaults where a default
// is noted: the caffedef package applies defaults, and each Build rejects
// values that are out of range.

// PoolMethod selects max, average or stochastic pooling.
type PoolMethod int

const (
	// PoolMax is Caffe's MAX pooling.
	PoolMax PoolMethod = iota
	// PoolAve is Caffe's AVE pooling.
	PoolAve
	// PoolStochastic is Caffe's STOCHASTIC pooling (Zeiler and Fergus
	// 2013, for non-negative inputs): in Train each window outputs one of
	// its elements, drawn with probability proportional to its value, and
	// the gradient goes to it; in Test the probability-weighted average
	// Σx²/Σx (0 where Σx ≤ 0).
	PoolStochastic
)

// ConvolutionConfig is Caffe's ConvolutionParameter. The H/W fields give
// a plain 2-D convolution over NCHW blobs; ND, when set, carries the
// repeated (N-D) fields, axis and force_nd_im2col as Caffe reads them.
type ConvolutionConfig struct {
	NumOutput        int
	KernelH, KernelW int
	StrideH, StrideW int // default 1
	PadH, PadW       int // default 0
	// DilationH and DilationW space the kernel's taps (Caffe's dilation);
	// 0 or 1 is a plain convolution.
	DilationH, DilationW int
	Group                int  // default 1
	BiasTerm             bool // default true
	WeightFiller         Filler
	BiasFiller           Filler
	// ND is nil for a convolution described by the fields above: 2-D
	// over NCHW blobs, or, where each H field equals its W field, Caffe's
	// single kernel_size, stride, pad and dilation over any number of
	// spatial axes after axis 1. Otherwise the layer resolves its geometry
	// from ND against the bottom's shape at Setup, as Caffe does.
	ND *ConvND
}

// ConvND is the N-D part of Caffe's ConvolutionParameter: the repeated
// kernel_size, stride, pad and dilation as given (each empty, one value
// for every spatial axis, or one value per spatial axis), the channel axis
// and force_nd_im2col. The spatial axes are those after Axis; the axes
// before it are batch-like.
type ConvND struct {
	// Axis is the channel axis (Caffe's axis, default 1); negative counts
	// from the end.
	Axis                          int
	Kernel, Stride, Pad, Dilation []int
	// KernelHW, StrideHW and PadHW say the kernel_h/kernel_w (stride_h/w,
	// pad_h/w) fields were given: the H/W fields of the ConvolutionConfig
	// hold them, and the convolution must have exactly 2 spatial axes.
	KernelHW, StrideHW, PadHW bool
	// ForceND runs the N-D im2col path even on 2 spatial axes.
	ForceND bool
}

// PoolingConfig is Caffe's PoolingParameter. Output size uses Caffe's ceil
// rounding (or floor, with RoundFloor), with the last window clipped to
// start inside the padded input.
type PoolingConfig struct {
	Method           PoolMethod
	KernelH, KernelW int
	StrideH, StrideW int // default 1
	PadH, PadW       int
	GlobalPooling    bool
	// RoundFloor is Caffe's round_mode: FLOOR (Caffe master): the pooled
	// size is floor((size + 2·pad − kernel)/stride) + 1, so no window
	// overhangs the padded input; false is CEIL, Caffe's default.
	RoundFloor bool
}

// InnerProductConfig is Caffe's InnerProductParameter.
type InnerProductConfig struct {
	NumOutput    int
	BiasTerm     bool // default true
	Axis         int  // default 1: dimensions from Axis on are flattened
	Transpose    bool // weight stored as K×N instead of N×K
	WeightFiller Filler
	BiasFiller   Filler
}

// ReLUConfig is Caffe's ReLUParameter (leaky when NegativeSlope != 0).
type ReLUConfig struct {
	NegativeSlope float32
}

// SigmoidConfig configures a Sigmoid layer (no fields).
type SigmoidConfig struct{}

// TanHConfig configures a TanH layer (no fields).
type TanHConfig struct{}

// DropoutConfig is Caffe's DropoutParameter: inverted dropout that scales
// kept activations by 1/(1-Ratio) in training and is the identity in test.
type DropoutConfig struct {
	Ratio float32 // default 0.5
}

// LRNRegion selects the LRN normalisation region.
type LRNRegion int

const (
	// AcrossChannels is Caffe's ACROSS_CHANNELS.
	AcrossChannels LRNRegion = iota
	// WithinChannel is Caffe's WITHIN_CHANNEL.
	WithinChannel
)

// LRNConfig is Caffe's LRNParameter.
type LRNConfig struct {
	LocalSize  int     // default 5, odd
	Alpha      float32 // default 1
	Beta       float32 // default 0.75
	K          float32 // default 1
	NormRegion LRNRegion
}

// ConcatConfig is Caffe's ConcatParameter.
type ConcatConfig struct {
	Axis int // default 1; negative counts from the end
}

// EltwiseOp is an Eltwise operation.
type EltwiseOp int

const (
	// EltwiseProd multiplies the bottoms.
	EltwiseProd EltwiseOp = iota
	// EltwiseSum adds the bottoms, each times its coefficient.
	EltwiseSum
	// EltwiseMax takes the elementwise maximum.
	EltwiseMax
)

// EltwiseConfig is Caffe's EltwiseParameter.
type EltwiseConfig struct {
	Operation EltwiseOp // default SUM
	Coeff     []float32 // SUM only; empty means all 1
	// UnstableProdGrad is Caffe's stable_prod_grad: false: PROD's
	// gradient to bottom i is top/bottom_i·dtop, which is Inf or NaN where
	// bottom_i is 0, instead of the product of the other bottoms (the
	// default, Caffe's stable_prod_grad: true).
	UnstableProdGrad bool
}

// FlattenConfig is Caffe's FlattenParameter.
type FlattenConfig struct {
	Axis    int // default 1
	EndAxis int // default -1
}

// BatchNormConfig is Caffe's BatchNormParameter. Its three stored blobs
// (mean, variance, moving-average factor) are Frozen params.
type BatchNormConfig struct {
	// UseGlobalStats selects the stored statistics instead of the batch's;
	// nil means Caffe's default: false in Train, true in Test.
	UseGlobalStats        *bool
	MovingAverageFraction float32 // default 0.999
	Eps                   float32 // default 1e-5
}

// ScaleConfig is Caffe's ScaleParameter (with its bias term). With one
// bottom the scale is a learned param of shape bottom[0].Shape[Axis :
// Axis+NumAxes]; with two bottoms the second is the scale.
type ScaleConfig struct {
	Axis       int    // default 1
	NumAxes    int    // default 1
	Filler     Filler // default constant 1
	BiasTerm   bool
	BiasFiller Filler // default constant 0
}

// SoftmaxConfig is Caffe's SoftmaxParameter.
type SoftmaxConfig struct {
	Axis int // default 1
}

// LossNormalization is Caffe's LossParameter.NormalizationMode.
type LossNormalization int

const (
	// NormValid divides by the number of labels not ignored (Caffe's default).
	NormValid LossNormalization = iota
	// NormBatchSize divides by the outer (batch) dimension.
	NormBatchSize
	// NormFull divides by outer·inner count, ignored labels included.
	NormFull
	// NormNone does not divide.
	NormNone
)

// SoftmaxWithLossConfig is SoftmaxParameter plus Caffe's LossParameter.
// Labels arrive as float32 holding integer class indices.
type SoftmaxWithLossConfig struct {
	Axis          int  // default 1
	IgnoreLabel   *int // nil: none
	Normalization LossNormalization
}

// AccuracyConfig is Caffe's AccuracyParameter. Its optional second top
// receives per-class accuracy.
type AccuracyConfig struct {
	TopK        int // default 1
	Axis        int // default 1
	IgnoreLabel *int
}

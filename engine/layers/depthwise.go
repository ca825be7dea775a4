package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// DepthwiseConvolutionConfig is the depthwise convolution of Caffe forks
// (MobileNet and Xception ports): a Convolution whose group is the
// bottom's channel count, known only when the net is built. Conv carries
// the convolution_param as read; its Group and NumOutput may be 0 (not
// given), and Setup resolves them against the bottom.
//
// The two fork spellings differ in what they read:
//   - "ConvolutionDepthwise" (BVLC/caffe pull request 5665, the fork most
//     MobileNet ports ship) outputs one channel per input channel and
//     ignores num_output and group; dsgd requires num_output, when given,
//     to equal the channel count, so that a file cannot mean something
//     else here than in the fork.
//   - "DepthwiseConvolution" (yonghenglh6/DepthwiseConvolution) is a
//     Convolution whose file sets group to the channel count; dsgd takes
//     group as the channel count when absent and allows num_output a
//     multiple of it (a depth multiplier).
//
// Both store the weights as Caffe's grouped Convolution does,
// num_output×1×kh×kw, so .caffemodel weights load unchanged. Under
// engine/gpunet the layer has no GPU op yet and runs on the CPU with
// copies, as every such layer does.
type DepthwiseConvolutionConfig struct {
	// Fork is the layer type as the file spells it: "ConvolutionDepthwise"
	// or "DepthwiseConvolution".
	Fork string
	// Conv is the convolution_param; Group and NumOutput 0 mean "the
	// bottom's channel count".
	Conv ConvolutionConfig
}

// Type returns the fork's type name.
func (c *DepthwiseConvolutionConfig) Type() string {
	if c.Fork == "" {
		return "ConvolutionDepthwise"
	}
	return c.Fork
}

// Build checks what it can before the bottom's shape is known (the window,
// the fork name) and returns a layer that builds its Convolution at Setup.
func (c *DepthwiseConvolutionConfig) Build(ctx Context) (Layer, error) {
	switch c.Type() {
	case "ConvolutionDepthwise", "DepthwiseConvolution":
	default:
		return nil, fmt.Errorf("layers: depthwise convolution: unknown fork type %q", c.Fork)
	}
	if c.Conv.NumOutput < 0 || c.Conv.Group < 0 {
		return nil, fmt.Errorf("layers: %s: num_output %d and group %d must not be negative", c.Type(), c.Conv.NumOutput, c.Conv.Group)
	}
	probe := c.Conv
	probe.NumOutput, probe.Group = 1, 1
	if _, err := probe.Build(ctx); err != nil {
		return nil, fmt.Errorf("layers: %s: %w", c.Type(), err)
	}
	return &depthwiseLayer{cfg: *c, ctx: ctx}, nil
}

// depthwiseLayer resolves the group at Setup and runs the Convolution
// layer it then builds; every call after Setup goes to that layer.
type depthwiseLayer struct {
	cfg  DepthwiseConvolutionConfig
	ctx  Context
	conv Layer
}

func (l *depthwiseLayer) Type() string { return l.cfg.Type() }

// Resolve returns the Convolution the layer runs on a bottom of the given
// channel count: group set to it, num_output to it when not given.
func (c *DepthwiseConvolutionConfig) Resolve(channels int) (ConvolutionConfig, error) {
	r := c.Conv
	typ := c.Type()
	if r.Group != 0 && r.Group != channels {
		return r, fmt.Errorf("layers: %s: group %d must equal the bottom's %d channels (or be left out)", typ, r.Group, channels)
	}
	if r.NumOutput == 0 {
		r.NumOutput = channels
	}
	if typ == "ConvolutionDepthwise" && r.NumOutput != channels {
		return r, fmt.Errorf("layers: %s: num_output %d must equal the bottom's %d channels: the fork's layer gives one output channel per input channel whatever num_output says", typ, r.NumOutput, channels)
	}
	if r.NumOutput%channels != 0 {
		return r, fmt.Errorf("layers: %s: num_output %d must be a multiple of the bottom's %d channels", typ, r.NumOutput, channels)
	}
	r.Group = channels
	return r, nil
}

func (l *depthwiseLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkPairs(l.Type(), bottom, top); err != nil {
		return err
	}
	s := bottom[0].Shape
	axis := 1
	if l.cfg.Conv.ND != nil {
		axis = l.cfg.Conv.ND.Axis
		if axis < 0 {
			axis += len(s)
		}
	}
	if axis < 0 || axis >= len(s) {
		return fmt.Errorf("layers: %s: bottom %q of shape %v has no channel axis %d", l.Type(), bottom[0].Name, s, axis)
	}
	c, err := l.cfg.Resolve(s[axis])
	if err != nil {
		return err
	}
	conv, err := c.Build(l.ctx)
	if err != nil {
		return fmt.Errorf("layers: %s: %w", l.Type(), err)
	}
	l.conv = conv
	return conv.Setup(bottom, top)
}

func (l *depthwiseLayer) Params() []Param { return l.conv.Params() }

func (l *depthwiseLayer) Reshape(bottom, top []*tensor.Blob) error {
	return l.conv.Reshape(bottom, top)
}

func (l *depthwiseLayer) Forward(bottom, top []*tensor.Blob) { l.conv.Forward(bottom, top) }

func (l *depthwiseLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	l.conv.Backward(top, propagateDown, bottom)
}

// SetParamPropagate implements ParamPropagator for the Convolution inside.
func (l *depthwiseLayer) SetParamPropagate(on []bool) {
	if p, ok := l.conv.(ParamPropagator); ok {
		p.SetParamPropagate(on)
	}
}

// Kernel names the Convolution's kernel (dsgd time's column).
func (l *depthwiseLayer) Kernel() string {
	if k, ok := l.conv.(interface{ Kernel() string }); ok {
		return k.Kernel()
	}
	return ""
}

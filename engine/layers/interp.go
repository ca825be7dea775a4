package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// InterpConfig is the InterpParameter of PSPNet's Caffe fork
// (hszhao/PSPNet, after DeepLab's): interp_param { height, width,
// zoom_factor, shrink_factor, pad_beg, pad_end }. A size field 0 means not
// given.
type InterpConfig struct {
	// Height and Width give the output size (both or neither).
	Height, Width int
	// ZoomFactor z gives size + (size−1)·(z−1); ShrinkFactor s gives
	// (size−1)/s + 1; with both, shrink then zoom.
	ZoomFactor, ShrinkFactor int
	// PadBeg and PadEnd (≤ 0) crop the input before resizing.
	PadBeg, PadEnd int
}

// Type returns "Interp".
func (*InterpConfig) Type() string { return "Interp" }

// Build returns an Interp layer: a bilinear resize of each N×C plane of
// the (cropped) bottom with the corners aligned (input pixel 0 and the
// last input pixel fall on output pixels 0 and the last), as PSPNet's fork
// computes it: the ratio (in−1)/(out−1) and each source coordinate in
// float32, the weights from its fraction. The output size follows PSPNet's
// precedence: shrink_factor alone, zoom_factor alone, height and width,
// then shrink and zoom together. Backward scatters each top diff to the
// four input pixels by the same weights.
func (c *InterpConfig) Build(Context) (Layer, error) {
	switch {
	case c.ZoomFactor < 0 || c.ShrinkFactor < 0:
		return nil, fmt.Errorf("layers: Interp: zoom_factor and shrink_factor must be at least 1, got %d and %d", c.ZoomFactor, c.ShrinkFactor)
	case c.Height < 0 || c.Width < 0 || (c.Height == 0) != (c.Width == 0):
		return nil, fmt.Errorf("layers: Interp: give both height and width (positive) or neither, got %d and %d", c.Height, c.Width)
	case c.ZoomFactor == 0 && c.ShrinkFactor == 0 && c.Height == 0:
		return nil, fmt.Errorf("layers: Interp needs the output size: zoom_factor, shrink_factor, or height and width")
	case c.PadBeg > 0 || c.PadEnd > 0:
		return nil, fmt.Errorf("layers: Interp: pad_beg and pad_end crop and must not be positive, got %d and %d", c.PadBeg, c.PadEnd)
	}
	return &interpLayer{cfg: *c}, nil
}

type interpLayer struct {
	cfg        InterpConfig
	planes     int
	hIn, wIn   int // the bottom's plane
	hEff, wEff int // the cropped input
	hOut, wOut int
	rows, cols []interpTap
}

// interpTap is one output coordinate's source: index i and i+step with
// weights 1−lambda and lambda.
type interpTap struct {
	i, step int
	lambda  float32
}

func (*interpLayer) Type() string    { return "Interp" }
func (*interpLayer) Params() []Param { return nil }

func (l *interpLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Interp", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	if top[0] == bottom[0] {
		return fmt.Errorf("layers: Interp cannot run in place: give it a top of its own")
	}
	return nil
}

// outSize is PSPNet's output size for one axis of effective size in.
func (c *InterpConfig) outSize(in, given int) int {
	zoom := func(n int) int { return n + (n-1)*(c.ZoomFactor-1) }
	shrink := func(n int) int { return (n-1)/c.ShrinkFactor + 1 }
	switch {
	case c.ShrinkFactor > 0 && c.ZoomFactor == 0:
		return shrink(in)
	case c.ZoomFactor > 0 && c.ShrinkFactor == 0:
		return zoom(in)
	case given > 0:
		return given
	}
	return zoom(shrink(in))
}

// taps fills the source of each of out coordinates over an input of n.
func taps(dst []interpTap, n, out int) []interpTap {
	dst = dst[:0]
	var r float32
	if out > 1 {
		r = float32(n-1) / float32(out-1)
	}
	for o := range out {
		if n == out {
			dst = append(dst, interpTap{i: o})
			continue
		}
		f := r * float32(o)
		i := int(f)
		t := interpTap{i: i, lambda: f - float32(i)}
		if i < n-1 {
			t.step = 1
		}
		dst = append(dst, t)
	}
	return dst
}

func (l *interpLayer) Reshape(bottom, top []*tensor.Blob) error {
	s := bottom[0].Shape
	if len(s) != 4 {
		return fmt.Errorf("layers: Interp: bottom %v must be 4-D (NCHW)", s)
	}
	l.planes, l.hIn, l.wIn = s[0]*s[1], s[2], s[3]
	l.hEff, l.wEff = l.hIn+l.cfg.PadBeg+l.cfg.PadEnd, l.wIn+l.cfg.PadBeg+l.cfg.PadEnd
	if l.hEff <= 0 || l.wEff <= 0 {
		return fmt.Errorf("layers: Interp: pad_beg %d and pad_end %d crop bottom %v to nothing", l.cfg.PadBeg, l.cfg.PadEnd, s)
	}
	l.hOut, l.wOut = l.cfg.outSize(l.hEff, l.cfg.Height), l.cfg.outSize(l.wEff, l.cfg.Width)
	if l.hOut <= 0 || l.wOut <= 0 {
		return fmt.Errorf("layers: Interp: output size %dx%d for bottom %v", l.hOut, l.wOut, s)
	}
	// The top first: a size no machine holds stops there (tensor's
	// SizeError), before the taps are allocated for it. An axis whose size
	// is unchanged is copied: the fork's copy when both are, and what its
	// weights (ratio 1, fraction 0) give when one is.
	top[0].Reshape(s[0], s[1], l.hOut, l.wOut)
	l.rows = taps(l.rows, l.hEff, l.hOut)
	l.cols = taps(l.cols, l.wEff, l.wOut)
	return nil
}

func (l *interpLayer) Forward(bottom, top []*tensor.Blob) {
	in, out := l.hIn*l.wIn, l.hOut*l.wOut
	off := -l.cfg.PadBeg*l.wIn - l.cfg.PadBeg
	for p := range l.planes {
		x, y := bottom[0].Data[p*in+off:], top[0].Data[p*out:(p+1)*out]
		for h, r := range l.rows {
			h0, h1 := float32(1)-r.lambda, r.lambda
			a, b := x[r.i*l.wIn:], x[(r.i+r.step)*l.wIn:]
			for w, c := range l.cols {
				w0, w1 := float32(1)-c.lambda, c.lambda
				y[h*l.wOut+w] = h0*(w0*a[c.i]+w1*a[c.i+c.step]) + h1*(w0*b[c.i]+w1*b[c.i+c.step])
			}
		}
	}
}

func (l *interpLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	in, out := l.hIn*l.wIn, l.hOut*l.wOut
	clear(bottom[0].Diff[:bottom[0].Count()])
	off := -l.cfg.PadBeg*l.wIn - l.cfg.PadBeg
	for p := range l.planes {
		dx, dy := bottom[0].Diff[p*in+off:], top[0].Diff[p*out:(p+1)*out]
		for h, r := range l.rows {
			h0, h1 := float32(1)-r.lambda, r.lambda
			a, b := dx[r.i*l.wIn:], dx[(r.i+r.step)*l.wIn:]
			for w, c := range l.cols {
				w0, w1 := float32(1)-c.lambda, c.lambda
				d := dy[h*l.wOut+w]
				a[c.i] += h0 * w0 * d
				a[c.i+c.step] += h0 * w1 * d
				b[c.i] += h1 * w0 * d
				b[c.i+c.step] += h1 * w1 * d
			}
		}
	}
}

package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
)

// SmoothL1LossConfig is the SmoothL1LossParameter of Faster R-CNN's Caffe
// fork (rbgirshick/caffe-fast-rcnn, branch faster-rcnn, which
// py-faster-rcnn builds): smooth_l1_loss_param { sigma = 1 (default 1) },
// field 8266712 of LayerParameter. Fast R-CNN's older branch (fast-rcnn)
// has no parameter message: its loss is sigma 1.
type SmoothL1LossConfig struct {
	// Sigma moves the switch from the quadratic to the linear part to
	// |d| = 1/σ² (py-faster-rcnn's RPN loss uses 3).
	Sigma float32
}

// Type returns "SmoothL1Loss".
func (*SmoothL1LossConfig) Type() string { return "SmoothL1Loss" }

// Build returns Fast/Faster R-CNN's SmoothL1Loss layer. Its bottoms are
// the predictions, the targets and optionally the inside weights and the
// outside weights (2 to 4 bottoms, all of one shape); its top is the
// scalar loss, a loss by default (loss_weight 1):
//
//	loss = Σ w_out·f(w_in·(pred − target)) / N,
//	f(d) = 0.5·(σd)² for |d| < 1/σ², |d| − 0.5/σ² otherwise,
//
// N the first axis of the predictions (the fork divides by bottom[0]'s
// num). Four bottoms are Faster R-CNN's (inside and outside weights); three
// are Fast R-CNN's older form (inside weights only, outside weights 1),
// which the faster-rcnn branch refuses. Backward gives the predictions
// w_out·w_in·f'(d)/N times the top's diff and the targets its negative
// (f'(d) = σ²d, or sign(d) from 1/σ² on); the weights take no gradient,
// as in the fork, whose backward only fills bottoms 0 and 1: a net that
// asks for theirs explicitly (propagate_down) is refused, and
// force_backward passes them over. (Fast R-CNN's three-bottom backward
// leaves out the inside weight's factor, which changes nothing for its 0/1
// weights; dsgd gives the derivative of the forward.)
func (c *SmoothL1LossConfig) Build(Context) (Layer, error) {
	s := float64(c.Sigma)
	// The fork keeps σ² in a float: it must neither overflow nor vanish.
	if s2 := float32(s * s); !(s > 0) || math.IsInf(s, 0) || math.IsInf(float64(s2), 0) || s2 < 0x1p-126 {
		return nil, fmt.Errorf("layers: SmoothL1Loss: sigma must be positive and finite, with σ² a normal float32, got %g", c.Sigma)
	}
	return &smoothL1LossLayer{sigma2: s * s}, nil
}

type smoothL1LossLayer struct {
	sigma2 float64
	d      []float64 // w_in·(pred − target) of the last Forward
}

func (*smoothL1LossLayer) Type() string    { return "SmoothL1Loss" }
func (*smoothL1LossLayer) Params() []Param { return nil }

// IsLoss marks SmoothL1Loss as a loss layer (loss_weight 1 by default).
func (*smoothL1LossLayer) IsLoss() {}

// AllowBackward implements GradientBlocker: only the predictions and the
// targets take a gradient, as in the fork.
func (*smoothL1LossLayer) AllowBackward(i int) bool { return i < 2 }

func (l *smoothL1LossLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("SmoothL1Loss", bottom, top, 2, 4, 1, 1); err != nil {
		return fmt.Errorf("%w (predictions, targets, and optionally the inside and the outside weights)", err)
	}
	for _, b := range bottom {
		if top[0] == b {
			return fmt.Errorf("layers: SmoothL1Loss cannot run in place: its top is the scalar loss")
		}
	}
	return l.Reshape(bottom, top)
}

// trimOnes drops a shape's trailing axes of 1, so that N×C and N×C×1×1
// compare equal, as the fork's legacy num/channels/height/width checks
// read them.
func trimOnes(s tensor.Shape) tensor.Shape {
	for len(s) > 1 && s[len(s)-1] == 1 {
		s = s[:len(s)-1]
	}
	return s
}

func (l *smoothL1LossLayer) Reshape(bottom, top []*tensor.Blob) error {
	s := bottom[0].Shape
	if len(s) == 0 {
		return fmt.Errorf("layers: SmoothL1Loss: the predictions (bottom 0) need a first axis, the batch, got a scalar")
	}
	names := []string{"predictions", "targets", "inside weights", "outside weights"}
	for i, b := range bottom[1:] {
		if !trimOnes(b.Shape).Equal(trimOnes(s)) {
			return fmt.Errorf("layers: SmoothL1Loss: the %s (bottom %d) are %v, the predictions %v: all bottoms must have one shape", names[i+1], i+1, b.Shape, s)
		}
	}
	n := bottom[0].Count()
	if cap(l.d) < n {
		l.d = make([]float64, n)
	}
	l.d = l.d[:n]
	top[0].Reshape()
	return nil
}

func (l *smoothL1LossLayer) Forward(bottom, top []*tensor.Blob) {
	p, t := bottom[0].Data, bottom[1].Data
	var in, out []float32
	if len(bottom) > 2 {
		in = bottom[2].Data
	}
	if len(bottom) > 3 {
		out = bottom[3].Data
	}
	s2 := l.sigma2
	var sum float64
	for i := range l.d {
		d := float64(p[i]) - float64(t[i])
		if in != nil {
			d *= float64(in[i])
		}
		l.d[i] = d
		var f float64
		if a := math.Abs(d); a < 1/s2 {
			f = 0.5 * s2 * d * d
		} else {
			f = a - 0.5/s2
		}
		if out != nil {
			f *= float64(out[i])
		}
		sum += f
	}
	var loss float64
	if num := bottom[0].Shape[0]; num > 0 {
		loss = sum / float64(num)
	}
	top[0].Data[0] = float32(loss)
}

func (l *smoothL1LossLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	num := bottom[0].Shape[0]
	if num == 0 {
		return
	}
	g := float64(top[0].Diff[0]) / float64(num)
	var in, out []float32
	if len(bottom) > 2 {
		in = bottom[2].Data
	}
	if len(bottom) > 3 {
		out = bottom[3].Data
	}
	s2 := l.sigma2
	for k, sign := range []float64{1, -1} {
		if k >= len(propagateDown) || !propagateDown[k] {
			continue
		}
		dx := bottom[k].Diff
		for i, d := range l.d {
			var fp float64
			switch {
			case math.Abs(d) < 1/s2:
				fp = s2 * d
			case d > 0:
				fp = 1
			case d < 0:
				fp = -1
			}
			v := sign * g * fp
			if in != nil {
				v *= float64(in[i])
			}
			if out != nil {
				v *= float64(out[i])
			}
			dx[i] = float32(v)
		}
	}
}

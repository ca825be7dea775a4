package layers

import (
	"fmt"
	"math"

	"dsgd/tensor"
)

// Type returns "BatchNorm".
func (*BatchNormConfig) Type() string { return "BatchNorm" }

// Build returns Caffe's BatchNorm layer. It normalises each channel (axis 1)
// of its one bottom to zero mean and unit variance, with no learned scale or
// shift (a Scale layer follows for that), and may run in place.
//
// Its three Frozen params are Caffe's blobs: the running mean [C], the
// running variance [C] and a one-element moving-average factor f. With batch
// statistics, each Forward updates them as Caffe does: f = f·λ + 1,
// mean = μ + λ·mean and variance = m/(m-1)·σ² + λ·variance, where λ is
// MovingAverageFraction, m the number of values per channel and σ² the
// biased batch variance. With global statistics the layer normalises with
// mean/f and variance/f (zero when f is zero).
func (c *BatchNormConfig) Build(ctx Context) (Layer, error) {
	if f := c.MovingAverageFraction; !(f >= 0 && f <= 1) {
		return nil, fmt.Errorf("layers: BatchNorm: moving_average_fraction %v outside [0, 1]", f)
	}
	if !(c.Eps >= 0) || math.IsInf(float64(c.Eps), 0) {
		return nil, fmt.Errorf("layers: BatchNorm: eps %v must be finite and non-negative", c.Eps)
	}
	global := ctx.Phase == Test
	if c.UseGlobalStats != nil {
		global = *c.UseGlobalStats
	}
	return &batchNormLayer{global: global, maf: c.MovingAverageFraction, eps: c.Eps}, nil
}

type batchNormLayer struct {
	global   bool // normalise with the stored statistics
	maf, eps float32
	params   []Param // mean, variance, factor

	num, channels, spatial int
	mean, variance         []float32 // per channel, of the current Forward
	std                    []float32 // per channel: sqrt(variance + eps)
	xnorm                  []float32 // the normalised output, for Backward
	meanDy, meanDyY        []float32 // per channel, Backward's scratch
}

func (*batchNormLayer) Type() string      { return "BatchNorm" }
func (l *batchNormLayer) Params() []Param { return l.params }

func (l *batchNormLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("BatchNorm", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	if len(bottom[0].Shape) == 0 {
		return fmt.Errorf("layers: BatchNorm: bottom has no axes")
	}
	l.channels = bottom[0].Dim(1)
	if len(bottom[0].Shape) == 1 {
		l.channels = 1
	}
	l.params = []Param{
		{Blob: tensor.NewBlob("mean", l.channels), Frozen: true},
		{Blob: tensor.NewBlob("variance", l.channels), Frozen: true},
		{Blob: tensor.NewBlob("moving_average_factor", 1), Frozen: true},
	}
	l.mean = make([]float32, l.channels)
	l.variance = make([]float32, l.channels)
	l.std = make([]float32, l.channels)
	l.meanDy = make([]float32, l.channels)
	l.meanDyY = make([]float32, l.channels)
	return l.Reshape(bottom, top)
}

func (l *batchNormLayer) Reshape(bottom, top []*tensor.Blob) error {
	b := bottom[0]
	c := 1
	if len(b.Shape) > 1 {
		c = b.Shape[1]
	}
	if len(b.Shape) == 0 || c != l.channels {
		return fmt.Errorf("layers: BatchNorm: bottom shape %v does not have the %d channels the layer was set up with", b.Shape, l.channels)
	}
	l.num = b.Shape[0]
	l.spatial = 0
	if l.num*c > 0 {
		l.spatial = b.Count() / (l.num * c)
	}
	if b != top[0] {
		top[0].ReshapeLike(b)
	}
	if !l.global {
		l.xnorm = fitBuf(l.xnorm, b.Count())
	}
	return nil
}

func (l *batchNormLayer) Forward(bottom, top []*tensor.Blob) {
	x, y := bottom[0].Data, top[0].Data
	m := l.num * l.spatial
	if l.global {
		f := l.params[2].Blob.Data[0]
		var s float32
		if f != 0 {
			s = 1 / f
		}
		for c := range l.channels {
			l.mean[c] = s * l.params[0].Blob.Data[c]
			l.variance[c] = s * l.params[1].Blob.Data[c]
		}
	} else {
		l.channelMeans(l.mean, x, nil, m)
	}
	// y = x - mean, then (batch statistics) variance = mean of y².
	for n := range l.num {
		for c := range l.channels {
			off := (n*l.channels + c) * l.spatial
			xs, ys, mu := x[off:off+l.spatial], y[off:off+l.spatial], l.mean[c]
			for i, v := range xs {
				ys[i] = v - mu
			}
		}
	}
	if !l.global {
		l.channelMeans(l.variance, y, y, m)
		l.updateStats(m)
	}
	for c := range l.channels {
		l.std[c] = float32(math.Sqrt(float64(l.variance[c]) + float64(l.eps)))
	}
	for n := range l.num {
		for c := range l.channels {
			off := (n*l.channels + c) * l.spatial
			ys, inv := y[off:off+l.spatial], 1/l.std[c]
			for i := range ys {
				ys[i] *= inv
			}
		}
	}
	if !l.global {
		copy(l.xnorm, y[:len(l.xnorm)])
	}
}

// channelMeans sets dst[c] to the mean over images and positions of
// a·b in channel c, or of a alone when b is nil; m is the number of values
// per channel.
func (l *batchNormLayer) channelMeans(dst, a, b []float32, m int) {
	for c := range l.channels {
		var s float64
		for n := range l.num {
			off := (n*l.channels + c) * l.spatial
			as := a[off : off+l.spatial]
			if b == nil {
				for _, v := range as {
					s += float64(v)
				}
				continue
			}
			bs := b[off : off+l.spatial]
			for i, v := range as {
				s += float64(v) * float64(bs[i])
			}
		}
		if m > 0 {
			s /= float64(m)
		}
		dst[c] = float32(s)
	}
}

// updateStats folds this batch's mean and variance into the stored
// statistics, as Caffe does.
func (l *batchNormLayer) updateStats(m int) {
	mean, variance, factor := l.params[0].Blob.Data, l.params[1].Blob.Data, l.params[2].Blob.Data
	factor[0] = factor[0]*l.maf + 1
	correction := float32(1)
	if m > 1 {
		correction = float32(m) / float32(m-1)
	}
	for c := range l.channels {
		mean[c] = l.mean[c] + l.maf*mean[c]
		variance[c] = correction*l.variance[c] + l.maf*variance[c]
	}
}

func (l *batchNormLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	dy, dx := top[0].Diff, bottom[0].Diff
	if l.global {
		for n := range l.num {
			for c := range l.channels {
				off := (n*l.channels + c) * l.spatial
				dys, dxs, inv := dy[off:off+l.spatial], dx[off:off+l.spatial], 1/l.std[c]
				for i, v := range dys {
					dxs[i] = v * inv
				}
			}
		}
		return
	}
	// dx = (dy - mean(dy) - mean(dy·y)·y) / std, the means per channel.
	m := l.num * l.spatial
	meanDy, meanDyY := l.meanDy, l.meanDyY
	l.channelMeans(meanDy, dy, nil, m)
	l.channelMeans(meanDyY, dy, l.xnorm, m)
	for n := range l.num {
		for c := range l.channels {
			off := (n*l.channels + c) * l.spatial
			dys, dxs, ys := dy[off:off+l.spatial], dx[off:off+l.spatial], l.xnorm[off:off+l.spatial]
			a, b, inv := meanDy[c], meanDyY[c], 1/l.std[c]
			for i, v := range dys {
				dxs[i] = (v - a - b*ys[i]) * inv
			}
		}
	}
}

package layers

// The BatchNorm and Scale layers as they were before they moved onto
// package simd's kernels (float64 sums, one pass per operation, one
// thread), kept as the reference TestNormLayersMatchReference holds the
// new ones to: the issue's "results within float32 tolerance of the
// current implementation".

import (
	"math"

	"dsgd/engine/tensor"
)

type refBatchNormLayer struct {
	global   bool // normalise with the stored statistics
	maf, eps float32
	params   []Param // mean, variance, factor

	num, channels, spatial int
	mean, variance         []float32 // per channel, of the current Forward
	std                    []float32 // per channel: sqrt(variance + eps)
	xnorm                  []float32 // the normalised output, for Backward
	meanDy, meanDyY        []float32 // per channel, Backward's scratch
}

func (l *refBatchNormLayer) Forward(bottom, top []*tensor.Blob) {
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
func (l *refBatchNormLayer) channelMeans(dst, a, b []float32, m int) {
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
func (l *refBatchNormLayer) updateStats(m int) {
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

func (l *refBatchNormLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
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

type refScaleLayer struct {
	cfg    ScaleConfig
	params []Param
	scale  *tensor.Blob // the scale param, nil with two bottoms
	bias   *tensor.Blob // nil without a bias term

	ax                int // canonical axis of the scale in bottom[0]
	outer, dim, inner int
	in                []float32 // copy of bottom[0].Data when in place
	accScale, accBias []float64 // Backward's per-element sums
}

func (l *refScaleLayer) Forward(bottom, top []*tensor.Blob) {
	x, y := bottom[0].Data, top[0].Data
	if bottom[0] == top[0] {
		copy(l.in, x)
	}
	scale := l.scaleData(bottom)
	var bias []float32
	if l.bias != nil {
		bias = l.bias.Data
	}
	for o := range l.outer {
		for d := range l.dim {
			off := (o*l.dim + d) * l.inner
			xs, ys, a := x[off:off+l.inner], y[off:off+l.inner], scale[d]
			var b float32
			if bias != nil {
				b = bias[d]
			}
			for i, v := range xs {
				ys[i] = v*a + b
			}
		}
	}
}

func (l *refScaleLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	dy := top[0].Diff
	x := bottom[0].Data
	if bottom[0] == top[0] {
		x = l.in
	}
	// Param and scale-bottom gradients first: in place, bottom[0].Diff is
	// top[0].Diff and is overwritten below.
	wantScale := l.scale != nil || propagateDown[1]
	if wantScale || l.bias != nil {
		clear(l.accScale)
		clear(l.accBias)
		for o := range l.outer {
			for d := range l.dim {
				off := (o*l.dim + d) * l.inner
				dys := dy[off : off+l.inner]
				if wantScale {
					l.accScale[d] += tensor.Dot(dys, x[off:off+l.inner])
				}
				if l.bias != nil {
					var s float64
					for _, v := range dys {
						s += float64(v)
					}
					l.accBias[d] += s
				}
			}
		}
		switch {
		case l.scale != nil:
			for d, v := range l.accScale {
				l.scale.Diff[d] += float32(v)
			}
		case propagateDown[1]:
			for d, v := range l.accScale {
				bottom[1].Diff[d] = float32(v)
			}
		}
		if l.bias != nil {
			for d, v := range l.accBias {
				l.bias.Diff[d] += float32(v)
			}
		}
	}
	if !propagateDown[0] {
		return
	}
	scale, dx := l.scaleData(bottom), bottom[0].Diff
	for o := range l.outer {
		for d := range l.dim {
			off := (o*l.dim + d) * l.inner
			dys, dxs, a := dy[off:off+l.inner], dx[off:off+l.inner], scale[d]
			for i, v := range dys {
				dxs[i] = v * a
			}
		}
	}
}

// refBatchNorm is the reference twin of a set-up BatchNorm layer, with its
// own copies of the statistics.
func refBatchNorm(l *batchNormLayer) *refBatchNormLayer {
	r := &refBatchNormLayer{global: l.global, maf: l.maf, eps: l.eps, num: l.num, channels: l.channels, spatial: l.spatial}
	for _, p := range l.params {
		b := tensor.NewBlob(p.Blob.Name, p.Blob.Shape...)
		copy(b.Data, p.Blob.Data)
		r.params = append(r.params, Param{Blob: b, Frozen: true})
	}
	r.mean, r.variance, r.std = make([]float32, l.channels), make([]float32, l.channels), make([]float32, l.channels)
	r.meanDy, r.meanDyY = make([]float32, l.channels), make([]float32, l.channels)
	r.xnorm = make([]float32, len(l.xnorm))
	return r
}

// refScale is the reference twin of a set-up Scale layer, with its own
// copies of the params.
func refScale(l *scaleLayer) *refScaleLayer {
	r := &refScaleLayer{cfg: l.cfg, ax: l.ax, outer: l.outer, dim: l.dim, inner: l.inner,
		in: make([]float32, len(l.in)), accScale: make([]float64, l.dim), accBias: make([]float64, l.dim)}
	clone := func(b *tensor.Blob) *tensor.Blob {
		if b == nil {
			return nil
		}
		c := tensor.NewBlob(b.Name, b.Shape...)
		copy(c.Data, b.Data)
		copy(c.Diff, b.Diff)
		r.params = append(r.params, Param{Blob: c})
		return c
	}
	r.scale, r.bias = clone(l.scale), clone(l.bias)
	return r
}

func (l *refScaleLayer) scaleData(bottom []*tensor.Blob) []float32 {
	if l.scale != nil {
		return l.scale.Data
	}
	return bottom[1].Data
}

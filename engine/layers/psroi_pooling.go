package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
)

// PSROIPoolingConfig is the PSROIPoolingParameter of R-FCN's Caffe fork
// (daijifeng001/caffe-rfcn, also YuwenXiong's py-R-FCN):
// psroi_pooling_param { spatial_scale = 1, output_dim = 2, group_size = 3 },
// all three required there.
type PSROIPoolingConfig struct {
	// SpatialScale maps the regions' image coordinates onto the score maps
	// (1/16 for ResNet-101's res5 with dilation, as R-FCN uses).
	SpatialScale float32
	// OutputDim is the top's channels (the classes, or 8 for class-agnostic
	// boxes' 4·2).
	OutputDim int
	// GroupSize is k: each region is pooled into k×k bins, bin (i, j) of
	// output channel c read from input channel (c·k + i)·k + j.
	GroupSize int
}

// Type returns "PSROIPooling".
func (*PSROIPoolingConfig) Type() string { return "PSROIPooling" }

// Build returns R-FCN's position-sensitive ROI pooling. Its bottoms are the
// score maps N×(OutputDim·GroupSize²)×H×W and the regions R×5 (or R×5×1×1)
// [batch_index x1 y1 x2 y2]; its top is R×OutputDim×GroupSize×GroupSize,
// the average of each bin over its own group of channels, with the fork's
// rounding: the corners round(x) (half away from zero) times SpatialScale,
// the far ones plus one first, the region at least 0.1 on a side, bins
// floor(p·bin + start) to ceil((p+1)·bin + start) in float32, clipped to
// the map. An empty bin gives 0. Backward spreads each bin's diff over its
// pixels divided by their count; the regions take no gradient, as in the
// fork. A region whose batch index is outside the batch, or whose values
// are not finite, panics (the fork CHECKs); the net turns that into its
// error naming the layer (model.Net.Err).
func (c *PSROIPoolingConfig) Build(Context) (Layer, error) {
	switch {
	case c.OutputDim <= 0 || c.GroupSize <= 0:
		return nil, fmt.Errorf("layers: PSROIPooling: output_dim and group_size must be positive, got %d and %d", c.OutputDim, c.GroupSize)
	case c.GroupSize > 1<<15 || c.OutputDim > math.MaxInt32/(c.GroupSize*c.GroupSize):
		return nil, fmt.Errorf("layers: PSROIPooling: output_dim·group_size² (%d·%d²) overflows the channel count", c.OutputDim, c.GroupSize)
	case !(c.SpatialScale > 0) || math.IsInf(float64(c.SpatialScale), 0):
		return nil, fmt.Errorf("layers: PSROIPooling: spatial_scale must be positive and finite, got %g", c.SpatialScale)
	}
	return &psroiPoolingLayer{cfg: *c}, nil
}

type psroiPoolingLayer struct {
	cfg            PSROIPoolingConfig
	n, ch, h, w, r int
	batch          []int // per region, its image
	bounds         []int // per region, its bins' row starts and ends, column starts and ends
}

func (*psroiPoolingLayer) Type() string    { return "PSROIPooling" }
func (*psroiPoolingLayer) Params() []Param { return nil }

func (l *psroiPoolingLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("PSROIPooling", bottom, top, 2, 2, 1, 1); err != nil {
		return fmt.Errorf("%w (R-FCN's PSROIPooling reads the score maps and the regions)", err)
	}
	if top[0] == bottom[0] || top[0] == bottom[1] {
		return fmt.Errorf("layers: PSROIPooling cannot run in place: give it a top of its own")
	}
	return nil
}

// AllowBackward implements GradientBlocker: the regions take no gradient.
func (*psroiPoolingLayer) AllowBackward(i int) bool { return i == 0 }

func (l *psroiPoolingLayer) Reshape(bottom, top []*tensor.Blob) error {
	x := bottom[0].Shape
	k := l.cfg.GroupSize
	if len(x) != 4 {
		return fmt.Errorf("layers: PSROIPooling: the score maps (bottom 0) %v must be 4-D (NCHW)", x)
	}
	if want := l.cfg.OutputDim * k * k; x[1] != want {
		return fmt.Errorf("layers: PSROIPooling: the score maps (bottom 0) %v must have output_dim·group_size² = %d·%d² = %d channels", x, l.cfg.OutputDim, k, want)
	}
	r, err := checkROIs("PSROIPooling", bottom[1].Shape)
	if err != nil {
		return err
	}
	l.n, l.ch, l.h, l.w, l.r = x[0], x[1], x[2], x[3], r
	top[0].Reshape(r, l.cfg.OutputDim, k, k)
	l.batch = fitInts(l.batch, r)
	l.bounds = fitInts(l.bounds, r*4*k)
	return nil
}

// fitInts is buf with length n, reallocated only when it must grow.
func fitInts(buf []int, n int) []int {
	if cap(buf) < n {
		return make([]int, n)
	}
	return buf[:n]
}

// psBins sets the bins' bounds along one axis, R-FCN's way: from the
// float32 start, a region of extent (at least 0.1) cut into len(lo) bins,
// clipped to the map's size.
func psBins(lo, hi []int, start, extent float32, size int) {
	bin := extent / float32(len(lo))
	for p := range lo {
		a := clampInt(math.Floor(float64(float32(float32(p)*bin) + start)))
		b := clampInt(math.Ceil(float64(float32(float32(p+1)*bin) + start)))
		lo[p], hi[p] = min(max(a, 0), size), min(max(b, 0), size)
	}
}

func (l *psroiPoolingLayer) Forward(bottom, top []*tensor.Blob) {
	x, rois, y := bottom[0].Data, bottom[1].Data, top[0].Data
	k, plane, scale := l.cfg.GroupSize, l.h*l.w, l.cfg.SpatialScale
	rnd := func(v float32) float32 { return float32(math.Round(float64(v))) }
	for i := range l.r {
		row := rois[i*5 : i*5+5]
		b := roiBatch("PSROIPooling", i, row, l.n)
		l.batch[i] = b
		x1, y1 := rnd(row[1])*scale, rnd(row[2])*scale
		x2, y2 := (rnd(row[3])+1)*scale, (rnd(row[4])+1)*scale
		hs, he, ws, we := l.regionBounds(i)
		psBins(hs, he, y1, max(y2-y1, float32(0.1)), l.h)
		psBins(ws, we, x1, max(x2-x1, float32(0.1)), l.w)
		for c := range l.cfg.OutputDim {
			for ph := range k {
				for pw := range k {
					ci := (c*k+ph)*k + pw
					xp := x[(b*l.ch+ci)*plane : (b*l.ch+ci+1)*plane]
					out := float32(0)
					if he[ph] > hs[ph] && we[pw] > ws[pw] {
						var sum float64
						for hh := hs[ph]; hh < he[ph]; hh++ {
							for _, v := range xp[hh*l.w+ws[pw] : hh*l.w+we[pw]] {
								sum += float64(v)
							}
						}
						out = float32(sum / float64((he[ph]-hs[ph])*(we[pw]-ws[pw])))
					}
					y[((i*l.cfg.OutputDim+c)*k+ph)*k+pw] = out
				}
			}
		}
	}
}

// regionBounds returns region i's bins' row starts and ends and column
// starts and ends, k each, views into l.bounds.
func (l *psroiPoolingLayer) regionBounds(i int) (hs, he, ws, we []int) {
	k := l.cfg.GroupSize
	bd := l.bounds[i*4*k : (i+1)*4*k]
	return bd[:k], bd[k : 2*k], bd[2*k : 3*k], bd[3*k:]
}

func (l *psroiPoolingLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	dx, dy := bottom[0].Diff, top[0].Diff
	clear(dx[:bottom[0].Count()])
	k, plane := l.cfg.GroupSize, l.h*l.w
	for i, b := range l.batch {
		hs, he, ws, we := l.regionBounds(i)
		for c := range l.cfg.OutputDim {
			for ph := range k {
				for pw := range k {
					if he[ph] <= hs[ph] || we[pw] <= ws[pw] {
						continue
					}
					d := dy[((i*l.cfg.OutputDim+c)*k+ph)*k+pw] / float32((he[ph]-hs[ph])*(we[pw]-ws[pw]))
					ci := (c*k+ph)*k + pw
					xp := dx[(b*l.ch+ci)*plane : (b*l.ch+ci+1)*plane]
					for hh := hs[ph]; hh < he[ph]; hh++ {
						for j := hh*l.w + ws[pw]; j < hh*l.w+we[pw]; j++ {
							xp[j] += d
						}
					}
				}
			}
		}
	}
}

package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
)

// ROIPoolingConfig is the ROIPoolingParameter of Fast R-CNN's Caffe fork
// (rbgirshick/caffe-fast-rcnn, which py-faster-rcnn builds):
// roi_pooling_param { pooled_h = 1 (default 0), pooled_w = 2 (default 0),
// spatial_scale = 3 (default 1) }, field 8266711 of LayerParameter.
type ROIPoolingConfig struct {
	// PooledH and PooledW are the output's height and width per region.
	PooledH, PooledW int
	// SpatialScale maps the regions' image coordinates onto the feature
	// map (1/16 for VGG16's conv5_3).
	SpatialScale float32
}

// Type returns "ROIPooling".
func (*ROIPoolingConfig) Type() string { return "ROIPooling" }

// Build returns Fast R-CNN's ROIPooling layer. Its bottoms are the features
// N×C×H×W and the regions R×5 (or R×5×1×1), each [batch_index x1 y1 x2
// y2] in image coordinates; its top is R×C×PooledH×PooledW, the maximum
// of each bin of each region, with the fork's rounding: the corners are
// round(coordinate·SpatialScale) (half away from zero), the region at
// least 1×1, bin (ph, pw) spans rows floor(ph·h/PooledH) to
// ceil((ph+1)·h/PooledH) from the region's start (in float32, as the fork
// computes), clipped to the map. An empty bin gives 0. Backward gives each
// feature the diff of the outputs it was the maximum of; the regions take
// no gradient, as in the fork. (The fork's only backward, on the GPU,
// first skips features outside [start, end] of the rounded corners, so a
// region whose corners cross, pooled from its 1×1 start, gets no gradient
// there; dsgd gives the derivative of the forward.) A region whose batch index is outside the
// batch, or whose values are not finite, panics, as the fork's CHECK
// stops there; the net turns that into its error naming the layer
// (model.Net.Err).
func (c *ROIPoolingConfig) Build(Context) (Layer, error) {
	switch {
	case c.PooledH <= 0 || c.PooledW <= 0:
		return nil, fmt.Errorf("layers: ROIPooling: pooled_h and pooled_w must be positive, got %d and %d", c.PooledH, c.PooledW)
	case !(c.SpatialScale > 0) || math.IsInf(float64(c.SpatialScale), 0):
		return nil, fmt.Errorf("layers: ROIPooling: spatial_scale must be positive and finite, got %g", c.SpatialScale)
	}
	return &roiPoolingLayer{cfg: *c}, nil
}

type roiPoolingLayer struct {
	cfg            ROIPoolingConfig
	n, ch, h, w, r int
	argmax         []int32 // per top element, the index in its plane; -1 for none
	batch          []int   // per region, its image
	hs, he, ws, we []int   // the bins' bounds of the region in hand
}

func (*roiPoolingLayer) Type() string    { return "ROIPooling" }
func (*roiPoolingLayer) Params() []Param { return nil }

func (l *roiPoolingLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("ROIPooling", bottom, top, 2, 2, 1, 1); err != nil {
		return fmt.Errorf("%w (Fast R-CNN's ROIPooling reads the features and the regions)", err)
	}
	if top[0] == bottom[0] || top[0] == bottom[1] {
		return fmt.Errorf("layers: ROIPooling cannot run in place: give it a top of its own")
	}
	l.hs, l.he = make([]int, l.cfg.PooledH), make([]int, l.cfg.PooledH)
	l.ws, l.we = make([]int, l.cfg.PooledW), make([]int, l.cfg.PooledW)
	return nil
}

// AllowBackward implements GradientBlocker: the regions take no gradient.
func (*roiPoolingLayer) AllowBackward(i int) bool { return i == 0 }

// checkROIs checks the regions' shape: R×5, or R×5 followed by axes of 1.
func checkROIs(layer string, s tensor.Shape) (int, error) {
	if len(s) < 2 || s[1] != 5 || s.CountFrom(2) != 1 {
		return 0, fmt.Errorf("layers: %s: the regions (bottom 1) %v must be R×5 (or R×5×1×1), rows [batch_index x1 y1 x2 y2]", layer, s)
	}
	return s[0], nil
}

func (l *roiPoolingLayer) Reshape(bottom, top []*tensor.Blob) error {
	x := bottom[0].Shape
	if len(x) != 4 {
		return fmt.Errorf("layers: ROIPooling: the features (bottom 0) %v must be 4-D (NCHW)", x)
	}
	r, err := checkROIs("ROIPooling", bottom[1].Shape)
	if err != nil {
		return err
	}
	l.n, l.ch, l.h, l.w, l.r = x[0], x[1], x[2], x[3], r
	top[0].Reshape(r, l.ch, l.cfg.PooledH, l.cfg.PooledW)
	if k := top[0].Count(); cap(l.argmax) < k {
		l.argmax = make([]int32, k)
	}
	l.argmax = l.argmax[:top[0].Count()]
	if cap(l.batch) < r {
		l.batch = make([]int, r)
	}
	l.batch = l.batch[:r]
	return nil
}

// roiBatch is a region's batch index, checked: the fork truncates it to an
// int and CHECKs it against the batch.
func roiBatch(layer string, i int, row []float32, n int) int {
	for _, v := range row {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			panic(fmt.Sprintf("layers: %s: region %d %v is not finite", layer, i, row))
		}
	}
	b := row[0]
	if !(b > -1 && b < float32(n)) {
		panic(fmt.Sprintf("layers: %s: region %d's batch index %v is out of range for %d images", layer, i, b, n))
	}
	return int(b)
}

// clampInt converts v to an int within ±2^40, far beyond any map, so that
// huge coordinates clip as the fork's would rather than overflow. NaN (a
// region of infinite extent from both ends, after scaling) gives 0.
func clampInt(v float64) int {
	if math.IsNaN(v) {
		return 0
	}
	return int(max(min(v, 1<<40), -(1 << 40)))
}

// bins sets lo and hi to the bounds of the region's bins along one axis:
// start is the region's first scaled coordinate, size its extent, size the
// map's.
func bins(lo, hi []int, start, extent, size int) {
	binSize := float32(extent) / float32(len(lo))
	for p := range lo {
		a := clampInt(math.Floor(float64(float32(float32(p) * binSize))))
		b := clampInt(math.Ceil(float64(float32(float32(p+1) * binSize))))
		lo[p] = min(max(a+start, 0), size)
		hi[p] = min(max(b+start, 0), size)
	}
}

func (l *roiPoolingLayer) Forward(bottom, top []*tensor.Blob) {
	x, rois, y := bottom[0].Data, bottom[1].Data, top[0].Data
	ph, pw, plane := l.cfg.PooledH, l.cfg.PooledW, l.h*l.w
	scale := l.cfg.SpatialScale
	round := func(v float32) int { return clampInt(math.Round(float64(v * scale))) }
	for i := range l.r {
		row := rois[i*5 : i*5+5]
		b := roiBatch("ROIPooling", i, row, l.n)
		l.batch[i] = b
		x1, y1, x2, y2 := round(row[1]), round(row[2]), round(row[3]), round(row[4])
		bins(l.hs, l.he, y1, max(y2-y1+1, 1), l.h)
		bins(l.ws, l.we, x1, max(x2-x1+1, 1), l.w)
		for c := range l.ch {
			xp := x[(b*l.ch+c)*plane : (b*l.ch+c+1)*plane]
			o := (i*l.ch + c) * ph * pw
			for py := range ph {
				for px := range pw {
					best, arg := float32(-math.MaxFloat32), int32(-1)
					if l.he[py] <= l.hs[py] || l.we[px] <= l.ws[px] {
						best = 0
					}
					for hh := l.hs[py]; hh < l.he[py]; hh++ {
						for ww := l.ws[px]; ww < l.we[px]; ww++ {
							if v := xp[hh*l.w+ww]; v > best {
								best, arg = v, int32(hh*l.w+ww)
							}
						}
					}
					y[o+py*pw+px], l.argmax[o+py*pw+px] = best, arg
				}
			}
		}
	}
}

func (l *roiPoolingLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	dx, dy := bottom[0].Diff, top[0].Diff
	clear(dx[:bottom[0].Count()])
	plane, bin := l.h*l.w, l.cfg.PooledH*l.cfg.PooledW
	for i, b := range l.batch {
		for c := range l.ch {
			o := (i*l.ch + c) * bin
			base := (b*l.ch + c) * plane
			for j, a := range l.argmax[o : o+bin] {
				if a >= 0 {
					dx[base+int(a)] += dy[o+j]
				}
			}
		}
	}
}

package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// SPPConfig is Caffe's SPPParameter (spatial pyramid pooling).
type SPPConfig struct {
	PyramidHeight int        // required, at least 1
	Method        PoolMethod // default MAX
}

// Type returns "SPP".
func (*SPPConfig) Type() string { return "SPP" }

// Build returns an SPP layer. Level l of the pyramid (0 ≤ l <
// PyramidHeight) pools its NCHW bottom into about 2^l × 2^l bins with
// Caffe's Pooling layer, the window chosen as Caffe does: kernel
// ceil(h/2^l), stride equal to the kernel, pad (kernel·2^l − h + 1)/2, and
// likewise along the width. Each level is flattened to (N, C·bins) and the
// levels are concatenated along axis 1, giving a top of (N, C·Σ bins); with
// PyramidHeight 1 the top is the one level's (N, C, 1, 1), unflattened, as
// in Caffe.
func (c *SPPConfig) Build(ctx Context) (Layer, error) {
	if c.PyramidHeight < 1 {
		return nil, fmt.Errorf("layers: SPP: pyramid_height must be at least 1, got %d", c.PyramidHeight)
	}
	if c.Method != PoolMax && c.Method != PoolAve {
		return nil, fmt.Errorf("layers: SPP: unsupported pool method %d (MAX and AVE are supported)", c.Method)
	}
	return &sppLayer{cfg: *c, ctx: ctx}, nil
}

type sppLayer struct {
	cfg  SPPConfig
	ctx  Context
	h, w int // the bottom size the levels were built for

	levels []Layer
	outs   []*tensor.Blob // each level's pooled (N, C, bins_h, bins_w)
	// scratch shares the bottom's data and takes the gradient of levels
	// after the first, which is then added to the bottom's.
	scratch tensor.Blob
	sc      []*tensor.Blob // {&scratch}, made once
}

func (*sppLayer) Type() string    { return "SPP" }
func (*sppLayer) Params() []Param { return nil }

func (l *sppLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("SPP", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

// sppPooling is Caffe's pooling window for pyramid level lvl over a
// bottom of h×w.
func (l *sppLayer) sppPooling(lvl, h, w int) *PoolingConfig {
	bins := 1 << lvl
	kh, kw := (h+bins-1)/bins, (w+bins-1)/bins
	ph, pw := (kh*bins-h+1)/2, (kw*bins-w+1)/2
	return &PoolingConfig{Method: l.cfg.Method, KernelH: kh, KernelW: kw, StrideH: kh, StrideW: kw, PadH: ph, PadW: pw}
}

func (l *sppLayer) Reshape(bottom, top []*tensor.Blob) error {
	b := bottom[0]
	if len(b.Shape) != 4 {
		return fmt.Errorf("layers: SPP: bottom %q must be 4-D (NCHW), got shape %v", b.Name, b.Shape)
	}
	h, w := b.Shape[2], b.Shape[3]
	if l.levels == nil || h != l.h || w != l.w {
		l.levels = l.levels[:0]
		for lvl := range l.cfg.PyramidHeight {
			pl, err := l.sppPooling(lvl, h, w).Build(l.ctx)
			if err != nil {
				return fmt.Errorf("layers: SPP: pyramid level %d of bottom %q (%dx%d): %w", lvl, b.Name, h, w, err)
			}
			l.levels = append(l.levels, pl)
		}
		for len(l.outs) < len(l.levels) {
			l.outs = append(l.outs, &tensor.Blob{Name: fmt.Sprintf("spp_level%d", len(l.outs))})
		}
		l.h, l.w = h, w
	}
	if l.cfg.PyramidHeight == 1 {
		if err := l.levels[0].Setup(bottom, top); err != nil {
			return fmt.Errorf("layers: SPP: %w", err)
		}
		return l.levels[0].Reshape(bottom, top)
	}
	per := 0
	for i, pl := range l.levels {
		if err := pl.Setup(bottom, l.outs[i:i+1]); err != nil {
			return fmt.Errorf("layers: SPP: %w", err)
		}
		if err := pl.Reshape(bottom, l.outs[i:i+1]); err != nil {
			return fmt.Errorf("layers: SPP: pyramid level %d: %w", i, err)
		}
		per += l.outs[i].Shape.CountFrom(1)
	}
	top[0].Reshape(b.Shape[0], per)
	l.scratch.Name = b.Name
	l.scratch.Shape = b.Shape
	l.scratch.Diff = fitBuf(l.scratch.Diff, b.Count())
	l.sc = []*tensor.Blob{&l.scratch}
	return nil
}

func (l *sppLayer) Forward(bottom, top []*tensor.Blob) {
	if l.cfg.PyramidHeight == 1 {
		l.levels[0].Forward(bottom, top)
		return
	}
	num := bottom[0].Num()
	per := top[0].Shape.CountFrom(1)
	off := 0
	for i, pl := range l.levels {
		o := l.outs[i]
		pl.Forward(bottom, l.outs[i:i+1])
		k := o.Shape.CountFrom(1)
		for n := range num {
			copy(top[0].Data[n*per+off:n*per+off+k], o.Data[n*k:(n+1)*k])
		}
		off += k
	}
}

func (l *sppLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	if l.cfg.PyramidHeight == 1 {
		l.levels[0].Backward(top, propagateDown, bottom)
		return
	}
	num := bottom[0].Num()
	per := top[0].Shape.CountFrom(1)
	off := 0
	l.scratch.Data = bottom[0].Data
	for i, pl := range l.levels {
		o := l.outs[i]
		k := o.Shape.CountFrom(1)
		for n := range num {
			copy(o.Diff[n*k:(n+1)*k], top[0].Diff[n*per+off:n*per+off+k])
		}
		off += k
		if i == 0 {
			pl.Backward(l.outs[i:i+1], propagateDown, bottom)
			continue
		}
		pl.Backward(l.outs[i:i+1], propagateDown, l.sc)
		tensor.AddTo(bottom[0].Diff[:bottom[0].Count()], l.scratch.Diff)
	}
	l.scratch.Data = nil
}

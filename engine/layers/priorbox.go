package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
)

// PriorBoxConfig is SSD's PriorBoxParameter (weiliu89/caffe, branch ssd):
// prior_box_param { min_size max_size aspect_ratio (repeated) flip (true)
// clip (false) variance (repeated; none reads as 0.1) img_size or img_h
// and img_w step or step_h and step_w offset (0.5) }.
type PriorBoxConfig struct {
	// MinSize and MaxSize are the box sizes in pixels, one prior family
	// per MinSize; MaxSize is empty or has MinSize's length, each above its
	// MinSize. The fork reads each size into an int, dropping fractions.
	MinSize, MaxSize []float32
	// AspectRatio lists the ratios beyond 1; a ratio within 1e-6 of one
	// already listed (1 included, and with Flip the inverses) is skipped.
	AspectRatio []float32
	// Flip adds 1/r after each ratio r.
	Flip bool
	// Clip clamps every coordinate to [0, 1].
	Clip bool
	// Variance has 1 or 4 positive values (the fork's default is one 0.1).
	Variance []float32
	// ImgH and ImgW, if not 0, replace the image bottom's height and width.
	ImgH, ImgW int
	// StepH and StepW, if not 0, replace the image size over the feature
	// map's size as the distance between prior centres.
	StepH, StepW float32
	// Offset places each centre within its cell (0.5: the middle).
	Offset float32
}

// Type returns "PriorBox".
func (*PriorBoxConfig) Type() string { return "PriorBox" }

// aspectRatios returns the ratios in the fork's order: 1, then each given
// ratio not yet listed, followed by its inverse with Flip.
func (c *PriorBoxConfig) aspectRatios() []float32 {
	ars := []float32{1}
	for _, ar := range c.AspectRatio {
		dup := false
		for _, a := range ars {
			if math.Abs(float64(ar-a)) < 1e-6 {
				dup = true
				break
			}
		}
		if !dup {
			ars = append(ars, ar)
			if c.Flip {
				ars = append(ars, float32(1/float64(ar)))
			}
		}
	}
	return ars
}

// Build returns a PriorBox layer: from a feature map (bottom 0, N×C×H×W)
// and the image (bottom 1, whose height and width give the image size
// unless ImgH/ImgW do), a 1×2×(H·W·P·4) top holding, for each cell in
// row-major order and each of its P priors, the normalized corners
// (xmin, ymin, xmax, ymax), then in channel 1 the variances. A cell's
// priors are, per MinSize: the square of side MinSize, the square of side
// sqrt(MinSize·MaxSize) when MaxSize is given, then one box per aspect
// ratio other than 1. The top does not depend on the bottoms' values, so
// Backward propagates nothing (the fork's is not implemented).
func (c *PriorBoxConfig) Build(Context) (Layer, error) {
	if len(c.MinSize) == 0 {
		return nil, fmt.Errorf("layers: PriorBox needs min_size")
	}
	for _, s := range c.MinSize {
		if !(s > 0) || !(s < 1<<31) {
			return nil, fmt.Errorf("layers: PriorBox: min_size must be positive (and below 2^31, as the fork reads it into an int), got %g", s)
		}
	}
	if len(c.MaxSize) > 0 && len(c.MaxSize) != len(c.MinSize) {
		return nil, fmt.Errorf("layers: PriorBox: %d max_size for %d min_size; give one per min_size or none", len(c.MaxSize), len(c.MinSize))
	}
	for i, s := range c.MaxSize {
		if !(s > c.MinSize[i]) || !(s < 1<<31) {
			return nil, fmt.Errorf("layers: PriorBox: max_size %g must be greater than its min_size %g", s, c.MinSize[i])
		}
	}
	for _, ar := range c.AspectRatio {
		if !(ar > 0) || math.IsInf(float64(ar), 0) {
			return nil, fmt.Errorf("layers: PriorBox: aspect_ratio must be positive and finite, got %g", ar)
		}
	}
	switch len(c.Variance) {
	case 0, 1, 4:
	default:
		return nil, fmt.Errorf("layers: PriorBox: give 1 or 4 variance values, got %d", len(c.Variance))
	}
	for _, v := range c.Variance {
		if !(v > 0) {
			return nil, fmt.Errorf("layers: PriorBox: variance must be positive, got %g", v)
		}
	}
	if c.ImgH < 0 || c.ImgW < 0 || (c.ImgH == 0) != (c.ImgW == 0) {
		return nil, fmt.Errorf("layers: PriorBox: img_h %d and img_w %d must both be positive or both absent", c.ImgH, c.ImgW)
	}
	if !(c.StepH >= 0) || !(c.StepW >= 0) || (c.StepH == 0) != (c.StepW == 0) {
		return nil, fmt.Errorf("layers: PriorBox: step_h %g and step_w %g must both be positive or both absent", c.StepH, c.StepW)
	}
	if math.IsNaN(float64(c.Offset)) || math.IsInf(float64(c.Offset), 0) {
		return nil, fmt.Errorf("layers: PriorBox: offset must be finite, got %g", c.Offset)
	}
	l := &priorBoxLayer{cfg: *c, ars: c.aspectRatios()}
	for _, s := range c.MinSize {
		l.min = append(l.min, int(s))
	}
	for _, s := range c.MaxSize {
		l.max = append(l.max, int(s))
	}
	l.variance = c.Variance
	if len(l.variance) == 0 {
		l.variance = []float32{0.1}
	}
	l.numPriors = len(l.ars)*len(l.min) + len(l.max)
	return l, nil
}

type priorBoxLayer struct {
	cfg       PriorBoxConfig
	ars       []float32
	min, max  []int // the sizes as the fork uses them, truncated to int
	variance  []float32
	numPriors int
}

func (*priorBoxLayer) Type() string    { return "PriorBox" }
func (*priorBoxLayer) Params() []Param { return nil }

// AllowBackward implements GradientBlocker: the priors depend on no
// bottom's values.
func (*priorBoxLayer) AllowBackward(int) bool { return false }

func (l *priorBoxLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("PriorBox", bottom, top, 2, 2, 1, 1); err != nil {
		return err
	}
	return nil
}

// sizes returns the feature map's and the image's height and width.
func (l *priorBoxLayer) sizes(bottom []*tensor.Blob) (fh, fw, ih, iw int, err error) {
	f, im := bottom[0].Shape, bottom[1].Shape
	if len(f) != 4 {
		return 0, 0, 0, 0, fmt.Errorf("layers: PriorBox: bottom 0 (the feature map) must be N×C×H×W, got %v", f)
	}
	fh, fw = f[2], f[3]
	ih, iw = l.cfg.ImgH, l.cfg.ImgW
	if ih == 0 {
		if len(im) != 4 {
			return 0, 0, 0, 0, fmt.Errorf("layers: PriorBox: bottom 1 (the image) must be N×C×H×W when img_size/img_h/img_w are absent, got %v", im)
		}
		ih, iw = im[2], im[3]
	}
	if fh <= 0 || fw <= 0 || ih <= 0 || iw <= 0 {
		return 0, 0, 0, 0, fmt.Errorf("layers: PriorBox: empty feature map %v or image %dx%d", f, ih, iw)
	}
	return fh, fw, ih, iw, nil
}

func (l *priorBoxLayer) Reshape(bottom, top []*tensor.Blob) error {
	fh, fw, _, _, err := l.sizes(bottom)
	if err != nil {
		return err
	}
	top[0].Reshape(1, 2, fh*fw*l.numPriors*4)
	return nil
}

func (l *priorBoxLayer) Forward(bottom, top []*tensor.Blob) {
	fh, fw, ih, iw, err := l.sizes(bottom)
	if err != nil {
		panic(err.Error())
	}
	stepW, stepH := l.cfg.StepW, l.cfg.StepH
	if stepW == 0 {
		stepW = float32(iw) / float32(fw)
		stepH = float32(ih) / float32(fh)
	}
	dim := fh * fw * l.numPriors * 4
	out := top[0].Data[:2*dim]
	idx := 0
	// box writes one prior; the fork divides in double and stores floats.
	box := func(cx, cy, bw, bh float32) {
		out[idx] = float32((float64(cx) - float64(bw)/2) / float64(iw))
		out[idx+1] = float32((float64(cy) - float64(bh)/2) / float64(ih))
		out[idx+2] = float32((float64(cx) + float64(bw)/2) / float64(iw))
		out[idx+3] = float32((float64(cy) + float64(bh)/2) / float64(ih))
		idx += 4
	}
	for h := range fh {
		for w := range fw {
			cx := (float32(w) + l.cfg.Offset) * stepW
			cy := (float32(h) + l.cfg.Offset) * stepH
			for s, mn := range l.min {
				box(cx, cy, float32(mn), float32(mn))
				if len(l.max) > 0 {
					side := float32(math.Sqrt(float64(mn * l.max[s])))
					box(cx, cy, side, side)
				}
				for _, ar := range l.ars {
					if math.Abs(float64(ar)-1) < 1e-6 {
						continue
					}
					r := math.Sqrt(float64(ar))
					box(cx, cy, float32(float64(mn)*r), float32(float64(mn)/r))
				}
			}
		}
	}
	if l.cfg.Clip {
		for i, v := range out[:dim] {
			out[i] = min(max(v, 0), 1)
		}
	}
	vars := out[dim:]
	if len(l.variance) == 1 {
		for i := range vars {
			vars[i] = l.variance[0]
		}
	} else {
		for i := range vars {
			vars[i] = l.variance[i%4]
		}
	}
}

// Backward does nothing: the priors depend on no bottom's values.
func (*priorBoxLayer) Backward([]*tensor.Blob, []bool, []*tensor.Blob) {}

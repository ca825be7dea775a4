package data

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// transformer is a TransformConfig compiled for one image size: it turns a
// C×H×W uint8 image into a C×H'×W' float32 one, as Caffe's
// DataTransformer does. It is read-only once built.
type transformer struct {
	c, h, w int // source image
	oh, ow  int // output image: the crop size, or h and w
	crop    bool
	mirror  bool // flip at random (either phase, as in Caffe)
	scale   float32
	// mean is the C×H×W mean image from a mean file, or nil; without one,
	// lut maps channel c's byte v to (v - mean_value[c]) * scale.
	mean []float32
	lut  []float32
	// means holds mean_value per channel (zeros without), for float
	// images, which the byte lut cannot serve.
	means []float32
	// cfg, train and meanBlob (the mean file's blob, read once) compile
	// the transformer for another record shape (reshaped).
	cfg      TransformConfig
	train    bool
	meanBlob *Blob
}

// newTransformer checks cfg against c×h×w images. train enables random
// crop offsets; outside training crops are centred. Mirroring does not
// depend on the phase: Caffe's DataTransformer flips at random whenever
// mirror is set, in TEST as in TRAIN. name prefixes errors.
func newTransformer(name string, cfg TransformConfig, c, h, w int, train bool) (*transformer, error) {
	var mean *Blob
	if cfg.MeanFile != "" && len(cfg.MeanValue) == 0 {
		blob, err := ReadBlobProto(cfg.MeanFile)
		if err != nil {
			return nil, fmt.Errorf("%s: transform_param: mean_file: %w", name, err)
		}
		mean = blob
	}
	return compileTransformer(name, cfg, mean, c, h, w, train)
}

// reshaped is t compiled for c×h×w records (Caffe's Data layer at batch
// size 1 over records of differing shapes, or a crop of records of
// differing sizes): the same settings, the mean file not read again.
// Its errors say what of transform_param does not fit such a record, as
// Caffe's DataTransformer CHECKs.
func (t *transformer) reshaped(c, h, w int) (*transformer, error) {
	if t.meanBlob != nil {
		if shape := meanShape(t.meanBlob); len(shape) != 3 || shape[0] != c || shape[1] != h || shape[2] != w {
			return nil, fmt.Errorf("transform_param: mean_file %s is %s but the record is %dx%dx%d (CxHxW); Caffe's DataTransformer needs the mean image to have every record's shape (use mean_value for records of differing shapes)", t.cfg.MeanFile, ShapeString(t.meanBlob.Shape), c, h, w)
		}
	}
	if t.cfg.CropSize > h || t.cfg.CropSize > w {
		return nil, fmt.Errorf("transform_param: crop_size %d is larger than the record's %dx%d (HxW)", t.cfg.CropSize, h, w)
	}
	return compileTransformer(fmt.Sprintf("a %dx%dx%d (CxHxW) record", c, h, w), t.cfg, t.meanBlob, c, h, w, t.train)
}

// compileTransformer is newTransformer with the mean file's blob read.
func compileTransformer(name string, cfg TransformConfig, meanBlob *Blob, c, h, w int, train bool) (*transformer, error) {
	t := &transformer{c: c, h: h, w: w, oh: h, ow: w, scale: cfg.Scale, mirror: cfg.Mirror, cfg: cfg, train: train, meanBlob: meanBlob}
	if t.scale == 0 {
		t.scale = 1
	}
	if math.IsNaN(float64(t.scale)) || math.IsInf(float64(t.scale), 0) {
		return nil, fmt.Errorf("%s: transform_param: scale %v is not finite", name, cfg.Scale)
	}
	switch {
	case cfg.CropSize < 0:
		return nil, fmt.Errorf("%s: transform_param: crop_size %d is negative", name, cfg.CropSize)
	case cfg.CropSize > h || cfg.CropSize > w:
		return nil, fmt.Errorf("%s: transform_param: crop_size %d is larger than the %dx%d images", name, cfg.CropSize, h, w)
	case cfg.CropSize > 0:
		t.crop, t.oh, t.ow = train, cfg.CropSize, cfg.CropSize
	}
	if cfg.MeanFile != "" && len(cfg.MeanValue) > 0 {
		return nil, fmt.Errorf("%s: transform_param: mean_file and mean_value are mutually exclusive", name)
	}
	if cfg.MeanFile != "" {
		if err := t.setMean(cfg.MeanFile, meanBlob); err != nil {
			return nil, fmt.Errorf("%s: transform_param: %w", name, err)
		}
		return t, nil
	}
	means := make([]float32, c)
	switch len(cfg.MeanValue) {
	case 0:
	case 1:
		for i := range means {
			means[i] = cfg.MeanValue[0]
		}
	case c:
		copy(means, cfg.MeanValue)
	default:
		return nil, fmt.Errorf("%s: transform_param: %d mean_value entries for %d-channel images; want 1 or %d", name, len(cfg.MeanValue), c, c)
	}
	t.means = means
	t.lut = make([]float32, c*256)
	for ch := range c {
		for v := range 256 {
			t.lut[ch*256+v] = (float32(v) - means[ch]) * t.scale
		}
	}
	return t, nil
}

// setMean installs a mean image, which must be C×H×W, optionally with
// leading dimensions of 1 (Caffe writes 1×C×H×W).
func (t *transformer) setMean(file string, b *Blob) error {
	if shape := meanShape(b); len(shape) != 3 || shape[0] != t.c || shape[1] != t.h || shape[2] != t.w {
		return fmt.Errorf("mean_file %s: mean shape %s does not match the data's %dx%dx%d (CxHxW)", file, ShapeString(b.Shape), t.c, t.h, t.w)
	}
	t.mean = b.Data
	return nil
}

// meanShape is a mean blob's shape without its leading dimensions of 1.
func meanShape(b *Blob) []int {
	shape := b.Shape
	for len(shape) > 3 && shape[0] == 1 {
		shape = shape[1:]
	}
	return shape
}

// offsets returns the crop offsets for one image: uniform in training,
// centred otherwise (Caffe: Rand(H - crop + 1), or (H - crop) / 2).
func (t *transformer) offsets(rng *rand.Rand) (hOff, wOff int) {
	if t.crop {
		return rng.IntN(t.h - t.oh + 1), rng.IntN(t.w - t.ow + 1)
	}
	return (t.h - t.oh) / 2, (t.w - t.ow) / 2
}

// apply writes the transformed image: the oh×ow window at (hOff, wOff) of
// src, mean-subtracted at its source position and scaled, flipped
// left-right when mirror is set. dst holds c*oh*ow values.
func (t *transformer) apply(dst []float32, src []uint8, hOff, wOff int, mirror bool) {
	oh, ow := t.oh, t.ow
	for c := range t.c {
		var lut *[256]float32
		if t.mean == nil {
			lut = (*[256]float32)(t.lut[c*256 : c*256+256])
		}
		for y := range oh {
			si := (c*t.h+hOff+y)*t.w + wOff
			row := src[si : si+ow]
			out := dst[(c*oh+y)*ow : (c*oh+y+1)*ow]
			switch {
			case lut != nil && !mirror:
				for x, v := range row {
					out[x] = lut[v]
				}
			case lut != nil:
				for x, v := range row {
					out[ow-1-x] = lut[v]
				}
			case !mirror:
				m := t.mean[si : si+ow]
				for x, v := range row {
					out[x] = (float32(v) - m[x]) * t.scale
				}
			default:
				m := t.mean[si : si+ow]
				for x, v := range row {
					out[ow-1-x] = (float32(v) - m[x]) * t.scale
				}
			}
		}
	}
}

// applyFloat is apply for float images (a Datum's float_data): Caffe's
// DataTransformer subtracts the mean and scales them the same way.
func (t *transformer) applyFloat(dst, src []float32, hOff, wOff int, mirror bool) {
	oh, ow := t.oh, t.ow
	for c := range t.c {
		for y := range oh {
			si := (c*t.h+hOff+y)*t.w + wOff
			row := src[si : si+ow]
			out := dst[(c*oh+y)*ow : (c*oh+y+1)*ow]
			for x, v := range row {
				var m float32
				if t.mean != nil {
					m = t.mean[si+x]
				} else {
					m = t.means[c]
				}
				o := x
				if mirror {
					o = ow - 1 - x
				}
				out[o] = (v - m) * t.scale
			}
		}
	}
}

package layers

import (
	"fmt"
	"math"
	"math/rand/v2"

	"dsgd/engine/tensor"
)

// FillerType names a Caffe filler.
type FillerType string

// The fillers dsgd supports.
const (
	FillConstant FillerType = "constant"
	FillGaussian FillerType = "gaussian"
	FillUniform  FillerType = "uniform"
	FillXavier   FillerType = "xavier"
	FillMSRA     FillerType = "msra"
	// FillBilinear is Caffe's bilinear filler: the weights of bilinear
	// upsampling, for a Deconvolution's 4-D kernel.
	FillBilinear FillerType = "bilinear"
	// FillPositiveUnitball is Caffe's positive_unitball filler: uniform on
	// [0, 1], then each of the shape[0] rows (an output's fan-in) divided
	// by its sum, so that it sums to 1.
	FillPositiveUnitball FillerType = "positive_unitball"
	// FillPreset copies *Preset: the values a layer gave its params in
	// Setup (a Python layer's blobs), which Caffe keeps as they are.
	FillPreset FillerType = "preset"
)

// VarianceNorm is Caffe's FillerParameter.VarianceNorm, used by xavier and
// msra: fan_in = count/shape[0], fan_out = count/shape[1].
type VarianceNorm int

const (
	// FanIn normalises by fan_in (Caffe's default).
	FanIn VarianceNorm = iota
	// FanOut normalises by fan_out.
	FanOut
	// Average normalises by (fan_in+fan_out)/2.
	Average
)

// Filler is Caffe's FillerParameter. The zero value is a constant 0 filler.
type Filler struct {
	Type         FillerType // "" means constant
	Value        float32    // constant
	Min, Max     float32    // uniform; Caffe default 0, 1
	Mean, Std    float32    // gaussian; Caffe default 0, 1
	VarianceNorm VarianceNorm
	// Sparse, when positive, makes a gaussian filler keep each weight with
	// probability Sparse/shape[0] (Caffe's sparse: about Sparse non-zero
	// inputs per output) and zero the rest; 0 (Caffe's -1) is dense.
	Sparse int
	// Preset holds FillPreset's values, one per element (a pointer, so
	// that Filler stays comparable).
	Preset *[]float32
}

// Validate reports whether the filler's type and parameters make sense: a
// known type, Min <= Max for uniform and Std >= 0 for gaussian. Build
// methods call it on every filler of their config.
func (f Filler) Validate() error {
	switch f.Type {
	case "", FillConstant, FillXavier, FillMSRA, FillBilinear, FillPositiveUnitball:
	case FillPreset:
		if f.Preset == nil {
			return fmt.Errorf("layers: preset filler without values")
		}
	case FillUniform:
		if !(f.Min <= f.Max) {
			return fmt.Errorf("layers: uniform filler: min %v greater than max %v", f.Min, f.Max)
		}
	case FillGaussian:
		if !(f.Std >= 0) {
			return fmt.Errorf("layers: gaussian filler: negative std %v", f.Std)
		}
	default:
		return fmt.Errorf("layers: unknown filler type %q (want constant, uniform, gaussian, xavier, msra, bilinear or positive_unitball)", f.Type)
	}
	if f.VarianceNorm < FanIn || f.VarianceNorm > Average {
		return fmt.Errorf("layers: unknown filler variance_norm %d", f.VarianceNorm)
	}
	return nil
}

// Fill writes values drawn as Caffe's filler of the same name into b.Data,
// using r for randomness (r may be nil for a constant filler):
//   - constant: every element is Value;
//   - uniform: uniform on [Min, Max];
//   - gaussian: normal with mean Mean and standard deviation Std, each
//     kept with probability Sparse/shape[0] when Sparse > 0;
//   - xavier: uniform on ±sqrt(3/n);
//   - msra: normal with mean 0 and standard deviation sqrt(2/n);
//   - bilinear: bilinear upsampling weights (see fillBilinear);
//   - positive_unitball: uniform on [0, 1], each of the shape[0] rows of
//     count/shape[0] values then divided by its sum;
//
// where n is fan_in = count/shape[0], fan_out = count/shape[1] (count for a
// blob with one axis) or their mean, as VarianceNorm says. Fill panics on a
// filler that Validate rejects.
func (f Filler) Fill(b *tensor.Blob, r *rand.Rand) {
	if err := f.Validate(); err != nil {
		panic(err.Error())
	}
	data := b.Data
	if len(data) == 0 {
		return
	}
	switch f.Type {
	case "", FillConstant:
		for i := range data {
			data[i] = f.Value
		}
	case FillUniform:
		lo, span := float64(f.Min), float64(f.Max)-float64(f.Min)
		for i := range data {
			data[i] = float32(lo + span*r.Float64())
		}
	case FillGaussian:
		fillNormal(data, float64(f.Mean), float64(f.Std), r)
		if f.Sparse > 0 && len(b.Shape) > 0 && b.Shape[0] > 0 {
			// Caffe's GaussianFiller: a Bernoulli mask of probability
			// sparse / num_outputs, num_outputs being shape[0].
			p := min(float64(f.Sparse)/float64(b.Shape[0]), 1)
			for i := range data {
				if r.Float64() >= p {
					data[i] = 0
				}
			}
		}
	case FillXavier:
		a := math.Sqrt(3 / f.fan(b))
		for i := range data {
			data[i] = float32(a * (2*r.Float64() - 1))
		}
	case FillMSRA:
		fillNormal(data, 0, math.Sqrt(2/f.fan(b)), r)
	case FillBilinear:
		fillBilinear(b)
	case FillPositiveUnitball:
		fillPositiveUnitball(b, r)
	case FillPreset:
		if len(*f.Preset) != len(data) {
			panic(fmt.Sprintf("layers: preset filler of %d values for a blob of %d", len(*f.Preset), len(data)))
		}
		copy(data, *f.Preset)
	}
}

// fillPositiveUnitball is Caffe's PositiveUnitballFiller: uniform on
// [0, 1], then each of the shape[0] rows divided by its sum, accumulated
// in float32 as Caffe's float nets do. A blob without axes is one row.
func fillPositiveUnitball(b *tensor.Blob, r *rand.Rand) {
	data := b.Data
	for i := range data {
		data[i] = r.Float32()
	}
	rows := 1
	if len(b.Shape) > 0 && b.Shape[0] > 0 {
		rows = b.Shape[0]
	}
	dim := len(data) / rows
	for i := range rows {
		row := data[i*dim : (i+1)*dim]
		var sum float32
		for _, v := range row {
			sum += v
		}
		for j := range row {
			row[j] /= sum
		}
	}
}

// fillBilinear writes bilinear-upsampling weights into every kh×kw plane
// of b, as Caffe's BilinearFiller (master, since 2017): with f = ceil(kw/2)
// and c = (kw − 1)/(2f), tap (y, x) is (1 − |x/f − c|)·(1 − |y/f − c|).
// Caffe 1.0 used c = (2f − 1 − f mod 2)/(2f), which differs for odd
// kernels; the two agree on the even kernels of upsampling by an integer
// factor (kernel 2·factor − factor mod 2 is even for every even factor).
// A blob with fewer than 2 axes is filled as one row.
func fillBilinear(b *tensor.Blob) {
	kh, kw := 1, b.Count()
	if n := len(b.Shape); n >= 2 {
		kh, kw = b.Shape[n-2], b.Shape[n-1]
	}
	f := math.Ceil(float64(kw) / 2)
	c := float64(kw-1) / (2 * f)
	for i := range b.Data {
		x, y := float64(i%kw), float64((i/kw)%kh)
		b.Data[i] = float32((1 - math.Abs(x/f-c)) * (1 - math.Abs(y/f-c)))
	}
}

// fan is the n of the xavier and msra fillers for blob b.
func (f Filler) fan(b *tensor.Blob) float64 {
	count := b.Count()
	fanIn, fanOut := count, count
	if len(b.Shape) > 0 && b.Shape[0] > 0 {
		fanIn = count / b.Shape[0]
	}
	if len(b.Shape) > 1 && b.Shape[1] > 0 {
		fanOut = count / b.Shape[1]
	}
	switch f.VarianceNorm {
	case FanOut:
		return float64(fanOut)
	case Average:
		return float64(fanIn+fanOut) / 2
	}
	return float64(fanIn)
}

func fillNormal(data []float32, mean, std float64, r *rand.Rand) {
	for i := range data {
		data[i] = float32(mean + std*r.NormFloat64())
	}
}

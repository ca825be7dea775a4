package layers

// FillerType names a Caffe filler.
type FillerType string

// The fillers dsgd supports.
const (
	FillConstant FillerType = "constant"
	FillGaussian FillerType = "gaussian"
	FillUniform  FillerType = "uniform"
	FillXavier   FillerType = "xavier"
	FillMSRA     FillerType = "msra"
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
}

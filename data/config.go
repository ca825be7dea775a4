package data

// TransformConfig is Caffe's TransformationParameter: what is done to each
// image as it becomes a float32 input.
//
// Order, as in Caffe: crop (random offset in training, centred in test),
// mirror (training only, with probability 1/2), subtract the mean (MeanFile
// or MeanValue, per channel), multiply by Scale.
type TransformConfig struct {
	// Scale multiplies every pixel after mean subtraction; 0 means 1.
	Scale float32
	// MeanValue holds one mean per channel, or one for all channels.
	MeanValue []float32
	// MeanFile is a Caffe binaryproto mean image (mutually exclusive with
	// MeanValue).
	MeanFile string
	// CropSize crops a CropSize×CropSize window; 0 means no crop.
	CropSize int
	// Mirror flips images left-right at random, in either phase, as
	// Caffe's DataTransformer does (Caffe's own TEST nets set it false).
	Mirror bool
}

package layers

// ThresholdConfig is Caffe's ThresholdParameter.
type ThresholdConfig struct {
	Threshold float32 // default 0
}

// Type returns "Threshold".
func (*ThresholdConfig) Type() string { return "Threshold" }

// Build returns a Threshold layer: y = 1 where x > threshold, else 0. Its
// gradient is zero wherever it is defined (Caffe has no Backward for it;
// dsgd lets zero flow so that a net with it still trains the layers
// above).
func (c *ThresholdConfig) Build(Context) (Layer, error) {
	t := float64(c.Threshold)
	return newUnary("Threshold", false, func(x float64) float64 {
		if x > t {
			return 1
		}
		return 0
	}, func(_, _, _ float64) float64 { return 0 }), nil
}

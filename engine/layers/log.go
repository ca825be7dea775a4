package layers

import "math"

// LogConfig is Caffe's LogParameter.
type LogConfig struct {
	Base  float32 // default -1: e
	Scale float32 // default 1
	Shift float32 // default 0
}

// Type returns "Log".
func (*LogConfig) Type() string { return "Log" }

// Build returns a Log layer: y = log_base(shift + scale·x), dx =
// dy·scale/((shift + scale·x)·ln(base)). It may run in place.
func (c *LogConfig) Build(Context) (Layer, error) {
	lb, err := logBase("Log", c.Base)
	if err != nil {
		return nil, err
	}
	a, b := float64(c.Scale), float64(c.Shift)
	return newUnary("Log", true, func(x float64) float64 {
		return math.Log(b+a*x) / lb
	}, func(x, _, dy float64) float64 {
		return dy * a / ((b + a*x) * lb)
	}), nil
}

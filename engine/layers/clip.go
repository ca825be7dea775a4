package layers

import (
	"fmt"
	"math"
)

// ClipConfig is Caffe's ClipParameter (both fields are required in Caffe's
// proto).
type ClipConfig struct {
	Min, Max float32
}

// Type returns "Clip".
func (*ClipConfig) Type() string { return "Clip" }

// Build returns a Clip layer: y = max(Min, min(x, Max)); dx = dy where
// Min ≤ x ≤ Max (both ends included, as in Caffe), 0 elsewhere. It may run
// in place (it then keeps a copy of x for Backward).
func (c *ClipConfig) Build(Context) (Layer, error) {
	if math.IsNaN(float64(c.Min)) || math.IsNaN(float64(c.Max)) || c.Min > c.Max {
		return nil, fmt.Errorf("layers: Clip: min %v must not exceed max %v", c.Min, c.Max)
	}
	lo, hi := c.Min, c.Max
	return newUnary("Clip", true, func(x float64) float64 {
		return float64(max(lo, min(float32(x), hi)))
	}, func(x, _, dy float64) float64 {
		if float32(x) >= lo && float32(x) <= hi {
			return dy
		}
		return 0
	}), nil
}

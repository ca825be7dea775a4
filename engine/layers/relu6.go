package layers

import (
	"fmt"
	"math"
)

// ReLU6Config is the ReLU6Parameter of the MobileNet-v2 ports' Caffe forks
// (the Caffe-MobileNetV2-ReLU6 layer most of them copy, also in
// eric612/MobileNet-YOLO): relu6_param { negative_slope } (default 0).
type ReLU6Config struct {
	NegativeSlope float32
}

// Type returns "ReLU6".
func (*ReLU6Config) Type() string { return "ReLU6" }

// Build returns a ReLU6 layer, as the fork computes it:
// y = min(max(x, 0) + slope·min(x, 0), 6); dx = dy·(1 if x > 0 else slope)
// where x < 6, 0 where x ≥ 6. With slope 0 it is Clip { min: 0 max: 6 }
// except at x = 6, where the fork's gradient is 0 and Clip's is dy. It may
// run in place (it then keeps a copy of x for Backward).
func (c *ReLU6Config) Build(Context) (Layer, error) {
	if math.IsNaN(float64(c.NegativeSlope)) || math.IsInf(float64(c.NegativeSlope), 0) {
		return nil, fmt.Errorf("layers: ReLU6: negative_slope must be finite, got %v", c.NegativeSlope)
	}
	slope := c.NegativeSlope
	return newUnary("ReLU6", true, func(x float64) float64 {
		v := float32(x)
		return float64(min(max(v, 0)+slope*min(v, 0), 6))
	}, func(x, _, dy float64) float64 {
		switch v := float32(x); {
		case v >= 6:
			return 0
		case v > 0:
			return dy
		}
		return float64(float32(dy) * slope)
	}), nil
}

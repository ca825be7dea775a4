package simd

import "math"

func f32bits(x float32) uint32     { return math.Float32bits(x) }
func f32frombits(b uint32) float32 { return math.Float32frombits(b) }

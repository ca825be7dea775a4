package center

import (
	"fmt"
	"math"
)

// Inspect is the data plane's check of an update before the center
// applies it: what is wrong with scale·values (a non-finite value, or an
// L2 norm above maxNorm when maxNorm > 0), or "" when nothing is. what
// names the update ("push", "round's gradients") in the finding, which a
// Core turns into an error naming the worker (Request.Refuse).
func Inspect(what string, values []float32, scale float32, maxNorm float64) string {
	var sum float64
	for i, v := range values {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprintf("non-finite value %v at index %d of its %s (%d values): the worker has diverged", v, i, what, len(values))
		}
		f *= float64(scale)
		sum += f * f
	}
	if maxNorm > 0 {
		if n := math.Sqrt(sum); n > maxNorm || math.IsInf(n, 0) {
			return fmt.Sprintf("its %s has L2 norm %.4g, above the bound %.4g (--max-update-norm)", what, n, maxNorm)
		}
	}
	return ""
}

// InspectElastic is Inspect for an elastic exchange of worker weights x
// with center c: x must be finite, and the center's move alpha·(x − c)
// within maxNorm.
func InspectElastic(c, x []float32, alpha float32, maxNorm float64) string {
	if f := Inspect("weights", x, 1, 0); f != "" {
		return f
	}
	if maxNorm <= 0 {
		return ""
	}
	var sum float64
	for i, ci := range c[:min(len(c), len(x))] {
		d := float64(alpha) * (float64(x[i]) - float64(ci))
		sum += d * d
	}
	if n := math.Sqrt(sum); n > maxNorm || math.IsInf(n, 0) {
		return fmt.Sprintf("its elastic exchange moves the center by L2 norm %.4g, above the bound %.4g (--max-update-norm)", n, maxNorm)
	}
	return ""
}

package harness_test

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/cockroachdb/datadriven"

	"dsgd/training/harness"
)

// TestScripts runs the golden scripts under testdata: each file in a
// synctest bubble of its own, its commands against real ranks over the
// scripted transport. `go test ./training/harness -rewrite` regenerates
// their output. The scripts' compare commands check against references
// (see references).
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		synctest.Test(t, func(t *testing.T) {
			h := harness.Harness{References: references}
			defer h.Close()
			datadriven.RunTest(t, path, h.Cmd)
		})
	})
}

// references are the weights the scripts' compare commands check
// against, written out here from the papers, apart from the schemes.
var references = map[string]harness.Reference{"alg1": easgdAlg1}

// easgdAlg1 is Original EASGD (Zhang, Choromanska, LeCun 2015, Alg. 1;
// SC17 Alg. 1), one worker at a time in rank order: a turn is the
// worker's τ local SGD steps, the last of them with the elastic term
// against the center as the turn found it,
//
//	x ← x − η(g + ρ(x − c)),  c ← c + ηρ(x − c),  ηρ = α,
//
// every turn after the turns before it. It is computed in float64 and
// rounded to float32 at the end: the harness's weights and gradients are
// exact in either.
func easgdAlg1(s harness.Setup) ([][]float32, []float32, error) {
	n, iters, tau := s.Config.Workers, s.Config.MaxIter, s.Config.Interval
	if tau < 1 || iters%tau != 0 {
		return nil, nil, fmt.Errorf("interval=%d: a whole number of turns of τ ≥ 1 steps in %d iterations", tau, iters)
	}
	eta, alpha := float64(s.LR), float64(s.Config.Alpha)
	rho := alpha / eta
	vec := func(w []float32) []float64 {
		out := make([]float64, len(w))
		for i, v := range w {
			out[i] = float64(v)
		}
		return out
	}
	xs := make([][]float64, n)
	for r := range xs {
		xs[r] = vec(s.Start)
	}
	c := vec(s.Start)
	g := make([]float32, len(s.Start))
	for k0 := 0; k0 < iters; k0 += tau {
		for r, x := range xs {
			for k := k0; k < k0+tau; k++ {
				s.Grad(r, k, g)
				last := k == k0+tau-1
				for i := range x {
					if !last {
						x[i] -= eta * float64(g[i])
						continue
					}
					d := x[i] - c[i]
					x[i] -= eta * (float64(g[i]) + rho*d)
					c[i] += eta * rho * d
				}
			}
		}
	}
	f32 := func(w []float64) []float32 {
		out := make([]float32, len(w))
		for i, v := range w {
			out[i] = float32(v)
		}
		return out
	}
	workers := make([][]float32, n)
	for r, x := range xs {
		workers[r] = f32(x)
	}
	return workers, f32(c), nil
}

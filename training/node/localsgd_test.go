package node

import (
	"testing"

	"dsgd/protocol/scheme"
)

// TestLocalSGDMatchesDefinition: local SGD with periodic averaging: each
// worker takes plain SGD steps on its own gradients, and after every H-th
// iteration (and once more at the end of a run that stops between two)
// every worker's weights become the mean over the workers.
func TestLocalSGDMatchesDefinition(t *testing.T) {
	for _, tc := range []struct{ workers, h, iters int }{{2, 2, 4}, {3, 2, 5}, {2, 1, 3}, {3, 4, 3}} {
		ranks := runRanks(t, scheme.Config{Name: "local-sgd", Workers: tc.workers, MaxIter: tc.iters, Interval: tc.h}, nil, 0)
		xs := make([][]float64, tc.workers)
		for r := range xs {
			xs[r] = vec(w0)
		}
		avg := func() {
			mean := make([]float64, dim)
			for _, x := range xs {
				for i := range x {
					mean[i] += x[i] / float64(tc.workers)
				}
			}
			for _, x := range xs {
				copy(x, mean)
			}
		}
		for k := 0; k < tc.iters; k++ {
			for r, x := range xs {
				for i, g := range grad(r, k) {
					x[i] -= lr * g
				}
			}
			if (k+1)%tc.h == 0 {
				avg()
			}
		}
		if tc.iters%tc.h != 0 {
			avg()
		}
		for r := range xs {
			checkNear(t, "worker weights", ranks[r].Params, xs[r])
		}
		// The test can fail: between averages the workers drift apart.
		if tc.h > 1 && far(sgd(0, tc.iters), xs[0]) < 1e-3 {
			t.Fatalf("%+v: local SGD's weights equal one worker's plain SGD", tc)
		}
	}
}

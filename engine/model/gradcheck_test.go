package model

import (
	"strings"
	"testing"
)

// netGradCheck is the check every test net passes: Caffe's step and
// threshold, 50 sampled parameters, and a kink guard.
var netGradCheck = gradCheck{Step: 1e-2, Threshold: 1e-2, Floor: 1e-2, Samples: 50, KinkTol: 2e-2}

// TestNetGradients checks, for nets of every shape the model must wire
// (in-place layers, splits, concat, shared params, BatchNorm, loss weights
// on plain tops), that the gradients Backward leaves in Grads equal central
// finite differences of Forward's loss with respect to the parameters.
func TestNetGradients(t *testing.T) {
	for _, tn := range []testNet{mlpNet(), lenetNet(), splitNet(), concatNet(), bnNet(), residualBNNet(false), sharedNet(), weightedNet()} {
		t.Run(tn.name, func(t *testing.T) {
			for _, threads := range []int{1, 3} {
				n := tn.build(t, Options{Seed: 5, Threads: threads}, 9)
				g := grads(n)
				if allZero(g) {
					t.Fatalf("threads %d: all gradients are zero", threads)
				}
				gc := netGradCheck
				gc.Seed = uint64(threads)
				rep := compareGradients(n, g, gc)
				for _, s := range rep.bad {
					t.Errorf("threads %d: %s", threads, s)
				}
				if rep.checked < rep.sampled*3/4 || rep.sampled < min(gc.Samples, 30) {
					t.Errorf("threads %d: only %d of %d samples checked (%d skipped as kinks)", threads, rep.checked, rep.sampled, rep.kinks)
				}
				t.Logf("threads %d: %d checked, %d kinks, max relative error %.3g", threads, rep.checked, rep.kinks, rep.maxErr)
			}
		})
	}
}

// TestGradCheckerCatchesErrors makes sure the checker used above can fail:
// a gradient off by 5% in one parameter, or with one block's sign flipped,
// is reported.
func TestGradCheckerCatchesErrors(t *testing.T) {
	tn := mlpNet()
	n := tn.build(t, Options{Seed: 5}, 9)
	g := grads(n)
	gc := netGradCheck
	gc.Samples = 0 // every parameter, so the corrupted one is seen
	if rep := compareGradients(n, g, gc); len(rep.bad) > 0 {
		t.Fatalf("the true gradient fails the check: %v", rep.bad)
	}
	// Corrupt the largest gradient in ip2's weights by 5%.
	w := blockOf(t, n, "ip2/0")
	vals := blockVals(n, g, w)
	big := 0
	for i, v := range vals {
		if abs32(v) > abs32(vals[big]) {
			big = i
		}
	}
	vals[big] *= 1.05
	rep := compareGradients(n, g, gc)
	if len(rep.bad) != 1 || !strings.HasPrefix(rep.bad[0], "ip2/0[") {
		t.Errorf("one corrupted gradient: got reports %q, want exactly one for ip2/0", rep.bad)
	}
	vals[big] /= 1.05
	b := blockVals(n, g, blockOf(t, n, "ip1/1"))
	for i := range b {
		b[i] = -b[i]
	}
	rep = compareGradients(n, g, gc)
	if len(rep.bad) == 0 {
		t.Errorf("sign-flipped ip1 bias gradient not reported")
	}
	for _, s := range rep.bad {
		if !strings.HasPrefix(s, "ip1/1[") {
			t.Errorf("unexpected report %q: only ip1/1 was corrupted", s)
		}
	}
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

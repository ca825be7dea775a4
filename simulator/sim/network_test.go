package sim

import (
	"math"
	"strings"
	"testing"
)

func TestParseNetwork(t *testing.T) {
	tests := []struct {
		in          string
		alpha, beta float64
		err         string
	}{
		{in: "fdr-ib", alpha: 0.7e-6, beta: 0.2e-9},
		{in: "QDR-IB", alpha: 1.2e-6, beta: 0.3e-9},
		{in: "10gbe", alpha: 7.2e-6, beta: 0.9e-9},
		{in: "alpha=7.2us,beta=0.9ns", alpha: 7.2e-6, beta: 0.9e-9},
		{in: "alpha=1ms, beta=0.5ns/B", alpha: 1e-3, beta: 0.5e-9},
		{in: "beta=2e-9,alpha=3µs", alpha: 3e-6, beta: 2e-9},
		{in: "alpha=0s,beta=0ns", alpha: 0, beta: 0},
		{in: "infiniband", err: "unknown network"},
		{in: "alpha=7.2us", err: "beta missing"},
		{in: "beta=1ns", err: "alpha missing"},
		{in: "alpha=fast,beta=1ns", err: "alpha"},
		{in: "alpha=1us,beta=-1ns", err: "negative"},
		{in: "alpha=1us,beta=1ns,gamma=2", err: `unknown key "gamma"`},
		{in: "alpha=1us,alpha=2us,beta=1ns", err: "twice"},
		{in: "alpha=1us,beta", err: "not key=value"},
	}
	for _, tc := range tests {
		n, err := ParseNetwork(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseNetwork(%q) = %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseNetwork(%q): %v", tc.in, err)
			continue
		}
		if math.Abs(n.Alpha-tc.alpha) > 1e-15 || math.Abs(n.Beta-tc.beta) > 1e-18 {
			t.Errorf("ParseNetwork(%q) = alpha %g beta %g, want %g %g", tc.in, n.Alpha, n.Beta, tc.alpha, tc.beta)
		}
	}
}

func FuzzParseNetwork(f *testing.F) {
	for _, s := range []string{"fdr-ib", "alpha=7.2us,beta=0.9ns", "alpha=1,beta=2/B", "alpha=,beta=", "=,=", "alpha=1e400s,beta=NaNns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseNetwork(s)
		if err == nil && (n.Alpha < 0 || n.Beta < 0 || math.IsNaN(n.Alpha) || math.IsNaN(n.Beta) || math.IsInf(n.Alpha, 0) || math.IsInf(n.Beta, 0)) {
			t.Fatalf("ParseNetwork(%q) = %+v: negative or not finite", s, n)
		}
	})
}

// TestMessageCost: one message costs Alpha + Beta·m exactly; two into the
// same node share its in-link; a receive posted after arrival completes
// at once.
func TestMessageCost(t *testing.T) {
	nw := Network{Alpha: 7.2e-6, Beta: 0.9e-9}
	const m = 4 << 20
	tests := []struct {
		name   string
		sends  [][2]int // from, to (all at t=0, m bytes)
		recvAt float64
		want   []float64 // completion of the receives, in order
	}{
		{"one message", [][2]int{{0, 1}}, 0, []float64{nw.Alpha + nw.Beta*m}},
		{"shared in-link", [][2]int{{0, 2}, {1, 2}}, 0, []float64{nw.Alpha + nw.Beta*m, nw.Alpha + 2*nw.Beta*m}},
		{"disjoint links", [][2]int{{0, 1}, {2, 3}}, 0, []float64{nw.Alpha + nw.Beta*m, nw.Alpha + nw.Beta*m}},
		{"shared out-link", [][2]int{{0, 1}, {0, 2}}, 0, []float64{nw.Alpha + nw.Beta*m, nw.Alpha + 2*nw.Beta*m}},
		{"late receive", [][2]int{{0, 1}}, 1, []float64{1}},
	}
	for _, tc := range tests {
		var eng engine
		n := newNetwork(&eng, nw, 4)
		var got []float64
		for _, s := range tc.sends {
			n.send(s[0], s[1], 7, m, 0, nil)
		}
		eng.at(tc.recvAt, func() {
			for _, s := range tc.sends {
				n.recv(s[0], s[1], 7, tc.recvAt, func(at float64, _ []float32) { got = append(got, at) })
			}
		})
		eng.run(func() bool { return false })
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d receives completed, want %d", tc.name, len(got), len(tc.want))
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-15 {
				t.Errorf("%s: receive %d at %.9g s, want %.9g", tc.name, i, got[i], tc.want[i])
			}
		}
		if n.mismatch != nil {
			t.Errorf("%s: %v", tc.name, n.mismatch)
		}
	}
}

package study

import (
	"strings"
	"testing"
	"time"

	"dsgd/simulator/sim"
)

// TestTextLines: Text writes a run's row under its header, the notes
// after a sweep, and a verdict past 25% as not within.
func TestTextLines(t *testing.T) {
	var b strings.Builder
	p := &Text{W: &b, C: Config{Workers: []int{2}, Threads: 1, Iters: 3, Repeat: 1, Timeline: "t.json",
		Straggle: &sim.Straggler{Rank: 1, Delay: time.Millisecond}}}
	p.Baseline(10 * time.Millisecond)
	p.Run(Run{Scheme: "sync-tree", Workers: 2, Result: sim.Result{Iter: 20 * time.Millisecond}, Speedup: 1, Efficiency: 0.5})
	p.Swept()
	p.Training("overlap", 0)
	p.Trained(&Measured{Iter: 1500 * time.Microsecond})
	p.Verdict(&Validation{Worst: 30})
	out := b.String()
	for _, want := range []string{
		"T1 = 10.000 ms",
		"sync-tree             2     20.000",
		"(the straggler, rank 1, is in the runs with more than 1 workers)\ntimeline: t.json\n",
		"  training overlap    (run 1) 1.500 ms per iteration\n",
		"worst error 30.0%: NOT within the 25%",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

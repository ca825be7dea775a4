package scheme

import (
	"testing"

	"dsgd/protocol/center"
)

// TestPolicyIsCenters: the catalogue's policies are center.Policy's
// values, which the builders of a center (train, sim) convert them to.
func TestPolicyIsCenters(t *testing.T) {
	for p, want := range map[Policy]center.Policy{FCFS: center.FCFS, RoundRobin: center.RoundRobin, Hogwild: center.Hogwild} {
		if got := center.Policy(p); got != want {
			t.Errorf("scheme policy %d converts to center's %v, want %v", int(p), got, want)
		}
	}
}

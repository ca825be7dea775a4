package transport_test

import (
	"testing"

	"dsgd/comm/transport"
	"dsgd/comm/transport/transporttest"
)

// TestSubConformance runs Sub through the conformance suite: the group of
// size n is the odd ranks of an in-process group of 2n+1, so sub-group
// ranks differ from the parent's and the parent's other ranks stay idle.
func TestSubConformance(t *testing.T) {
	transporttest.RunOptions(t, func(t *testing.T, size int) []transport.Endpoint {
		parent := transport.NewInproc(2*size + 1)
		members := make([]int, size)
		for i := range members {
			members[i] = 2*i + 1
		}
		eps := make([]transport.Endpoint, size)
		for i, m := range members {
			ep, err := transport.Sub(parent[m], members)
			if err != nil {
				t.Fatal(err)
			}
			eps[i] = ep
		}
		return eps
	}, transporttest.Options{CloseKeepsPeers: "Sub's Close leaves the parent endpoint open by design, so a sub-group peer learns of it only when the parent closes (hybrid closes the parent)"})
}

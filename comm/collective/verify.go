package collective

import (
	"fmt"
	"strings"
)

// Verify checks that scheds, the schedules of ranks 0..len(scheds)-1 of one
// collective (all with the same N and Segment), fit together on a rendezvous transport (the strictest the
// transport contract allows: a send completes only when its receive is
// posted): every send meets, on its peer, a receive from this rank in the
// same round and of the same length, nothing is left unmatched, and no ring
// of waiting ranks deadlocks. It runs the schedules without data.
//
// depth is the length of the longest chain of dependent messages, each
// counting one (the latency term of the α-β model): ceil(log2 p) for a tree
// reduce or broadcast, 2(p-1) for a ring allreduce.
func Verify(scheds []Schedule) (depth int, err error) {
	p := len(scheds)
	if p == 0 {
		return 0, fmt.Errorf("collective: no schedules")
	}
	for r, s := range scheds {
		if s.Rank != r || s.Size != p || s.N != scheds[0].N || s.Segment != scheds[0].Segment {
			return 0, fmt.Errorf("collective: schedule %d is for rank %d of %d with n=%d segment=%d, want rank %d of %d with n=%d segment=%d",
				r, s.Rank, s.Size, s.N, s.Segment, r, p, scheds[0].N, scheds[0].Segment)
		}
		if err := s.Validate(); err != nil {
			return 0, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	pc := make([]int, p)        // current step per rank
	ready := make([]int, p)     // time the current step may start
	finish := make([]int, p)    // latest message time within the current step
	sent := make([]bool, p)     // current step's send matched
	received := make([]bool, p) // current step's receive matched
	cur := func(r int) *Step {
		if pc[r] < len(scheds[r].Steps) {
			return &scheds[r].Steps[pc[r]]
		}
		return nil
	}
	for {
		progress := false
		for r := range p {
			st := cur(r)
			if st == nil || !st.Send.Active() || sent[r] {
				continue
			}
			q := st.Send.Peer
			qs := cur(q)
			if qs == nil {
				return 0, fmt.Errorf("collective: rank %d step %d (%v) sends to rank %d, which has finished", r, pc[r], *st, q)
			}
			if !qs.Recv.Active() || qs.Recv.Peer != r || received[q] {
				continue // q is busy with something else; maybe later
			}
			if qs.Round != st.Round || qs.Recv.Len() != st.Send.Len() {
				return 0, fmt.Errorf("collective: rank %d step %d (%v) meets rank %d step %d (%v): round or length differ", r, pc[r], *st, q, pc[q], *qs)
			}
			t := max(ready[r], ready[q]) + 1
			finish[r] = max(finish[r], t)
			finish[q] = max(finish[q], t)
			sent[r], received[q] = true, true
			progress = true
		}
		done := true
		for r := range p {
			st := cur(r)
			if st == nil {
				continue
			}
			if (st.Send.Active() && !sent[r]) || (st.Recv.Active() && !received[r]) {
				done = false
				continue
			}
			ready[r] = max(ready[r], finish[r])
			finish[r] = ready[r]
			sent[r], received[r] = false, false
			pc[r]++
			progress = true
			if cur(r) != nil {
				done = false
			}
		}
		if done {
			for r := range p {
				depth = max(depth, ready[r])
			}
			return depth, nil
		}
		if !progress {
			var b strings.Builder
			for r := range p {
				if st := cur(r); st != nil {
					fmt.Fprintf(&b, "; rank %d at step %d (%v)", r, pc[r], *st)
				}
			}
			return 0, fmt.Errorf("collective: deadlock%s", b.String())
		}
	}
}

package sim

// accumState is TRL's shared accumulator (overlap with
// scheme.Config.Accumulate, package accum) in virtual time: each block has
// a lock (TRL Alg. 7's critical section), so the workers' Adds of one block
// run one after another, each costing an add of the block; a Gather
// completes once every worker's Add of that block in that iteration is
// done, plus a copy of the sum back (costed as an add).
type accumState struct {
	free    map[int]float64 // block (Lo) -> when its lock is next free
	adds    map[[2]int]int  // (iter, Lo) -> Adds completed
	ready   map[[2]int]float64
	waiters map[[2]int][]func(t float64)
}

func newAccumState() *accumState {
	return &accumState{free: map[int]float64{}, adds: map[[2]int]int{}, ready: map[[2]int]float64{}, waiters: map[[2]int][]func(float64){}}
}

// add books worker's Add of n values of block lo at iteration iter from
// now and returns when it completes.
func (a *accumState) add(s *sim, iter, lo, n int, now float64) float64 {
	start := max(now, a.free[lo])
	end := start + s.addCost(n)
	a.free[lo] = end
	k := [2]int{iter, lo}
	s.eng.at(end, func() {
		a.adds[k]++
		if a.adds[k] == s.sc.Workers {
			a.ready[k] = end
			for _, w := range a.waiters[k] {
				w(end)
			}
			delete(a.waiters, k)
			delete(a.adds, k)
		}
	})
	return end
}

// gather calls fin when block lo of iteration iter holds every worker's
// Add and this worker has copied the n summed values back.
func (a *accumState) gather(s *sim, iter, lo, n int, now float64, fin func(t float64)) {
	k := [2]int{iter, lo}
	done := func(t float64) {
		end := max(t, now) + s.addCost(n)
		s.eng.at(end, func() { fin(end) })
	}
	if t, ok := a.ready[k]; ok {
		done(t)
		return
	}
	a.waiters[k] = append(a.waiters[k], done)
}

package sim

import (
	"fmt"

	"dsgd/center"
	"dsgd/scheme"
)

// server is the center (package center) as a node of the network with
// its own NIC and one processor: center.Local's semantics in virtual
// time. A request travels to it, is handled when it arrives (in arrival
// order), and its reply travels back:
//
//	Join, Clock, Leave   64-byte request, 64-byte reply
//	Pull                 64-byte request, N·4 bytes back
//	Push                 N·4 bytes in; done once added (N adds), no reply
//	Elastic              N·4 in, 3N adds, N·4 back (round-robin: in turn;
//	                     hogwild: the adds run at once with any others')
//	Round                N·4 in, N adds; a 64-byte reply when the round
//	                     closes (every live worker in, or RoundDeadline
//	                     after the first), which costs Model.Update
//
// The additions run on the server's processor one at a time.
type server struct {
	s       *sim
	node    int
	n       int // workers at the center
	size    int // N
	clocks  []int
	live    []bool
	joined  []bool
	turn    int
	rr      []func() // round-robin: the pull waiting for its turn, per worker
	round   int
	in      []bool
	nIn     int
	roundW  []func(next int)
	clockW  []clockWait
	closedW []closedWait // Closed calls waiting for their round
	cpu     float64      // the processor is busy until cpu
	dropped int64
	waits   int64
	rounds  int64
	policy  center.Policy
	// maxGap is the largest lead over the slowest live worker that an SSP
	// clock has released a worker with (tests check it against s).
	maxGap int
}

type closedWait struct {
	iter  int
	reply func()
}

type clockWait struct {
	w, s  int
	reply func(stop bool)
}

func newServer(s *sim, node, n int) *server {
	sv := &server{s: s, node: node, n: n, size: s.sc.Layout.N, clocks: make([]int, n), live: make([]bool, n),
		joined: make([]bool, n), rr: make([]func(), n), in: make([]bool, n)}
	switch s.sc.Info().Policy {
	case scheme.RoundRobin:
		sv.policy = center.RoundRobin
	case scheme.Hogwild:
		sv.policy = center.Hogwild
	}
	return sv
}

// work runs cost seconds on the processor from t and returns when it ends.
func (sv *server) work(name string, t, cost float64) float64 {
	start := max(t, sv.cpu)
	sv.cpu = start + cost
	sv.s.trace(sv.node, name, "center", start, sv.cpu)
	return sv.cpu
}

// to sends bytes from worker node d to the server at t and calls then at
// arrival.
func (sv *server) to(d *driver, bytes int64, t float64, then func(t float64)) {
	_, arr := sv.s.net.reserve(d.rank, sv.node, bytes, t)
	sv.s.eng.at(arr, func() { then(arr) })
}

// back sends bytes from the server to d at t and calls then at arrival.
func (sv *server) back(d *driver, bytes int64, t float64, then func()) {
	_, arr := sv.s.net.reserve(sv.node, d.rank, bytes, t)
	sv.s.eng.at(arr, then)
}

// op carries out a center action of d's from time now.
func (sv *server) op(d *driver, a scheme.Action, now float64, fin func(answer)) {
	s, w := sv.s, d.centerID
	if a.R.Len() != 0 && a.R.Len() != sv.size {
		s.fail(fmt.Errorf("sim: worker %d sent %d values to the center, which holds %d", w, a.R.Len(), sv.size))
		return
	}
	nb := 4 * int64(sv.size)
	switch a.Op {
	case scheme.Join:
		sv.to(d, ctrlBytes, now, func(t float64) {
			sv.live[w], sv.joined[w] = true, true
			s.ex.control(scheme.Join, w, 0)
			iter := sv.clocks[w]
			sv.changed(t)
			sv.back(d, ctrlBytes, t, func() { fin(answer{iter: iter}) })
		})
	case scheme.Pull:
		sv.to(d, ctrlBytes, now, func(t float64) {
			pull := func() {
				data := s.ex.pull(w)
				sv.back(d, nb, s.eng.now, func() {
					d.land(a.R, data, false)
					fin(answer{})
				})
			}
			if sv.policy != center.RoundRobin {
				pull()
				return
			}
			// SC17 Alg. 1: a worker's turn starts with the center sent
			// to it and ends with its clock.
			sv.rr[w] = pull
			sv.serveTurns()
		})
	case scheme.Push:
		data := d.snapshot(a.R)
		sv.to(d, nb, now, func(t float64) {
			s.ex.push(w, data)
			end := sv.work("push", t, s.addCost(sv.size))
			s.eng.at(end, func() { fin(answer{}) })
		})
	case scheme.Elastic:
		x := d.snapshot(a.R)
		sv.to(d, nb, now, func(t float64) {
			s.ex.elastic(w, x, a.Factor)
			var end float64
			if sv.policy == center.Hogwild {
				// No lock (SC17 5): the exchange runs on its own, at
				// once with any other, as center.Local's does.
				end = t + s.addCost(3*sv.size)
				sv.s.trace(sv.node, "elastic", "center", t, end)
			} else {
				end = sv.work("elastic", t, s.addCost(3*sv.size))
			}
			s.eng.at(end, func() {
				sv.back(d, nb, end, func() {
					d.land(a.R, x, false)
					fin(answer{})
				})
			})
		})
	case scheme.Round:
		g := d.snapshot(a.R)
		sv.to(d, nb, now, func(t float64) { sv.roundIn(d, w, a.Iter, t, g, fin) })
	case scheme.Clock:
		sv.to(d, ctrlBytes, now, func(t float64) {
			if a.Iter+1 > sv.clocks[w] {
				sv.clocks[w] = a.Iter + 1
			}
			s.ex.control(scheme.Clock, w, a.Iter)
			if sv.policy == center.RoundRobin && sv.turn == w && (a.Iter+1-s.sc.StartIter)%max(s.sc.Interval, 1) == 0 {
				sv.turn = (sv.turn + 1) % sv.n
			}
			reply := func(stop bool) {
				sv.maxGap = max(sv.maxGap, sv.clocks[w]-sv.minLive())
				sv.back(d, ctrlBytes, s.eng.now, func() { fin(answer{stop: stop}) })
			}
			if a.Staleness >= 0 && !sv.stop() && sv.clocks[w]-sv.minLive() > a.Staleness {
				sv.waits++
				sv.clockW = append(sv.clockW, clockWait{w: w, s: a.Staleness, reply: reply})
			} else {
				reply(sv.stop())
			}
			sv.changed(t)
		})
	case scheme.Leave:
		sv.to(d, ctrlBytes, now, func(t float64) {
			sv.live[w] = false
			s.ex.control(scheme.Leave, w, 0)
			if sv.nIn > 0 && sv.nIn >= sv.liveCount() {
				sv.closeRound(t)
			}
			sv.changed(t)
			sv.back(d, ctrlBytes, t, func() { fin(answer{}) })
		})
	}
}

// side carries out a side op of d's (Closed): a 64-byte request, and a
// 64-byte reply once round a.Iter has closed.
func (sv *server) side(d *driver, a scheme.Action, now float64, fin func(answer)) {
	sv.to(d, ctrlBytes, now, func(t float64) {
		reply := func() {
			next := sv.round
			sv.back(d, ctrlBytes, sv.s.eng.now, func() { fin(answer{iter: next}) })
		}
		if sv.round > a.Iter {
			reply()
			return
		}
		sv.closedW = append(sv.closedW, closedWait{iter: a.Iter, reply: reply})
	})
}

// changed re-examines the waiters after a change of the control area.
func (sv *server) changed(t float64) {
	sv.serveTurns()
	if len(sv.clockW) == 0 {
		return
	}
	m, stop := sv.minLive(), sv.stop()
	keep := sv.clockW[:0]
	for _, c := range sv.clockW {
		if stop || sv.clocks[c.w]-m <= c.s {
			c.reply(stop)
			continue
		}
		keep = append(keep, c)
	}
	clear(sv.clockW[len(keep):])
	sv.clockW = keep
}

// serveTurns starts the round-robin turn of the worker whose turn it is,
// if its pull is waiting; a clock passes the turn on.
func (sv *server) serveTurns() {
	for i := 0; i < sv.n && !sv.active(sv.turn); i++ {
		sv.turn = (sv.turn + 1) % sv.n
	}
	if x := sv.rr[sv.turn]; x != nil {
		sv.rr[sv.turn] = nil
		x()
	}
}

// active reports whether worker w holds the others back: joined and not
// left, or not joined yet (center.Local's rule).
func (sv *server) active(w int) bool { return sv.live[w] || !sv.joined[w] }

func (sv *server) roundIn(d *driver, w, iter int, t float64, grads []float32, fin func(answer)) {
	s := sv.s
	switch {
	case iter < sv.round:
		next := sv.round // counted when its round closed
		sv.back(d, ctrlBytes, t, func() { fin(answer{iter: next, dropped: true}) })
		return
	case iter > sv.round:
		s.fail(fmt.Errorf("sim: worker %d handed in round %d, but round %d is open", w, iter, sv.round))
		return
	case sv.in[w]:
		s.fail(fmt.Errorf("sim: worker %d handed in round %d twice", w, iter))
		return
	}
	sv.work("round add", t, s.addCost(sv.size))
	s.ex.roundAdd(grads)
	sv.in[w] = true
	sv.nIn++
	sv.roundW = append(sv.roundW, func(next int) {
		sv.back(d, ctrlBytes, s.eng.now, func() { fin(answer{iter: next}) })
	})
	if dl := s.cfg.RoundDeadline.Seconds(); sv.nIn == 1 && dl > 0 {
		r := sv.round
		s.eng.at(t+dl, func() {
			if sv.round == r {
				sv.closeRound(s.eng.now)
			}
		})
	}
	if sv.nIn >= sv.liveCount() {
		sv.closeRound(t)
	}
}

// closeRound applies the round's mean gradient (one solver step) and
// answers the workers that were in it.
func (sv *server) closeRound(t float64) {
	s := sv.s
	sv.dropped += int64(max(sv.liveCount()-sv.nIn, 0)) // center.Local's count
	if sv.nIn > 0 {
		t = sv.work("round update", t, s.addCost(sv.size)+s.cfg.Model.Update.Seconds())
		s.ex.roundClose(sv.nIn, sv.round)
	}
	clear(sv.in)
	sv.nIn = 0
	sv.round++
	sv.rounds++
	ws, next := sv.roundW, sv.round
	sv.roundW = nil
	var closed []func()
	keep := sv.closedW[:0]
	for _, c := range sv.closedW {
		if c.iter < next {
			closed = append(closed, c.reply)
		} else {
			keep = append(keep, c)
		}
	}
	clear(sv.closedW[len(keep):])
	sv.closedW = keep
	s.eng.at(t, func() {
		for _, f := range ws {
			f(next)
		}
		for _, f := range closed {
			f()
		}
	})
}

func (sv *server) liveCount() int {
	n := 0
	for w := range sv.live {
		if sv.active(w) {
			n++
		}
	}
	return n
}

// minLive is the slowest live worker's count (0 when none is live).
func (sv *server) minLive() int {
	m := -1
	for i, c := range sv.clocks {
		if sv.active(i) && (m < 0 || c < m) {
			m = c
		}
	}
	return max(m, 0)
}

// stop applies the finish rule (center.Local's).
func (sv *server) stop() bool {
	mx := sv.s.sc.MaxIter
	switch sv.s.cfg.Finish {
	case center.FinishMaster:
		return sv.clocks[0] >= mx
	case center.FinishFirst:
		for _, c := range sv.clocks {
			if c >= mx {
				return true
			}
		}
	case center.FinishAverage:
		sum := 0
		for _, c := range sv.clocks {
			sum += c
		}
		return sum >= mx*len(sv.clocks)
	}
	return false
}

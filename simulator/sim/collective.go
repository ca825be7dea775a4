package sim

import (
	"fmt"

	"dsgd/comm/collective"
	"dsgd/engine/tensor"
	"dsgd/protocol/scheme"
)

// groupKey names the group of a collective: nil (every rank) or a
// scheme's sub-group, which are ascending rank lists.
type groupKey struct{ first, last, size int }

// instKey names one synchronous exchange: the seq-th collective of a
// group, or a sync-ps iteration's push and pull (kind p2p).
type instKey struct {
	p2p bool
	g   groupKey
	seq int
}

// inst is one synchronous exchange as its members enter it: how many must
// enter, how many have, and when the last did. A ring allreduce also
// keeps its members' entries and callbacks here (see ring).
type inst struct {
	need, entered, released int
	last                    float64
	ring                    *ringRun
}

// enter registers a member's entry at time t.
func (s *sim) enter(k instKey, need int, t float64) *inst {
	in := s.insts[k]
	if in == nil {
		in = &inst{need: need}
		s.insts[k] = in
	}
	in.entered++
	in.last = max(in.last, t)
	return in
}

// release drops a member's hold on an instance; the last one frees it.
func (s *sim) release(k instKey, in *inst) {
	if in.released++; in.released == in.need {
		delete(s.insts, k)
	}
}

// enterP2P registers a sync-ps worker's first transfer of an iteration.
func (d *driver) enterP2P(op *commOp, now float64) {
	if !d.worker || !d.s.info.ServerUpdates {
		return
	}
	k := instKey{p2p: true, seq: d.iters}
	if d.p2pIter != d.iters+1 {
		d.p2pIter = d.iters + 1
		op.inst = d.s.enter(k, d.s.sc.Workers, now)
		return
	}
	op.inst = d.s.insts[k]
}

// algorithm maps a scheme's allreduce choice as the trainer does.
func (s *sim) algorithm(a scheme.Algo, size, n int) collective.Algorithm {
	alg := s.cfg.Algo
	if alg == collective.Auto {
		switch a {
		case scheme.AlgoTree:
			alg = collective.Tree
		case scheme.AlgoRing:
			alg = collective.Ring
		}
	}
	return alg.Resolve(size, n)
}

// Tag kinds of the simulated collectives, above every scheme tag.
const (
	tagAllreduce uint32 = collective.TagBase + iota<<20
	tagReduce
	tagBroadcast
	tagAllgather
)

// collective runs an Allreduce, Broadcast or Reduce of op's range over
// the whole group or op's sub-group: the real schedule, generated when it
// starts and dropped when it ends, step by step with each step's send and
// receive concurrent and segment by segment (Schedule.Segment), adds
// costing Len/AddRate; ring allreduces run as the compact recurrence of
// ringRun.
func (d *driver) collective(op *commOp, now float64, fin func(answer)) {
	s := d.s
	a := op.a
	size, me := len(s.drivers), d.rank
	g := groupKey{0, size - 1, size}
	if a.Group != nil {
		size, me = len(a.Group), -1
		for i, r := range a.Group {
			if r == d.rank {
				me = i
			}
		}
		if me < 0 {
			panic(fmt.Sprintf("sim: rank %d runs a collective of group %v", d.rank, a.Group))
		}
		g = groupKey{a.Group[0], a.Group[size-1], size}
	}
	n := a.R.Len()
	if size == 1 || n == 0 {
		s.eng.at(now, func() { fin(answer{}) })
		return
	}
	if steps := s.compressed(d, a, size); steps != nil {
		// The compressor's collectives in place of the gradients'
		// allreduce (PowerSGD: the P factors with the plain blocks, then
		// the Q factors; top-k and sign: an allgather of every rank's
		// part, then the plain blocks' allreduce). op takes each one's
		// instance in turn, for the wait accounting of worker 0.
		var run func(i int, t float64)
		run = func(i int, t float64) {
			step := *op
			step.a.R = scheme.Range{Buf: a.R.Buf, Lo: 0, Hi: steps[i].n}
			step.gather = steps[i].gather
			next := fin
			if i+1 < len(steps) {
				next = func(answer) { run(i+1, s.eng.now) }
			}
			d.collective(&step, t, next)
			op.inst = step.inst
		}
		run(0, now)
		return
	}
	if d.counters == nil {
		d.counters = map[groupKey]int{}
	}
	k := instKey{g: g, seq: d.counters[g]}
	d.counters[g]++
	in := s.enter(k, size, now)
	op.inst = in
	done := func() {
		s.release(k, in)
		// A flag broadcast carries the root's stop decision (hybrid's
		// aligned termination): the value its root's Fill wrote.
		fin(answer{stop: a.Op == scheme.Broadcast && a.Flag && s.drivers[a.Peer].flag != 0})
	}
	root := func() int {
		if a.Group == nil {
			return a.Peer
		}
		for i, r := range a.Group {
			if r == a.Peer {
				return i
			}
		}
		panic(fmt.Sprintf("sim: root %d is not in group %v", a.Peer, a.Group))
	}
	var sched collective.Schedule
	var tag uint32
	switch a.Op {
	case scheme.Allreduce:
		alg := s.algorithm(a.Algo, size, n)
		if op.gather {
			sched, tag = collective.RingAllgather(me, size, n), tagAllgather
			break
		}
		if alg == collective.Ring && !s.cfg.ringMessages && s.ex == nil {
			if in.ring == nil {
				in.ring = &ringRun{n: n, members: a.Group, entry: make([]float64, size), fins: make([]func(), size)}
			}
			in.ring.entry[me], in.ring.fins[me] = now, done
			if in.entered == size {
				s.ring(in.ring)
			}
			return
		}
		sched, tag = collective.AllreduceSchedule(alg, me, size, n), tagAllreduce
	case scheme.Broadcast:
		sched, tag = collective.TreeBroadcast(me, size, root(), n), tagBroadcast
	case scheme.Reduce:
		sched, tag = collective.TreeReduce(me, size, root(), n), tagReduce
	}
	r := &runner{s: s, group: a.Group, sched: sched, tag: tag, done: done}
	if s.ex != nil {
		r.buf = d.slice(a.R)
	}
	r.next(now)
}

// runner carries out one rank's schedule.
type runner struct {
	s         *sim
	group     []int // nil: the whole group
	sched     collective.Schedule
	tag       uint32
	step, seg int
	done      func()
	buf       []float32 // exact mode: the rank's range; nil otherwise
}

func (r *runner) node(i int) int {
	if r.group == nil {
		return i
	}
	return r.group[i]
}

// next starts the segment after the one that finished at t.
func (r *runner) next(t float64) {
	sc := &r.sched
	for r.step < len(sc.Steps) {
		st := sc.Steps[r.step]
		ns, nr := sc.Segments(st.Send), sc.Segments(st.Recv)
		if r.seg >= max(ns, nr) {
			r.step++
			r.seg = 0
			continue
		}
		k := r.seg
		r.seg++
		tag := r.tag + uint32(st.Round)
		me := r.node(sc.Rank)
		sent := t
		if k < ns {
			var data []float32
			if r.buf != nil {
				lo, hi := segRange(sc.Segment, st.Send, k)
				data = append([]float32(nil), r.buf[lo:hi]...)
			}
			sent = r.s.net.send(me, r.node(st.Send.Peer), tag, 4*int64(segLen(sc.Segment, st.Send.Len(), k)), t, data)
		}
		if k >= nr {
			r.s.eng.at(sent, func() { r.next(sent) })
			return
		}
		add := 0.0
		if st.Op == collective.Add {
			add = r.s.addCost(segLen(sc.Segment, st.Recv.Len(), k))
		}
		r.s.net.recv(r.node(st.Recv.Peer), me, tag, t, func(got float64, data []float32) {
			if r.buf != nil {
				lo, hi := segRange(sc.Segment, st.Recv, k)
				if st.Op == collective.Add {
					tensor.AddTo(r.buf[lo:hi], data)
				} else {
					copy(r.buf[lo:hi], data)
				}
			}
			end := max(got, sent) + add
			r.s.eng.at(end, func() { r.next(end) })
		})
		return
	}
	r.s.eng.at(t, r.done)
}

// segLen is the length of segment k of a transfer of n floats.
func segLen(seg, n, k int) int {
	if seg <= 0 || n <= seg {
		return n
	}
	return min(seg, n-k*seg)
}

// segRange is the range of segment k of transfer t, as the executor cuts
// it.
func segRange(seg int, t collective.Transfer, k int) (lo, hi int) {
	if seg <= 0 {
		return t.Lo, t.Hi
	}
	lo = min(t.Lo+k*seg, t.Hi)
	return lo, min(lo+seg, t.Hi)
}

// segments is the number of messages a transfer of n floats takes (0 for
// none).
func segments(seg, n int) int {
	switch {
	case n <= 0:
		return 0
	case seg <= 0 || n <= seg:
		return 1
	}
	return (n + seg - 1) / seg
}

// ringRun is a ring allreduce (collective.RingAllreduce) over a group,
// computed once every member has entered, by the recurrence its schedule
// implies instead of message by message: p ranks each take 2(p-1) steps,
// so at 4,096 ranks the messages alone would be 33 million per
// allreduce. Each step, rank i sends one chunk to i+1 and receives one
// from i-1, segment by segment as the executor does; the send of segment
// k starts when rank i finished segment k-1 and both its out-link and
// i+1's in-link are free, holds them for Beta·bytes and arrives Alpha
// later; the segment ends when its send has left and its receive has
// arrived, plus the add. Only the ring's own links are contended (they
// carry nothing else while the ring runs in the schemes here), which the
// message-level run agrees with exactly (TestRingCompactMatchesMessages).
type ringRun struct {
	n       int
	members []int // nil: ranks 0..p-1
	entry   []float64
	fins    []func()
}

func (s *sim) ring(rr *ringRun) {
	p, n := len(rr.entry), rr.n
	node := func(i int) int {
		if rr.members == nil {
			return i
		}
		return rr.members[i]
	}
	seg := collective.DefaultSegment
	t := append([]float64(nil), rr.entry...)
	sent := make([]float64, p)
	for round := 0; round < 2*(p-1); round++ {
		shift, add := 0, false
		if round < p-1 {
			shift, add = 1, true
		}
		st := round % (p - 1)
		// sendLen(i) is the chunk rank i sends this round; rank i
		// receives what rank i-1 sends.
		sendLen := func(i int) int {
			c := ((i-st-shift)%p + p) % p
			lo, hi := collective.Chunk(c, p, n)
			return hi - lo
		}
		kmax := segments(seg, n/p+1)
		for k := 0; k < kmax; k++ {
			for i := 0; i < p; i++ {
				sent[i] = t[i]
				if l := sendLen(i); k < segments(seg, l) {
					j := (i + 1) % p
					sent[i], _ = s.net.reserve(node(i), node(j), 4*int64(segLen(seg, l, k)), t[i])
				}
			}
			prevLen := sendLen(p - 1)
			prevSent := sent[p-1]
			for i := 0; i < p; i++ {
				l := prevLen
				arr := prevSent + s.net.nw.Alpha
				prevLen, prevSent = sendLen(i), sent[i]
				end := sent[i]
				if k < segments(seg, l) {
					end = max(end, t[i], arr)
					if add {
						end += s.addCost(segLen(seg, l, k))
					}
				}
				t[i] = end
			}
		}
	}
	for i, f := range rr.fins {
		s.eng.at(t[i], f)
	}
}

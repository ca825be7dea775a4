package sim

import (
	"fmt"

	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
)

// server is the center (package center) as a node of the network with
// its own NIC and one processor: a center.Core decides, in virtual time
// (a tick is a nanosecond), and the server adds the costs. A request
// travels to it, is stepped through the core when it arrives (in arrival
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
	s      *sim
	node   int
	n      int // workers at the center
	size   int // N
	core   *center.Core
	policy center.Policy
	tag    int64
	calls  map[int64]*call
	cpu    float64 // the processor is busy until cpu
}

// call is a request at the server: its data work and cost when granted
// (at time t), and its answer.
type call struct {
	d     *driver
	grant func(t float64, o center.Output)
	reply func(o center.Output)
}

func newServer(s *sim, node, n int) (*server, error) {
	sv := &server{s: s, node: node, n: n, size: s.sc.Layout.N, calls: map[int64]*call{},
		policy: center.Policy(s.sc.Info().Policy)}
	core, err := center.NewCore(center.CoreConfig{Workers: n, Policy: sv.policy, Interval: s.sc.Interval,
		Finish: s.cfg.Finish, MaxIter: s.sc.MaxIter, StartIter: s.sc.StartIter, Deadline: int64(s.cfg.RoundDeadline)})
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	sv.core = core
	return sv, nil
}

// tick is virtual time t in the core's ticks (nanoseconds).
func tick(t float64) int64 { return int64(t * 1e9) }

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

// step steps the core with request r of c's at time t.
func (sv *server) step(t float64, r center.Request, c *call) {
	sv.tag++
	r.Tag = sv.tag
	sv.calls[r.Tag] = c
	sv.run(t, sv.core.Step(tick(t), r))
}

// run carries out the core's outputs at time t. The answers of a round
// that closes go out once the center's update has run.
func (sv *server) run(t float64, outs []center.Output) {
	s := sv.s
	var after []func() // answers waiting for a round's update
	closed := false
	for _, o := range outs {
		switch o.Kind {
		case center.Grant:
			if c := sv.calls[o.Tag]; c != nil && c.grant != nil {
				c.grant(s.eng.now, o)
			}
		case center.Reply:
			c := sv.calls[o.Tag]
			delete(sv.calls, o.Tag)
			if c == nil {
				continue
			}
			if o.Err != nil {
				s.fail(fmt.Errorf("sim: %w", o.Err))
				return
			}
			if closed && (o.Op == center.OpRound || o.Op == center.OpClosed) {
				after = append(after, func() { c.reply(o) })
				continue
			}
			c.reply(o)
		case center.Close:
			if o.N > 0 {
				t = sv.work("round update", t, s.addCost(sv.size)+s.cfg.Model.Update.Seconds())
				s.ex.roundClose(o.N, o.Iter)
			}
			closed = true
		case center.Timer:
			at := o.At
			s.eng.at(t+s.cfg.RoundDeadline.Seconds(), func() { sv.run(s.eng.now, sv.core.Tick(at)) })
		}
	}
	s.ex.settle(sv.core)
	if len(after) > 0 {
		s.eng.at(t, func() {
			for _, f := range after {
				f()
			}
		})
	}
}

// op carries out a center action of d's from time now.
func (sv *server) op(d *driver, a scheme.Action, now float64, fin func(answer)) {
	s, w := sv.s, d.centerID
	if a.R.Len() != 0 && a.R.Len() != sv.size {
		s.fail(fmt.Errorf("sim: worker %d sent %d values to the center, which holds %d", w, a.R.Len(), sv.size))
		return
	}
	nb := 4 * int64(sv.size)
	// ctrl answers with a 64-byte reply.
	ctrl := func(o center.Output) {
		ans := answer{iter: o.Iter, dropped: o.Dropped, stop: o.Stop}
		sv.back(d, ctrlBytes, s.eng.now, func() { fin(ans) })
	}
	switch a.Op {
	case scheme.Join:
		sv.to(d, ctrlBytes, now, func(t float64) {
			sv.step(t, center.Request{Op: center.OpJoin, W: w}, &call{d: d, reply: ctrl})
		})
	case scheme.Pull:
		sv.to(d, ctrlBytes, now, func(t float64) {
			// Under round-robin the core grants the pull in w's turn (SC17
			// Alg. 1: a turn starts with the center sent to the worker).
			var data []float32
			sv.step(t, center.Request{Op: center.OpPull, W: w}, &call{d: d,
				grant: func(float64, center.Output) { data = s.ex.pull() },
				reply: func(center.Output) {
					sv.back(d, nb, s.eng.now, func() {
						d.land(a.R, data, false)
						fin(answer{})
					})
				}})
		})
	case scheme.Push:
		data := d.snapshot(a.R)
		sv.to(d, nb, now, func(t float64) {
			var end float64
			sv.step(t, center.Request{Op: center.OpPush, W: w, Refuse: s.ex.refuse("push", data)}, &call{d: d,
				grant: func(t float64, o center.Output) {
					s.ex.push(o, data)
					end = sv.work("push", t, s.addCost(sv.size))
				},
				reply: func(center.Output) { s.eng.at(end, func() { fin(answer{}) }) }})
		})
	case scheme.Elastic:
		x := d.snapshot(a.R)
		sv.to(d, nb, now, func(t float64) {
			var end float64
			sv.step(t, center.Request{Op: center.OpElastic, W: w, Refuse: s.ex.refuse("weights", x)}, &call{d: d,
				grant: func(t float64, _ center.Output) {
					s.ex.elastic(x, a.Factor)
					if sv.policy == center.Hogwild {
						// No lock (SC17 5): the exchange runs on its own, at
						// once with any other, as center.Local's does.
						end = t + s.addCost(3*sv.size)
						sv.s.trace(sv.node, "elastic", "center", t, end)
					} else {
						end = sv.work("elastic", t, s.addCost(3*sv.size))
					}
				},
				reply: func(center.Output) {
					s.eng.at(end, func() {
						sv.back(d, nb, end, func() {
							d.land(a.R, x, false)
							fin(answer{})
						})
					})
				}})
		})
	case scheme.Round:
		g := d.snapshot(a.R)
		sv.to(d, nb, now, func(t float64) {
			sv.step(t, center.Request{Op: center.OpRound, W: w, Iter: a.Iter, Refuse: s.ex.refuse("round's gradients", g)}, &call{d: d,
				grant: func(t float64, _ center.Output) {
					sv.work("round add", t, s.addCost(sv.size))
					s.ex.roundAdd(g)
				},
				reply: ctrl})
		})
	case scheme.Clock:
		sv.to(d, ctrlBytes, now, func(t float64) {
			sv.step(t, center.Request{Op: center.OpClock, W: w, Iter: a.Iter, S: a.Staleness}, &call{d: d, reply: ctrl})
		})
	case scheme.Leave:
		sv.to(d, ctrlBytes, now, func(t float64) {
			sv.step(t, center.Request{Op: center.OpLeave, W: w}, &call{d: d, reply: ctrl})
		})
	}
}

// side carries out a side op of d's (Closed): a 64-byte request, and a
// 64-byte reply once round a.Iter has closed.
func (sv *server) side(d *driver, a scheme.Action, now float64, fin func(answer)) {
	sv.to(d, ctrlBytes, now, func(t float64) {
		sv.step(t, center.Request{Op: center.OpClosed, W: d.centerID, Iter: a.Iter}, &call{d: d,
			reply: func(o center.Output) {
				sv.back(d, ctrlBytes, sv.s.eng.now, func() { fin(answer{iter: o.Iter}) })
			}})
	})
}

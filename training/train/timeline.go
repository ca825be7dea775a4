package train

import (
	"fmt"
	"time"

	"dsgd/training/node"
)

// commTrack is the timeline track (tid) of rank r's communication
// goroutine; rank r's own track, with its compute, updates and waits, is
// tid r. Communication overlaps compute under some schemes, so it has a
// track of its own, drawn right under the rank's.
func commTrack(r int) int { return 1<<20 + r }

// traceRank wires rank rs and its driver n to the run's timeline
// (Config.Timeline), process 0: on track r ("worker r", or "server" for
// a rank past the workers) the data, forward and backward passes with a
// span per layer, the updates and the exposed waits; on track
// commTrack(r) ("worker r comm") every communication and center
// operation.
func (t *Trainer) traceRank(rs *rankState, n *node.Rank) {
	tl := t.cfg.Timeline
	r := rs.rank
	if rs == t.ranks[0] {
		tl.Process(0, fmt.Sprintf("dsgd train %s, %d worker(s)", t.cfg.Scheme, max(t.cfg.Workers, 1)))
	}
	name := fmt.Sprintf("worker %d", r)
	if r >= max(t.cfg.Workers, 1) {
		name = "server"
		if r > max(t.cfg.Workers, 1) {
			name = fmt.Sprintf("server %d", r)
		}
	}
	tl.TrackOrdered(0, r, 2*r, name)
	tl.TrackOrdered(0, commTrack(r), 2*r+1, name+" comm")
	main := func(name, cat string, start time.Time, dur time.Duration) {
		tl.Span(0, r, name, cat, start, dur, nil)
	}
	n.Trace = func(name, cat string, start time.Time, dur time.Duration) {
		tid := r
		if cat == "comm" || cat == "center" {
			tid = commTrack(r)
		}
		tl.Span(0, tid, name, cat, start, dur, nil)
	}
	if rs.comp == nil {
		return
	}
	rs.comp.trace = main
	rs.net.SetLayerHook(func(layer string, backward bool, start time.Time, dur time.Duration) {
		cat := "forward"
		if backward {
			cat = "backward"
		}
		tl.Span(0, r, layer, cat, start, dur, nil)
	})
}

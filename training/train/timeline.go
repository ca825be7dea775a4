package train

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"dsgd/training/node"
	"dsgd/training/timeline"
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
		tl.Process(0, fmt.Sprintf("dsgd train %s, %d worker(s)", t.cfg.Name, max(t.cfg.Workers, 1)))
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
	// Every span carries the iteration the rank was in when it ended
	// (the one its next IterDone closes); a communication span also the
	// float32 values its range covers (what the bytes on the wire are
	// made of: the algorithm and --compress decide how many travel).
	var iter atomic.Int64
	iter.Store(int64(t.start))
	onIter := n.OnIter
	n.OnIter = func(it int, loss float64) error {
		iter.Store(int64(it) + 1)
		if onIter != nil {
			return onIter(it, loss)
		}
		return nil
	}
	main := func(name, cat string, start time.Time, dur time.Duration) {
		tl.SpanCounts(0, r, name, cat, start, dur, timeline.Count{Key: "iter", N: iter.Load()})
	}
	n.Trace = func(name, cat string, start time.Time, dur time.Duration) {
		if cat != "comm" && cat != "center" {
			tl.SpanCounts(0, r, name, cat, start, dur, timeline.Count{Key: "iter", N: iter.Load()})
			return
		}
		if v, ok := rangeValues(name); ok {
			tl.SpanCounts(0, commTrack(r), name, cat, start, dur, timeline.Count{Key: "iter", N: iter.Load()}, timeline.Count{Key: "values", N: v})
			return
		}
		tl.SpanCounts(0, commTrack(r), name, cat, start, dur, timeline.Count{Key: "iter", N: iter.Load()})
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
		tl.SpanCounts(0, r, layer, cat, start, dur, timeline.Count{Key: "iter", N: iter.Load()})
	})
}

// rangeValues is hi − lo of the first [lo:hi] in an action's name
// (node.ActionName: "allreduce grads[0:431080]"), without allocating.
func rangeValues(name string) (int64, bool) {
	open := strings.IndexByte(name, '[')
	if open < 0 {
		return 0, false
	}
	rest := name[open+1:]
	colon, end := strings.IndexByte(rest, ':'), strings.IndexByte(rest, ']')
	if colon < 0 || end < colon {
		return 0, false
	}
	lo, err1 := strconv.Atoi(rest[:colon])
	hi, err2 := strconv.Atoi(rest[colon+1 : end])
	if err1 != nil || err2 != nil || hi < lo {
		return 0, false
	}
	return int64(hi - lo), true
}

package scheme

// The synchronous schemes' programs: every worker applies the same
// update to the same weights each iteration (family_sync.go lists them).

// allreduceWorker runs seq, sync-tree, sync-ring and overlap: compute,
// sum the gradients over all workers (after backward, or layer by layer
// during it for overlap), average, and update locally. Every replica
// applies the same update to the same weights, so no weights travel
// (TRL/Caffe Alg. 5).
type allreduceWorker struct {
	program
	cfg     Config
	algo    Algo
	overlap bool
	bucket  Range // overlap: final gradients not yet sent
}

func newAllreduce(c Config, algo Algo, overlap bool) *allreduceWorker {
	w := &allreduceWorker{cfg: c, algo: algo, overlap: overlap}
	w.iter = c.StartIter
	w.first = func() { w.loop(c.MaxIter, w.iteration, nil) }
	if overlap && c.Workers > 1 {
		w.heard = func(ev Event) {
			if ev.Kind == GradsReady {
				w.gather(ev.Lo, ev.Hi)
			}
		}
	}
	return w
}

func (w *allreduceWorker) iteration(it int) {
	w.do(Action{Op: Compute, WatchGrads: w.heard != nil}, true)
	w.then(func() {
		// Started at once, beside the steps (as overlap's buckets).
		w.flush()
		if !w.overlap && w.cfg.Workers > 1 {
			for _, r := range w.cfg.messages(Grads) {
				w.allreduce(r)
			}
		}
	})
	w.barrier()
	w.averageAndUpdate(w.cfg, it)
}

// gather adds a range whose gradients are final to the open bucket,
// starting the bucket's allreduce once it holds Bucket values. Backward
// finishes blocks from the end of the buffer to the start, so a new range
// usually ends where the bucket begins; one that does not closes it.
func (w *allreduceWorker) gather(lo, hi int) {
	switch {
	case w.bucket.Len() == 0:
		w.bucket = Range{Grads, lo, hi}
	case hi == w.bucket.Lo:
		w.bucket.Lo = lo
	case lo == w.bucket.Hi:
		w.bucket.Hi = hi
	default:
		w.flush()
		w.bucket = Range{Grads, lo, hi}
	}
	if w.bucket.Len() >= w.cfg.Bucket {
		w.flush()
	}
}

// flush starts the allreduce of the open bucket, if any.
func (w *allreduceWorker) flush() {
	if w.bucket.Len() > 0 {
		w.allreduce(w.bucket)
		w.bucket = Range{}
	}
}

// allreduce starts the sum of r at once, beside the program's steps
// (from a GradsReady event, or the step after compute).
func (w *allreduceWorker) allreduce(r Range) {
	if w.overlap && w.cfg.Accumulate {
		// TRL Alg. 6: accumulate (in issue order) and wait for the sum
		// beside the queue, so later layers accumulate meanwhile.
		w.comm(Action{Op: Accumulate, R: r, Iter: w.iter})
		w.comm(Action{Op: Gather, R: r, Iter: w.iter})
		return
	}
	w.comm(Action{Op: Allreduce, R: r, Algo: w.algo})
}

// Tags of the parameter-server protocol; unpacked transfers add the
// message index.
const (
	tagGrads  uint32 = 1 << 20
	tagParams uint32 = 2 << 20
)

// psWorker is a sync-ps worker (SpeeDO 3.1, FireCaffe 6.1): compute, push
// the gradients to the server, pull the updated weights.
type psWorker struct {
	program
	cfg    Config
	server int
}

func newPSWorker(c Config) *psWorker {
	w := &psWorker{cfg: c, server: c.Workers}
	w.iter = c.StartIter
	w.first = func() { w.loop(c.MaxIter, w.iteration, nil) }
	return w
}

func (w *psWorker) iteration(int) {
	w.do(Action{Op: Compute}, true)
	for i, r := range w.cfg.messages(Grads) {
		w.do(Action{Op: Send, R: r, Peer: w.server, Tag: tagGrads + uint32(i)}, false)
	}
	for i, r := range w.cfg.messages(Params) {
		w.do(Action{Op: Recv, R: r, Peer: w.server, Tag: tagParams + uint32(i)}, false)
	}
	w.barrier()
}

// psServer is the sync-ps parameter server: receive every worker's
// gradients into Grads (worker 0's overwrite, the rest add, in rank
// order, so the sum is deterministic), average, update, and send the
// weights back to every worker. Its NIC serialises the p transfers each
// way: the cost FireCaffe's Eq. 3 calls linear in p.
type psServer struct {
	program
	cfg Config
}

func newPSServer(c Config) *psServer {
	s := &psServer{cfg: c}
	s.iter = c.StartIter
	s.first = func() { s.loop(c.MaxIter, s.iteration, nil) }
	return s
}

func (s *psServer) iteration(it int) {
	for wk := 0; wk < s.cfg.Workers; wk++ {
		for i, r := range s.cfg.messages(Grads) {
			s.do(Action{Op: Recv, R: r, Peer: wk, Add: wk > 0, Tag: tagGrads + uint32(i)}, false)
		}
	}
	s.barrier()
	s.averageAndUpdate(s.cfg, it)
	for wk := 0; wk < s.cfg.Workers; wk++ {
		for i, r := range s.cfg.messages(Params) {
			s.do(Action{Op: Send, R: r, Peer: wk, Tag: tagParams + uint32(i)}, false)
		}
	}
	s.barrier()
}

package shm

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"
	"unsafe"
)

// Verdicts of a rank in a group decision, in its descriptor.
const (
	verdictOK = 1
	verdictNo = 2
)

// opAlloc is Alloc's operation kind in Sync's check (collectives use
// small kinds of their own; this one is out of their way).
const opAlloc = 0xf

// arena is one Alloc: a buffer per rank, each in its own segment, every
// one mapped by every rank.
type arena struct {
	views [][]byte // rank r's buffer as mapped here
}

// Alloc makes, collectively, a buffer of bytes bytes for every rank of
// the group, each in shared memory that every other rank maps too, and
// returns this rank's. A collective may then read and write the others'
// buffers in place (Expose, View): no copy through the slots. Every
// rank must call it at the same point with the same size.
//
// Each rank creates its segment (under Dir), the ranks map each other's,
// and each unlinks its own once all have mapped it, so nothing is left
// in the file system whatever happens next. The buffers stay mapped for
// the rest of the process's life (they are meant for a job's few
// long-lived buffers: a model's gradients); the memory goes when the
// last process mapping it exits.
//
// When a rank cannot make or map a segment (a full /dev/shm, say) every
// rank fails, naming it and the cause, and the group stays usable.
func (g *Group) Alloc(ctx context.Context, bytes int) ([]byte, error) {
	if bytes <= 0 || bytes%64 != 0 || uint64(bytes) >= 1<<32 {
		return nil, fmt.Errorf("shm: group buffer of %d bytes: want a positive multiple of 64 under 4 GiB", bytes)
	}
	if len(g.slots[0]) < 512 {
		return nil, fmt.Errorf("shm: group slots of %d bytes cannot carry a segment's name", len(g.slots[0]))
	}
	if err := g.Begin(); err != nil {
		return nil, err
	}
	defer g.End()
	views := make([][]byte, g.size)
	segs := make([]*Segment, g.size)
	closeAll := func() {
		for _, s := range segs {
			if s != nil {
				s.Unlink()
				s.Close()
			}
		}
	}
	// The slots may still hold the last collective's results, which a
	// slower rank may be copying out: write nothing there before a Sync.
	if err := g.Sync(ctx, true, opAlloc|uint64(bytes)<<8); err != nil {
		return nil, err
	}
	// Create this rank's segment and post its name (or why not).
	seg, err := Create(g.Dir, "buf", bytes)
	if err != nil {
		g.post(verdictNo, err.Error())
	} else {
		segs[g.rank] = seg
		g.post(verdictOK, seg.Path)
	}
	paths := make([]string, g.size)
	// Each decision is read between two Syncs: no rank posts again (a
	// next Alloc) before every rank has read this one.
	decide := func(first bool) (int, string, error) {
		if err := g.Sync(ctx, false, 0); err != nil {
			return 0, "", err
		}
		r, msg := g.firstNo()
		if first { // the notes are the segments' names
			for q := range g.size {
				paths[q] = g.note(q)
			}
		}
		return r, msg, g.Sync(ctx, false, 0)
	}
	r, msg, err := decide(true)
	if err != nil || r >= 0 {
		closeAll()
		if err == nil {
			err = &RankError{Rank: r, Err: fmt.Errorf("could not make its shared buffer: %s", msg)}
		}
		return nil, err
	}
	// Map every peer's segment, then say whether all went well.
	verdict, why := uint32(verdictOK), ""
	for r := range g.size {
		if r == g.rank {
			continue
		}
		s, err := Open(paths[r], bytes)
		if err != nil {
			verdict, why = verdictNo, fmt.Sprintf("mapping rank %d's: %v", r, err)
			break
		}
		segs[r] = s
	}
	g.post(verdict, why)
	r, msg, err = decide(false)
	if err != nil || r >= 0 {
		closeAll()
		if err == nil {
			err = &RankError{Rank: r, Err: fmt.Errorf("could not map the group's shared buffers: %s", msg)}
		}
		return nil, err
	}
	for r, s := range segs {
		if r == g.rank {
			s.Unlink()
		}
		s.Keep()
		views[r] = s.Data
	}
	g.arenas = append(g.arenas, arena{views: views})
	return views[g.rank], nil
}

// post writes this rank's verdict and a note (a path, a reason) into its
// descriptor and slot for the others to read after the next Sync.
func (g *Group) post(verdict uint32, note string) {
	slot := g.slots[g.rank]
	note = note[:min(len(note), len(slot)-4)]
	binary.LittleEndian.PutUint32(slot, uint32(len(note)))
	copy(slot[4:], note)
	g.ctl.desc[g.rank].verdict.Store(verdict)
}

// note reads rank r's note.
func (g *Group) note(r int) string {
	slot := g.slots[r]
	n := min(int(binary.LittleEndian.Uint32(slot)), len(slot)-4)
	return string(slot[4 : 4+n])
}

// firstNo returns the first rank whose verdict is no, and its note, or
// -1.
func (g *Group) firstNo() (int, string) {
	for r := range g.size {
		if g.ctl.desc[r].verdict.Load() != verdictOK {
			return r, g.note(r)
		}
	}
	return -1, ""
}

// Expose publishes buf as this rank's buffer of the operation in
// progress, for the others to find after the operation's first Sync
// (View): where it lies in one of the group's shared buffers (Alloc),
// if it does (which it reports). Call it after Begin, before that
// first Sync.
func (g *Group) Expose(buf []float32) bool {
	d := &g.ctl.desc[g.rank]
	a, off, ok := g.locate(buf)
	if !ok {
		d.arena.Store(0)
		return false
	}
	d.arena.Store(uint64(a) + 1)
	d.off.Store(uint64(off))
	d.n.Store(uint64(len(buf)))
	return true
}

// Holds says whether buf lies in this rank's shared buffers (Alloc).
func (g *Group) Holds(buf []float32) bool {
	_, _, ok := g.locate(buf)
	return ok
}

// locate finds buf in this rank's shared buffers: the arena and the
// offset in floats.
func (g *Group) locate(buf []float32) (int, int, bool) {
	if len(buf) == 0 {
		return 0, 0, false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	for a, ar := range g.arenas {
		v := ar.views[g.rank]
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(v)))
		if p >= lo && p+4*uintptr(len(buf)) <= lo+uintptr(len(v)) && (p-lo)%4 == 0 {
			return a, int(p-lo) / 4, true
		}
	}
	return 0, 0, false
}

// View returns rank r's exposed buffer of the operation in progress as
// this process maps it, or nil when it does not lie in a shared buffer.
// Valid after the operation's first Sync; every rank sees the same
// answers (the group's shared buffers are the same on every rank).
func (g *Group) View(r int) []float32 {
	d := &g.ctl.desc[r]
	a := d.arena.Load()
	if a == 0 || a > uint64(len(g.arenas)) {
		return nil
	}
	v := g.arenas[a-1].views[r]
	off, n := d.off.Load(), d.n.Load()
	if off+n > uint64(len(v)/4) {
		return nil
	}
	f := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(v))), len(v)/4)
	return f[off : off+n : off+n]
}

// Access marks this rank as reading or writing its peers' exposed
// buffers (on), or done with them (off), so that a peer that fails may
// wait for it (Quiesce) before giving its buffer back to its caller.
func (g *Group) Access(on bool) {
	v := uint64(0)
	if on {
		v = g.seq
	}
	g.ctl.desc[g.rank].access.Store(v)
}

// Quiesce waits, after this rank's failure in an operation whose peers
// write its exposed buffer, until none still does: each peer sees the
// group broken (Break first) before its next block and stops, or has
// finished already, or is gone. It gives up after the group's timeout,
// naming the rank that still held on.
func (g *Group) Quiesce() error {
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	deadline := time.Now().Add(timeout)
	for {
		busy := -1
		for r := range g.size {
			d := &g.ctl.desc[r]
			if r != g.rank && d.access.Load() == g.seq && processAlive(int(d.pid.Load())) {
				busy = r
				break
			}
		}
		if busy < 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return &RankError{Rank: busy, Err: fmt.Errorf("still writing rank %d's buffer after %v", g.rank, timeout)}
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// Failed returns why the group cannot be used (closed here, or broken
// by a rank), or nil.
func (g *Group) Failed() error { return g.failed() }

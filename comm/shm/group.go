package shm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// groupCtlSize is the control block at the start of a group's memory,
// before the slots: the barrier's words, the broken word and one
// descriptor per rank. A page, so that the slots start page aligned.
const groupCtlSize = 4096

// MaxGroup is the largest group a Group holds: its descriptors fill the
// rest of the control page.
const MaxGroup = (groupCtlSize - 256) / 64

// groupCtl is a group's control block, in shared memory. Each word that
// different ranks write at different times has its own cache line.
type groupCtl struct {
	// arrived counts the ranks in the current barrier.
	arrived atomic.Uint32
	_       [60]byte
	// gen changes when the last rank arrives; waiters block on it.
	gen      atomic.Uint32
	sleepers atomic.Uint32 // ranks blocked (or about to block) on gen
	_        [56]byte
	// broken is 0 while the group is sound, else 1 + the rank whose
	// failure broke it: every rank's waits then fail.
	broken atomic.Uint32
	_      [124]byte
	desc   [MaxGroup]struct {
		v        atomic.Uint64
		arrivals atomic.Uint64 // barriers this rank has entered
		pid      atomic.Uint64 // the rank's process
		arena    atomic.Uint64 // the buffer it exposes (Expose): 1 + its arena, or 0
		off      atomic.Uint64 // and its offset and length there, in floats
		n        atomic.Uint64
		access   atomic.Uint64 // the operation whose peers' buffers it is accessing, or 0
		verdict  atomic.Uint32 // its part of a decision: verdictOK, verdictNo
		_        [4]byte
	}
}

// GroupSize is the number of bytes of shared memory a group of size
// ranks with slots of slot bytes each occupies.
func GroupSize(size, slot int) int { return groupCtlSize + size*slot }

// Group is the memory all ranks of one host's group map together: a
// slot per rank, and a barrier with a check that all ranks are doing
// the same thing. A collective over it writes what others need into its
// own slot, passes Sync, and reads the others' slots in place: each
// byte crosses once, with no per-message protocol. Buffers that every
// rank maps (Alloc) spare even that copy: a collective reads and writes
// the peers' buffers in place.
//
// Waits spin briefly while the group fits the host's cores; with more
// ranks than cores (where a spinning rank takes the core a peer needs)
// they poll a little and then yield the core for up to 2 ms. Then they
// block on a futex, waking every slice to run the owner's check (a
// peer gone, the endpoint closed), the context and the no-progress
// timeout. A rank whose wait fails breaks the group, so every other rank
// fails at once, naming it.
//
// Every rank's Group must be made over the same memory (zero when the
// first rank starts) with the same size and slot. One goroutine per
// process uses a Group at a time (Begin refuses a second).
type Group struct {
	rank, size int
	ctl        *groupCtl
	slots      [][]byte
	spin       int           // barrier polls before blocking
	yieldFor   time.Duration // then how long to yield the core before blocking

	// Check, when set, is called while waiting; an error ends the wait
	// (the owner's view of its peers: one gone, the endpoint closed).
	Check func() error
	// Timeout bounds a wait with no progress (no rank arriving); zero
	// means a minute.
	Timeout time.Duration

	busy   atomic.Bool
	closed atomic.Bool
	seq    uint64 // operations begun here; guarded by busy
	sent   atomic.Int64
	recv   atomic.Int64
	busyNs atomic.Int64
	t0     time.Time // the use in progress began; guarded by busy

	// Dir is where Alloc makes its segments ("" for DefaultDir).
	Dir    string
	arenas []arena // made by Alloc, the same on every rank; guarded by busy
}

// ErrGroupClosed is returned by a Group's calls after Close.
var ErrGroupClosed = errors.New("shm: group closed")

// NewGroup returns rank's view of the group held in mem, whose length
// must be GroupSize(size, slot) with slot a positive multiple of 64, and
// whose start is page aligned (a segment's mapping is).
func NewGroup(mem []byte, rank, size, slot int) (*Group, error) {
	if size < 1 || size > MaxGroup || rank < 0 || rank >= size {
		return nil, fmt.Errorf("shm: rank %d of a group of %d (at most %d ranks)", rank, size, MaxGroup)
	}
	if slot <= 0 || slot%64 != 0 || len(mem) != GroupSize(size, slot) {
		return nil, fmt.Errorf("shm: group memory of %d bytes for %d slots of %d", len(mem), size, slot)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(mem)))%4096 != 0 {
		return nil, fmt.Errorf("shm: group memory not page aligned")
	}
	g := &Group{rank: rank, size: size, ctl: (*groupCtl)(unsafe.Pointer(unsafe.SliceData(mem)))}
	g.ctl.desc[rank].pid.Store(uint64(os.Getpid()))
	for r := range size {
		off := groupCtlSize + r*slot
		g.slots = append(g.slots, mem[off:off+slot:off+slot])
	}
	// Spinning pays only when every rank has a core to itself; with
	// more ranks than cores a waiting rank yields its core to the rank
	// it waits for, for a while, before it blocks (a futex wake-up and
	// the balancing it costs are dearer than a few yields).
	if size <= runtime.NumCPU() {
		g.spin = 4000
	} else {
		g.spin = 50
		g.yieldFor = 2 * time.Millisecond
	}
	return g, nil
}

// Rank is this process's rank in the group.
func (g *Group) Rank() int { return g.rank }

// Size is the number of ranks.
func (g *Group) Size() int { return g.size }

// Slot returns rank r's slot as float32s (the slot's bytes, SlotBytes/4
// of them). Rank r writes it; the others read it after a Sync.
func (g *Group) Slot(r int) []float32 {
	b := g.slots[r]
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// SlotBytes is the size of each slot.
func (g *Group) SlotBytes() int { return len(g.slots[0]) }

// Begin marks the group in use by this process's collective; End ends
// the use. Begin fails after Close or while another use is running.
func (g *Group) Begin() error {
	if !g.busy.CompareAndSwap(false, true) {
		return errors.New("shm: group already in use by another collective of this process")
	}
	if g.closed.Load() {
		g.busy.Store(false)
		return ErrGroupClosed
	}
	g.seq++
	g.t0 = time.Now()
	return nil
}

// End ends the use Begin started.
func (g *Group) End() {
	g.busyNs.Add(int64(time.Since(g.t0)))
	g.busy.Store(false)
}

// Count adds to the bytes this rank wrote for the others (sent) and read
// of theirs (recv), for the owner's statistics.
func (g *Group) Count(sent, recv int64) {
	g.sent.Add(sent)
	g.recv.Add(recv)
}

// Traffic returns what Count added up, and the time spent between
// Begin and End.
func (g *Group) Traffic() (sent, recv int64, busy time.Duration) {
	return g.sent.Load(), g.recv.Load(), time.Duration(g.busyNs.Load())
}

// Interrupt wakes every rank of the host blocked in the group's
// barrier, so that each re-checks its conditions.
func (g *Group) Interrupt() {
	Wake(&g.ctl.gen)
}

// Close marks the group closed, wakes this process's waits (which then
// fail with ErrGroupClosed) and waits up to a second for the use in
// progress to end. It reports whether the group is idle, so that the
// owner may unmap its memory.
func (g *Group) Close() bool {
	g.closed.Store(true)
	g.Interrupt()
	for i := 0; g.busy.Load(); i++ {
		if i == 1000 {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// Break marks the group broken by this rank (after a failure of its own
// outside a wait), waking the others, whose waits then fail naming it.
func (g *Group) Break() {
	g.ctl.broken.CompareAndSwap(0, uint32(g.rank)+1)
	g.Interrupt()
}

// RankError is a wait's failure caused by, or observed on, one rank.
type RankError struct {
	Rank int
	Err  error
}

func (e *RankError) Error() string { return fmt.Sprintf("rank %d: %v", e.Rank, e.Err) }

// Unwrap returns the underlying error.
func (e *RankError) Unwrap() error { return e.Err }

// Sync is the group's barrier: it returns once every rank has called it
// (the slots written before it are then visible to all). With first
// set, op describes the operation this rank began (its kind and size,
// say; 40 bits count) and Sync fails on every rank unless all ranks are
// at the same operation, counted since the group was made, with the
// same op. Only the first Sync of an operation of at least two Syncs may
// check: a rank stores the next operation's descriptor once all have
// passed this one's last Sync.
//
// It fails, and breaks the group, when ctx ends, the timeout passes with
// no progress, or the Check fails; it fails naming the rank that broke
// the group when another rank did. A broken group stays broken.
func (g *Group) Sync(ctx context.Context, first bool, op uint64) error {
	desc := g.seq<<40 | op&(1<<40-1)
	if first {
		g.ctl.desc[g.rank].v.Store(desc)
	}
	if err := g.barrier(ctx); err != nil {
		return err
	}
	if first {
		for r := range g.size {
			if d := g.ctl.desc[r].v.Load(); d != desc {
				err := &RankError{Rank: r, Err: fmt.Errorf("is at another collective (operation %d, %#x) than rank %d (operation %d, %#x)", d>>40, d&(1<<40-1), g.rank, g.seq, op&(1<<40-1))}
				g.Break()
				return err
			}
		}
	}
	return nil
}

func (g *Group) barrier(ctx context.Context) error {
	c := g.ctl
	if err := g.failed(); err != nil {
		return g.cause(err)
	}
	gen := c.gen.Load()
	k := c.desc[g.rank].arrivals.Add(1)
	if int(c.arrived.Add(1)) == g.size {
		c.arrived.Store(0)
		c.gen.Add(1)
		if c.sleepers.Load() != 0 {
			Wake(&c.gen)
		}
		return nil
	}
	for i := 0; i < g.spin; i++ {
		if c.gen.Load() != gen {
			return nil
		}
		if i&15 == 15 {
			// The peer may be a goroutine of this process, or a
			// process the scheduler put on this core: let it run.
			runtime.Gosched()
			Yield()
		}
	}
	if g.yieldFor > 0 {
		t := time.Now()
		for i := 0; ; i++ {
			if c.gen.Load() != gen {
				return nil
			}
			Yield()
			if i&63 == 63 && (time.Since(t) > g.yieldFor || g.failed() != nil) {
				break
			}
		}
	}
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	deadline := time.Now().Add(timeout)
	for {
		c.sleepers.Add(1)
		if c.gen.Load() == gen {
			Wait(&c.gen, gen, 10*time.Millisecond)
		}
		c.sleepers.Add(^uint32(0))
		if c.gen.Load() != gen {
			return nil
		}
		// A peer gone or this end closed: every rank sees it by itself.
		if g.Check != nil {
			if err := g.Check(); err != nil {
				return err
			}
		}
		if err := g.failed(); err != nil {
			// Another rank gave up first: name it if it never came
			// itself, else the rank that never came, if one did not,
			// else the one that gave up.
			if b := int(c.broken.Load()) - 1; b >= 0 && c.desc[b].arrivals.Load() < k {
				return g.cause(err)
			}
			if r := g.stalled(k); r >= 0 {
				if cerr := g.cause(err); cerr != err {
					return cerr
				}
				return &RankError{Rank: r, Err: fmt.Errorf("never reached the host group's barrier (%v)", err)}
			}
			return g.cause(err)
		}
		// This rank's own reason to stop: tell the others, and name
		// the rank it waited for.
		err := ctx.Err()
		if err == nil && time.Now().After(deadline) {
			err = fmt.Errorf("shm: group barrier timed out: no progress for %v", timeout)
		}
		if err != nil {
			g.Break()
			if r := g.stalled(k); r >= 0 {
				return &RankError{Rank: r, Err: fmt.Errorf("never reached the host group's barrier: %w", err)}
			}
			return err
		}
	}
}

// stalled returns the first rank that has not entered this rank's k-th
// barrier, or -1.
func (g *Group) stalled(k uint64) int {
	for r := range g.size {
		if g.ctl.desc[r].arrivals.Load() < k {
			return r
		}
	}
	return -1
}

// causeGrace bounds how long a rank that finds the group broken by
// another waits for the root cause to reach it through Check.
const causeGrace = time.Second

// cause returns the error a wait reports when it found the group broken
// (err, from failed). A rank that breaks the group often does so
// because a third rank failed and told it first (an abort over the
// transport): the third rank told every rank, so the report is on its
// way here too, and naming it beats naming the messenger. With a Check,
// cause polls it for a short while and returns its error if one comes;
// else err.
func (g *Group) cause(err error) error {
	var re *RankError
	if g.Check == nil || !errors.As(err, &re) {
		return err
	}
	grace := causeGrace
	if g.Timeout > 0 {
		grace = min(grace, max(g.Timeout/4, 10*time.Millisecond))
	}
	deadline := time.Now().Add(grace)
	for {
		if cerr := g.Check(); cerr != nil {
			return cerr
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}

// failed returns why the group cannot be used: closed here, or broken
// by a rank.
func (g *Group) failed() error {
	if g.closed.Load() {
		return ErrGroupClosed
	}
	if b := g.ctl.broken.Load(); b != 0 {
		return &RankError{Rank: int(b) - 1, Err: errors.New("left the host's shared-memory collective after a failure")}
	}
	return nil
}

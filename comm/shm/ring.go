package shm

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// ringCtlSize is the control block at the start of a ring's memory:
// the positions and the wake-up words, each on its own cache line.
const ringCtlSize = 256

// ringCtl is a ring's control block, in shared memory. Positions count
// bytes since the ring was made and never wrap (2^64 bytes is centuries
// of traffic).
type ringCtl struct {
	head atomic.Uint64 // bytes written; only the writer stores it
	_    [56]byte
	tail atomic.Uint64 // bytes read; only the reader stores it
	_    [56]byte
	// dataSeq changes when data arrives while readerWaiting is set;
	// the reader blocks on it.
	dataSeq       atomic.Uint32
	readerWaiting atomic.Uint32
	_             [56]byte
	// spaceSeq changes when space frees while writerWaiting is set;
	// the writer blocks on it.
	spaceSeq      atomic.Uint32
	writerWaiting atomic.Uint32
	_             [56]byte
}

// RingSize is the number of bytes of shared memory a ring of n data bytes
// occupies (its control block and its data).
func RingSize(n int) int { return ringCtlSize + n }

// Ring is a single-producer single-consumer byte queue in shared memory:
// one process (or goroutine) writes, one reads. The writer fills Free
// and publishes with Commit; the reader drains Data and gives the space
// back with Release. A side that finds nothing to do waits with
// WaitFree or WaitData: it spins briefly, then blocks on a futex that
// the other side's Commit or Release wakes only when someone is
// blocked, so a steady stream costs no system calls and a blocked side
// burns no core.
//
// The memory must be zero when the first party starts using it (a fresh
// segment is). At most one goroutine writes and one reads at a time.
type Ring struct {
	c    *ringCtl
	data []byte
	mask uint64
}

// NewRing returns the ring held in mem, whose length must be RingSize(n)
// for a power of two n of at least 64 bytes, and whose start is 64-byte
// aligned (a segment's mapping is page aligned).
func NewRing(mem []byte) (*Ring, error) {
	n := len(mem) - ringCtlSize
	if n < 64 || n&(n-1) != 0 {
		return nil, fmt.Errorf("shm: ring of %d bytes: want a control block and a power of two of at least 64 data bytes", len(mem))
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(mem)))%64 != 0 {
		return nil, fmt.Errorf("shm: ring memory not 64-byte aligned")
	}
	return &Ring{
		c:    (*ringCtl)(unsafe.Pointer(unsafe.SliceData(mem))),
		data: mem[ringCtlSize:],
		mask: uint64(n - 1),
	}, nil
}

// Cap is the ring's data capacity in bytes.
func (r *Ring) Cap() int { return len(r.data) }

// Free returns the contiguous free space after the written data: write
// into it, then Commit. Empty when the ring is full.
func (r *Ring) Free() []byte {
	head := r.c.head.Load()
	used := head - r.c.tail.Load()
	at := head & r.mask
	n := min(uint64(len(r.data))-used, uint64(len(r.data))-at)
	return r.data[at : at+n]
}

// Commit publishes n bytes written at the start of Free, and wakes the
// reader if it is blocked.
func (r *Ring) Commit(n int) {
	r.c.head.Add(uint64(n))
	if r.c.readerWaiting.Load() != 0 {
		r.c.dataSeq.Add(1)
		Wake(&r.c.dataSeq)
	}
}

// Data returns the contiguous written data not yet read: read from it,
// then Release. Empty when the ring is empty.
func (r *Ring) Data() []byte {
	tail := r.c.tail.Load()
	avail := r.c.head.Load() - tail
	at := tail & r.mask
	n := min(avail, uint64(len(r.data))-at)
	return r.data[at : at+n]
}

// Buffered is the number of bytes written and not yet read.
func (r *Ring) Buffered() int { return int(r.c.head.Load() - r.c.tail.Load()) }

// Release gives back n bytes read from the start of Data, and wakes the
// writer if it is blocked.
func (r *Ring) Release(n int) {
	r.c.tail.Add(uint64(n))
	if r.c.writerWaiting.Load() != 0 {
		r.c.spaceSeq.Add(1)
		Wake(&r.c.spaceSeq)
	}
}

// spinFor is how long a side spins before it blocks: a little more than
// the other side's typical reaction, and far less than a time slice.
const spinFor = 20 * time.Microsecond

// spin checks readiness until it is true or spinFor passes.
func (r *Ring) spin(data bool, n int) bool {
	var t0 time.Time
	for i := 0; ; i++ {
		if r.ready(data, n) {
			return true
		}
		if i&63 == 63 {
			if t0.IsZero() {
				t0 = time.Now()
			} else if time.Since(t0) > spinFor {
				return false
			}
			runtime.Gosched()
		}
	}
}

// HasData reports whether at least n bytes are buffered.
func (r *Ring) HasData(n int) bool { return r.c.head.Load()-r.c.tail.Load() >= uint64(n) }

// HasFree reports whether at least n bytes are free.
func (r *Ring) HasFree(n int) bool {
	return uint64(len(r.data))-(r.c.head.Load()-r.c.tail.Load()) >= uint64(n)
}

// WaitData returns when at least n bytes are buffered, after at most
// about d, or when Interrupt is called; the caller checks which.
func (r *Ring) WaitData(n int, d time.Duration) { r.wait(true, n, d) }

// WaitFree returns when at least n bytes are free, after at most about
// d, or when Interrupt is called; the caller checks which.
func (r *Ring) WaitFree(n int, d time.Duration) { r.wait(false, n, d) }

func (r *Ring) ready(data bool, n int) bool {
	if data {
		return r.HasData(n)
	}
	return r.HasFree(n)
}

func (r *Ring) wait(data bool, n int, d time.Duration) {
	if r.spin(data, n) {
		return
	}
	seq, waiting := &r.c.spaceSeq, &r.c.writerWaiting
	if data {
		seq, waiting = &r.c.dataSeq, &r.c.readerWaiting
	}
	s := seq.Load()
	waiting.Store(1)
	if !r.ready(data, n) {
		Wait(seq, s, d)
	}
	waiting.Store(0)
}

// Interrupt wakes both sides of the ring wherever they block, so they
// re-check their conditions (a peer gone, an endpoint closed).
func (r *Ring) Interrupt() {
	r.c.dataSeq.Add(1)
	Wake(&r.c.dataSeq)
	r.c.spaceSeq.Add(1)
	Wake(&r.c.spaceSeq)
}

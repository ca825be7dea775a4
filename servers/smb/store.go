package smb

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"dsgd/engine/tensor"
)

// Errors wrapped by the Store's (and the client's) errors, for errors.Is.
var (
	// ErrUnknownKey: no buffer has the key (Attach, Read, Write, ...), or
	// the control area was never created.
	ErrUnknownKey = errors.New("unknown key")
	// ErrBounds: a read or write outside a buffer or the control area.
	ErrBounds = errors.New("out of bounds")
	// ErrSize: a buffer or control area exists with another size, or an
	// accumulate of buffers of different sizes.
	ErrSize = errors.New("size mismatch")
	// ErrLimit: a create that would pass the store's memory limit.
	ErrLimit = errors.New("memory limit")
	// ErrInvalid: a bad argument such as an empty key or a size < 1.
	ErrInvalid = errors.New("invalid argument")
)

// maxValues bounds one buffer whatever the store's limit (2^36 values,
// 256 GiB), so a size cannot overflow.
const maxValues = 1 << 36

// MaxKeyLen is the longest key, in bytes, a Store accepts.
const MaxKeyLen = 255

// Buffers is what the SEASGD adapter (Center) needs from a shared buffer
// server: the operations of ShmCaffe's SMB. Both *Store (in-process) and
// *Client (over TCP) implement it with the same semantics and errors.
//
// Offsets and lengths count float32 values (slots for the control area).
// Every method is safe for concurrent use.
type Buffers interface {
	// Create makes a zeroed buffer of n values under key. It reports
	// created == false, and no error, when key already holds a buffer of
	// n values; another size is an error wrapping ErrSize.
	Create(ctx context.Context, key string, n int) (created bool, err error)
	// Attach returns the size of the buffer under key.
	Attach(ctx context.Context, key string) (n int, err error)
	// Free deallocates the buffer under key (ShmCaffe III.B's
	// deallocation); its memory counts no more against the server's
	// limit. Freeing a key that holds no buffer is not an error.
	Free(ctx context.Context, key string) error
	// Read copies buffer key's values [off, off+len(dst)) into dst.
	Read(ctx context.Context, key string, off int, dst []float32) error
	// Write copies src into buffer key's values [off, off+len(src)) and
	// advances the buffer's version.
	Write(ctx context.Context, key string, off int, src []float32) error
	// Accumulate adds buffer src into buffer dst (dst += src), atomically
	// with respect to every other operation on dst, and advances dst's
	// version (ShmCaffe T.A3).
	Accumulate(ctx context.Context, dst, src string) error
	// Version returns buffer key's version: the number of writes,
	// accumulates into it and notifies since it was created.
	Version(ctx context.Context, key string) (uint64, error)
	// Notify advances buffer key's version without changing its values,
	// waking its waiters.
	Notify(ctx context.Context, key string) (uint64, error)
	// Wait blocks until buffer key's version differs from after, and
	// returns the new version. It returns at once if it already differs.
	Wait(ctx context.Context, key string, after uint64) (uint64, error)

	// CreateControl makes the control area: n int64 slots, zeroed. Like
	// Create it reports created == false when it exists with n slots.
	CreateControl(ctx context.Context, n int) (created bool, err error)
	// ReadControl copies slots [off, off+len(dst)) into dst and returns
	// the control area's version as of that read.
	ReadControl(ctx context.Context, off int, dst []int64) (version uint64, err error)
	// WriteControl copies src into slots [off, off+len(src)) and advances
	// the control area's version.
	WriteControl(ctx context.Context, off int, src []int64) error
	// WaitControl blocks until the control area's version differs from
	// after, and returns the new version.
	WaitControl(ctx context.Context, after uint64) (uint64, error)
}

// Store is the shared buffer server's state: named float32 buffers and
// one int64 control area, in this process's memory. It is the core the
// server (Serve) exposes over TCP, and usable directly in-process.
//
// Every method is safe for concurrent use. Reads of one buffer run in
// parallel; a write or an accumulate into a buffer excludes every other
// operation on it. Only Wait and WaitControl block; the others take ctx
// only to satisfy Buffers.
type Store struct {
	maxBytes int64

	// mu guards bufs, bytes and ctl (the pointer, not its contents).
	mu    sync.RWMutex
	bufs  map[string]*buffer
	bytes int64
	ctl   *control

	shm *shmAlloc // nil: buffers in this process's heap (shm.go)
}

type buffer struct {
	key string
	// mu guards data; a write or accumulate holds it exclusively.
	mu   sync.RWMutex
	data []float32
	ver  notifier
	mem  shmMem // where data lies when the store shares memory
}

type control struct {
	// mu guards slots.
	mu    sync.Mutex
	slots []int64
	ver   notifier
}

// notifier is a version counter whose changes can be waited for.
type notifier struct {
	// mu guards v and ch.
	mu sync.Mutex
	v  uint64
	ch chan struct{} // closed at the next bump; nil while nobody waits
}

func (n *notifier) bump() uint64 {
	n.mu.Lock()
	n.v++
	v := n.v
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
	n.mu.Unlock()
	return v
}

func (n *notifier) load() uint64 {
	n.mu.Lock()
	v := n.v
	n.mu.Unlock()
	return v
}

func (n *notifier) wait(ctx context.Context, after uint64) (uint64, error) {
	for {
		n.mu.Lock()
		if n.v != after {
			v := n.v
			n.mu.Unlock()
			return v, nil
		}
		if n.ch == nil {
			n.ch = make(chan struct{})
		}
		ch := n.ch
		n.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return after, ctx.Err()
		}
	}
}

// NewStore returns an empty store that refuses buffers once they would
// hold more than maxBytes bytes in all (key bytes included); maxBytes <= 0
// means no limit.
func NewStore(maxBytes int64) *Store {
	return &Store{maxBytes: maxBytes, bufs: make(map[string]*buffer)}
}

var _ Buffers = (*Store)(nil)

func checkKey(key string) error {
	if key == "" {
		return fmt.Errorf("smb: %w: empty key", ErrInvalid)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("smb: %w: key of %d bytes, limit %d", ErrInvalid, len(key), MaxKeyLen)
	}
	return nil
}

func (s *Store) get(key string) (*buffer, error) {
	s.mu.RLock()
	b := s.bufs[key]
	s.mu.RUnlock()
	if b == nil {
		return nil, unknownKey(key)
	}
	return b, nil
}

func unknownKey(key string) error {
	return fmt.Errorf("smb: %w %q: no buffer was created under it", ErrUnknownKey, key)
}

func boundsErr(op, key string, off, n, size int) error {
	return fmt.Errorf("smb: %w: %s of %d values at offset %d of buffer %q, which holds %d", ErrBounds, op, n, off, key, size)
}

// inBounds reports whether [off, off+n) lies in [0, size), without overflow.
func inBounds(off, n, size int) bool {
	return off >= 0 && n >= 0 && off <= size && n <= size-off
}

// Create implements Buffers.
func (s *Store) Create(_ context.Context, key string, n int) (bool, error) {
	if err := checkKey(key); err != nil {
		return false, err
	}
	if n < 1 {
		return false, fmt.Errorf("smb: %w: create %q with %d values; need at least 1", ErrInvalid, key, n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bufs[key]; b != nil {
		if len(b.data) != n {
			return false, fmt.Errorf("smb: %w: create %q with %d values, but it exists with %d", ErrSize, key, n, len(b.data))
		}
		return false, nil
	}
	cost := 4*int64(n) + int64(len(key))
	if int64(n) > maxValues {
		return false, fmt.Errorf("smb: %w: create %q with %d values; one buffer holds at most %d", ErrLimit, key, n, int64(maxValues))
	}
	if s.maxBytes > 0 && (int64(n) > s.maxBytes || s.bytes+cost > s.maxBytes) {
		return false, fmt.Errorf("smb: %w: create %q with %d values (%d bytes): the store holds %d of its %d bytes", ErrLimit, key, n, cost, s.bytes, s.maxBytes)
	}
	b, err := s.newBuffer(key, n)
	if err != nil {
		return false, err
	}
	s.bufs[key] = b
	s.bytes += cost
	return true, nil
}

// Free implements Buffers.
func (s *Store) Free(_ context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bufs[key]; b != nil {
		delete(s.bufs, key)
		s.bytes -= 4*int64(len(b.data)) + int64(len(key))
	}
	return nil
}

// Attach implements Buffers.
func (s *Store) Attach(_ context.Context, key string) (int, error) {
	b, err := s.get(key)
	if err != nil {
		return 0, err
	}
	return len(b.data), nil
}

// Read implements Buffers.
func (s *Store) Read(_ context.Context, key string, off int, dst []float32) error {
	b, err := s.get(key)
	if err != nil {
		return err
	}
	if !inBounds(off, len(dst), len(b.data)) {
		return boundsErr("read", key, off, len(dst), len(b.data))
	}
	b.mu.RLock()
	copy(dst, b.data[off:])
	b.mu.RUnlock()
	return nil
}

// Write implements Buffers.
func (s *Store) Write(_ context.Context, key string, off int, src []float32) error {
	b, err := s.get(key)
	if err != nil {
		return err
	}
	if !inBounds(off, len(src), len(b.data)) {
		return boundsErr("write", key, off, len(src), len(b.data))
	}
	b.mu.Lock()
	copy(b.data[off:], src)
	b.mu.Unlock()
	b.ver.bump()
	return nil
}

// Accumulate implements Buffers. Locks are taken in key order, so
// concurrent accumulates in opposite directions cannot deadlock.
func (s *Store) Accumulate(_ context.Context, dst, src string) error {
	d, err := s.get(dst)
	if err != nil {
		return fmt.Errorf("smb: accumulate into %q: %w", dst, err)
	}
	sb, err := s.get(src)
	if err != nil {
		return fmt.Errorf("smb: accumulate from %q: %w", src, err)
	}
	if len(d.data) != len(sb.data) {
		return fmt.Errorf("smb: %w: accumulate %q (%d values) into %q (%d values)", ErrSize, src, len(sb.data), dst, len(d.data))
	}
	switch {
	case d == sb:
		d.mu.Lock()
		tensor.Scale(2, d.data)
		d.mu.Unlock()
	case dst < src:
		d.mu.Lock()
		sb.mu.RLock()
		tensor.AddTo(d.data, sb.data)
		sb.mu.RUnlock()
		d.mu.Unlock()
	default:
		sb.mu.RLock()
		d.mu.Lock()
		tensor.AddTo(d.data, sb.data)
		d.mu.Unlock()
		sb.mu.RUnlock()
	}
	d.ver.bump()
	return nil
}

// Version implements Buffers.
func (s *Store) Version(_ context.Context, key string) (uint64, error) {
	b, err := s.get(key)
	if err != nil {
		return 0, err
	}
	return b.ver.load(), nil
}

// Notify implements Buffers.
func (s *Store) Notify(_ context.Context, key string) (uint64, error) {
	b, err := s.get(key)
	if err != nil {
		return 0, err
	}
	return b.ver.bump(), nil
}

// Wait implements Buffers. It returns ctx's error, with after, when ctx
// ends first.
func (s *Store) Wait(ctx context.Context, key string, after uint64) (uint64, error) {
	b, err := s.get(key)
	if err != nil {
		return 0, err
	}
	return b.ver.wait(ctx, after)
}

func (s *Store) control() (*control, error) {
	s.mu.RLock()
	c := s.ctl
	s.mu.RUnlock()
	if c == nil {
		return nil, fmt.Errorf("smb: %w: the control area was never created", ErrUnknownKey)
	}
	return c, nil
}

// maxSlots bounds the control area (one slot per worker).
const maxSlots = 1 << 16

// CreateControl implements Buffers. The control area holds at most 65536
// slots.
func (s *Store) CreateControl(_ context.Context, n int) (bool, error) {
	if n < 1 || n > maxSlots {
		return false, fmt.Errorf("smb: %w: control area of %d slots; need 1 to %d", ErrInvalid, n, maxSlots)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctl != nil {
		if len(s.ctl.slots) != n {
			return false, fmt.Errorf("smb: %w: create the control area with %d slots, but it exists with %d", ErrSize, n, len(s.ctl.slots))
		}
		return false, nil
	}
	s.ctl = &control{slots: make([]int64, n)}
	return true, nil
}

func ctlBounds(op string, off, n, size int) error {
	return fmt.Errorf("smb: %w: %s of %d slots at offset %d of the control area, which holds %d", ErrBounds, op, n, off, size)
}

// ReadControl implements Buffers.
func (s *Store) ReadControl(_ context.Context, off int, dst []int64) (uint64, error) {
	c, err := s.control()
	if err != nil {
		return 0, err
	}
	if !inBounds(off, len(dst), len(c.slots)) {
		return 0, ctlBounds("read", off, len(dst), len(c.slots))
	}
	c.mu.Lock()
	copy(dst, c.slots[off:])
	v := c.ver.load()
	c.mu.Unlock()
	return v, nil
}

// WriteControl implements Buffers.
func (s *Store) WriteControl(_ context.Context, off int, src []int64) error {
	c, err := s.control()
	if err != nil {
		return err
	}
	if !inBounds(off, len(src), len(c.slots)) {
		return ctlBounds("write", off, len(src), len(c.slots))
	}
	c.mu.Lock()
	copy(c.slots[off:], src)
	c.ver.bump()
	c.mu.Unlock()
	return nil
}

// WaitControl implements Buffers.
func (s *Store) WaitControl(ctx context.Context, after uint64) (uint64, error) {
	c, err := s.control()
	if err != nil {
		return 0, err
	}
	return c.ver.wait(ctx, after)
}

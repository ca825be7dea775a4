package shm

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// DefaultDir is where segments are created when no directory is given:
// the tmpfs every Linux system mounts for POSIX shared memory.
const DefaultDir = "/dev/shm"

// Prefix starts the name of every segment dsgd creates; Sweep considers
// only such names.
const Prefix = "dsgd-"

// Segment is a mapped shared-memory file. Data is the mapping; it stays
// valid until Close. A Segment is safe for concurrent use of Data (the
// callers synchronise its contents); Unlink and Close may be called
// from any goroutine, once each is enough.
type Segment struct {
	// Path is the segment's file; empty once unlinked.
	Path string
	// Data is the shared memory, len(Data) bytes.
	Data []byte

	// mu guards f and unlinked.
	mu       sync.Mutex
	f        *os.File
	unlinked bool
	path     string
}

// Create makes a new segment of size bytes in dir ("" for DefaultDir),
// named Prefix + creator pid + start time + purpose + random suffix,
// creating the file exclusively (mode 0600), reserving its memory (so a
// full tmpfs is an error here, not a SIGBUS later) and mapping it. The
// creator holds a shared flock on the file until Close, which tells
// Sweep it is alive.
//
// Errors name the path and the cause, and say what to do about the
// common ones (a full /dev/shm, no permission).
func Create(dir, purpose string, size int) (*Segment, error) {
	if dir == "" {
		dir = DefaultDir
	}
	if size <= 0 {
		return nil, fmt.Errorf("shm: segment of %d bytes", size)
	}
	if strings.ContainsAny(purpose, "/-") || purpose == "" {
		return nil, fmt.Errorf("shm: purpose %q must be a non-empty word without '/' or '-'", purpose)
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	start, err := startTime(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("shm: cannot read this process's start time: %v", err)
	}
	name := fmt.Sprintf("%s%d-%d-%s-%s", Prefix, os.Getpid(), start, purpose, hex.EncodeToString(rnd[:]))
	path := filepath.Join(dir, name)
	seg, err := create(path, size)
	if err != nil {
		return nil, createError(path, size, err)
	}
	return seg, nil
}

// createError explains why a segment could not be made.
func createError(path string, size int, err error) error {
	var hint string
	switch {
	case errors.Is(err, errNoSpace):
		hint = fmt.Sprintf("; %s is full or too small for %d more bytes (see df %s; in a container, give it a larger --shm-size), or turn shared memory off (--shm off)", filepath.Dir(path), size, filepath.Dir(path))
	case errors.Is(err, os.ErrPermission) || errors.Is(err, errReadOnly):
		hint = fmt.Sprintf("; this process may not create files in %s; turn shared memory off (--shm off)", filepath.Dir(path))
	case errors.Is(err, os.ErrNotExist):
		hint = fmt.Sprintf("; %s does not exist; turn shared memory off (--shm off)", filepath.Dir(path))
	}
	return fmt.Errorf("shm: cannot create shared memory segment %s (%d bytes): %w%s", path, size, err, hint)
}

// Open maps the existing segment at path, which must hold exactly size
// bytes: a peer's segment whose path it was told. It takes a shared
// flock too, so a sweeper sees the segment as alive while it is mapped
// here and not yet unlinked.
func Open(path string, size int) (*Segment, error) {
	seg, err := open(path, size)
	if err != nil {
		return nil, fmt.Errorf("shm: cannot map shared memory segment %s: %w", path, err)
	}
	return seg, nil
}

// Unlink removes the segment's file; the memory lives on until the last
// mapping goes. Unlinking twice, or a file a peer already removed, is
// not an error.
func (s *Segment) Unlink() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unlinked {
		return nil
	}
	s.unlinked = true
	s.Path = ""
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("shm: removing %s: %w", s.path, err)
	}
	return nil
}

// Close unmaps the segment and releases its file (and flock). It does
// not unlink: a creator whose peer never mapped the segment calls
// Unlink first. Data must not be used after Close.
func (s *Segment) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := unmap(s.Data)
	s.Data = nil
	s.f.Close()
	s.f = nil
	return err
}

// Keep releases the segment's file (and flock) but keeps its mapping
// for the rest of the process's life: Data stays valid, and the memory
// goes when the process exits (its file unlinked first). For memory
// handed to callers that may hold it as long as they like.
func (s *Segment) Keep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// ProcPath returns the path under which another process of this host
// (of the same user) can open this segment while this process holds it,
// even once it is unlinked: /proc/PID/fd/FD. OpenProc opens it. A
// server that hands segments to clients it does not know in advance
// unlinks each at once and hands out this path instead, so that nothing
// is ever left in the file system.
func (s *Segment) ProcPath() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return ""
	}
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), s.f.Fd())
}

// Name returns the file name (without directory) the segment was made
// or opened under.
func (s *Segment) Name() string { return filepath.Base(s.path) }

// parseName returns the creator pid and start time a segment name
// carries, ok false when name is not a dsgd segment's.
func parseName(name string) (pid int, start uint64, ok bool) {
	if !strings.HasPrefix(name, Prefix) {
		return 0, 0, false
	}
	f := strings.Split(strings.TrimPrefix(name, Prefix), "-")
	if len(f) != 4 {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return 0, 0, false
	}
	return pid, start, true
}

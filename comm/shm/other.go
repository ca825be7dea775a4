//go:build !linux

package shm

import (
	"errors"
	"runtime"
	"sync/atomic"
	"time"
)

var (
	errUnsupported = errors.New("shared memory segments need Linux")
	errNoSpace     = errUnsupported
	errReadOnly    = errUnsupported
)

func create(string, int) (*Segment, error) { return nil, errUnsupported }
func open(string, int) (*Segment, error)   { return nil, errUnsupported }
func unmap([]byte) error                   { return nil }

// OpenProc fails off Linux.
func OpenProc(string, int) (*Segment, error) { return nil, errUnsupported }
func startTime(int) (uint64, error)          { return 0, nil }

// Sweep does nothing off Linux: no segment can have been made.
func Sweep(string) ([]string, error) { return nil, nil }

// HostID is "" off Linux: nothing is shared.
func HostID(string) string { return "" }

// Wait sleeps briefly off Linux (never reached: no segment exists).
func Wait(_ *atomic.Uint32, _ uint32, d time.Duration) { time.Sleep(min(d, time.Millisecond)) }

// Wake does nothing off Linux.
func Wake(*atomic.Uint32) {}

func processAlive(int) bool { return false }

// Yield gives the processor to another goroutine.
func Yield() { runtime.Gosched() }

package shm

import (
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

const (
	futexWait = 0 // FUTEX_WAIT, shared between processes (not _PRIVATE)
	futexWake = 1 // FUTEX_WAKE
)

// Wait blocks while *addr == val, for at most d, or until a Wake on addr
// from any process mapping the same memory. It may return early
// (spuriously, or on a signal): callers re-check their condition.
func Wait(addr *atomic.Uint32, val uint32, d time.Duration) {
	if d <= 0 {
		return
	}
	ts := syscall.NsecToTimespec(int64(d))
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWait, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// Wake wakes every process and thread blocked in Wait on addr.
func Wake(addr *atomic.Uint32) {
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWake, uintptr(1<<30), 0, 0, 0)
}

// Yield gives the processor to another runnable thread, if any.
func Yield() {
	syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
}

// processAlive says whether process pid exists.
func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) != syscall.ESRCH
}

package tensor

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// machineState reports whether this thread runs under a real-time
// scheduling policy (threads inherit it from the process: chrt -f/-r) and
// the one-minute load average (ok false when /proc/loadavg is unreadable).
func machineState() (realtime bool, load float64, ok bool) {
	pol, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, 0, 0, 0)
	realtime = errno == 0 && (pol == 1 || pol == 2) // SCHED_FIFO, SCHED_RR
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return realtime, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return realtime, 0, false
	}
	load, err = strconv.ParseFloat(f[0], 64)
	return realtime, load, err == nil
}

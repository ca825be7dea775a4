package enginebench

import (
	"strconv"
	"strings"
	"testing"
)

// statLine is a /proc/PID/stat line with the given comm, ppid, flags,
// rt_priority and policy, other fields zero.
func statLine(comm string, ppid, flags, prio, policy int) string {
	f := make([]string, 52)
	for i := range f {
		f[i] = "0"
	}
	f[0], f[1], f[2], f[3], f[8], f[39], f[40] = "42", "("+comm+")", "R", itoa(ppid), itoa(flags), itoa(prio), itoa(policy)
	return strings.Join(f, " ") + "\n"
}

// itoa is strconv.Itoa.
func itoa(v int) string { return strconv.Itoa(v) }

// TestRealtimeStat checks the /proc/PID/stat reading behind the warning
// about other real-time processes: FIFO and RR user processes are named,
// with a comm holding spaces and parentheses; ordinary ones, kernel
// threads and this process's children are not.
func TestRealtimeStat(t *testing.T) {
	for _, tc := range []struct {
		line string
		want string
		ok   bool
	}{
		{statLine("dsgd bench", 1, 0, 10, 1), "dsgd bench, FIFO 10", true},
		{statLine("a (b) c", 1, 0, 5, 2), "a (b) c, RR 5", true},
		{statLine("go", 1, 0, 0, 0), "", false},
		{statLine("migration/0", 2, 0x00200000, 99, 1), "", false},
		{statLine("python3", 7, 0, 10, 1), "", false}, // a peer: a child of self (7)
		{"garbage", "", false},
	} {
		got, ok := realtimeStat(tc.line, 7)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%q: %q %v, want %q %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

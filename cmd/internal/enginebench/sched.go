package enginebench

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"dsgd/engine/tensor"
)

// printSched prints how this process is scheduled against the rest of the
// machine, and warns when other work competes for the cores: then an
// ordinary process gets a share of them, and where the kernel groups
// processes by session (autogroup, on by default in many distributions)
// that share does not grow with the process's thread count, so a row at
// more threads measures the share, not the engine. On the shared 2-core
// Xeon of docs/benchmarks.md ("GoogLeNet at two threads") GoogLeNet ran as
// fast at 2 threads as at 1 that way, and 1.5-2.0x faster with both cores.
func printSched(stdout, stderr io.Writer, threads []int) {
	rt, load, ok := tensor.SchedState()
	auto := autogroupOn()
	switch {
	case rt:
		fmt.Fprintf(stdout, "bench: scheduling: real-time policy (chrt): ordinary processes cannot take this run's cores\n")
	case ok:
		group := ""
		if auto {
			group = "; kernel autogroup on (each session gets an equal share of busy cores)"
		}
		fmt.Fprintf(stdout, "bench: scheduling: ordinary policy, load average %.2f on %d cores at the start%s\n", load, runtime.NumCPU(), group)
	}
	if !rt && ok && load >= 1 && slices.ContainsFunc(threads, func(t int) bool { return t > 1 }) {
		fmt.Fprintf(stderr, "bench: warning: other work is running (load average %.2f on %d cores) and this run has no real-time policy: its threads get a share of the cores", load, runtime.NumCPU())
		if auto {
			fmt.Fprintf(stderr, ", and under autogroup that share does not grow with the thread count")
		}
		fmt.Fprintf(stderr, ", so the rows at more threads may not speed up; run under chrt -f 10 (each rep line shows the load average after it)\n")
	}
	warnRealtime(stderr, "at the start")
}

// warnRealtime warns when other processes run under a real-time policy
// (another benchmark under chrt): at the same priority as this run one
// holds its core until it blocks, and at a higher one it takes it, so a
// row at more threads than the cores left to this run measures fewer
// cores. when says when they were seen.
func warnRealtime(stderr io.Writer, when string) {
	if others := otherRealtime(); len(others) > 0 {
		fmt.Fprintf(stderr, "bench: warning: other real-time processes %s: %s; each holds a core while it computes, so rows at more threads than the cores left may not speed up\n", when, strings.Join(others, ", "))
	}
}

// loadNote is "  load X.XX", the load average now, for a rep's line;
// empty where there is none.
func loadNote() string {
	if _, load, ok := tensor.SchedState(); ok {
		return fmt.Sprintf("  load %.2f", load)
	}
	return ""
}

// autogroupOn says whether the Linux kernel groups processes by session
// for CPU shares (/proc/sys/kernel/sched_autogroup_enabled).
func autogroupOn() bool {
	b, err := os.ReadFile("/proc/sys/kernel/sched_autogroup_enabled")
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

// otherRealtime lists, as "PID (COMM, FIFO|RR PRIO)", the user-space
// processes other than this one, its parent (an --isa parent waiting) and
// its children (the peers) whose scheduling policy is real-time, from
// /proc; nil where there is no /proc.
func otherRealtime() []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self, parent := os.Getpid(), os.Getppid()
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || pid == parent {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if s, ok := realtimeStat(string(b), self); ok {
			out = append(out, fmt.Sprintf("%d (%s)", pid, s))
		}
	}
	return out
}

// realtimeStat reads a /proc/PID/stat line and says whether it is a
// user-space process, not a child of self, under SCHED_FIFO or SCHED_RR,
// and if so "COMM, FIFO|RR PRIO".
func realtimeStat(stat string, self int) (string, bool) {
	open, shut := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || shut < open {
		return "", false
	}
	comm := stat[open+1 : shut]
	f := strings.Fields(stat[shut+1:]) // f[0] is field 3 (state)
	if len(f) < 39 {
		return "", false
	}
	ppid, _ := strconv.Atoi(f[1])
	flags, _ := strconv.ParseUint(f[6], 10, 64)
	prio, _ := strconv.Atoi(f[37])
	policy, _ := strconv.Atoi(f[38])
	const kthread = 0x00200000 // PF_KTHREAD
	if ppid == self || flags&kthread != 0 || (policy != 1 && policy != 2) {
		return "", false
	}
	name := "FIFO"
	if policy == 2 {
		name = "RR"
	}
	return fmt.Sprintf("%s, %s %d", comm, name, prio), true
}

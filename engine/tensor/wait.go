package tensor

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
)

// WaitPolicy says what a Pool's goroutines do between parallel loops:
// poll for the next one for a short while (active) or park at once
// (passive). It is OpenMP's OMP_WAIT_POLICY for dsgd's pools.
//
// Parking costs a wake-up when the next loop starts and, at the end of a
// loop, another for the caller. On the 2-core development VM (an AMD EPYC
// whose idle vCPUs halt) one hand-off cost 20–40 µs, about as much as
// LeNet's smaller layers take, so a net of a dozen parallel loops per
// iteration lost most of what its second thread gained (docs/benchmarks.md,
// "Engine: the pool's wait policy"). Polling avoids the wake-ups but
// burns the core it polls on, which is free only when nothing else wants
// it: on a machine with more runnable threads than cores, polling takes
// time from other processes and the scheduler takes it back from dsgd.
type WaitPolicy int32

const (
	// WaitAuto polls when polling costs no other work: when this process
	// runs under a real-time scheduling policy (SCHED_FIFO or SCHED_RR,
	// which ordinary processes cannot preempt, so its cores are its own
	// either way), or when the machine's one-minute load average is below
	// its core count plus one half (no other process is waiting for a
	// core). It re-reads both every 100 ms. This is the default.
	WaitAuto WaitPolicy = iota
	// WaitActive always polls before parking.
	WaitActive
	// WaitPassive always parks at once (dsgd's behaviour before polling
	// was added).
	WaitPassive
)

// String returns the policy's name as ParseWaitPolicy reads it.
func (p WaitPolicy) String() string {
	switch p {
	case WaitActive:
		return "active"
	case WaitPassive:
		return "passive"
	}
	return "auto"
}

// ParseWaitPolicy reads "auto", "active" or "passive" (any case).
func ParseWaitPolicy(s string) (WaitPolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "auto", "":
		return WaitAuto, nil
	case "active":
		return WaitActive, nil
	case "passive":
		return WaitPassive, nil
	}
	return WaitAuto, fmt.Errorf("tensor: wait policy %q: want auto, active or passive", s)
}

// WaitPolicyEnv is the environment variable that sets the initial wait
// policy (auto when unset), for comparing policies without rebuilding.
const WaitPolicyEnv = "DSGD_WAIT_POLICY"

var (
	waitPolicy atomic.Int32
	// waitPolicyErr is why the environment's policy was not used, if it
	// was bad; WaitPolicyNote reports it.
	waitPolicyErr error
)

func init() {
	if v, ok := os.LookupEnv(WaitPolicyEnv); ok {
		p, err := ParseWaitPolicy(v)
		if err != nil {
			waitPolicyErr = fmt.Errorf("%s=%s: %w; using auto", WaitPolicyEnv, v, err)
		}
		waitPolicy.Store(int32(p))
	}
}

// SetWaitPolicy sets the wait policy of every Pool from now on.
func SetWaitPolicy(p WaitPolicy) { waitPolicy.Store(int32(p)) }

// CurrentWaitPolicy is the policy in force.
func CurrentWaitPolicy() WaitPolicy { return WaitPolicy(waitPolicy.Load()) }

// WaitPolicyNote describes the policy in force and, under auto, what it
// decides now and why, for a run's header; it names a bad
// DSGD_WAIT_POLICY.
func WaitPolicyNote() string {
	p := CurrentWaitPolicy()
	s := "pool wait policy " + p.String()
	if p == WaitAuto {
		rt, load, ok := machineState()
		switch {
		case rt:
			s += ": polls (real-time scheduling policy)"
		case !ok:
			s += ": parks (no load average to read)"
		case load < float64(runtime.NumCPU())+0.5:
			s += fmt.Sprintf(": polls (load average %.2f on %d cores)", load, runtime.NumCPU())
		default:
			s += fmt.Sprintf(": parks (load average %.2f on %d cores: other work wants them)", load, runtime.NumCPU())
		}
	}
	if waitPolicyErr != nil {
		s += "; " + waitPolicyErr.Error()
	}
	return s
}

// spinWindow is how long a pool goroutine polls before it parks: longer
// than the gap between two parallel loops of a net (a one-thread layer, the
// solver's update, the next batch), short enough that an idle pool stops
// polling at once on a human scale.
const spinWindow = 200 * time.Microsecond

// autoSpin caches WaitAuto's decision: ok, and when to look again.
var autoSpin struct {
	ok   atomic.Bool
	next atomic.Int64 // time.Now().UnixNano() after which to re-read
}

// spinAllowed says whether pool goroutines should poll now.
func spinAllowed() bool {
	switch CurrentWaitPolicy() {
	case WaitActive:
		return true
	case WaitPassive:
		return false
	}
	now := time.Now().UnixNano()
	next := autoSpin.next.Load()
	if now < next || !autoSpin.next.CompareAndSwap(next, now+int64(100*time.Millisecond)) {
		return autoSpin.ok.Load()
	}
	rt, load, ok := machineState()
	autoSpin.ok.Store(rt || (ok && load < float64(runtime.NumCPU())+0.5))
	return autoSpin.ok.Load()
}

// SchedState reports what WaitAuto decides from: whether this process
// runs under a real-time scheduling policy (SCHED_FIFO or SCHED_RR) and the
// machine's one-minute load average (ok false where there is none to
// read, as outside Linux). Benchmarks print it beside their timings: on a
// loaded machine an ordinary process gets a share of the cores, not the
// cores.
func SchedState() (realtime bool, load float64, ok bool) { return machineState() }

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// defaultGrace is how long a process has, after the first SIGINT, SIGTERM
// or SIGHUP, to snapshot and stop before it is ended at once.
const defaultGrace = 30 * time.Second

// stopSignals are the signals that stop a run with a snapshot.
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// interrupter turns the first stop signal into a cancelled context (the
// run snapshots and returns), and a second one, or the grace period
// passing, into an immediate exit with the conventional status 128+N.
type interrupter struct {
	mu  sync.Mutex
	sig os.Signal // the first signal received, or nil
	at  time.Time // when
}

// repeatWindow is how soon after the first SIGTERM another SIGTERM counts
// as the same one delivered again rather than a request to exit at once.
const repeatWindow = 2 * time.Second

// exitCode is the conventional status for dying of sig: 128 + its number
// (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
func exitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// graceFromEnv is DSGD_GRACE (a duration) when set and valid, else
// defaultGrace.
func graceFromEnv(stderr io.Writer) time.Duration {
	s := os.Getenv("DSGD_GRACE")
	if s == "" {
		return defaultGrace
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		fmt.Fprintf(stderr, "dsgd: DSGD_GRACE=%q is not a positive duration; using %v\n", s, defaultGrace)
		return defaultGrace
	}
	return d
}

// watch installs the handler and returns the context a command runs
// under; stop uninstalls it. exit is os.Exit (a parameter for tests).
func (in *interrupter) watch(grace time.Duration, stderr io.Writer, exit func(int)) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), interrupterKey{}, in))
	ch := make(chan os.Signal, 2)
	// A signal the process was started with ignored stays ignored: under
	// nohup, a closed terminal's SIGHUP must not stop the run.
	for _, s := range stopSignals {
		if !signal.Ignored(s) {
			signal.Notify(ch, s)
		}
	}
	done := make(chan struct{})
	go func() {
		var timer <-chan time.Time
		for {
			select {
			case s := <-ch:
				in.mu.Lock()
				first := in.sig == nil
				if first {
					in.sig, in.at = s, time.Now()
				}
				dup := !first && s == in.sig && s == syscall.SIGTERM && time.Since(in.at) < repeatWindow
				in.mu.Unlock()
				if dup {
					// The same SIGTERM delivered again: a launcher killed
					// with -9 signals its children once per thread of
					// its that exits (PR_SET_PDEATHSIG follows the
					// parent thread), so it is not a second request.
					continue
				}
				if !first {
					fmt.Fprintf(stderr, "\ndsgd: second signal (%v): exiting now, without waiting for the snapshot\n", s)
					exit(exitCode(s))
					return
				}
				fmt.Fprintf(stderr, "\ndsgd: %v: stopping after a snapshot (within %v; signal again to exit at once)\n", s, grace)
				cancel()
				timer = time.After(grace)
			case <-timer:
				fmt.Fprintf(stderr, "dsgd: did not stop within %v of %v: exiting now\n", grace, in.received())
				exit(exitCode(in.received()))
				return
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

// received is the first stop signal received, or nil.
func (in *interrupter) received() os.Signal {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.sig
}

// mainStatus runs the command line args under the signal handler and
// returns the process's exit status: the command's, or 128+N when a
// signal stopped it (after it had its chance to snapshot).
func mainStatus(args []string, stdout, stderr io.Writer) int {
	if os.Getenv("DSGD_CHILD") == "1" {
		// A rank or center started by dsgd's launcher writes to the
		// launcher's pipes: if the launcher dies (kill -9), a write must
		// fail, not kill the process with SIGPIPE before it has written
		// its snapshot (issue 23).
		signal.Ignore(syscall.SIGPIPE)
	}
	var in interrupter
	ctx, stop := in.watch(graceFromEnv(stderr), stderr, os.Exit)
	code := run(ctx, args, stdout, stderr)
	stop()
	if s := in.received(); s != nil && code != 0 {
		return exitCode(s)
	}
	return code
}

// interrupterKey is the context key of the *interrupter a command runs
// under.
type interrupterKey struct{}

// signalOf is the stop signal the process received, if ctx descends from
// the one watch returned; else nil.
func signalOf(ctx context.Context) os.Signal {
	if in, ok := ctx.Value(interrupterKey{}).(*interrupter); ok {
		return in.received()
	}
	return nil
}

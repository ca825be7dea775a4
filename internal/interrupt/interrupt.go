package interrupt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultGrace is how long a process has, after the first SIGINT, SIGTERM
// or SIGHUP, to snapshot and stop before it is ended at once.
const DefaultGrace = 30 * time.Second

// RepeatWindow is how soon after the first SIGTERM another SIGTERM counts
// as the same one delivered again rather than a request to exit at once.
const RepeatWindow = 2 * time.Second

// Signals are the signals that stop a run with a snapshot.
var Signals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// Interrupter turns the first stop signal into a cancelled context (the
// run snapshots and returns), and a second one, or the grace period
// passing, into an immediate exit with the conventional status 128+N. Its
// zero value is ready to Watch; its messages start with Name.
type Interrupter struct {
	// Name starts each message the interrupter writes ("dsgd").
	Name string
	// NoSnapshot says the command writes no snapshot (dsgd time, test,
	// upgrade): the first signal's message then says it stops, not that
	// it snapshots first.
	NoSnapshot bool

	mu      sync.Mutex
	sig     os.Signal // the first stop signal received, or nil
	at      time.Time // when
	effects map[os.Signal]effect
	asked   atomic.Bool // a snapshot was asked for and not yet taken
}

// Effect is what a signal does to a run, as Caffe's -sigint_effect and
// -sighup_effect say it.
type Effect int

const (
	// Stop stops the run at the end of the iteration in progress, with a
	// snapshot (Caffe's "stop", after which its solver snapshots too).
	Stop Effect = iota
	// Snapshot asks for a snapshot at the end of the iteration in
	// progress, and the run goes on (Caffe's "snapshot").
	Snapshot
	// Ignore leaves the run alone (Caffe's "none").
	Ignore
)

// ParseEffect reads Caffe's names of the effects: stop, snapshot, none.
func ParseEffect(s string) (Effect, error) {
	switch s {
	case "stop":
		return Stop, nil
	case "snapshot":
		return Snapshot, nil
	case "none":
		return Ignore, nil
	}
	return Stop, fmt.Errorf("%q: want stop, snapshot or none", s)
}

func (e Effect) String() string {
	return [...]string{"stop", "snapshot", "none"}[e]
}

// effect is a signal's effect and the flag that set it, for messages.
type effect struct {
	e    Effect
	flag string
}

// SetEffect makes sig do e from now on (Stop, the default, for a signal
// never set); flag names the setting in the messages
// ("--sighup-effect").
func (in *Interrupter) SetEffect(sig os.Signal, e Effect, flag string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.effects == nil {
		in.effects = map[os.Signal]effect{}
	}
	in.effects[sig] = effect{e, flag}
}

// TakeSnapshotRequest reports whether a signal whose effect is Snapshot
// arrived since the last call, and clears it.
func (in *Interrupter) TakeSnapshotRequest() bool { return in.asked.Swap(false) }

// From is the Interrupter a context that Watch returned descends from, or
// nil.
func From(ctx context.Context) *Interrupter {
	in, _ := ctx.Value(key{}).(*Interrupter)
	return in
}

// ExitCode is the conventional status for dying of sig: 128 + its number
// (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP); 1 for a signal that
// is not a syscall.Signal.
func ExitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// GraceFromEnv is the environment's DSGD_GRACE (a duration, read through
// getenv) when set and positive, else DefaultGrace; a value that is not a
// positive duration is named on warn, which starts the line with name.
func GraceFromEnv(getenv func(string) string, name string, warn io.Writer) time.Duration {
	s := getenv("DSGD_GRACE")
	if s == "" {
		return DefaultGrace
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		fmt.Fprintf(warn, "%s: DSGD_GRACE=%q is not a positive duration; using %v\n", name, s, DefaultGrace)
		return DefaultGrace
	}
	return d
}

// key is the context key of the *Interrupter a command runs under.
type key struct{}

// Watch installs the handler and returns the context a command runs
// under; stop uninstalls it. Its messages go to stderr; exit ends the
// process (os.Exit; a parameter for tests).
func (in *Interrupter) Watch(grace time.Duration, stderr io.Writer, exit func(int)) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, in))
	ch := make(chan os.Signal, 2)
	// A signal the process was started with ignored stays ignored: under
	// nohup, a closed terminal's SIGHUP must not stop the run.
	for _, s := range Signals {
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
				eff := in.effects[s]
				if eff.e != Stop { // also while stopping: that run snapshots anyway
					in.mu.Unlock()
					if eff.e == Ignore {
						fmt.Fprintf(stderr, "\n%s: %v ignored (%s none)\n", in.Name, s, eff.flag)
						continue
					}
					in.asked.Store(true)
					fmt.Fprintf(stderr, "\n%s: %v: a snapshot at the end of this iteration; training goes on (%s snapshot)\n", in.Name, s, eff.flag)
					continue
				}
				first := in.sig == nil
				if first {
					in.sig, in.at = s, time.Now()
				}
				dup := !first && s == in.sig && s == syscall.SIGTERM && time.Since(in.at) < RepeatWindow
				in.mu.Unlock()
				if dup {
					// The same SIGTERM delivered again: a launcher killed
					// with -9 signals its children once per thread of
					// its that exits (PR_SET_PDEATHSIG follows the
					// parent thread), so it is not a second request.
					continue
				}
				if !first {
					fmt.Fprintf(stderr, "\n%s: second signal (%v): exiting now, without waiting for the snapshot\n", in.Name, s)
					exit(ExitCode(s))
					return
				}
				what := "stopping after a snapshot"
				if in.NoSnapshot {
					what = "stopping"
				}
				fmt.Fprintf(stderr, "\n%s: %v: %s (within %v; signal again to exit at once)\n", in.Name, s, what, grace)
				cancel()
				timer = time.After(grace)
			case <-timer:
				fmt.Fprintf(stderr, "%s: did not stop within %v of %v: exiting now\n", in.Name, grace, in.Received())
				exit(ExitCode(in.Received()))
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

// Received is the first stop signal received, or nil.
func (in *Interrupter) Received() os.Signal {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.sig
}

// SignalOf is the stop signal the process received, if ctx descends from
// one that Watch returned; else nil.
func SignalOf(ctx context.Context) os.Signal {
	if in := From(ctx); in != nil {
		return in.Received()
	}
	return nil
}

// WithSignal is ctx as the context of a run that sig stopped: SignalOf
// reports sig on it (for tests of what a stopped run prints).
func WithSignal(ctx context.Context, sig os.Signal) context.Context {
	return context.WithValue(ctx, key{}, &Interrupter{sig: sig, at: time.Now()})
}

// ErrorText is err's message, where a signal stopped the run
// ("context canceled (snapshot ...)") with "interrupted" for "context
// canceled": the user stopped it, nothing failed.
func ErrorText(ctx context.Context, err error) string {
	msg := err.Error()
	if SignalOf(ctx) != nil && errors.Is(err, context.Canceled) {
		msg = strings.Replace(msg, context.Canceled.Error(), "interrupted", 1)
	}
	return msg
}

package interrupt

import (
	"bytes"
	"context"
	"dsgd/internal/syncbuf"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// needSIGHUP skips a test that sends this process SIGHUP when it was
// started with SIGHUP ignored (under nohup): the interrupter keeps it
// ignored then, as TestNohupKeepsSIGHUPIgnored checks.
func needSIGHUP(t *testing.T) {
	t.Helper()
	if signal.Ignored(syscall.SIGHUP) {
		t.Skip("this test process was started with SIGHUP ignored (nohup), which the interrupter keeps ignored")
	}
}

// TestInterrupterSecondSignal: the first signal cancels the context, the
// second exits at once with 128+N.
func TestInterrupterSecondSignal(t *testing.T) {
	needSIGHUP(t)
	in := Interrupter{Name: "dsgd"}
	var code atomic.Int32
	exited := make(chan struct{})
	ctx, stop := in.Watch(time.Minute, &bytes.Buffer{}, func(c int) { code.Store(int32(c)); close(exited) })
	defer stop()
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGHUP did not cancel the context")
	}
	if s := SignalOf(ctx); s != syscall.SIGHUP {
		t.Errorf("SignalOf = %v, want SIGHUP", s)
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("a second signal did not exit")
	}
	if code.Load() != 143 {
		t.Errorf("exit status %d after SIGTERM, want 143", code.Load())
	}
}

// TestInterrupterRepeatedSIGTERM: the same SIGTERM delivered twice at once
// (a launcher killed with -9 signals its children once per thread of its
// that exits) is one request to stop, not two: the run still snapshots.
// Another signal after it exits at once.
func TestInterrupterRepeatedSIGTERM(t *testing.T) {
	needSIGHUP(t)
	in := Interrupter{Name: "dsgd"}
	var code atomic.Int32
	exited := make(chan struct{})
	ctx, stop := in.Watch(time.Minute, &bytes.Buffer{}, func(c int) { code.Store(int32(c)); close(exited) })
	defer stop()
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	<-ctx.Done()
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case <-exited:
		t.Fatal("a repeated SIGTERM exited at once")
	case <-time.After(300 * time.Millisecond):
	}
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("a SIGHUP after the SIGTERM did not exit")
	}
	if code.Load() != 129 {
		t.Errorf("exit status %d after SIGHUP, want 129", code.Load())
	}
}

// TestInterrupterGrace: a process that does not stop within the grace
// period after the first signal exits anyway.
func TestInterrupterGrace(t *testing.T) {
	in := Interrupter{Name: "dsgd"}
	var code atomic.Int32
	exited := make(chan struct{})
	_, stop := in.Watch(200*time.Millisecond, &bytes.Buffer{}, func(c int) { code.Store(int32(c)); close(exited) })
	defer stop()
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the grace period passed without an exit")
	}
	if code.Load() != 130 {
		t.Errorf("exit status %d after SIGINT, want 130", code.Load())
	}
}

// TestErrorText: a run a signal stopped reads "interrupted", not "context
// canceled"; other errors are as they are.
func TestErrorText(t *testing.T) {
	stopped := WithSignal(context.Background(), os.Interrupt)
	canceled := fmt.Errorf("%w (snapshot of iteration 4 written to s; continue with --resume s)", context.Canceled)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want string
	}{
		{"signal", stopped, canceled, "interrupted (snapshot of iteration 4 written to s; continue with --resume s)"},
		{"no signal", context.Background(), canceled, canceled.Error()},
		{"other error", stopped, errors.New("disk full"), "disk full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ErrorText(tc.ctx, tc.err); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestStopMessage: the first signal's message says a snapshot comes first
// only for a command that writes one.
func TestStopMessage(t *testing.T) {
	tests := []struct {
		noSnapshot bool
		want       string
	}{
		{false, "dsgd: terminated: stopping after a snapshot (within 1m0s; signal again to exit at once)\n"},
		{true, "dsgd: terminated: stopping (within 1m0s; signal again to exit at once)\n"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.noSnapshot), func(t *testing.T) {
			in := Interrupter{Name: "dsgd", NoSnapshot: tt.noSnapshot}
			// The message is written before the context is cancelled.
			var buf bytes.Buffer
			ctx, stop := in.Watch(time.Minute, &buf, func(int) {})
			defer stop()
			syscall.Kill(os.Getpid(), syscall.SIGTERM)
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("SIGTERM did not cancel the context")
			}
			if got := buf.String(); got != "\n"+tt.want {
				t.Errorf("message %q, want %q", got, "\n"+tt.want)
			}
		})
	}
}

// TestInterrupterEffects: a signal set to Snapshot asks for a snapshot
// (once per signal) and leaves the run going, one set to Ignore does
// nothing but say so, and the others still stop it; while it stops they
// keep their effects rather than exiting at once.
func TestInterrupterEffects(t *testing.T) {
	needSIGHUP(t)
	in := Interrupter{Name: "dsgd"}
	var errs syncbuf.Buffer
	exited := make(chan int, 1)
	ctx, stop := in.Watch(time.Minute, &errs, func(c int) { exited <- c })
	defer stop()
	if From(ctx) != &in {
		t.Fatal("From does not find the interrupter the context was watched by")
	}
	in.SetEffect(syscall.SIGHUP, Snapshot, "--sighup-effect")
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s; stderr %q", what, errs.String())
			}
		}
	}
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	wait("SIGHUP with effect snapshot asked for no snapshot", in.asked.Load)
	if ctx.Err() != nil || in.Received() != nil {
		t.Fatal("SIGHUP with effect snapshot stopped the run")
	}
	if !in.TakeSnapshotRequest() || in.TakeSnapshotRequest() {
		t.Error("TakeSnapshotRequest: want true once, then false")
	}
	if !bytes.Contains([]byte(errs.String()), []byte("hangup: a snapshot at the end of this iteration; training goes on (--sighup-effect snapshot)")) {
		t.Errorf("stderr %q does not say what SIGHUP does", errs.String())
	}

	in.SetEffect(syscall.SIGHUP, Ignore, "--sighup-effect")
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	wait("SIGHUP with effect none said nothing", func() bool {
		return bytes.Contains([]byte(errs.String()), []byte("hangup ignored (--sighup-effect none)"))
	})
	if ctx.Err() != nil || in.TakeSnapshotRequest() {
		t.Fatal("SIGHUP with effect none stopped the run or asked for a snapshot")
	}

	syscall.Kill(os.Getpid(), syscall.SIGINT) // still Stop
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGINT did not stop the run")
	}
	syscall.Kill(os.Getpid(), syscall.SIGHUP) // while stopping: still ignored, no exit
	wait("a second SIGHUP was not ignored", func() bool { return bytes.Count([]byte(errs.String()), []byte("hangup ignored")) == 2 })
	select {
	case c := <-exited:
		t.Fatalf("an ignored SIGHUP while stopping exited %d", c)
	default:
	}
}

func TestParseEffect(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Effect
		err  bool
	}{{"stop", Stop, false}, {"snapshot", Snapshot, false}, {"none", Ignore, false}, {"", Stop, true}, {"Snapshot", Stop, true}} {
		got, err := ParseEffect(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ParseEffect(%q) = %v, %v", tc.in, got, err)
		}
		if err == nil && got.String() != tc.in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), tc.in)
		}
	}
}

package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"dsgd/internal/interrupt"
)

// graceFromEnv is DSGD_GRACE (a duration) when set and valid, else
// interrupt.DefaultGrace, a bad value named on stderr.
func graceFromEnv(stderr io.Writer) time.Duration {
	return interrupt.GraceFromEnv(os.Getenv, "dsgd", stderr)
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
	in := interrupt.Interrupter{Name: "dsgd", NoSnapshot: len(args) > 0 && noSnapshot[args[0]]}
	ctx, stop := in.Watch(graceFromEnv(stderr), stderr, os.Exit)
	code := run(ctx, args, stdout, stderr)
	stop()
	if s := in.Received(); s != nil && code != 0 {
		return interrupt.ExitCode(s)
	}
	return code
}

// signalOf is the stop signal the process received (interrupt.SignalOf).
func signalOf(ctx context.Context) os.Signal { return interrupt.SignalOf(ctx) }

// noSnapshot are the commands that write no snapshot, whose stop message
// says only that they stop (dsgd time under a timeout said "stopping after
// a snapshot").
var noSnapshot = map[string]bool{
	"time": true, "test": true, "upgrade": true, "bench": true, "bench-comm": true, "simulate": true,
	"convert-mnist": true, "convert-imageset": true, "compute-image-mean": true, "completion": true,
}

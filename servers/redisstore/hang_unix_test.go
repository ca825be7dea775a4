//go:build unix

package redisstore

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStoreServerHung stops the server (SIGSTOP) so it accepts bytes but
// never answers: calls must fail after Config.Timeout, or as soon as
// their context is cancelled, instead of hanging.
func TestStoreServerHung(t *testing.T) {
	srv := startRedis(t)
	const timeout = 300 * time.Millisecond
	st := NewStore(dialTest(t, srv, Config{Timeout: timeout, PoolSize: 1}))
	slow := NewStore(dialTest(t, srv, Config{Timeout: 10 * time.Second, PoolSize: 1}))
	long := NewStore(dialTest(t, srv, Config{Timeout: time.Hour, PoolSize: 1}))
	ctx := context.Background()
	if err := st.PutFloats(ctx, "w", []float32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(srv.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(srv.cmd.Process.Pid, syscall.SIGCONT) })

	start := time.Now()
	err := st.GetFloats(ctx, "w", make([]float32, 3))
	took := time.Since(start)
	if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), srv.addr) || !strings.Contains(err.Error(), "GET") {
		t.Fatalf("GetFloats on a hung server: %v, want a timeout naming %s and GET", err, srv.addr)
	}
	if took < timeout || took > timeout+time.Second {
		t.Errorf("GetFloats gave up after %v, timeout %v", took, timeout)
	}

	// A context deadline shorter than the timeout wins.
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	err = slow.PutFloats(dctx, "w", []float32{4})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("PutFloats with a 200ms context: %v after %v", err, time.Since(start))
	}

	// Cancellation interrupts a call that the timeout would let run.
	cctx, cancel2 := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel2)
	start = time.Now()
	err = long.GetFloats(cctx, "w", make([]float32, 3))
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Fatalf("GetFloats cancelled after 100ms: %v after %v, want context.Canceled promptly", err, time.Since(start))
	}
}

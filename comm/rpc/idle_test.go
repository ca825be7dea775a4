package rpc

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestIdleTimeout: a connection that sends nothing between requests for
// longer than IdleTimeout is closed by the server, which logs it; one
// that keeps calling within it is served throughout.
func TestIdleTimeout(t *testing.T) {
	srv, log := startServer(t, Config{Timeout: time.Second, IdleTimeout: 400 * time.Millisecond})
	busy := dial(t, srv.Addr(), Config{Timeout: time.Second})
	idle := dial(t, srv.Addr(), Config{Timeout: time.Second})
	var resp Response
	echo(t, idle, 10, "", &resp)

	ctx, stop := context.WithCancel(context.Background())
	busyErr := make(chan error, 1)
	go func() { // calls 20 ms apart stay far under the idle limit
		var r Response
		for ctx.Err() == nil {
			if err := busy.Call(ctx, &Request{Op: opEcho, Data: make([]float32, 4)}, &r); err != nil && ctx.Err() == nil {
				busyErr <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		busyErr <- nil
	}()
	time.Sleep(1300 * time.Millisecond)
	if err := idle.Call(context.Background(), &Request{Op: opEcho}, &resp); err == nil {
		t.Fatal("a call on a connection idle for 3x the idle timeout succeeded")
	}
	stop()
	if err := <-busyErr; err != nil {
		t.Fatalf("the busy client failed: %v", err)
	}
	if err := log.wait(t); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("server logged %v, want an idle timeout", err)
	}
}

package smb

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWaitDeadlineKeepsConnection: a wait whose context's deadline ends
// it (center's polls, every Poll) is answered "unchanged" by the server
// at the slice's end and keeps its connection. Before, the call was ended
// by the same deadline, raced the answer and, each time it won, closed
// the connection: a redial per poll.
func TestWaitDeadlineKeepsConnection(t *testing.T) {
	ctx := context.Background()
	cfg := Config{Token: "t", Timeout: 5 * time.Second, WaitSlice: time.Second}
	cl := dialTest(t, startServer(t, NewStore(0), cfg).Addr(), cfg)
	if _, err := cl.CreateControl(ctx, 1); err != nil {
		t.Fatal(err)
	}
	ver, err := cl.ReadControl(ctx, 0, make([]int64, 1))
	if err != nil {
		t.Fatal(err)
	}
	first := cl.idle[0]
	for i := range 10 {
		wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		_, err := cl.WaitControl(wctx, ver)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("wait %d on an unchanged control area: %v; want the deadline", i, err)
		}
	}
	if len(cl.idle) != 1 || cl.idle[0] != first {
		t.Fatalf("after 10 waits ended by their deadlines the client holds %d idle connections, the first one kept: %v", len(cl.idle), len(cl.idle) > 0 && cl.idle[0] == first)
	}
	// A cancelled wait still ends at once, connection and all.
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	if _, err := cl.WaitControl(cctx, ver); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	if d := time.Since(start); d >= cfg.WaitSlice {
		t.Fatalf("cancelled wait returned after %v, a whole slice", d)
	}
}

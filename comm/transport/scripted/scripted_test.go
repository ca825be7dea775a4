package scripted_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"dsgd/comm/transport"
	"dsgd/comm/transport/scripted"
	"dsgd/comm/transport/transporttest"
)

// TestAutoConformance: delivering every message as it is sent, the Net
// keeps the Endpoint contract.
func TestAutoConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, size int) []transport.Endpoint {
		return scripted.NewAuto(size).Endpoints()
	})
}

// TestScript: a message waits until it is delivered, a held link is
// passed by, a dropped message never arrives, Expire ends a wait naming
// the peer, and a crash fails the crashed rank's peers.
func TestScript(t *testing.T) { synctest.Test(t, testScript) }

func testScript(t *testing.T) {
	nw := scripted.New(3)
	eps := nw.Endpoints()
	ctx := context.Background()
	for _, s := range []struct{ from, to int }{{0, 1}, {2, 1}, {0, 1}} {
		if err := eps[s.from].Send(ctx, s.to, 7, []float32{float32(s.from)}); err != nil {
			t.Fatal(err)
		}
	}
	if ls := nw.Links(); len(ls) != 2 || len(ls[0].Queued) != 2 || len(ls[1].Queued) != 1 {
		t.Fatalf("links after three sends: %+v", ls)
	}
	if err := nw.Hold(0, 1, true); err != nil {
		t.Fatal(err)
	}
	if got := nw.DeliverAll(); len(got) != 1 || got[0].From != 2 {
		t.Fatalf("DeliverAll with 0→1 held delivered %+v, want 2→1's message", got)
	}
	if _, err := nw.Deliver(0, 1, 3); err == nil {
		t.Fatal("Deliver of 3 messages from a queue of 2 succeeded")
	}
	if _, err := nw.Deliver(0, 1, 1); err != nil {
		t.Fatal(err)
	}
	buf := make([]float32, 1)
	for _, from := range []int{2, 0} {
		if err := eps[1].Recv(ctx, from, 7, buf); err != nil || buf[0] != float32(from) {
			t.Fatalf("Recv from %d: %v, %v", from, buf, err)
		}
	}
	if _, err := nw.Drop(0, 1); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error)
	go func() { errc <- eps[1].Recv(ctx, 0, 7, buf) }()
	synctest.Wait() // the receive is blocked
	if b := nw.Blocked(); len(b) != 1 || b[0] != (scripted.Call{Rank: 1, Peer: 0, Tag: 7, Len: 1}) {
		t.Fatalf("Blocked: %+v", b)
	}
	if k := nw.Expire(1); k != 1 {
		t.Fatalf("Expire ended %d receives, want 1", k)
	}
	var pe *transport.PeerError
	if err := <-errc; !errors.As(err, &pe) || pe.Rank != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("expired Recv: %v, want a deadline naming rank 0", err)
	}
	nw.Crash(2)
	if err := eps[0].Send(ctx, 2, 7, buf); !errors.As(err, &pe) || pe.Rank != 2 || !errors.Is(err, scripted.ErrCrashed) {
		t.Fatalf("Send to a crashed rank: %v", err)
	}
	if err := eps[1].Recv(ctx, 2, 7, buf); !errors.As(err, &pe) || pe.Rank != 2 {
		t.Fatalf("Recv from a crashed rank: %v", err)
	}
}

package transport_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"dsgd/comm/transport"
	"dsgd/comm/transport/transporttest"
)

func TestInprocConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, size int) []transport.Endpoint {
		return transport.NewInproc(size)
	})
}

func TestNewInprocBadSize(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("NewInproc(0) did not panic")
		}
	}()
	transport.NewInproc(0)
}

// TestInprocMismatchTellsSender checks the in-process transport's extra:
// a refused message fails the sender's Send too, with the receiver's
// reason.
func TestInprocMismatchTellsSender(t *testing.T) {
	eps := transport.NewInproc(2)
	ctx := context.Background()
	errc := make(chan error, 1)
	go func() { errc <- eps[1].Send(ctx, 0, 5, make([]float32, 3)) }()
	err := eps[0].Recv(ctx, 1, 6, make([]float32, 3))
	var pe *transport.PeerError
	if !errors.As(err, &pe) || pe.Rank != 1 {
		t.Fatalf("Recv: %v", err)
	}
	err = <-errc
	if !errors.As(err, &pe) || pe.Rank != 0 || pe.Err.Error() != "expected 3 floats with tag 6, got 3 floats with tag 5" {
		t.Fatalf("Send: %v", err)
	}
}

// TestInprocSendToClosed checks that a Send blocked on a peer that closes
// fails with a PeerError naming the peer.
func TestInprocSendToClosed(t *testing.T) {
	eps := transport.NewInproc(2)
	errc := make(chan error, 1)
	go func() { errc <- eps[0].Send(context.Background(), 1, 0, make([]float32, 1)) }()
	time.Sleep(10 * time.Millisecond)
	eps[1].Close()
	var pe *transport.PeerError
	if err := <-errc; !errors.As(err, &pe) || pe.Rank != 1 {
		t.Fatalf("Send to a closed peer: %v", err)
	}
}

// TestInprocDrainAfterClose checks that a message handed over just
// before the sender closes is still delivered.
func TestInprocDrainAfterClose(t *testing.T) {
	for i := range 50 {
		eps := transport.NewInproc(2)
		done := make(chan error, 1)
		go func() {
			err := eps[1].SendBytes(context.Background(), 0, 1, []byte{byte(i)})
			eps[1].Close()
			done <- err
		}()
		b, err := eps[0].RecvBytes(context.Background(), 1, 1, 1)
		if err != nil || len(b) != 1 || b[0] != byte(i) {
			t.Fatalf("round %d: %v %v", i, b, err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		var pe *transport.PeerError
		if err := eps[0].Recv(context.Background(), 1, 1, nil); !errors.As(err, &pe) || pe.Rank != 1 {
			t.Fatalf("Recv after the peer closed: %v", err)
		}
	}
}

func TestInprocNoAllocs(t *testing.T) {
	eps := transport.NewInproc(2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	buf := make([]float32, 1024)
	go func() {
		rbuf := make([]float32, 1024)
		for eps[1].Recv(ctx, 0, 1, rbuf) == nil {
		}
	}()
	allocs := testing.AllocsPerRun(100, func() {
		if err := eps[0].Send(ctx, 1, 1, buf); err != nil {
			panic(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Send/Recv allocate %v times per message", allocs)
	}
}

func BenchmarkInprocSendRecv(b *testing.B) {
	for _, mib := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			transporttest.BenchmarkStream(b, transport.NewInproc(2), mib<<20/4)
		})
	}
}

// TestInprocConcurrentCallsPanic: two Sends to one peer at once, or two
// Recvs from one peer, break the contract and panic.
func TestInprocConcurrentCallsPanic(t *testing.T) {
	eps := transport.NewInproc(3)
	defer func() {
		for _, ep := range eps {
			ep.Close()
		}
	}()
	ctx := context.Background()
	go eps[0].Send(ctx, 1, 0, []float32{1}) // blocks: rank 1 never receives
	go eps[2].Recv(ctx, 0, 0, nil)          // blocks: rank 0 never sends to 2
	time.Sleep(20 * time.Millisecond)
	for name, call := range map[string]func(){
		"Send": func() { eps[0].SendBytes(ctx, 1, 0, nil) },
		"Recv": func() { eps[2].RecvBytes(ctx, 0, 0, 1) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "two concurrent "+name+" calls") {
					t.Errorf("second %s: recovered %v", name, r)
				}
			}()
			call()
		}()
	}
}

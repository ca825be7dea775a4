package tcp

import (
	"context"
	"fmt"
	"testing"

	"dsgd/comm/transport/transporttest"
)

// BenchmarkTCPSendRecv streams messages from rank 0 to rank 1 of a
// loopback group: the raw link under every collective. The GB/s metric
// counts float32 payload (what the caller moves), so fp16 shows its
// effective rate.
func BenchmarkTCPSendRecv(b *testing.B) {
	for _, mode := range []Shm{ShmOff, ShmAuto} {
		for _, compress := range []Compress{CompressNone, CompressFP16} {
			for _, mib := range []int{1, 4, 16, 64} {
				b.Run(fmt.Sprintf("shm=%v/%v/%dMiB", mode, compress, mib), func(b *testing.B) {
					transporttest.BenchmarkStream(b, newGroupShm(b, 2, compress, mode), mib<<20/4)
				})
			}
		}
	}
}

// BenchmarkTCPPingPong measures the round trip of a one-float message:
// the per-message cost (α of the α-β model).
func BenchmarkTCPPingPong(b *testing.B) {
	eps := newGroup(b, 2, CompressNone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		buf := make([]float32, 1)
		for eps[1].Recv(ctx, 0, 0, buf) == nil && eps[1].Send(ctx, 0, 0, buf) == nil {
		}
	}()
	buf := make([]float32, 1)
	b.ReportAllocs()
	for b.Loop() {
		if err := eps[0].Send(ctx, 1, 0, buf); err != nil {
			b.Fatal(err)
		}
		if err := eps[0].Recv(ctx, 1, 0, buf); err != nil {
			b.Fatal(err)
		}
	}
}

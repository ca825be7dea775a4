package tcp

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkTCPSendRecv streams messages from rank 0 to rank 1 of a
// loopback group: the raw link under every collective. The GB/s metric
// counts float32 payload (what the caller moves), so fp16 shows its
// effective rate.
func BenchmarkTCPSendRecv(b *testing.B) {
	for _, compress := range []Compress{CompressNone, CompressFP16} {
		for _, mib := range []int{1, 4, 16, 64} {
			b.Run(fmt.Sprintf("%v/%dMiB", compress, mib), func(b *testing.B) {
				eps := newGroup(b, 2, compress)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				n := mib << 20 / 4
				src, dst := make([]float32, n), make([]float32, n)
				for i := range src {
					src[i] = float32(i%2001-1000) * 1e-3 // gradient-like values
				}
				errc := make(chan error, 1)
				b.SetBytes(int64(4 * n))
				b.ReportAllocs()
				b.ResetTimer()
				go func() {
					for range b.N {
						if err := eps[1].Recv(ctx, 0, 0, dst); err != nil {
							errc <- err
							return
						}
					}
					errc <- nil
				}()
				for range b.N {
					if err := eps[0].Send(ctx, 1, 0, src); err != nil {
						b.Fatal(err)
					}
				}
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(4*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
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

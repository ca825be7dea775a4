package transporttest

import (
	"context"
	"testing"

	"dsgd/comm/transport"
)

// BenchmarkStream streams messages of n float32 from rank 0 to rank 1 of
// eps, b.N of them, reporting the payload rate (b.SetBytes and a GB/s
// metric: float32 bytes moved, so compressed links show their effective
// rate). It is the raw link under every collective, shared by every
// transport's benchmarks.
func BenchmarkStream(b *testing.B, eps []transport.Endpoint, n int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
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
}

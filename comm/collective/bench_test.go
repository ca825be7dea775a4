package collective

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"dsgd/comm/transport"
)

// BenchmarkAllreduceInproc measures an allreduce over in-process ranks and
// reports bus bandwidth as NCCL and gloo do: busGB/s = 2(p-1)/p · bytes /
// time, which for a bandwidth-optimal algorithm is the rate each rank's
// link runs at, whatever p.
//
//	go test ./collective/ -run XXX -bench AllreduceInproc -benchtime 5x
func BenchmarkAllreduceInproc(b *testing.B) {
	for _, p := range []int{2, 4} {
		for _, mib := range []int{1, 4, 16, 64} {
			for _, alg := range []Algorithm{Tree, Ring, RecursiveDoubling} {
				b.Run(fmt.Sprintf("p=%d/MiB=%d/%v", p, mib, alg), func(b *testing.B) {
					benchAllreduce(b, p, mib<<20/4, alg)
				})
			}
		}
	}
}

func benchAllreduce(b *testing.B, p, n int, alg Algorithm) {
	eps := transport.NewInproc(p)
	exs := make([]*Executor, p)
	bufs := make([][]float32, p)
	ctx := context.Background()
	for r := range p {
		exs[r] = NewExecutor(eps[r])
		defer exs[r].Close()
		bufs[r] = make([]float32, n)
	}
	// One untimed call per rank to size scratch and fill the schedule cache.
	var wg sync.WaitGroup
	for r := range p {
		wg.Go(func() {
			if err := exs[r].Allreduce(ctx, bufs[r], alg); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	b.ReportAllocs()
	b.ResetTimer()
	for r := 1; r < p; r++ {
		wg.Go(func() {
			for range b.N {
				if err := exs[r].Allreduce(ctx, bufs[r], alg); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	for range b.N {
		if err := exs[0].Allreduce(ctx, bufs[0], alg); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	b.StopTimer()
	bytes := 4 * float64(n)
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(bytes/sec/1e9, "algGB/s")
	b.ReportMetric(2*float64(p-1)/float64(p)*bytes/sec/1e9, "busGB/s")
}

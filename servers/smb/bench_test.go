package smb

import (
	"context"
	"fmt"
	"testing"
)

func TestBandwidth(t *testing.T) {
	r, err := Bandwidth(context.Background(), BenchConfig{Clients: 2, Bytes: 64 << 10, Ops: 3, MaxFrame: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if r.Moved != 2*4*(64<<10) || r.GBps <= 0 || r.MemcpyGBps <= 0 || r.Ratio() <= 0 {
		t.Errorf("result %+v: want 4 ops of 64 KiB by 2 clients and positive rates", r)
	}
	if _, err := Bandwidth(context.Background(), BenchConfig{Clients: 0, Bytes: 8}); err == nil {
		t.Error("no error for 0 clients")
	}
}

// BenchmarkBandwidth reports the aggregate read/write bandwidth of k
// clients (ShmCaffe Fig. 7) at a small size.
func BenchmarkBandwidth(b *testing.B) {
	for _, k := range []int{2, 4, 8, 16} {
		b.Run(fmt.Sprintf("clients=%d", k), func(b *testing.B) {
			var gbps, ratio float64
			for b.Loop() {
				r, err := Bandwidth(context.Background(), BenchConfig{Clients: k, Bytes: 1 << 20, Ops: 4})
				if err != nil {
					b.Fatal(err)
				}
				gbps, ratio = r.GBps, r.Ratio()
			}
			b.ReportMetric(gbps, "GB/s")
			b.ReportMetric(ratio, "memcpy-ratio")
		})
	}
}

// BenchmarkStoreReadWrite is the in-process core alone.
func BenchmarkStoreReadWrite(b *testing.B) {
	ctx := context.Background()
	s := NewStore(0)
	const n = 1 << 18
	if _, err := s.Create(ctx, "x", n); err != nil {
		b.Fatal(err)
	}
	buf := make([]float32, n)
	b.SetBytes(8 * n)
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Write(ctx, "x", 0, buf)
		_ = s.Read(ctx, "x", 0, buf)
	}
}

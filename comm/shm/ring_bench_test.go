package shm

import (
	"sync"
	"testing"
	"time"
)

// BenchmarkRing streams 1 MiB messages through a 1 MiB ring between two
// goroutines, 64 KiB per commit.
func BenchmarkRing(b *testing.B) {
	seg, err := Create(b.TempDir(), "bench", RingSize(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer seg.Close()
	r, err := NewRing(seg.Data)
	if err != nil {
		b.Fatal(err)
	}
	const msg = 1 << 20
	src := make([]byte, msg)
	dst := make([]byte, msg)
	b.SetBytes(msg)
	var wg sync.WaitGroup
	wg.Go(func() {
		for range b.N {
			for p := src; len(p) > 0; {
				f := r.Free()
				if len(f) == 0 {
					r.WaitFree(1, 100*time.Millisecond)
					continue
				}
				n := copy(f[:min(len(f), 64<<10)], p)
				r.Commit(n)
				p = p[n:]
			}
		}
	})
	for range b.N {
		for got := 0; got < msg; {
			d := r.Data()
			if len(d) == 0 {
				r.WaitData(1, 100*time.Millisecond)
				continue
			}
			n := copy(dst[got:], d[:min(len(d), 64<<10)])
			r.Release(n)
			got += n
		}
	}
	wg.Wait()
}

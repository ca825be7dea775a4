package ps

import (
	"context"
	"testing"
)

// TestStaleness: a push's staleness is the number of updates the center
// applied since its worker last read it, measured the same way over the
// connection and through a blob store (where the version check is the
// read).
func TestStaleness(t *testing.T) {
	const n = 10
	for _, tc := range []struct {
		name  string
		store bool
	}{{"direct", false}, {"store", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var scfg ServerConfig
			var ccfg ClientConfig
			if tc.store {
				st := newMemStore()
				scfg.Store, ccfg.Store = st, st
			}
			srv, _ := serve(t, newLocal(t, 3, weights(n, 0)), scfg)
			cs := []*Client{dial(t, srv.Addr(), ccfg), dial(t, srv.Addr(), ccfg), dial(t, srv.Addr(), ccfg)}
			ctx := context.Background()
			buf, delta := make([]float32, n), weights(n, 1)
			pull := func(w int) {
				if err := cs[w].Pull(ctx, w, buf); err != nil {
					t.Fatal(err)
				}
			}
			push := func(w int) {
				if err := cs[w].Push(ctx, w, delta); err != nil {
					t.Fatal(err)
				}
			}
			for w := range cs {
				if _, err := cs[w].Join(ctx, w); err != nil {
					t.Fatal(err)
				}
			}
			// The updates counter u, and each measured push's
			// staleness (u at the push less u at its worker's read):
			push(0) // never read: not measured; u = 1
			pull(0) // read at 1
			pull(1) // read at 1
			pull(2) // read at 1
			push(0) // 0; u = 2
			push(1) // 1; u = 3
			push(2) // 2; u = 4
			pull(0) // read at 4
			push(0) // 0; u = 5
			pull(1) // read at 5
			push(2) // 4; u = 6
			push(2) // 5: its own last push counts; u = 7
			push(1) // 2; u = 8
			// An observer's read is nobody's.
			if err := cs[0].Pull(ctx, -1, buf); err != nil {
				t.Fatal(err)
			}
			got := srv.Staleness()
			want := map[int]int64{0: 2, 1: 1, 2: 2, 4: 1, 5: 1}
			if got.Pushes != 7 {
				t.Errorf("%d pushes measured, want 7", got.Pushes)
			}
			for k, c := range got.Hist {
				if c != want[k] {
					t.Errorf("%d pushes of staleness %d, want %d (histogram %v)", c, k, want[k], got.Hist)
				}
			}
			if got.Max != 5 || got.Sum != 14 || got.Mean() != 2 {
				t.Errorf("max %d, sum %d, mean %v; want 5, 14, 2", got.Max, got.Sum, got.Mean())
			}
		})
	}
}

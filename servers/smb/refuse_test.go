package smb

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCenterRefusesDivergedPush: a worker's non-finite (or, with a bound,
// too large) increment never reaches W_g; the worker is told, by name,
// and leaves, so that it holds back no one's SSP wait; the others go on.
func TestCenterRefusesDivergedPush(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			b, _ := be.new(t)
			w0 := []float32{1, 2, 3}
			cfg := CenterConfig{Workers: 3, N: 3, Weights: w0, MaxUpdateNorm: 100}
			cs := []*Center{newCenter(t, b, cfg), newCenter(t, b, cfg), newCenter(t, b, cfg)}
			for w, c := range cs {
				if _, err := c.Join(ctx, w); err != nil {
					t.Fatal(err)
				}
			}
			for _, tc := range []struct {
				delta []float32
				want  string
			}{
				{[]float32{0, float32(math.NaN()), 0}, "center refused worker 2's update: non-finite value NaN at index 1"},
				{[]float32{float32(math.Inf(-1)), 0, 0}, "non-finite value -Inf at index 0"},
				{[]float32{0, 0, 1000}, "L2 norm 1000, above the bound 100"},
			} {
				err := cs[2].Push(ctx, 2, tc.delta)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("push %v: %v, want an error with %q", tc.delta, err, tc.want)
				}
			}
			got := make([]float32, 3)
			if err := cs[0].Pull(ctx, 0, got); err != nil || !slices.Equal(got, w0) {
				t.Fatalf("W_g = %v (%v) after refused pushes, want %v untouched", got, err, w0)
			}
			// Worker 2 left: workers 0 and 1 run on under SSP s=0, which
			// would wait for it forever had it not.
			errs := make(chan error, 2)
			for w := range 2 {
				go func() {
					for it := range 3 {
						if err := cs[w].Push(ctx, w, []float32{1, 0, 0}); err != nil {
							errs <- err
							return
						}
						if _, err := cs[w].Clock(ctx, w, it, 0); err != nil {
							errs <- err
							return
						}
					}
					errs <- nil
				}()
			}
			for range 2 {
				select {
				case err := <-errs:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the healthy workers still wait for the refused one after 10 s")
				}
			}
			if err := cs[1].Pull(ctx, 1, got); err != nil || got[0] != 7 {
				t.Fatalf("W_g = %v (%v) after the healthy workers' 6 pushes, want 7 in the first place", got, err)
			}
		})
	}
}

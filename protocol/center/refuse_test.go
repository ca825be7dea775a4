package center

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLocalRefusesDivergingWorker: one worker that diverges (its deltas
// turn NaN at its third iteration) does not poison the center: its push
// is refused with an error naming it, the log names it, it leaves, and
// the others train on to the end under SSP (which would otherwise wait
// for it) with finite weights.
func TestLocalRefusesDivergingWorker(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	l := newLocal(t, Config{Workers: 3, Weights: []float32{0, 0, 0, 0},
		Log: func(err error) { mu.Lock(); logged = append(logged, err.Error()); mu.Unlock() }})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const iters = 20
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = func() error {
				if _, err := l.Join(ctx, w); err != nil {
					return err
				}
				x := make([]float32, 4)
				for it := range iters {
					if err := l.Pull(ctx, w, x); err != nil {
						return err
					}
					d := []float32{0.01, -0.01, 0.02, 0}
					if w == 2 && it == 2 {
						d[3] = float32(math.NaN())
					}
					if err := l.Push(ctx, w, d); err != nil {
						return err
					}
					if _, err := l.Clock(ctx, w, it, 1); err != nil {
						return err
					}
				}
				return l.Leave(ctx, w, nil)
			}()
		}()
	}
	wg.Wait()
	want := "center refused worker 2's update: non-finite value NaN at index 3 of its push (4 values)"
	if errs[2] == nil || !strings.Contains(errs[2].Error(), want) {
		t.Fatalf("worker 2: %v, want %q", errs[2], want)
	}
	for w := range 2 {
		if errs[w] != nil {
			t.Fatalf("worker %d did not train on: %v", w, errs[w])
		}
	}
	if c := l.Clocks(); c[0] != iters || c[1] != iters || c[2] != 2 {
		t.Errorf("clocks %v, want [%d %d 2]", c, iters, iters)
	}
	for i, v := range l.Weights() {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("center weight %d is %v: the refused push was applied", i, v)
		}
	}
	if st := l.Stats(); st.Refused != 1 || st.Pushes != 2*iters+2 {
		t.Errorf("stats %+v, want 1 refused and %d pushes", st, 2*iters+2)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 1 || !strings.Contains(logged[0], "worker 2") {
		t.Errorf("log %q, want one line naming worker 2", logged)
	}
}

// TestLocalRefusals: every update the center takes is inspected: pushes,
// exchanges under each policy, and rounds; with MaxUpdateNorm the
// exploding ones too. A refused update changes nothing.
func TestLocalRefusals(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	update := func(w, g []float32, _ int) { addTo(w, g) }
	cases := []struct {
		name string
		cfg  Config
		do   func(l *Local) error
		want string // "" for accepted
	}{
		{"push nan", Config{}, func(l *Local) error { return l.Push(context.Background(), 1, []float32{nan, 0}) },
			"center refused worker 1's update: non-finite value NaN at index 0 of its push"},
		{"push inf", Config{}, func(l *Local) error { return l.Push(context.Background(), 0, []float32{0, inf}) },
			"worker 0's update: non-finite value +Inf at index 1"},
		{"push large", Config{MaxUpdateNorm: 4}, func(l *Local) error { return l.Push(context.Background(), 1, []float32{3, 4.1}) },
			"its push has L2 norm 5.08, above the bound 4"},
		{"push within", Config{MaxUpdateNorm: 5}, func(l *Local) error { return l.Push(context.Background(), 1, []float32{3, 4}) }, ""},
		{"elastic nan fcfs", Config{}, func(l *Local) error { return l.Elastic(context.Background(), 1, []float32{nan, 0}, 0.5) },
			"non-finite value NaN at index 0 of its weights"},
		{"elastic nan round-robin", Config{Policy: RoundRobin}, func(l *Local) error {
			return l.Elastic(context.Background(), 0, []float32{0, nan}, 0.5)
		}, "worker 0's update: non-finite value NaN at index 1 of its weights"},
		{"elastic nan hogwild", Config{Policy: Hogwild}, func(l *Local) error {
			return l.Elastic(context.Background(), 1, []float32{inf, 0}, 0.5)
		}, "non-finite value +Inf"},
		{"elastic large", Config{MaxUpdateNorm: 1}, func(l *Local) error {
			return l.Elastic(context.Background(), 1, []float32{10, 1}, 0.5)
		}, "moves the center by L2 norm 4.528, above the bound 1"},
		{"round nan", Config{Update: update}, func(l *Local) error {
			_, _, err := l.Round(context.Background(), 1, 0, []float32{0, nan})
			return err
		}, "worker 1's update: non-finite value NaN at index 1 of its round's gradients"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Workers, cfg.Weights = 2, []float32{1, 2}
			l := newLocal(t, cfg)
			err := tc.do(l)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error with %q", err, tc.want)
			}
			if w := l.Weights(); w[0] != 1 || w[1] != 2 {
				t.Errorf("center %v after a refused update, want [1 2]", w)
			}
			if st := l.Stats(); st.Refused != 1 {
				t.Errorf("%d refused counted", st.Refused)
			}
		})
	}
}

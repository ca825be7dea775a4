package solver

import (
	"math"
	"testing"
)

func TestLR(t *testing.T) {
	type at struct {
		iter int
		want float64
	}
	tests := []struct {
		name string
		cfg  Config
		at   []at
	}{
		{"fixed", Config{BaseLR: 0.01, LRPolicy: "fixed"},
			[]at{{0, 0.01}, {1, 0.01}, {123456, 0.01}}},
		{"step", Config{BaseLR: 0.1, LRPolicy: "step", Gamma: 0.5, StepSize: 3},
			[]at{{0, 0.1}, {2, 0.1}, {3, 0.05}, {5, 0.05}, {6, 0.025}, {10, 0.0125}}},
		{"multistep", Config{BaseLR: 1, LRPolicy: "multistep", Gamma: 0.1, StepValues: []int{2, 5}},
			[]at{{0, 1}, {1, 1}, {2, 0.1}, {4, 0.1}, {5, 0.01}, {100, 0.01}}},
		{"multistep without stepvalue", Config{BaseLR: 1, LRPolicy: "multistep", Gamma: 0.1},
			[]at{{0, 1}, {1, 1}, {1000, 1}}},
		{"multistep adjacent", Config{BaseLR: 1, LRPolicy: "multistep", Gamma: 0.5, StepValues: []int{0, 1, 2}},
			[]at{{0, 0.5}, {1, 0.25}, {2, 0.125}, {3, 0.125}}},
		{"exp", Config{BaseLR: 2, LRPolicy: "exp", Gamma: 0.5},
			[]at{{0, 2}, {1, 1}, {3, 0.25}}},
		// lenet_solver: (1 + 1e-4·iter)^-0.75; 2^-0.75 and 4^-0.75 = 2^-1.5.
		{"inv", Config{BaseLR: 0.01, LRPolicy: "inv", Gamma: 1e-4, Power: 0.75},
			[]at{{0, 0.01}, {10000, 0.01 * 0.5946035575013605}, {30000, 0.01 / (2 * math.Sqrt2)}}},
		{"poly", Config{BaseLR: 1, LRPolicy: "poly", Power: 2, MaxIter: 10},
			[]at{{0, 1}, {5, 0.25}, {9, 0.01}, {10, 0}, {12, 0}}},
		{"poly linear", Config{BaseLR: 0.5, LRPolicy: "poly", Power: 1, MaxIter: 10},
			[]at{{4, 0.3}, {10, 0}}},
		{"sigmoid", Config{BaseLR: 1, LRPolicy: "sigmoid", Gamma: math.Log(3), StepSize: 5},
			[]at{{4, 0.25}, {5, 0.5}, {6, 0.75}}},
		{"warmup fixed", Config{BaseLR: 0.4, LRPolicy: "fixed", WarmupIters: 4},
			[]at{{0, 0.1}, {1, 0.2}, {2, 0.3}, {3, 0.4}, {10, 0.4}}},
		{"warmup step", Config{BaseLR: 1, LRPolicy: "step", Gamma: 0.5, StepSize: 2, WarmupIters: 4},
			[]at{{0, 0.25}, {1, 0.5}, {2, 0.375}, {3, 0.5}, {4, 0.25}}},
		{"warmup 1 is off", Config{BaseLR: 0.3, LRPolicy: "fixed", WarmupIters: 1},
			[]at{{0, 0.3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.cfg, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range tt.at {
				got := s.LR(a.iter)
				if math.Abs(got-a.want) > 1e-15*math.Max(1, math.Abs(a.want)) {
					t.Errorf("LR(%d) = %.17g, want %.17g", a.iter, got, a.want)
				}
			}
		})
	}
}

func TestLRNegativeIterPanics(t *testing.T) {
	s, err := New(Config{BaseLR: 1, LRPolicy: "fixed"}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustPanic(t, "solver: LR at negative", func() { s.LR(-1) })
}

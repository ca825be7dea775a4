package solver_test

import (
	"fmt"

	"dsgd/engine/solver"
)

// One weight at lr_mult 1 and one bias at lr_mult 2, Caffe's SGD with
// momentum: v = 0.9·v + lr·lr_mult·g; w −= v.
func ExampleSolver_Step() {
	cfg := solver.Config{Type: "SGD", BaseLR: 0.1, Momentum: 0.9, LRPolicy: "fixed"}
	s, err := solver.New(cfg, 2, []solver.Segment{
		{Off: 0, Len: 1, LRMult: 1, DecayMult: 1},
		{Off: 1, Len: 1, LRMult: 2, DecayMult: 0},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	w := []float32{1, 0.5}
	g := []float32{2, 1}
	for iter := range 2 {
		s.Step(iter, w, g)
		fmt.Printf("iter %d: lr %.2f w %.4f\n", iter, s.LR(iter), w)
	}
	// Output:
	// iter 0: lr 0.10 w [0.8000 0.3000]
	// iter 1: lr 0.10 w [0.4200 -0.0800]
}

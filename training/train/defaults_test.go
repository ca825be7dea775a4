package train

import "testing"

// TestPlainSGD: momentum mu becomes 0 with base_lr / (1 - mu), the
// solver's steady-state step; no momentum leaves base_lr alone.
func TestPlainSGD(t *testing.T) {
	var c Config
	lr, m := 0.01, 0.9
	want := lr / (1 - m)
	c.Solver.BaseLR, c.Solver.Momentum = lr, m
	if mu := c.PlainSGD(); mu != m || c.Solver.Momentum != 0 || c.Solver.BaseLR != want {
		t.Errorf("PlainSGD() = %v: momentum %v, base_lr %v; want %v, 0, %v", mu, c.Solver.Momentum, c.Solver.BaseLR, m, want)
	}
	c.Solver.BaseLR, c.Solver.Momentum = 0.01, 0
	if mu := c.PlainSGD(); mu != 0 || c.Solver.BaseLR != 0.01 {
		t.Errorf("PlainSGD() without momentum = %v, base_lr %v; want 0, 0.01", mu, c.Solver.BaseLR)
	}
}

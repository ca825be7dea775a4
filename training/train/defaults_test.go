package train

import (
	"strings"
	"testing"
)

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

// TestScaleLR: linear multiplies base_lr by the workers, inverse
// divides by them, none leaves it; another rule is refused by name.
func TestScaleLR(t *testing.T) {
	for _, tc := range []struct {
		rule string
		want float64
	}{{"none", 0.1}, {"linear", 0.4}, {"inverse", 0.025}} {
		var c Config
		c.Workers, c.Solver.BaseLR = 4, 0.1
		if err := c.ScaleLR(tc.rule); err != nil || c.Solver.BaseLR != tc.want {
			t.Errorf("ScaleLR(%q): base_lr %v, %v; want %v", tc.rule, c.Solver.BaseLR, err, tc.want)
		}
	}
	var c Config
	if err := c.ScaleLR("sqrt"); err == nil || !strings.Contains(err.Error(), `Config.ScaleLR rule "sqrt"`) {
		t.Errorf("ScaleLR(sqrt) = %v, want a refusal naming the rule", err)
	}
}

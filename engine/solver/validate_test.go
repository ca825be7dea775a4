package solver

import (
	"strings"
	"testing"
)

func TestValidateDefaults(t *testing.T) {
	c := Config{BaseLR: 0.01, LRPolicy: "fixed"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want := Config{Type: "SGD", BaseLR: 0.01, LRPolicy: "fixed", Momentum2: 0.999, Delta: 1e-8,
		RMSDecay: 0.99, Regularization: "L2"}
	if c.Type != want.Type || c.Momentum2 != want.Momentum2 || c.Delta != want.Delta ||
		c.RMSDecay != want.RMSDecay || c.Regularization != want.Regularization {
		t.Errorf("defaults: got %+v, want %+v", c, want)
	}
	// Set values are kept.
	c = Config{Type: "Adam", BaseLR: 0.001, LRPolicy: "fixed", Momentum: 0.9, Momentum2: 0.99,
		Delta: 1e-6, RMSDecay: 0.5, Regularization: "L1"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Momentum2 != 0.99 || c.Delta != 1e-6 || c.RMSDecay != 0.5 || c.Regularization != "L1" {
		t.Errorf("set values changed: %+v", c)
	}
}

func TestValidate(t *testing.T) {
	base := func(f func(*Config)) Config {
		c := Config{BaseLR: 0.01, LRPolicy: "fixed", Momentum: 0.9}
		f(&c)
		return c
	}
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; "" means valid
	}{
		{"ok sgd", base(func(c *Config) {}), ""},
		{"ok nesterov", base(func(c *Config) { c.Type = "Nesterov" }), ""},
		{"ok adagrad", base(func(c *Config) { c.Type = "AdaGrad"; c.Momentum = 0 }), ""},
		{"ok rmsprop", base(func(c *Config) { c.Type = "RMSProp"; c.Momentum = 0 }), ""},
		{"ok adam", base(func(c *Config) { c.Type = "Adam" }), ""},
		{"ok step", base(func(c *Config) { c.LRPolicy = "step"; c.StepSize = 10; c.Gamma = 0.1 }), ""},
		{"ok multistep", base(func(c *Config) { c.LRPolicy = "multistep"; c.StepValues = []int{0, 5} }), ""},
		{"ok poly", base(func(c *Config) { c.LRPolicy = "poly"; c.MaxIter = 5; c.Power = 0.5 }), ""},
		{"ok sigmoid negative gamma", base(func(c *Config) { c.LRPolicy = "sigmoid"; c.Gamma = -1 }), ""},
		{"ok clip", base(func(c *Config) { c.ClipGradients = 10 }), ""},
		{"base_lr zero", base(func(c *Config) { c.BaseLR = 0 }), "base_lr must be > 0"},
		{"base_lr negative", base(func(c *Config) { c.BaseLR = -1 }), "base_lr must be > 0"},
		{"base_lr NaN", base(func(c *Config) { c.BaseLR = nan() }), "base_lr NaN is not a finite"},
		{"unknown type", base(func(c *Config) { c.Type = "Adadelta" }), `type "Adadelta" is unknown`},
		{"type is case-sensitive", base(func(c *Config) { c.Type = "sgd" }), `type "sgd" is unknown`},
		{"missing policy", base(func(c *Config) { c.LRPolicy = "" }), "lr_policy is missing"},
		{"unknown policy", base(func(c *Config) { c.LRPolicy = "cosine" }), `lr_policy "cosine" is unknown`},
		{"step no stepsize", base(func(c *Config) { c.LRPolicy = "step" }), `lr_policy "step" needs stepsize > 0`},
		{"step negative gamma", base(func(c *Config) { c.LRPolicy = "step"; c.StepSize = 1; c.Gamma = -0.1 }),
			`lr_policy "step" needs gamma >= 0`},
		{"exp negative gamma", base(func(c *Config) { c.LRPolicy = "exp"; c.Gamma = -1 }), `"exp" needs gamma >= 0`},
		{"inv negative power", base(func(c *Config) { c.LRPolicy = "inv"; c.Power = -1 }), `"inv" needs power >= 0`},
		{"multistep empty", base(func(c *Config) { c.LRPolicy = "multistep" }), ""},
		{"multistep equal", base(func(c *Config) { c.LRPolicy = "multistep"; c.StepValues = []int{5, 5} }),
			"stepvalue must increase strictly (stepvalue 1 is 5 after 5)"},
		{"multistep decreasing", base(func(c *Config) { c.LRPolicy = "multistep"; c.StepValues = []int{5, 9, 3} }),
			"stepvalue 2 is 3 after 9"},
		{"multistep negative", base(func(c *Config) { c.LRPolicy = "multistep"; c.StepValues = []int{-1} }),
			"stepvalue 0 must be >= 0"},
		{"poly no max_iter", base(func(c *Config) { c.LRPolicy = "poly"; c.Power = 1 }), `lr_policy "poly" needs max_iter > 0`},
		{"poly negative power", base(func(c *Config) { c.LRPolicy = "poly"; c.MaxIter = 3; c.Power = -1 }),
			`"poly" needs power >= 0`},
		{"momentum 1", base(func(c *Config) { c.Momentum = 1 }), "momentum 1 for type \"SGD\" must lie in [0, 1)"},
		{"momentum negative", base(func(c *Config) { c.Type = "Nesterov"; c.Momentum = -0.1 }), "momentum -0.1"},
		{"adagrad momentum", base(func(c *Config) { c.Type = "AdaGrad" }), `momentum cannot be used with type "AdaGrad"`},
		{"rmsprop momentum", base(func(c *Config) { c.Type = "RMSProp" }), `momentum cannot be used with type "RMSProp"`},
		{"rmsprop decay", base(func(c *Config) { c.Type = "RMSProp"; c.Momentum = 0; c.RMSDecay = 1 }), "rms_decay 1"},
		{"adam momentum2", base(func(c *Config) { c.Type = "Adam"; c.Momentum2 = 1.5 }), "momentum2 1.5"},
		{"adam delta", base(func(c *Config) { c.Type = "Adam"; c.Delta = -1 }), "delta must be > 0"},
		{"weight decay", base(func(c *Config) { c.WeightDecay = -1e-4 }), "weight_decay must be >= 0"},
		{"regularization", base(func(c *Config) { c.Regularization = "L3" }), `regularization_type "L3" is unknown`},
		{"clip inf", base(func(c *Config) { c.ClipGradients = inf() }), "clip_gradients +Inf is not a finite"},
		{"negative stepsize", base(func(c *Config) { c.LRPolicy = "sigmoid"; c.StepSize = -1 }), "stepsize must be >= 0"},
		{"negative max_iter", base(func(c *Config) { c.MaxIter = -1 }), "max_iter must be >= 0"},
		{"negative warmup", base(func(c *Config) { c.WarmupIters = -1 }), "warmup_iters must be >= 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("no error, want %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("error %q does not contain %q", err, tt.want)
			case err != nil && !strings.HasPrefix(err.Error(), "solver: "):
				t.Fatalf("error %q lacks the package prefix", err)
			}
			// New rejects exactly what Validate rejects.
			if _, nerr := New(tt.cfg, 0, nil); (nerr == nil) != (err == nil) {
				t.Fatalf("New error %v, Validate error %v", nerr, err)
			}
		})
	}
}

func TestValidateReportsAll(t *testing.T) {
	c := Config{BaseLR: -1, LRPolicy: "step", Type: "Bogus"}
	err := c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"base_lr", `type "Bogus"`, "stepsize"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

package train

import (
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/pylayer"
)

// TestAtomParallelPython: a net with a Python layer keeps its atoms on
// the serial path (the layer's object may carry state from batch to
// batch, which one instance per replica would repeat), as LSTM's does;
// the same net without it may use replicas.
func TestAtomParallelPython(t *testing.T) {
	ip := model.LayerSpec{Name: "ip", Bottom: []string{"x"}, Top: []string{"y"}, Config: &layers.InnerProductConfig{NumOutput: 2}}
	py := model.LayerSpec{Name: "data", Top: []string{"x"}, Config: &pylayer.Config{Module: "m", Layer: "L"}}
	for _, c := range []struct {
		name string
		spec model.Spec
		want bool
	}{
		{"plain", model.Spec{Inputs: []string{"x"}, Layers: []model.LayerSpec{ip}}, true},
		{"python", model.Spec{Layers: []model.LayerSpec{py, ip}}, false},
	} {
		if got := atomParallel(c.spec); got != c.want {
			t.Errorf("%s: atomParallel = %v, want %v", c.name, got, c.want)
		}
	}
}

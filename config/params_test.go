package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"dsgd/nn/layers"
)

// parseOne parses net(layer) and returns its one compute layer's config in
// phase p, with the net's warnings.
func parseOne(t *testing.T, layer string, p layers.Phase) (layers.Config, []string) {
	t.Helper()
	n, err := ParseNet("f.prototxt", []byte(net(layer)))
	if err != nil {
		t.Fatal(err)
	}
	pn := mustPhase(t, n, p)
	if len(pn.Spec.Layers) != 1 {
		t.Fatalf("%d layers", len(pn.Spec.Layers))
	}
	return pn.Spec.Layers[0].Config, n.Warnings
}

// TestParamFields checks that the layer parameters of issue 22 decode
// (Eltwise's stable_prod_grad and MAX coeff, the positive_unitball
// filler, Pooling's STOCHASTIC, round_mode and InfogainLoss's axis).
func TestParamFields(t *testing.T) {
	tests := []struct {
		name, layer string
		want        layers.Config
		warn        string // a warning that must be given; none when empty
	}{
		{"eltwise stable default", `layer { name: "e" type: "Eltwise" bottom: "data" bottom: "data" top: "e" eltwise_param { operation: PROD } }`,
			&layers.EltwiseConfig{Operation: layers.EltwiseProd}, ""},
		{"eltwise stable true", `layer { name: "e" type: "Eltwise" bottom: "data" bottom: "data" top: "e" eltwise_param { operation: PROD stable_prod_grad: true } }`,
			&layers.EltwiseConfig{Operation: layers.EltwiseProd}, ""},
		{"eltwise unstable", `layer { name: "e" type: "Eltwise" bottom: "data" bottom: "data" top: "e" eltwise_param { operation: PROD stable_prod_grad: false } }`,
			&layers.EltwiseConfig{Operation: layers.EltwiseProd, UnstableProdGrad: true}, ""},
		{"eltwise max coeff", `layer { name: "e" type: "Eltwise" bottom: "data" bottom: "data" top: "e" eltwise_param { operation: MAX coeff: 2 coeff: 3 } }`,
			&layers.EltwiseConfig{Operation: layers.EltwiseMax},
			"f.prototxt:7:105: ignoring coeff in eltwise_param of layer 'e': operation MAX does not use it (nor does Caffe)"},
		{"positive_unitball", `layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 3 weight_filler { type: "positive_unitball" } } }`,
			&layers.InnerProductConfig{NumOutput: 3, Axis: 1, BiasTerm: true,
				WeightFiller: layers.Filler{Type: layers.FillPositiveUnitball, Max: 1, Std: 1}, BiasFiller: constant(0)}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, warnings := parseOne(t, tc.layer, layers.Train)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("config\n%#v\nwant\n%#v", got, tc.want)
			}
			switch {
			case tc.warn == "" && len(warnings) != 0:
				t.Errorf("warnings %q, want none", warnings)
			case tc.warn != "" && !slices.Contains(warnings, tc.warn):
				t.Errorf("warnings %q, want %q", warnings, tc.warn)
			}
		})
	}
}

// TestParamErrors checks that bad values of those parameters are refused
// naming their line and column.
func TestParamErrors(t *testing.T) {
	tests := []struct {
		name, layer, want string
	}{
		{"eltwise stable_prod_grad value", `layer { name: "e" type: "Eltwise" bottom: "data" bottom: "data" top: "e"
  eltwise_param { operation: PROD stable_prod_grad: 0.5 } }`,
			"f.prototxt:8:53: stable_prod_grad in eltwise_param of layer 'e': expected true or false"},
		{"eltwise max coeff count", `layer { name: "e" type: "Eltwise" bottom: "data" bottom: "data" top: "e"
  eltwise_param { operation: MAX coeff: 1 } }`,
			"f.prototxt:8:34: eltwise_param of layer 'e' has 1 coeff for 2 bottoms"},
		{"positive_unitball sparse", `layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 3 weight_filler { type: "positive_unitball" sparse: 2 } } }`,
			"f.prototxt:8:81: unsupported field 'sparse' in weight_filler of inner_product_param of layer 'ip'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseNet("f.prototxt", []byte(net(tc.layer)))
			if err == nil {
				if n, err2 := ParseNet("f.prototxt", []byte(net(tc.layer))); err2 == nil {
					_, err = n.Phase(layers.Train)
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

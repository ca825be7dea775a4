package caffedef

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"dsgd/engine/layers"
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
		{"pool stochastic", `layer { name: "p" type: "Pooling" bottom: "data" top: "p" pooling_param { pool: STOCHASTIC kernel_size: 3 stride: 2 } }`,
			&layers.PoolingConfig{Method: layers.PoolStochastic, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}, ""},
		{"pool round floor", `layer { name: "p" type: "Pooling" bottom: "data" top: "p" pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 round_mode: FLOOR } }`,
			&layers.PoolingConfig{Method: layers.PoolAve, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, RoundFloor: true}, ""},
		{"pool round ceil", `layer { name: "p" type: "Pooling" bottom: "data" top: "p" pooling_param { kernel_size: 2 round_mode: CEIL } }`,
			&layers.PoolingConfig{Method: layers.PoolMax, KernelH: 2, KernelW: 2, StrideH: 1, StrideW: 1}, ""},
		{"pool mask top", `layer { name: "p" type: "Pooling" bottom: "data" top: "p" top: "mask" pooling_param { kernel_size: 2 } }`,
			&layers.PoolingConfig{Method: layers.PoolMax, KernelH: 2, KernelW: 2, StrideH: 1, StrideW: 1}, ""},
		{"infogain prob top", `layer { name: "ig" type: "InfogainLoss" bottom: "data" bottom: "label" bottom: "data" top: "loss" top: "prob" infogain_loss_param { axis: 2 } }`,
			&layers.InfogainLossConfig{Axis: 2, Normalization: layers.NormValid}, ""},
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
		{"pool ave mask top", `layer { name: "p" type: "Pooling" bottom: "data" top: "p" top: "mask"
  pooling_param { pool: AVE kernel_size: 2 } }`,
			"f.prototxt:7:1: layer 'p' has 2 tops; only MAX pooling has a second (the argmax mask)"},
		{"pool round_mode value", `layer { name: "p" type: "Pooling" bottom: "data" top: "p"
  pooling_param { kernel_size: 2 round_mode: 1 } }`,
			"f.prototxt:8:46: round_mode in pooling_param of layer 'p': expected one of CEIL, FLOOR"},
		{"pool method value", `layer { name: "p" type: "Pooling" bottom: "data" top: "p"
  pooling_param { pool: STOCH kernel_size: 2 } }`,
			"f.prototxt:8:25: pool in pooling_param of layer 'p': unknown value STOCH; expected one of MAX, AVE, STOCHASTIC"},
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

package caffedef

import (
	"strings"
	"testing"

	"dsgd/engine/layers"
)

// TestUnbuildableLayer: a layer of a type dsgd does not know is read, as
// Caffe reads it (Caffe filters a net by its rules before it looks a type
// up), and refused, naming the layer, its line, the phase and the type,
// only by a net whose phase, stages and level include it. (Python layers,
// this test's example before dsgd ran them, build: python_layer_test.go.)
func TestUnbuildableLayer(t *testing.T) {
	// HED's train_val shape: the TRAIN data come from a fork's data layer
	// dsgd does not know, the TEST data from a Data layer.
	const fcn = `name: "fcn"
layer { name: "data" type: "ImageLabelmapData" top: "data" top: "label" include { phase: TRAIN }
  image_data_param { source: "train_pair.lst" batch_size: 1 } }
layer { name: "data" type: "Data" top: "data" top: "label" include { phase: TEST }
  data_param { source: "val_lmdb" batch_size: 1 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" }
`
	const forkErr = `f.prototxt:2:1: layer 'data' (TRAIN phase) has unknown type 'ImageLabelmapData', a layer of a Caffe fork`
	unknown := func(rules string) string {
		return net(`layer { name: "u" type: "Frobnicate" bottom: "data" top: "u" frobnicate_param { x: 1 } ` + rules + ` }`)
	}
	const unknownErr = "f.prototxt:7:1: layer 'u' (%s phase) has unknown type 'Frobnicate'; dsgd supports Data, ImageData, HDF5Data, DummyData, Input, MemoryData, AbsVal, Accuracy, ArgMax"
	viz := NetState{Stages: []string{"viz"}}
	tests := []struct {
		name, src string
		phase     layers.Phase
		state     NetState
		want      string // "": the net builds
	}{
		{"test net", fcn, layers.Test, NetState{}, ""},
		{"train net", fcn, layers.Train, NetState{}, forkErr},
		{"unknown everywhere", unknown(""), layers.Train, NetState{}, strings.Replace(unknownErr, "%s", "TRAIN", 1)},
		{"unknown in TEST only, TRAIN", unknown("include { phase: TEST }"), layers.Train, NetState{}, ""},
		{"unknown in TEST only, TEST", unknown("include { phase: TEST }"), layers.Test, NetState{}, strings.Replace(unknownErr, "%s", "TEST", 1)},
		{"unknown by stage, without it", unknown(`include { stage: "viz" }`), layers.Train, NetState{}, ""},
		{"unknown by stage, with it", unknown(`include { stage: "viz" }`), layers.Train, viz, strings.Replace(unknownErr, "%s", "TRAIN", 1)},
		{"unknown excluded by stage", unknown(`exclude { stage: "viz" }`), layers.Test, viz, ""},
		{"unknown by level, below", unknown(`include { min_level: 1 }`), layers.Test, NetState{}, ""},
		{"unknown by level, at it", unknown(`include { min_level: 1 }`), layers.Test, NetState{Level: 1}, strings.Replace(unknownErr, "%s", "TEST", 1)},
		{"fork type", net(`layer { name: "p" type: "ImageLabelmapData" top: "x" top: "y" }`), layers.Train, NetState{},
			"f.prototxt:7:1: layer 'p' (TRAIN phase) has unknown type 'ImageLabelmapData', a layer of a Caffe fork (HED's, s9xie/hed), not of BVLC Caffe: write images and label maps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := ParseNet("f.prototxt", []byte(tt.src))
			if err != nil {
				t.Fatalf("ParseNet: %v (Caffe reads the net)", err)
			}
			pn, err := n.PhaseState(tt.phase, tt.state)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("PhaseState: %v", err)
			case tt.want == "":
				for _, l := range pn.Spec.Layers {
					if l.Config == nil {
						t.Errorf("layer %q has no config", l.Name)
					}
				}
			case err == nil:
				t.Fatalf("PhaseState built the net, want error %q", tt.want)
			case !strings.Contains(err.Error(), tt.want):
				t.Fatalf("error %q\nwant %q", err, tt.want)
			}
		})
	}
}

// TestUnbuildableLayerStillChecked: the parts of an unbuildable layer that
// decide whether a net includes it (its name, type and rules) are still
// checked when the net is read.
func TestUnbuildableLayerStillChecked(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"bad rule", net(`layer { name: "u" type: "Frobnicate" include { phase: VAL } }`),
			"f.prototxt:7:55: phase in include of layer 'u': unknown value VAL"},
		{"both rules", net(`layer { name: "py" type: "Python" include { phase: TRAIN } exclude { phase: TEST } }`),
			"f.prototxt:7:1: layer 'py' has both include and exclude rules"},
		{"type not string", net(`layer { name: "u" type: Python }`), "f.prototxt:7:25: type in layer 'u': expected a quoted string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseNet("f.prototxt", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

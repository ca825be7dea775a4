package caffedef

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"dsgd/data"
	"dsgd/engine/layers"
	"dsgd/engine/model"
)

// A real V1 file (BVLC/caffe's CaffeNet train_val of 2014): V1 layers, old
// transformation fields in data_param, a loss layer without a top.
const v1CaffeNet = "testdata/caffe/v1_caffenet_train_val.prototxt"

func TestV1CaffeNet(t *testing.T) {
	n, err := LoadNet(v1CaffeNet)
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Notes) != 1 || !strings.Contains(n.Notes[0], "upgraded from Caffe's V1 net format") {
		t.Errorf("Notes = %q", n.Notes)
	}
	train := mustPhase(t, n, layers.Train)
	wantData := []DataLayer{{
		Name: "data", Type: "Data", Tops: []string{"data", "label"},
		Source: "ilsvrc12_train_leveldb", BatchSize: 256,
		Transform:    data.TransformConfig{Scale: 1, MeanFile: "../../data/ilsvrc12/imagenet_mean.binaryproto", CropSize: 227, Mirror: true},
		DataSettings: DataSettings{Backend: "LEVELDB"},
		Pos:          v1CaffeNet + ":2:1",
	}}
	if !reflect.DeepEqual(train.Data, wantData) {
		t.Errorf("train Data = %+v\nwant %+v", train.Data, wantData)
	}
	wantNames := []string{"conv1", "relu1", "pool1", "norm1", "conv2", "relu2", "pool2", "norm2", "conv3", "relu3",
		"conv4", "relu4", "conv5", "relu5", "pool5", "fc6", "relu6", "drop6", "fc7", "relu7", "drop7", "fc8", "loss"}
	if got := layerNames(train.Spec); !slices.Equal(got, wantNames) {
		t.Errorf("train layers %q\nwant %q", got, wantNames)
	}
	conv2 := findLayer(t, train.Spec, "conv2")
	want := model.LayerSpec{
		Name: "conv2", Bottom: []string{"norm1"}, Top: []string{"conv2"},
		Params: []model.ParamSpec{{LRMult: 1, DecayMult: 1, LRSet: true, DecaySet: true}, {LRMult: 2, DecayMult: 0, LRSet: true, DecaySet: true}},
		Config: &layers.ConvolutionConfig{NumOutput: 256, KernelH: 5, KernelW: 5, StrideH: 1, StrideW: 1, PadH: 2, PadW: 2,
			Group: 2, BiasTerm: true, WeightFiller: gaussian(0.01), BiasFiller: constant(1)},
		Pos: conv2.Pos,
	}
	if !reflect.DeepEqual(conv2, want) {
		t.Errorf("conv2 = %+v\nwant %+v", conv2, want)
	}
	if !strings.HasPrefix(conv2.Pos, v1CaffeNet+":") {
		t.Errorf("conv2 position %q does not point into the file", conv2.Pos)
	}
	loss := findLayer(t, train.Spec, "loss")
	if !slices.Equal(loss.Top, []string{"(automatic) loss"}) {
		t.Errorf("loss tops %q: Caffe gives a loss layer without a top one of its own", loss.Top)
	}
	test := mustPhase(t, n, layers.Test)
	if test.Data[0].Transform.Mirror || test.Data[0].BatchSize != 50 {
		t.Errorf("test data %+v", test.Data[0])
	}
	if !slices.Contains(layerNames(test.Spec), "accuracy") || slices.Contains(layerNames(train.Spec), "accuracy") {
		t.Error("accuracy should be in TEST only")
	}
}

// TestUpgradeRoundTrip: the upgraded text reads back to the same net as the
// V1 file upgraded in memory (positions aside), and needs no further
// upgrade.
func TestUpgradeRoundTrip(t *testing.T) {
	src, err := os.ReadFile(v1CaffeNet)
	if err != nil {
		t.Fatal(err)
	}
	out, notes, err := Upgrade(v1CaffeNet, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "26 V1 'layers' became 'layer'") {
		t.Errorf("notes %q", notes)
	}
	for _, s := range []string{"layers {", "blobs_lr", "CONVOLUTION", "weight_decay:"} {
		if strings.Contains(string(out), s) {
			t.Errorf("upgraded text still has %q", s)
		}
	}
	for _, s := range []string{"type: \"Convolution\"", "lr_mult: 2", "decay_mult: 0", "transform_param {"} {
		if !strings.Contains(string(out), s) {
			t.Errorf("upgraded text lacks %q", s)
		}
	}
	a, err := ParseNet("a", src)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseNet("b", out)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Notes) != 0 {
		t.Errorf("the upgraded file still needs an upgrade: %q", b.Notes)
	}
	for _, p := range []layers.Phase{layers.Train, layers.Test} {
		pa, pb := mustPhase(t, a, p), mustPhase(t, b, p)
		clearPos(pa)
		clearPos(pb)
		if !reflect.DeepEqual(pa, pb) {
			t.Errorf("%s phase differs after the text round trip:\n%+v\n%+v", p, pa, pb)
		}
	}
	again, notes, err := Upgrade("b", out)
	if err != nil || len(notes) != 0 || string(again) != string(out) {
		t.Errorf("upgrading the upgraded file: notes %q err %v, changed %v", notes, err, string(again) != string(out))
	}
}

func clearPos(pn *PhaseNet) {
	for i := range pn.Spec.Layers {
		pn.Spec.Layers[i].Pos = ""
	}
	for i := range pn.Data {
		pn.Data[i].Pos = ""
	}
}

func TestUpgradeInputAndSolver(t *testing.T) {
	net := []byte("name: \"n\"\ninput: \"data\"\ninput_dim: 2\ninput_dim: 3\ninput_dim: 8\ninput_dim: 8\n" +
		"layers { name: \"r\" type: RELU bottom: \"data\" top: \"data\" }\n")
	out, notes, err := Upgrade("d.prototxt", net)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 2 {
		t.Errorf("notes %q", notes)
	}
	n, err := ParseNet("u", out)
	if err != nil {
		t.Fatal(err)
	}
	pn := mustPhase(t, n, layers.Train)
	if len(pn.Data) != 1 || pn.Data[0].Type != "Input" || !reflect.DeepEqual(pn.Data[0].Shapes, [][]int{{2, 3, 8, 8}}) {
		t.Errorf("input %+v", pn.Data)
	}
	if !strings.HasPrefix(string(out), "name: \"n\"\nlayer {\n  name: \"input\"\n  type: \"Input\"\n  top: \"data\"\n  input_param {\n    shape {\n") {
		t.Errorf("upgraded text:\n%s", out)
	}

	solver := []byte("net: \"x.prototxt\"\nbase_lr: 0.1\nlr_policy: \"fixed\"\nsolver_type: ADAGRAD\n")
	out, notes, err = Upgrade("s.prototxt", solver)
	if err != nil || len(notes) != 1 || !strings.Contains(string(out), "type: \"AdaGrad\"") || strings.Contains(string(out), "solver_type") {
		t.Errorf("solver upgrade: %q %v\n%s", notes, err, out)
	}
}

func TestUpgradeFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "new.prototxt")
	if _, err := UpgradeFile(v1CaffeNet, out); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadNet(out); err != nil {
		t.Fatal(err)
	}
	// A bad input leaves no output file behind.
	bad := filepath.Join(dir, "bad.prototxt")
	if err := os.WriteFile(bad, []byte("layers { name: \"a\" type: CONV }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(dir, "out2.prototxt")
	_, err := UpgradeFile(bad, out2)
	if err == nil || !strings.Contains(err.Error(), bad+":1:26: unknown V1 layer type CONV") {
		t.Errorf("error %v", err)
	}
	if _, serr := os.Stat(out2); serr == nil {
		t.Error("a failed upgrade wrote its output")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("temporary files left: %d entries", len(ents))
	}
}

func TestPhaseState(t *testing.T) {
	src := `name: "s"
layer { name: "in" type: "Input" top: "data" input_param { shape { dim: 1 dim: 4 } } }
layer { name: "a" type: "ReLU" bottom: "data" top: "a" include { stage: "x" } }
layer { name: "a" type: "TanH" bottom: "data" top: "a" exclude { stage: "x" } }
layer { name: "b" type: "Sigmoid" bottom: "a" top: "b" include { phase: TRAIN min_level: 1 not_stage: "y" } }
layer { name: "c" type: "AbsVal" bottom: "a" top: "c" include { stage: "x" stage: "y" } include { max_level: -1 } }
`
	n, err := ParseNet("s.prototxt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		phase layers.Phase
		st    NetState
		want  []string
		types []string
	}{
		{layers.Train, NetState{}, []string{"a"}, []string{"TanH"}},
		{layers.Train, NetState{Stages: []string{"x"}}, []string{"a"}, []string{"ReLU"}},
		{layers.Train, NetState{Stages: []string{"x"}, Level: 1}, []string{"a", "b"}, []string{"ReLU", "Sigmoid"}},
		{layers.Test, NetState{Stages: []string{"x"}, Level: 1}, []string{"a"}, []string{"ReLU"}},
		{layers.Train, NetState{Stages: []string{"y", "x"}, Level: 1}, []string{"a", "c"}, []string{"ReLU", "AbsVal"}},
		{layers.Test, NetState{Level: -2}, []string{"a", "c"}, []string{"TanH", "AbsVal"}},
	} {
		pn, err := n.PhaseState(tc.phase, tc.st)
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, l := range pn.Spec.Layers {
			types = append(types, l.Config.Type())
		}
		if got := layerNames(pn.Spec); !slices.Equal(got, tc.want) || !slices.Equal(types, tc.types) {
			t.Errorf("%s %+v: layers %q %q, want %q %q", tc.phase, tc.st, got, types, tc.want, tc.types)
		}
	}
}

func TestForceBackward(t *testing.T) {
	n, err := ParseNet("f.prototxt", []byte("force_backward: true\ninput: \"x\" input_dim: [1, 1, 1, 1]"))
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Warnings) != 0 || !n.ForceBackward {
		t.Errorf("Warnings %q, ForceBackward %v", n.Warnings, n.ForceBackward)
	}
	pn, err := n.Phase(layers.Train)
	if err != nil {
		t.Fatal(err)
	}
	if !pn.Spec.ForceBackward {
		t.Error("the phase's Spec lost force_backward")
	}
	if _, err := ParseNet("f.prototxt", []byte("force_backward: 3")); err == nil {
		t.Error("force_backward: 3 accepted")
	}
}

// TestUpgradeSolverInlineNets: `dsgd upgrade` of a solver writes the nets
// it holds inline in the current format too (BVLC/caffe's
// lenet_consolidated_solver.prototxt has a V1 net_param: it was written
// back unchanged and reported "already in the current format").
func TestUpgradeSolverInlineNets(t *testing.T) {
	const file = "testdata/consolidated_v1_solver.prototxt"
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, src  string
		notes      []string
		has, lacks []string
	}{
		{"V1 net_param", string(src),
			[]string{"solver_type (enum) became type (string)", "net_param (at " + file + ":6:1): 4 V1 'layers' became 'layer'"},
			[]string{`type: "SGD"`, `type: "SoftmaxWithLoss"`, "lr_mult: 2", `stage: "test-on-test-set"`},
			[]string{"layers {", "blobs_lr", "INNER_PRODUCT", "solver_type"}},
		{"train and test nets with input fields", `base_lr: 1 lr_policy: "fixed" test_iter: 1
train_net_param { input: "x" input_dim: 1 input_dim: 2 input_dim: 1 input_dim: 1 layers { name: "r" type: RELU bottom: "x" top: "x" } }
test_net_param { input: "x" input_shape { dim: 1 dim: 2 } layer { name: "r" type: "ReLU" bottom: "x" top: "x" } }`,
			[]string{"train_net_param (at " + file + ":2:1): 1 V1 'layers' became 'layer'",
				"train_net_param (at " + file + ":2:1): the net-level input fields became an Input layer",
				"test_net_param (at " + file + ":3:1): the net-level input fields became an Input layer"},
			[]string{`type: "Input"`, `type: "ReLU"`},
			[]string{"input_dim", "input_shape", "layers {"}},
		{"current format", `base_lr: 1 lr_policy: "fixed" net_param { layer { name: "i" type: "Input" top: "x" input_param { shape { dim: 1 } } } }`,
			nil, []string{`type: "Input"`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, notes, err := Upgrade(file, []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(notes, tt.notes) {
				t.Errorf("notes %q\nwant %q", notes, tt.notes)
			}
			for _, s := range tt.has {
				if !strings.Contains(string(out), s) {
					t.Errorf("upgraded text lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tt.lacks {
				if strings.Contains(string(out), s) {
					t.Errorf("upgraded text still has %q:\n%s", s, out)
				}
			}
			// Upgrading again changes nothing.
			if _, again, err := Upgrade(file, out); err != nil || len(again) != 0 {
				t.Errorf("second upgrade: notes %q, error %v", again, err)
			}
		})
	}
}

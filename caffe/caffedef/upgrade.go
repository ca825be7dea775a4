package caffedef

import (
	"fmt"
	"os"
	"slices"
	"strconv"

	"dsgd/caffe/prototxt"
	"dsgd/internal/atomicfile"
)

// This file upgrades old Caffe net files in their parsed tree, before the
// decoder sees them, as Caffe's UpgradeNetAsNeeded does when it loads a
// net: the V1 format (repeated "layers { type: CONVOLUTION blobs_lr: 1 }")
// becomes the current one ("layer { type: "Convolution" param { lr_mult:
// 1 } }"). The rewritten fields keep the positions of the fields they came
// from, so errors still point into the user's file. Upgrade also writes the
// net-level input fields as an Input layer, for `dsgd upgrade`.

// v1Types maps V1LayerParameter.LayerType to the current type names.
var v1Types = map[string]string{
	"NONE": "", "ABSVAL": "AbsVal", "ACCURACY": "Accuracy", "ARGMAX": "ArgMax",
	"BNLL": "BNLL", "CONCAT": "Concat", "CONTRASTIVE_LOSS": "ContrastiveLoss",
	"CONVOLUTION": "Convolution", "DECONVOLUTION": "Deconvolution", "DATA": "Data",
	"DROPOUT": "Dropout", "DUMMY_DATA": "DummyData", "EUCLIDEAN_LOSS": "EuclideanLoss",
	"ELTWISE": "Eltwise", "EXP": "Exp", "FLATTEN": "Flatten", "HDF5_DATA": "HDF5Data",
	"HDF5_OUTPUT": "HDF5Output", "HINGE_LOSS": "HingeLoss", "IM2COL": "Im2col",
	"IMAGE_DATA": "ImageData", "INFOGAIN_LOSS": "InfogainLoss",
	"INNER_PRODUCT": "InnerProduct", "LRN": "LRN", "MEMORY_DATA": "MemoryData",
	"MULTINOMIAL_LOGISTIC_LOSS": "MultinomialLogisticLoss", "MVN": "MVN",
	"POOLING": "Pooling", "POWER": "Power", "RELU": "ReLU", "SIGMOID": "Sigmoid",
	"SIGMOID_CROSS_ENTROPY_LOSS": "SigmoidCrossEntropyLoss", "SILENCE": "Silence",
	"SOFTMAX": "Softmax", "SOFTMAX_LOSS": "SoftmaxWithLoss", "SPLIT": "Split",
	"SLICE": "Slice", "TANH": "TanH", "WINDOW_DATA": "WindowData", "THRESHOLD": "Threshold",
}

// v1Params lists the *_param messages a V1 layer may carry; Caffe copies
// each unchanged into the upgraded layer.
var v1Params = []string{
	"accuracy_param", "argmax_param", "concat_param", "contrastive_loss_param",
	"convolution_param", "data_param", "dropout_param", "dummy_data_param",
	"eltwise_param", "exp_param", "hdf5_data_param", "hdf5_output_param",
	"hinge_loss_param", "image_data_param", "infogain_loss_param",
	"inner_product_param", "lrn_param", "memory_data_param", "mvn_param",
	"pooling_param", "power_param", "relu_param", "sigmoid_param",
	"softmax_param", "slice_param", "tanh_param", "threshold_param",
	"window_data_param", "transform_param", "loss_param",
}

// upgradeV1 rewrites every "layers" field of net into a "layer" field in
// place. It returns whether there was anything to upgrade; errors carry the
// position of the offending field.
func upgradeV1(net *prototxt.Message) (bool, error) {
	v1 := net.Get("layers")
	if len(v1) == 0 {
		return false, nil
	}
	if v2 := net.Get("layer"); len(v2) > 0 {
		return false, &prototxt.Error{Pos: v2[0].Pos, Msg: fmt.Sprintf(
			"net mixes the V1 format ('layers', first at %s) with the current one ('layer'); "+
				"write every layer one way (dsgd upgrade converts a V1 file)", v1[0].Pos)}
	}
	out := make([]*prototxt.Field, 0, len(net.Fields))
	for _, f := range net.Fields {
		if f.Name != "layers" {
			out = append(out, f)
			continue
		}
		if f.Kind != prototxt.KindMessage {
			return false, &prototxt.Error{Pos: f.ValuePos, Msg: "layers in net is a message: write layers { ... }"}
		}
		m, err := upgradeV1Layer(f.Msg)
		if err != nil {
			return false, err
		}
		out = append(out, &prototxt.Field{Name: "layer", Pos: f.Pos, ValuePos: f.ValuePos, Kind: prototxt.KindMessage, Msg: m})
	}
	net.Fields = out
	return true, nil
}

// upgradeV1Layer returns the current-format LayerParameter for one V1
// layer, following Caffe's UpgradeV1LayerParameter field by field.
func upgradeV1Layer(v1 *prototxt.Message) (*prototxt.Message, error) {
	m := &prototxt.Message{Pos: v1.Pos}
	get := func(name string) []*prototxt.Field { return v1.Get(name) }
	copyAll := func(name string) { m.Fields = append(m.Fields, get(name)...) }
	var typ string
	for _, f := range v1.Fields {
		switch f.Name {
		case "layer":
			return nil, &prototxt.Error{Pos: f.Pos, Msg: "a 'layer' inside 'layers' (Caffe's V0 net format) in a net whose other 'layers' blocks are V1; write every layer one way"}
		case "name", "bottom", "top", "include", "exclude", "blobs", "param", "blob_share_mode", "blobs_lr", "weight_decay", "loss_weight":
		case "type":
			if f.Kind != prototxt.KindIdent {
				return nil, &prototxt.Error{Pos: f.ValuePos, Msg: fmt.Sprintf(
					"type in a V1 'layers' block is an enum such as CONVOLUTION, found %s; in the current format write layer { type: \"...\" }", f.Value)}
			}
			if _, ok := v1Types[f.Value]; !ok {
				return nil, &prototxt.Error{Pos: f.ValuePos, Msg: fmt.Sprintf("unknown V1 layer type %s", f.Value)}
			}
			typ = f.Value
		default:
			if !slices.Contains(v1Params, f.Name) {
				return nil, &prototxt.Error{Pos: f.Pos, Msg: fmt.Sprintf("unknown field '%s' in a V1 'layers' block", f.Name)}
			}
		}
	}
	copyAll("name")
	if tf := get("type"); len(tf) > 0 {
		t := *tf[0]
		t.Kind, t.Value = prototxt.KindString, v1Types[typ]
		m.Fields = append(m.Fields, &t)
	}
	copyAll("bottom")
	copyAll("top")
	copyAll("loss_weight")
	m.Fields = append(m.Fields, v1ParamSpecs(v1)...)
	copyAll("blobs")
	copyAll("include")
	copyAll("exclude")
	var transform *prototxt.Message
	if tf := get("transform_param"); len(tf) > 0 && tf[0].Kind == prototxt.KindMessage {
		transform = tf[0].Msg
	}
	for _, f := range v1.Fields {
		if !slices.Contains(v1Params, f.Name) {
			continue
		}
		if f.Name == "transform_param" && transform != nil {
			continue // added below, with anything moved into it
		}
		if f.Kind == prototxt.KindMessage && (typ == "DATA" && f.Name == "data_param" ||
			typ == "IMAGE_DATA" && f.Name == "image_data_param" || typ == "WINDOW_DATA" && f.Name == "window_data_param") {
			// UpgradeNetDataTransformation: the old transformation fields
			// of a data layer move into its transform_param.
			var kept, moved []*prototxt.Field
			for _, g := range f.Msg.Fields {
				switch g.Name {
				case "scale", "mean_file", "crop_size", "mirror":
					moved = append(moved, g)
				default:
					kept = append(kept, g)
				}
			}
			if len(moved) > 0 {
				if transform == nil {
					transform = &prototxt.Message{Pos: f.ValuePos}
				}
				for _, g := range moved {
					transform.Fields = slices.DeleteFunc(transform.Fields, func(h *prototxt.Field) bool { return h.Name == g.Name })
					transform.Fields = append(transform.Fields, g)
				}
				nf := *f
				nf.Msg = &prototxt.Message{Pos: f.Msg.Pos, Fields: kept}
				f = &nf
			}
		}
		m.Fields = append(m.Fields, f)
	}
	if transform != nil {
		pos := v1.Pos
		if tf := get("transform_param"); len(tf) > 0 {
			pos = tf[0].Pos
		}
		m.Fields = append(m.Fields, &prototxt.Field{Name: "transform_param", Pos: pos, ValuePos: pos, Kind: prototxt.KindMessage, Msg: transform})
	}
	return m, nil
}

// v1ParamSpecs builds the param { } messages of an upgraded layer from the
// V1 fields param (names), blob_share_mode, blobs_lr and weight_decay: the
// i-th value of each goes into the i-th ParamSpec.
func v1ParamSpecs(v1 *prototxt.Message) []*prototxt.Field {
	var specs []*prototxt.Field
	add := func(i int, src *prototxt.Field, name string, kind prototxt.Kind) {
		for len(specs) <= i {
			specs = append(specs, &prototxt.Field{Name: "param", Pos: src.Pos, ValuePos: src.Pos, Kind: prototxt.KindMessage, Msg: &prototxt.Message{Pos: src.Pos}})
		}
		g := *src
		g.Name, g.Kind = name, kind
		if src.Kind == prototxt.KindMessage {
			g.Kind = prototxt.KindMessage // reported as a bad value by the decoder
		}
		specs[i].Msg.Fields = append(specs[i].Msg.Fields, &g)
	}
	for i, f := range v1.Get("param") {
		add(i, f, "name", f.Kind)
	}
	for i, f := range v1.Get("blob_share_mode") {
		add(i, f, "share_mode", f.Kind)
	}
	for i, f := range v1.Get("blobs_lr") {
		add(i, f, "lr_mult", f.Kind)
	}
	for i, f := range v1.Get("weight_decay") {
		add(i, f, "decay_mult", f.Kind)
	}
	return specs
}

// upgradeInput replaces the net-level input, input_shape and input_dim
// fields with an Input layer named "input", first among the layers, as
// Caffe's UpgradeNetInput does. It leaves the net alone when its fields do
// not fit together; the decoder then reports the mismatch. Inputs with
// neither input_shape nor input_dim are dropped, as Caffe drops them.
func upgradeInput(net *prototxt.Message) (note string) {
	inputs, shapes, dims := net.Get("input"), net.Get("input_shape"), net.Get("input_dim")
	if len(inputs) == 0 {
		return ""
	}
	if len(shapes) == 0 && len(dims) == 0 {
		net.Fields = slices.DeleteFunc(net.Fields, func(f *prototxt.Field) bool { return f.Name == "input" })
		return "the net-level input fields without input_shape or input_dim were dropped, as Caffe drops them"
	}
	switch {
	case len(shapes) > 0 && (len(dims) > 0 || len(shapes) != len(inputs)):
		return ""
	case len(shapes) == 0 && len(dims) != 4*len(inputs):
		return ""
	}
	pos := inputs[0].Pos
	l := &prototxt.Message{Pos: pos}
	str := func(name, v string) *prototxt.Field {
		return &prototxt.Field{Name: name, Pos: pos, ValuePos: pos, Kind: prototxt.KindString, Value: v}
	}
	l.Fields = append(l.Fields, str("name", "input"), str("type", "Input"))
	for _, f := range inputs {
		t := *f
		t.Name = "top"
		l.Fields = append(l.Fields, &t)
	}
	ip := &prototxt.Message{Pos: pos}
	if len(shapes) > 0 {
		for _, s := range shapes {
			t := *s
			t.Name = "shape"
			ip.Fields = append(ip.Fields, &t)
		}
	} else {
		for i := range inputs {
			s := &prototxt.Message{Pos: dims[4*i].Pos}
			for _, d := range dims[4*i : 4*i+4] {
				t := *d
				t.Name = "dim"
				s.Fields = append(s.Fields, &t)
			}
			ip.Fields = append(ip.Fields, &prototxt.Field{Name: "shape", Pos: s.Pos, ValuePos: s.Pos, Kind: prototxt.KindMessage, Msg: s})
		}
	}
	l.Fields = append(l.Fields, &prototxt.Field{Name: "input_param", Pos: pos, ValuePos: pos, Kind: prototxt.KindMessage, Msg: ip})
	layer := &prototxt.Field{Name: "layer", Pos: pos, ValuePos: pos, Kind: prototxt.KindMessage, Msg: l}
	var out []*prototxt.Field
	placed := false
	for _, f := range net.Fields {
		switch f.Name {
		case "input", "input_shape", "input_dim":
			continue
		case "layer":
			if !placed {
				out, placed = append(out, layer), true
			}
		}
		out = append(out, f)
	}
	if !placed {
		out = append(out, layer)
	}
	net.Fields = out
	return "the net-level input fields became an Input layer"
}

// upgradeSolverType replaces the legacy solver_type enum with type, as
// Caffe's UpgradeSolverType does. Both given is left for the decoder to
// report.
func upgradeSolverType(s *prototxt.Message) bool {
	st := s.Get("solver_type")
	if len(st) != 1 || len(s.Get("type")) > 0 {
		return false
	}
	enum, names := solverTypes()
	i := slices.Index(enum, st[0].Value)
	if i < 0 || st[0].Kind != prototxt.KindIdent {
		return false
	}
	f := *st[0]
	f.Name, f.Kind, f.Value = "type", prototxt.KindString, names[i]
	s.Fields[slices.Index(s.Fields, st[0])] = &f
	return true
}

// Upgrade reads a Caffe net or solver file in any format dsgd reads and
// returns it in the current text format, with notes saying what changed:
// a V1 net's layers, a net's legacy input fields (as an Input layer), a
// solver's solver_type enum and the nets it writes inline (net_param,
// train_net_param, test_net_param; Caffe's upgrade_solver_proto_text
// leaves those as they are, but dsgd reads them upgraded). The result is checked by parsing it again;
// an error names the file and position at fault. A file that needs no
// upgrade comes back with no notes.
func Upgrade(filename string, src []byte) (out []byte, notes []string, err error) {
	msg, err := prototxt.Parse(filename, src)
	if err != nil {
		return nil, nil, err
	}
	solver := isSolver(msg)
	if solver {
		if upgradeSolverType(msg) {
			notes = append(notes, "solver_type (enum) became type (string)")
		}
		// The nets written inline (lenet_consolidated_solver's V1
		// net_param) are upgraded as net files are: dsgd reads them so.
		for _, name := range []string{"net_param", "train_net_param", "test_net_param"} {
			for _, f := range msg.Get(name) {
				if f.Kind != prototxt.KindMessage {
					continue // the decoder reports it
				}
				netNotes, err := upgradeNet(f.Msg)
				if err != nil {
					return nil, nil, err
				}
				for _, n := range netNotes {
					notes = append(notes, fmt.Sprintf("%s (at %s): %s", name, f.Pos, n))
				}
			}
		}
	} else {
		notes, err = upgradeNet(msg)
		if err != nil {
			return nil, nil, err
		}
	}
	out = prototxt.Format(msg)
	if solver {
		_, err = ParseSolver(filename+" (upgraded)", out)
	} else {
		_, err = ParseNet(filename+" (upgraded)", out)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("the upgraded file does not read back: %w", err)
	}
	return out, notes, nil
}

// upgradeNet upgrades the net msg in place (V0 and V1 layers, the legacy
// input fields) and says what changed.
func upgradeNet(msg *prototxt.Message) (notes []string, err error) {
	v0, v0notes, err := upgradeV0(msg)
	if err != nil {
		return nil, err
	}
	if v0 {
		notes = append(notes, fmt.Sprintf("%d V0 'layers' became V1 ones", len(msg.Get("layers"))))
		notes = append(notes, v0notes...)
	}
	v1, err := upgradeV1(msg)
	if err != nil {
		return nil, err
	}
	if v1 {
		notes = append(notes, fmt.Sprintf("%d V1 'layers' became 'layer'", len(msg.Get("layer"))))
	}
	if note := upgradeInput(msg); note != "" {
		notes = append(notes, note)
	}
	return notes, nil
}

// UpgradeFile upgrades the file in to the file out (see Upgrade), writing
// out atomically: a temporary file in out's folder, renamed into place.
func UpgradeFile(in, out string) ([]string, error) {
	src, err := os.ReadFile(in)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	res, notes, err := Upgrade(in, src)
	if err != nil {
		return nil, err
	}
	// Whole or not at all, private to its owner (0600), as dsgd upgrade
	// has always written it.
	if err := atomicfile.WriteFile(out, res, 0o600); err != nil {
		return nil, fmt.Errorf("config: writing %s: %w", strconv.Quote(out), err)
	}
	return notes, nil
}

// isSolver tells a solver file from a net file by the fields only a
// solver has.
func isSolver(m *prototxt.Message) bool {
	for _, f := range m.Fields {
		switch f.Name {
		case "base_lr", "lr_policy", "max_iter", "solver_type", "net", "train_net", "test_iter", "net_param", "train_net_param":
			return true
		}
	}
	return false
}

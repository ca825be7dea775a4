package caffedef

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// SSD's MultiBoxLoss (weiliu89/caffe, branch ssd): multibox_loss_param and
// loss_param read with the fork's caffe.proto fields and defaults, its
// LayerSetUp checks as errors at file:line:column, and small SSD training
// nets from prototxt that build and train.

// mbLayer is a MultiBoxLoss layer over extraInput's data with the given
// fields after its bottoms and top.
func mbLayer(rest string) string {
	return `layer { name: "l" type: "MultiBoxLoss" bottom: "data" bottom: "data" bottom: "data" bottom: "data" top: "l" ` + rest + ` }`
}

func TestMultiBoxLossDecode(t *testing.T) {
	defaults := layers.MultiBoxLossConfig{
		LocLoss: layers.LocSmoothL1, ConfLoss: layers.ConfSoftmax, LocWeight: 1, NumClasses: 21, ShareLocation: true,
		Match: layers.MatchPerPrediction, OverlapThreshold: 0.5, UsePriorForMatching: true, UseDifficultGT: true,
		NegPosRatio: 3, NegOverlap: 0.5, Code: layers.CodeCorner, Mining: layers.MineMaxNegative, SampleSize: 64,
	}
	with := func(f func(*layers.MultiBoxLossConfig)) *layers.MultiBoxLossConfig {
		c := defaults
		f(&c)
		return &c
	}
	for _, c := range []struct {
		layer string
		want  *layers.MultiBoxLossConfig
	}{
		{mbLayer(`multibox_loss_param { num_classes: 21 }`), &defaults},
		// SSD300 VOC0712's train.prototxt, as ssd_pascal.py writes it.
		{mbLayer(`propagate_down: true propagate_down: true propagate_down: false propagate_down: false
  include { phase: TRAIN }
  multibox_loss_param { loc_loss_type: SMOOTH_L1 conf_loss_type: SOFTMAX loc_weight: 1 num_classes: 21 share_location: true
    match_type: PER_PREDICTION overlap_threshold: 0.5 use_prior_for_matching: true background_label_id: 0 use_difficult_gt: true
    neg_pos_ratio: 3 neg_overlap: 0.5 code_type: CENTER_SIZE ignore_cross_boundary_bbox: false mining_type: MAX_NEGATIVE }
  loss_param { normalization: VALID }`), with(func(c *layers.MultiBoxLossConfig) { c.Code = layers.CodeCenterSize })},
		// Every other field away from its default.
		{mbLayer(`propagate_down: false propagate_down: true propagate_down: false propagate_down: false
  multibox_loss_param { loc_loss_type: L2 conf_loss_type: LOGISTIC loc_weight: 2.5 num_classes: 2 share_location: true
    match_type: BIPARTITE overlap_threshold: 0.7 use_prior_for_matching: false background_label_id: 0 use_difficult_gt: false
    do_neg_mining: true neg_pos_ratio: 2 neg_overlap: 0.4 code_type: CORNER_SIZE encode_variance_in_target: true
    map_object_to_agnostic: true ignore_cross_boundary_bbox: true bp_inside: true mining_type: HARD_EXAMPLE
    nms_param { nms_threshold: 0.6 top_k: 100 eta: 0.9 } sample_size: 32 use_prior_for_nms: true }
  loss_param { normalize: false }`),
			&layers.MultiBoxLossConfig{
				LocLoss: layers.LocL2, ConfLoss: layers.ConfLogistic, LocWeight: 2.5, NumClasses: 2, ShareLocation: true,
				Match: layers.MatchBipartite, OverlapThreshold: 0.7, UseDifficultGT: false, NegPosRatio: 2, NegOverlap: 0.4,
				Code: layers.CodeCornerSize, EncodeVarianceInTarget: true, MapObjectToAgnostic: true, IgnoreCrossBoundaryBBox: true,
				BPInside: true, Mining: layers.MineHardExample, HasNMS: true, NMSThreshold: 0.6, NMSTopK: 100, SampleSize: 32,
				UsePriorForNMS: true, Normalization: layers.NormBatchSize, NoLocLoss: true,
			}},
		{mbLayer(`multibox_loss_param { num_classes: 4 share_location: false background_label_id: 3 mining_type: NONE nms_param { } }
  loss_param { normalization: NONE }`),
			with(func(c *layers.MultiBoxLossConfig) {
				c.NumClasses, c.ShareLocation, c.BackgroundLabelID, c.Mining = 4, false, 3, layers.MineNone
				c.HasNMS, c.NMSThreshold, c.Normalization = true, 0.3, layers.NormNone
			})},
		{mbLayer(`multibox_loss_param { num_classes: 21 } loss_param { normalize: true } propagate_down: [true, false, false, false]`),
			with(func(c *layers.MultiBoxLossConfig) { c.NoConfLoss = true })},
		{mbLayer(`multibox_loss_param { num_classes: 21 } loss_param { normalization: FULL }`),
			with(func(c *layers.MultiBoxLossConfig) { c.Normalization = layers.NormFull })},
	} {
		nd, err := ParseNet("f.prototxt", []byte(extraInput+c.layer))
		if err != nil {
			t.Errorf("%s: %v", c.layer, err)
			continue
		}
		l := findLayer(t, mustPhase(t, nd, layers.Train).Spec, "l")
		if got := l.Config; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.layer, got, c.want)
		}
		if len(l.LossWeight) != 0 {
			t.Errorf("%s: loss_weight %v, want none given (1 by default, a loss layer's)", c.layer, l.LossWeight)
		}
	}
}

func TestMultiBoxLossDecodeErrors(t *testing.T) {
	checkDecodeErrors(t, []decodeErrCase{
		{"no num_classes", mbLayer(`multibox_loss_param { share_location: true }`), `{ share`, "multibox_loss_param of layer 'l' needs num_classes"},
		{"no multibox_loss_param", mbLayer(``), "", "multibox_loss_param of layer 'l' needs num_classes"},
		{"num_classes 0", mbLayer(`multibox_loss_param { num_classes: 0 }`), `0 }`, "num_classes in multibox_loss_param of layer 'l': must be at least 1, got 0"},
		{"background negative", mbLayer(`multibox_loss_param { num_classes: 2 background_label_id: -1 }`), `-1`, "background_label_id in multibox_loss_param of layer 'l': must be at least 0, got -1"},
		{"loc_loss_type", mbLayer(`multibox_loss_param { num_classes: 2 loc_loss_type: L1 }`), `L1`, "loc_loss_type in multibox_loss_param of layer 'l': unknown value L1; expected one of L2, SMOOTH_L1"},
		{"conf_loss_type", mbLayer(`multibox_loss_param { num_classes: 2 conf_loss_type: HINGE }`), `HINGE`, "conf_loss_type in multibox_loss_param of layer 'l': unknown value HINGE; expected one of SOFTMAX, LOGISTIC"},
		{"match_type", mbLayer(`multibox_loss_param { num_classes: 2 match_type: GREEDY }`), `GREEDY`, "match_type in multibox_loss_param of layer 'l': unknown value GREEDY; expected one of BIPARTITE, PER_PREDICTION"},
		{"mining_type", mbLayer(`multibox_loss_param { num_classes: 2 mining_type: ALL }`), `ALL`, "mining_type in multibox_loss_param of layer 'l': unknown value ALL; expected one of NONE, MAX_NEGATIVE, HARD_EXAMPLE"},
		{"code_type", mbLayer(`multibox_loss_param { num_classes: 2 code_type: CENTER }`), `CENTER`, "code_type in multibox_loss_param of layer 'l': unknown value CENTER; expected one of CORNER, CENTER_SIZE, CORNER_SIZE"},
		{"do_neg_mining contradicts", mbLayer(`multibox_loss_param { num_classes: 2 do_neg_mining: false }`), `false`,
			"do_neg_mining in multibox_loss_param of layer 'l': false contradicts mining_type MAX_NEGATIVE"},
		{"do_neg_mining contradicts NONE", mbLayer(`multibox_loss_param { num_classes: 2 mining_type: NONE do_neg_mining: true }`), `true`,
			"do_neg_mining in multibox_loss_param of layer 'l': true contradicts mining_type NONE"},
		{"nms unknown", mbLayer(`multibox_loss_param { num_classes: 2 nms_param { threshold: 0.5 } }`), `threshold`, "unsupported field 'threshold' in nms_param of multibox_loss_param of layer 'l'"},
		{"unknown field", mbLayer(`multibox_loss_param { num_classes: 2 neg_ratio: 3 }`), `neg_ratio`, "unsupported field 'neg_ratio' in multibox_loss_param of layer 'l'"},
		{"ignore_label", mbLayer(`multibox_loss_param { num_classes: 2 } loss_param { ignore_label: 255 }`), `255`,
			"ignore_label in loss_param of layer 'l': MultiBoxLoss reads no ignore_label"},
		{"normalization", mbLayer(`multibox_loss_param { num_classes: 2 } loss_param { normalization: ALL }`), `ALL`, "normalization in loss_param of layer 'l': unknown value ALL; expected one of VALID, BATCH_SIZE, FULL, NONE"},
		{"three bottoms", `layer { name: "l" type: "MultiBoxLoss" bottom: "data" bottom: "data" bottom: "data" top: "l" multibox_loss_param { num_classes: 2 } }`,
			"", "layer 'l' (MultiBoxLoss) takes 4 bottoms, the locations, the confidences, the priors and the ground truth, got 3"},
	})
}

// TestMultiBoxLossDecodeWarnings: the deprecated do_neg_mining (when it
// agrees), nms_param's eta, and an nms_param without top_k (which the
// fork reads as 0, mining nothing) are warnings at their lines.
func TestMultiBoxLossDecodeWarnings(t *testing.T) {
	for _, c := range []struct{ param, want string }{
		{`do_neg_mining: true`, "do_neg_mining in multibox_loss_param of layer 'l' is deprecated"},
		{`nms_param { nms_threshold: 0.5 top_k: 10 eta: 0.5 }`, "ignoring eta in nms_param of multibox_loss_param of layer 'l': the fork's mining NMS (ApplyNMS) has no adaptive threshold"},
		{`nms_param { nms_threshold: 0.5 }`, "has no top_k: the fork reads 0 and mines no example"},
	} {
		nd, err := ParseNet("f.prototxt", []byte(extraInput+mbLayer(`multibox_loss_param { num_classes: 2 `+c.param+` }`)))
		if err != nil {
			t.Fatal(err)
		}
		if w := strings.Join(nd.Warnings, "\n"); !strings.Contains(w, "f.prototxt:2:") || !strings.Contains(w, c.want) {
			t.Errorf("%s: warnings %q lack %q", c.param, w, c.want)
		}
	}
}

// TestMultiBoxLossBuildErrors: what the fork refuses in LayerSetUp or
// Reshape beyond one field (mining without shared locations, LOGISTIC
// with another background, the bottoms' shapes) is refused when the net
// is built, naming the layer and its file:line; an explicit
// propagate_down true on the priors or the labels too.
func TestMultiBoxLossBuildErrors(t *testing.T) {
	// Two images, 2 priors, 3 classes, one ground-truth row.
	const input = `layer { name: "input" type: "Input" top: "loc" top: "conf" top: "pri" top: "gt" input_param { shape { dim: 2 dim: 8 } shape { dim: 2 dim: 6 } shape { dim: 1 dim: 2 dim: 8 } shape { dim: 1 dim: 1 dim: 1 dim: 8 } } }
`
	mb := func(bottoms, rest string) string {
		return `layer { name: "l" type: "MultiBoxLoss" ` + bottoms + ` top: "l" ` + rest + ` }`
	}
	const good = `bottom: "loc" bottom: "conf" bottom: "pri" bottom: "gt"`
	for _, c := range []struct{ name, layer, want string }{
		{"mining unshared", mb(good, `multibox_loss_param { num_classes: 3 share_location: false }`), "mining_type MAX_NEGATIVE needs share_location true"},
		{"logistic background", mb(good, `multibox_loss_param { num_classes: 3 conf_loss_type: LOGISTIC background_label_id: 2 }`), "LOGISTIC needs background_label_id 0"},
		{"softmax background", mb(good, `multibox_loss_param { num_classes: 3 background_label_id: 3 }`), "background_label_id 3 is not a class of 3"},
		{"classes", mb(good, `multibox_loss_param { num_classes: 4 }`), "bottom 1 (confidences) 2x6 (12) has 6 values per image; 2 priors × 4 classes need 8"},
		{"priors", mb(`bottom: "loc" bottom: "conf" bottom: "gt" bottom: "gt"`, `multibox_loss_param { num_classes: 3 }`), "bottom 2 (the priors) must be PriorBox's 1×2×(P·4)"},
		{"priors propagate_down", mb(good, `multibox_loss_param { num_classes: 3 } propagate_down: [true, true, true, false]`),
			`propagate_down: true for bottom "pri", which a MultiBoxLoss layer cannot backpropagate to`},
	} {
		nd, err := ParseNet("f.prototxt", []byte(input+c.layer))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		pn := mustPhase(t, nd, layers.Train)
		inputs := map[string]tensor.Shape{}
		for i, name := range pn.Spec.Inputs {
			inputs[name] = pn.Data[0].Shapes[i]
		}
		_, err = model.Build(pn.Spec, inputs, model.Options{Phase: layers.Train, Seed: 1})
		if err == nil || !strings.Contains(err.Error(), `layer "l" (f.prototxt:2:1)`) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q at f.prototxt:2:1", c.name, err, c.want)
		}
	}
}

// TestSSDMultiBoxFixtureRuns: the SSD training head that was refused as a
// fork's layer (ssd_multibox.prototxt) now builds and runs forward and
// backward: one ground-truth box of class 1 and one row of none.
func TestSSDMultiBoxFixtureRuns(t *testing.T) {
	n := buildForkFixture(t, "ssd_multibox.prototxt")
	rng := rand.New(rand.NewPCG(3, 4))
	for i, v := range n.Input("data").Data {
		n.Input("data").Data[i] = v + float32(rng.NormFloat64())
	}
	copy(n.Input("label").Data, []float32{0, 1, 0, 0.2, 0.2, 0.6, 0.7, 0, -1, -1, -1, -1, -1, -1, -1, -1})
	loss := n.Forward()
	if math.IsNaN(loss) || !(loss > 0) {
		t.Fatalf("loss %v (%v), want a positive loss", loss, n.Err())
	}
	n.Backward()
	if err := n.Err(); err != nil {
		t.Fatal(err)
	}
	var g float64
	for _, v := range n.Grads() {
		g += math.Abs(float64(v))
	}
	if !(g > 0) {
		t.Error("no gradient reaches the convolutions")
	}
}

// TestSSDTrainNetLearns: a small SSD training net from prototxt
// (ssd_train.prototxt: two feature maps with location and confidence heads,
// PriorBox, Permute, Flatten, Concat and MultiBoxLoss over labels from an
// Input layer) trains: 60 steps of plain SGD on one batch of two images,
// three boxes (one difficult), more than halve its loss.
func TestSSDTrainNetLearns(t *testing.T) {
	n := buildForkFixture(t, "ssd_train.prototxt")
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range n.Input("data").Data {
		n.Input("data").Data[i] = float32(rng.NormFloat64())
	}
	copy(n.Input("label").Data, []float32{
		0, 1, 0, 0.1, 0.15, 0.45, 0.6, 0,
		1, 2, 0, 0.4, 0.3, 0.9, 0.8, 0,
		1, 1, 1, 0.05, 0.05, 0.3, 0.35, 1,
	})
	first := n.Forward()
	if math.IsNaN(first) {
		t.Fatal(n.Err())
	}
	loss := first
	for range 60 {
		n.Backward()
		p, g := n.Params(), n.Grads()
		for i := range p {
			p[i] -= 0.05 * g[i]
		}
		if loss = n.Forward(); math.IsNaN(loss) {
			t.Fatal(n.Err())
		}
	}
	t.Logf("loss %.4g -> %.4g", first, loss)
	if !(loss < first/2) {
		t.Errorf("loss %.4g after 60 steps, from %.4g: want it at least halved", loss, first)
	}
}

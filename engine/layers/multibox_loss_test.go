package layers

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

// SSD's MultiBoxLoss (weiliu89/caffe, branch ssd) against the float64
// oracle of scripts/multibox_loss.py (testdata/multibox_loss.json), finite
// differences, and the fork's rules on parameters, shapes and ground truth.

// mbFixtureConfig is the oracle's configuration of a case, as the script
// writes it.
type mbFixtureConfig struct {
	LocLossType             string      `json:"loc_loss_type"`
	ConfLossType            string      `json:"conf_loss_type"`
	LocWeight               float32     `json:"loc_weight"`
	NumClasses              int         `json:"num_classes"`
	ShareLocation           bool        `json:"share_location"`
	MatchType               string      `json:"match_type"`
	OverlapThreshold        float32     `json:"overlap_threshold"`
	UsePriorForMatching     bool        `json:"use_prior_for_matching"`
	BackgroundLabelID       int         `json:"background_label_id"`
	UseDifficultGT          bool        `json:"use_difficult_gt"`
	NegPosRatio             float32     `json:"neg_pos_ratio"`
	NegOverlap              float32     `json:"neg_overlap"`
	CodeType                string      `json:"code_type"`
	EncodeVarianceInTarget  bool        `json:"encode_variance_in_target"`
	MapObjectToAgnostic     bool        `json:"map_object_to_agnostic"`
	IgnoreCrossBoundaryBBox bool        `json:"ignore_cross_boundary_bbox"`
	BPInside                bool        `json:"bp_inside"`
	MiningType              string      `json:"mining_type"`
	NMS                     *[2]float64 `json:"nms"`
	SampleSize              int         `json:"sample_size"`
	UsePriorForNMS          bool        `json:"use_prior_for_nms"`
	Normalization           string      `json:"normalization"`
	NoLoc                   bool        `json:"no_loc"`
	NoConf                  bool        `json:"no_conf"`
}

// layerConfig translates the oracle's configuration, failing on a name
// this test does not know.
func (f mbFixtureConfig) layerConfig(t *testing.T) *MultiBoxLossConfig {
	t.Helper()
	pick := func(v string, names ...string) int {
		for i, n := range names {
			if n == v {
				return i
			}
		}
		t.Fatalf("unknown value %q (want one of %v)", v, names)
		return 0
	}
	c := &MultiBoxLossConfig{
		LocLoss:                 MultiBoxLocLoss(pick(f.LocLossType, "L2", "SMOOTH_L1")),
		ConfLoss:                MultiBoxConfLoss(pick(f.ConfLossType, "SOFTMAX", "LOGISTIC")),
		LocWeight:               f.LocWeight,
		NumClasses:              f.NumClasses,
		ShareLocation:           f.ShareLocation,
		Match:                   MultiBoxMatch(pick(f.MatchType, "BIPARTITE", "PER_PREDICTION")),
		OverlapThreshold:        f.OverlapThreshold,
		UsePriorForMatching:     f.UsePriorForMatching,
		BackgroundLabelID:       f.BackgroundLabelID,
		UseDifficultGT:          f.UseDifficultGT,
		NegPosRatio:             f.NegPosRatio,
		NegOverlap:              f.NegOverlap,
		Code:                    BBoxCode(pick(f.CodeType, "CORNER", "CENTER_SIZE", "CORNER_SIZE") + 1),
		EncodeVarianceInTarget:  f.EncodeVarianceInTarget,
		MapObjectToAgnostic:     f.MapObjectToAgnostic,
		IgnoreCrossBoundaryBBox: f.IgnoreCrossBoundaryBBox,
		BPInside:                f.BPInside,
		Mining:                  MultiBoxMining(pick(f.MiningType, "NONE", "MAX_NEGATIVE", "HARD_EXAMPLE")),
		SampleSize:              f.SampleSize,
		UsePriorForNMS:          f.UsePriorForNMS,
		Normalization:           LossNormalization(pick(f.Normalization, "VALID", "BATCH_SIZE", "FULL", "NONE")),
		NoLocLoss:               f.NoLoc,
		NoConfLoss:              f.NoConf,
	}
	if f.NMS != nil {
		c.HasNMS, c.NMSThreshold, c.NMSTopK = true, float32(f.NMS[0]), int(f.NMS[1])
	}
	return c
}

// mbCase is one case of multibox_loss.json with its configuration.
type mbCase struct {
	torchCase
	Config mbFixtureConfig `json:"config"`
}

func loadMultiBoxFixture(t *testing.T) []mbCase {
	t.Helper()
	src, err := os.ReadFile("testdata/multibox_loss.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []mbCase `json:"cases"`
	}
	if err := json.Unmarshal(src, &f); err != nil {
		t.Fatal(err)
	}
	return f.Cases
}

// TestMultiBoxLossFixtures compares the loss (relative 2e-6) and the
// gradients of the location predictions and the confidences (within
// 2e-6 of the largest) with the oracle on two passes, the fixture's top
// diff being its loss weight; then Backward against finite differences.
// The finite differences (mbCheckGradients) step 1e-3.
func TestMultiBoxLossFixtures(t *testing.T) {
	cases := loadMultiBoxFixture(t)
	if len(cases) < 12 {
		t.Fatalf("%d fixture cases; rerun make torch-layers", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			cfg := tc.Config.layerConfig(t)
			c := caffeCase{cfg: cfg, skip: map[int]bool{2: true, 3: true}}
			l, bottom, top := tc.setUp(t, c)
			if _, ok := l.(LossLayer); !ok {
				t.Fatal("MultiBoxLoss is not a LossLayer (loss_weight 1 by default)")
			}
			want := tc.Tops[0].Data[0]
			for pass := range 2 {
				l.Forward(bottom, top)
				if top[0].Count() != 1 || len(top[0].Shape) != 0 {
					t.Fatalf("pass %d: top %v, want a scalar", pass, top[0].Shape)
				}
				if g := float64(top[0].Data[0]); math.Abs(g-want) > 2e-6*math.Max(1, math.Abs(want)) {
					t.Fatalf("pass %d: loss %.9g, want %.9g", pass, g, want)
				}
				copy(top[0].Diff, to32(tc.TopDiffs[0]))
				for i := range 2 {
					for j := range bottom[i].Diff {
						bottom[i].Diff[j] = float32(math.NaN())
					}
				}
				l.Backward(top, []bool{true, true, false, false}, bottom)
				for i := range 2 {
					w := tc.BottomDiffs[i]
					scale := 1.0
					for _, v := range w {
						scale = math.Max(scale, math.Abs(v))
					}
					for j, v := range w {
						if g := float64(bottom[i].Diff[j]); !(math.Abs(g-v) <= 2e-6*scale) {
							t.Fatalf("pass %d: bottom %d diff[%d] = %.9g, want %.9g", pass, i, j, g, v)
						}
					}
				}
			}
			mbCheckGradients(t, l.(*multiBoxLossLayer), bottom, top, 1e-3, 1e-2)
		})
	}
}

// TestMultiBoxLossErrors: configurations the fork refuses (or that dsgd
// refuses saying why), bottoms of the wrong shapes, and bad ground truth,
// which stops Forward with a message naming the row.
func TestMultiBoxLossErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*MultiBoxLossConfig)
		want string
	}{
		{"num_classes 0", func(c *MultiBoxLossConfig) { c.NumClasses = 0 }, "num_classes of at least 1"},
		{"softmax background", func(c *MultiBoxLossConfig) { c.BackgroundLabelID = 3 }, "SOFTMAX needs it in [0, num_classes)"},
		{"logistic background", func(c *MultiBoxLossConfig) { c.ConfLoss, c.BackgroundLabelID = ConfLogistic, 1 }, "LOGISTIC needs background_label_id 0"},
		{"mining unshared", func(c *MultiBoxLossConfig) { c.ShareLocation = false }, "mining_type MAX_NEGATIVE needs share_location true"},
		{"sample_size", func(c *MultiBoxLossConfig) { c.Mining, c.SampleSize = MineHardExample, 0 }, "positive sample_size"},
		{"agnostic classes", func(c *MultiBoxLossConfig) { c.MapObjectToAgnostic = true }, "map_object_to_agnostic needs num_classes 2"},
		{"agnostic background", func(c *MultiBoxLossConfig) { c.MapObjectToAgnostic, c.NumClasses, c.BackgroundLabelID = true, 2, 1 }, "needs background_label_id 0"},
		{"code", func(c *MultiBoxLossConfig) { c.Code = 0 }, "unknown code type"},
		{"NaN weight", func(c *MultiBoxLossConfig) { c.LocWeight = float32(math.NaN()) }, "loc_weight must be finite"},
	} {
		cfg := mbDefaults()
		c.mod(cfg)
		if _, err := cfg.Build(Context{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}

	shapes := []struct {
		name string
		mod  func([]*tensor.Blob)
		want string
	}{
		{"loc count", func(b []*tensor.Blob) { b[0].Reshape(3, 16*4+1) }, "bottom 0 (locations) 3x65 (195) has 65 values per image"},
		{"conf count", func(b []*tensor.Blob) { b[1].Reshape(3, 16*2) }, "bottom 1 (confidences) 3x32 (96) has 32 values per image"},
		{"images", func(b []*tensor.Blob) { b[1].Reshape(2, 16*3) }, "must have the same number of images"},
		{"priors", func(b []*tensor.Blob) { b[2].Reshape(1, 1, 64) }, "bottom 2 (the priors) must be PriorBox's"},
		{"labels", func(b []*tensor.Blob) { b[3].Reshape(1, 4, 8) }, "bottom 3 (the ground truth) must be 1×1×G×8"},
	}
	for _, c := range shapes {
		bottom := mbBottoms(t, true)
		c.mod(bottom)
		l, err := mbDefaults().Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Setup(bottom, []*tensor.Blob{tensor.NewBlob("loss")}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	l, _ := mbDefaults().Build(Context{})
	if err := l.Setup(mbBottoms(t, true)[:3], []*tensor.Blob{tensor.NewBlob("loss")}); err == nil || !strings.Contains(err.Error(), "ground truth") {
		t.Errorf("3 bottoms: %v", err)
	}
	if gb := l.(GradientBlocker); !gb.AllowBackward(0) || !gb.AllowBackward(1) || gb.AllowBackward(2) || gb.AllowBackward(3) {
		t.Error("only the locations and the confidences may take a gradient")
	}

	for _, c := range []struct {
		name string
		row  []float32
		mod  func(*MultiBoxLossConfig)
		want string
	}{
		{"background", []float32{0, 0, 0, 0.1, 0.1, 0.3, 0.3, 0}, nil, "row 0 has the background's label 0"},
		{"label range", []float32{1, 3, 0, 0.1, 0.1, 0.3, 0.3, 0}, nil, "row 0 has label 3, not a class of num_classes 3"},
		{"label fraction", []float32{1, 1.5, 0, 0.1, 0.1, 0.3, 0.3, 0}, nil, "label 1.5, not a class index"},
		{"item", []float32{3, 1, 0, 0.1, 0.1, 0.3, 0.3, 0}, nil, "item_id 3, not an image of the batch of 3"},
	} {
		cfg := mbDefaults()
		if c.mod != nil {
			c.mod(cfg)
		}
		bottom := mbBottoms(t, true)
		copy(bottom[3].Data, c.row)
		top := []*tensor.Blob{tensor.NewBlob("loss")}
		l := newTestLayer(t, cfg, Context{}, bottom, top)
		func() {
			defer func() {
				p := recover()
				if s, _ := p.(string); !strings.Contains(s, c.want) {
					t.Errorf("%s: panic %v, want %q", c.name, p, c.want)
				}
			}()
			l.Forward(bottom, top)
		}()
	}
}

// TestMultiBoxLossByHand checks one image, one prior and one box by hand:
// the prior [0, 0, 0.5, 0.5] (variances 0.1, 0.1, 0.2, 0.2) matches the
// ground truth [0.05, 0.1, 0.45, 0.7] (IoU 0.16/0.33); CENTER_SIZE encodes
// it as ((0.25−0.25)/0.5/0.1, (0.4−0.25)/0.5/0.1, ln(0.8)/0.2, ln(1.2)/0.2)
// = (0, 3, −1.1157, 0.9116); predictions 0 give smooth L1 0 + 2.5 +
// 0.6157 + 0.4155; scores 0 over 2 classes give ln 2. VALID divides by
// the one match.
func TestMultiBoxLossByHand(t *testing.T) {
	cfg := mbDefaults()
	cfg.NumClasses, cfg.Code, cfg.Mining = 2, CodeCenterSize, MineNone
	bottom := []*tensor.Blob{
		newBlobData([]int{1, 4}, []float32{0, 0, 0, 0}),
		newBlobData([]int{1, 2}, []float32{0, 0}),
		newBlobData([]int{1, 2, 4}, []float32{0, 0, 0.5, 0.5, 0.1, 0.1, 0.2, 0.2}),
		newBlobData([]int{1, 1, 1, 8}, []float32{0, 1, 0, 0.05, 0.1, 0.45, 0.7, 0}),
	}
	top := []*tensor.Blob{tensor.NewBlob("loss")}
	l := newTestLayer(t, cfg, Context{}, bottom, top)
	l.Forward(bottom, top)
	lw, lh := math.Log(0.8)/0.2, math.Log(1.2)/0.2
	want := 2.5 + (math.Abs(lw) - 0.5) + 0.5*lh*lh + math.Ln2
	if g := float64(top[0].Data[0]); math.Abs(g-want) > 1e-5 {
		t.Fatalf("loss %.7g, want %.7g", g, want)
	}
	top[0].Diff[0] = 1
	l.Backward(top, []bool{true, true, false, false}, bottom)
	// d = pred − target = −target: smooth L1's slope 0, −1, +1, −lh.
	wantLoc := []float64{0, -1, 1, -lh}
	for i, w := range wantLoc {
		if g := float64(bottom[0].Diff[i]); math.Abs(g-w) > 1e-5 {
			t.Errorf("loc diff[%d] = %g, want %g", i, g, w)
		}
	}
	if g := bottom[1].Diff; math.Abs(float64(g[0])-0.5) > 1e-6 || math.Abs(float64(g[1])+0.5) > 1e-6 {
		t.Errorf("conf diff %v, want [0.5 -0.5]", g)
	}
}

// TestMultiBoxLossNoAllocs: after the first pass, Forward and Backward of
// SSD's default configuration allocate nothing.
func TestMultiBoxLossNoAllocs(t *testing.T) {
	bottom := mbBottoms(t, true)
	top := []*tensor.Blob{tensor.NewBlob("loss")}
	l := newTestLayer(t, mbDefaults(), Context{}, bottom, top)
	l.Forward(bottom, top)
	top[0].Diff[0] = 1
	prop := []bool{true, true, false, false}
	l.Backward(top, prop, bottom)
	if n := testing.AllocsPerRun(5, func() {
		l.Forward(bottom, top)
		l.Backward(top, prop, bottom)
	}); n != 0 {
		t.Errorf("%v allocations per Forward+Backward", n)
	}
}

// mbCheckGradients compares Backward's gradients of the location
// predictions and the confidences with central differences of the loss
// (step h, relative threshold thr, at least 1 in the scale), at the
// points where matching and mining are stable: an element whose ±h
// changes the matched priors or the confidence loss's rows is skipped, as
// the loss is not differentiable across such a change; at most a tenth of
// the elements may be.
func mbCheckGradients(t *testing.T, l *multiBoxLossLayer, bottom, top []*tensor.Blob, h, thr float64) {
	t.Helper()
	l.Forward(bottom, top)
	top[0].Diff[0] = 1
	l.Backward(top, []bool{true, true, false, false}, bottom)
	pos, rows := slices.Clone(l.pos), slices.Clone(l.rows)
	same := func() bool { return slices.Equal(pos, l.pos) && slices.Equal(rows, l.rows) }
	for b := range 2 {
		grad := slices.Clone(bottom[b].Diff)
		data := bottom[b].Data
		skipped, bad := 0, 0
		for j := range data {
			x := data[j]
			data[j] = x + float32(h)
			l.Forward(bottom, top)
			lp, okp := float64(top[0].Data[0]), same()
			data[j] = x - float32(h)
			l.Forward(bottom, top)
			lm, okm := float64(top[0].Data[0]), same()
			data[j] = x
			if !okp || !okm {
				skipped++
				continue
			}
			num := (lp - lm) / (2 * h)
			ana := float64(grad[j])
			if math.Abs(num-ana) > thr*math.Max(math.Max(math.Abs(num), math.Abs(ana)), 1) {
				if bad < 5 {
					t.Errorf("bottom %d [%d]: analytic %.6g, numeric %.6g", b, j, ana, num)
				}
				bad++
			}
		}
		if skipped*10 > len(data) {
			t.Errorf("bottom %d: %d of %d elements change the matching or mining at ±%g", b, skipped, len(data), h)
		}
	}
	l.Forward(bottom, top)
}

package layers

import (
	"fmt"
	"math"
	"slices"

	"dsgd/engine/tensor"
)

// MultiBoxLocLoss is SSD's MultiBoxLossParameter.LocLossType.
type MultiBoxLocLoss int

// The localization losses, numbered as in the fork's caffe.proto.
const (
	// LocL2 is Caffe's EuclideanLoss over the matched boxes: Σ d²/2.
	LocL2 MultiBoxLocLoss = 0
	// LocSmoothL1 is Fast R-CNN's smooth L1 (σ = 1): 0.5·d² below |d| = 1,
	// |d| − 0.5 above (the fork's default).
	LocSmoothL1 MultiBoxLocLoss = 1
)

// MultiBoxConfLoss is SSD's MultiBoxLossParameter.ConfLossType.
type MultiBoxConfLoss int

// The confidence losses, numbered as in the fork's caffe.proto.
const (
	// ConfSoftmax is a softmax cross-entropy over the classes of each
	// prior (the fork's default).
	ConfSoftmax MultiBoxConfLoss = 0
	// ConfLogistic is a sigmoid cross-entropy per class and prior.
	ConfLogistic MultiBoxConfLoss = 1
)

// MultiBoxMatch is SSD's MultiBoxLossParameter.MatchType.
type MultiBoxMatch int

// The matchings, numbered as in the fork's caffe.proto.
const (
	// MatchBipartite gives each ground-truth box its best prior, greedily
	// by overlap, and nothing else.
	MatchBipartite MultiBoxMatch = 0
	// MatchPerPrediction adds to the bipartite matches every other prior
	// whose best overlap reaches OverlapThreshold (the fork's default).
	MatchPerPrediction MultiBoxMatch = 1
)

// MultiBoxMining is SSD's MultiBoxLossParameter.MiningType.
type MultiBoxMining int

// The mining types, numbered as in the fork's caffe.proto.
const (
	// MineNone takes every prior into the confidence loss.
	MineNone MultiBoxMining = 0
	// MineMaxNegative takes the matched priors and, per image, the
	// NegPosRatio times as many unmatched ones with the highest confidence
	// loss (the fork's default).
	MineMaxNegative MultiBoxMining = 1
	// MineHardExample takes, per image, the SampleSize priors with the
	// highest confidence plus localization loss (online hard example
	// mining); matched priors not taken drop out of both losses.
	MineHardExample MultiBoxMining = 2
)

// MultiBoxLossConfig is SSD's MultiBoxLossParameter (weiliu89/caffe,
// branch ssd) with the layer's loss_param normalization; caffedef fills
// it with the fork's defaults.
type MultiBoxLossConfig struct {
	// LocLoss and ConfLoss are the two losses' kinds.
	LocLoss  MultiBoxLocLoss
	ConfLoss MultiBoxConfLoss
	// LocWeight weighs the localization loss against the confidence loss.
	LocWeight float32
	// NumClasses counts the classes, background included.
	NumClasses int
	// ShareLocation: one box per prior for all classes; otherwise one per
	// prior and class.
	ShareLocation bool
	// Match is how priors are matched to ground truth; OverlapThreshold is
	// PER_PREDICTION's least overlap.
	Match            MultiBoxMatch
	OverlapThreshold float32
	// UsePriorForMatching matches the priors themselves; otherwise the
	// boxes the location predictions decode to.
	UsePriorForMatching bool
	// BackgroundLabelID is the background class; a ground-truth box of it
	// is an error, as in the fork.
	BackgroundLabelID int
	// UseDifficultGT keeps ground truth marked difficult.
	UseDifficultGT bool
	// NegPosRatio and NegOverlap select MAX_NEGATIVE's negatives: at most
	// NegPosRatio per positive, among the unmatched priors overlapping no
	// ground truth by NegOverlap or more.
	NegPosRatio, NegOverlap float32
	// Code is how boxes are encoded against the priors; with
	// EncodeVarianceInTarget the targets are encoded without the
	// variances and both predictions and targets are then divided by them.
	Code                   BBoxCode
	EncodeVarianceInTarget bool
	// MapObjectToAgnostic makes every object class the one class after the
	// background (an objectness detector; NumClasses 2).
	MapObjectToAgnostic bool
	// IgnoreCrossBoundaryBBox leaves the priors (or decoded boxes) that
	// reach outside [0, 1] unmatched and out of MAX_NEGATIVE's negatives.
	IgnoreCrossBoundaryBBox bool
	// BPInside gives no gradient to a matched box's coordinate that lies
	// outside [0, 1] (the prior's, or with !UsePriorForMatching the
	// decoded box's).
	BPInside bool
	// Mining selects the priors of the confidence loss.
	Mining MultiBoxMining
	// HasNMS runs non-maximum suppression (NMSThreshold, NMSTopK) on the
	// mining candidates, by their loss, before they are taken (when
	// NMSThreshold > 0); UsePriorForNMS suppresses by the priors, else by
	// the decoded predictions. The fork's nms_param top_k defaults to 0,
	// which leaves no candidate.
	HasNMS         bool
	NMSThreshold   float32
	NMSTopK        int
	UsePriorForNMS bool
	// SampleSize is HARD_EXAMPLE's number of priors per image.
	SampleSize int
	// Normalization divides both losses (loss_param; VALID: by the number
	// of matched priors).
	Normalization LossNormalization
	// NoLocLoss and NoConfLoss leave a loss out of the top, as the fork
	// does for a bottom with propagate_down false (its tests check each
	// gradient alone this way).
	NoLocLoss, NoConfLoss bool
}

// Type returns "MultiBoxLoss".
func (*MultiBoxLossConfig) Type() string { return "MultiBoxLoss" }

// Build returns SSD's MultiBoxLoss layer. Its bottoms are the location
// predictions (N × P·L·4, L = 1 with ShareLocation, else NumClasses;
// prior-major, as DetectionOutput reads them), the confidences (N ×
// P·NumClasses, raw scores), the priors (PriorBox's 1×2×(P·4)) and the
// ground truth (1×1×G×8, rows [item_id, label, instance_id, xmin, ymin,
// xmax, ymax, difficult], item_id −1 for none, as AnnotatedData writes
// it). Its top is the scalar loss LocWeight·loc/n + conf/n, n the
// normalizer (at least 1):
//
//   - each image's priors are matched to its ground truth (Match,
//     OverlapThreshold, UsePriorForMatching, IgnoreCrossBoundaryBBox);
//   - loc is the smooth L1 (or L2) loss between the matched priors'
//     predictions and their ground truth encoded against them (Code);
//   - conf is the softmax (or logistic) loss of the matched priors
//     towards their ground truth's class and of the mined negatives (or
//     of every prior, Mining NONE) towards the background.
//
// Backward gives the location predictions and the confidences the
// gradient of the entries that took part (zero elsewhere), as the fork;
// the priors and the ground truth take none (GradientBlocker).
//
// Where the fork misplaces LOGISTIC's targets (Mining NONE: it steps its
// target pointer by P, not P·C, per image, so from the second image on
// the positives' targets land on other priors' entries), the targets here
// are the positives' own. Bad ground truth (the background's class, a
// class out of range, an item_id outside the batch) stops Forward with a
// panic naming the row, where the fork CHECK-fails; the model turns it
// into an error naming the layer.
func (c *MultiBoxLossConfig) Build(Context) (Layer, error) {
	switch {
	case c.NumClasses < 1:
		return nil, fmt.Errorf("layers: MultiBoxLoss needs num_classes of at least 1, got %d", c.NumClasses)
	case c.LocLoss != LocL2 && c.LocLoss != LocSmoothL1:
		return nil, fmt.Errorf("layers: MultiBoxLoss: unknown loc_loss_type %d", c.LocLoss)
	case c.ConfLoss != ConfSoftmax && c.ConfLoss != ConfLogistic:
		return nil, fmt.Errorf("layers: MultiBoxLoss: unknown conf_loss_type %d", c.ConfLoss)
	case c.Match != MatchBipartite && c.Match != MatchPerPrediction:
		return nil, fmt.Errorf("layers: MultiBoxLoss: unknown match_type %d", c.Match)
	case c.Mining < MineNone || c.Mining > MineHardExample:
		return nil, fmt.Errorf("layers: MultiBoxLoss: unknown mining_type %d", c.Mining)
	case c.Normalization < NormValid || c.Normalization > NormNone:
		return nil, fmt.Errorf("layers: MultiBoxLoss: unknown normalization %d", c.Normalization)
	case c.BackgroundLabelID < 0:
		return nil, fmt.Errorf("layers: MultiBoxLoss: background_label_id must not be negative (a uint32 in the fork), got %d", c.BackgroundLabelID)
	case c.ConfLoss == ConfSoftmax && c.BackgroundLabelID >= c.NumClasses:
		return nil, fmt.Errorf("layers: MultiBoxLoss: background_label_id %d is not a class of %d: SOFTMAX needs it in [0, num_classes)", c.BackgroundLabelID, c.NumClasses)
	case c.ConfLoss == ConfLogistic && c.BackgroundLabelID != 0:
		return nil, fmt.Errorf("layers: MultiBoxLoss: LOGISTIC needs background_label_id 0, got %d: the fork fills every LOGISTIC target with the background id's value before it sets the 1s, a target in [0, 1] only for 0", c.BackgroundLabelID)
	case c.Mining != MineNone && !c.ShareLocation:
		return nil, fmt.Errorf("layers: MultiBoxLoss: mining_type %v needs share_location true (the fork mines only then); use mining_type NONE", c.Mining)
	case c.Mining == MineHardExample && c.SampleSize <= 0:
		return nil, fmt.Errorf("layers: MultiBoxLoss: HARD_EXAMPLE mining needs a positive sample_size, got %d", c.SampleSize)
	case c.MapObjectToAgnostic && c.NumClasses != 2:
		return nil, fmt.Errorf("layers: MultiBoxLoss: map_object_to_agnostic needs num_classes 2 (the background and the object), got %d", c.NumClasses)
	case c.MapObjectToAgnostic && c.BackgroundLabelID != 0:
		return nil, fmt.Errorf("layers: MultiBoxLoss: map_object_to_agnostic needs background_label_id 0: the fork labels objects background_label_id+1 = %d, not a class of 2", c.BackgroundLabelID+1)
	}
	switch c.Code {
	case CodeCorner, CodeCenterSize, CodeCornerSize:
	default:
		return nil, fmt.Errorf("layers: MultiBoxLoss: unknown code type %v", c.Code)
	}
	for _, f := range []struct {
		name string
		v    float32
	}{{"loc_weight", c.LocWeight}, {"overlap_threshold", c.OverlapThreshold}, {"neg_pos_ratio", c.NegPosRatio}, {"neg_overlap", c.NegOverlap}, {"nms_threshold", c.NMSThreshold}} {
		if math.IsNaN(float64(f.v)) || math.IsInf(float64(f.v), 0) {
			return nil, fmt.Errorf("layers: MultiBoxLoss: %s must be finite, got %g", f.name, f.v)
		}
	}
	l := &multiBoxLossLayer{cfg: *c, locClasses: 1}
	if !c.ShareLocation {
		l.locClasses = c.NumClasses
	}
	return l, nil
}

// String returns the fork's name of the mining type.
func (m MultiBoxMining) String() string {
	switch m {
	case MineNone:
		return "NONE"
	case MineMaxNegative:
		return "MAX_NEGATIVE"
	case MineHardExample:
		return "HARD_EXAMPLE"
	}
	return fmt.Sprintf("MultiBoxMining(%d)", int(m))
}

// mbGT is one ground-truth box: its class and the label row it came from.
type mbGT struct {
	box   bbox
	label int
	row   int
}

// mbMatch is one image's matching for one location class (-1: shared):
// per prior, the ground truth index (-1 none, -2 ignored as crossing the
// image's boundary) and the best overlap.
type mbMatch struct {
	label   int
	idx     []int
	overlap []float32
}

// mbPos is a matched prior: the image, the location class's index in the
// predictions, the prior and its ground truth.
type mbPos struct {
	img, lc, prior, gt int
}

type multiBoxLossLayer struct {
	cfg        MultiBoxLossConfig
	locClasses int
	num, np    int

	// Per Forward, reused.
	priors  []bbox
	vars    [][4]float32
	gts     [][]mbGT     // per image
	matches [][]mbMatch  // per image, by ascending label (the fork's map)
	pool    []mbMatch    // the matches' storage
	ov      []float32    // one image's prior × gt overlaps (0: none above 1e-6)
	gtPool  []int        // bipartite's unmatched gt
	touch   []int        // the boxes overlapping some gt
	gtSel   []int        // matchBoxes' ground truth of the class matched
	decoded []bbox       // one image's decoded boxes
	negs    [][]int      // per image, the mined negatives
	cand    []scoreIndex // mining's candidates
	sel     []bool       // mining's picks, per prior
	kept    []int        // NMS's kept candidates
	loss    []float64    // one image's per-prior mining loss
	pos     []mbPos      // the matched priors, in the fork's order
	locD    []float64    // pred − target per matched coordinate
	locG    []float32    // the loss's derivative there, unscaled
	rows    []int        // the confidence loss's priors, image·P + prior
	confG   []float32    // the confidence loss's gradient per row and class, unscaled
	target  []float32    // LOGISTIC's targets per row and class
	labels  []int        // SOFTMAX's target per row
	locPer  []float64    // HARD_EXAMPLE's localization loss per image and prior
	scores  []float64    // NMS's candidates' losses
	boxes   []bbox       // and boxes
	elig    []int        // and priors
	numPos  int
	norm    float64
}

// fltMin is C's FLT_MIN, the least probability the fork takes the log of.
const fltMin = 0x1p-126

func (*multiBoxLossLayer) Type() string    { return "MultiBoxLoss" }
func (*multiBoxLossLayer) Params() []Param { return nil }

// IsLoss marks MultiBoxLoss as a loss layer (loss_weight 1 by default).
func (*multiBoxLossLayer) IsLoss() {}

// AllowBackward implements GradientBlocker: only the location predictions
// and the confidences take a gradient; the fork stops at the others.
func (*multiBoxLossLayer) AllowBackward(i int) bool { return i < 2 }

func (l *multiBoxLossLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("MultiBoxLoss", bottom, top, 4, 4, 1, 1); err != nil {
		return fmt.Errorf("%w (location predictions, confidences, priors, ground truth)", err)
	}
	for _, b := range bottom {
		if top[0] == b {
			return fmt.Errorf("layers: MultiBoxLoss cannot run in place: its top is the scalar loss")
		}
	}
	return l.Reshape(bottom, top)
}

func (l *multiBoxLossLayer) Reshape(bottom, top []*tensor.Blob) error {
	loc, conf, pri, gt := bottom[0].Shape, bottom[1].Shape, bottom[2].Shape, bottom[3].Shape
	if len(pri) < 3 || len(pri) > 4 || pri[0] < 1 || pri[1] != 2 || pri[2]%4 != 0 || len(pri) == 4 && pri[3] != 1 {
		return fmt.Errorf("layers: MultiBoxLoss: bottom 2 (the priors) must be PriorBox's 1×2×(P·4), got %v", pri)
	}
	l.np = pri[2] / 4
	if len(loc) < 2 || len(conf) < 2 || loc[0] != conf[0] {
		return fmt.Errorf("layers: MultiBoxLoss: bottoms 0 (locations) %v and 1 (confidences) %v must have the same number of images on axis 0", loc, conf)
	}
	l.num = loc[0]
	if n := loc.CountFrom(1); n != l.np*l.locClasses*4 {
		return fmt.Errorf("layers: MultiBoxLoss: bottom 0 (locations) %v has %d values per image; %d priors × %d location classes × 4 need %d", loc, n, l.np, l.locClasses, l.np*l.locClasses*4)
	}
	if n := conf.CountFrom(1); n != l.np*l.cfg.NumClasses {
		return fmt.Errorf("layers: MultiBoxLoss: bottom 1 (confidences) %v has %d values per image; %d priors × %d classes need %d", conf, n, l.np, l.cfg.NumClasses, l.np*l.cfg.NumClasses)
	}
	if len(gt) != 4 || gt[0] != 1 || gt[1] != 1 || gt[3] != 8 {
		return fmt.Errorf("layers: MultiBoxLoss: bottom 3 (the ground truth) must be 1×1×G×8, rows [item_id label instance_id xmin ymin xmax ymax difficult] as AnnotatedData writes them, got %v", gt)
	}
	top[0].Reshape()
	return nil
}

// readGT is the fork's GetGroundTruth: the boxes of each image, rows with
// item_id −1 skipped, difficult ones too unless UseDifficultGT.
func (l *multiBoxLossLayer) readGT(data []float32) {
	for len(l.gts) < l.num {
		l.gts = append(l.gts, nil)
	}
	for i := range l.num {
		l.gts[i] = l.gts[i][:0]
	}
	for r := range len(data) / 8 {
		row := data[r*8 : r*8+8]
		item := int(row[0])
		if item == -1 {
			continue
		}
		if item < 0 || item >= l.num || float32(item) != row[0] {
			panic(fmt.Sprintf("layers: MultiBoxLoss: ground truth row %d has item_id %g, not an image of the batch of %d (or -1 for none)", r, row[0], l.num))
		}
		label := int(row[1])
		switch {
		case float32(label) != row[1]:
			panic(fmt.Sprintf("layers: MultiBoxLoss: ground truth row %d has label %g, not a class index", r, row[1]))
		case label == l.cfg.BackgroundLabelID:
			panic(fmt.Sprintf("layers: MultiBoxLoss: ground truth row %d has the background's label %d (the fork: \"Found background label in the dataset\")", r, label))
		case label < 0 || label >= l.cfg.NumClasses && !l.cfg.MapObjectToAgnostic:
			panic(fmt.Sprintf("layers: MultiBoxLoss: ground truth row %d has label %d, not a class of num_classes %d", r, label, l.cfg.NumClasses))
		}
		if row[7] != 0 && !l.cfg.UseDifficultGT {
			continue
		}
		b := bbox{xmin: row[3], ymin: row[4], xmax: row[5], ymax: row[6]}
		b.size = bboxSize(b)
		l.gts[item] = append(l.gts[item], mbGT{box: b, label: label, row: r})
	}
}

// crossesBoundary is the fork's IsCrossBoundaryBBox.
func crossesBoundary(b bbox) bool {
	return b.xmin < 0 || b.xmin > 1 || b.ymin < 0 || b.ymin > 1 || b.xmax < 0 || b.xmax > 1 || b.ymax < 0 || b.ymax > 1
}

// newMatch returns a cleared match for label from the layer's storage.
func (l *multiBoxLossLayer) newMatch(label int) mbMatch {
	n := len(l.pool)
	if n < cap(l.pool) {
		l.pool = l.pool[:n+1]
	} else {
		l.pool = append(l.pool, mbMatch{})
	}
	m := &l.pool[n]
	m.label = label
	if cap(m.idx) < l.np {
		m.idx, m.overlap = make([]int, l.np), make([]float32, l.np)
	}
	m.idx, m.overlap = m.idx[:l.np], m.overlap[:l.np]
	for i := range m.idx {
		m.idx[i], m.overlap[i] = -1, 0
	}
	return *m
}

// matchBoxes is the fork's MatchBBox of boxes against the ground truth of
// class label (every one for -1) into m.
func (l *multiBoxLossLayer) matchBoxes(gts []mbGT, boxes []bbox, label int, m mbMatch) {
	gi := l.gtSel[:0]
	for g, b := range gts {
		if label == -1 || b.label == label {
			gi = append(gi, g)
		}
	}
	l.gtSel = gi
	ng := len(gi)
	if ng == 0 {
		return
	}
	if cap(l.ov) < len(boxes)*ng {
		l.ov = make([]float32, len(boxes)*ng)
	}
	ov := l.ov[:len(boxes)*ng]
	clear(ov)
	// touch lists the boxes that overlap some ground truth, ascending: the
	// only ones the matching looks at (the fork's map of overlaps).
	touch := l.touch[:0]
	for i, b := range boxes {
		if l.cfg.IgnoreCrossBoundaryBBox && crossesBoundary(b) {
			m.idx[i] = -2
			continue
		}
		hit := false
		for j, g := range gi {
			if o := jaccard(b, gts[g].box); o > 1e-6 {
				m.overlap[i] = max(m.overlap[i], o)
				ov[i*ng+j] = o
				hit = true
			}
		}
		if hit {
			touch = append(touch, i)
		}
	}
	l.touch = touch
	// Bipartite: the most overlapping (prediction, ground truth) pair
	// first, each used once; ties go to the lower prediction, then the
	// earlier ground truth.
	l.gtPool = l.gtPool[:0]
	for j := range ng {
		l.gtPool = append(l.gtPool, j)
	}
	for len(l.gtPool) > 0 {
		bi, bj, best := -1, -1, float32(-1)
		for _, i := range touch {
			if m.idx[i] != -1 {
				continue
			}
			for _, j := range l.gtPool {
				if o := ov[i*ng+j]; o > 0 && o > best {
					bi, bj, best = i, j, o
				}
			}
		}
		if bi == -1 {
			break
		}
		m.idx[bi], m.overlap[bi] = gi[bj], best
		l.gtPool = slices.DeleteFunc(l.gtPool, func(j int) bool { return j == bj })
	}
	if l.cfg.Match != MatchPerPrediction {
		return
	}
	for _, i := range touch {
		if m.idx[i] != -1 {
			continue
		}
		bj, best := -1, float32(-1)
		for j := range ng {
			if o := ov[i*ng+j]; o > 0 && o >= l.cfg.OverlapThreshold && o > best {
				bj, best = j, o
			}
		}
		if bj != -1 {
			m.idx[i], m.overlap[i] = gi[bj], best
		}
	}
}

// predBoxes decodes image i's location predictions of location class lc.
func (l *multiBoxLossLayer) predBoxes(loc []float32, i, lc int) []bbox {
	if cap(l.decoded) < l.np {
		l.decoded = make([]bbox, l.np)
	}
	boxes := l.decoded[:l.np]
	nlc := l.locClasses
	for p := range l.np {
		off := ((i*l.np+p)*nlc + lc) * 4
		boxes[p] = decodeBBox("MultiBoxLoss", l.cfg.Code, l.cfg.EncodeVarianceInTarget, l.priors[p], l.vars[p], loc[off:off+4])
	}
	return boxes
}

// findMatches is the fork's FindMatches.
func (l *multiBoxLossLayer) findMatches(loc []float32) {
	l.pool = l.pool[:0]
	for len(l.matches) < l.num {
		l.matches = append(l.matches, nil)
	}
	for i := range l.num {
		l.matches[i] = l.matches[i][:0]
		gts := l.gts[i]
		if len(gts) == 0 {
			continue
		}
		if !l.cfg.UsePriorForMatching {
			for c := range l.locClasses {
				label := c
				if l.cfg.ShareLocation {
					label = -1
				} else if label == l.cfg.BackgroundLabelID {
					continue
				}
				m := l.newMatch(label)
				l.matchBoxes(gts, l.predBoxes(loc, i, c), label, m)
				l.matches[i] = append(l.matches[i], m)
			}
			continue
		}
		m := l.newMatch(-1)
		l.matchBoxes(gts, l.priors, -1, m)
		if l.cfg.ShareLocation {
			l.matches[i] = append(l.matches[i], m)
			continue
		}
		// Share the prior matching out to the classes of its ground truth.
		for c := range l.locClasses {
			if c == l.cfg.BackgroundLabelID {
				continue
			}
			mc := l.newMatch(c)
			copy(mc.overlap, m.overlap)
			for p, g := range m.idx {
				if g > -1 && gts[g].label == c {
					mc.idx[p] = g
				}
			}
			l.matches[i] = append(l.matches[i], mc)
		}
	}
}

// softmaxShift is s's largest score mx and Σ exp(s − mx), in float64:
// softmax(s)[c] = exp(s[c] − mx) / sum.
func softmaxShift(s []float32) (mx, sum float64) {
	mx = float64(s[0])
	for _, v := range s[1:] {
		mx = max(mx, float64(v))
	}
	for _, v := range s {
		sum += math.Exp(float64(v) - mx)
	}
	return mx, sum
}

// confLoss is the fork's ComputeConfLoss of one prior's scores s towards
// class label.
func (l *multiBoxLossLayer) confLoss(s []float32, label int) float64 {
	if l.cfg.ConfLoss == ConfSoftmax {
		mx, sum := softmaxShift(s)
		p := math.Exp(float64(s[label])-mx) / sum
		return -math.Log(max(p, fltMin))
	}
	var loss float64
	for c, v := range s {
		t := 0.0
		if c == label {
			t = 1
		}
		loss += logisticLoss(float64(v), t)
	}
	return loss
}

// logisticLoss is Caffe's stable sigmoid cross-entropy of input x towards
// target t.
func logisticLoss(x, t float64) float64 {
	pos := 0.0
	if x >= 0 {
		pos = 1
	}
	return -(x*(t-pos) - math.Log(1+math.Exp(x-2*x*pos)))
}

// objectLabel is the confidence target of a prior matched to gt.
func (l *multiBoxLossLayer) objectLabel(gt mbGT) int {
	if l.cfg.MapObjectToAgnostic {
		return l.cfg.BackgroundLabelID + 1
	}
	return gt.label
}

// encode is the fork's EncodeBBox of ground truth g against prior b with
// variances v (variances applied unless EncodeVarianceInTarget).
func (l *multiBoxLossLayer) encode(b bbox, v [4]float32, g mbGT) [4]float64 {
	// The fork checks the variances it divides by: all of them with
	// EncodeVarianceInTarget (EncodeLocPrediction), else CORNER's and
	// CORNER_SIZE's (EncodeBBox).
	if (l.cfg.EncodeVarianceInTarget || l.cfg.Code != CodeCenterSize) && !(v[0] > 0 && v[1] > 0 && v[2] > 0 && v[3] > 0) {
		panic(fmt.Sprintf("layers: MultiBoxLoss: the prior variances must be positive, got %v", v))
	}
	if l.cfg.EncodeVarianceInTarget {
		v = [4]float32{1, 1, 1, 1}
	}
	x := g.box
	pw, ph := float64(b.xmax)-float64(b.xmin), float64(b.ymax)-float64(b.ymin)
	if l.cfg.Code != CodeCorner && !(pw > 0 && ph > 0) {
		panic(fmt.Sprintf("layers: MultiBoxLoss: %v needs priors of positive width and height, got [%g %g %g %g] (the fork stops there too)", l.cfg.Code, b.xmin, b.ymin, b.xmax, b.ymax))
	}
	vv := [4]float64{float64(v[0]), float64(v[1]), float64(v[2]), float64(v[3])}
	switch l.cfg.Code {
	case CodeCorner:
		return [4]float64{
			(float64(x.xmin) - float64(b.xmin)) / vv[0], (float64(x.ymin) - float64(b.ymin)) / vv[1],
			(float64(x.xmax) - float64(b.xmax)) / vv[2], (float64(x.ymax) - float64(b.ymax)) / vv[3],
		}
	case CodeCornerSize:
		return [4]float64{
			(float64(x.xmin) - float64(b.xmin)) / pw / vv[0], (float64(x.ymin) - float64(b.ymin)) / ph / vv[1],
			(float64(x.xmax) - float64(b.xmax)) / pw / vv[2], (float64(x.ymax) - float64(b.ymax)) / ph / vv[3],
		}
	}
	gw, gh := float64(x.xmax)-float64(x.xmin), float64(x.ymax)-float64(x.ymin)
	if !(gw > 0 && gh > 0) {
		panic(fmt.Sprintf("layers: MultiBoxLoss: ground truth row %d [%g %g %g %g] has no width or height, which CENTER_SIZE cannot encode (the fork stops there too)", g.row, x.xmin, x.ymin, x.xmax, x.ymax))
	}
	pcx, pcy := (float64(b.xmin)+float64(b.xmax))/2, (float64(b.ymin)+float64(b.ymax))/2
	gcx, gcy := (float64(x.xmin)+float64(x.xmax))/2, (float64(x.ymin)+float64(x.ymax))/2
	return [4]float64{
		(gcx - pcx) / pw / vv[0], (gcy - pcy) / ph / vv[1],
		math.Log(gw/pw) / vv[2], math.Log(gh/ph) / vv[3],
	}
}

// encodeLoc is the fork's EncodeLocPrediction: for each matched prior (in
// l.pos's order) pred − target into l.locD and the loss's derivative
// into l.locG; it returns the summed loss.
func (l *multiBoxLossLayer) encodeLoc(loc []float32) float64 {
	n := len(l.pos) * 4
	if cap(l.locD) < n {
		l.locD, l.locG = make([]float64, n), make([]float32, n)
	}
	l.locD, l.locG = l.locD[:n], l.locG[:n]
	var sum float64
	for k, ps := range l.pos {
		g := l.gts[ps.img][ps.gt]
		t := l.encode(l.priors[ps.prior], l.vars[ps.prior], g)
		off := ((ps.img*l.np+ps.prior)*l.locClasses + ps.lc) * 4
		p := loc[off : off+4]
		var in [4]bool
		if l.cfg.BPInside {
			mb := l.priors[ps.prior]
			if !l.cfg.UsePriorForMatching {
				mb = decodeBBox("MultiBoxLoss", l.cfg.Code, l.cfg.EncodeVarianceInTarget, l.priors[ps.prior], l.vars[ps.prior], p)
			}
			for c, v := range [4]float32{mb.xmin, mb.ymin, mb.xmax, mb.ymax} {
				in[c] = v < 0 || v > 1
			}
		}
		for c := range 4 {
			pv := float64(p[c])
			if in[c] {
				pv = t[c] // outside: no gradient, as the fork's copy of the target
			}
			tv := t[c]
			if l.cfg.EncodeVarianceInTarget {
				pv /= float64(l.vars[ps.prior][c])
				tv /= float64(l.vars[ps.prior][c])
			}
			d := pv - tv
			l.locD[k*4+c] = d
			var f, fp float64
			if l.cfg.LocLoss == LocL2 {
				f, fp = 0.5*d*d, d
			} else if a := math.Abs(d); a < 1 {
				f, fp = 0.5*d*d, d
			} else {
				f, fp = a-0.5, math.Copysign(1, d)
			}
			if in[c] {
				fp = 0
			} else if l.cfg.EncodeVarianceInTarget {
				fp /= float64(l.vars[ps.prior][c])
			}
			sum += f
			l.locG[k*4+c] = float32(fp)
		}
	}
	return sum
}

// collectPos lists the matched priors in the fork's order: by image, by
// location class, by prior.
func (l *multiBoxLossLayer) collectPos() {
	l.pos = l.pos[:0]
	for i := range l.num {
		for _, m := range l.matches[i] {
			lc := 0
			if !l.cfg.ShareLocation {
				lc = m.label
			}
			for p, g := range m.idx {
				if g > -1 {
					l.pos = append(l.pos, mbPos{img: i, lc: lc, prior: p, gt: g})
				}
			}
		}
	}
}

// nms is the fork's ApplyNMS (not the Fast one) of boxes by score: it
// leaves the kept candidates' positions (into boxes) in l.kept, best
// first.
func (l *multiBoxLossLayer) nms(boxes []bbox, scores []float64) {
	l.cand = l.cand[:0]
	for i, s := range scores {
		l.cand = append(l.cand, scoreIndex{score: float32(s), idx: i})
	}
	slices.SortStableFunc(l.cand, func(a, b scoreIndex) int {
		sa, sb := scores[a.idx], scores[b.idx]
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return 0
	})
	topK := l.cfg.NMSTopK
	if topK > -1 && topK < len(l.cand) {
		l.cand = l.cand[:topK]
	}
	l.kept = l.kept[:0]
	for len(l.cand) > 0 {
		best := l.cand[0].idx
		l.cand = l.cand[1:]
		if boxes[best].size < 1e-5 {
			continue
		}
		l.kept = append(l.kept, best)
		if topK > -1 && len(l.kept) >= topK {
			break
		}
		l.cand = slices.DeleteFunc(l.cand, func(c scoreIndex) bool {
			return boxes[c.idx].size < 1e-5 || jaccard(boxes[best], boxes[c.idx]) > l.cfg.NMSThreshold
		})
	}
}

// mine is the fork's MineHardExamples: per image, the negatives (and, for
// HARD_EXAMPLE, the positives kept) by confidence (plus localization)
// loss.
func (l *multiBoxLossLayer) mine(loc, conf []float32) {
	for len(l.negs) < l.num {
		l.negs = append(l.negs, nil)
	}
	for i := range l.num {
		l.negs[i] = l.negs[i][:0]
	}
	if l.cfg.Mining == MineNone {
		return
	}
	nc := l.cfg.NumClasses
	hard := l.cfg.Mining == MineHardExample
	// HARD_EXAMPLE adds each matched prior's localization loss.
	if cap(l.locPer) < l.num*l.np {
		l.locPer = make([]float64, l.num*l.np)
	}
	locPer := l.locPer[:l.num*l.np]
	clear(locPer)
	if hard && len(l.pos) > 0 {
		l.encodeLoc(loc)
		for k, ps := range l.pos {
			var s float64
			for c := range 4 {
				d := l.locD[k*4+c]
				if a := math.Abs(d); l.cfg.LocLoss == LocL2 || a < 1 {
					s += 0.5 * d * d
				} else {
					s += a - 0.5
				}
			}
			locPer[ps.img*l.np+ps.prior] = s
		}
	}
	if cap(l.loss) < l.np {
		l.loss, l.sel = make([]float64, l.np), make([]bool, l.np)
	}
	loss, sel := l.loss[:l.np], l.sel[:l.np]
	for i := range l.num {
		ms := l.matches[i]
		if len(ms) == 0 {
			continue
		}
		for p := range l.np {
			label := l.cfg.BackgroundLabelID
			for _, m := range ms {
				if g := m.idx[p]; g > -1 {
					label = l.objectLabel(l.gts[i][g])
					break
				}
			}
			loss[p] = l.confLoss(conf[(i*l.np+p)*nc:(i*l.np+p+1)*nc], label) + locPer[i*l.np+p]
		}
		for _, m := range ms {
			eligible := func(p int) bool {
				return hard || m.idx[p] == -1 && m.overlap[p] < l.cfg.NegOverlap
			}
			l.cand = l.cand[:0]
			for p := range l.np {
				if eligible(p) {
					l.cand = append(l.cand, scoreIndex{idx: p})
				}
			}
			numSel := len(l.cand)
			if hard {
				numSel = min(l.cfg.SampleSize, numSel)
			} else {
				npos := 0
				for _, g := range m.idx {
					if g > -1 {
						npos++
					}
				}
				numSel = min(int(float32(npos)*l.cfg.NegPosRatio), numSel)
			}
			clear(sel)
			if l.cfg.HasNMS && l.cfg.NMSThreshold > 0 {
				scores, boxes := l.scores[:0], l.boxes[:0]
				var dec []bbox
				if !l.cfg.UsePriorForNMS {
					lc := 0
					if !l.cfg.ShareLocation {
						lc = m.label
					}
					dec = l.predBoxes(loc, i, lc)
				}
				elig := l.elig[:0]
				for _, c := range l.cand {
					elig = append(elig, c.idx)
					scores = append(scores, loss[c.idx])
					if dec != nil {
						boxes = append(boxes, dec[c.idx])
					} else {
						boxes = append(boxes, l.priors[c.idx])
					}
				}
				l.scores, l.boxes, l.elig = scores, boxes, elig
				l.nms(boxes, scores)
				numSel = min(len(l.kept), numSel)
				for _, k := range l.kept[:max(numSel, 0)] {
					sel[elig[k]] = true
				}
			} else {
				slices.SortStableFunc(l.cand, func(a, b scoreIndex) int {
					la, lb := loss[a.idx], loss[b.idx]
					switch {
					case la > lb:
						return -1
					case la < lb:
						return 1
					}
					return 0
				})
				for _, c := range l.cand[:max(numSel, 0)] {
					sel[c.idx] = true
				}
			}
			for p, g := range m.idx {
				switch {
				case g > -1:
					if hard && !sel[p] {
						m.idx[p] = -1
					}
				case g == -1 && sel[p]:
					l.negs[i] = append(l.negs[i], p)
				}
			}
		}
	}
}

func (l *multiBoxLossLayer) normalizer() float64 {
	var n int
	switch l.cfg.Normalization {
	case NormFull:
		n = l.num * l.np
	case NormValid:
		n = l.numPos
	case NormBatchSize:
		n = l.num
	case NormNone:
		n = 1
	}
	return float64(max(n, 1))
}

func (l *multiBoxLossLayer) Forward(bottom, top []*tensor.Blob) {
	loc, conf, pri := bottom[0].Data, bottom[1].Data, bottom[2].Data
	np, nc := l.np, l.cfg.NumClasses
	l.priors, l.vars = l.priors[:0], l.vars[:0]
	for p := range np {
		b := bbox{xmin: pri[4*p], ymin: pri[4*p+1], xmax: pri[4*p+2], ymax: pri[4*p+3]}
		b.size = bboxSize(b)
		l.priors = append(l.priors, b)
		v := pri[4*(np+p) : 4*(np+p)+4]
		l.vars = append(l.vars, [4]float32{v[0], v[1], v[2], v[3]})
	}
	l.readGT(bottom[3].Data)
	l.findMatches(loc)
	l.collectPos()
	l.mine(loc, conf)
	l.collectPos() // HARD_EXAMPLE may have dropped positives
	l.numPos = len(l.pos)

	var locLoss float64
	if len(l.pos) > 0 {
		locLoss = l.encodeLoc(loc)
	}

	// The confidence loss's rows: the positives then the negatives of each
	// image (mining), or every prior.
	l.rows, l.labels = l.rows[:0], l.labels[:0]
	logistic := l.cfg.ConfLoss == ConfLogistic
	if l.cfg.Mining != MineNone {
		k := 0
		for i := range l.num {
			for ; k < len(l.pos) && l.pos[k].img == i; k++ {
				l.rows = append(l.rows, i*np+l.pos[k].prior)
				l.labels = append(l.labels, l.objectLabel(l.gts[i][l.pos[k].gt]))
			}
			for _, p := range l.negs[i] {
				l.rows = append(l.rows, i*np+p)
				l.labels = append(l.labels, l.cfg.BackgroundLabelID)
			}
		}
	} else {
		for r := range l.num * np {
			l.rows = append(l.rows, r)
			l.labels = append(l.labels, l.cfg.BackgroundLabelID)
		}
	}
	n := len(l.rows) * nc
	if cap(l.confG) < n {
		l.confG, l.target = make([]float32, n), make([]float32, n)
	}
	l.confG, l.target = l.confG[:n], l.target[:n]
	if logistic {
		// Filled with the background id (0, which Build requires), then a 1
		// for each positive's class, and for mined negatives the
		// background's; all priors (no mining) are not given the latter.
		clear(l.target)
		if l.cfg.Mining != MineNone {
			for r, lab := range l.labels {
				l.target[r*nc+lab] = 1
			}
		} else {
			for _, ps := range l.pos {
				r := ps.img*np + ps.prior
				l.target[r*nc+l.objectLabel(l.gts[ps.img][ps.gt])] = 1
			}
		}
	} else if l.cfg.Mining == MineNone {
		// Later location classes' matches overwrite earlier ones, as the
		// fork's.
		for _, ps := range l.pos {
			l.labels[ps.img*np+ps.prior] = l.objectLabel(l.gts[ps.img][ps.gt])
		}
	}
	var confLoss float64
	for r, row := range l.rows {
		s := conf[row*nc : (row+1)*nc]
		g := l.confG[r*nc : (r+1)*nc]
		if logistic {
			for c, v := range s {
				x, t := float64(v), float64(l.target[r*nc+c])
				confLoss += logisticLoss(x, t)
				g[c] = float32(1/(1+math.Exp(-x)) - t)
			}
			continue
		}
		mx, sum := softmaxShift(s)
		lab := l.labels[r]
		for c, v := range s {
			pr := math.Exp(float64(v)-mx) / sum
			if c == lab {
				confLoss -= math.Log(max(pr, fltMin))
				pr--
			}
			g[c] = float32(pr)
		}
	}
	l.norm = l.normalizer()
	var total float64
	if !l.cfg.NoLocLoss {
		total += float64(l.cfg.LocWeight) * locLoss / l.norm
	}
	if !l.cfg.NoConfLoss {
		total += confLoss / l.norm
	}
	top[0].Data[0] = float32(total)
}

func (l *multiBoxLossLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	g := float64(top[0].Diff[0]) / l.norm
	np, nc := l.np, l.cfg.NumClasses
	if len(propagateDown) > 0 && propagateDown[0] {
		dx := bottom[0].Diff
		clear(dx)
		if !l.cfg.NoLocLoss {
			s := g * float64(l.cfg.LocWeight)
			for k, ps := range l.pos {
				off := ((ps.img*np+ps.prior)*l.locClasses + ps.lc) * 4
				for c := range 4 {
					dx[off+c] = float32(s * float64(l.locG[k*4+c]))
				}
			}
		}
	}
	if len(propagateDown) > 1 && propagateDown[1] {
		dx := bottom[1].Diff
		clear(dx)
		if !l.cfg.NoConfLoss {
			for r, row := range l.rows {
				for c := range nc {
					dx[row*nc+c] = float32(g * float64(l.confG[r*nc+c]))
				}
			}
		}
	}
}

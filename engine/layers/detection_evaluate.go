package layers

import (
	"fmt"
	"math"
	"slices"

	"dsgd/engine/tensor"
)

// DetectionEvaluateConfig is SSD's DetectionEvaluateParameter (weiliu89/
// caffe, branch ssd): detection_evaluate_param { num_classes
// background_label_id (0) overlap_threshold (0.5) evaluate_difficult_gt
// (true) }. Its name_size_file and resize_param (rescaling the boxes to
// the original images' pixels before matching) are refused by caffedef.
type DetectionEvaluateConfig struct {
	// NumClasses counts the classes, background included.
	NumClasses int
	// BackgroundLabelID is the class that neither the detections nor the
	// ground truth may hold (-1: none).
	BackgroundLabelID int
	// OverlapThreshold is the least Jaccard overlap with a ground truth box
	// that makes a detection a true positive (positive).
	OverlapThreshold float32
	// EvaluateDifficultGT counts difficult ground truth boxes; otherwise a
	// detection matched to one is neither a true nor a false positive.
	EvaluateDifficultGT bool
}

// Type returns "DetectionEvaluate".
func (*DetectionEvaluateConfig) Type() string { return "DetectionEvaluate" }

// Build returns a DetectionEvaluate layer. Bottoms: DetectionOutput's
// 1×1×D×7 rows [image label score xmin ymin xmax ymax] and the ground
// truth's 1×1×G×8 rows [image label instance xmin ymin xmax ymax
// difficult] (AnnotatedData's label top). The top is 1×1×(K+V)×5: first,
// per class but the background in ascending order, [-1 class num_pos -1
// -1], num_pos counting the class's ground truth boxes (the difficult ones
// only with EvaluateDifficultGT); then, per image in ascending order, per
// label in ascending order, per detection by descending score, [image
// label score tp fp]. Each detection is matched to the ground truth box
// of its image and label it overlaps most (the first such); at or above
// OverlapThreshold it is a true positive [.. 1 0] if that box is not yet
// taken by a higher-scoring detection, else a false positive [.. 0 1];
// matched to a difficult box with EvaluateDifficultGT false it is [.. 0
// 0], which the solver skips. V counts the detection rows whose label is
// not -1 (DetectionOutput's rows for an image without detections);
// unused rows stay 0, as in the fork. Ground truth rows are read up to
// the first with image -1. It has no gradient.
//
// The fork sorts each label's detections with std::sort, whose order of
// equal scores is unspecified; here equal scores keep their row order.
func (c *DetectionEvaluateConfig) Build(Context) (Layer, error) {
	if c.NumClasses < 1 {
		return nil, fmt.Errorf("layers: DetectionEvaluate needs num_classes of at least 1, got %d", c.NumClasses)
	}
	if !(c.OverlapThreshold > 0) {
		return nil, fmt.Errorf("layers: DetectionEvaluate: overlap_threshold must be positive, got %g", c.OverlapThreshold)
	}
	return &detectionEvaluateLayer{cfg: *c}, nil
}

type detectionEvaluateLayer struct {
	cfg     DetectionEvaluateConfig
	changed bool

	// Per Forward, reused.
	dets    []evalBox
	gts     []evalBox
	numPos  []int
	visited []bool
}

// evalBox is a detection or ground truth box with its image, label and
// score or difficult flag.
type evalBox struct {
	item, label int
	score       float32
	difficult   bool
	box         bbox
}

func (*detectionEvaluateLayer) Type() string    { return "DetectionEvaluate" }
func (*detectionEvaluateLayer) Params() []Param { return nil }

// AllowBackward implements GradientBlocker: the evaluation has no
// gradient.
func (*detectionEvaluateLayer) AllowBackward(int) bool { return false }

// TopsReshaped implements ForwardReshaper.
func (l *detectionEvaluateLayer) TopsReshaped() bool { return l.changed }

func (l *detectionEvaluateLayer) Setup(bottom, top []*tensor.Blob) error {
	return checkBlobCount("DetectionEvaluate", bottom, top, 2, 2, 1, 1)
}

// posClasses is the number of per-class rows.
func (l *detectionEvaluateLayer) posClasses() int {
	if l.cfg.BackgroundLabelID >= 0 && l.cfg.BackgroundLabelID < l.cfg.NumClasses {
		return l.cfg.NumClasses - 1
	}
	return l.cfg.NumClasses
}

func (l *detectionEvaluateLayer) Reshape(bottom, top []*tensor.Blob) error {
	for i, w := range []int{7, 8} {
		s := bottom[i].Shape
		if len(s) != 4 || s[0] != 1 || s[1] != 1 || s[3] != w {
			what := "the detections, DetectionOutput's 1×1×D×7"
			if i == 1 {
				what = "the ground truth, 1×1×G×8"
			}
			return fmt.Errorf("layers: DetectionEvaluate: bottom %d (%s) has shape %v", i, what, s)
		}
	}
	top[0].Reshape(1, 1, l.rows(bottom[0]), 5)
	return nil
}

// rows is the fork's top height: the per-class rows and the detection
// rows whose label is not -1.
func (l *detectionEvaluateLayer) rows(det *tensor.Blob) int {
	n := l.posClasses()
	d := det.Data
	for r := range det.Shape[2] {
		if d[r*7+1] != -1 {
			n++
		}
	}
	return n
}

func (l *detectionEvaluateLayer) Forward(bottom, top []*tensor.Blob) {
	bg := l.cfg.BackgroundLabelID
	// The detections (the fork's GetDetectionResults): rows of image -1
	// are skipped, label -1 rows read and never output.
	l.dets = l.dets[:0]
	det := bottom[0].Data
	for r := range bottom[0].Shape[2] {
		row := det[r*7 : r*7+7]
		item := int(row[0])
		if item == -1 {
			continue
		}
		label := int(row[1])
		if label == bg {
			panic(fmt.Sprintf("layers: DetectionEvaluate: detection row %d has the background's label %d (the fork: \"Found background label in the detection results\")", r, label))
		}
		if label == -1 {
			continue
		}
		b := bbox{xmin: row[3], ymin: row[4], xmax: row[5], ymax: row[6]}
		b.size = bboxSize(b)
		l.dets = append(l.dets, evalBox{item: item, label: label, score: row[2], box: b})
	}
	// The ground truth (GetGroundTruth): up to the first row of image -1.
	l.gts = l.gts[:0]
	gt := bottom[1].Data
	for r := range bottom[1].Shape[2] {
		row := gt[r*8 : r*8+8]
		item := int(row[0])
		if item == -1 {
			break
		}
		label := int(row[1])
		if label == bg {
			panic(fmt.Sprintf("layers: DetectionEvaluate: ground truth row %d has the background's label %d (the fork: \"Found background label in the dataset\")", r, label))
		}
		b := bbox{xmin: row[3], ymin: row[4], xmax: row[5], ymax: row[6]}
		b.size = bboxSize(b)
		l.gts = append(l.gts, evalBox{item: item, label: label, difficult: row[7] != 0, box: b})
	}
	// Stable: each (image, label)'s boxes keep their row order, the
	// detections then by descending score.
	slices.SortStableFunc(l.gts, func(a, b evalBox) int {
		if a.item != b.item {
			return a.item - b.item
		}
		return a.label - b.label
	})
	slices.SortStableFunc(l.dets, func(a, b evalBox) int {
		switch {
		case a.item != b.item:
			return a.item - b.item
		case a.label != b.label:
			return a.label - b.label
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})

	// The fork's Reshape counts label ≠ -1 rows, image -1 ones included;
	// Reshape has sized the top for the same bottoms.
	want := l.rows(bottom[0])
	t := top[0]
	l.changed = len(t.Shape) != 4 || t.Shape[2] != want
	if l.changed {
		t.Reshape(1, 1, want, 5)
	}
	out := t.Data[:want*5]
	clear(out)

	nc := l.cfg.NumClasses
	if cap(l.numPos) < nc {
		l.numPos = make([]int, nc)
	}
	l.numPos = l.numPos[:nc]
	clear(l.numPos)
	for _, g := range l.gts {
		if g.label < 0 || g.label >= nc {
			continue // counted in no class row, as in the fork
		}
		if l.cfg.EvaluateDifficultGT || !g.difficult {
			l.numPos[g.label]++
		}
	}
	n := 0
	for c := range nc {
		if c == bg {
			continue
		}
		copy(out[n*5:n*5+5], []float32{-1, float32(c), float32(l.numPos[c]), -1, -1})
		n++
	}
	g0 := 0
	for i := 0; i < len(l.dets); {
		d := l.dets[i]
		j := i
		for j < len(l.dets) && l.dets[j].item == d.item && l.dets[j].label == d.label {
			j++
		}
		// This image's and label's ground truth.
		for g0 < len(l.gts) && (l.gts[g0].item < d.item || l.gts[g0].item == d.item && l.gts[g0].label < d.label) {
			g0++
		}
		g1 := g0
		for g1 < len(l.gts) && l.gts[g1].item == d.item && l.gts[g1].label == d.label {
			g1++
		}
		gts := l.gts[g0:g1]
		if cap(l.visited) < len(gts) {
			l.visited = make([]bool, len(gts))
		}
		visited := l.visited[:len(gts)]
		clear(visited)
		for _, e := range l.dets[i:j] {
			row := out[n*5 : n*5+5]
			row[0], row[1], row[2] = float32(e.item), float32(e.label), e.score
			if len(gts) == 0 {
				row[3], row[4] = 0, 1
				n++
				continue
			}
			best, jmax := float32(-1), -1
			for k, g := range gts {
				if o := jaccard(e.box, g.box); o > best {
					best, jmax = o, k
				}
			}
			switch {
			case !(best >= l.cfg.OverlapThreshold):
				row[3], row[4] = 0, 1
			case !l.cfg.EvaluateDifficultGT && gts[jmax].difficult:
				// Neither: the solver skips the row.
			case !visited[jmax]:
				row[3], row[4] = 1, 0
				visited[jmax] = true
			default:
				row[3], row[4] = 0, 1
			}
			n++
		}
		i = j
	}
}

// Backward does nothing: the evaluation has no gradient.
func (*detectionEvaluateLayer) Backward([]*tensor.Blob, []bool, []*tensor.Blob) {}

// APVersion is SSD's SolverParameter.ap_version: how ComputeAP integrates
// the precision-recall curve.
type APVersion string

// The AP versions the fork knows.
const (
	// AP11Point is VOC2007's 11-point interpolated average precision.
	AP11Point APVersion = "11point"
	// APMaxIntegral is the maximally interpolated AP of VOC2012 and ILSVRC.
	APMaxIntegral APVersion = "MaxIntegral"
	// APIntegral is the natural integral of the precision-recall curve
	// (the fork's default).
	APIntegral APVersion = "Integral"
)

// ScoreFlag is a detection's score and whether it is a true (or, in a
// false-positive list, a false) positive: the fork's pair<float, int>.
type ScoreFlag struct {
	// Score is the detection's confidence.
	Score float32
	// Flag is 1 or 0.
	Flag int
}

// cumSum is the fork's CumSum: the running sums of the flags in
// descending score order (equal scores in list order).
func cumSum(pairs []ScoreFlag) []int {
	s := slices.Clone(pairs)
	slices.SortStableFunc(s, func(a, b ScoreFlag) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	out := make([]int, len(s))
	sum := 0
	for i, p := range s {
		sum += p.Flag
		out[i] = sum
	}
	return out
}

// ComputeAP is the fork's ComputeAP (bbox_util.cpp): the average precision
// of one class's detections, tp and fp their true- and false-positive
// flags (the same detections: equal scores, complementary flags), numPos
// its ground truth boxes, and the precision and recall after each
// detection in descending score order. With no detection or no ground
// truth the AP is 0. It computes in float32, as the fork. Lists that are
// not complementary, a true positive count above numPos, or an unknown
// version are errors.
func ComputeAP(tp []ScoreFlag, numPos int, fp []ScoreFlag, version APVersion) (ap float32, prec, rec []float32, err error) {
	const eps = 1e-6
	switch version {
	case AP11Point, APMaxIntegral, APIntegral:
	default:
		return 0, nil, nil, fmt.Errorf("unknown ap_version %q (the fork knows \"11point\", \"MaxIntegral\" and \"Integral\")", string(version))
	}
	if len(tp) != len(fp) {
		return 0, nil, nil, fmt.Errorf("ComputeAP: %d true-positive flags but %d false-positive ones", len(tp), len(fp))
	}
	for i := range tp {
		if math.Abs(float64(tp[i].Score-fp[i].Score)) > eps || tp[i].Flag != 1-fp[i].Flag {
			return 0, nil, nil, fmt.Errorf("ComputeAP: detection %d is (%g, %d) as a true positive but (%g, %d) as a false one", i, tp[i].Score, tp[i].Flag, fp[i].Score, fp[i].Flag)
		}
	}
	num := len(tp)
	if num == 0 || numPos == 0 {
		return 0, nil, nil, nil
	}
	tpc, fpc := cumSum(tp), cumSum(fp)
	prec, rec = make([]float32, num), make([]float32, num)
	for i := range num {
		prec[i] = float32(tpc[i]) / float32(tpc[i]+fpc[i])
		if tpc[i] > numPos {
			return 0, nil, nil, fmt.Errorf("ComputeAP: %d true positives but %d ground truth boxes", tpc[i], numPos)
		}
		rec[i] = float32(tpc[i]) / float32(numPos)
	}
	switch version {
	case AP11Point:
		var maxPrecs [11]float32
		start := num - 1
		for j := 10; j >= 0; j-- {
			for i := start; i >= 0; i-- {
				if float64(rec[i]) < float64(j)/10 {
					start = i
					if j > 0 {
						maxPrecs[j-1] = maxPrecs[j]
					}
					break
				}
				if maxPrecs[j] < prec[i] {
					maxPrecs[j] = prec[i]
				}
			}
		}
		for j := 10; j >= 0; j-- {
			ap += maxPrecs[j] / 11
		}
	case APMaxIntegral:
		curRec, curPrec := rec[num-1], prec[num-1]
		for i := num - 2; i >= 0; i-- {
			curPrec = max(prec[i], curPrec)
			if d := float32(math.Abs(float64(curRec - rec[i]))); d > eps {
				ap += curPrec * d
			}
			curRec = rec[i]
		}
		ap += curRec * curPrec
	case APIntegral:
		var prevRec float32
		for i := range num {
			if d := float32(math.Abs(float64(rec[i] - prevRec))); d > eps {
				ap += prec[i] * d
			}
			prevRec = rec[i]
		}
	}
	return ap, prec, rec, nil
}

package layers

import (
	"fmt"
	"math"
	"slices"

	"dsgd/engine/tensor"
)

// BBoxCode is SSD's PriorBoxParameter.CodeType: how DetectionOutput reads
// a location prediction against its prior.
type BBoxCode int

// The code types, numbered as in the fork's caffe.proto.
const (
	// CodeCorner adds the (variance-scaled) offsets to the prior's corners.
	CodeCorner BBoxCode = 1
	// CodeCenterSize moves the prior's centre by offsets times its size and
	// scales its size by exp of the size offsets (SSD's published nets).
	CodeCenterSize BBoxCode = 2
	// CodeCornerSize adds offsets times the prior's size to its corners.
	CodeCornerSize BBoxCode = 3
)

// String returns the fork's name for the code type.
func (c BBoxCode) String() string {
	switch c {
	case CodeCorner:
		return "CORNER"
	case CodeCenterSize:
		return "CENTER_SIZE"
	case CodeCornerSize:
		return "CORNER_SIZE"
	}
	return fmt.Sprintf("BBoxCode(%d)", int(c))
}

// DetectionOutputConfig is SSD's DetectionOutputParameter (weiliu89/caffe,
// branch ssd): detection_output_param { num_classes share_location (true)
// background_label_id (0) nms_param { nms_threshold (0.3) top_k eta (1) }
// code_type (CORNER) variance_encoded_in_target (false) keep_top_k (-1)
// confidence_threshold }. Saving results to files and visualizing are not
// run (caffedef refuses them).
type DetectionOutputConfig struct {
	// NumClasses counts the classes, background included.
	NumClasses int
	// ShareLocation: one box per prior for all classes; otherwise one per
	// prior and class.
	ShareLocation bool
	// BackgroundLabelID is the class that is never output (-1: none).
	BackgroundLabelID int
	// NMSThreshold is the overlap above which non-maximum suppression drops
	// a box; Eta, if below 1, shrinks it after each kept box while it
	// exceeds 0.5.
	NMSThreshold, Eta float32
	// TopK keeps, per class, at most that many boxes before suppression
	// (negative: all).
	TopK int
	// Code is how the location predictions are decoded.
	Code BBoxCode
	// VarianceEncodedInTarget: the predictions already include the priors'
	// variances, which are then not applied.
	VarianceEncodedInTarget bool
	// KeepTopK keeps, per image, at most that many detections over all
	// classes, the highest-scoring (negative: all).
	KeepTopK int
	// ConfidenceThreshold: only scores above it are considered (the fork's
	// default, when absent, is -FLT_MAX: every box).
	ConfidenceThreshold float32
}

// Type returns "DetectionOutput".
func (*DetectionOutputConfig) Type() string { return "DetectionOutput" }

// Build returns a DetectionOutput layer. Bottoms: the location predictions
// (N × P·L·4, L = 1 with ShareLocation, else NumClasses; prior-major), the
// confidences (N × P·NumClasses, already a softmax) and the priors
// (PriorBox's 1×2×P·4). Each image's boxes are decoded against the priors;
// per class but the background, the boxes scoring above
// ConfidenceThreshold go through non-maximum suppression (TopK, NMS
// threshold, Eta), and KeepTopK keeps the best over all classes. The top
// is 1×1×D×7, one row [image, label, score, xmin, ymin, xmax, ymax] per
// detection, by image, then by ascending label, then by descending score;
// with no detection at all it is 1×1×N×7 of -1 but the image index, as in
// the fork. Its shape thus changes with every Forward (ForwardReshaper).
// It has no gradient.
func (c *DetectionOutputConfig) Build(Context) (Layer, error) {
	if c.NumClasses < 1 {
		return nil, fmt.Errorf("layers: DetectionOutput needs num_classes of at least 1, got %d", c.NumClasses)
	}
	if !(c.NMSThreshold >= 0) {
		return nil, fmt.Errorf("layers: DetectionOutput: nms_threshold must not be negative, got %g", c.NMSThreshold)
	}
	if !(c.Eta > 0 && c.Eta <= 1) {
		return nil, fmt.Errorf("layers: DetectionOutput: eta must be in (0, 1], got %g", c.Eta)
	}
	switch c.Code {
	case CodeCorner, CodeCenterSize, CodeCornerSize:
	default:
		return nil, fmt.Errorf("layers: DetectionOutput: unknown code type %v", c.Code)
	}
	if math.IsNaN(float64(c.ConfidenceThreshold)) {
		return nil, fmt.Errorf("layers: DetectionOutput: confidence_threshold is NaN")
	}
	l := &detectionOutputLayer{cfg: *c, locClasses: 1}
	if !c.ShareLocation {
		l.locClasses = c.NumClasses
	}
	return l, nil
}

// bbox is the fork's NormalizedBBox: corners and the size it stores.
type bbox struct {
	xmin, ymin, xmax, ymax, size float32
}

// bboxSize is the fork's BBoxSize of a normalized box: 0 when inverted.
func bboxSize(b bbox) float32 {
	if b.xmax < b.xmin || b.ymax < b.ymin {
		return 0
	}
	return (b.xmax - b.xmin) * (b.ymax - b.ymin)
}

// jaccard is the fork's JaccardOverlap of two normalized boxes, with the
// sizes they store.
func jaccard(a, b bbox) float32 {
	if b.xmin > a.xmax || b.xmax < a.xmin || b.ymin > a.ymax || b.ymax < a.ymin {
		return 0
	}
	w := min(a.xmax, b.xmax) - max(a.xmin, b.xmin)
	h := min(a.ymax, b.ymax) - max(a.ymin, b.ymin)
	if w > 0 && h > 0 {
		in := w * h
		return in / (a.size + b.size - in)
	}
	return 0
}

// scoreIndex is a box's score and index, or with label a detection's.
type scoreIndex struct {
	score float32
	label int
	idx   int
}

type detectionOutputLayer struct {
	cfg        DetectionOutputConfig
	locClasses int
	numPriors  int
	changed    bool

	// Per Forward, reused: the priors, their variances, the decoded boxes
	// (per image, loc class, prior), the candidates, and each image's
	// kept detections.
	priors  []bbox
	vars    [][4]float32
	decoded []bbox
	cand    []scoreIndex
	kept    []int
	dets    [][]scoreIndex
}

func (*detectionOutputLayer) Type() string    { return "DetectionOutput" }
func (*detectionOutputLayer) Params() []Param { return nil }

// AllowBackward implements GradientBlocker: the detections have no
// gradient.
func (*detectionOutputLayer) AllowBackward(int) bool { return false }

// TopsReshaped implements ForwardReshaper.
func (l *detectionOutputLayer) TopsReshaped() bool { return l.changed }

func (l *detectionOutputLayer) Setup(bottom, top []*tensor.Blob) error {
	return checkBlobCount("DetectionOutput", bottom, top, 3, 3, 1, 1)
}

func (l *detectionOutputLayer) Reshape(bottom, top []*tensor.Blob) error {
	loc, conf, pri := bottom[0].Shape, bottom[1].Shape, bottom[2].Shape
	// The fork reads the priors' height (the fork's tests give it an
	// N×2×(P·4)×1 blob) and the first 2·P·4 values.
	if len(pri) < 3 || len(pri) > 4 || pri[0] < 1 || pri[1] != 2 || pri[2]%4 != 0 || len(pri) == 4 && pri[3] != 1 {
		return fmt.Errorf("layers: DetectionOutput: bottom 2 (the priors) must be PriorBox's 1×2×(P·4), got %v", pri)
	}
	l.numPriors = pri[2] / 4
	if len(loc) < 2 || len(conf) < 2 || loc[0] != conf[0] {
		return fmt.Errorf("layers: DetectionOutput: bottoms 0 (locations) %v and 1 (confidences) %v must have the same number of images on axis 0", loc, conf)
	}
	if n := loc.CountFrom(1); n != l.numPriors*l.locClasses*4 {
		return fmt.Errorf("layers: DetectionOutput: bottom 0 (locations) %v has %d values per image; %d priors × %d location classes × 4 need %d", loc, n, l.numPriors, l.locClasses, l.numPriors*l.locClasses*4)
	}
	if n := conf.CountFrom(1); n != l.numPriors*l.cfg.NumClasses {
		return fmt.Errorf("layers: DetectionOutput: bottom 1 (confidences) %v has %d values per image; %d priors × %d classes need %d", conf, n, l.numPriors, l.cfg.NumClasses, l.numPriors*l.cfg.NumClasses)
	}
	top[0].Reshape(1, 1, 1, 7)
	return nil
}

// decode is the fork's DecodeBBox of prediction p against prior b with
// variances v (its CPU path: no clipping).
func (l *detectionOutputLayer) decode(b bbox, v [4]float32, p []float32) bbox {
	return decodeBBox("DetectionOutput", l.cfg.Code, l.cfg.VarianceEncodedInTarget, b, v, p)
}

// decodeBBox is the fork's DecodeBBox (no clipping) of prediction p
// against prior b with variances v, for a layer named layer (in the
// panic for a prior without width or height, where the fork stops too).
func decodeBBox(layer string, code BBoxCode, varianceInTarget bool, b bbox, v [4]float32, p []float32) bbox {
	var d bbox
	if varianceInTarget {
		v = [4]float32{1, 1, 1, 1}
	}
	switch code {
	case CodeCorner:
		d = bbox{xmin: b.xmin + v[0]*p[0], ymin: b.ymin + v[1]*p[1], xmax: b.xmax + v[2]*p[2], ymax: b.ymax + v[3]*p[3]}
	case CodeCenterSize, CodeCornerSize:
		pw, ph := b.xmax-b.xmin, b.ymax-b.ymin
		if !(pw > 0) || !(ph > 0) {
			panic(fmt.Sprintf("layers: %s: %v needs priors of positive width and height, got [%g %g %g %g] (the fork stops there too)", layer, code, b.xmin, b.ymin, b.xmax, b.ymax))
		}
		if code == CodeCornerSize {
			d = bbox{xmin: b.xmin + v[0]*p[0]*pw, ymin: b.ymin + v[1]*p[1]*ph, xmax: b.xmax + v[2]*p[2]*pw, ymax: b.ymax + v[3]*p[3]*ph}
			break
		}
		cx := float32(float64(b.xmin+b.xmax) / 2)
		cy := float32(float64(b.ymin+b.ymax) / 2)
		dcx := v[0]*p[0]*pw + cx
		dcy := v[1]*p[1]*ph + cy
		dw := float32(math.Exp(float64(v[2]*p[2])) * float64(pw))
		dh := float32(math.Exp(float64(v[3]*p[3])) * float64(ph))
		d = bbox{
			xmin: float32(float64(dcx) - float64(dw)/2), ymin: float32(float64(dcy) - float64(dh)/2),
			xmax: float32(float64(dcx) + float64(dw)/2), ymax: float32(float64(dcy) + float64(dh)/2),
		}
	}
	d.size = bboxSize(d)
	return d
}

// nms is the fork's ApplyNMSFast: the boxes scoring above the threshold,
// best first (ties in index order), at most TopK of them, each kept unless
// it overlaps a kept one by more than the (adaptive) NMS threshold. It
// appends the kept indices to l.kept.
func (l *detectionOutputLayer) nms(boxes []bbox, scores func(int) float32) {
	l.cand = l.cand[:0]
	for i := range boxes {
		if s := scores(i); s > l.cfg.ConfidenceThreshold {
			l.cand = append(l.cand, scoreIndex{score: s, idx: i})
		}
	}
	slices.SortStableFunc(l.cand, func(a, b scoreIndex) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	if l.cfg.TopK > -1 && l.cfg.TopK < len(l.cand) {
		l.cand = l.cand[:l.cfg.TopK]
	}
	thr := l.cfg.NMSThreshold
	start := len(l.kept)
	for _, c := range l.cand {
		keep := true
		for _, k := range l.kept[start:] {
			if jaccard(boxes[c.idx], boxes[k]) > thr {
				keep = false
				break
			}
		}
		if keep {
			l.kept = append(l.kept, c.idx)
			if l.cfg.Eta < 1 && thr > 0.5 {
				thr *= l.cfg.Eta
			}
		}
	}
}

func (l *detectionOutputLayer) Forward(bottom, top []*tensor.Blob) {
	num := bottom[0].Shape[0]
	np, nc, nlc := l.numPriors, l.cfg.NumClasses, l.locClasses
	loc, conf, pri := bottom[0].Data, bottom[1].Data, bottom[2].Data
	l.priors = l.priors[:0]
	l.vars = l.vars[:0]
	for p := range np {
		b := bbox{xmin: pri[4*p], ymin: pri[4*p+1], xmax: pri[4*p+2], ymax: pri[4*p+3]}
		b.size = bboxSize(b)
		l.priors = append(l.priors, b)
		v := pri[4*(np+p) : 4*(np+p)+4]
		l.vars = append(l.vars, [4]float32{v[0], v[1], v[2], v[3]})
	}
	if cap(l.decoded) < nlc*np {
		l.decoded = make([]bbox, nlc*np)
	}
	boxes := l.decoded[:nlc*np]
	for len(l.dets) < num {
		l.dets = append(l.dets, nil)
	}
	total := 0
	for i := range num {
		iloc := loc[i*np*nlc*4 : (i+1)*np*nlc*4]
		iconf := conf[i*np*nc : (i+1)*np*nc]
		// Decode every location class (the fork's CPU path skips the one
		// numbered like the background; it is never read).
		for c := range nlc {
			for p := range np {
				boxes[c*np+p] = l.decode(l.priors[p], l.vars[p], iloc[(p*nlc+c)*4:(p*nlc+c)*4+4])
			}
		}
		dets := l.dets[i][:0]
		for c := range nc {
			if c == l.cfg.BackgroundLabelID {
				continue
			}
			lc := 0
			if !l.cfg.ShareLocation {
				lc = c
			}
			l.kept = l.kept[:0]
			l.nms(boxes[lc*np:(lc+1)*np], func(p int) float32 { return iconf[p*nc+c] })
			for _, k := range l.kept {
				dets = append(dets, scoreIndex{score: iconf[k*nc+c], label: c, idx: k})
			}
		}
		if k := l.cfg.KeepTopK; k > -1 && len(dets) > k {
			// The best KeepTopK over all classes, then back in label order
			// (each label's boxes by descending score).
			slices.SortStableFunc(dets, func(a, b scoreIndex) int {
				switch {
				case a.score > b.score:
					return -1
				case a.score < b.score:
					return 1
				}
				return 0
			})
			dets = dets[:k]
			slices.SortStableFunc(dets, func(a, b scoreIndex) int { return a.label - b.label })
		}
		l.dets[i] = dets
		total += len(dets)
	}
	rows := total
	if total == 0 {
		rows = num
	}
	t := top[0]
	l.changed = len(t.Shape) != 4 || t.Shape[2] != rows
	if l.changed {
		t.Reshape(1, 1, rows, 7)
	}
	out := t.Data[:rows*7]
	if total == 0 {
		for i := range out {
			out[i] = -1
		}
		for i := range num {
			out[i*7] = float32(i)
		}
		return
	}
	r := 0
	for i := range num {
		iloc := loc[i*np*nlc*4 : (i+1)*np*nlc*4]
		for _, d := range l.dets[i] {
			lc := 0
			if !l.cfg.ShareLocation {
				lc = d.label
			}
			// Decode again: boxes holds only the last image's.
			off := (d.idx*nlc + lc) * 4
			b := l.decode(l.priors[d.idx], l.vars[d.idx], iloc[off:off+4])
			out[r*7] = float32(i)
			out[r*7+1] = float32(d.label)
			out[r*7+2] = d.score
			out[r*7+3], out[r*7+4], out[r*7+5], out[r*7+6] = b.xmin, b.ymin, b.xmax, b.ymax
			r++
		}
	}
}

// Backward does nothing: the detections have no gradient.
func (*detectionOutputLayer) Backward([]*tensor.Blob, []bool, []*tensor.Blob) {}

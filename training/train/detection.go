package train

import (
	"fmt"
	"maps"
	"slices"

	"dsgd/engine/layers"
	"dsgd/engine/tensor"
)

// detectionTally accumulates one test net output's DetectionEvaluate rows
// over a test pass, as the fork's Solver::TestDetection: the ground truth
// count of each label (rows [-1 label num_pos -1 -1]) and each label's
// detections with their true and false positive flags (rows [image label
// score tp fp]; those that are neither, matched to a difficult box not
// evaluated, are skipped).
type detectionTally struct {
	numPos map[int]int
	tp, fp map[int][]layers.ScoreFlag
}

// add reads one batch's output o of test net k.
func (d *detectionTally) add(o *tensor.Blob, k int) error {
	s := o.Shape
	if len(s) != 4 || s[0] != 1 || s[1] != 1 || s[3] != 5 {
		return fmt.Errorf("eval_type \"detection\" reads every output of the TEST net as DetectionEvaluate rows (1×1×N×5), as SSD's solver does, but output '%s' of test net #%d has shape %v: make the TEST net's only outputs DetectionEvaluate tops (a loss output is not evaluated there), or use eval_type \"classification\"", o.Name, k, []int(s))
	}
	if d.numPos == nil {
		d.numPos, d.tp, d.fp = map[int]int{}, map[int][]layers.ScoreFlag{}, map[int][]layers.ScoreFlag{}
	}
	for r := range s[2] {
		row := o.Data[r*5 : r*5+5]
		item, label := int(row[0]), int(row[1])
		if item == -1 {
			d.numPos[label] += int(row[2])
			continue
		}
		tp, fp := int(row[3]), int(row[4])
		if tp == 0 && fp == 0 {
			continue
		}
		d.tp[label] = append(d.tp[label], layers.ScoreFlag{Score: row[2], Flag: tp})
		d.fp[label] = append(d.fp[label], layers.ScoreFlag{Score: row[2], Flag: fp})
	}
	return nil
}

// mAP is the pass's mean average precision for output name of test net
// k, first, then, with ev.PerClass, each label's AP as "name/classL"
// (ascending labels with detections, as the fork logs them). As in the
// fork, the mean is over every label with a ground-truth row (every
// class but the background), those without detections counting 0; it is
// float32 arithmetic. Where the fork logs nothing for a pass without any
// detection, the mAP here is 0.
func (d *detectionTally) mAP(name string, k int, ev *DetectionEval) ([]NamedValue, error) {
	prefix := ""
	if k > 0 {
		prefix = fmt.Sprintf("net%d/", k)
	}
	out := []NamedValue{{Name: prefix + name, Net: k}}
	var sum float32
	labels := slices.Sorted(maps.Keys(d.numPos))
	for _, l := range labels {
		if _, ok := d.tp[l]; !ok {
			continue // the fork warns "Missing true_pos for label"
		}
		ap, _, _, err := layers.ComputeAP(d.tp[l], d.numPos[l], d.fp[l], ev.APVersion)
		if err != nil {
			return nil, fmt.Errorf("output '%s' of test net #%d, label %d: %w", name, k, l, err)
		}
		sum += ap
		if ev.PerClass {
			out = append(out, NamedValue{Name: fmt.Sprintf("%s%s/class%d", prefix, name, l), Value: float64(ap), Net: k})
		}
	}
	if len(d.tp) > 0 {
		out[0].Value = float64(sum / float32(len(labels)))
	}
	return out, nil
}

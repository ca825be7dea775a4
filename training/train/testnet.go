package train

import (
	"context"
	"fmt"
	"strings"

	"dsgd/engine/layers"
	"dsgd/engine/model"
)

// Test runs the TEST net over TestIter batches and averages each scalar
// output (accuracy, loss); then each further test net over its own.
// With Config.CaffeLog it logs each net's pass as Caffe's Solver::Test.
func (t *Trainer) Test(ctx context.Context, iter int) (TestResult, error) {
	tr := TestResult{Iter: iter}
	if t.test == nil {
		return tr, nil
	}
	nets := append([]*model.Net{t.test}, t.extra...)
	for k, net := range nets {
		feeds, n := t.cfg.TestFeeds, t.cfg.TestIter
		if k > 0 {
			feeds, n = t.cfg.ExtraTests[k-1].Feeds, t.cfg.ExtraTests[k-1].Iter
		}
		if t.clog != nil {
			t.clog.Infof("solver.cpp", 347, "Iteration %d, Testing net (#%d)", iter, k)
		}
		outs := net.Outputs()
		sums := make([]float64, len(outs))
		var det []detectionTally
		if t.cfg.Detection != nil {
			det = make([]detectionTally, len(outs))
		}
		n = max(n, 1)
		shapes := t.testNetShapes(net, k, feeds)
		main := net
		for range n {
			net := main
			if shapes != nil {
				var err error
				if net, err = shapes.Pick(ctx); err != nil {
					return tr, fmt.Errorf("train: test at iteration %d: %w", iter, err)
				}
			}
			for _, f := range feeds {
				if err := fill(ctx, net, f); err != nil {
					if k > 0 {
						return tr, fmt.Errorf("train: test net %d at iteration %d: %w", k, iter, err)
					}
					return tr, fmt.Errorf("train: test at iteration %d: %w", iter, err)
				}
			}
			net.Forward()
			if err := net.Err(); err != nil {
				return tr, fmt.Errorf("train: test at iteration %d: %w", iter, err)
			}
			for j, o := range net.Outputs() {
				if det != nil {
					if err := det[j].add(o, k); err != nil {
						return tr, fmt.Errorf("train: test at iteration %d: %w", iter, err)
					}
					continue
				}
				if o.Count() == 1 {
					sums[j] += float64(o.Data[0])
				}
			}
		}
		if det != nil {
			if len(outs) == 0 {
				return tr, fmt.Errorf("train: test at iteration %d: eval_type \"detection\" reads the TEST net's outputs as DetectionEvaluate rows, but test net #%d has no output", iter, k)
			}
			for j, o := range outs {
				vs, err := det[j].mAP(o.Name, k, t.cfg.Detection)
				if err != nil {
					return tr, fmt.Errorf("train: test at iteration %d: %w", iter, err)
				}
				for _, v := range vs[1:] {
					if t.clog != nil {
						t.clog.Infof("solver.cpp", 540, "%s: %s", strings.TrimPrefix(v.Output(), o.Name+"/"), caffeFloat(v.Value))
					}
				}
				if t.clog != nil {
					t.clog.Infof("solver.cpp", 546, "    Test net output #%d: %s = %s", j, o.Name, caffeFloat(vs[0].Value))
				}
				tr.Outputs = append(tr.Outputs, vs...)
			}
			continue
		}
		weights := main.OutputLossWeights()
		score := 0
		for j, o := range outs {
			if o.Count() != 1 {
				continue
			}
			v := NamedValue{Name: o.Name, Value: sums[j] / float64(n), Net: k}
			if k > 0 {
				v.Name = fmt.Sprintf("net%d/%s", k, o.Name)
			}
			tr.Outputs = append(tr.Outputs, v)
			if t.clog != nil {
				t.clog.Infof("solver.cpp", 414, "    Test net output #%d: %s = %s%s", score, o.Name, caffeFloat(v.Value), lossNote(weights[j], v.Value))
			}
			score++
		}
	}
	return tr, nil
}

// testNetShapes returns the NetShapes of test net k (net), nil when its
// feeds do not reshape, made the first time.
func (t *Trainer) testNetShapes(net *model.Net, k int, feeds []Feed) *NetShapes {
	if s, ok := t.testShapes[net]; ok {
		return s
	}
	spec, shapes, what := t.cfg.Test, t.cfg.TestShapes, "TEST"
	if k > 0 {
		spec, shapes, what = t.cfg.ExtraTests[k-1].Spec, t.cfg.ExtraTests[k-1].Shapes, fmt.Sprintf("TEST net %d", k)
	}
	s := NewNetShapes(net, spec, shapes, model.Options{Phase: layers.Test, Threads: t.cfg.Threads, Seed: t.cfg.Seed}, feeds, what)
	if t.testShapes == nil {
		t.testShapes = map[*model.Net]*NetShapes{}
	}
	t.testShapes[net] = s
	return s
}

// buildExtraTests builds the further test nets, sharing the weights of
// net; they run only beside the first test net.
func (t *Trainer) buildExtraTests(net *model.Net) error {
	t.extra = nil
	if t.test == nil {
		return nil
	}
	for k, et := range t.cfg.ExtraTests {
		tn, err := model.Build(et.Spec, et.Shapes, model.Options{Phase: layers.Test, Threads: t.cfg.Threads, Seed: t.cfg.Seed, ShareWith: net})
		if err != nil {
			return fmt.Errorf("train: TEST net %d: %w", k+1, err)
		}
		if err := checkFeeds(tn, et.Feeds, fmt.Sprintf("TEST net %d", k+1)); err != nil {
			return err
		}
		t.extra = append(t.extra, tn)
	}
	return nil
}

package train

import (
	"bytes"
	"context"
	"fmt"

	"dsgd/model"
	"dsgd/nn/layers"
)

// Test runs the TEST net over TestIter batches and averages each scalar
// output (accuracy, loss).
func (t *Trainer) Test(ctx context.Context, iter int) (TestResult, error) {
	tr := TestResult{Iter: iter}
	if t.test == nil {
		return tr, nil
	}
	outs := t.test.Outputs()
	sums := make([]float64, len(outs))
	n := max(t.cfg.TestIter, 1)
	for i := 0; i < n; i++ {
		for _, f := range t.cfg.TestFeeds {
			if err := fill(ctx, t.test, f); err != nil {
				return tr, fmt.Errorf("train: test at iteration %d: %w", iter, err)
			}
		}
		t.test.Forward()
		for j, o := range outs {
			if o.Count() == 1 {
				sums[j] += float64(o.Data[0])
			}
		}
	}
	for j, o := range outs {
		if o.Count() == 1 {
			tr.Outputs = append(tr.Outputs, NamedValue{o.Name, sums[j] / float64(n)})
		}
	}
	for k, net := range t.extra {
		et := t.cfg.ExtraTests[k]
		outs := net.Outputs()
		sums := make([]float64, len(outs))
		n := max(et.Iter, 1)
		for range n {
			for _, f := range et.Feeds {
				if err := fill(ctx, net, f); err != nil {
					return tr, fmt.Errorf("train: test net %d at iteration %d: %w", k+1, iter, err)
				}
			}
			net.Forward()
			for j, o := range outs {
				if o.Count() == 1 {
					sums[j] += float64(o.Data[0])
				}
			}
		}
		for j, o := range outs {
			if o.Count() == 1 {
				tr.Outputs = append(tr.Outputs, NamedValue{fmt.Sprintf("net%d/%s", k+1, o.Name), sums[j] / float64(n)})
			}
		}
	}
	return tr, nil
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

func (r TestResult) String() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "iter %d test:", r.Iter)
	for _, o := range r.Outputs {
		fmt.Fprintf(&b, "  %s %.4f", o.Name, o.Value)
	}
	return b.String()
}

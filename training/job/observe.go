package job

import (
	"dsgd/training/metrics"
	"dsgd/training/prom"
	"dsgd/training/train"
)

// Observe adds to deps the hooks that measure and export tr's run, deps
// already connected (train.Connect): over a group's endpoint, a scheme
// with outer steps (diloco, streaming-diloco), whose point is the bytes
// of its busiest step, measures that step (the PeakStep returned; nil
// otherwise); pr, when not nil, exports the training gauges, the
// iterations' and tests' figures and the endpoint's traffic.
func Observe(tr *train.Trainer, deps *train.Deps, pr *prom.Run) *metrics.PeakStep {
	var peak *metrics.PeakStep
	if ep := deps.Endpoint; ep != nil && tr.SchemeConfig().Info().Outer {
		peak = metrics.NewPeakStep(func() int64 { return ep.Stats().BytesSent })
		deps.OnIter = peak.Wrap(deps.OnIter)
	}
	if pr != nil {
		deps.OnIter = pr.OnIter(tr.GlobalBatch(), deps.OnIter)
		deps.OnIterMetrics = pr.OnIterMetrics
		deps.OnTest = pr.OnTest
		if deps.Endpoint != nil {
			pr.RegisterEndpoint(deps.Endpoint)
		}
	}
	return peak
}

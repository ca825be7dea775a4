package report

import "dsgd/training/train"

// Fill copies a training result into the row: its wall time and
// iterations, a point per test pass that reports an accuracy, the
// communication ratio (exposed communication and waiting for other
// workers over the iterations' time, as the papers count it), the
// center's drops, waits and staleness, the bytes a worker moved per
// iteration and the images it trained on.
func (run *Run) Fill(res *train.Result) {
	run.Wall, run.Iters = res.Wall, res.Iters
	for _, t := range res.Tests {
		if a, ok := t.Get("accuracy"); ok {
			run.Points = append(run.Points, Point{Seconds: t.Elapsed.Seconds(), Iter: t.Iter, Accuracy: a})
		}
	}
	run.CommRatio = -1
	if total := res.Phases.Sum(); total > 0 && res.Workers > 1 {
		// Exposed communication and waiting for other workers (SSP's
		// clock, weed-out's round), as the papers' ratios count them.
		wait := res.Phases.Total(len(train.PhaseNames) + 1)
		run.CommRatio = float64(res.CommExposed+wait) / float64(total)
	}
	run.Dropped, run.Waits = res.Center.Dropped, res.Center.Waits
	// Bytes a worker moved per iteration, both ways: rank 0's endpoint
	// (the collectives, compressed or not), or for a center's schemes in
	// process their share of the center's traffic.
	if it := float64(res.Iters); it > 0 {
		switch {
		case res.Traffic.BytesSent+res.Traffic.BytesRecv > 0:
			run.BytesPerIter = float64(res.Traffic.BytesSent+res.Traffic.BytesRecv) / it
		case res.Center.Values > 0:
			run.BytesPerIter = 4 * float64(res.Center.Values) / float64(max(res.Workers, 1)) / it
		}
	}
	if res.Center.StaleN > 0 {
		run.Staleness, run.MaxStale, run.StaleKnown = res.Center.MeanStale(), res.Center.MaxStale, true
	}
	run.Images, run.Epochs, run.ImagesPerSec = res.Images, res.Epochs, res.ImagesPerSec
}

// FinalAccuracy is the accuracy of the run's last test pass, 0 without
// one.
func (run *Run) FinalAccuracy() float64 {
	if len(run.Points) == 0 {
		return 0
	}
	return run.Points[len(run.Points)-1].Accuracy
}

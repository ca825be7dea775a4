package main

import (
	"fmt"
	"io"
	"time"

	"dsgd/engine/model"
)

// printReorders writes the layers that reordered (p's), per timed
// iteration, and the total against the run's wall time per iteration.
func printReorders(w io.Writer, p *model.ReorderProbe, iters, threads int, wallPerIter float64) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(iters) }
	var total time.Duration
	layers := p.Layers()
	for _, l := range layers {
		total += l.Forward + l.Backward
	}
	if total == 0 {
		return
	}
	fmt.Fprintf(w, "\noneDNN activation reorders (NCHW <-> blocked), ms per iteration, forward and backward, summed over %d thread(s):\n", threads)
	for _, l := range layers {
		if l.Forward+l.Backward > 0 {
			fmt.Fprintf(w, "  %-16s %9.3f %9.3f\n", l.Layer, ms(l.Forward), ms(l.Backward))
		}
	}
	t := ms(total)
	fmt.Fprintf(w, "  %-16s %9.3f ms = %.1f%% of %d thread(s) x the forward-backward wall\n", "total", t, 100*t/(float64(threads)*wallPerIter), threads)
	fmt.Fprintf(w, "  %-16s %9.3f ms (convolution weights and their gradients, not counted above)\n", "weights", ms(p.Weights()))
}

package enginebench

import (
	"fmt"
	"io"
	"time"

	"dsgd/engine/model"
	"dsgd/simulator/calib"
)

// PrintTimes writes dsgd time's table of tm (calib.Time on the CPU): per
// layer, its type, its first top's shape, its forward and backward ms per
// timed iteration (backward "-" where the layer does not backpropagate)
// and its kernel; the totals; then the wall time per iteration, which it
// returns in ms. warmup is the warm-up as the user gave it. The name, type
// and shape columns are as wide as their longest entry (at least 16, 16
// and 20), so that the times line up under their headings whatever the
// net's names (GoogLeNet's "inception_3a/relu_3x3_reduce").
func PrintTimes(w io.Writer, tm calib.Timing, warmup int) (wallMS float64) {
	perIter := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(tm.Iters) }
	shapes := make([]string, len(tm.Layers))
	nameW, typeW, shapeW := 16, 16, 20
	for i, li := range tm.Layers {
		if len(li.Tops) > 0 {
			shapes[i] = fmt.Sprint([]int(li.Tops[0]))
		}
		nameW, typeW, shapeW = max(nameW, len(li.Name)), max(typeW, len(li.Type)), max(shapeW, len(shapes[i]))
	}
	fmt.Fprintf(w, "\naverage over %d iterations (after %d warm-up), ms:\n", tm.Iters, warmup)
	fmt.Fprintf(w, "  %-*s %-*s %-*s %9s %9s  %s\n", nameW, "layer", typeW, "type", shapeW, "top shape", "forward", "backward", "kernel")
	var fwd, bwd time.Duration
	for i, li := range tm.Layers {
		b := "-"
		if li.Backprop {
			b = fmt.Sprintf("%9.3f", perIter(li.Backward))
		}
		fmt.Fprintf(w, "  %-*s %-*s %-*s %9.3f %9s  %s\n", nameW, li.Name, typeW, li.Type, shapeW, shapes[i], perIter(li.Forward), b, li.Kernel)
		fwd += li.Forward
		bwd += li.Backward
	}
	fmt.Fprintf(w, "  %-*s %9.3f %9.3f\n", nameW+typeW+shapeW+2, "total", perIter(fwd), perIter(bwd))
	fmt.Fprintf(w, "forward-backward: %.3f ms per iteration (wall)\n", perIter(tm.Wall))
	return perIter(tm.Wall)
}

// PrintReorders writes the layers that reordered oneDNN's activations
// (p's), in ms per timed iteration (of iters) forward and backward, and
// their total against threads times the wall time per iteration (in
// ms); nothing when no layer reordered.
func PrintReorders(w io.Writer, p *model.ReorderProbe, iters, threads int, wallPerIter float64) {
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

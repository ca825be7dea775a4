package main

import (
	"fmt"
	"io"
	"time"

	"dsgd/engine/model"
	"dsgd/engine/tensor/dnnl"
)

// reorderProbe attributes oneDNN's layout reorders (NCHW to the blocked
// layouts its convolution and LRN kernels want, and back) to the layers
// of a `dsgd time` run, through the net's layer hook: what keeping
// activations blocked between layers would save.
type reorderProbe struct {
	warmup   int
	last     time.Duration // activation reorders so far
	lastW    time.Duration // weight reorders so far
	wei      time.Duration // weight reorders in the timed passes
	order    []string
	calls    map[string]int // forward passes seen per layer
	fwd, bwd map[string]time.Duration
}

// newReorderProbe hooks net; passes before the warmup-th forward of each
// layer are not counted.
func newReorderProbe(net *model.Net, warmup int) *reorderProbe {
	p := &reorderProbe{warmup: warmup, last: dnnl.ReorderTime(), lastW: dnnl.WeightReorderTime(), calls: map[string]int{},
		fwd: map[string]time.Duration{}, bwd: map[string]time.Duration{}}
	net.SetLayerHook(func(layer string, backward bool, _ time.Time, _ time.Duration) {
		now, nowW := dnnl.ReorderTime(), dnnl.WeightReorderTime()
		d, dw := now-p.last, nowW-p.lastW
		p.last, p.lastW = now, nowW
		if !backward {
			if p.calls[layer] == 0 {
				p.order = append(p.order, layer)
			}
			p.calls[layer]++
		}
		if p.calls[layer] <= p.warmup {
			return
		}
		p.wei += dw
		if backward {
			p.bwd[layer] += d
		} else {
			p.fwd[layer] += d
		}
	})
	return p
}

// print writes the layers that reordered, per timed iteration, and the
// total against the run's wall time per iteration.
func (p *reorderProbe) print(w io.Writer, iters, threads int, wallPerIter float64) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(iters) }
	var total time.Duration
	for _, l := range p.order {
		total += p.fwd[l] + p.bwd[l]
	}
	if total == 0 {
		return
	}
	fmt.Fprintf(w, "\noneDNN activation reorders (NCHW <-> blocked), ms per iteration, forward and backward, summed over %d thread(s):\n", threads)
	for _, l := range p.order {
		if p.fwd[l]+p.bwd[l] > 0 {
			fmt.Fprintf(w, "  %-16s %9.3f %9.3f\n", l, ms(p.fwd[l]), ms(p.bwd[l]))
		}
	}
	t := ms(total)
	fmt.Fprintf(w, "  %-16s %9.3f ms = %.1f%% of %d thread(s) x the forward-backward wall\n", "total", t, 100*t/(float64(threads)*wallPerIter), threads)
	fmt.Fprintf(w, "  %-16s %9.3f ms (convolution weights and their gradients, not counted above)\n", "weights", ms(p.wei))
}

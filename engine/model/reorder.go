package model

import (
	"time"

	"dsgd/engine/tensor/dnnl"
)

// ReorderProbe attributes oneDNN's layout reorders (NCHW to the blocked
// layouts its convolution and LRN kernels want, and back) to the layers
// of a net, through its layer hook: what keeping activations blocked
// between layers would save.
type ReorderProbe struct {
	warmup   int
	last     time.Duration // activation reorders so far
	lastW    time.Duration // weight reorders so far
	wei      time.Duration // weight reorders in the timed passes
	order    []string
	calls    map[string]int // forward passes seen per layer
	fwd, bwd map[string]time.Duration
}

// LayerReorders is the time one layer spent in activation reorders.
type LayerReorders struct {
	Layer             string
	Forward, Backward time.Duration
}

// NewReorderProbe hooks net (Net.SetLayerHook); passes before the
// warmup-th forward of each layer are not counted.
func NewReorderProbe(net *Net, warmup int) *ReorderProbe {
	p := &ReorderProbe{warmup: warmup, last: dnnl.ReorderTime(), lastW: dnnl.WeightReorderTime(), calls: map[string]int{},
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

// Layers is every layer's activation reorder time over the counted
// passes, in the order the layers first ran forward.
func (p *ReorderProbe) Layers() []LayerReorders {
	out := make([]LayerReorders, len(p.order))
	for i, l := range p.order {
		out[i] = LayerReorders{Layer: l, Forward: p.fwd[l], Backward: p.bwd[l]}
	}
	return out
}

// Weights is the time spent reordering convolution weights and their
// gradients over the counted passes, which Layers does not count.
func (p *ReorderProbe) Weights() time.Duration { return p.wei }

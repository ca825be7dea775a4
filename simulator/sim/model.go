package sim

import (
	"fmt"
	"time"

	"dsgd/protocol/scheme"
)

// Layer is one layer's compute: forward and backward time and its
// parameter count (0 for none), in forward order.
type Layer struct {
	Name              string
	Forward, Backward time.Duration
	Params            int
	// Rows is, per parameter blob of the layer in order, the first axis
	// of a matrix (a weight's outputs; 0 for a vector such as a bias):
	// what a low-rank compressor sees (Config.Compress). nil: the layer's
	// parameters are one matrix, as square as they allow.
	Rows []BlobRows
}

// BlobRows is one parameter blob's size and its matrix's first axis (0:
// a vector).
type BlobRows struct{ Len, Rows int }

// Model is what the simulator knows of a net: per-layer times, the
// solver update time per iteration, and the reduction rate.
type Model struct {
	Name   string
	Layers []Layer
	// Update is the time of one solver step (a scheme's Update action,
	// and a weed-out center's round).
	Update time.Duration
	// AddRate is float32 additions per second, the cost of a collective's
	// reduction, a Recv with Add, Scale and Axpy (one operation per
	// element) and the center's Push, Elastic and Round accumulation;
	// 0 makes them free. Copy is always free.
	AddRate float64
	// Jitter is the standard deviation of one worker's forward+backward
	// time from iteration to iteration, independent between workers (0:
	// every iteration of every worker takes exactly the layers' times).
	// Each worker draws, each iteration, a scale s = 1 + z·Jitter/C, C the
	// layers' forward+backward time and z standard normal, redrawn until s
	// is positive (a normal truncated at 0, whose mean moves off 1 only
	// when Jitter is a sizeable fraction of C), and every layer's time of
	// that iteration is multiplied by s. Synchronous schemes then wait
	// for the slowest worker each iteration, as real ones do: with two
	// workers, E[max] exceeds the mean by Jitter/√π.
	Jitter time.Duration
}

// Params is the total parameter count.
func (m Model) Params() int {
	n := 0
	for _, l := range m.Layers {
		n += l.Params
	}
	return n
}

// Compute is the layers' forward and backward time of one iteration.
func (m Model) Compute() time.Duration {
	var d time.Duration
	for _, l := range m.Layers {
		d += l.Forward + l.Backward
	}
	return d
}

// Layout is one block per layer with params, in forward order,
// contiguous from 0.
func (m Model) Layout() scheme.Layout {
	l := scheme.Layout{}
	for _, ly := range m.Layers {
		if ly.Params > 0 {
			l.Blocks = append(l.Blocks, scheme.Range{Lo: l.N, Hi: l.N + ly.Params})
			l.N += ly.Params
		}
	}
	return l
}

// Uniform is a model of one layer holding params parameters whose
// forward and backward take compute together: a third forward, two
// thirds backward (backward computes gradients for both the data and the
// weights, about twice the forward's work).
func Uniform(params int, compute time.Duration) Model {
	return Layered(params, compute, 1)
}

// Layered is Uniform over layers equal layers: each holds params/layers
// parameters (the first takes the remainder) and an equal share of the
// forward and backward time, so overlap has layers to overlap.
func Layered(params int, compute time.Duration, layers int) Model {
	if layers < 1 || (layers > 1 && layers > params) {
		panic(fmt.Sprintf("sim: %d layers of %d parameters", layers, params))
	}
	f := compute / 3
	name := fmt.Sprintf("uniform %.3g M params, %v", float64(params)/1e6, compute)
	if layers > 1 {
		name = fmt.Sprintf("%d layers, %.3g M params, %v", layers, float64(params)/1e6, compute)
	}
	m := Model{Name: name}
	per, L := params/layers, time.Duration(layers)
	fl, bl := f/L, (compute-f)/L
	for i := 0; i < layers; i++ {
		ly := Layer{Name: fmt.Sprintf("layer%d", i+1), Forward: fl, Backward: bl, Params: per}
		if i == 0 {
			ly.Params += params - per*layers
		}
		if i == layers-1 { // the rounding remainders, so the times add up
			ly.Forward, ly.Backward = f-fl*(L-1), compute-f-bl*(L-1)
		}
		m.Layers = append(m.Layers, ly)
	}
	if layers == 1 {
		m.Layers[0].Name = "all"
	}
	return m
}

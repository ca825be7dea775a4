package layers

import (
	"math/rand/v2"

	"dsgd/engine/tensor"
)

// Phase says whether a layer is built for training or for testing; some
// layers (Dropout, BatchNorm) behave differently in each.
type Phase int

const (
	// Train is the phase in which gradients are computed.
	Train Phase = iota
	// Test is the inference phase.
	Test
)

func (p Phase) String() string {
	if p == Test {
		return "TEST"
	}
	return "TRAIN"
}

// Context is what a layer is built with. It carries every dependency a layer
// may need, so no layer reaches for a global.
type Context struct {
	// Phase is the phase the layer runs in.
	Phase Phase
	// Threads is how many goroutines a layer may use in Forward and
	// Backward (1 when zero).
	Threads int
	// Rand is the layer's random source (Dropout masks). The model gives
	// every layer its own, derived from the run's seed.
	Rand *rand.Rand
	// Pool, when set, runs the layer's parallel loops (at most Threads
	// wide) on parked workers; the model shares one among a net's layers.
	// Nil starts goroutines per loop (tensor.ParallelFor), which gives the
	// same results.
	Pool *tensor.Pool
}

// NumThreads is Threads, at least 1.
func (c Context) NumThreads() int { return max(c.Threads, 1) }

// Config builds a layer. Each layer type has a config struct (the Caffe
// *_param message as a Go struct) that implements it.
type Config interface {
	// Type is the Caffe layer type name ("Convolution", "ReLU", ...).
	Type() string
	// Build returns a new, not yet set up, layer.
	Build(ctx Context) (Layer, error)
}

// Param is one learnable (or, for BatchNorm statistics, stored) blob of a
// layer, with the filler that initialises it.
type Param struct {
	Blob   *tensor.Blob
	Filler Filler
	// Frozen params are never updated by a solver (BatchNorm's running
	// statistics): the model gives them lr_mult 0 whatever the prototxt says.
	Frozen bool
}

// Layer is one Caffe layer. The model calls, in order: Setup once, Params,
// then Reshape before the first Forward and whenever a bottom's shape may
// have changed, then Forward and Backward any number of times.
//
// Contracts, which every implementation keeps:
//   - Setup validates the bottoms' shapes and the config, and creates the
//     param blobs with their final shapes. It returns an error (never
//     panics) on a shape or config mismatch: these come from user prototxt.
//   - After Setup the model replaces each param blob's Data and Diff with
//     views into the net's flat buffers (same length) and fills them; a layer
//     must therefore not keep its own references to param slices: it reads
//     p.Blob.Data and p.Blob.Diff on every call.
//   - Reshape shapes the tops and any internal buffers. It must allocate
//     only when a size grows.
//   - Forward reads bottoms and writes tops. Loss layers write the scalar
//     loss to top[0].Data[0].
//   - Backward reads top diffs (a loss layer's top[0].Diff[0] holds its loss
//     weight) and writes, overwriting, the diff of each bottom i with
//     propagateDown[i] true; bottoms with propagateDown[i] false are left
//     alone. It ADDS to its param diffs (the model zeroes them before each
//     backward pass), so params shared between layers accumulate.
//   - Layers that Caffe runs in place (ReLU, Sigmoid, TanH, Dropout,
//     BatchNorm, Scale) work when bottom[0] == top[0].
//   - Forward and Backward do not allocate in steady state.
type Layer interface {
	Type() string
	Setup(bottom, top []*tensor.Blob) error
	Params() []Param
	Reshape(bottom, top []*tensor.Blob) error
	Forward(bottom, top []*tensor.Blob)
	Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob)
}

// LossLayer is implemented by layers whose top[0] is a loss by default
// (loss_weight 1 in Caffe): SoftmaxWithLoss.
type LossLayer interface {
	IsLoss()
}

// GradientBlocker is implemented by layers with bottoms they cannot
// differentiate (a loss's labels, Accuracy's inputs, Embed's indices):
// Caffe's AllowForceBackward. The model never asks such a layer for
// that bottom's gradient: force_backward passes it over, and an explicit
// propagate_down: true on it is refused.
type GradientBlocker interface {
	// AllowBackward reports whether bottom i can take a gradient.
	AllowBackward(i int) bool
}

// ParamPropagator is implemented by layers that can skip computing a
// param's gradient (Caffe's param_propagate_down): the model calls
// SetParamPropagate once after Setup with one flag per Params entry, false
// where nothing uses the gradient (lr_mult 0). A skipped param's diff is
// left as the model zeroed it.
type ParamPropagator interface {
	SetParamPropagate(on []bool)
}

// paramGrads records which params' gradients are wanted; the zero value
// wants all. Layers embed it to implement ParamPropagator.
type paramGrads struct{ off []bool }

// SetParamPropagate implements ParamPropagator.
func (g *paramGrads) SetParamPropagate(on []bool) {
	g.off = make([]bool, len(on))
	for i, v := range on {
		g.off[i] = !v
	}
}

// want reports whether param i's gradient is wanted.
func (g *paramGrads) want(i int) bool { return i >= len(g.off) || !g.off[i] }

// ForwardReshaper is implemented by layers whose Forward may change their
// tops' shapes, because the shapes depend on the bottoms' values (Filter:
// its tops hold the items its selector picks). After such a layer's
// Forward reports a change, the model reshapes the layers after it, as
// Caffe's Forward reshapes every layer before running it.
type ForwardReshaper interface {
	// TopsReshaped reports whether the last Forward changed a top's shape.
	TopsReshaped() bool
}

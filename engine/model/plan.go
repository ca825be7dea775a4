package model

import (
	"math"

	"dsgd/engine/layers"
	"dsgd/engine/tensor"
)

// Step is one layer as Forward and Backward run it: what an engine that
// runs the net somewhere else (engine/gpunet) needs to run it the same
// way. Its blobs are the net's own.
type Step struct {
	// Name and Type are the layer's; Config is its spec's config.
	Name, Type string
	Config     layers.Config
	// Layer is the built layer (its Params, its CPU passes).
	Layer layers.Layer
	// Bottom and Top are the blobs it reads and writes (a bottom read by
	// several layers that take its gradient is a split part: the
	// blob's Data, a Diff of its own).
	Bottom, Top []*tensor.Blob
	// PropagateDown says which bottoms take a gradient.
	PropagateDown []bool
	// Learn says, per param, whether its gradient is computed.
	Learn []bool
	// Backward says whether the layer's Backward runs.
	Backward bool
	// LossWeight is each top's loss weight (0 for non-loss tops).
	LossWeight []float32
	// Blocks are the parameter blocks whose gradients are final once
	// this layer's Backward has run.
	Blocks []int
	// Splits sum split parts' gradients into their blob's before this
	// layer's Backward.
	Splits []Split
	// LossAdds add loss weights back into gradients before this
	// layer's Backward.
	LossAdds []LossAdd
}

// Split is a blob whose gradient several readers write: their parts'
// Diffs are summed into the Target's.
type Split struct {
	Target *tensor.Blob
	Parts  []*tensor.Blob
}

// LossAdd adds Weight to every element of Blob's gradient.
type LossAdd struct {
	Blob   *tensor.Blob
	Weight float32
}

// Plan is the whole of a net's passes: Forward runs Steps in order,
// Backward sets each loss top's gradient to its weight, zeroes the
// Dangling blobs' gradients, runs each step's Splits, LossAdds and
// Backward from the last to the first, then InputSplits.
type Plan struct {
	Steps       []Step
	InputSplits []Split
	Dangling    []*tensor.Blob
	Inputs      []*tensor.Blob
	Outputs     []*tensor.Blob
}

// Plan returns the net's plan (see Plan). A net whose layers can change
// their tops' shapes during Forward (layers.ForwardReshaper) has no fixed
// plan: Dynamic reports it.
func (n *Net) Plan() Plan {
	p := Plan{Dangling: n.dangling, Inputs: n.inputs, Outputs: n.outputs}
	conv := func(sps []split) []Split {
		var out []Split
		for _, sp := range sps {
			out = append(out, Split{Target: sp.target, Parts: sp.parts})
		}
		return out
	}
	p.InputSplits = conv(n.inputSp)
	for i, nd := range n.nodes {
		st := Step{Name: nd.spec.Name, Type: nd.layer.Type(), Config: nd.spec.Config, Layer: nd.layer,
			Bottom: nd.bottom, Top: nd.top, PropagateDown: nd.propDown, Learn: nd.learn, Backward: nd.backward,
			LossWeight: nd.lossWeight, Blocks: nd.blocks, Splits: conv(n.splits[i])}
		for _, la := range nd.lossAdds {
			st.LossAdds = append(st.LossAdds, LossAdd{Blob: la.blob, Weight: la.w})
		}
		p.Steps = append(p.Steps, st)
	}
	return p
}

// Dynamic names the first layer whose Forward may change its tops'
// shapes (a Filter), or "".
func (n *Net) Dynamic() string {
	for _, nd := range n.nodes {
		if _, ok := nd.layer.(layers.ForwardReshaper); ok {
			return nd.spec.Name
		}
	}
	return ""
}

// Executor runs a net's passes in place of its layers' own: the GPU
// engine (engine/gpunet). Forward starts from the inputs' and the
// params' host values and leaves the outputs' (Outputs) on the host with
// the weighted loss; Backward leaves the gradient in Grads, calling the
// net's grad hook (Options.OnGradReady) as each layer's blocks are final.
type Executor interface {
	Forward() (float64, error)
	Backward() error
}

// SetExecutor makes Forward and Backward run on e (nil: the layers' own
// passes again).
func (n *Net) SetExecutor(e Executor) { n.exec, n.execErr = e, nil }

// Err is the first error of the net's passes: the executor's, or a
// layer's panic on data it cannot take, naming the layer (layerPanic). A
// net with one returns a NaN loss from Forward and does nothing in
// Backward once it has failed.
func (n *Net) Err() error { return n.execErr }

// GradHook is the callback Backward calls as blocks' gradients become
// final (Options.OnGradReady, SetGradHook), for an Executor.
func (n *Net) GradHook() func(blocks []int) { return n.hook }

func (n *Net) execForward() float64 {
	if n.execErr != nil {
		return math.NaN()
	}
	loss, err := n.exec.Forward()
	if err != nil {
		n.execErr = err
		return math.NaN()
	}
	return loss
}

func (n *Net) execBackward() {
	if n.execErr != nil {
		return
	}
	if err := n.exec.Backward(); err != nil {
		n.execErr = err
	}
}

// Phase is the phase the net was built for.
func (n *Net) Phase() layers.Phase { return n.phase }

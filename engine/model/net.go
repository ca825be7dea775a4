package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"dsgd/engine/layers"
	"dsgd/engine/tensor"
)

// Options configures Build.
type Options struct {
	// Phase is the phase the layers are built for.
	Phase layers.Phase
	// Threads is how many goroutines each layer may use (1 when zero).
	Threads int
	// Seed seeds the parameter fillers and the layers' random sources
	// (Dropout). Two nets built from the same spec and seed are identical.
	Seed uint64
	// ShareWith, when set, makes the new net use that net's parameter
	// buffers instead of its own: every layer with params must exist in
	// ShareWith under the same name with the same param shapes. This is how
	// a TEST net sees the weights the TRAIN net learns, as in Caffe.
	ShareWith *Net
	// OwnGrads, with ShareWith, shares only the weights: the new net
	// gets a gradient buffer of its own (Hogwild's workers, which update
	// one set of weights from their own gradients).
	OwnGrads bool
	// OnGradReady, when set, is called during Backward as soon as the
	// gradients of the given blocks (indices into Blocks) are final: once
	// per layer that owns params, in backward order. The callback runs on
	// the goroutine calling Backward and must not modify Grads of blocks
	// not yet reported.
	OnGradReady func(blocks []int)
	// Pool, when set, runs the layers' parallel loops on that pool (of
	// Threads goroutines) instead of a new one: a net that stands in for
	// another (another input shape) and never runs beside it.
	Pool *tensor.Pool
	// Unfused keeps every layer to its own passes: no BatchNorm is joined
	// to the Scale that follows it (fuseLayers). Tests compare the two.
	Unfused bool
}

// Block is one parameter blob's place in the net's flat buffers.
type Block struct {
	// Name is "layer/index" (or the shared name from param { name }).
	Name string
	// Layer is the name of the layer that owns the block.
	Layer string
	// Shape is the blob's shape; the block holds Shape.Count() values.
	Shape tensor.Shape
	// Off is the block's offset in Params() and Grads().
	Off int
	// LRMult and DecayMult are Caffe's lr_mult and decay_mult (LRMult 0
	// for frozen blobs such as BatchNorm statistics).
	LRMult, DecayMult float32
}

// Len is the number of values in the block.
func (b Block) Len() int { return b.Shape.Count() }

// node is one layer of the net, with its blobs resolved.
type node struct {
	spec     LayerSpec
	layer    layers.Layer
	bottom   []*tensor.Blob
	top      []*tensor.Blob
	propDown []bool
	// learn holds, per param, whether the layer computes its gradient
	// (Caffe's param_propagate_down: lr_mult != 0, or force_backward).
	learn    []bool
	backward bool  // the layer runs Backward
	blocks   []int // owned blocks whose gradients are final after this layer
	// lossAdds are loss weights of this layer's tops that readers
	// overwrote, added back before this layer's Backward.
	lossAdds []lossAdd
	// loss weight per top (0 for non-loss tops)
	lossWeight []float32
	fwd, bwd   time.Duration
}

// lossAdd adds a loss weight to every element of a blob's gradient.
type lossAdd struct {
	blob *tensor.Blob
	w    float32
}

// split sums the gradients of a blob read by several layers into the
// producer's gradient, before the producer's Backward runs.
type split struct {
	target *tensor.Blob   // the blob as its producer sees it
	parts  []*tensor.Blob // one per consumer: shared Data, own Diff
}

// Net is a built network. See the package comment.
type Net struct {
	name    string
	phase   layers.Phase
	nodes   []*node
	splits  map[int][]split // node index -> splits to run before its Backward
	inputSp []split         // splits on input blobs that several readers propagate into (propagate_down, force_backward)
	fused   []string        // the layer pairs fuseLayers joined
	blobs   map[string]*tensor.Blob
	inputs  []*tensor.Blob
	// inShapes are the input shapes the layers were last reshaped for: a
	// data source that changes an input's shape between batches (SSD's
	// AnnotatedData label, 1×1×G×8) makes Forward reshape every layer.
	inShapes []tensor.Shape
	order    []string // blob names in creation order, for diagnostics
	blocks   []Block
	params   []float32
	grads    []float32
	// seed and rngs are the seed and each layer's random source (layer i
	// draws from stream i+1), for Reseed.
	seed uint64
	rngs []*rand.PCG
	// gradUsers are the nets built ShareWith this one that use its
	// grads too (no OwnGrads): UseGrads moves theirs along.
	gradUsers []*Net
	dangling  []*tensor.Blob // tops nobody consumes and with no loss weight: their diffs stay zero
	outputs   []*tensor.Blob // tops nobody consumes (Caffe's net outputs)
	outWeight []float32      // the loss weight of each output
	hook      func([]int)
	// layerHook, when set, is told each layer's forward and backward time.
	layerHook func(layer string, backward bool, start time.Time, dur time.Duration)
	// blocks per (layer name, param index), for ShareWith.
	byLayer map[string][]int
	// pool runs the layers' parallel loops (Pool).
	pool *tensor.Pool
	// sumFn is sumChunk, bound once so that handing it to the pool
	// allocates nothing; sumCur is the split it sums (sumSplit).
	sumFn  func(lo, hi, worker int)
	sumCur *split
	// force is the spec's ForceBackward.
	force bool
	// bytes estimates the net's memory: its blobs (data and diff), and
	// its parameters with their gradients and a solver's history.
	bytes float64
	// exec, when set, runs Forward and Backward (SetExecutor); execErr is
	// the first error it returned.
	exec    Executor
	execErr error
}

// Build builds a net for spec with the given input shapes (one per
// spec.Inputs name). Errors name the layer and its position in the source.
// A blob whose size overflows, or that with the blobs before it exceeds
// tensor.MemoryLimit, is an error giving the figure, not a crash.
func Build(spec Spec, inputs map[string]tensor.Shape, opt Options) (n *Net, err error) {
	where := fmt.Sprintf("net %q", spec.Name)
	defer func() {
		if p := recover(); p != nil {
			se, ok := p.(*tensor.SizeError)
			if !ok {
				panic(p)
			}
			n, err = nil, fmt.Errorf("model: %s: %w", where, se)
		}
	}()
	return build(spec, inputs, opt, &where)
}

func build(spec Spec, inputs map[string]tensor.Shape, opt Options, at *string) (*Net, error) {
	var bytes float64 // the storage of the blobs so far, data and diff
	n := &Net{
		name:    spec.Name,
		phase:   opt.Phase,
		blobs:   map[string]*tensor.Blob{},
		splits:  map[int][]split{},
		hook:    opt.OnGradReady,
		byLayer: map[string][]int{},
		seed:    opt.Seed,
		force:   spec.ForceBackward,
	}
	for _, name := range spec.Inputs {
		shape, ok := inputs[name]
		if !ok {
			return nil, fmt.Errorf("model: net %q: no shape given for input %q", spec.Name, name)
		}
		if _, dup := n.blobs[name]; dup {
			return nil, fmt.Errorf("model: net %q: input %q declared twice", spec.Name, name)
		}
		b := tensor.NewBlob(name, shape...)
		n.blobs[name] = b
		n.order = append(n.order, name)
		n.inputs = append(n.inputs, b)
		n.inShapes = append(n.inShapes, b.Shape.Clone())
	}
	if opt.Pool != nil {
		if opt.Pool.Threads() != max(opt.Threads, 1) {
			return nil, fmt.Errorf("model: net %q: Options.Pool has %d threads but Options.Threads is %d", spec.Name, opt.Pool.Threads(), opt.Threads)
		}
		n.pool = opt.Pool
	} else {
		n.pool = tensor.NewPool(opt.Threads)
	}
	n.sumFn = n.sumChunk
	ctx := layers.Context{Phase: opt.Phase, Threads: max(opt.Threads, 1), Pool: n.pool}
	// Caffe lets layers share a name (mnist_autoencoder's two "loss"
	// layers), but it finds weights by layer name, and so do Blocks,
	// ShareWith and .caffemodel files here: a shared name is refused
	// only where one of its layers has parameters.
	type named struct {
		where  string
		params bool
	}
	names := map[string]named{}
	for i, ls := range spec.Layers {
		where := layerWhere(ls)
		*at = where
		first, dup := names[ls.Name]
		if ls.Config == nil {
			return nil, fmt.Errorf("model: %s: no layer config", where)
		}
		c := ctx
		pcg := rand.NewPCG(opt.Seed, uint64(i)+1)
		n.rngs = append(n.rngs, pcg)
		c.Rand = rand.New(pcg)
		l, err := ls.Config.Build(c)
		if err != nil {
			return nil, fmt.Errorf("model: %s: %w", where, err)
		}
		if len(ls.PropagateDown) > 0 && len(ls.PropagateDown) != len(ls.Bottom) {
			return nil, fmt.Errorf("model: %s: %d propagate_down values for %d bottoms; give one per bottom or none", where, len(ls.PropagateDown), len(ls.Bottom))
		}
		nd := &node{spec: ls, layer: l}
		for _, bn := range ls.Bottom {
			b, ok := n.blobs[bn]
			if !ok {
				return nil, fmt.Errorf("model: %s: bottom %q is not produced by an earlier layer", where, bn)
			}
			nd.bottom = append(nd.bottom, b)
		}
		for _, tn := range ls.Top {
			if b, ok := n.blobs[tn]; ok {
				if !contains(ls.Bottom, tn) {
					return nil, fmt.Errorf("model: %s: top %q is already produced by another layer (only in-place reuse, top == bottom, is allowed)", where, tn)
				}
				nd.top = append(nd.top, b)
				continue
			}
			b := &tensor.Blob{Name: tn}
			n.blobs[tn] = b
			n.order = append(n.order, tn)
			nd.top = append(nd.top, b)
		}
		if err := l.Setup(nd.bottom, nd.top); err != nil {
			return nil, fmt.Errorf("model: %s: %w", where, err)
		}
		if err := l.Reshape(nd.bottom, nd.top); err != nil {
			return nil, fmt.Errorf("model: %s: %w", where, err)
		}
		if err := checkWindows(nd); err != nil {
			return nil, fmt.Errorf("model: %s: %w", where, err)
		}
		hasParams := len(l.Params()) > 0
		if dup && (hasParams || first.params) {
			return nil, fmt.Errorf("model: %s: %s has the same name, and layers with parameters need names of their own (weights are matched to layers by name)", where, first.where)
		}
		if !dup {
			names[ls.Name] = named{where, hasParams}
		}
		for j, t := range nd.top {
			if j >= len(ls.Top) || !contains(ls.Bottom, ls.Top[j]) {
				bytes += 8 * float64(t.Count())
			}
		}
		for _, p := range l.Params() {
			if p.Blob != nil {
				// Data and diff, the flat parameter and gradient
				// buffers, and the solver's history.
				bytes += 20 * float64(p.Blob.Count())
			}
		}
		if lim := tensor.MemoryLimit(); lim > 0 && bytes > float64(lim) {
			return nil, fmt.Errorf("model: %s: the net needs at least %s for its blobs and parameters up to this layer, more than the %s this machine has", where, tensor.HumanBytes(bytes), tensor.HumanBytes(float64(lim)))
		}
		if err := nd.setLossWeights(); err != nil {
			return nil, fmt.Errorf("model: %s: %w", where, err)
		}
		n.nodes = append(n.nodes, nd)
	}
	n.bytes = bytes
	*at = fmt.Sprintf("net %q: the parameter buffers", spec.Name)
	if err := n.layoutParams(opt); err != nil {
		return nil, err
	}
	if err := n.planBackward(); err != nil {
		return nil, err
	}
	if !opt.Unfused {
		n.fuseLayers()
	}
	return n, nil
}

// fuseLayers joins each BatchNorm to a Scale that runs right after it, in
// place on its one top (layers.FuseBatchNormScale: the ResNets' BatchNorm
// + Scale pairs), so the two make two passes over the blob each way where
// they made four, and a ReLU that runs next in place to them
// (layers.FuseReLU), saving its pass each way. Nothing reads that top between them (they are adjacent,
// and an in-place reader takes no split part), and a top with a loss
// weight, whose value after the BatchNorm counts, is left alone.
func (n *Net) fuseLayers() {
	for i := 0; i+1 < len(n.nodes); i++ {
		a, b := n.nodes[i], n.nodes[i+1]
		if len(a.top) != 1 || len(b.bottom) != 1 || len(b.top) != 1 || b.bottom[0] != a.top[0] || b.top[0] != a.top[0] || a.lossWeight[0] != 0 {
			continue
		}
		if !layers.FuseBatchNormScale(a.layer, b.layer) {
			continue
		}
		name := a.spec.Name + "+" + b.spec.Name
		if i+2 < len(n.nodes) {
			c := n.nodes[i+2]
			if len(c.bottom) == 1 && len(c.top) == 1 && c.bottom[0] == b.top[0] && c.top[0] == b.top[0] && b.lossWeight[0] == 0 &&
				layers.FuseReLU(b.layer, c.layer) {
				name += "+" + c.spec.Name
			}
		}
		n.fused = append(n.fused, name)
	}
}

// Fused names the layers fuseLayers joined, "bn+scale" or
// "bn+scale+relu", in net order.
func (n *Net) Fused() []string { return n.fused }

func layerWhere(ls LayerSpec) string {
	if ls.Pos != "" {
		return fmt.Sprintf("layer %q (%s)", ls.Name, ls.Pos)
	}
	return fmt.Sprintf("layer %q", ls.Name)
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func (nd *node) setLossWeights() error {
	nd.lossWeight = make([]float32, len(nd.top))
	switch {
	case len(nd.spec.LossWeight) > 0:
		if len(nd.spec.LossWeight) != len(nd.top) {
			return fmt.Errorf("%d loss_weight values for %d tops", len(nd.spec.LossWeight), len(nd.top))
		}
		copy(nd.lossWeight, nd.spec.LossWeight)
	default:
		if _, ok := nd.layer.(layers.LossLayer); ok && len(nd.top) > 0 {
			nd.lossWeight[0] = 1
		}
	}
	return nil
}

// layoutParams gives every param blob its place in the flat buffers, fills
// them (or, with ShareWith, points them at the other net's buffers), and
// records which blocks each layer finalises.
func (n *Net) layoutParams(opt Options) error {
	type ref struct {
		node, idx int
		p         layers.Param
	}
	var refs []ref
	shared := map[string]int{}     // param name -> block
	ownSpec := map[int]ParamSpec{} // block -> its ParamSpec as the sharers amended it
	users := map[int]int{}         // block -> lowest node index using it
	total := 0
	for i, nd := range n.nodes {
		if got, have := len(nd.spec.Params), len(nd.layer.Params()); got > have {
			return fmt.Errorf("model: %s: %d param specs for the layer's %d param blobs", layerWhere(nd.spec), got, have)
		}
		for j, p := range nd.layer.Params() {
			ps := ParamSpec{LRMult: 1, DecayMult: 1}
			if j < len(nd.spec.Params) {
				ps = nd.spec.Params[j]
			}
			if p.Frozen {
				ps.LRMult, ps.DecayMult, ps.LRSet, ps.DecaySet = 0, 0, false, false
			}
			nd.learn = append(nd.learn, ps.LRMult != 0 || (n.force && !p.Frozen))
			if ps.Name != "" {
				if bi, ok := shared[ps.Name]; ok {
					b := &n.blocks[bi]
					switch {
					case ps.Permissive && b.Len() != p.Blob.Count():
						return fmt.Errorf("model: %s: shared param %q (share_mode PERMISSIVE) has %d values here (shape %v) but %d in layer %q (shape %v)", layerWhere(nd.spec), ps.Name, p.Blob.Count(), p.Blob.Shape, b.Len(), b.Layer, b.Shape)
					case !ps.Permissive && !b.Shape.Equal(p.Blob.Shape):
						return fmt.Errorf("model: %s: shared param %q has shape %v here but %v in layer %q (share_mode PERMISSIVE shares params of equal count)", layerWhere(nd.spec), ps.Name, p.Blob.Shape, b.Shape, b.Layer)
					}
					// Caffe: the first lr_mult and decay_mult given for a
					// shared param hold, and a second one must agree.
					o := ownSpec[bi]
					if ps.LRSet && o.LRSet && ps.LRMult != o.LRMult {
						return fmt.Errorf("model: %s: shared param %q has lr_mult %g here but %g in layer %q", layerWhere(nd.spec), ps.Name, ps.LRMult, o.LRMult, b.Layer)
					}
					if ps.DecaySet && o.DecaySet && ps.DecayMult != o.DecayMult {
						return fmt.Errorf("model: %s: shared param %q has decay_mult %g here but %g in layer %q", layerWhere(nd.spec), ps.Name, ps.DecayMult, o.DecayMult, b.Layer)
					}
					if ps.LRSet && !o.LRSet && !p.Frozen {
						b.LRMult, o.LRSet, o.LRMult = ps.LRMult, true, ps.LRMult
					}
					if ps.DecaySet && !o.DecaySet && !p.Frozen {
						b.DecayMult, o.DecaySet, o.DecayMult = ps.DecayMult, true, ps.DecayMult
					}
					ownSpec[bi] = o
					refs = append(refs, ref{i, bi, p})
					n.byLayer[nd.spec.Name] = append(n.byLayer[nd.spec.Name], bi)
					users[bi] = min(users[bi], i)
					continue
				}
			}
			name := fmt.Sprintf("%s/%d", nd.spec.Name, j)
			if ps.Name != "" {
				name = ps.Name
				shared[ps.Name] = len(n.blocks)
			}
			bi := len(n.blocks)
			ownSpec[bi] = ps
			n.blocks = append(n.blocks, Block{Name: name, Layer: nd.spec.Name, Shape: p.Blob.Shape.Clone(), Off: total, LRMult: ps.LRMult, DecayMult: ps.DecayMult})
			total += p.Blob.Count()
			refs = append(refs, ref{i, bi, p})
			n.byLayer[nd.spec.Name] = append(n.byLayer[nd.spec.Name], bi)
			users[bi] = i
		}
	}
	if o := opt.ShareWith; o != nil {
		if err := n.shareFrom(o); err != nil {
			return err
		}
		if opt.OwnGrads {
			n.grads = make([]float32, len(o.grads))
		} else {
			o.gradUsers = append(o.gradUsers, n)
		}
	} else {
		n.params = make([]float32, total)
		n.grads = make([]float32, total)
	}
	// Point every param blob at its block and fill the owners in order.
	fill := rand.New(rand.NewPCG(opt.Seed, 0))
	filled := make([]bool, len(n.blocks))
	for _, r := range refs {
		b := n.blocks[r.idx]
		r.p.Blob.Data = n.params[b.Off : b.Off+b.Len() : b.Off+b.Len()]
		r.p.Blob.Diff = n.grads[b.Off : b.Off+b.Len() : b.Off+b.Len()]
		if opt.ShareWith == nil && !filled[r.idx] {
			r.p.Filler.Fill(r.p.Blob, fill)
			filled[r.idx] = true
		}
	}
	for bi, ni := range users {
		n.nodes[ni].blocks = append(n.nodes[ni].blocks, bi)
	}
	for _, nd := range n.nodes {
		sortInts(nd.blocks)
	}
	return nil
}

// shareFrom adopts o's flat buffers after checking that every block of n
// has a counterpart in o with the same layer, index and shape.
func (n *Net) shareFrom(o *Net) error {
	if len(n.blocks) == 0 {
		n.params, n.grads = o.params, o.grads
		return nil
	}
	for _, nd := range n.nodes { // in layer order, so the first mismatch is reported
		layer := nd.spec.Name
		bis, ok := n.byLayer[layer]
		if !ok {
			continue
		}
		obis, ok := o.byLayer[layer]
		if !ok {
			return fmt.Errorf("model: %s net: %s has params but the %s net has no layer of that name to share them with", n.phase, layerWhere(nd.spec), o.phase)
		}
		if len(obis) != len(bis) {
			return fmt.Errorf("model: %s has %d param blobs in the %s net and %d in the %s net", layerWhere(nd.spec), len(bis), n.phase, len(obis), o.phase)
		}
		for j, bi := range bis {
			ob := o.blocks[obis[j]]
			if !n.blocks[bi].Shape.Equal(ob.Shape) {
				return fmt.Errorf("model: %s param %d has shape %v in the %s net and %v in the %s net", layerWhere(nd.spec), j, n.blocks[bi].Shape, n.phase, ob.Shape, o.phase)
			}
			nb := &n.blocks[bi]
			nb.Off, nb.LRMult, nb.DecayMult = ob.Off, ob.LRMult, ob.DecayMult
		}
	}
	n.params, n.grads = o.params, o.grads
	return nil
}

// planBackward decides which layers run Backward, which bottoms need
// gradients, and where gradients of blobs read by several layers are summed.
func (n *Net) planBackward() error {
	// Forward sweep: a blob needs a gradient if it is produced by a layer
	// that has learnable params or reads a blob that needs one. Both
	// sweeps track blob versions: a layer computing in place starts a new
	// version of its bottom, whose needs are its own.
	//
	// As in Caffe, an explicit propagate_down overrides the need either
	// way, but only in a layer that runs Backward anyway (it reads a blob
	// that needs a gradient, or learns a param); force_backward makes
	// every layer run Backward and every bottom the layer can
	// differentiate take a gradient.
	needs := map[*tensor.Blob]bool{}
	for _, nd := range n.nodes {
		if nd.learn == nil {
			nd.learn = make([]bool, len(nd.layer.Params()))
		}
		if pp, ok := nd.layer.(layers.ParamPropagator); ok {
			pp.SetParamPropagate(nd.learn)
		}
		blocker, _ := nd.layer.(layers.GradientBlocker)
		learn := slices.Contains(nd.learn, true)
		nd.propDown = make([]bool, len(nd.bottom))
		need := learn
		for i, b := range nd.bottom {
			need = need || needs[b]
			allowed := blocker == nil || blocker.AllowBackward(i)
			nd.propDown[i] = needs[b] && allowed
			if n.force && allowed {
				nd.propDown[i] = true
			}
			if i < len(nd.spec.PropagateDown) {
				if nd.spec.PropagateDown[i] && !allowed {
					return fmt.Errorf("model: %s: propagate_down: true for bottom %q, which a %s layer cannot backpropagate to (Caffe stops at the first backward pass)", layerWhere(nd.spec), nd.spec.Bottom[i], nd.layer.Type())
				}
				nd.propDown[i] = nd.spec.PropagateDown[i]
			}
		}
		any := learn || slices.Contains(nd.propDown, true)
		if !need && !n.force {
			any = false
		}
		nd.backward = any
		for _, t := range nd.top {
			needs[t] = any
		}
	}
	// Backward sweep: only layers whose outputs reach a loss run Backward
	// (under force_backward, every layer that has something to compute).
	reaches := map[*tensor.Blob]bool{}
	for i := len(n.nodes) - 1; i >= 0; i-- {
		nd := n.nodes[i]
		contributes := n.force
		for j, t := range nd.top {
			if nd.lossWeight[j] != 0 || reaches[t] {
				contributes = true
			}
		}
		if !contributes {
			nd.backward = false
		}
		// The tops' versions start here: whether the older version of an
		// in-place top reaches a loss depends only on this layer and the
		// layers before it.
		for _, t := range nd.top {
			reaches[t] = false
		}
		if !nd.backward {
			for j := range nd.propDown {
				nd.propDown[j] = false
			}
			continue
		}
		for j, b := range nd.bottom {
			if nd.propDown[j] {
				reaches[b] = true
			}
		}
	}
	// Outputs: blobs whose last version no later layer reads. Those that
	// carry no loss keep a zero gradient.
	type ref struct {
		nd  *node
		top int
	}
	read := map[*tensor.Blob]bool{}
	last := map[*tensor.Blob]ref{}
	var order []*tensor.Blob
	for _, nd := range n.nodes {
		for _, b := range nd.bottom {
			read[b] = true
		}
		for j, t := range nd.top {
			if _, seen := last[t]; !seen {
				order = append(order, t)
			}
			read[t] = false
			last[t] = ref{nd, j}
		}
	}
	for _, t := range order {
		if read[t] {
			continue
		}
		n.outputs = append(n.outputs, t)
		n.outWeight = append(n.outWeight, last[t].nd.lossWeight[last[t].top])
		if r := last[t]; r.nd.lossWeight[r.top] == 0 {
			n.dangling = append(n.dangling, t)
		}
	}
	// Splits: a blob version whose gradient is wanted by several readers.
	// Blob versions change at in-place layers, so track the current readers
	// per *Blob and close the group when a layer writes the blob in place.
	//
	// A version that carries a loss weight and whose gradient is also
	// written by a reader (as a bottom or in place) gets its weight added
	// back after the readers' Backward, before its producer's: Caffe's
	// split with a loss-weighted branch.
	producer := map[*tensor.Blob]int{} // -1 for inputs
	for _, b := range n.inputs {
		producer[b] = -1
	}
	type reader struct{ node, idx int }
	readers := map[*tensor.Blob][]reader{}
	users := map[*tensor.Blob][]int{}    // readers (not in place) that run Backward
	weight := map[*tensor.Blob]float32{} // the current version's loss weight
	consumed := map[*tensor.Blob]bool{}  // some reader writes the current version's gradient
	closeGroup := func(b *tensor.Blob) {
		rs := readers[b]
		if w := weight[b]; w != 0 && consumed[b] {
			nd := n.nodes[producer[b]]
			nd.lossAdds = append(nd.lossAdds, lossAdd{blob: b, w: w})
		}
		delete(readers, b)
		delete(users, b)
		delete(weight, b)
		delete(consumed, b)
		if len(rs) < 2 {
			return
		}
		sp := split{target: b}
		for _, r := range rs {
			part := &tensor.Blob{Name: b.Name + "_split", Shape: b.Shape.Clone(), Data: b.Data, Diff: make([]float32, b.Count())}
			n.nodes[r.node].bottom[r.idx] = part
			sp.parts = append(sp.parts, part)
		}
		p := producer[b]
		if p < 0 {
			n.inputSp = append(n.inputSp, sp)
			return
		}
		n.splits[p] = append(n.splits[p], sp)
	}
	for i, nd := range n.nodes {
		for j, b := range nd.bottom {
			inPlace := isTop(nd, b)
			if nd.backward && !inPlace {
				users[b] = append(users[b], i)
			}
			if !nd.propDown[j] {
				continue
			}
			consumed[b] = true
			if !inPlace {
				readers[b] = append(readers[b], reader{i, j})
			}
		}
		for j, t := range nd.top {
			if indexOf(nd.bottom, t) >= 0 && len(users[t]) > 0 {
				r := n.nodes[users[t][0]]
				return fmt.Errorf("model: %s modifies blob %q in place, but layer %q read it earlier and runs Backward on it: the in-place write would corrupt that layer's input; give %q a top of its own", layerWhere(nd.spec), t.Name, r.spec.Name, nd.spec.Top[j])
			}
			closeGroup(t) // an in-place write ends the readers of the old version
			producer[t] = i
			weight[t] = nd.lossWeight[j]
		}
	}
	for _, name := range n.order {
		closeGroup(n.blobs[name])
	}
	return nil
}

func indexOf(s []*tensor.Blob, b *tensor.Blob) int {
	for i, x := range s {
		if x == b {
			return i
		}
	}
	return -1
}

func isTop(nd *node, b *tensor.Blob) bool {
	for _, t := range nd.top {
		if t == b {
			return true
		}
	}
	return false
}

func sortInts(s []int) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// Name is the net's name from the spec.
func (n *Net) Name() string { return n.name }

// Input returns the input blob of that name, or nil.
func (n *Net) Input(name string) *tensor.Blob {
	for _, b := range n.inputs {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// Blob returns the blob of that name (as its last writer left it), or nil.
func (n *Net) Blob(name string) *tensor.Blob { return n.blobs[name] }

// Outputs are the blobs no layer reads (Caffe's net outputs: losses,
// accuracies), in the order their layers run.
func (n *Net) Outputs() []*tensor.Blob { return n.outputs }

// OutputLossWeights are the loss weights of Outputs, in their order (0
// for an output that is no loss, such as an accuracy).
func (n *Net) OutputLossWeights() []float32 { return n.outWeight }

// Params is the flat buffer of all parameter values; blocks index it.
func (n *Net) Params() []float32 { return n.params }

// Grads is the flat buffer of all parameter gradients, laid out as Params.
func (n *Net) Grads() []float32 { return n.grads }

// UseGrads moves the net's gradients into buf, which must hold
// len(Grads()) floats: buf gets the current gradients, and every param
// blob's Diff, Grads, and those of the nets built ShareWith this one
// without OwnGrads, view buf from then on. It is how a trainer puts the
// gradients where its transport wants them (collective.Executor.Buffer:
// shared memory a host group reduces in place). Layers read their
// params' Diff on every call, so nothing else holds the old buffer.
func (n *Net) UseGrads(buf []float32) error {
	if len(buf) != len(n.grads) {
		return fmt.Errorf("model: %d floats for the net's %d gradients", len(buf), len(n.grads))
	}
	copy(buf, n.grads)
	n.pointGrads(buf)
	return nil
}

// DropGradUser forgets u, a net built ShareWith n without OwnGrads, when
// its owner drops it: UseGrads no longer moves u's gradients, and n no
// longer holds u. A net n does not know is ignored.
func (n *Net) DropGradUser(u *Net) {
	n.gradUsers = slices.DeleteFunc(n.gradUsers, func(x *Net) bool { return x == u })
}

// pointGrads makes buf the gradients of n and of the nets that share
// them.
func (n *Net) pointGrads(buf []float32) {
	n.grads = buf
	for _, nd := range n.nodes {
		bis := n.byLayer[nd.spec.Name]
		for j, p := range nd.layer.Params() {
			b := n.blocks[bis[j]]
			p.Blob.Diff = buf[b.Off : b.Off+b.Len() : b.Off+b.Len()]
		}
	}
	for _, u := range n.gradUsers {
		u.pointGrads(buf)
	}
}

// Blocks describes each parameter blob's place in Params and Grads.
func (n *Net) Blocks() []Block { return n.blocks }

// Reseed restarts every layer's random source (Dropout's masks) at a point
// that depends only on the net's seed and key: layer i then draws what a
// net of that seed reseeded with the same key draws, whatever it drew
// before. Exact summation (issue 27) reseeds before each atom of the
// global batch with the atom's index, so that an atom's masks do not
// depend on which worker computes it.
func (n *Net) Reseed(key uint64) {
	for i, r := range n.rngs {
		r.Seed(n.seed^(key*0x9e3779b97f4a7c15+0x632be59bd9b4e019), uint64(i)+1)
	}
}

// Pool is the worker pool the net's layers split their loops across
// (Options.Threads wide), for work that should run on the same threads
// between passes (the solver's update: solver.SetPool).
func (n *Net) Pool() *tensor.Pool { return n.pool }

// NumLayers is the number of compute layers.
func (n *Net) NumLayers() int { return len(n.nodes) }

// LayerInfo describes one layer for reports.
type LayerInfo struct {
	Name, Type string
	Tops       []tensor.Shape
	// Forward and Backward are the time spent in the layer since the last
	// ResetTimes.
	Forward, Backward time.Duration
	// Backprop says whether the layer runs Backward.
	Backprop bool
	// PropagateDown says, per bottom, whether Backward writes its
	// gradient (Caffe's bottom_need_backward).
	PropagateDown []bool
	// Kernel says, for a layer that chooses between oneDNN and dsgd's own
	// kernels (layers.KernelReporter), which runs and why; else "".
	Kernel string
}

// Layers describes every layer in order, with its accumulated times.
func (n *Net) Layers() []LayerInfo {
	out := make([]LayerInfo, len(n.nodes))
	for i, nd := range n.nodes {
		li := LayerInfo{Name: nd.spec.Name, Type: nd.layer.Type(), Forward: nd.fwd, Backward: nd.bwd, Backprop: nd.backward, PropagateDown: slices.Clone(nd.propDown)}
		if k, ok := nd.layer.(layers.KernelReporter); ok {
			li.Kernel = k.Kernel()
		}
		for _, t := range nd.top {
			li.Tops = append(li.Tops, t.Shape.Clone())
		}
		out[i] = li
	}
	return out
}

// ResetTimes zeroes the per-layer times.
func (n *Net) ResetTimes() {
	for _, nd := range n.nodes {
		nd.fwd, nd.bwd = 0, 0
	}
}

// Forward runs every layer and returns the total weighted loss.
func (n *Net) Forward() (loss float64) {
	if n.exec != nil {
		if in := n.reshapedInput(); in != nil {
			n.execErr = fmt.Errorf("model: net %q: input %q changed shape to %v between batches; the net's executor runs the shapes it was planned for (run it on the CPU)", n.name, in.Name, in.Shape)
		}
		return n.execForward()
	}
	if n.execErr != nil {
		return math.NaN()
	}
	cur := -1
	defer func() {
		if p := recover(); p != nil {
			n.execErr, loss = n.layerPanic(cur, false, p), math.NaN()
		}
	}()
	if n.reshapedInput() != nil {
		for k, b := range n.inputs {
			n.inShapes[k] = append(n.inShapes[k][:0], b.Shape...)
		}
		n.reshapeAfter(-1)
	}
	for i, nd := range n.nodes {
		cur = i
		t0 := time.Now()
		nd.layer.Forward(nd.bottom, nd.top)
		d := time.Since(t0)
		nd.fwd += d
		if n.layerHook != nil {
			n.layerHook(nd.spec.Name, false, t0, d)
		}
		if r, ok := nd.layer.(layers.ForwardReshaper); ok && r.TopsReshaped() {
			n.reshapeAfter(i)
		}
		for j, w := range nd.lossWeight {
			if w != 0 {
				var s float64
				for _, v := range nd.top[j].Data {
					s += float64(v)
				}
				loss += float64(w) * s
			}
		}
	}
	return loss
}

// reshapedInput is the first input whose shape differs from the one the
// layers were reshaped for, nil when none does.
func (n *Net) reshapedInput() *tensor.Blob {
	for k, b := range n.inputs {
		if !b.Shape.Equal(n.inShapes[k]) {
			return b
		}
	}
	return nil
}

// reshapeAfter reshapes the layers after node i, whose Forward changed
// its tops' shapes (a layers.ForwardReshaper such as Filter), as Caffe's
// Forward reshapes every layer before running it; i = -1 reshapes every
// layer after a data source changed an input's shape. The split parts of
// each reshaped blob follow it before its readers reshape. A layer that
// refuses the new shape panics: Forward has no error to return, and Caffe
// aborts.
func (n *Net) reshapeAfter(i int) {
	if i < 0 {
		followSplits(n.inputSp)
	}
	for j := max(i, 0); j < len(n.nodes); j++ {
		nd := n.nodes[j]
		if j > i {
			if err := nd.layer.Reshape(nd.bottom, nd.top); err != nil {
				after := "an input changed shape"
				if i >= 0 {
					after = layerWhere(n.nodes[i].spec) + " changed its tops' shapes"
				}
				panic(fmt.Sprintf("model: %s: reshaping after %s: %v", layerWhere(nd.spec), after, err))
			}
		}
		followSplits(n.splits[j])
	}
}

// followSplits gives each split's parts their target's new shape and data.
func followSplits(sps []split) {
	for _, sp := range sps {
		c := sp.target.Count()
		for _, p := range sp.parts {
			p.Shape = append(p.Shape[:0], sp.target.Shape...)
			p.Data = sp.target.Data
			if cap(p.Diff) < c {
				p.Diff = make([]float32, c)
			}
			p.Diff = p.Diff[:c]
		}
	}
}

// Backward computes the gradient of the loss of the last Forward into
// Grads (which it zeroes first), calling Options.OnGradReady as each
// layer's parameter gradients become final.
func (n *Net) Backward() {
	if n.exec != nil {
		n.execBackward()
		return
	}
	if n.execErr != nil {
		return
	}
	cur := -1
	defer func() {
		if p := recover(); p != nil {
			n.execErr = n.layerPanic(cur, true, p)
		}
	}()
	clear(n.grads)
	for _, b := range n.dangling {
		clear(b.Diff)
	}
	for _, nd := range n.nodes {
		for j, w := range nd.lossWeight {
			if w != 0 {
				d := nd.top[j].Diff
				for k := range d {
					d[k] = w
				}
			}
		}
	}
	for i := len(n.nodes) - 1; i >= 0; i-- {
		cur = i
		nd := n.nodes[i]
		for k := range n.splits[i] {
			n.sumSplit(&n.splits[i][k])
		}
		for _, la := range nd.lossAdds {
			d := la.blob.Diff
			for k := range d {
				d[k] += la.w
			}
		}
		if nd.backward {
			t0 := time.Now()
			nd.layer.Backward(nd.top, nd.propDown, nd.bottom)
			d := time.Since(t0)
			nd.bwd += d
			if n.layerHook != nil {
				n.layerHook(nd.spec.Name, true, t0, d)
			}
		}
		if n.hook != nil && len(nd.blocks) > 0 {
			n.hook(nd.blocks)
		}
	}
	for k := range n.inputSp {
		n.sumSplit(&n.inputSp[k])
	}
}

// layerPanic is the error for a panic in node i's pass (backward or
// forward; i −1: outside any layer): a layer's Forward and Backward have
// no error to return, so one that meets data it cannot take (a label past
// its classes, an index outside its blob, a shape it refuses after a
// Filter) panics, and the net turns that into its Err naming the layer,
// rather than the process ending. A runtime error (a bug, not bad data)
// carries the stack where it was recovered.
func (n *Net) layerPanic(i int, backward bool, p any) error {
	where := "net " + strconv.Quote(n.name)
	if i >= 0 && i < len(n.nodes) {
		where = layerWhere(n.nodes[i].spec) + ", " + n.nodes[i].layer.Type()
	}
	pass := "forward"
	if backward {
		pass = "backward"
	}
	if re, ok := p.(runtime.Error); ok {
		return fmt.Errorf("model: %s, %s: %w\n%s", where, pass, re, debug.Stack())
	}
	if err, ok := p.(error); ok {
		return fmt.Errorf("model: %s, %s: %w", where, pass, err)
	}
	return fmt.Errorf("model: %s, %s: %v", where, pass, p)
}

// splitPerThread is the element count of a split below which summing its
// diffs stays on one goroutine: a memory-bound loop, as ReLU's (whose
// threshold it shares).
const splitPerThread = 1 << 16

// sumBlock is how many elements of a split's target sumChunk sums from
// every part before it moves on: 32 KiB, so that the target's block stays
// in the L1 cache while each part is added to it.
const sumBlock = 8192

// sumSplit writes the sum of sp's parts' diffs into its target's diff,
// split by element ranges across the net's pool. Each element is the
// same sum in the same order (parts[0] + parts[1] + ...) however the range
// is cut, so the bits do not depend on the thread count.
//
// GoogLeNet's inception inputs each feed four branches: at batch 32 the
// sums read 4 × 19 MB per module, which on one goroutine took 90 ms of an
// iteration's 3.2 s at two threads (docs/benchmarks.md, "GoogLeNet at two
// threads").
func (n *Net) sumSplit(sp *split) {
	c := len(sp.target.Diff)
	n.sumCur = sp
	n.pool.For(c, max(1, min(n.pool.Threads(), c/splitPerThread)), n.sumFn)
	n.sumCur = nil
}

// sumChunk sums elements [lo, hi) of the current split (sumSplit), a
// block at a time.
func (n *Net) sumChunk(lo, hi, _ int) {
	sp := n.sumCur
	for b := lo; b < hi; b += sumBlock {
		e := min(b+sumBlock, hi)
		d := sp.target.Diff[b:e]
		copy(d, sp.parts[0].Diff[b:e])
		for _, p := range sp.parts[1:] {
			tensor.AddTo(d, p.Diff[b:e])
		}
	}
}

// SetGradHook replaces Options.OnGradReady: the callback Backward calls
// as each layer's parameter gradients become final (nil: none).
func (n *Net) SetGradHook(hook func(blocks []int)) { n.hook = hook }

// SetLayerHook sets a callback that Forward and Backward call after each
// layer's pass with the layer's name, which pass it was, and when it
// started and how long it took (the time Layers accumulates); nil, the
// default, turns it off. It runs on the goroutine that called Forward or
// Backward, between layers, so it should be quick; a timeline records
// these as per-layer spans.
func (n *Net) SetLayerHook(hook func(layer string, backward bool, start time.Time, dur time.Duration)) {
	n.layerHook = hook
}

// LayerHook is the hook SetLayerHook set (nil: none), for a net built to
// stand in for this one (another input shape) to time its layers alike.
func (n *Net) LayerHook() func(layer string, backward bool, start time.Time, dur time.Duration) {
	return n.layerHook
}

// ForwardBackward runs Forward then Backward and returns the loss.
func (n *Net) ForwardBackward() float64 {
	loss := n.Forward()
	n.Backward()
	return loss
}

// NonFinite reports the first layer, in forward order, whose output holds
// a NaN or an infinity after the last Forward, or whose parameters do, for
// the error a trainer gives when the loss diverges. It returns "" when every
// value is finite.
//
// Causes are reported before effects: a layer's learned params before its
// outputs, its stored statistics (Frozen params, which Forward computes
// from the input) after them; and a blob that later layers modify in place,
// which holds only the last one's values, after the params of every layer
// that wrote it, naming them all.
func (n *Net) NonFinite() string {
	last := map[*tensor.Blob]int{} // blob -> index of the last layer writing it
	for i, nd := range n.nodes {
		for _, t := range nd.top {
			last[t] = i
		}
	}
	first := map[*tensor.Blob]int{} // blob -> index of the layer producing it
	var inPlace map[*tensor.Blob][]string
	stats := map[int][]int{} // node index -> nodes whose stored statistics to check after it
	checkParams := func(nd *node, frozen bool) string {
		ps := nd.layer.Params()
		for j, bi := range n.byLayer[nd.spec.Name] {
			if j < len(ps) && ps[j].Frozen != frozen {
				continue
			}
			b := n.blocks[bi]
			if k := firstNonFinite(n.params[b.Off : b.Off+b.Len()]); k >= 0 {
				return fmt.Sprintf("%s: param %s holds %v at index %d", layerWhere(nd.spec), b.Name, n.params[b.Off+k], k)
			}
		}
		return ""
	}
	for i, nd := range n.nodes {
		if msg := checkParams(nd, false); msg != "" {
			return msg
		}
		after := i
		for _, t := range nd.top {
			after = max(after, last[t])
		}
		stats[after] = append(stats[after], i)
		for _, t := range nd.top {
			if p, ok := first[t]; ok && p != i {
				if inPlace == nil {
					inPlace = map[*tensor.Blob][]string{}
				}
				inPlace[t] = append(inPlace[t], fmt.Sprintf("%q", nd.spec.Name))
			} else {
				first[t] = i
			}
			if last[t] != i {
				continue
			}
			k := firstNonFinite(t.Data)
			if k < 0 {
				continue
			}
			p := n.nodes[first[t]]
			if w := inPlace[t]; len(w) > 0 {
				return fmt.Sprintf("%s (%s): output %q, then modified in place by %s, holds %v at index %d", layerWhere(p.spec), p.layer.Type(), t.Name, strings.Join(w, ", "), t.Data[k], k)
			}
			return fmt.Sprintf("%s (%s): output %q holds %v at index %d", layerWhere(p.spec), p.layer.Type(), t.Name, t.Data[k], k)
		}
		for _, j := range stats[i] {
			if msg := checkParams(n.nodes[j], true); msg != "" {
				return msg
			}
		}
	}
	return ""
}

func firstNonFinite(x []float32) int {
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return i
		}
	}
	return -1
}

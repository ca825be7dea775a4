package gpunet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"
	"unsafe"

	"dsgd/engine/cuda"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// op is one layer on the GPU.
type op interface {
	forward() error
	backward() error
}

// region is host memory [lo, hi) that blobs share, mirrored at dev.
type region struct {
	lo, hi uintptr
	dev    cuda.Ptr
}

// Net runs a model.Net on a GPU; it is the net's model.Executor once
// New returns.
type Net struct {
	g    *cuda.GPU
	mu   *sync.Mutex
	net  *model.Net
	plan model.Plan
	ops  []op
	// Fallback names the layers that run on the CPU, with their types.
	Fallback []string
	// Algos names each convolution's cuDNN algorithms.
	Algos []string
	// Fused names the layers that run joined to the BatchNorm before
	// them (bnOp).
	Fused []string

	regions        []region
	params, grads  cuda.Ptr
	nparams        int
	paramBase      uintptr
	owned          []cuda.Ptr // everything allocated, for Close
	downloadParams []model.Block
	lossTops       []lossTop
	sent           []bool // blocks whose gradients went up this Backward
	rng            *rand.Rand
	resident       bool
	paramsUp       bool // the params and inputs went up once (resident)
	// timing waits for the GPU after each layer and adds its passes'
	// times to fwdT and bwdT (SetTiming).
	timing     bool
	fwdT, bwdT []time.Duration
}

// SetTiming turns per-layer timing on or off: with it, each layer's pass
// is followed by a wait for the GPU, so that LayerTimes can say what each
// layer took (the waits cost some of the overlap between layers, so the
// whole pass runs a little slower). Turning it on zeroes the times.
func (e *Net) SetTiming(on bool) {
	e.timing = on
	e.fwdT = make([]time.Duration, len(e.ops))
	e.bwdT = make([]time.Duration, len(e.ops))
}

// LayerTimes returns each layer's name and the forward and backward time
// added up since SetTiming(true).
func (e *Net) LayerTimes() (names []string, fwd, bwd []time.Duration) {
	for _, st := range e.plan.Steps {
		names = append(names, st.Name)
	}
	return names, e.fwdT, e.bwdT
}

// timed runs pass and, when timing, adds its time (up to the GPU's
// finishing it) to *d.
func (e *Net) timed(d *time.Duration, pass func() error) error {
	if !e.timing {
		return pass()
	}
	t0 := time.Now()
	if err := pass(); err != nil {
		return err
	}
	err := e.g.Sync()
	*d += time.Since(t0)
	return err
}

type lossTop struct {
	blob *tensor.Blob
	w    float32
}

// locks serialise the executors of one GPU: they share its stream,
// cuBLAS and cuDNN handles and workspace.
var locks sync.Map // *cuda.GPU -> *sync.Mutex

// Options configures New.
type Options struct {
	// Seed seeds Dropout's masks.
	Seed uint64
	// WorkspaceLimit bounds the cuDNN workspace an algorithm may use
	// (default 1 GiB).
	WorkspaceLimit int64
	// CPU lists layer types to run on the CPU even where there is a GPU
	// pass (tests compare the two).
	CPU []string
	// Resident keeps the params, the inputs and the gradients on the
	// GPU: the params and inputs go up at the first Forward only and the
	// gradients stay there (Backward waits for the GPU instead). For
	// timing the passes alone on one batch, as a framework's own loop
	// keeps them on the device; a run whose solver updates the host's
	// params, or whose data changes, must not set it.
	Resident bool
}

// New makes net run on g: it allocates the device memory, sets up each
// layer, and installs itself as net's Executor.
func New(g *cuda.GPU, net *model.Net, opt Options) (_ *Net, err error) {
	if name := net.Dynamic(); name != "" {
		return nil, fmt.Errorf("gpunet: layer %q changes its tops' shapes while the net runs; that net runs on the CPU only", name)
	}
	if opt.WorkspaceLimit == 0 {
		opt.WorkspaceLimit = 1 << 30
	}
	mu, _ := locks.LoadOrStore(g, &sync.Mutex{})
	e := &Net{g: g, mu: mu.(*sync.Mutex), net: net, plan: net.Plan(), rng: rand.New(rand.NewPCG(opt.Seed, 0x9e3779b97f4a7c15)), resident: opt.Resident}
	e.mu.Lock()
	defer e.mu.Unlock()
	defer func() {
		if err != nil {
			e.free()
		}
	}()
	if err := e.allocate(); err != nil {
		return nil, err
	}
	for i := range e.plan.Steps {
		st := &e.plan.Steps[i]
		var o op
		if !slices.Contains(opt.CPU, st.Type) {
			if o, err = e.build(st, opt); err != nil {
				return nil, fmt.Errorf("gpunet: layer %q (%s): %w", st.Name, st.Type, err)
			}
		}
		if o == nil {
			o = &cpuOp{e: e, st: st}
			e.Fallback = append(e.Fallback, fmt.Sprintf("%s (%s)", st.Name, st.Type))
		}
		e.ops = append(e.ops, o)
		for j, w := range st.LossWeight {
			if w != 0 {
				e.lossTops = append(e.lossTops, lossTop{st.Top[j], w})
			}
		}
	}
	e.sent = make([]bool, len(net.Blocks()))
	e.SetTiming(false)
	net.SetExecutor(e)
	return e, nil
}

// Download copies blob b of the net from the device into its host memory:
// after Forward only the net's outputs are there, the other blobs staying
// on the device (dsgd extract-features reads any blob).
func (e *Net) Download(b *tensor.Blob) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := b.Shape.Count()
	if n == 0 {
		return nil
	}
	return e.g.ToHost(b.Data[:n], e.dev(b.Data[:n]))
}

// Device is the GPU the net runs on.
func (e *Net) Device() cuda.Device { return e.g.Device }

// Close frees the device memory and gives the net back to the CPU.
func (e *Net) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.net.SetExecutor(nil)
	return e.free()
}

func (e *Net) free() error {
	var errs []error
	if err := e.g.Sync(); err != nil {
		errs = append(errs, err)
	}
	for _, o := range e.ops {
		if c, ok := o.(interface{ close() error }); ok {
			errs = append(errs, c.close())
		}
	}
	for _, p := range e.owned {
		errs = append(errs, e.g.MFree(p))
	}
	e.owned, e.ops = nil, nil
	return errors.Join(errs...)
}

// alloc allocates n floats that Close frees.
func (e *Net) alloc(n int) (cuda.Ptr, error) {
	p, err := e.g.Malloc(max(n, 1))
	if err == nil {
		e.owned = append(e.owned, p)
	}
	return p, err
}

func addr(s []float32) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(s))) }

// allocate gives the params and the gradients a device buffer each and
// every activation blob's Data and Diff device memory, blobs that share
// host memory (a split's parts share their blob's Data) sharing it there.
func (e *Net) allocate() error {
	params := e.net.Params()
	e.nparams = len(params)
	if e.nparams > 0 {
		e.paramBase = addr(params)
		var err error
		if e.params, err = e.alloc(e.nparams); err != nil {
			return err
		}
		if e.grads, err = e.alloc(e.nparams); err != nil {
			return err
		}
	}
	var spans []region
	add := func(s []float32) {
		if len(s) == 0 || e.inParams(s) {
			return
		}
		spans = append(spans, region{lo: addr(s), hi: addr(s) + uintptr(4*len(s))})
	}
	blob := func(b *tensor.Blob) { add(b.Data); add(b.Diff) }
	splits := func(sps []model.Split) {
		for _, sp := range sps {
			blob(sp.Target)
			for _, p := range sp.Parts {
				blob(p)
			}
		}
	}
	for _, st := range e.plan.Steps {
		for _, b := range st.Bottom {
			blob(b)
		}
		for _, b := range st.Top {
			blob(b)
		}
		splits(st.Splits)
	}
	splits(e.plan.InputSplits)
	for _, b := range e.plan.Inputs {
		blob(b)
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	for _, s := range spans {
		if n := len(e.regions); n > 0 && s.lo < e.regions[n-1].hi {
			e.regions[n-1].hi = max(e.regions[n-1].hi, s.hi)
			continue
		}
		e.regions = append(e.regions, s)
	}
	for i := range e.regions {
		r := &e.regions[i]
		p, err := e.alloc(int(r.hi-r.lo) / 4)
		if err != nil {
			return fmt.Errorf("gpunet: the net's blobs: %w", err)
		}
		r.dev = p
	}
	return nil
}

func (e *Net) inParams(s []float32) bool {
	a := addr(s)
	return e.nparams > 0 && a >= e.paramBase && a < e.paramBase+uintptr(4*e.nparams)
}

// dev is the device address of host memory s (a blob's Data or Diff, or
// a param's Data); 0 for an empty s.
func (e *Net) dev(s []float32) cuda.Ptr {
	if len(s) == 0 {
		return 0
	}
	a := addr(s)
	if e.inParams(s) {
		return e.params + cuda.Ptr(a-e.paramBase)
	}
	i := sort.Search(len(e.regions), func(i int) bool { return e.regions[i].hi > a })
	if i == len(e.regions) || a < e.regions[i].lo {
		panic(fmt.Sprintf("gpunet: host memory %#x has no device copy", a))
	}
	return e.regions[i].dev + cuda.Ptr(a-e.regions[i].lo)
}

// param returns the device addresses of param p's values and gradient.
func (e *Net) param(p layers.Param) (data, grad cuda.Ptr) {
	off := cuda.Ptr(addr(p.Blob.Data) - e.paramBase)
	return e.params + off, e.grads + off
}

// Forward implements model.Executor.
func (e *Net) Forward() (float64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.resident || !e.paramsUp {
		if e.nparams > 0 {
			if err := e.g.ToDevice(e.params, e.net.Params()); err != nil {
				return 0, err
			}
		}
		for _, b := range e.plan.Inputs {
			if err := e.g.ToDevice(e.dev(b.Data), b.Data); err != nil {
				return 0, err
			}
		}
		e.paramsUp = true
	}
	for i, o := range e.ops {
		if err := e.timed(&e.fwdT[min(i, len(e.fwdT)-1)], o.forward); err != nil {
			return 0, fmt.Errorf("gpunet: layer %q forward: %w", e.plan.Steps[i].Name, err)
		}
	}
	for _, b := range e.downloadParams {
		if err := e.g.ToHost(e.net.Params()[b.Off:b.Off+b.Len()], e.params.Add(b.Off)); err != nil {
			return 0, err
		}
	}
	for _, b := range e.plan.Outputs {
		if err := e.g.ToHost(b.Data, e.dev(b.Data)); err != nil {
			return 0, err
		}
	}
	var loss float64
	for _, lt := range e.lossTops {
		if !slices.Contains(e.plan.Outputs, lt.blob) {
			if err := e.g.ToHost(lt.blob.Data, e.dev(lt.blob.Data)); err != nil {
				return 0, err
			}
		}
		var s float64
		for _, v := range lt.blob.Data {
			s += float64(v)
		}
		loss += float64(lt.w) * s
	}
	return loss, nil
}

// Backward implements model.Executor.
func (e *Net) Backward() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.nparams > 0 {
		if err := e.g.Fill(e.grads, e.nparams, 0); err != nil {
			return err
		}
	}
	for _, b := range e.plan.Dangling {
		if err := e.g.Fill(e.dev(b.Diff), len(b.Diff), 0); err != nil {
			return err
		}
	}
	for _, lt := range e.lossTops {
		if err := e.g.Fill(e.dev(lt.blob.Diff), len(lt.blob.Diff), lt.w); err != nil {
			return err
		}
	}
	clear(e.sent)
	hook := e.net.GradHook()
	for i := len(e.ops) - 1; i >= 0; i-- {
		st := &e.plan.Steps[i]
		if err := e.splits(st.Splits); err != nil {
			return err
		}
		for _, la := range st.LossAdds {
			if err := e.g.AddScalar(len(la.Blob.Diff), e.dev(la.Blob.Diff), la.Weight); err != nil {
				return err
			}
		}
		if st.Backward {
			if err := e.timed(&e.bwdT[min(i, len(e.bwdT)-1)], e.ops[i].backward); err != nil {
				return fmt.Errorf("gpunet: layer %q backward: %w", st.Name, err)
			}
		}
		if hook != nil && len(st.Blocks) > 0 && !e.resident {
			if err := e.sendGrads(st.Blocks); err != nil {
				return err
			}
			e.mu.Unlock()
			hook(st.Blocks)
			e.mu.Lock()
		}
	}
	if err := e.splits(e.plan.InputSplits); err != nil {
		return err
	}
	if e.resident {
		return e.g.Sync()
	}
	var rest []int
	for i, s := range e.sent {
		if !s {
			rest = append(rest, i)
		}
	}
	return e.sendGrads(rest)
}

// sendGrads copies blocks' gradients to the host (contiguous blocks in
// one copy).
func (e *Net) sendGrads(blocks []int) error {
	all := e.net.Blocks()
	grads := e.net.Grads()
	for _, bi := range blocks {
		if e.sent[bi] {
			continue
		}
		e.sent[bi] = true
		b := all[bi]
		if err := e.g.ToHost(grads[b.Off:b.Off+b.Len()], e.grads.Add(b.Off)); err != nil {
			return err
		}
	}
	return nil
}

// splits sums each split's parts' gradients into its target's.
func (e *Net) splits(sps []model.Split) error {
	for _, sp := range sps {
		d := e.dev(sp.Target.Diff)
		n := len(sp.Target.Diff)
		if err := e.g.Copy(d, e.dev(sp.Parts[0].Diff), n); err != nil {
			return err
		}
		for _, p := range sp.Parts[1:] {
			if err := e.g.Axpy(n, 1, e.dev(p.Diff), d); err != nil {
				return err
			}
		}
	}
	return nil
}

// cpuOp runs a layer's CPU passes with its blobs copied across.
type cpuOp struct {
	e  *Net
	st *model.Step
}

func (c *cpuOp) down(s []float32) error { return c.e.g.ToHost(s, c.e.dev(s)) }
func (c *cpuOp) up(s []float32) error   { return c.e.g.ToDevice(c.e.dev(s), s) }

func (c *cpuOp) forward() error {
	for _, b := range c.st.Bottom {
		if err := c.down(b.Data); err != nil {
			return err
		}
	}
	c.st.Layer.Forward(c.st.Bottom, c.st.Top)
	for _, t := range c.st.Top {
		if err := c.up(t.Data); err != nil {
			return err
		}
	}
	return c.paramsUp(true)
}

// paramsUp copies the layer's Frozen params (statistics its Forward
// updates) up after Forward, or its gradients after Backward.
func (c *cpuOp) paramsUp(frozen bool) error {
	for i, p := range c.st.Layer.Params() {
		d, g := c.e.param(p)
		switch {
		case frozen && p.Frozen:
			if err := c.e.g.ToDevice(d, p.Blob.Data); err != nil {
				return err
			}
		case !frozen && i < len(c.st.Learn) && c.st.Learn[i]:
			if err := c.e.g.ToDevice(g, p.Blob.Diff); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *cpuOp) backward() error {
	for _, b := range c.st.Bottom {
		if err := c.down(b.Data); err != nil {
			return err
		}
	}
	for _, t := range c.st.Top {
		if err := c.down(t.Data); err != nil {
			return err
		}
		if err := c.down(t.Diff); err != nil {
			return err
		}
	}
	for i, p := range c.st.Layer.Params() {
		if i < len(c.st.Learn) && c.st.Learn[i] {
			_, g := c.e.param(p)
			if err := c.e.g.ToHost(p.Blob.Diff, g); err != nil {
				return err
			}
		}
	}
	c.st.Layer.Backward(c.st.Top, c.st.PropagateDown, c.st.Bottom)
	for i, b := range c.st.Bottom {
		if c.st.PropagateDown[i] {
			if err := c.up(b.Diff); err != nil {
				return err
			}
		}
	}
	return c.paramsUp(false)
}

package gpunet

import (
	"fmt"

	"dsgd/engine/cuda"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// build returns the layer's GPU pass, or nil when it has none (the layer
// then runs on the CPU).
func (e *Net) build(st *model.Step, opt Options) (op, error) {
	inPlace := len(st.Bottom) > 0 && len(st.Top) > 0 && e.dev(st.Bottom[0].Data) == e.dev(st.Top[0].Data)
	one := len(st.Bottom) == 1 && len(st.Top) == 1
	switch c := st.Config.(type) {
	case *layers.ConvolutionConfig:
		if c.ND != nil || len(st.Bottom) != len(st.Top) || len(st.Bottom[0].Shape) != 4 {
			return nil, nil
		}
		return e.newConv(st, c, opt)
	case *layers.InnerProductConfig:
		if !one {
			return nil, nil
		}
		return e.newInnerProduct(st, c)
	case *layers.ReLUConfig:
		if !one {
			return nil, nil
		}
		if bn := e.fusable(st, inPlace); bn != nil && bn.scale != nil && !bn.relu && e.lastWriter(st) {
			bn.relu, bn.slope = true, c.NegativeSlope
			e.Fused = append(e.Fused, st.Name+" into "+bn.st.Name)
			return fusedOp{}, nil
		}
		return &reluOp{e: e, st: st, slope: c.NegativeSlope}, nil
	case *layers.PoolingConfig:
		if !one || c.Method == layers.PoolStochastic || len(st.Bottom[0].Shape) != 4 {
			return nil, nil
		}
		return e.newPool(st, c)
	case *layers.LRNConfig:
		s := st.Bottom[0].Shape
		if !one || inPlace || c.NormRegion != layers.AcrossChannels || len(s) != 4 || c.LocalSize > 16 || c.K < 1e-5 || c.Beta < 0.01 {
			return nil, nil
		}
		l, err := e.g.NewLRN(s[0], s[1], s[2], s[3], c.LocalSize, float64(c.Alpha), float64(c.Beta), float64(c.K))
		if err != nil {
			return nil, err
		}
		return &lrnOp{e: e, st: st, l: l}, nil
	case *layers.DropoutConfig:
		if !one {
			return nil, nil
		}
		return e.newDropout(st, c)
	case *layers.BatchNormConfig:
		if !one || len(st.Bottom[0].Shape) < 2 {
			return nil, nil
		}
		return e.newBatchNorm(st, c)
	case *layers.ScaleConfig:
		s := st.Bottom[0].Shape
		if !one || len(s) < 2 || c.NumAxes != 1 || (c.Axis != 1 && c.Axis != 1-len(s)) {
			return nil, nil
		}
		if bn := e.fusable(st, inPlace); bn != nil && bn.scale == nil && len(st.Layer.Params()) == 1+b2i(c.BiasTerm) {
			bn.scale, bn.scaleBias = st, c.BiasTerm
			e.Fused = append(e.Fused, st.Name+" into "+bn.st.Name)
			return fusedOp{}, nil
		}
		return e.newScale(st, c, inPlace)
	case *layers.EltwiseConfig:
		if c.Operation != layers.EltwiseSum || len(st.Top) != 1 {
			return nil, nil
		}
		for _, b := range st.Bottom {
			if e.dev(b.Data) == e.dev(st.Top[0].Data) {
				return nil, nil
			}
		}
		return &eltwiseOp{e: e, st: st, coeff: c.Coeff}, nil
	case *layers.ConcatConfig:
		if len(st.Top) != 1 {
			return nil, nil
		}
		return e.newConcat(st, c)
	case *layers.SoftmaxWithLossConfig:
		if len(st.Bottom) != 2 || len(st.Top) != 1 {
			return nil, nil
		}
		return e.newSoftmaxLoss(st, c)
	case *layers.FlattenConfig, *layers.ReshapeConfig:
		if !one {
			return nil, nil
		}
		return &copyOp{e: e, st: st}, nil
	}
	return nil, nil
}

// axis resolves a possibly negative axis against a shape.
func axis(a int, s tensor.Shape) int {
	if a < 0 {
		a += len(s)
	}
	return a
}

// convOp is a convolution on cuDNN, one per bottom/top pair (Caffe's
// convolution may have several, sharing its weights).
type convOp struct {
	e     *Net
	st    *model.Step
	convs []*cuda.Conv
	bias  bool
}

func (e *Net) newConv(st *model.Step, c *layers.ConvolutionConfig, opt Options) (op, error) {
	o := &convOp{e: e, st: st, bias: c.BiasTerm}
	for i, b := range st.Bottom {
		x, y := b.Shape, st.Top[i].Shape
		q := cuda.ConvGeom{N: x[0], C: x[1], H: x[2], W: x[3], K: y[1], KH: c.KernelH, KW: c.KernelW, OH: y[2], OW: y[3],
			PadH: c.PadH, PadW: c.PadW, StrideH: max(c.StrideH, 1), StrideW: max(c.StrideW, 1),
			DilationH: c.DilationH, DilationW: c.DilationW, Groups: max(c.Group, 1), Bias: c.BiasTerm}
		cv, err := e.g.NewConv(q, opt.WorkspaceLimit)
		if err != nil {
			o.close()
			return nil, err
		}
		o.convs = append(o.convs, cv)
		e.Algos = append(e.Algos, fmt.Sprintf("%s: %s", st.Name, cv.Algo))
	}
	return o, nil
}

func (o *convOp) close() error {
	for _, c := range o.convs {
		c.Close()
	}
	o.convs = nil
	return nil
}

func (o *convOp) forward() error {
	ps := o.st.Layer.Params()
	w, _ := o.e.param(ps[0])
	var b cuda.Ptr
	if o.bias {
		b, _ = o.e.param(ps[1])
	}
	for i, c := range o.convs {
		if err := c.Forward(o.e.dev(o.st.Bottom[i].Data), w, b, o.e.dev(o.st.Top[i].Data)); err != nil {
			return err
		}
	}
	return nil
}

func (o *convOp) backward() error {
	ps := o.st.Layer.Params()
	w, dw := o.e.param(ps[0])
	if !o.st.Learn[0] {
		dw = 0
	}
	var db cuda.Ptr
	if o.bias && o.st.Learn[1] {
		_, db = o.e.param(ps[1])
	}
	for i, c := range o.convs {
		var dx cuda.Ptr
		if o.st.PropagateDown[i] {
			dx = o.e.dev(o.st.Bottom[i].Diff)
		}
		if err := c.Backward(o.e.dev(o.st.Bottom[i].Data), w, o.e.dev(o.st.Top[i].Diff), dx, dw, db); err != nil {
			return err
		}
	}
	return nil
}

// ipOp is an inner product on cuBLAS: top (M×N) = bottom (M×K)·Wᵀ + b,
// W stored N×K (K×N with Caffe's transpose).
type ipOp struct {
	e               *Net
	st              *model.Step
	m, n, k         int
	transpose, bias bool
	ones            cuda.Ptr
}

func (e *Net) newInnerProduct(st *model.Step, c *layers.InnerProductConfig) (op, error) {
	s := st.Bottom[0].Shape
	a := axis(c.Axis, s)
	o := &ipOp{e: e, st: st, m: s[:a].Count(), k: s[a:].Count(), n: c.NumOutput, transpose: c.Transpose, bias: c.BiasTerm}
	var err error
	o.ones, err = e.g.Ones(o.m)
	return o, err
}

func (o *ipOp) forward() error {
	ps := o.st.Layer.Params()
	w, _ := o.e.param(ps[0])
	x, y := o.e.dev(o.st.Bottom[0].Data), o.e.dev(o.st.Top[0].Data)
	var err error
	if o.transpose {
		err = o.e.g.Gemm(false, false, o.m, o.n, o.k, 1, x, o.k, w, o.n, 0, y, o.n)
	} else {
		err = o.e.g.Gemm(false, true, o.m, o.n, o.k, 1, x, o.k, w, o.k, 0, y, o.n)
	}
	if err != nil || !o.bias {
		return err
	}
	b, _ := o.e.param(ps[1])
	return o.e.g.Gemm(false, false, o.m, o.n, 1, 1, o.ones, 1, b, o.n, 1, y, o.n)
}

func (o *ipOp) backward() error {
	ps := o.st.Layer.Params()
	w, dw := o.e.param(ps[0])
	x, dy := o.e.dev(o.st.Bottom[0].Data), o.e.dev(o.st.Top[0].Diff)
	g := o.e.g
	if o.st.Learn[0] {
		var err error
		if o.transpose {
			err = g.Gemm(true, false, o.k, o.n, o.m, 1, x, o.k, dy, o.n, 1, dw, o.n)
		} else {
			err = g.Gemm(true, false, o.n, o.k, o.m, 1, dy, o.n, x, o.k, 1, dw, o.k)
		}
		if err != nil {
			return err
		}
	}
	if o.bias && o.st.Learn[1] {
		_, db := o.e.param(ps[1])
		if err := g.Gemv(true, o.m, o.n, 1, dy, o.ones, 1, db); err != nil {
			return err
		}
	}
	if !o.st.PropagateDown[0] {
		return nil
	}
	dx := o.e.dev(o.st.Bottom[0].Diff)
	if o.transpose {
		return g.Gemm(false, true, o.m, o.k, o.n, 1, dy, o.n, w, o.n, 0, dx, o.k)
	}
	return g.Gemm(false, false, o.m, o.k, o.n, 1, dy, o.n, w, o.k, 0, dx, o.k)
}

type reluOp struct {
	e     *Net
	st    *model.Step
	slope float32
}

func (o *reluOp) forward() error {
	b := o.st.Bottom[0]
	return o.e.g.ReLU(len(b.Data), o.e.dev(b.Data), o.e.dev(o.st.Top[0].Data), o.slope)
}

func (o *reluOp) backward() error {
	if !o.st.PropagateDown[0] {
		return nil
	}
	b := o.st.Bottom[0]
	return o.e.g.ReLUBackward(len(b.Data), o.e.dev(b.Data), o.e.dev(o.st.Top[0].Diff), o.e.dev(b.Diff), o.slope)
}

type poolOp struct {
	e    *Net
	st   *model.Step
	p    cuda.Pool
	max  bool
	mask cuda.Ptr
}

func (e *Net) newPool(st *model.Step, c *layers.PoolingConfig) (op, error) {
	x, y := st.Bottom[0].Shape, st.Top[0].Shape
	p := cuda.Pool{Planes: x[0] * x[1], H: x[2], W: x[3], PH: y[2], PW: y[3], KH: c.KernelH, KW: c.KernelW,
		SH: max(c.StrideH, 1), SW: max(c.StrideW, 1), PadH: c.PadH, PadW: c.PadW}
	if c.GlobalPooling {
		p.KH, p.KW, p.SH, p.SW, p.PadH, p.PadW = x[2], x[3], 1, 1, 0, 0
	}
	o := &poolOp{e: e, st: st, p: p, max: c.Method == layers.PoolMax}
	if o.max {
		var err error
		if o.mask, err = e.alloc(st.Top[0].Count()); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func (o *poolOp) forward() error {
	x, y := o.e.dev(o.st.Bottom[0].Data), o.e.dev(o.st.Top[0].Data)
	if o.max {
		return o.e.g.MaxPool(o.p, x, y, o.mask)
	}
	return o.e.g.AvePool(o.p, x, y)
}

func (o *poolOp) backward() error {
	if !o.st.PropagateDown[0] {
		return nil
	}
	dy, dx := o.e.dev(o.st.Top[0].Diff), o.e.dev(o.st.Bottom[0].Diff)
	if o.max {
		return o.e.g.MaxPoolBackward(o.p, dy, o.mask, dx)
	}
	return o.e.g.AvePoolBackward(o.p, dy, dx)
}

type lrnOp struct {
	e  *Net
	st *model.Step
	l  *cuda.LRN
}

func (o *lrnOp) close() error { return o.l.Close() }

func (o *lrnOp) forward() error {
	return o.l.Forward(o.e.dev(o.st.Bottom[0].Data), o.e.dev(o.st.Top[0].Data))
}

func (o *lrnOp) backward() error {
	if !o.st.PropagateDown[0] {
		return nil
	}
	b, t := o.st.Bottom[0], o.st.Top[0]
	return o.l.Backward(o.e.dev(b.Data), o.e.dev(t.Data), o.e.dev(t.Diff), o.e.dev(b.Diff))
}

// dropoutOp is Caffe's inverted dropout; its mask comes from a hash of
// the position and a seed drawn per pass, so it differs from the CPU's.
type dropoutOp struct {
	e     *Net
	st    *model.Step
	ratio float32
	train bool
	mask  cuda.Ptr
}

func (e *Net) newDropout(st *model.Step, c *layers.DropoutConfig) (op, error) {
	o := &dropoutOp{e: e, st: st, ratio: c.Ratio, train: e.net.Phase() == layers.Train}
	if o.train {
		var err error
		if o.mask, err = e.alloc(st.Top[0].Count()); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func (o *dropoutOp) forward() error {
	b, t := o.st.Bottom[0], o.st.Top[0]
	if !o.train {
		return o.e.g.Copy(o.e.dev(t.Data), o.e.dev(b.Data), len(b.Data))
	}
	return o.e.g.Dropout(len(b.Data), o.e.dev(b.Data), o.e.dev(t.Data), o.mask, o.ratio, o.e.rng.Uint64())
}

func (o *dropoutOp) backward() error {
	if !o.st.PropagateDown[0] {
		return nil
	}
	b, t := o.st.Bottom[0], o.st.Top[0]
	if !o.train {
		return o.e.g.Copy(o.e.dev(b.Diff), o.e.dev(t.Diff), len(b.Diff))
	}
	return o.e.g.DropoutBackward(len(b.Diff), o.e.dev(t.Diff), o.mask, o.e.dev(b.Diff), o.ratio)
}

// bnOp is Caffe's BatchNorm (no affine part: a Scale follows it). With
// batch statistics, the Scale that follows in place and the ReLU after
// that join it (scale, relu): one pass forward (xn and the ReLU's output)
// and two backward (the channel sums of the gated gradient, which are
// also the Scale's gradients, then the input gradient), where the three
// layers took seven; the layers joined run fusedOp.
type bnOp struct {
	scale                 *model.Step // the Scale joined, or nil
	scaleBias             bool
	relu                  bool // the ReLU after the Scale joined
	slope                 float32
	sums                  cuda.Ptr
	e                     *Net
	st                    *model.Step
	global                bool
	maf, eps              float32
	num, c, spatial       int
	mean, vari, std, a, b cuda.Ptr
	xnorm, scratch        cuda.Ptr
}

func (e *Net) newBatchNorm(st *model.Step, c *layers.BatchNormConfig) (op, error) {
	s := st.Bottom[0].Shape
	o := &bnOp{e: e, st: st, maf: c.MovingAverageFraction, eps: c.Eps, num: s[0], c: s[1]}
	o.spatial = s.Count() / max(o.num*o.c, 1)
	o.global = e.net.Phase() == layers.Test
	if c.UseGlobalStats != nil {
		o.global = *c.UseGlobalStats
	}
	buf, err := e.alloc(7 * o.c)
	if err != nil {
		return nil, err
	}
	o.mean, o.vari, o.std, o.a, o.b = buf, buf.Add(o.c), buf.Add(2*o.c), buf.Add(3*o.c), buf.Add(4*o.c)
	o.sums = buf.Add(5 * o.c)
	if o.scratch, err = e.alloc(2 * o.c * cuda.ChanParts(o.c, o.num*o.spatial)); err != nil {
		return nil, err
	}
	if !o.global {
		if o.xnorm, err = e.alloc(s.Count()); err != nil {
			return nil, err
		}
		all := e.net.Blocks()
		for _, p := range st.Layer.Params() {
			off := int(addr(p.Blob.Data)-e.paramBase) / 4
			for _, b := range all {
				if b.Off == off {
					e.downloadParams = append(e.downloadParams, b)
				}
			}
		}
	}
	return o, nil
}

func (o *bnOp) forward() error {
	g := o.e.g
	ps := o.st.Layer.Params()
	sm, _ := o.e.param(ps[0])
	sv, _ := o.e.param(ps[1])
	sf, _ := o.e.param(ps[2])
	x, y := o.e.dev(o.st.Bottom[0].Data), o.e.dev(o.st.Top[0].Data)
	n := len(o.st.Bottom[0].Data)
	if o.global {
		if err := g.BNGlobal(o.c, sm, sv, sf, o.mean, o.vari); err != nil {
			return err
		}
	} else if err := g.BNStats(x, o.num, o.c, o.spatial, o.mean, o.vari, o.scratch); err != nil {
		return err
	}
	if err := g.BNStd(o.c, o.vari, o.eps, o.std); err != nil {
		return err
	}
	if o.scale != nil {
		ps := o.scale.Layer.Params()
		sc, _ := o.e.param(ps[0])
		var bias cuda.Ptr
		if o.scaleBias {
			bias, _ = o.e.param(ps[1])
		}
		if err := g.BNFusedForward(n, x, o.c, o.spatial, o.mean, o.std, sc, bias, o.relu, o.slope, y, o.xnorm); err != nil {
			return err
		}
	} else if err := g.BNForward(n, x, o.c, o.spatial, o.mean, o.std, y, o.xnorm); err != nil {
		return err
	}
	if o.global {
		return nil
	}
	m := o.num * o.spatial
	corr := float32(1)
	if m > 1 {
		corr = float32(m) / float32(m-1)
	}
	return g.BNUpdate(o.c, o.mean, o.vari, o.maf, corr, sm, sv, sf)
}

func (o *bnOp) backward() error {
	g := o.e.g
	dy, dx := o.e.dev(o.st.Top[0].Diff), o.e.dev(o.st.Bottom[0].Diff)
	n := len(o.st.Top[0].Diff)
	if o.scale != nil {
		ps := o.scale.Layer.Params()
		sc, ds := o.e.param(ps[0])
		if !o.scale.Learn[0] {
			ds = 0
		}
		var db cuda.Ptr
		if o.scaleBias && o.scale.Learn[1] {
			_, db = o.e.param(ps[1])
		}
		var gate cuda.Ptr
		if o.relu {
			gate = o.e.dev(o.st.Top[0].Data)
		}
		if !o.st.PropagateDown[0] {
			dx = 0
		}
		return g.BNFusedBackward(dy, gate, o.slope, o.xnorm, o.num, o.c, o.spatial, sc, o.std, ds, db, dx, o.sums, o.scratch)
	}
	if !o.st.PropagateDown[0] {
		return nil
	}
	if o.global {
		return g.BNBackward(n, dy, 0, o.c, o.spatial, 0, 0, o.std, dx)
	}
	m := float32(o.num * o.spatial)
	if err := g.ChanSums(dy, o.xnorm, o.num, o.c, o.spatial, 1/max(m, 1), false, o.a, o.b, o.scratch); err != nil {
		return err
	}
	return g.BNBackward(n, dy, o.xnorm, o.c, o.spatial, o.a, o.b, o.std, dx)
}

// scaleOp is Caffe's Scale over axis 1 with a learned scale (and bias);
// in place it keeps its input for the scale's gradient.
type scaleOp struct {
	e               *Net
	st              *model.Step
	outer, c, inner int
	bias            bool
	saved, scratch  cuda.Ptr
	// fromBN: saved is the BatchNorm's normalised output, the very
	// values this in-place Scale reads (ResNet's pairs): no copy.
	fromBN bool
}

func (e *Net) newScale(st *model.Step, c *layers.ScaleConfig, inPlace bool) (op, error) {
	s := st.Bottom[0].Shape
	o := &scaleOp{e: e, st: st, outer: s[0], c: s[1], bias: c.BiasTerm}
	o.inner = s.Count() / max(o.outer*o.c, 1)
	var err error
	if inPlace && st.Backward {
		if n := len(e.ops); n > 0 {
			if bn, ok := e.ops[n-1].(*bnOp); ok && bn.xnorm != 0 && e.dev(bn.st.Top[0].Data) == e.dev(st.Bottom[0].Data) {
				o.saved, o.fromBN = bn.xnorm, true
			}
		}
		if !o.fromBN {
			if o.saved, err = e.alloc(s.Count()); err != nil {
				return nil, err
			}
		}
	}
	if o.scratch, err = e.alloc(2 * o.c * cuda.ChanParts(o.c, o.outer*o.inner)); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *scaleOp) forward() error {
	ps := o.st.Layer.Params()
	s, _ := o.e.param(ps[0])
	var b cuda.Ptr
	if o.bias {
		b, _ = o.e.param(ps[1])
	}
	x, y := o.e.dev(o.st.Bottom[0].Data), o.e.dev(o.st.Top[0].Data)
	n := len(o.st.Bottom[0].Data)
	if o.saved != 0 && !o.fromBN {
		if err := o.e.g.Copy(o.saved, x, n); err != nil {
			return err
		}
	}
	return o.e.g.Scale(n, x, s, b, o.c, o.inner, y)
}

func (o *scaleOp) backward() error {
	ps := o.st.Layer.Params()
	s, ds := o.e.param(ps[0])
	x := o.e.dev(o.st.Bottom[0].Data)
	if o.saved != 0 {
		x = o.saved
	}
	dy := o.e.dev(o.st.Top[0].Diff)
	n := len(o.st.Top[0].Diff)
	var db cuda.Ptr
	if o.bias && o.st.Learn[1] {
		_, db = o.e.param(ps[1])
	}
	if !o.st.Learn[0] {
		ds, x = 0, 0
	}
	if ds != 0 || db != 0 {
		if err := o.e.g.ChanSums(dy, x, o.outer, o.c, o.inner, 1, true, db, ds, o.scratch); err != nil {
			return err
		}
	}
	if !o.st.PropagateDown[0] {
		return nil
	}
	return o.e.g.Scale(n, dy, s, 0, o.c, o.inner, o.e.dev(o.st.Bottom[0].Diff))
}

type eltwiseOp struct {
	e     *Net
	st    *model.Step
	coeff []float32
}

func (o *eltwiseOp) k(i int) float32 {
	if i < len(o.coeff) {
		return o.coeff[i]
	}
	return 1
}

func (o *eltwiseOp) forward() error {
	t := o.e.dev(o.st.Top[0].Data)
	n := len(o.st.Top[0].Data)
	g := o.e.g
	if err := g.Copy(t, o.e.dev(o.st.Bottom[0].Data), n); err != nil {
		return err
	}
	if k := o.k(0); k != 1 {
		if err := g.Scal(n, k, t); err != nil {
			return err
		}
	}
	for i, b := range o.st.Bottom[1:] {
		if err := g.Axpy(n, o.k(i+1), o.e.dev(b.Data), t); err != nil {
			return err
		}
	}
	return nil
}

func (o *eltwiseOp) backward() error {
	dy := o.e.dev(o.st.Top[0].Diff)
	n := len(o.st.Top[0].Diff)
	for i, b := range o.st.Bottom {
		if !o.st.PropagateDown[i] {
			continue
		}
		dx := o.e.dev(b.Diff)
		if err := o.e.g.Copy(dx, dy, n); err != nil {
			return err
		}
		if k := o.k(i); k != 1 {
			if err := o.e.g.Scal(n, k, dx); err != nil {
				return err
			}
		}
	}
	return nil
}

type concatOp struct {
	e     *Net
	st    *model.Step
	outer int
	inner []int // each bottom's row length
	row   int   // the top's row length
}

func (e *Net) newConcat(st *model.Step, c *layers.ConcatConfig) (op, error) {
	t := st.Top[0].Shape
	a := axis(c.Axis, t)
	o := &concatOp{e: e, st: st, outer: t[:a].Count(), row: t[a:].Count()}
	for _, b := range st.Bottom {
		o.inner = append(o.inner, b.Shape[a:].Count())
	}
	return o, nil
}

func (o *concatOp) forward() error {
	t := o.e.dev(o.st.Top[0].Data)
	off := 0
	for i, b := range o.st.Bottom {
		if err := o.e.g.CopyRows(o.outer, o.inner[i], o.e.dev(b.Data), o.inner[i], t.Add(off), o.row); err != nil {
			return err
		}
		off += o.inner[i]
	}
	return nil
}

func (o *concatOp) backward() error {
	t := o.e.dev(o.st.Top[0].Diff)
	off := 0
	for i, b := range o.st.Bottom {
		if o.st.PropagateDown[i] {
			if err := o.e.g.CopyRows(o.outer, o.inner[i], t.Add(off), o.row, o.e.dev(b.Diff), o.inner[i]); err != nil {
				return err
			}
		}
		off += o.inner[i]
	}
	return nil
}

// copyOp is Flatten and Reshape: the same values in another shape.
type copyOp struct {
	e  *Net
	st *model.Step
}

func (o *copyOp) forward() error {
	b := o.st.Bottom[0]
	return o.e.g.Copy(o.e.dev(o.st.Top[0].Data), o.e.dev(b.Data), len(b.Data))
}

func (o *copyOp) backward() error {
	if !o.st.PropagateDown[0] {
		return nil
	}
	b := o.st.Bottom[0]
	return o.e.g.Copy(o.e.dev(b.Diff), o.e.dev(o.st.Top[0].Diff), len(b.Diff))
}

// smLossOp is Caffe's SoftmaxWithLoss: cuDNN's softmax, the loss and its
// gradient in dsgd's kernels.
type smLossOp struct {
	e                  *Net
	st                 *model.Step
	s                  *cuda.SoftmaxLoss
	prob, scratch, res cuda.Ptr
}

func (e *Net) newSoftmaxLoss(st *model.Step, c *layers.SoftmaxWithLossConfig) (op, error) {
	sh := st.Bottom[0].Shape
	a := axis(c.Axis, sh)
	if a < 0 || a >= len(sh) {
		return nil, nil
	}
	outer, ch, inner := sh[:a].Count(), sh[a], sh[a+1:].Count()
	ignore := 0
	if c.IgnoreLabel != nil {
		ignore = *c.IgnoreLabel
	}
	s, err := e.g.NewSoftmaxLoss(outer, ch, inner, c.IgnoreLabel != nil, ignore, int(c.Normalization))
	if err != nil {
		return nil, err
	}
	o := &smLossOp{e: e, st: st, s: s}
	if o.prob, err = e.alloc(outer * ch * inner); err != nil {
		s.Close()
		return nil, err
	}
	if o.scratch, err = e.alloc(2*outer*inner + 2); err != nil {
		s.Close()
		return nil, err
	}
	o.res = o.scratch.Add(2 * outer * inner)
	return o, nil
}

func (o *smLossOp) close() error { return o.s.Close() }

func (o *smLossOp) forward() error {
	b := o.st.Bottom
	if err := o.s.Forward(o.e.dev(b[0].Data), o.e.dev(b[1].Data), o.prob, o.scratch, o.res); err != nil {
		return err
	}
	return o.e.g.Copy(o.e.dev(o.st.Top[0].Data), o.res, 1)
}

func (o *smLossOp) backward() error {
	if !o.st.PropagateDown[0] {
		return nil
	}
	b := o.st.Bottom
	return o.s.Backward(o.prob, o.e.dev(b[1].Data), o.e.dev(o.st.Top[0].Diff), o.res, o.e.dev(b[0].Diff))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fusedOp is a layer whose passes a BatchNorm before it runs (bnOp).
type fusedOp struct{}

func (fusedOp) forward() error  { return nil }
func (fusedOp) backward() error { return nil }

// fusable returns the BatchNorm (with batch statistics) whose output st,
// running in place on it, may join: the op just before st is that
// BatchNorm or a layer already joined to it, writing the blob st reads.
func (e *Net) fusable(st *model.Step, inPlace bool) *bnOp {
	if !inPlace || len(st.Splits) > 0 || len(st.LossAdds) > 0 || len(e.ops) == 0 {
		return nil
	}
	var bn *bnOp
	for i := len(e.ops) - 1; i >= 0; i-- {
		if b, ok := e.ops[i].(*bnOp); ok {
			bn = b
			break
		}
		if _, ok := e.ops[i].(fusedOp); !ok {
			return nil
		}
	}
	if bn == nil || bn.xnorm == 0 || !bn.st.Backward || e.dev(bn.st.Top[0].Data) != e.dev(st.Bottom[0].Data) || len(bn.st.Top[0].Data) != len(st.Bottom[0].Data) {
		return nil
	}
	return bn
}

// lastWriter reports whether no layer after st writes its top: the
// values st leaves are the ones its backward pass sees.
func (e *Net) lastWriter(st *model.Step) bool {
	after := false
	for i := range e.plan.Steps {
		s := &e.plan.Steps[i]
		if s == st {
			after = true
			continue
		}
		if !after {
			continue
		}
		for _, t := range s.Top {
			if e.dev(t.Data) == e.dev(st.Top[0].Data) {
				return false
			}
		}
	}
	return true
}

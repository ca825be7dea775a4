package layers

import (
	"math"

	"dsgd/engine/tensor"
)

// lstmLayer is Caffe's LSTM layer. Caffe unrolls it into a net of
// InnerProduct, Scale, Eltwise and LSTMUnit layers; this computes the same
// function directly:
//
//	gates_t = W_xc·x_t + b_c [+ W_xc_static·x_static] + W_hc·(cont_t·h_{t−1})
//	(c_t, h_t) = LSTMUnit(c_{t−1}, gates_t, cont_t)
//
// keeping the gate pre-activations and cells of every timestep for
// Backward.
type lstmLayer struct {
	recurrent

	pre    []float32 // T·N × 4H gate pre-activations; their diffs in Backward
	cell   []float32 // T·N × H cells c_t
	hc     []float32 // T·N × H cont-scaled previous hidden states
	static []float32 // N × 4H static transform; its diff sum in Backward
	dh, dc []float32 // N × H gradients carried back through time

	// The arguments of the current unit pass, split among threads by
	// stream in the bound unitFwdFn and unitBwdFn.
	u                    unitArgs
	unitFwdFn, unitBwdFn func(lo, hi, worker int)
}

// unitArgs are the N-stream arguments of lstmUnitForward and
// lstmUnitBackward.
type unitArgs struct {
	cPrev, x, cont, act, c, h, dc, dh, dcPrev, dx []float32
}

// unitWorkPerThread is the number of hidden units (about five
// transcendental functions each) below which adding a thread to an
// LSTM unit pass does not pay.
const unitWorkPerThread = 4096

func (l *lstmLayer) unitThreads() int {
	return max(1, min(l.gemm.threads, l.n*l.hdim/unitWorkPerThread, l.n))
}

// unitForward runs lstmUnitForward on the current timestep, split among
// threads by stream.
func (l *lstmLayer) unitForward(cPrev, x, cont, act, c, h []float32) {
	if th := l.unitThreads(); th > 1 {
		l.u = unitArgs{cPrev: cPrev, x: x, cont: cont, act: act, c: c, h: h}
		l.gemm.pool.For(l.n, th, l.unitFwdFn)
		l.u = unitArgs{}
		return
	}
	lstmUnitForward(l.hdim, cPrev, x, cont, act, c, h)
}

func (l *lstmLayer) unitForwardStreams(lo, hi, _ int) {
	H, u := l.hdim, &l.u
	lstmUnitForward(H, u.cPrev[lo*H:hi*H], u.x[4*lo*H:4*hi*H], u.cont[lo:hi], u.act[4*lo*H:4*hi*H], u.c[lo*H:hi*H], u.h[lo*H:hi*H])
}

// unitBackward runs lstmUnitBackward on the current timestep, split
// among threads by stream.
func (l *lstmLayer) unitBackward(cPrev, act, c, dc, dh, dcPrev, dx []float32) {
	if th := l.unitThreads(); th > 1 {
		l.u = unitArgs{cPrev: cPrev, act: act, c: c, dc: dc, dh: dh, dcPrev: dcPrev, dx: dx}
		l.gemm.pool.For(l.n, th, l.unitBwdFn)
		l.u = unitArgs{}
		return
	}
	lstmUnitBackward(l.hdim, cPrev, act, c, dc, dh, dcPrev, dx)
}

func (l *lstmLayer) unitBackwardStreams(lo, hi, _ int) {
	H, u := l.hdim, &l.u
	lstmUnitBackward(H, u.cPrev[lo*H:hi*H], u.act[4*lo*H:4*hi*H], u.c[lo*H:hi*H],
		u.dc[lo*H:hi*H], u.dh[lo*H:hi*H], u.dcPrev[lo*H:hi*H], u.dx[4*lo*H:4*hi*H])
}

func (l *lstmLayer) Setup(bottom, top []*tensor.Blob) error { return l.setup(bottom, top) }

func (l *lstmLayer) Reshape(bottom, top []*tensor.Blob) error {
	if err := l.reshape(bottom, top); err != nil {
		return err
	}
	tnh, nh := l.t*l.n*l.hdim, l.n*l.hdim
	l.pre = fitBuf(l.pre, 4*tnh)
	l.cell = fitBuf(l.cell, tnh)
	l.hc = fitBuf(l.hc, tnh)
	l.static = fitBuf(l.static, 4*nh)
	l.dh = fitBuf(l.dh, nh)
	l.dc = fitBuf(l.dc, nh)
	return nil
}

func (l *lstmLayer) Forward(bottom, top []*tensor.Blob) {
	H, nh, g := l.hdim, l.n*l.hdim, 4*l.n*l.hdim
	l.begin()
	l.inputTransform(bottom, l.pre, l.static)
	cont, h := bottom[1].Data, top[0].Data
	hPrev, cPrev := l.initial(bottom, 0), l.initial(bottom, 1)
	for t := 0; t < l.t; t++ {
		contT := cont[t*l.n : (t+1)*l.n]
		hc, pre := l.hc[t*nh:(t+1)*nh], l.pre[t*g:(t+1)*g]
		l.contHidden(contT, hPrev, hc)
		l.gemm.run(false, true, l.n, 4*H, H, hc, H, l.wh.Data, H, 1, pre, 4*H)
		c, hT := l.cell[t*nh:(t+1)*nh], h[t*nh:(t+1)*nh]
		l.unitForward(cPrev, pre, contT, pre, c, hT)
		hPrev, cPrev = hT, c
	}
	l.finish(top, 0, hPrev)
	l.finish(top, 1, cPrev)
}

func (l *lstmLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	H, nh, g := l.hdim, l.n*l.hdim, 4*l.n*l.hdim
	if l.cfg.ExposeHidden {
		copy(l.dh, top[1].Diff[:nh])
		copy(l.dc, top[2].Diff[:nh])
	} else {
		clear(l.dh)
		clear(l.dc)
	}
	cont, dTop := bottom[1].Data, top[0].Diff
	for t := l.t - 1; t >= 0; t-- {
		contT := cont[t*l.n : (t+1)*l.n]
		tensor.Axpy(1, dTop[t*nh:(t+1)*nh], l.dh)
		cPrev := l.initial(bottom, 1)
		if t > 0 {
			cPrev = l.cell[(t-1)*nh : t*nh]
		}
		pre := l.pre[t*g : (t+1)*g]
		// pre holds the gate activations; it becomes their gradient.
		l.unitBackward(cPrev, pre, l.cell[t*nh:(t+1)*nh], l.dc, l.dh, l.dc, pre)
		l.gemm.run(false, false, l.n, H, 4*H, pre, 4*H, l.wh.Data, H, 0, l.dh, H)
		l.scaleByCont(contT, l.dh)
	}
	if l.cfg.ExposeHidden {
		if i := l.stateBottom(); propagateDown[i] {
			copy(bottom[i].Diff, l.dh)
		}
		if i := l.stateBottom() + 1; propagateDown[i] {
			copy(bottom[i].Diff, l.dc)
		}
	}
	l.inputBackward(l.pre, l.hc, l.static, propagateDown, bottom)
}

// sigmoid is the logistic function.
func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// lstmUnitForward is Caffe's LSTMUnit forward for N streams of H units: x
// holds each stream's 4H gate pre-activations in Caffe's order i, f, o, g;
// with f' = 0 where cont is 0 and cont·σ(f) elsewhere,
//
//	c = f'·c_prev + σ(i)·tanh(g),  h = σ(o)·tanh(c).
//
// act receives the activations σ(i), f', σ(o), tanh(g) in x's layout for
// lstmUnitBackward; it may alias x (each element is read before written).
func lstmUnitForward(H int, cPrev, x, cont, act, c, h []float32) {
	for n, cn := range cont {
		xs, as := x[n*4*H:(n+1)*4*H], act[n*4*H:(n+1)*4*H]
		cp, cs, hs := cPrev[n*H:(n+1)*H], c[n*H:(n+1)*H], h[n*H:(n+1)*H]
		for d := range cs {
			i := sigmoid(float64(xs[d]))
			f := 0.0
			if cn != 0 {
				f = float64(cn) * sigmoid(float64(xs[H+d]))
			}
			o := sigmoid(float64(xs[2*H+d]))
			g := math.Tanh(float64(xs[3*H+d]))
			cv := f*float64(cp[d]) + i*g
			cs[d] = float32(cv)
			hs[d] = float32(o * math.Tanh(cv))
			as[d], as[H+d], as[2*H+d], as[3*H+d] = float32(i), float32(f), float32(o), float32(g)
		}
	}
}

// lstmUnitBackward is Caffe's LSTMUnit backward: from the activations act
// of lstmUnitForward, the cells c and the diffs dc and dh of c and h it
// writes dcPrev and dx (the 4H gate pre-activation diffs). Like Caffe it
// takes the derivative of f' as f'·(1−f'), exact for a cont of 0 or 1.
// dcPrev may alias dc and dx may alias act: each element is read before
// it is written.
func lstmUnitBackward(H int, cPrev, act, c, dc, dh, dcPrev, dx []float32) {
	for n := 0; n < len(c)/H; n++ {
		as, dxs := act[n*4*H:(n+1)*4*H], dx[n*4*H:(n+1)*4*H]
		cp, cs := cPrev[n*H:(n+1)*H], c[n*H:(n+1)*H]
		dcs, dhs, dcps := dc[n*H:(n+1)*H], dh[n*H:(n+1)*H], dcPrev[n*H:(n+1)*H]
		for d := range cs {
			i, f, o, g := float64(as[d]), float64(as[H+d]), float64(as[2*H+d]), float64(as[3*H+d])
			tc := math.Tanh(float64(cs[d]))
			dhv := float64(dhs[d])
			dct := float64(dcs[d]) + dhv*o*(1-tc*tc)
			dcps[d] = float32(dct * f)
			dxs[d] = float32(dct * g * i * (1 - i))
			dxs[H+d] = float32(dct * float64(cp[d]) * f * (1 - f))
			dxs[2*H+d] = float32(dhv * tc * o * (1 - o))
			dxs[3*H+d] = float32(dct * i * (1 - g*g))
		}
	}
}

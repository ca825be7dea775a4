package layers

import (
	"math"

	"dsgd/engine/tensor"
)

// rnnLayer is Caffe's RNN layer, computed directly rather than unrolled:
//
//	h_t = tanh(W_xh·x_t + b_h [+ W_xh_static·x_static] + W_hh·(cont_t·h_{t−1}))
//	o_t = tanh(W_ho·h_t + b_o)
type rnnLayer struct {
	recurrent

	who, bo *tensor.Blob

	pre    []float32 // T·N × H hidden pre-activations; their diffs in Backward
	hid    []float32 // T·N × H hidden states h_t
	hc     []float32 // T·N × H cont-scaled previous hidden states
	dout   []float32 // T·N × H diffs of the output pre-activations
	static []float32 // N × H static transform; its diff sum in Backward
	dh     []float32 // N × H gradient carried back through time
}

func (l *rnnLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := l.setup(bottom, top); err != nil {
		return err
	}
	H := l.hdim
	l.who = tensor.NewBlob("W_ho", H, H)
	l.bo = tensor.NewBlob("b_o", H)
	l.params = append(l.params, Param{Blob: l.who, Filler: l.cfg.WeightFiller}, Param{Blob: l.bo, Filler: l.cfg.BiasFiller})
	return nil
}

func (l *rnnLayer) Reshape(bottom, top []*tensor.Blob) error {
	if err := l.reshape(bottom, top); err != nil {
		return err
	}
	tnh, nh := l.t*l.n*l.hdim, l.n*l.hdim
	l.pre = fitBuf(l.pre, tnh)
	l.hid = fitBuf(l.hid, tnh)
	l.hc = fitBuf(l.hc, tnh)
	l.dout = fitBuf(l.dout, tnh)
	l.static = fitBuf(l.static, nh)
	l.dh = fitBuf(l.dh, nh)
	return nil
}

func (l *rnnLayer) Forward(bottom, top []*tensor.Blob) {
	H, nh, tn := l.hdim, l.n*l.hdim, l.t*l.n
	l.begin()
	l.inputTransform(bottom, l.pre, l.static)
	cont := bottom[1].Data
	hPrev := l.initial(bottom, 0)
	for t := 0; t < l.t; t++ {
		contT := cont[t*l.n : (t+1)*l.n]
		hc, pre, h := l.hc[t*nh:(t+1)*nh], l.pre[t*nh:(t+1)*nh], l.hid[t*nh:(t+1)*nh]
		l.contHidden(contT, hPrev, hc)
		l.gemm.run(false, true, l.n, H, H, hc, H, l.wh.Data, H, 1, pre, H)
		for i, v := range pre {
			h[i] = float32(math.Tanh(float64(v)))
		}
		hPrev = h
	}
	l.finish(top, 0, hPrev)
	o := top[0].Data[:tn*H]
	l.gemm.run(false, true, tn, H, H, l.hid, H, l.who.Data, H, 0, o, H)
	b := l.bo.Data[:H]
	for i := 0; i < tn; i++ {
		row := o[i*H : (i+1)*H]
		for j, v := range b {
			row[j] = float32(math.Tanh(float64(row[j] + v)))
		}
	}
}

func (l *rnnLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	H, nh, tn := l.hdim, l.n*l.hdim, l.t*l.n
	o, do := top[0].Data[:tn*H], top[0].Diff[:tn*H]
	for i, v := range o {
		l.dout[i] = do[i] * (1 - v*v)
	}
	l.gemm.run(true, false, H, H, tn, l.dout, H, l.hid, H, 1, l.who.Diff, H)
	db := l.bo.Diff[:H]
	for i := 0; i < tn; i++ {
		for j, v := range l.dout[i*H : (i+1)*H] {
			db[j] += v
		}
	}
	// pre becomes the gradient of the hidden pre-activations: first the
	// part through the outputs, then, timestep by timestep from the last,
	// the part through the next timestep's recurrence.
	l.gemm.run(false, false, tn, H, H, l.dout, H, l.who.Data, H, 0, l.pre, H)
	if l.cfg.ExposeHidden {
		copy(l.dh, top[1].Diff[:nh])
	} else {
		clear(l.dh)
	}
	cont := bottom[1].Data
	for t := l.t - 1; t >= 0; t-- {
		contT := cont[t*l.n : (t+1)*l.n]
		dpre, h := l.pre[t*nh:(t+1)*nh], l.hid[t*nh:(t+1)*nh]
		for i, v := range h {
			dpre[i] = (dpre[i] + l.dh[i]) * (1 - v*v)
		}
		l.gemm.run(false, false, l.n, H, H, dpre, H, l.wh.Data, H, 0, l.dh, H)
		l.scaleByCont(contT, l.dh)
	}
	if i := l.stateBottom(); l.cfg.ExposeHidden && propagateDown[i] {
		copy(bottom[i].Diff, l.dh)
	}
	l.inputBackward(l.pre, l.hc, l.static, propagateDown, bottom)
}

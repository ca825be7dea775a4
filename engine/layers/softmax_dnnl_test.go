package layers

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"dsgd/engine/tensor"
)

// TestSoftmaxEnginesAgree runs Softmax and SoftmaxWithLoss on oneDNN and
// on the Go loops from the same inputs and requires the same tops, losses
// and bottom diffs within float32 tolerance.
func TestSoftmaxEnginesAgree(t *testing.T) {
	if !dnnlReady() {
		t.Skip("oneDNN not available: only the Go loops run here")
	}
	cases := []struct {
		cfg     Config
		shape   []int
		classes int // > 0: SoftmaxWithLoss with labels
		inPlace bool
		dnnl    bool // expected on oneDNN
	}{
		{&SoftmaxConfig{Axis: 1}, []int{32, 1000}, 0, false, true},
		{&SoftmaxConfig{Axis: 1}, []int{6, 10}, 0, true, true},
		{&SoftmaxConfig{Axis: -1}, []int{2, 3, 7}, 0, false, true},
		{&SoftmaxWithLossConfig{Axis: 1}, []int{32, 1000}, 1000, false, true},
		{&SoftmaxWithLossConfig{Axis: 1, Normalization: NormBatchSize}, []int{10, 10}, 10, false, true},
	}
	for i, tc := range cases {
		name := fmt.Sprintf("%s %v", tc.cfg.Type(), tc.shape)
		run := func(own bool) (top, loss, bdiff []float32) {
			defer func(off bool) { dnnlOff = off }(dnnlOff)
			dnnlOff = own
			r := rand.New(rand.NewPCG(uint64(i), 9))
			x := hlBlob(r, "x", tc.shape...)
			for j := range x.Data {
				x.Data[j] *= 4
			}
			bs := []*tensor.Blob{x}
			ts := []*tensor.Blob{tensor.NewBlob("y")}
			if tc.inPlace {
				ts[0] = x
			}
			if tc.classes > 0 {
				lab := tensor.NewBlob("label", tc.shape[0])
				for j := range lab.Data {
					lab.Data[j] = float32(r.IntN(tc.classes))
				}
				bs = append(bs, lab)
				ts = append(ts, tensor.NewBlob("prob"))
			}
			l := newTestLayer(t, tc.cfg, Context{Threads: 2}, bs, ts)
			var on bool
			switch l := l.(type) {
			case *softmaxLayer:
				on = l.sm.dn != nil
			case *softmaxLossLayer:
				on = l.sm.dn != nil
			}
			if want := tc.dnnl && !own; on != want {
				t.Fatalf("%s: on oneDNN %v, want %v", name, on, want)
			}
			l.Forward(bs, ts)
			if tc.classes > 0 {
				ts[0].Diff[0] = 1.5
				top, loss = slices.Clone(ts[1].Data), slices.Clone(ts[0].Data)
			} else {
				top = slices.Clone(ts[0].Data)
				fillGaussianDiff(ts[0], rand.New(rand.NewPCG(1, 1)))
			}
			prop := make([]bool, len(bs))
			prop[0] = true
			l.Backward(ts, prop, bs)
			return top, loss, slices.Clone(x.Diff)
		}
		ot, ol, od := run(true)
		dt, dl, dd := run(false)
		hlClose(t, name+": top", dt, ot, 1e-5)
		hlClose(t, name+": loss", dl, ol, 1e-5)
		hlClose(t, name+": bottom diff", dd, od, 1e-5)
	}
}

package layers

import (
	"testing"

	"dsgd/engine/tensor"
)

func TestTanHValues(t *testing.T) {
	x := []float32{-50, -1, 0, 0.5, 50}
	wantY := []float32{-1, -0.76159416, 0, 0.46211716, 1}
	dy := []float32{1, 2, 3, 1, 1}
	wantDx := []float32{0, 2 * 0.41997434, 3, 0.78644773, 0}
	bottom := []*tensor.Blob{newBlobData([]int{5}, x)}
	top := []*tensor.Blob{tensor.NewBlob("top")}
	l := newTestLayer(t, &TanHConfig{}, Context{}, bottom, top)
	l.Forward(bottom, top)
	assertClose(t, "tanh", top[0].Data, wantY, 1e-6)
	copy(top[0].Diff, dy)
	l.Backward(top, []bool{true}, bottom)
	assertClose(t, "tanh diff", bottom[0].Diff, wantDx, 1e-6)
}

func TestTanHGradient(t *testing.T) {
	bottom := []*tensor.Blob{randBlob([]int{2, 3, 4}, 4)}
	top := []*tensor.Blob{tensor.NewBlob("top")}
	l := newTestLayer(t, &TanHConfig{}, Context{}, bottom, top)
	checkGradients(t, l, bottom, top, gradCheck{Threshold: 1e-3})
}

func TestTanHInPlace(t *testing.T) {
	checkInPlaceLayer(t, inPlaceCase{cfg: &TanHConfig{}, shape: []int{3, 5}})
}

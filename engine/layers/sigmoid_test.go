package layers

import (
	"testing"

	"dsgd/engine/tensor"
)

func TestSigmoidValues(t *testing.T) {
	x := []float32{-100, -1, 0, 1, 2, 100}
	wantY := []float32{0, 0.26894142, 0.5, 0.73105858, 0.88079708, 1}
	dy := []float32{1, 1, 2, 1, 1, 1}
	wantDx := []float32{0, 0.19661193, 0.5, 0.19661193, 0.10499359, 0}
	bottom := []*tensor.Blob{newBlobData([]int{6}, x)}
	top := []*tensor.Blob{tensor.NewBlob("top")}
	l := newTestLayer(t, &SigmoidConfig{}, Context{}, bottom, top)
	l.Forward(bottom, top)
	assertClose(t, "sigmoid", top[0].Data, wantY, 1e-6)
	copy(top[0].Diff, dy)
	l.Backward(top, []bool{true}, bottom)
	assertClose(t, "sigmoid diff", bottom[0].Diff, wantDx, 1e-6)
}

func TestSigmoidGradient(t *testing.T) {
	bottom := []*tensor.Blob{randBlob([]int{2, 3, 4}, 3)}
	top := []*tensor.Blob{tensor.NewBlob("top")}
	l := newTestLayer(t, &SigmoidConfig{}, Context{}, bottom, top)
	checkGradients(t, l, bottom, top, gradCheck{Threshold: 1e-3})
}

func TestSigmoidInPlace(t *testing.T) {
	checkInPlaceLayer(t, inPlaceCase{cfg: &SigmoidConfig{}, shape: []int{3, 5}})
}

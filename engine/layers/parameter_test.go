package layers

import (
	"testing"

	"dsgd/engine/tensor"
)

// TestParameterLayer: Caffe has no test of its own for Parameter; its
// semantics (one param blob of parameter_param.shape, shared with the top)
// are checked here as a copy forward and an accumulation backward.
func TestParameterLayer(t *testing.T) {
	y := tensor.NewBlob("top")
	l := newTestLayer(t, &ParameterConfig{Shape: []int{2, 3}}, Context{}, nil, blobs(y))
	ps := l.Params()
	if len(ps) != 1 || !ps[0].Blob.Shape.Equal(tensor.Shape{2, 3}) || !y.Shape.Equal(tensor.Shape{2, 3}) {
		t.Fatalf("params %v, top shape %v; want one (2, 3) param and top", ps, y.Shape)
	}
	l.Forward(nil, blobs(y))
	assertClose(t, "top", y.Data, ps[0].Blob.Data, 0)
	checkGradients(t, l, nil, blobs(y), gradCheck{})
	if err := l.Setup(blobs(y), blobs(tensor.NewBlob("t"))); err == nil {
		t.Error("Parameter with a bottom: no error")
	}
}

package layers

import (
	"math"
	"testing"

	"dsgd/engine/tensor"
)

// TestSilence: Caffe's Silence layer takes any bottoms, has no top, and
// gives the bottoms it propagates to a zero gradient (SilenceLayer::
// Backward_cpu), leaving the others alone.
func TestSilence(t *testing.T) {
	l, err := (&SilenceConfig{}).Build(Context{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := tensor.NewBlob("a", 2, 3), tensor.NewBlob("b", 4)
	if err := l.Setup([]*tensor.Blob{a, b}, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Setup([]*tensor.Blob{a}, []*tensor.Blob{tensor.NewBlob("t")}); err == nil {
		t.Fatal("Silence with a top: no error")
	}
	if err := l.Setup(nil, nil); err == nil {
		t.Fatal("Silence without a bottom: no error")
	}
	for i := range a.Diff {
		a.Diff[i] = float32(math.NaN())
	}
	for i := range b.Diff {
		b.Diff[i] = 7
	}
	l.Forward([]*tensor.Blob{a, b}, nil)
	l.Backward(nil, []bool{true, false}, []*tensor.Blob{a, b})
	for i, v := range a.Diff {
		if v != 0 {
			t.Fatalf("a.Diff[%d] = %v; want 0", i, v)
		}
	}
	for i, v := range b.Diff {
		if v != 7 {
			t.Fatalf("b.Diff[%d] = %v; want it untouched (7)", i, v)
		}
	}
}

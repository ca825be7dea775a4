package layers

import (
	"math"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

func TestSoftmaxValues(t *testing.T) {
	tests := []struct {
		name  string
		axis  int
		shape []int
		x     []float32
		want  []float32
	}{
		{"row", 1, []int{1, 3}, []float32{1, 2, 3}, []float32{0.09003057, 0.24472847, 0.66524096}},
		{"large values do not overflow", 1, []int{1, 3}, []float32{1000, 1001, 1002}, []float32{0.09003057, 0.24472847, 0.66524096}},
		{"very negative values", -1, []int{1, 2}, []float32{-1000, -1000}, []float32{0.5, 0.5}},
		{"two rows", -1, []int{2, 2}, []float32{0, 0, 0, float32(math.Log(3))}, []float32{0.5, 0.5, 0.25, 0.75}},
		// Axis 1 of 1×3×2: each of the two positions gets its own softmax
		// over the three channels.
		{"inner positions", 1, []int{1, 3, 2}, []float32{1, 0, 2, 0, 3, float32(math.Log(2))}, []float32{0.09003057, 0.25, 0.24472847, 0.25, 0.66524096, 0.5}},
		{"axis 0", 0, []int{2, 2}, []float32{0, 1, 0, 1}, []float32{0.5, 0.5, 0.5, 0.5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bs := []*tensor.Blob{newBlobData(tc.shape, tc.x)}
			ts := []*tensor.Blob{tensor.NewBlob("top")}
			l := newTestLayer(t, &SoftmaxConfig{Axis: tc.axis}, Context{}, bs, ts)
			l.Forward(bs, ts)
			assertClose(t, "softmax", ts[0].Data, tc.want, 1e-6)
		})
	}
}

func TestSoftmaxGradient(t *testing.T) {
	for _, c := range []struct {
		axis  int
		shape []int
	}{
		{1, []int{2, 5}},
		{1, []int{2, 3, 2, 2}},
		{-1, []int{2, 3, 4}},
		{0, []int{3, 2}},
	} {
		bs := []*tensor.Blob{randBlob(c.shape, 9)}
		ts := []*tensor.Blob{tensor.NewBlob("top")}
		l := newTestLayer(t, &SoftmaxConfig{Axis: c.axis}, Context{}, bs, ts)
		checkGradients(t, l, bs, ts, gradCheck{Threshold: 1e-3})
	}
}

func TestSoftmaxErrors(t *testing.T) {
	l, err := (&SoftmaxConfig{Axis: 2}).Build(Context{})
	if err != nil {
		t.Fatal(err)
	}
	err = l.Setup([]*tensor.Blob{tensor.NewBlob("x", 2, 3)}, []*tensor.Blob{tensor.NewBlob("top")})
	if err == nil || !strings.Contains(err.Error(), "axis 2 out of range") {
		t.Errorf("error %v, want axis out of range", err)
	}
}

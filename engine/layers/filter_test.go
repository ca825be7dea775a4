package layers

import (
	"math/rand/v2"
	"testing"

	"dsgd/engine/tensor"
)

// Ports of BVLC Caffe's FilterLayerTest.

// filterBottoms are FilterLayerTest's: data (4,3,6,4), labels (4,1,1,1)
// and the selector (4,1,1,1) = 0, 1, 1, 0.
func filterBottoms() []*tensor.Blob {
	data := gaussBlob(1890, 4, 3, 6, 4)
	labels := tensor.NewBlob("labels", 4, 1, 1, 1)
	r := rand.New(rand.NewPCG(1890, 2))
	for i := range labels.Data {
		labels.Data[i] = float32(r.IntN(5))
	}
	sel := tensor.NewBlob("selector", 4, 1, 1, 1)
	copy(sel.Data, []float32{0, 1, 1, 0})
	return blobs(data, labels, sel)
}

func TestFilterCaffe(t *testing.T) {
	t.Run("FilterLayerTest.TestReshape", func(t *testing.T) {
		bottom, top := filterBottoms(), blobs(tensor.NewBlob("d"), tensor.NewBlob("l"))
		l := newTestLayer(t, &FilterConfig{}, Context{}, bottom, top)
		if top[0].Shape[0] != 4 {
			t.Fatalf("after set-up the tops have %d items, want all 4 (Caffe's first reshape)", top[0].Shape[0])
		}
		if err := l.Reshape(bottom, top); err != nil {
			t.Fatal(err)
		}
		if top[0].Shape[0] != 2 || top[1].Shape[0] != 2 {
			t.Fatalf("top shapes %v %v, want 2 items", top[0].Shape, top[1].Shape)
		}
		for i := 1; i < 4; i++ {
			if top[1].Shape[i] != bottom[1].Shape[i] || top[0].Shape[i] != bottom[0].Shape[i] {
				t.Fatalf("top shapes %v %v; want the bottoms' after the first axis", top[0].Shape, top[1].Shape)
			}
		}
	})
	t.Run("FilterLayerTest.TestForward", func(t *testing.T) {
		bottom, top := filterBottoms(), blobs(tensor.NewBlob("d"), tensor.NewBlob("l"))
		l := newTestLayer(t, &FilterConfig{}, Context{}, bottom, top)
		if err := l.Reshape(bottom, top); err != nil {
			t.Fatal(err)
		}
		l.Forward(bottom, top)
		if top[1].Data[0] != bottom[1].Data[1] || top[1].Data[1] != bottom[1].Data[2] {
			t.Fatalf("labels %v from %v, want items 1 and 2", top[1].Data, bottom[1].Data)
		}
		dim := 3 * 6 * 4
		assertClose(t, "item 0", top[0].Data[:dim], bottom[0].Data[dim:2*dim], 0)
		assertClose(t, "item 1", top[0].Data[dim:2*dim], bottom[0].Data[2*dim:3*dim], 0)
	})
	t.Run("FilterLayerTest.TestGradient", func(t *testing.T) {
		bottom, top := filterBottoms(), blobs(tensor.NewBlob("d"), tensor.NewBlob("l"))
		l := newTestLayer(t, &FilterConfig{}, Context{}, bottom, top)
		checkGradients(t, l, bottom, top, gradCheck{Step: 1e-2, Threshold: 1e-3, Skip: map[int]bool{2: true}})
		// The items not selected get a zero gradient.
		for _, i := range []int{0, 3} {
			for _, v := range bottom[0].Diff[i*72 : (i+1)*72] {
				if v != 0 {
					t.Fatalf("item %d, not selected, has gradient %v", i, v)
				}
			}
		}
	})
	t.Run("Forward follows the selector", func(t *testing.T) {
		bottom, top := filterBottoms(), blobs(tensor.NewBlob("d"), tensor.NewBlob("l"))
		l := newTestLayer(t, &FilterConfig{}, Context{}, bottom, top)
		r := l.(ForwardReshaper)
		l.Forward(bottom, top)
		if !r.TopsReshaped() || top[0].Shape[0] != 2 {
			t.Fatalf("after Forward: %d items, reshaped %v; want 2, true", top[0].Shape[0], r.TopsReshaped())
		}
		l.Forward(bottom, top)
		if r.TopsReshaped() {
			t.Fatal("a second Forward on the same selector reports a reshape")
		}
		copy(bottom[2].Data, []float32{1, 0, -1, 0.5}) // any non-zero value selects
		l.Forward(bottom, top)
		if !r.TopsReshaped() || top[1].Shape[0] != 3 || top[1].Data[1] != bottom[1].Data[2] || top[1].Data[2] != bottom[1].Data[3] {
			t.Fatalf("selector 1,0,-1,0.5: %v items %v", top[1].Shape, top[1].Data)
		}
		if g, ok := l.(GradientBlocker); !ok || g.AllowBackward(2) || !g.AllowBackward(0) {
			t.Fatal("the selector must block the gradient, the data not")
		}
	})
	t.Run("shape errors", func(t *testing.T) {
		b := filterBottoms()
		l, _ := (&FilterConfig{}).Build(Context{})
		if err := l.Setup(b, blobs(tensor.NewBlob("d"))); err == nil {
			t.Error("Filter with 3 bottoms and 1 top: no error")
		}
		b[2] = tensor.NewBlob("sel", 4, 2)
		if err := l.Setup(b, blobs(tensor.NewBlob("d"), tensor.NewBlob("l"))); err == nil {
			t.Error("Filter with a (4, 2) selector: no error")
		}
		b[2] = tensor.NewBlob("sel", 3)
		if err := l.Setup(b, blobs(tensor.NewBlob("d"), tensor.NewBlob("l"))); err == nil {
			t.Error("Filter with a selector of 3 items for bottoms of 4: no error")
		}
	})
}

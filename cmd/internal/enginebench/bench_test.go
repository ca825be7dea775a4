package enginebench

import (
	"strings"
	"testing"

	"dsgd/caffe/caffedef"
	"dsgd/caffe/zoo"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// TestLayerFlops counts by hand: a convolution's output element is a dot
// product over in/group x kh x kw, an inner product's over its inputs;
// two FLOPs per multiply-add; backward twice forward (weights and input)
// or once (weights only).
func TestLayerFlops(t *testing.T) {
	tests := []struct {
		name     string
		typ      string
		top, w   tensor.Shape
		dataGrad bool
		fwd, bwd float64
	}{
		// 2x4x8x8 = 512 outputs, each 3x3x3 = 27 multiply-adds: 13,824.
		{"conv", "Convolution", tensor.Shape{2, 4, 8, 8}, tensor.Shape{4, 3, 3, 3}, true, 27648, 55296},
		{"conv on the data", "Convolution", tensor.Shape{2, 4, 8, 8}, tensor.Shape{4, 3, 3, 3}, false, 27648, 27648},
		// CaffeNet's conv2, group 2: 256x27x27 = 186,624 outputs, each over
		// 48 of the 96 input maps x 5x5 = 1,200: 223,948,800 multiply-adds.
		{"grouped conv", "Convolution", tensor.Shape{1, 256, 27, 27}, tensor.Shape{256, 48, 5, 5}, true, 447897600, 895795200},
		// LeNet's ip1 at batch 64: 64x500 outputs over 800 inputs: 25.6M.
		{"inner product", "InnerProduct", tensor.Shape{64, 500}, tensor.Shape{500, 800}, true, 51.2e6, 102.4e6},
		{"inner product, transposed weights", "InnerProduct", tensor.Shape{64, 500}, tensor.Shape{800, 500}, true, 51.2e6, 102.4e6},
		{"relu", "ReLU", tensor.Shape{64, 500}, nil, true, 0, 0},
		{"pooling", "Pooling", tensor.Shape{2, 4, 4, 4}, nil, true, 0, 0},
		{"no top", "Convolution", nil, tensor.Shape{4, 3, 3, 3}, true, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fwd, bwd := layerFlops(tt.typ, tt.top, tt.w, tt.dataGrad)
			if fwd != tt.fwd || bwd != tt.bwd {
				t.Errorf("layerFlops = %v, %v; want %v, %v", fwd, bwd, tt.fwd, tt.bwd)
			}
		})
	}
}

func zooNet(t *testing.T, name string, batch int, chw ...int) (model.Spec, *model.Net) {
	t.Helper()
	src, _, err := zoo.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	def, err := caffedef.ParseNet(name+".prototxt", src)
	if err != nil {
		t.Fatal(err)
	}
	pn, err := def.Phase(layers.Train)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]tensor.Shape{"data": append(tensor.Shape{batch}, chw...), "label": {batch}}
	net, err := model.Build(pn.Spec, in, model.Options{Phase: layers.Train, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return pn.Spec, net
}

// TestIterFlops counts LeNet at batch 64 by hand. Multiply-adds: conv1
// 64x20x24x24 outputs x 25 = 18,432,000 (it reads the data: no input
// gradient); conv2 64x50x8x8 x 500 = 102,400,000; ip1 64x500 x 800 =
// 25,600,000; ip2 64x10 x 500 = 320,000. FLOPs: 2 x (all) forward, 2 x
// conv1 + 4 x (the rest) backward = 293,504,000 + 550,144,000.
//
// cifar10_quick at batch 100: conv1 100x32x32x32 x 75 = 245,760,000 (reads
// the data); conv2 100x32x16x16 x 800 = 655,360,000; conv3 100x64x8x8 x 800
// = 327,680,000; ip1 100x64 x 1024 = 6,553,600; ip2 100x10 x 64 = 64,000:
// 4 x 245,760,000 + 6 x 989,657,600 = 6,920,985,600.
func TestIterFlops(t *testing.T) {
	spec, net := zooNet(t, "lenet", 64, 1, 28, 28)
	if got, want := iterFlops(spec, net), 843648000.0; got != want {
		t.Errorf("LeNet: %v FLOPs per iteration, want %v", got, want)
	}
	spec, net = zooNet(t, "cifar10_quick", 100, 3, 32, 32)
	if got, want := iterFlops(spec, net), 6920985600.0; got != want {
		t.Errorf("cifar10_quick: %v FLOPs per iteration, want %v", got, want)
	}
}

func TestParsePeerOutputs(t *testing.T) {
	st, err := parsePeerNet("p.py", "loading\ncifar10_quick batch 100 threads 2: fwd+bwd median 55.31 ms (min 54.90, max 60.02)\n")
	if err != nil || st.Median != 55.31 {
		t.Errorf("parsePeerNet: %+v, %v", st, err)
	}
	if _, err := parsePeerNet("p.py", "Traceback: boom\n"); err == nil || !strings.Contains(err.Error(), "p.py") || !strings.Contains(err.Error(), "boom") {
		t.Errorf("parsePeerNet on no timing line: %v", err)
	}
	st, err = parsePeerLeNet("l.py", "iter ms (excluding first 20): mean 7.100  median 7.000  std 0.3  p95 7.900\nfinal TEST acc 0.8\n")
	if err != nil || st.Mean != 7.1 || st.Median != 7 || st.P95 != 7.9 {
		t.Errorf("parsePeerLeNet: %+v, %v", st, err)
	}
	if _, err := parsePeerLeNet("l.py", ""); err == nil {
		t.Error("parsePeerLeNet on empty output succeeded")
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

package train

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"dsgd/caffe/caffedef"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/engine/tensor"
	"dsgd/protocol/scheme"
)

// shapeSource is a Reshaper whose batch k is 1×2×H×W of shapes[k]
// (cycling), its values k+1, its label k%3.
type shapeSource struct {
	shapes [][2]int
	k      int
	vary   bool
}

func (s *shapeSource) shape() tensor.Shape {
	hw := s.shapes[s.k%len(s.shapes)]
	return tensor.Shape{1, 2, hw[0], hw[1]}
}

func (s *shapeSource) Reshapes() bool { return s.vary }

func (s *shapeSource) NextShapes(_ context.Context, shapes []tensor.Shape) error {
	shapes[0] = append(shapes[0][:0], s.shape()...)
	return nil
}

func (s *shapeSource) Fill(_ context.Context, tops []*tensor.Blob) error {
	if !tops[0].Shape.Equal(s.shape()) {
		return fmt.Errorf("batch %d is %v but the blob is %v", s.k, s.shape(), tops[0].Shape)
	}
	for i := range tops[0].Data {
		tops[0].Data[i] = float32(s.k+1) * float32(i%7) / 7
	}
	tops[1].Data[0] = float32(s.k % 3)
	s.k++
	return nil
}

// shapeNet is a net for inputs of any size (convolution, global pooling,
// InnerProduct) or, with fixed, one whose InnerProduct reads the data.
func shapeNet(t *testing.T, fixed bool) model.Spec {
	t.Helper()
	body := `layer { name: "conv" type: "Convolution" bottom: "data" top: "conv" convolution_param { num_output: 3 kernel_size: 2 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "pool" type: "Pooling" bottom: "conv" top: "pool" pooling_param { pool: AVE global_pooling: true } }
layer { name: "ip" type: "InnerProduct" bottom: "pool" top: "ip" inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.3 } } }`
	if fixed {
		body = `layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 3 } }`
	}
	src := `name: "shapes"
layer { name: "in" type: "Input" top: "data" top: "label" input_param { shape { dim: 1 dim: 2 dim: 5 dim: 5 } shape { dim: 1 } } }
` + body + `
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }`
	nd, err := caffedef.ParseNet("shapes.prototxt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	pn, err := nd.Phase(layers.Train)
	if err != nil {
		t.Fatal(err)
	}
	return pn.Spec
}

// TestNetShapes: NetShapes gives each batch a net of its input shape —
// the main net for the main net's shape, one cached net per other shape
// — whose weights, gradients and pool are the main net's (a pass on it
// leaves its gradients in the main net's); past MaxShapedNets, or
// MaxShapedBytes, the least recently used is dropped and built again
// when its shape returns; a net that cannot take a shape is an error
// naming the shape and the layer; no reshaping feed, no NetShapes.
func TestNetShapes(t *testing.T) {
	base := map[string]tensor.Shape{"data": {1, 2, 5, 5}, "label": {1}}
	opt := model.Options{Phase: layers.Train, Threads: 1, Seed: 3}
	spec := shapeNet(t, false)
	main, err := model.Build(spec, base, opt)
	if err != nil {
		t.Fatal(err)
	}
	if s := NewNetShapes(main, spec, base, opt, []Feed{{Tops: []string{"data", "label"}, Source: &shapeSource{shapes: [][2]int{{4, 4}}}}}, "TRAIN"); s != nil {
		t.Fatal("NetShapes for a feed that does not reshape")
	}
	seq := [][2]int{{5, 5}, {4, 6}, {5, 5}, {7, 3}, {4, 6}, {2, 2}}
	src := &shapeSource{shapes: seq, vary: true}
	feeds := []Feed{{Tops: []string{"data", "label"}, Source: src}}
	ns := NewNetShapes(main, spec, base, opt, feeds, "TRAIN")
	if ns == nil {
		t.Fatal("no NetShapes for a reshaping feed")
	}
	hooked := 0
	main.SetGradHook(func([]int) { hooked++ })
	byShape := map[[2]int]*model.Net{}
	for k, hw := range seq {
		net, err := ns.Pick(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := (tensor.Shape{1, 2, hw[0], hw[1]}); !net.Input("data").Shape.Equal(want) {
			t.Fatalf("batch %d: net input %v, want %v", k, net.Input("data").Shape, want)
		}
		if (hw == seq[0]) != (net == main) {
			t.Errorf("batch %d (%v): main net %v", k, hw, net == main)
		}
		if prev, ok := byShape[hw]; ok && prev != net {
			t.Errorf("batch %d: shape %v built again", k, hw)
		}
		byShape[hw] = net
		if &net.Params()[0] != &main.Params()[0] || &net.Grads()[0] != &main.Grads()[0] {
			t.Fatalf("batch %d: the net of %v has weights or gradients of its own", k, hw)
		}
		if err := fill(context.Background(), net, feeds[0]); err != nil {
			t.Fatal(err)
		}
		clear(main.Grads())
		net.Forward()
		before := hooked
		net.Backward()
		if slices.Max(main.Grads()) == 0 && slices.Min(main.Grads()) == 0 {
			t.Errorf("batch %d: a pass on the net of %v left no gradient in the main net's", k, hw)
		}
		if hooked == before {
			t.Errorf("batch %d: the net of %v did not call the main net's grad hook", k, hw)
		}
	}
	if ns.Built() != 3 {
		t.Errorf("%d nets built for 3 shapes other than the main one", ns.Built())
	}

	// The cache: MaxShapedNets shapes besides the main one stay (a main
	// net of 40x40 inputs, whose blobs outweigh theirs); one more drops
	// the least recently used, and its shape builds anew.
	big := map[string]tensor.Shape{"data": {1, 2, 40, 40}, "label": {1}}
	bigMain, err := model.Build(spec, big, opt)
	if err != nil {
		t.Fatal(err)
	}
	var many [][2]int
	for i := range MaxShapedNets + 1 {
		many = append(many, [2]int{3 + i, 3})
	}
	src2 := &shapeSource{shapes: append(many, many[0]), vary: true}
	ns2 := NewNetShapes(bigMain, spec, big, opt, []Feed{{Tops: []string{"data", "label"}, Source: src2}}, "TRAIN")
	for range len(src2.shapes) {
		if _, err := ns2.Pick(context.Background()); err != nil {
			t.Fatal(err)
		}
		src2.k++
	}
	if want := MaxShapedNets + 2; ns2.Built() != want {
		t.Errorf("%d nets built for %d shapes, the first dropped and coming back; want %d", ns2.Built(), MaxShapedNets+1, want)
	}
	// And their blobs: two nets of 20x20 inputs outweigh MaxShapedBytes
	// main nets of 5x5, so the second drops the first.
	src4 := &shapeSource{shapes: [][2]int{{20, 20}, {21, 21}, {20, 20}}, vary: true}
	ns4 := NewNetShapes(main, spec, base, opt, []Feed{{Tops: []string{"data", "label"}, Source: src4}}, "TRAIN")
	for range 3 {
		if _, err := ns4.Pick(context.Background()); err != nil {
			t.Fatal(err)
		}
		src4.k++
	}
	if ns4.Built() != 3 {
		t.Errorf("%d nets built for 20x20, 21x21, 20x20 past the memory bound; want 3", ns4.Built())
	}
	main = bigMain
	// UseGrads moves the kept nets' gradients along.
	buf := make([]float32, len(main.Grads()))
	if err := main.UseGrads(buf); err != nil {
		t.Fatal(err)
	}
	src2.k = len(many) - 1
	net, err := ns2.Pick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if net == main || net.Pool() != main.Pool() {
		t.Error("a net of another shape does not run on the main net's pool")
	}
	if &net.Grads()[0] != &buf[0] {
		t.Error("a kept net's gradients did not follow the main net's UseGrads")
	}

	// A net whose params depend on the input's size cannot reshape.
	fixed := shapeNet(t, true)
	fmain, err := model.Build(fixed, base, opt)
	if err != nil {
		t.Fatal(err)
	}
	ns3 := NewNetShapes(fmain, fixed, base, opt, []Feed{{Tops: []string{"data", "label"}, Source: &shapeSource{shapes: [][2]int{{4, 6}}, vary: true}}}, "TRAIN")
	_, err = ns3.Pick(context.Background())
	for _, s := range []string{"TRAIN net for the batch's input data 1x2x4x6", "Caffe's Data layer at batch_size 1 reshapes the net to each record", `"ip"`} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Fatalf("error %v; want one with %q", err, s)
		}
	}
}

// TestReshapingRefusals: a run whose data reshapes the net is refused at
// start where a net cannot reshape: on GPUs (a GPU net has one shape).
func TestReshapingRefusals(t *testing.T) {
	spec := shapeNet(t, false)
	base := map[string]tensor.Shape{"data": {1, 2, 5, 5}, "label": {1}}
	for _, c := range []struct {
		name string
		cfg  func(*Config)
		want string
	}{
		{"gpu", func(c *Config) { c.GPUs = []int{0} }, "a GPU net has one shape, so these run on the CPU only"},
		{"gpu test", func(c *Config) {
			c.GPUs = []int{0}
			c.TrainFeeds[0].Source.(*shapeSource).vary = false
			c.Test, c.TestShapes = spec, base
			c.TestFeeds = []Feed{{Tops: []string{"data", "label"}, Source: &shapeSource{shapes: [][2]int{{4, 4}}, vary: true}}}
		}, "a GPU net has one shape"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{
				Train: spec, TrainShapes: base,
				TrainFeeds: []Feed{{Tops: []string{"data", "label"}, Source: &shapeSource{shapes: [][2]int{{5, 5}, {4, 4}}, vary: true}}},
				Solver:     solver.Config{Type: "SGD", BaseLR: 0.1, LRPolicy: "fixed"},
				Config:     scheme.Config{MaxIter: 2}, Seed: 1, Out: io.Discard,
			}
			c.cfg(&cfg)
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want one with %q", err, c.want)
			}
		})
	}
}

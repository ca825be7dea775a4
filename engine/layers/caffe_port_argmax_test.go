package layers

import (
	"testing"

	"dsgd/engine/tensor"
)

// TestCaffePortArgMax ports Caffe's test_argmax_layer.cpp.
func TestCaffePortArgMax(t *testing.T) {
	const topK = 5
	fixture := func() []*tensor.Blob { return []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 10, 10, 20, 20)} }
	run := func(t *testing.T, cfg *ArgMaxConfig) ([]*tensor.Blob, *tensor.Blob) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, cfg, Test, b, top)
		l.Forward(b, top)
		return b, top[0]
	}
	setup := func(t *testing.T, cfg *ArgMaxConfig, axes map[int]int) {
		b, top := fixture(), cpTops(1)
		caffeLayer(t, cfg, Test, b, top)
		for a, want := range axes {
			if a >= len(top[0].Shape) || top[0].Shape[a] != want {
				t.Errorf("top shape %v: axis %d is not %d", top[0].Shape, a, want)
			}
		}
	}
	t.Run("ArgMaxLayerTest.TestSetup", func(t *testing.T) { setup(t, &ArgMaxConfig{TopK: 1}, map[int]int{0: 10, 1: 1}) })
	t.Run("ArgMaxLayerTest.TestSetupMaxVal", func(t *testing.T) {
		setup(t, &ArgMaxConfig{TopK: 1, OutMaxVal: true}, map[int]int{0: 10, 1: 2})
	})
	t.Run("ArgMaxLayerTest.TestSetupAxis", func(t *testing.T) {
		setup(t, &ArgMaxConfig{TopK: 1, Axis: ip(0)}, map[int]int{0: 1, 1: 10, 2: 20, 3: 20})
	})
	t.Run("ArgMaxLayerTest.TestSetupAxisNegativeIndexing", func(t *testing.T) {
		setup(t, &ArgMaxConfig{TopK: 1, Axis: ip(-2)}, map[int]int{0: 10, 1: 10, 2: 1, 3: 20})
	})
	t.Run("ArgMaxLayerTest.TestSetupAxisMaxVal", func(t *testing.T) {
		setup(t, &ArgMaxConfig{TopK: 1, Axis: ip(2), OutMaxVal: true}, map[int]int{0: 10, 1: 10, 2: 1, 3: 20})
	})

	// Without an axis: per item i of the 10, over dim = 4000 values; the
	// top is N × (1 or 2) × K, index (i·C + c)·K + j.
	const num, dim = 10, 4000
	greater := func(row []float32, v float32) int {
		n := 0
		for _, x := range row {
			if x > v {
				n++
			}
		}
		return n
	}
	flat := func(t *testing.T, k int, maxVal bool) {
		b, top := run(t, &ArgMaxConfig{TopK: k, OutMaxVal: maxVal})
		c := 1
		if maxVal {
			c = 2
		}
		for i := range num {
			row := b[0].Data[i*dim : (i+1)*dim]
			for j := range k {
				ind := top.Data[(i*c)*k+j]
				if !(ind >= 0 && ind <= dim) {
					t.Fatalf("item %d: index %g out of range", i, ind)
				}
				v := row[int(ind)]
				if maxVal {
					if got := top.Data[(i*c+1)*k+j]; got != v {
						t.Errorf("item %d, rank %d: value %g, bottom[%g] = %g", i, j, got, ind, v)
					}
				}
				if n := greater(row, v); n != j {
					t.Errorf("item %d, rank %d: %d values greater", i, j, n)
				}
			}
		}
	}
	t.Run("ArgMaxLayerTest.TestCPU", func(t *testing.T) { flat(t, 1, false) })
	t.Run("ArgMaxLayerTest.TestCPUMaxVal", func(t *testing.T) { flat(t, 1, true) })
	t.Run("ArgMaxLayerTest.TestCPUTopK", func(t *testing.T) { flat(t, topK, false) })
	t.Run("ArgMaxLayerTest.TestCPUMaxValTopK", func(t *testing.T) { flat(t, topK, true) })

	// Along an axis of the 10×10×20×20 bottom: the top has the bottom's
	// shape with that axis K long.
	along := func(t *testing.T, axis, k int, maxVal bool) {
		b, top := run(t, &ArgMaxConfig{TopK: k, Axis: ip(axis), OutMaxVal: maxVal})
		if axis < 0 {
			axis += 4
		}
		s := b[0].Shape
		outer, n, inner := s.CountRange(0, axis), s[axis], s.CountFrom(axis+1)
		for o := range outer {
			for in := range inner {
				line := make([]float32, n)
				for l := range n {
					line[l] = b[0].Data[(o*n+l)*inner+in]
				}
				for m := range k {
					got := top.Data[(o*k+m)*inner+in]
					v := got
					if !maxVal {
						if !(got >= 0 && got <= float32(n)) {
							t.Fatalf("index %g out of range", got)
						}
						v = line[int(got)]
					}
					if c := greater(line, v); c != m {
						t.Errorf("(%d,·,%d) rank %d: %d values greater", o, in, m, c)
					}
				}
			}
		}
	}
	t.Run("ArgMaxLayerTest.TestCPUAxis", func(t *testing.T) { along(t, 0, 1, false) })
	t.Run("ArgMaxLayerTest.TestCPUAxisTopK", func(t *testing.T) { along(t, 2, topK, false) })
	t.Run("ArgMaxLayerTest.TestCPUAxisMaxValTopK", func(t *testing.T) { along(t, -1, topK, true) })
}

package layers

import (
	"math"
	"testing"

	"dsgd/engine/tensor"
)

// TestCaffePortAccuracy ports Caffe's test_accuracy_layer.cpp.
func TestCaffePortAccuracy(t *testing.T) {
	fixture := func(dataShape, labelShape []int) []*tensor.Blob {
		r := caffeRand()
		data := caffeGaussian(r, 0, 1, dataShape...)
		label := tensor.NewBlob("label", labelShape...)
		for i := range label.Data {
			label.Data[i] = float32(r.Uint32() % 10)
		}
		return []*tensor.Blob{data, label}
	}
	plain := func() []*tensor.Blob { return fixture([]int{100, 10}, []int{100}) }
	// legacy is Caffe's num/channels/height/width view of a shape.
	legacy := func(t *testing.T, what string, b *tensor.Blob, num int) {
		t.Helper()
		if b.Count() != num || (len(b.Shape) > 0 && b.Shape[0] != num) {
			t.Errorf("%s shape %v, want num %d and 1s", what, b.Shape, num)
		}
	}
	t.Run("AccuracyLayerTest.TestSetup", func(t *testing.T) {
		b, top := plain(), cpTops(1)
		caffeLayer(t, &AccuracyConfig{TopK: 1, Axis: 1}, Test, b, top)
		legacy(t, "top", top[0], 1)
	})
	t.Run("AccuracyLayerTest.TestSetupTopK", func(t *testing.T) {
		b, top := plain(), cpTops(1)
		caffeLayer(t, &AccuracyConfig{TopK: 5, Axis: 1}, Test, b, top)
		legacy(t, "top", top[0], 1)
	})
	t.Run("AccuracyLayerTest.TestSetupOutputPerClass", func(t *testing.T) {
		b, top := plain(), cpTops(2)
		caffeLayer(t, &AccuracyConfig{TopK: 1, Axis: 1}, Test, b, top)
		legacy(t, "top", top[0], 1)
		legacy(t, "per-class top", top[1], 10)
	})

	// ref is the tests' expectation: over every (outer, inner) position of
	// data N × 10 × inner, the label counts as right when fewer than k
	// classes score above it.
	ref := func(b []*tensor.Blob, k int, ignore *int) (acc float64, perClass []float64, count int) {
		data, label := b[0], b[1]
		inner := data.Shape.CountFrom(2)
		right, seen := make([]int, 10), make([]int, 10)
		correct := 0
		for n := range data.Shape[0] {
			for in := range inner {
				l := int(label.Data[n*inner+in])
				if ignore != nil && l == *ignore {
					continue
				}
				count++
				seen[l]++
				v := data.Data[(n*10+l)*inner+in]
				rank := 0
				for c := range 10 {
					if data.Data[(n*10+c)*inner+in] > v {
						rank++
					}
				}
				if rank < k {
					correct++
					right[l]++
				}
			}
		}
		perClass = make([]float64, 10)
		for c := range 10 {
			if seen[c] > 0 {
				perClass[c] = float64(right[c]) / float64(seen[c])
			}
		}
		return float64(correct) / float64(count), perClass, count
	}
	run := func(t *testing.T, b []*tensor.Blob, cfg *AccuracyConfig, tops int, wantCount int) {
		top := cpTops(tops)
		l := caffeLayer(t, cfg, Test, b, top)
		acc, per, count := ref(b, cfg.TopK, cfg.IgnoreLabel)
		if wantCount > 0 && count != wantCount {
			t.Fatalf("%d labels counted, want %d", count, wantCount)
		}
		for range 3 {
			l.Forward(b, top)
			if math.Abs(float64(top[0].Data[0])-acc) > 1e-4 {
				t.Errorf("accuracy %g, want %g", top[0].Data[0], acc)
			}
			if tops > 1 {
				for c := range 10 {
					if math.Abs(float64(top[1].Data[c])-per[c]) > 1e-4 {
						t.Errorf("class %d accuracy %g, want %g", c, top[1].Data[c], per[c])
					}
				}
			}
		}
	}
	ignored := func() []*tensor.Blob {
		b := plain()
		for _, i := range []int{2, 5, 32} {
			b[1].Data[i] = -1
		}
		return b
	}
	t.Run("AccuracyLayerTest.TestForward", func(t *testing.T) { run(t, plain(), &AccuracyConfig{TopK: 1, Axis: 1}, 1, 0) })
	t.Run("AccuracyLayerTest.TestForwardWithSpatialAxes", func(t *testing.T) {
		run(t, fixture([]int{2, 10, 4, 5}, []int{2, 4, 5}), &AccuracyConfig{TopK: 1, Axis: 1}, 1, 0)
	})
	t.Run("AccuracyLayerTest.TestForwardIgnoreLabel", func(t *testing.T) {
		run(t, ignored(), &AccuracyConfig{TopK: 1, Axis: 1, IgnoreLabel: ip(-1)}, 1, 97)
	})
	t.Run("AccuracyLayerTest.TestForwardTopK", func(t *testing.T) { run(t, plain(), &AccuracyConfig{TopK: 3, Axis: 1}, 1, 0) })
	t.Run("AccuracyLayerTest.TestForwardPerClass", func(t *testing.T) { run(t, plain(), &AccuracyConfig{TopK: 1, Axis: 1}, 2, 0) })
	t.Run("AccuracyLayerTest.TestForwardPerClassWithIgnoreLabel", func(t *testing.T) {
		run(t, ignored(), &AccuracyConfig{TopK: 1, Axis: 1, IgnoreLabel: ip(-1)}, 2, 97)
	})
}

package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"dsgd/engine/tensor"
)

func TestDropoutTestPhaseIsIdentity(t *testing.T) {
	for _, inPlace := range []bool{false, true} {
		x := randBlob([]int{4, 5}, 1)
		want := append([]float32(nil), x.Data...)
		top := tensor.NewBlob("top")
		if inPlace {
			top = x
		}
		bs, ts := []*tensor.Blob{x}, []*tensor.Blob{top}
		l := newTestLayer(t, &DropoutConfig{Ratio: 0.5}, Context{Phase: Test}, bs, ts)
		l.Forward(bs, ts)
		assertClose(t, "test-phase dropout", top.Data, want, 0)
		dy := randBlob(top.Shape, 2)
		copy(top.Diff, dy.Data)
		l.Backward(ts, []bool{true}, bs)
		assertClose(t, "test-phase dropout diff", x.Diff, dy.Data, 0)
	}
}

func TestDropoutTrain(t *testing.T) {
	for _, ratio := range []float32{0, 0.2, 0.5, 0.9} {
		const n = 100000
		x := tensor.NewBlob("x", n)
		for i := range x.Data {
			x.Data[i] = 1 + float32(i%7)
		}
		bs, ts := []*tensor.Blob{x}, []*tensor.Blob{tensor.NewBlob("top")}
		l := newTestLayer(t, &DropoutConfig{Ratio: ratio}, Context{Phase: Train, Rand: rand.New(rand.NewPCG(8, 8))}, bs, ts)
		l.Forward(bs, ts)
		y := ts[0].Data
		for i := range ts[0].Diff {
			ts[0].Diff[i] = float32(i%3) + 1
		}
		l.Backward(ts, []bool{true}, bs)
		scale := 1 / (1 - ratio)
		kept := 0
		for i, v := range y {
			switch v {
			case 0:
				if x.Diff[i] != 0 {
					t.Fatalf("ratio %v: dropped element %d has diff %v", ratio, i, x.Diff[i])
				}
			case x.Data[i] * scale:
				kept++
				if want := ts[0].Diff[i] * scale; x.Diff[i] != want {
					t.Fatalf("ratio %v: kept element %d has diff %v, want %v", ratio, i, x.Diff[i], want)
				}
			default:
				t.Fatalf("ratio %v: y[%d] = %v, want 0 or %v", ratio, i, v, x.Data[i]*scale)
			}
		}
		p := float64(1 - ratio)
		frac := float64(kept) / n
		if tol := 5*math.Sqrt(p*(1-p)/n) + 1e-9; math.Abs(frac-p) > tol {
			t.Errorf("ratio %v: kept %.4f of the elements, want %.4f ± %.4f", ratio, frac, p, tol)
		}
	}
}

func TestDropoutMaskChangesBetweenForwards(t *testing.T) {
	x := randBlob([]int{1000}, 1)
	bs, ts := []*tensor.Blob{x}, []*tensor.Blob{tensor.NewBlob("top")}
	l := newTestLayer(t, &DropoutConfig{Ratio: 0.5}, Context{Phase: Train, Rand: rand.New(rand.NewPCG(1, 1))}, bs, ts)
	l.Forward(bs, ts)
	first := append([]float32(nil), ts[0].Data...)
	l.Forward(bs, ts)
	differ := 0
	for i := range first {
		if first[i] != ts[0].Data[i] {
			differ++
		}
	}
	if differ < 300 {
		t.Errorf("only %d of 1000 outputs changed between two forwards", differ)
	}
}

func TestDropoutInPlace(t *testing.T) {
	// newTestLayer gives each build the same seeded source, so both runs
	// draw the same mask.
	checkInPlaceLayer(t, inPlaceCase{cfg: &DropoutConfig{Ratio: 0.3}, shape: []int{4, 25}})
	checkInPlaceLayer(t, inPlaceCase{cfg: &DropoutConfig{Ratio: 0.3}, ctx: Context{Phase: Test}, shape: []int{4, 25}})
}

func TestDropoutBuildErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, ratio := range []float32{-0.1, 1, 1.5, float32(math.NaN())} {
		if _, err := (&DropoutConfig{Ratio: ratio}).Build(Context{Rand: r}); err == nil {
			t.Errorf("ratio %v: no error", ratio)
		}
	}
	if _, err := (&DropoutConfig{Ratio: 0.5}).Build(Context{Phase: Train}); err == nil {
		t.Error("train phase without a random source: no error")
	}
	if _, err := (&DropoutConfig{Ratio: 0.5}).Build(Context{Phase: Test}); err != nil {
		t.Errorf("test phase without a random source: %v", err)
	}
}

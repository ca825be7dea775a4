package data

import (
	"context"
	"math"
	"testing"

	"dsgd/engine/tensor"
)

func TestDummyFill(t *testing.T) {
	d := &Dummy{Name: "d", Seed: 1, Fillers: []DummyFiller{
		{Type: "constant", Value: 3},
		{Type: "uniform", Min: 2, Max: 4},
		{Type: "gaussian", Mean: 5, Std: 2},
	}}
	tops := []*tensor.Blob{{Data: make([]float32, 10)}, {Data: make([]float32, 10000)}, {Data: make([]float32, 10000)}}
	if err := d.Fill(context.Background(), tops); err != nil {
		t.Fatal(err)
	}
	for _, v := range tops[0].Data {
		if v != 3 {
			t.Fatalf("constant filler gave %v", v)
		}
	}
	var sum, sq float64
	for _, v := range tops[1].Data {
		if v < 2 || v > 4 {
			t.Fatalf("uniform filler gave %v outside [2,4]", v)
		}
	}
	for _, v := range tops[2].Data {
		sum += float64(v)
		sq += float64(v) * float64(v)
	}
	mean := sum / 10000
	std := math.Sqrt(sq/10000 - mean*mean)
	if math.Abs(mean-5) > 0.1 || math.Abs(std-2) > 0.1 {
		t.Fatalf("gaussian filler: mean %.3f std %.3f, want 5 and 2", mean, std)
	}
	if err := d.Fill(context.Background(), tops[:2]); err == nil {
		t.Fatal("Fill accepted 2 tops for 3 fillers")
	}
}

package data

import (
	"context"
	"fmt"
	"math/rand/v2"

	"dsgd/engine/tensor"
)

// DummyFiller fills one top of a DummyData layer.
type DummyFiller struct {
	// Type is "constant" (Value), "uniform" (Min..Max) or "gaussian"
	// (Mean, Std).
	Type                       string
	Value, Min, Max, Mean, Std float32
}

// Dummy is Caffe's DummyData layer as a source: it fills each top with its
// filler every batch; random ones draw from Seed.
type Dummy struct {
	// Name is the layer's name, for errors.
	Name    string
	Fillers []DummyFiller
	Seed    uint64
	rng     *rand.Rand
}

// Fill writes the next batch into tops, one filler per top.
func (d *Dummy) Fill(_ context.Context, tops []*tensor.Blob) error {
	if len(tops) != len(d.Fillers) {
		return fmt.Errorf("DummyData layer %q: %d tops but %d fillers", d.Name, len(tops), len(d.Fillers))
	}
	if d.rng == nil {
		d.rng = rand.New(rand.NewPCG(mix(d.Seed, tagSample), 0))
	}
	for i, t := range tops {
		f := d.Fillers[i]
		switch f.Type {
		case "constant":
			for j := range t.Data {
				t.Data[j] = f.Value
			}
		case "uniform":
			for j := range t.Data {
				t.Data[j] = f.Min + (f.Max-f.Min)*d.rng.Float32()
			}
		case "gaussian":
			for j := range t.Data {
				t.Data[j] = f.Mean + f.Std*float32(d.rng.NormFloat64())
			}
		default:
			return fmt.Errorf("DummyData layer %q: unknown filler %q", d.Name, f.Type)
		}
	}
	return nil
}

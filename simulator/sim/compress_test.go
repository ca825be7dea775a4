package sim

import (
	"testing"
	"time"

	"dsgd/comm/compress"
	"dsgd/protocol/scheme"
)

func powerSGD(r, warmup int) *Compression {
	return &Compression{Spec: compress.Spec{Kind: compress.PowerSGD, Rank: r}, Warmup: warmup}
}

// TestPowerSGDTraffic: PowerSGD's two allreduces carry Rank·(n+m) values
// of an n×m matrix where the plain one carries n·m; the warm-up's
// iterations run plain; blobs it cannot shrink (vectors) go plain.
func TestPowerSGDTraffic(t *testing.T) {
	model := Layered(1_000_000, 30*time.Millisecond, 1) // one 1000x1000 matrix
	for _, name := range []string{"sync-ring", "sync-tree"} {
		base := Config{Scheme: scheme.Config{Name: name, Workers: 8}, Model: model, Network: Presets["10gbe"], Iters: 10, Warmup: -1}
		plain := run(t, base)
		base.Compress = powerSGD(2, 0)
		comp := run(t, base)
		// 2·(1000+1000) = 4,000 values against 1,000,000: 250x.
		if ratio := float64(plain.Bytes) / float64(comp.Bytes); ratio < 200 || ratio > 300 {
			t.Errorf("%s: bytes %d plain, %d compressed: ratio %.1f, want about 250", name, plain.Bytes, comp.Bytes, ratio)
		}
		if comp.Comm+comp.Wait >= plain.Comm+plain.Wait {
			t.Errorf("%s: exposed communication %v compressed, %v plain", name, comp.Comm+comp.Wait, plain.Comm+plain.Wait)
		}
		base.Compress = powerSGD(2, 5)
		warm := run(t, base)
		if want := (plain.Bytes + comp.Bytes) / 2; warm.Bytes < want*9/10 || warm.Bytes > want*11/10 {
			t.Errorf("%s: half the iterations in warm-up: %d bytes per iteration, want about %d", name, warm.Bytes, want)
		}
	}
	// A layer of a weight matrix and a bias: the bias goes plain.
	lm := Model{Layers: []Layer{{Name: "ip", Forward: time.Millisecond, Backward: 2 * time.Millisecond, Params: 500*800 + 500,
		Rows: []BlobRows{{Len: 500 * 800, Rows: 500}, {Len: 500}}}}}
	s, err := newSim(Config{Scheme: scheme.Config{Name: "sync-ring", Workers: 2}, Model: lm, Compress: powerSGD(4, 0)})
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{s: s, started: 1}
	steps := s.compressed(d, scheme.Action{Op: scheme.Allreduce, R: scheme.Range{Buf: scheme.Grads, Lo: 0, Hi: lm.Params()}}, 2)
	if len(steps) != 2 || steps[0] != (exchangeStep{n: 4*500 + 500}) || steps[1] != (exchangeStep{n: 4 * 800}) {
		t.Errorf("steps %+v, want allreduces of %d and %d", steps, 4*500+500, 4*800)
	}
	for _, bad := range []Config{
		{Scheme: scheme.Config{Name: "async", Workers: 2}, Model: model, Compress: powerSGD(2, 0)},
		{Scheme: scheme.Config{Name: "sync-ring", Workers: 2}, Model: model, Compress: powerSGD(0, 0)},
		{Scheme: scheme.Config{Name: "local-sgd", Workers: 2, Interval: 4}, Model: model, Compress: powerSGD(2, 0)},
	} {
		if _, err := Run(bad); err == nil {
			t.Errorf("%s rank %d accepted", bad.Scheme.Name, bad.Compress.Spec.Rank)
		}
	}
}

// TestGatherCompressorsTraffic: top-k and sign exchange every rank's
// part by a ring allgather (each rank sends the P−1 parts it does not
// hold, its own first) — the bias too, as the trainer's Reducer does
// with any blob they shrink; bf16 moves float32 sums, as the
// uncompressed run.
func TestGatherCompressorsTraffic(t *testing.T) {
	lm := Model{Layers: []Layer{{Name: "ip", Forward: 10 * time.Millisecond, Backward: 20 * time.Millisecond, Params: 1000*1000 + 1000,
		Rows: []BlobRows{{Len: 1000 * 1000, Rows: 1000}, {Len: 1000}}}}}
	const workers = 8
	base := Config{Scheme: scheme.Config{Name: "sync-ring", Workers: workers}, Model: lm, Network: Presets["10gbe"], Iters: 10, Warmup: -1}
	plain := run(t, base)
	for _, tc := range []struct {
		spec compress.Spec
		part int // floats a rank contributes: matrix and bias
	}{
		{compress.Spec{Kind: compress.TopK, Fraction: 0.01}, 2*10000 + 2*10},
		{compress.Spec{Kind: compress.Sign}, 1 + (1000*1000+31)/32 + 1 + (1000+31)/32},
	} {
		c := base
		c.Compress = &Compression{Spec: tc.spec}
		s, err := newSim(c)
		if err != nil {
			t.Fatal(err)
		}
		steps := s.compressed(&driver{s: s, started: 1}, scheme.Action{Op: scheme.Allreduce, R: scheme.Range{Buf: scheme.Grads, Lo: 0, Hi: lm.Params()}}, workers)
		want := exchangeStep{n: workers * tc.part, gather: true}
		if len(steps) != 1 || steps[0] != want {
			t.Errorf("%v: steps %+v, want %+v", tc.spec.Kind, steps, want)
		}
		got := run(t, c)
		// A ring allgather sends P−1 parts per rank.
		wantBytes := int64(workers) * 4 * int64(workers-1) * int64(tc.part)
		if got.Bytes < wantBytes*9/10 || got.Bytes > wantBytes*11/10 {
			t.Errorf("%v: %d bytes per iteration, want about %d (plain %d)", tc.spec.Kind, got.Bytes, wantBytes, plain.Bytes)
		}
		if got.Comm+got.Wait >= plain.Comm+plain.Wait {
			t.Errorf("%v: exposed communication %v, plain %v", tc.spec.Kind, got.Comm+got.Wait, plain.Comm+plain.Wait)
		}
	}
	// A blob top-k cannot shrink (2 values: one pair is as long) goes by
	// an allreduce after the allgather.
	small := Model{Layers: []Layer{{Name: "ip", Params: 100*100 + 2, Rows: []BlobRows{{Len: 100 * 100, Rows: 100}, {Len: 2}}}}}
	s, err := newSim(Config{Scheme: scheme.Config{Name: "sync-ring", Workers: 4}, Model: small, Compress: &Compression{Spec: compress.Spec{Kind: compress.TopK, Fraction: 0.1}}})
	if err != nil {
		t.Fatal(err)
	}
	steps := s.compressed(&driver{s: s, started: 1}, scheme.Action{Op: scheme.Allreduce, R: scheme.Range{Buf: scheme.Grads, Lo: 0, Hi: small.Params()}}, 4)
	if want := []exchangeStep{{n: 4 * 2 * 1000, gather: true}, {n: 2}}; len(steps) != 2 || steps[0] != want[0] || steps[1] != want[1] {
		t.Errorf("top-k with a plain blob: steps %+v, want %+v", steps, want)
	}
	c := base
	c.Compress = &Compression{Spec: compress.Spec{Kind: compress.BF16}}
	if got := run(t, c); got.Bytes != plain.Bytes {
		t.Errorf("bf16: %d bytes per iteration, want the plain run's %d", got.Bytes, plain.Bytes)
	}
}

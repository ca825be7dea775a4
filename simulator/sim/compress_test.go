package sim

import (
	"testing"
	"time"

	"dsgd/protocol/scheme"
)

// TestPowerSGDTraffic: PowerSGD's two allreduces carry Rank·(n+m) values
// of an n×m matrix where the plain one carries n·m; the warm-up's
// iterations run plain; blobs it cannot shrink (vectors) go plain.
func TestPowerSGDTraffic(t *testing.T) {
	model := Layered(1_000_000, 30*time.Millisecond, 1) // one 1000x1000 matrix
	for _, name := range []string{"sync-ring", "sync-tree"} {
		base := Config{Scheme: scheme.Config{Name: name, Workers: 8}, Model: model, Network: Presets["10gbe"], Iters: 10, Warmup: -1}
		plain := run(t, base)
		base.Compress = &Compression{Rank: 2}
		comp := run(t, base)
		// 2·(1000+1000) = 4,000 values against 1,000,000: 250x.
		if ratio := float64(plain.Bytes) / float64(comp.Bytes); ratio < 200 || ratio > 300 {
			t.Errorf("%s: bytes %d plain, %d compressed: ratio %.1f, want about 250", name, plain.Bytes, comp.Bytes, ratio)
		}
		if comp.Comm+comp.Wait >= plain.Comm+plain.Wait {
			t.Errorf("%s: exposed communication %v compressed, %v plain", name, comp.Comm+comp.Wait, plain.Comm+plain.Wait)
		}
		base.Compress = &Compression{Rank: 2, Warmup: 5}
		warm := run(t, base)
		if want := (plain.Bytes + comp.Bytes) / 2; warm.Bytes < want*9/10 || warm.Bytes > want*11/10 {
			t.Errorf("%s: half the iterations in warm-up: %d bytes per iteration, want about %d", name, warm.Bytes, want)
		}
	}
	// A layer of a weight matrix and a bias: the bias goes plain.
	lm := Model{Layers: []Layer{{Name: "ip", Forward: time.Millisecond, Backward: 2 * time.Millisecond, Params: 500*800 + 500,
		Rows: []BlobRows{{Len: 500 * 800, Rows: 500}, {Len: 500}}}}}
	s, err := newSim(Config{Scheme: scheme.Config{Name: "sync-ring", Workers: 2}, Model: lm, Compress: &Compression{Rank: 4}})
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{s: s, started: 1}
	p, q, ok := s.compressed(d, scheme.Action{Op: scheme.Allreduce, R: scheme.Range{Buf: scheme.Grads, Lo: 0, Hi: lm.Params()}})
	if !ok || p != 4*500+500 || q != 4*800 {
		t.Errorf("P %d Q %d (%v), want %d and %d", p, q, ok, 4*500+500, 4*800)
	}
	for _, bad := range []Config{
		{Scheme: scheme.Config{Name: "async", Workers: 2}, Model: model, Compress: &Compression{Rank: 2}},
		{Scheme: scheme.Config{Name: "sync-ring", Workers: 2}, Model: model, Compress: &Compression{Rank: 0}},
		{Scheme: scheme.Config{Name: "local-sgd", Workers: 2, Interval: 4}, Model: model, Compress: &Compression{Rank: 2}},
	} {
		if _, err := Run(bad); err == nil {
			t.Errorf("%s rank %d accepted", bad.Scheme.Name, bad.Compress.Rank)
		}
	}
}

package cuda_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"dsgd/engine/cuda"
	"dsgd/engine/cuda/cudatest"
)

// TestSgemm: cuBLAS's product in fp32 against a float64 reference, for
// shapes that are not multiples of any tile, with alpha and beta; and a
// buffer's round trip.
func TestSgemm(t *testing.T) {
	g := cudatest.Open(t)
	r := rand.New(rand.NewPCG(1, 2))
	for _, sh := range [][3]int{{1, 1, 1}, {67, 45, 123}, {128, 256, 64}, {3, 500, 800}} {
		m, n, k := sh[0], sh[1], sh[2]
		a, b, c := randVec(r, m*k), randVec(r, k*n), randVec(r, m*n)
		const alpha, beta = 0.75, -0.5
		want := make([]float64, m*n)
		for i := range m {
			for j := range n {
				var s float64
				for p := range k {
					s += float64(a[i*k+p]) * float64(b[p*n+j])
				}
				want[i*n+j] = alpha*s + beta*float64(c[i*n+j])
			}
		}
		da, db, dc := upload(t, g, a), upload(t, g, b), upload(t, g, c)
		if err := g.Sgemm(m, n, k, alpha, da, db, beta, dc); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, m*n)
		if err := dc.Download(got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			// fp32 accumulation over k terms of magnitude <= 1.
			if d := math.Abs(float64(got[i]) - want[i]); d > 1e-5*float64(k)+1e-6 {
				t.Fatalf("%dx%dx%d: C[%d] = %v, want %v (TF32 would be off by about 1e-3)", m, n, k, i, got[i], want[i])
			}
		}
		for _, x := range []*cuda.Buffer{da, db, dc} {
			if err := x.Free(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := g.Alloc(0); err == nil {
		t.Error("Alloc(0) succeeded")
	}
	x := upload(t, g, []float32{1, 2, 3})
	if err := x.Upload(make([]float32, 4)); err == nil || !strings.Contains(err.Error(), "4 floats into 3") {
		t.Errorf("an oversized upload: %v", err)
	}
	if err := g.Sgemm(2, 2, 2, 1, x, x, 0, x); err == nil {
		t.Error("an Sgemm past its buffers was accepted")
	}
	x.Free()
	if _, err := cuda.Open(len(mustProbe(t).Devices), false); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("a GPU index past the last: %v", err)
	}
}

// TestSgemmPeak logs the fp32 ceiling the benchmarks report FLOP/s
// against: a large cuBLAS SGEMM.
func TestSgemmPeak(t *testing.T) {
	g := cudatest.Open(t)
	const n = 8192
	bufs := make([]*cuda.Buffer, 3)
	for i := range bufs {
		b, err := g.Alloc(n * n)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Free()
		bufs[i] = b
	}
	run := func(reps int) time.Duration {
		t0 := time.Now()
		for range reps {
			if err := g.Sgemm(n, n, n, 1, bufs[0], bufs[1], 0, bufs[2]); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.Sync(); err != nil {
			t.Fatal(err)
		}
		return time.Since(t0)
	}
	run(2) // warm-up
	const reps = 10
	d := run(reps)
	t.Logf("%s: SGEMM %d³ fp32: %.1f TFLOP/s", g.Name, n, 2*float64(n)*n*n*reps/d.Seconds()/1e12)
}

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()*2 - 1
	}
	return v
}

func upload(t *testing.T, g *cuda.GPU, v []float32) *cuda.Buffer {
	t.Helper()
	b, err := g.Alloc(len(v))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Upload(v); err != nil {
		t.Fatal(err)
	}
	return b
}

func mustProbe(t *testing.T) *cuda.Info {
	in, err := cuda.Probe()
	if err != nil {
		t.Fatal(err)
	}
	return in
}

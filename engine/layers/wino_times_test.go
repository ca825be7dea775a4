package layers

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"dsgd/engine/tensor"
)

// BenchmarkWinogradTimes prints, for ResNet-18's 3×3 stride-1 shapes at batch
// 16 on one thread, the time of each phase of dsgd's Winograd forward
// (input transform, GEMMs, output transform; min of DSGD_WINO_TIMES
// repetitions, 8 unless set). A measurement, run once: go test -run '^$'
// -bench WinogradTimes -benchtime 1x -v ./engine/layers.
func BenchmarkWinogradTimes(b *testing.B) {
	reps := 8 // DSGD_WINO_TIMES=N for more
	if v, err := strconv.Atoi(os.Getenv("DSGD_WINO_TIMES")); err == nil && v > 0 {
		reps = v
	}
	if v, err := strconv.Atoi(os.Getenv("DSGD_WINO_CHUNK")); err == nil {
		defer func(f int) { winoChunkFloats = f }(winoChunkFloats)
		winoChunkFloats = v
	}
	m := winoTile
	if v, err := strconv.Atoi(os.Getenv("DSGD_WINO_M")); err == nil {
		m = v
	}
	for _, c := range []struct{ n, c, hw int }{{16, 64, 56}, {16, 128, 28}, {16, 256, 14}, {16, 512, 7}} {
		r := rand.New(rand.NewPCG(1, 2))
		s := newWinoShape(m, c.n, c.c, c.hw, c.hw, c.c, 1)
		in, wt := randSlice(r, c.n*c.c*c.hw*c.hw, 1), randSlice(r, c.c*c.c*9, 0.05)
		out := make([]float32, c.n*c.c*s.oh*s.ow)
		a2 := s.alpha() * s.alpha()
		u := make([]float32, a2*c.c*c.c)
		var buf winoBuf
		buf.fit(&s)
		hp, wp := s.padded()
		padded := make([]float32, c.n*c.c*hp*wp)
		best := [4]time.Duration{1 << 62, 1 << 62, 1 << 62, 1 << 62}
		for range reps {
			var d [4]time.Duration
			t0 := time.Now()
			winoKernel(m, wt, c.c, c.c, 1, false, u, 0, c.c, &buf.ker)
			winoPad(&s, in, padded, 0, c.n*c.c)
			d[0] = time.Since(t0)
			for ch := 0; ch < s.chunks(c.n); ch++ {
				nt := winoTiles(&s, c.n, ch, &buf)
				a := time.Now()
				winoInput(&s, padded, &buf, nt, 0, s.c)
				b := time.Now()
				winoGemm(&s, u, &buf, nt, 0, a2)
				e := time.Now()
				winoOutput(&s, nil, &buf, buf.d, nt, out, 0, s.k)
				d[1] += b.Sub(a)
				d[2] += e.Sub(b)
				d[3] += time.Since(e)
			}
			for i := range d {
				best[i] = min(best[i], d[i])
			}
		}
		b.Logf("F(%d,3) %d×%d×%d×%d chunk %d: kernel+pad %v, input %v, GEMMs %v, output %v", m, c.n, c.c, c.hw, c.hw, s.chunk, best[0], best[1], best[2], best[3])
	}
}

// BenchmarkWinogradWeights prints, for ResNet-18's 3×3 stride-1 shapes at
// batch 16 on one thread, the time of a weights-only backward (no bottom
// diff) of a layer on dsgd's Winograd with the weights pass on the
// Winograd (winoWtsMode 1) and on oneDNN or im2col (-1), the two
// alternating, min and median of DSGD_WINO_TIMES repetitions (8 unless
// set), and the Winograd pass's phases (min): padding, transforms, GEMMs,
// back to 3×3 with the bias. A measurement, run once: go test -run '^$'
// -bench WinogradWeights -benchtime 1x -v ./engine/layers.
func BenchmarkWinogradWeights(b *testing.B) {
	reps := 8
	if v, err := strconv.Atoi(os.Getenv("DSGD_WINO_TIMES")); err == nil && v > 0 {
		reps = v
	}
	if v, err := strconv.Atoi(os.Getenv("DSGD_WINO_CHUNK")); err == nil {
		defer func(f int) { winoChunkFloats = f }(winoChunkFloats)
		winoChunkFloats = v
	}
	if v, err := strconv.Atoi(os.Getenv("DSGD_WINO_WMAX")); err == nil {
		defer func(f int) { winoWtsMaxChunk = f }(winoWtsMaxChunk)
		winoWtsMaxChunk = v
	}
	defer func(mode, wmode int) { winoMode, winoWtsMode = mode, wmode }(winoMode, winoWtsMode)
	winoMode = 1
	for _, c := range []struct{ n, c, hw int }{{16, 64, 56}, {16, 128, 28}, {16, 256, 14}, {16, 512, 7}} {
		r := rand.New(rand.NewPCG(1, 2))
		in, wt := randSlice(r, c.n*c.c*c.hw*c.hw, 1), randSlice(r, c.c*c.c*9, 0.05)
		dout := randSlice(r, c.n*c.c*c.hw*c.hw, 1)
		bias := make([]float32, c.c)
		var ls [2]Layer
		var bss, tss [2][]*tensor.Blob
		var kern [2]string
		for i, wm := range []int{-1, 1} {
			winoWtsMode = wm
			ls[i], bss[i], tss[i] = winoLayer(b, c.n, c.c, c.hw, c.hw, c.c, 1, 1, in, wt, bias)
			ls[i].Forward(bss[i], tss[i])
			copy(tss[i][0].Diff, dout)
			kern[i] = ls[i].(KernelReporter).Kernel()
		}
		times := [2][]time.Duration{}
		for range reps {
			for i := range ls {
				t0 := time.Now()
				ls[i].Backward(tss[i], []bool{false}, bss[i])
				times[i] = append(times[i], time.Since(t0))
			}
		}
		for i := range times {
			slices.Sort(times[i])
		}
		b.Logf("%d×%d×%d×%d weights pass: other engine min %v median %v (%s); Winograd min %v median %v",
			c.n, c.c, c.hw, c.hw, times[0][0], times[0][reps/2], kern[0], times[1][0], times[1][reps/2])

		// The phases, on the package functions.
		f := newWinoShape(winoTile, c.n, c.c, c.hw, c.hw, c.c, 1)
		sb := newWinoShape(winoTile, c.n, c.c, c.hw, c.hw, c.c, 1)
		s := winoWtsChunk(f, c.n)
		a2 := s.alpha() * s.alpha()
		sum := make([]float32, a2*c.c*c.c)
		hp, wp := s.padded()
		px := make([]float32, c.n*c.c*hp*wp)
		hp, wp = sb.padded()
		pdy := make([]float32, c.n*c.c*hp*wp)
		dw, db := make([]float32, c.c*c.c*9), make([]float32, c.c)
		var buf winoBuf
		var scratch []float32
		best := [4]time.Duration{1 << 62, 1 << 62, 1 << 62, 1 << 62}
		for range reps {
			var d [4]time.Duration
			t0 := time.Now()
			winoPad(&s, in, px, 0, c.n*c.c)
			winoPad(&sb, dout, pdy, 0, c.n*c.c)
			d[0] = time.Since(t0)
			for ch := 0; ch < s.chunks(c.n); ch++ {
				nt := winoWtsTiles(&s, &sb, c.n, ch, &buf)
				a := time.Now()
				winoWtsIn(&s, &sb, px, pdy, &buf, nt, 0, 2*c.c)
				e := time.Now()
				winoWtsGemm(&s, &buf, nt, sum, ch == 0, 0, a2)
				d[1] += e.Sub(a)
				d[2] += time.Since(e)
			}
			t1 := time.Now()
			winoWtsOut(&s, sum, dw, 0, c.c, &scratch)
			planeBiasGrad(dout, db, c.n, c.c, s.oh*s.ow, 0, c.c)
			d[3] = time.Since(t1)
			for i := range d {
				best[i] = min(best[i], d[i])
			}
		}
		b.Logf("  Winograd weights phases (chunk %d): pad %v, transforms %v, GEMMs %v, back to 3×3 + bias %v", s.chunk, best[0], best[1], best[2], best[3])
	}
}

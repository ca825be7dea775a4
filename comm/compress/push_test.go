package compress

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// pipe is a Pusher that keeps the last payload, as the server would
// receive it.
type pipe struct {
	last []float32
	sent int64
}

func (p *pipe) Send(_ context.Context, payload []float32) error {
	p.last = slices.Clone(payload)
	p.sent += 4 * int64(len(payload))
	return nil
}
func (p *pipe) Sent() int64 { return p.sent }

// TestPushDecode: workers push with error feedback, the server decodes
// and sums in worker order: over the steps the server's sums plus the
// workers' final residuals equal the gradients summed; warm-up pushes are
// plain; a compressed push is as long as PushFloats says; bf16 decodes to
// BF16Round of the value with its residual.
func TestPushDecode(t *testing.T) {
	const workers, steps, warmup = 3, 10, 2
	for _, spec := range []Spec{{Kind: BF16}, {Kind: TopK, Fraction: 0.05}, {Kind: Sign}} {
		t.Run(spec.String(), func(t *testing.T) {
			dec, err := NewDecoder(spec, layout, workers, warmup, 0)
			if err != nil {
				t.Fatal(err)
			}
			reds := make([]*Reducer, workers)
			pipes := make([]*pipe, workers)
			for w := range reds {
				if reds[w], err = New(spec, layout, w, workers, warmup, 0); err != nil {
					t.Fatal(err)
				}
				pipes[w] = &pipe{}
			}
			rng := rand.New(rand.NewPCG(11, 12))
			gradSum := make([]float64, layoutN)
			outSum := make([]float64, layoutN)
			c, p := spec.PushFloats(layout)
			for step := range steps {
				sum := make([]float32, layoutN)
				want := make([]float64, layoutN)
				for w := range workers {
					g := make([]float32, layoutN)
					for i := range g {
						g[i] = float32(rng.NormFloat64() * (1 + float64(i%5)))
						gradSum[i] += float64(g[i])
						want[i] += float64(g[i])
					}
					var withResidual []float32
					if spec.Kind == BF16 && step >= warmup {
						withResidual = slices.Clone(g)
						for b, bl := range layout {
							if e := reds[w].state[b].residual; e != nil {
								for j := range e {
									withResidual[bl.Off+j] += e[j]
								}
							}
						}
					}
					if err := reds[w].Push(context.Background(), 0, g, pipes[w]); err != nil {
						t.Fatal(err)
					}
					if n := len(pipes[w].last); step < warmup && n != p || step >= warmup && n != c {
						t.Fatalf("step %d: a push of %d floats, want %d (warm-up %d)", step, n, c, p)
					}
					before := slices.Clone(sum)
					err := dec.Pull(context.Background(), w, 0, sum, w > 0, func(_ context.Context, payload []float32) error {
						if len(payload) != len(pipes[w].last) {
							t.Fatalf("the decoder expects %d floats, the worker pushed %d", len(payload), len(pipes[w].last))
						}
						copy(payload, pipes[w].last)
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if withResidual != nil {
						for i := range sum {
							if got, want := sum[i]-before[i], BF16Round(withResidual[i]); w == 0 && got != want {
								t.Fatalf("value %d decoded as %g, want BF16Round(%g) = %g", i, got, withResidual[i], want)
							}
						}
					}
				}
				for i, v := range sum {
					outSum[i] += float64(v)
					if step < warmup && math.Abs(float64(v)-want[i]) > 1e-4*(1+math.Abs(want[i])) {
						t.Fatalf("warm-up step %d: value %d = %g, want %g", step, i, v, want[i])
					}
				}
			}
			for i := range gradSum {
				got := outSum[i]
				for w := range workers {
					for b, bl := range layout {
						if e := reds[w].state[b].residual; e != nil && i >= bl.Off && i < bl.Off+bl.Len() {
							got += float64(e[i-bl.Off])
						}
					}
				}
				if math.Abs(got-gradSum[i]) > 1e-3*(1+math.Abs(gradSum[i])) {
					t.Fatalf("value %d: sums pushed + residuals = %g, gradients summed %g", i, got, gradSum[i])
				}
			}
			st := reds[0].Stats()
			if st.Bytes != int64(4*c*(steps-warmup)) || st.PlainBytes != int64(4*p*warmup) {
				t.Errorf("bytes %d compressed, %d plain; want %d, %d", st.Bytes, st.PlainBytes, 4*c*(steps-warmup), 4*p*warmup)
			}
		})
	}
	if _, err := NewDecoder(Spec{Kind: PowerSGD, Rank: 2}, layout, 2, 0, 0); err == nil {
		t.Error("PowerSGD has a push decoder")
	}
}

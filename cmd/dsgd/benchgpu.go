package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"dsgd/engine/cuda"
	"dsgd/training/job"
)

// gpuBatch is each net's batch in dsgd bench --gpu (issue 21's).
var gpuBatch = map[string]int{"lenet": 64, "cifar10_quick": 100, "caffenet": 256, "googlenet": 128, "resnet18": 64}

// gpuInput is each net's synthetic input shape before its crop.
var gpuInput = map[string]string{"lenet": "C=1,H=28,W=28,classes=10", "cifar10_quick": "C=3,H=32,W=32,classes=10",
	"caffenet": "C=3,H=256,W=256,classes=1000", "googlenet": "C=3,H=256,W=256,classes=1000", "resnet18": "C=3,H=256,W=256,classes=1000"}

// runBenchGPU is dsgd bench --gpu: per net, forward+backward on one
// synthetic batch on the GPU (params and gradients resident there, as the
// peer's are), interleaved with PyTorch's on the same GPU in the same
// invocation; the FLOP rate against the GPU's fp32 ceiling, a large
// cuBLAS SGEMM measured here.
func runBenchGPU(ctx context.Context, c benchConfig, w io.Writer) error {
	m := modelFlags{gpu: c.gpu, tf32: c.tf32, fastest: c.fastest}
	if err := m.checkGPU("bench", w); err != nil {
		return err
	}
	if len(m.gpuIDs) != 1 {
		return fmt.Errorf("--gpu %s: bench times one GPU", c.gpu)
	}
	g, err := cuda.Open(m.gpuIDs[0], c.tf32)
	if err != nil {
		return err
	}
	ceiling, err := sgemmCeiling(g)
	g.Close()
	if err != nil {
		return err
	}
	math := "fp32 (TF32 off on both sides)"
	if c.tf32 {
		math = "TF32 allowed on both sides"
	}
	if c.fastest {
		math += "; dsgd's convolutions: cuDNN's fastest algorithms"
	} else {
		math += "; dsgd's convolutions: cuDNN's fastest deterministic algorithms"
	}
	fmt.Fprintf(w, "bench: %s, %s; cuBLAS SGEMM 8192³ ceiling %.1f TFLOP/s\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), math, ceiling/1e12)
	type row struct {
		name         string
		batch        int
		dsgd, peer   []float64
		flops        float64
		fallback     int
		fwdMS, bwdMS float64
	}
	var rows []*row
	for _, n := range c.nets {
		b := gpuBatch[n.name]
		iters, warmup := max(n.iters, 20), max(n.warmup, 5)
		r := &row{name: n.name, batch: b}
		rows = append(rows, r)
		for rep := 1; rep <= c.reps; rep++ {
			mm := modelFlags{model: n.name, net: n.net, netOnly: n.net != "", threads: 4, seed: c.seed, batch: b,
				data: fmt.Sprintf("synthetic:N=%d,%s", b, gpuInput[n.name]), gpu: c.gpu, gpuIDs: m.gpuIDs, tf32: c.tf32, fastest: c.fastest}
			j, net, err := job.TrainNet(ctx, mm.options(), mm.threads)
			if err != nil {
				return fmt.Errorf("%s: %w", n.name, err)
			}
			ex, done, err := onGPU(&mm, net, true)
			if err != nil {
				j.Close()
				return fmt.Errorf("%s: %w", n.name, err)
			}
			if rep == 1 {
				fmt.Fprintf(w, "\n%s, batch %d, %d timed iterations after %d:\n", n.name, b, iters, warmup)
				printGPUNet(w, ex)
				r.fallback = len(ex.Fallback)
			}
			t, err := timeGPU(net, warmup, iters)
			r.flops = iterFlops(j.Train.Spec, net)
			done()
			j.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", n.name, err)
			}
			st := summarize(t.wall)
			r.dsgd = append(r.dsgd, st.median)
			r.fwdMS, r.bwdMS = summarize(t.fwd).median, summarize(t.bwd).median
			fmt.Fprintf(w, "  rep %d  dsgd  median %9.3f ms (forward %.3f, backward %.3f)\n", rep, st.median, r.fwdMS, r.bwdMS)
			script := c.peerNets
			if n.name == "lenet" {
				script = c.peerGPUs
			}
			if script == "none" {
				continue
			}
			args := []string{script, "--model", n.name, "--batch", fmt.Sprint(b), "--threads", "4", "--iters", fmt.Sprint(iters), "--warmup", fmt.Sprint(warmup), "--device", "cuda"}
			if c.tf32 {
				args = append(args, "--tf32")
			}
			out, err := runPeerScript(ctx, c.python, args)
			if err != nil {
				return fmt.Errorf("%s: %w", n.name, err)
			}
			ps, err := parsePeerNet(script, out)
			if err != nil {
				return err
			}
			r.peer = append(r.peer, ps.median)
			fmt.Fprintf(w, "  rep %d  peer  median %9.3f ms\n", rep, ps.median)
		}
	}
	fmt.Fprintf(w, "\n| net | batch | dsgd ms | PyTorch ms | ratio | dsgd images/s | PyTorch images/s | GFLOP/iter | dsgd TFLOP/s | %% of SGEMM | layers on the CPU |\n")
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		d := median(r.dsgd)
		peer, ratio, pimg := "-", "-", "-"
		if len(r.peer) > 0 {
			p := median(r.peer)
			peer, ratio, pimg = msRange(r.peer), fmt.Sprintf("%.2f", d/p), fmt.Sprintf("%.0f", float64(r.batch)/p*1e3)
		}
		rate := r.flops / (d / 1e3)
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %.0f | %s | %.1f | %.1f | %.0f%% | %d |\n", r.name, r.batch, msRange(r.dsgd), peer, ratio,
			float64(r.batch)/d*1e3, pimg, r.flops/1e9, rate/1e12, 100*rate/ceiling, r.fallback)
	}
	return nil
}

// sgemmCeiling measures the GPU's float32 GEMM rate on 8192³ products, the
// best of three timed runs of five after a warm-up.
func sgemmCeiling(g *cuda.GPU) (float64, error) {
	const n = 8192
	var bufs [3]cuda.Ptr
	for i := range bufs {
		p, err := g.Malloc(n * n)
		if err != nil {
			return 0, err
		}
		defer g.MFree(p)
		if err := g.Fill(p, n*n, 0.5+float32(i)/8); err != nil {
			return 0, err
		}
		bufs[i] = p
	}
	best := 0.0
	for rep := range 4 {
		t0 := time.Now()
		for range 5 {
			if err := g.Gemm(false, false, n, n, n, 1, bufs[0], n, bufs[1], n, 0, bufs[2], n); err != nil {
				return 0, err
			}
		}
		if err := g.Sync(); err != nil {
			return 0, err
		}
		if rep > 0 {
			best = max(best, 5*2*float64(n)*n*n/time.Since(t0).Seconds())
		}
	}
	return best, nil
}

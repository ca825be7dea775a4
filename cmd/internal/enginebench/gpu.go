package enginebench

import (
	"context"
	"fmt"
	"io"
	"time"

	"dsgd/engine/cuda"
	"dsgd/engine/gpunet"
	"dsgd/engine/model"
	"dsgd/training/job"
)

// gpuBatch is each net's batch in dsgd bench --gpu (issue 21's).
var gpuBatch = map[string]int{"lenet": 64, "cifar10_quick": 100, "caffenet": 256, "googlenet": 128, "resnet18": 64}

// gpuInput is each net's synthetic input shape before its crop.
var gpuInput = map[string]string{"lenet": "C=1,H=28,W=28,classes=10", "cifar10_quick": "C=3,H=32,W=32,classes=10",
	"caffenet": "C=3,H=256,W=256,classes=1000", "googlenet": "C=3,H=256,W=256,classes=1000", "resnet18": "C=3,H=256,W=256,classes=1000"}

// RunGPU is dsgd bench --gpu: per net, forward+backward on one
// synthetic batch on the GPU c.GPUIDs[0] (params and gradients resident
// there, as the peer's are), interleaved with PyTorch's on the same GPU in
// the same invocation; the FLOP rate against the GPU's fp32 ceiling, a
// large cuBLAS SGEMM measured here.
func RunGPU(ctx context.Context, c Config, w io.Writer) error {
	g, err := cuda.Open(c.GPUIDs[0], c.TF32)
	if err != nil {
		return err
	}
	ceiling, err := sgemmCeiling(g)
	g.Close()
	if err != nil {
		return err
	}
	math := "fp32 (TF32 off on both sides)"
	if c.TF32 {
		math = "TF32 allowed on both sides"
	}
	if c.Fastest {
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
	for _, n := range c.Nets {
		b := gpuBatch[n.Name]
		iters, warmup := max(n.Iters, 20), max(n.Warmup, 5)
		r := &row{name: n.Name, batch: b}
		rows = append(rows, r)
		for rep := 1; rep <= c.Reps; rep++ {
			o := job.Options{Model: n.Name, Net: n.File, NetOnly: n.File != "", Seed: c.Seed, Batch: b,
				Data: fmt.Sprintf("synthetic:N=%d,%s", b, gpuInput[n.Name])}
			j, net, err := job.TrainNet(ctx, o, 4)
			if err != nil {
				return fmt.Errorf("%s: %w", n.Name, err)
			}
			ex, done, err := OnGPU(GPU{Flag: c.GPU, ID: c.GPUIDs[0], TF32: c.TF32, Fastest: c.Fastest, Seed: c.Seed}, net, true)
			if err != nil {
				j.Close()
				return fmt.Errorf("%s: %w", n.Name, err)
			}
			if rep == 1 {
				fmt.Fprintf(w, "\n%s, batch %d, %d timed iterations after %d:\n", n.Name, b, iters, warmup)
				PrintGPUNet(w, ex)
				r.fallback = len(ex.Fallback)
			}
			t, err := TimeGPU(net, warmup, iters)
			r.flops = iterFlops(j.Train.Spec, net)
			done()
			j.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", n.Name, err)
			}
			st := Summarize(t.Wall)
			r.dsgd = append(r.dsgd, st.Median)
			r.fwdMS, r.bwdMS = Summarize(t.Fwd).Median, Summarize(t.Bwd).Median
			fmt.Fprintf(w, "  rep %d  dsgd  median %9.3f ms (forward %.3f, backward %.3f)\n", rep, st.Median, r.fwdMS, r.bwdMS)
			script := c.PeerNets
			if n.Name == "lenet" {
				script = c.PeerLeNetGPU
			}
			if script == "none" {
				continue
			}
			args := []string{script, "--model", n.Name, "--batch", fmt.Sprint(b), "--threads", "4", "--iters", fmt.Sprint(iters), "--warmup", fmt.Sprint(warmup), "--device", "cuda"}
			if c.TF32 {
				args = append(args, "--tf32")
			}
			out, err := runPeerScript(ctx, c.Python, args)
			if err != nil {
				return fmt.Errorf("%s: %w", n.Name, err)
			}
			ps, err := parsePeerNet(script, out)
			if err != nil {
				return err
			}
			r.peer = append(r.peer, ps.Median)
			fmt.Fprintf(w, "  rep %d  peer  median %9.3f ms\n", rep, ps.Median)
		}
	}
	fmt.Fprintf(w, "\n| net | batch | dsgd ms | PyTorch ms | ratio | dsgd images/s | PyTorch images/s | GFLOP/iter | dsgd TFLOP/s | %% of SGEMM | layers on the CPU |\n")
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		d := Median(r.dsgd)
		peer, ratio, pimg := "-", "-", "-"
		if len(r.peer) > 0 {
			p := Median(r.peer)
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

// GPU is the GPU a net runs on and its math, as the commands' --gpu,
// --tf32, --gpu-fastest and --seed give them.
type GPU struct {
	Flag    string // --gpu as given, for errors
	ID      int    // the device, checked
	TF32    bool   // TF32 tensor cores allowed for float32 products
	Fastest bool   // cuDNN's fastest algorithms, deterministic or not
	Seed    int64  // the executor's seed (at least 1 is used)
}

// OnGPU opens GPU g and runs net there (resident: its params and
// gradients stay on the device, for timing the passes alone). The
// returned close gives both back. `dsgd time --gpu` uses it too.
func OnGPU(g GPU, net *model.Net, resident bool) (*gpunet.Net, func(), error) {
	dev, err := cuda.Open(g.ID, g.TF32)
	if err != nil {
		return nil, nil, fmt.Errorf("--gpu %s: %w", g.Flag, err)
	}
	dev.SetFastest(g.Fastest)
	ex, err := gpunet.New(dev, net, gpunet.Options{Seed: uint64(max(g.Seed, 1)), Resident: resident})
	if err != nil {
		dev.Close()
		return nil, nil, fmt.Errorf("--gpu %s: %w", g.Flag, err)
	}
	return ex, func() { ex.Close(); dev.Close() }, nil
}

// GPUTimes are the GPU passes' times per iteration, in milliseconds:
// forward, backward and both.
type GPUTimes struct{ Fwd, Bwd, Wall []float64 }

// TimeGPU runs warmup untimed iterations of net's forward and backward
// passes (on its executor), then iters timed ones; each pass ends with
// the GPU idle (the outputs or the gradients back, or a wait).
func TimeGPU(net *model.Net, warmup, iters int) (GPUTimes, error) {
	var t GPUTimes
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for i := range warmup + iters {
		t0 := time.Now()
		net.Forward()
		t1 := time.Now()
		net.Backward()
		t2 := time.Now()
		if err := net.Err(); err != nil {
			return t, err
		}
		if i >= warmup {
			t.Fwd, t.Bwd, t.Wall = append(t.Fwd, ms(t1.Sub(t0))), append(t.Bwd, ms(t2.Sub(t1))), append(t.Wall, ms(t2.Sub(t0)))
		}
	}
	return t, nil
}

// PrintGPUNet says where each layer runs and which algorithms cuDNN chose.
func PrintGPUNet(w io.Writer, ex *gpunet.Net) {
	if len(ex.Fallback) > 0 {
		fmt.Fprintf(w, "gpu: on the CPU, with their blobs copied across: %v\n", ex.Fallback)
	} else {
		fmt.Fprintln(w, "gpu: every layer on the GPU")
	}
	if len(ex.Fused) > 0 {
		fmt.Fprintf(w, "gpu: %d layers joined to the BatchNorm before them (one pass each way for BatchNorm+Scale+ReLU)\n", len(ex.Fused))
	}
	for _, a := range ex.Algos {
		fmt.Fprintf(w, "gpu: %s\n", a)
	}
}

// TimeOnGPU is dsgd time --gpu: it times net's forward and backward
// passes on GPU g, its params and gradients resident there as Caffe's
// time keeps them, and writes the table to w: the device and its math,
// the passes after warmup iterations, then each layer, the GPU waited
// for after every layer (the GPU runs a pass's layers asynchronously, so
// the passes' times are not the sum of the layers').
func TimeOnGPU(w io.Writer, g GPU, net *model.Net, warmup, iters int) error {
	ex, done, err := OnGPU(g, net, true)
	if err != nil {
		return err
	}
	defer done()
	math := "fp32"
	if g.TF32 {
		math = "TF32 tensor cores allowed for float32 products"
	}
	algos := "cuDNN's fastest deterministic convolution algorithms"
	if g.Fastest {
		algos = "cuDNN's fastest convolution algorithms"
	}
	fmt.Fprintf(w, "gpu: %s; %s; %s\n", ex.Device(), math, algos)
	PrintGPUNet(w, ex)
	t, err := TimeGPU(net, warmup, iters)
	if err != nil {
		return err
	}
	f, b, all := Summarize(t.Fwd), Summarize(t.Bwd), Summarize(t.Wall)
	// Then each layer: the same iterations again, waiting for the GPU
	// after every layer.
	ex.SetTiming(true)
	if _, err := TimeGPU(net, 0, iters); err != nil {
		return err
	}
	names, lf, lb := ex.LayerTimes()
	perIter := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(iters) }
	fmt.Fprintf(w, "\nper layer, the GPU waited for after each (ms per iteration):\n  %-28s %9s %9s\n", "layer", "forward", "backward")
	var sf, sb time.Duration
	for i, n := range names {
		fmt.Fprintf(w, "  %-28s %9.3f %9.3f\n", n, perIter(lf[i]), perIter(lb[i]))
		sf, sb = sf+lf[i], sb+lb[i]
	}
	fmt.Fprintf(w, "  %-28s %9.3f %9.3f\n", "total", perIter(sf), perIter(sb))
	fmt.Fprintf(w, "\naverage over %d iterations (after %d warm-up) on the GPU, ms (median, mean, p95):\n", iters, warmup)
	fmt.Fprintf(w, "  forward           %9.3f %9.3f %9.3f\n", f.Median, f.Mean, f.P95)
	fmt.Fprintf(w, "  backward          %9.3f %9.3f %9.3f\n", b.Median, b.Mean, b.P95)
	fmt.Fprintf(w, "forward-backward: %.3f ms per iteration (wall, median)\n", all.Median)
	return nil
}

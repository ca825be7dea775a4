package main

import (
	"fmt"
	"io"
	"time"

	"dsgd/engine/cuda"
	"dsgd/engine/gpunet"
	"dsgd/engine/model"
)

// onGPU opens the first of m's GPUs and runs net there (resident: its
// params and gradients stay on the device, for timing the passes alone).
// The returned close gives both back.
func onGPU(m *modelFlags, net *model.Net, resident bool) (*gpunet.Net, func(), error) {
	g, err := cuda.Open(m.gpuIDs[0], m.tf32)
	if err != nil {
		return nil, nil, fmt.Errorf("--gpu %s: %w", m.gpu, err)
	}
	g.SetFastest(m.fastest)
	ex, err := gpunet.New(g, net, gpunet.Options{Seed: uint64(max(m.seed, 1)), Resident: resident})
	if err != nil {
		g.Close()
		return nil, nil, fmt.Errorf("--gpu %s: %w", m.gpu, err)
	}
	return ex, func() { ex.Close(); g.Close() }, nil
}

// gpuTimes are the GPU passes' times per iteration, in milliseconds.
type gpuTimes struct{ fwd, bwd, wall []float64 }

// timeGPU runs warmup untimed iterations of net's forward and backward
// passes (on its executor), then iters timed ones; each pass ends with
// the GPU idle (the outputs or the gradients back, or a wait).
func timeGPU(net *model.Net, warmup, iters int) (gpuTimes, error) {
	var t gpuTimes
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
			t.fwd, t.bwd, t.wall = append(t.fwd, ms(t1.Sub(t0))), append(t.bwd, ms(t2.Sub(t1))), append(t.wall, ms(t2.Sub(t0)))
		}
	}
	return t, nil
}

// printGPUNet says where each layer runs and which algorithms cuDNN chose.
func printGPUNet(w io.Writer, ex *gpunet.Net) {
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

// timeOnGPU is dsgd time --gpu: the net's forward and backward passes on
// the GPU, its params and gradients resident there as Caffe's time keeps
// them. The GPU runs a pass's layers asynchronously, so the times are the
// passes', not each layer's.
func timeOnGPU(m *modelFlags, net *model.Net, warmup, iters int, w io.Writer) error {
	ex, done, err := onGPU(m, net, true)
	if err != nil {
		return err
	}
	defer done()
	math := "fp32"
	if m.tf32 {
		math = "TF32 tensor cores allowed for float32 products"
	}
	algos := "cuDNN's fastest deterministic convolution algorithms"
	if m.fastest {
		algos = "cuDNN's fastest convolution algorithms"
	}
	fmt.Fprintf(w, "gpu: %s; %s; %s\n", ex.Device(), math, algos)
	printGPUNet(w, ex)
	t, err := timeGPU(net, warmup, iters)
	if err != nil {
		return err
	}
	f, b, all := summarize(t.fwd), summarize(t.bwd), summarize(t.wall)
	// Then each layer: the same iterations again, waiting for the GPU
	// after every layer.
	ex.SetTiming(true)
	if _, err := timeGPU(net, 0, iters); err != nil {
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
	fmt.Fprintf(w, "  forward           %9.3f %9.3f %9.3f\n", f.median, f.mean, f.p95)
	fmt.Fprintf(w, "  backward          %9.3f %9.3f %9.3f\n", b.median, b.mean, b.p95)
	fmt.Fprintf(w, "forward-backward: %.3f ms per iteration (wall, median)\n", all.median)
	return nil
}

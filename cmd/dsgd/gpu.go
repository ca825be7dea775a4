package main

import (
	"fmt"
	"io"
	"time"

	"dsgd/cmd/internal/enginebench"
	"dsgd/engine/model"
)

// gpuSpec is the GPU the flags choose (after checkGPU), for
// enginebench.OnGPU.
func (m *modelFlags) gpuSpec() enginebench.GPU {
	return enginebench.GPU{Flag: m.gpu, ID: m.gpuIDs[0], TF32: m.tf32, Fastest: m.fastest, Seed: m.seed}
}

// timeOnGPU is dsgd time --gpu: the net's forward and backward passes on
// the GPU, its params and gradients resident there as Caffe's time keeps
// them. The GPU runs a pass's layers asynchronously, so the times are the
// passes', not each layer's.
func timeOnGPU(m *modelFlags, net *model.Net, warmup, iters int, w io.Writer) error {
	ex, done, err := enginebench.OnGPU(m.gpuSpec(), net, true)
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
	enginebench.PrintGPUNet(w, ex)
	t, err := enginebench.TimeGPU(net, warmup, iters)
	if err != nil {
		return err
	}
	f, b, all := enginebench.Summarize(t.Fwd), enginebench.Summarize(t.Bwd), enginebench.Summarize(t.Wall)
	// Then each layer: the same iterations again, waiting for the GPU
	// after every layer.
	ex.SetTiming(true)
	if _, err := enginebench.TimeGPU(net, 0, iters); err != nil {
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

package main

import (
	"fmt"
	"io"

	"dsgd/comm/compress"
	"dsgd/training/train"
)

// printCompressHeader writes the header's line on the gradient
// compressor: which runs, after how many plain iterations, and what one
// compressed iteration hands to the collectives per worker against the
// float32 gradients.
func printCompressHeader(w io.Writer, tr *train.Trainer, cfg train.Config) {
	if !cfg.Compress.Gradient() {
		return
	}
	c, p := tr.CompressFloats()
	ratio := 0.0
	if c > 0 {
		ratio = float64(p) / float64(c)
	}
	if cfg.Info().ServerUpdates {
		fmt.Fprintf(w, "dsgd: --compress %s with error feedback after %d plain iterations (--compress-warmup): each worker pushes %d values per iteration to the server instead of %d float32 gradients (%.1fx fewer)\n", cfg.Compress, cfg.CompressWarmup, c, p, ratio)
		return
	}
	fmt.Fprintf(w, "dsgd: --compress %s with error feedback after %d plain iterations (--compress-warmup): each worker hands the collectives %d values per iteration instead of %d float32 gradients (%.1fx fewer)", cfg.Compress, cfg.CompressWarmup, c, p, ratio)
	switch cfg.Compress.Kind {
	case compress.BF16:
		fmt.Fprint(w, "; bf16 values still travel as float32, so the wire carries as much")
	case compress.TopK, compress.Sign:
		fmt.Fprintf(w, "; %s's values travel by an allgather, whose bytes grow with the workers", cfg.Compress.Kind)
	}
	fmt.Fprintln(w)
}

// printCompressed writes what worker 0's compressor sent: bytes per
// compressed and per plain iteration as its transport counted them, and
// their ratio.
func printCompressed(w io.Writer, res *train.Result, cfg train.Config) {
	if !cfg.Compress.Gradient() || res == nil {
		return
	}
	st := res.Compress
	plainIters := res.Iters - res.CompressIters
	if st.Bytes < 0 {
		fmt.Fprintf(w, "compress: %s over shared memory or MPI's own collectives: the bytes are not counted (%d values handed to the collectives per compressed iteration)\n", cfg.Compress, perIter(st.Floats, res.CompressIters))
		return
	}
	fmt.Fprintf(w, "compress: %s: worker 0 sent %d bytes per compressed iteration (%d iterations)", cfg.Compress, perIter(st.Bytes, res.CompressIters), res.CompressIters)
	if plainIters > 0 && st.PlainBytes > 0 {
		pb := perIter(st.PlainBytes, plainIters)
		fmt.Fprintf(w, ", %d per plain float32 iteration (%d)", pb, plainIters)
		if cb := perIter(st.Bytes, res.CompressIters); cb > 0 {
			fmt.Fprintf(w, ": %.1fx fewer bytes", float64(pb)/float64(cb))
		}
	}
	fmt.Fprintln(w)
}

func perIter(total int64, iters int) int64 {
	if iters <= 0 {
		return 0
	}
	return total / int64(iters)
}

// netFlag names the flag that chose the TRAIN net, for errors.
func (m *modelFlags) netFlag() string {
	switch {
	case m.solver != "":
		return "the net of --solver " + m.solver
	case m.net != "":
		return "--net " + m.net
	case m.model != "":
		return "--model " + m.model
	}
	return "the default net"
}

package train

import (
	"fmt"

	"dsgd/comm/compress"
	"dsgd/engine/model"
	"dsgd/protocol/scheme"
)

// CompressRefusal says why a gradient compressor (Config.Compress)
// cannot run with cfg, naming the Config fields that clash, or returns
// nil. A compressor needs float32 sums (Exact false) and a scheme whose
// workers allreduce their gradients, or push them to sync-ps's server in
// one message (not PowerSGD).
func CompressRefusal(cfg Config) error {
	c := cfg.Compress
	if !c.Gradient() {
		return nil
	}
	name := cfg.Named()
	switch {
	case cfg.Exact:
		return fmt.Errorf("Config.Compress %s with Config.Exact: exact sums cannot be compressed; use float sums (Config.Exact false)", c)
	case cfg.CompressWarmup < 0:
		return fmt.Errorf("Config.CompressWarmup %d is negative", cfg.CompressWarmup)
	}
	in, _ := scheme.Lookup(name)
	switch {
	case in.GradAllreduce:
		if max(cfg.Workers, 1) == 1 {
			return fmt.Errorf("Config.Compress %s with Config.Workers 1 (Config.Name %s): one worker exchanges nothing to compress", c, name)
		}
		return nil
	case in.AveragesGrads:
		if localSGDAveragesGrads(cfg) {
			return nil
		}
		if cfg.Interval > 1 {
			return fmt.Errorf("Config.Compress %s with Config.Name %s Config.Interval %d: %s then averages weights, not gradients; compression is for the gradient exchange (Config.Interval 1, or sync-ring, sync-tree, overlap)", c, name, cfg.Interval, name)
		}
		return fmt.Errorf("Config.Compress %s with Config.Name %s: with a %s solver (or clip_gradients) %s averages weights, not gradients; use sync-ring, sync-tree or overlap", c, name, cfg.Solver.Type, name)
	case in.ServerUpdates:
		if c.Pushable() {
			return nil
		}
		return fmt.Errorf("Config.Compress %s with Config.Name %s: PowerSGD needs two rounds of sums among the workers, and a worker's push to the parameter server is one message (bf16, topk:F and sign compress it); use sync-ring, sync-tree or overlap", c, name)
	}
	return fmt.Errorf("Config.Compress %s with Config.Name %s: %s exchanges weights or talks to a center, not a gradient allreduce; compression is for sync-ring, sync-tree, overlap and local-sgd Config.Interval 1", c, name, name)
}

// compressBlocks is the net's parameter blocks as the compressor sees
// them: each a matrix of its first axis against the rest.
func compressBlocks(bs []model.Block) []compress.Block {
	out := make([]compress.Block, 0, len(bs))
	for _, b := range bs {
		n := b.Shape.Count()
		rows := 1
		if len(b.Shape) >= 2 && b.Shape[0] > 0 {
			rows = b.Shape[0]
		}
		out = append(out, compress.Block{Off: b.Off, Rows: rows, Cols: n / rows})
	}
	return out
}

// CompressFloats is what one compressed iteration hands to the
// collectives per worker, in floats, against the float32 gradients
// uncompressed, for the header (zero without a gradient compressor).
func (t *Trainer) CompressFloats() (compressed, plain int) {
	if !t.cfg.Compress.Gradient() || t.net == nil {
		return 0, 0
	}
	if t.schemeConfig(t.start).Info().ServerUpdates {
		return t.cfg.Compress.PushFloats(compressBlocks(t.net.Blocks()))
	}
	return t.cfg.Compress.Floats(compressBlocks(t.net.Blocks()))
}

// CompressNothing refuses a compressor (Config.Compress) that would
// leave every block of tr's net as it is (a PowerSGD rank too large for
// every weight matrix, a top-k fraction whose pairs outweigh every
// block): the run would be plain float32 under another name. net names
// the net in the refusal.
func CompressNothing(tr *Trainer, cfg Config, net string) error {
	if !cfg.Compress.Gradient() || cfg.Compress.Kind == compress.BF16 {
		return nil
	}
	c, p := tr.CompressFloats()
	if c < p {
		return nil
	}
	why := "no block has more values than its pairs would take (2·⌈F·n⌉ < n)"
	switch cfg.Compress.Kind {
	case compress.PowerSGD:
		why = fmt.Sprintf("the rank is too large for every weight matrix (R·(rows+cols) must be below rows·cols); lower R below %d", cfg.Compress.Rank)
	case compress.Sign:
		why = "every block is too small"
	}
	return fmt.Errorf("Config.Compress %s with %s: nothing to compress: %s", cfg.Compress, net, why)
}

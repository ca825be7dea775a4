package sim

import (
	"fmt"
	"math"

	"dsgd/comm/compress"
	"dsgd/protocol/scheme"
)

// Compression is dsgd train's --compress as the simulator models it: the
// collectives that carry a compressed exchange of gradients, on each
// weight blob's real shape, with the blobs the compressor leaves alone
// (compress.Spec.Compressible) summed plain.
//
//   - PowerSGD of rank R (Vogels et al. 2019): two allreduces per
//     exchange, of the P factors (with the plain blobs) and of the Q
//     factors.
//   - top-k and sign: each rank's index/value pairs (sign: packed signs
//     and a scale per blob) reach every rank by one ring allgather, then
//     the plain blobs go by an allreduce.
//   - bf16 sums travel as float32, so its allreduce is the uncompressed
//     one.
//
// The compressors' own arithmetic (the factors' products, selecting the
// largest entries, the error feedback) is not modelled: its compute is
// small beside a layer's GEMMs, and the traffic is what the scheme
// trades. Warmup is the iterations of plain allreduces first.
type Compression struct {
	Spec   compress.Spec
	Warmup int
}

// check refuses a compression the run cannot use.
func (c *Compression) check(cfg Config, sc scheme.Config) error {
	if c == nil {
		return nil
	}
	switch k := c.Spec.Kind; {
	case k == compress.PowerSGD && c.Spec.Rank < 1:
		return fmt.Errorf("sim: PowerSGD rank %d; want at least 1", c.Spec.Rank)
	case k == compress.TopK && !(c.Spec.Fraction > 0 && c.Spec.Fraction <= 1):
		return fmt.Errorf("sim: top-k fraction %g; want one in (0, 1]", c.Spec.Fraction)
	case k != compress.PowerSGD && k != compress.TopK && k != compress.Sign && k != compress.BF16:
		return fmt.Errorf("sim: compression %v is not modelled (powersgd, topk, sign, bf16)", k)
	case c.Warmup < 0:
		return fmt.Errorf("sim: compression warm-up %d is negative", c.Warmup)
	case cfg.Exact != nil:
		return fmt.Errorf("sim: compression with exact arithmetic: the simulator moves no compressed data")
	}
	for _, l := range cfg.Model.Layers {
		n := 0
		for _, b := range l.Rows {
			n += b.Len
		}
		if l.Rows != nil && n != l.Params {
			return fmt.Errorf("sim: layer %s: its blobs hold %d values, its params %d", l.Name, n, l.Params)
		}
	}
	switch in := sc.Info(); {
	case in.GradAllreduce && sc.Workers > 1:
	case in.AveragesGrads:
		if sc.Interval > 1 {
			return fmt.Errorf("sim: a compressor acts on gradients; local-sgd with interval %d averages weights", sc.Interval)
		}
	default:
		return fmt.Errorf("sim: a compressor replaces the allreduce of gradients; %s has none (sync-ring, sync-tree, overlap, local-sgd with interval 1)", sc.Name)
	}
	return nil
}

// exchangeStep is one collective of a compressed exchange: an allreduce
// of n floats, or an allgather of n (every rank's part together).
type exchangeStep struct {
	n      int
	gather bool
}

// compressed returns the collectives that replace a's allreduce of
// gradients among size ranks, or nil to run it as it is: no compression,
// another buffer, the warm-up, bf16, or nothing to compress.
func (s *sim) compressed(d *driver, a scheme.Action, size int) []exchangeStep {
	c := s.cfg.Compress
	if c == nil || c.Spec.Kind == compress.BF16 || a.Op != scheme.Allreduce || a.R.Buf != scheme.Grads || d.started <= c.Warmup {
		return nil
	}
	off := 0
	plain, p, q, part := 0, 0, 0, 0
	for _, l := range s.cfg.Model.Layers {
		if l.Params == 0 {
			continue
		}
		blobs := l.Rows
		if blobs == nil {
			n := int(math.Round(math.Sqrt(float64(l.Params))))
			blobs = []BlobRows{{Len: l.Params, Rows: max(n, 1)}}
		}
		for _, b := range blobs {
			lo, hi := off, off+b.Len
			off = hi
			in := min(hi, a.R.Hi) - max(lo, a.R.Lo)
			blk := compress.Block{Rows: b.Rows, Cols: 1}
			if b.Rows > 0 && b.Len%b.Rows == 0 {
				blk.Cols = b.Len / b.Rows
			} else {
				blk.Rows = b.Len
			}
			switch {
			case in <= 0:
			case in < b.Len || !c.Spec.Compressible(blk):
				plain += in // a part of a blob, or one left alone
			case c.Spec.Kind == compress.PowerSGD:
				p += c.Spec.Rank * blk.Rows
				q += c.Spec.Rank * blk.Cols
			default:
				f, _ := c.Spec.Floats([]compress.Block{blk})
				part += f
			}
		}
	}
	switch {
	case q > 0:
		return []exchangeStep{{n: p + plain}, {n: q}}
	case part > 0 && plain > 0:
		return []exchangeStep{{n: size * part, gather: true}, {n: plain}}
	case part > 0:
		return []exchangeStep{{n: size * part, gather: true}}
	}
	return nil
}

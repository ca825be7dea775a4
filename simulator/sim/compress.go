package sim

import (
	"fmt"
	"math"

	"dsgd/protocol/scheme"
)

// Compression is dsgd train's --compress as the simulator models it:
// PowerSGD of rank Rank (Vogels et al. 2019) on every weight matrix
// whose factors are smaller than it (Rank·(n+m) < n·m), the rest sent
// plain; two allreduces per exchange, of the P factors (with the plain
// blocks) and of the Q factors. The factors' matrix products and the
// error feedback are not modelled: their compute is small beside a
// layer's (a rank-R product against the layer's own GEMMs) and the
// traffic is what the scheme trades. Warmup is the iterations of plain
// allreduces first.
type Compression struct {
	Rank   int
	Warmup int
}

// check refuses a compression the run cannot use.
func (c *Compression) check(cfg Config, sc scheme.Config) error {
	if c == nil {
		return nil
	}
	switch {
	case c.Rank < 1:
		return fmt.Errorf("sim: PowerSGD rank %d; want at least 1", c.Rank)
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
	switch sc.Name {
	case "sync-ring", "sync-tree", "overlap":
	case "local-sgd":
		if sc.Interval > 1 {
			return fmt.Errorf("sim: PowerSGD compresses gradients; local-sgd with interval %d averages weights", sc.Interval)
		}
	default:
		return fmt.Errorf("sim: PowerSGD compresses the allreduce of gradients; %s has none (sync-ring, sync-tree, overlap, local-sgd with interval 1)", sc.Name)
	}
	return nil
}

// compressed returns the lengths of the P and Q allreduces that replace
// a's allreduce of gradients, or ok false to run it as it is: no
// compression, another buffer, the warm-up, or nothing to compress.
func (s *sim) compressed(d *driver, a scheme.Action) (p, q int, ok bool) {
	c := s.cfg.Compress
	if c == nil || a.Op != scheme.Allreduce || a.R.Buf != scheme.Grads || d.started <= c.Warmup {
		return 0, 0, false
	}
	off := 0
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
			switch {
			case in <= 0:
			case in < b.Len || b.Rows <= 0 || b.Len%b.Rows != 0:
				p += in // a part of a blob, or a vector: plain
			default:
				n, m := b.Rows, b.Len/b.Rows
				if c.Rank*(n+m) < n*m {
					p += c.Rank * n
					q += c.Rank * m
				} else {
					p += b.Len
				}
			}
		}
	}
	return p, q, q > 0
}

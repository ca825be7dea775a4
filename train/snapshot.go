package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"dsgd/checkpoint"
	"dsgd/model"
)

// interrupted writes the snapshot of iteration iter after a run ended
// early with cause, and returns cause saying where it is. The model is
// fetched from the center (within 10 s, ctx's cancellation aside) when
// the scheme has one; if it cannot be, rank 0's replica is kept instead.
func (t *Trainer) interrupted(ctx context.Context, res *Result, iter int, cause error, withModel func(context.Context, func() error) error) error {
	if t.cfg.SnapshotPrefix == "" || iter == t.start || t.rank(t.updater) == nil {
		return cause
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var p string
	note := ""
	err := withModel(fctx, func() (err error) {
		p, err = t.snapshot(iter)
		return err
	})
	if err != nil && !errors.Is(err, ErrDiverged) && p == "" {
		if p, err = t.snapshot(iter); err == nil {
			note = "; rank 0's replica: the center could not be reached"
		}
	}
	if err != nil {
		return errors.Join(cause, err)
	}
	res.Snapshots = append(res.Snapshots, p)
	return fmt.Errorf("%w (snapshot of iteration %d written to %s%s; continue with --resume %s)", cause, iter, p, note, p)
}

// SnapshotPath is where the snapshot of iteration iter goes.
func SnapshotPath(prefix string, iter int) string {
	return fmt.Sprintf("%s_iter_%d.dsgdsnap", prefix, iter)
}

func (t *Trainer) snapshot(iter int) (string, error) {
	if f := t.cfg.SnapshotFormat; f == FormatCaffe || f == FormatHDF5 {
		return t.snapshotCaffe(iter, f == FormatHDF5)
	}
	u := t.rank(t.updater)
	var sb bytes.Buffer
	if err := u.solver.WriteState(&sb); err != nil {
		return "", fmt.Errorf("train: snapshot: solver state: %w", err)
	}
	if msg := insane(u.net); msg != "" {
		return "", fmt.Errorf("train: %w: no snapshot of iteration %d: %s (the last good snapshot, if any, is kept; lower base_lr or check lr_policy)", ErrDiverged, iter, msg)
	}
	path := SnapshotPath(t.cfg.SnapshotPrefix, iter)
	err := checkpoint.Write(path, checkpoint.State{Iter: iter, Layout: t.layout, Params: u.net.Params(), Solver: sb.Bytes(), Run: t.cfg.Run})
	if err != nil {
		return "", fmt.Errorf("train: %w", err)
	}
	return path, nil
}

// insane names the first weight of net that is non-finite or larger in
// magnitude than MaxSnapshotWeight, or returns "".
func insane(net *model.Net) string {
	p := net.Params()
	for _, b := range net.Blocks() {
		for i, v := range p[b.Off : b.Off+b.Len()] {
			if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > MaxSnapshotWeight {
				return fmt.Sprintf("layer %q: weight %s[%d] is %g (beyond %g)", b.Layer, b.Name, i, v, MaxSnapshotWeight)
			}
		}
	}
	return ""
}

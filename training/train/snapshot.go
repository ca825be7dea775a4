package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"syscall"
	"time"

	"dsgd/engine/model"
	"dsgd/training/checkpoint"
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

// snapshotGlobs are the files a run's snapshots under prefix may be, in
// every format: their killed writes' temporary files are what a new run
// on the prefix removes.
func snapshotGlobs(prefix string) []string {
	var out []string
	for _, ext := range []string{".dsgdsnap", ".caffemodel", ".solverstate", ".caffemodel.h5", ".solverstate.h5"} {
		out = append(out, prefix+"_iter_*"+ext)
	}
	return out
}

// lockPrefix takes the snapshot prefix's lock file, PREFIX.lock, for the
// life of the run (released by the returned function): one run writes
// under a prefix at a time, so the temporary files a new run removes are
// never a live run's. A prefix held by another live process is refused,
// naming the holder; a lock file whose process died is taken over.
func lockPrefix(prefix string) (func(), error) {
	path := prefix + ".lock"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("train: snapshot prefix %s: cannot open its lock file: %w", prefix, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "another process"
		}
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("train: snapshot prefix %s is in use by a live run (%s, holding %s): two runs on one prefix would overwrite each other's snapshots; give this one another Config.SnapshotPrefix (or none)", prefix, who, path)
		}
		return nil, fmt.Errorf("train: snapshot prefix %s: cannot lock %s: %w", prefix, path, err)
	}
	host, _ := os.Hostname()
	f.Truncate(0)
	fmt.Fprintf(f, "pid %d on %s, since %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// SnapshotPath is where the snapshot of iteration iter goes.
func SnapshotPath(prefix string, iter int) string {
	return fmt.Sprintf("%s_iter_%d.dsgdsnap", prefix, iter)
}

func (t *Trainer) snapshot(iter int) (string, error) {
	u := t.rank(t.updater)
	// Every format refuses weights that have blown up: a snapshot that a
	// later run would trust must not hold them.
	if msg := insane(u.net); msg != "" {
		return "", fmt.Errorf("train: %w: no snapshot of iteration %d: %s (the last good snapshot, if any, is kept; lower base_lr or check lr_policy)", ErrDiverged, iter, msg)
	}
	if f := t.cfg.SnapshotFormat; f == FormatCaffe || f == FormatHDF5 {
		p, err := t.snapshotCaffe(iter, f == FormatHDF5)
		if err == nil && t.clog != nil {
			if f == FormatHDF5 {
				t.clog.Infof("sgd_solver.cpp", 296, "Snapshotting solver state to HDF5 file %s", p)
			} else {
				t.clog.Infof("sgd_solver.cpp", 285, "Snapshotting solver state to binary proto file %s", p)
			}
		}
		return p, err
	}
	var sb bytes.Buffer
	if err := u.solver.WriteState(&sb); err != nil {
		return "", fmt.Errorf("train: snapshot: solver state: %w", err)
	}
	path := SnapshotPath(t.cfg.SnapshotPrefix, iter)
	err := checkpoint.Write(path, checkpoint.State{Iter: iter, Layout: t.layout, Params: u.net.Params(), Solver: sb.Bytes(), Run: t.cfg.Run})
	if err != nil {
		return "", fmt.Errorf("train: %w", err)
	}
	if t.clog != nil {
		t.clog.Infof("solver.cpp", 464, "Snapshotting to dsgd snapshot file %s", path)
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

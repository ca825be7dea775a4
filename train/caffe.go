package train

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"dsgd/caffemodel"
)

// Snapshot formats (Config.SnapshotFormat).
const (
	// FormatDsgd writes PREFIX_iter_N.dsgdsnap (the default).
	FormatDsgd = "dsgd"
	// FormatCaffe writes PREFIX_iter_N.caffemodel and
	// PREFIX_iter_N.solverstate, which Caffe reads (snapshot_format:
	// BINARYPROTO).
	FormatCaffe = "caffe"
)

// loadWeights copies each .caffemodel into every local rank's parameters
// in turn, by layer name, as `caffe train --weights a,b` does, and says
// what it copied.
func (t *Trainer) loadWeights(files []string) error {
	for _, r := range t.ranks {
		for _, f := range files {
			n, err := caffemodel.Read(f)
			if err != nil {
				return fmt.Errorf("train: --weights: %w", err)
			}
			rep, err := caffemodel.CopyTrained(n, f, r.net.Blocks(), r.net.Params())
			if err != nil {
				return fmt.Errorf("train: --weights: %w", err)
			}
			if r == t.ranks[0] {
				fmt.Fprintf(t.out, "weights %s: copied %s", f, strings.Join(rep.Copied, ", "))
				if len(rep.Ignored) > 0 {
					fmt.Fprintf(t.out, "; ignored %s (not in this net)", strings.Join(rep.Ignored, ", "))
				}
				if len(rep.Kept) > 0 {
					fmt.Fprintf(t.out, "; %s keep their fillers (not in the file)", strings.Join(rep.Kept, ", "))
				}
				fmt.Fprintln(t.out)
			}
		}
	}
	return nil
}

// caffeLayers lists the TRAIN net's compute layers for a .caffemodel.
func (t *Trainer) caffeLayers() []caffemodel.LayerInfo {
	var out []caffemodel.LayerInfo
	for _, l := range t.cfg.Train.Layers {
		out = append(out, caffemodel.LayerInfo{Name: l.Name, Type: l.Config.Type(), Bottom: l.Bottom, Top: l.Top})
	}
	return out
}

// CaffeSnapshotPaths are the files of a Caffe-format snapshot.
func CaffeSnapshotPaths(prefix string, iter int) (model, state string) {
	base := fmt.Sprintf("%s_iter_%d", prefix, iter)
	return base + ".caffemodel", base + ".solverstate"
}

// snapshotCaffe writes the updating rank's weights as a .caffemodel and
// its solver history as a .solverstate naming it; it returns the
// .solverstate's path, which --resume takes.
func (t *Trainer) snapshotCaffe(iter int) (string, error) {
	u := t.rank(t.updater)
	mpath, spath := CaffeSnapshotPaths(t.cfg.SnapshotPrefix, iter)
	n := caffemodel.FromNet(t.cfg.Train.Name, t.caffeLayers(), u.net.Blocks(), u.net.Params())
	if err := caffemodel.Write(mpath, n); err != nil {
		return "", fmt.Errorf("train: snapshot: %w", err)
	}
	st := &caffemodel.State{
		Iter:        iter,
		LearnedNet:  mpath,
		History:     caffemodel.HistoryBlobs(u.solver.History(), u.net.Blocks()),
		CurrentStep: t.currentStep(iter),
	}
	if err := caffemodel.WriteState(spath, st); err != nil {
		return "", fmt.Errorf("train: snapshot: %w", err)
	}
	return spath, nil
}

// currentStep is Caffe's SolverState.current_step: the multistep
// policy's count of step values passed.
func (t *Trainer) currentStep(iter int) int {
	if t.cfg.Solver.LRPolicy != "multistep" {
		return 0
	}
	n := 0
	for _, v := range t.cfg.Solver.StepValues {
		if iter >= v {
			n++
		}
	}
	return n
}

// resumeCaffe continues from a Caffe .solverstate and the .caffemodel it
// names (as written, else beside the state file), as `caffe train
// --snapshot` does. Every layer of the net must be in the model.
func (t *Trainer) resumeCaffe(path string) error {
	st, err := caffemodel.ReadState(path)
	if err != nil {
		return fmt.Errorf("train: %s: %w", t.resumeFlag(), err)
	}
	mpath := st.LearnedNet
	if _, err := os.Stat(mpath); errors.Is(err, fs.ErrNotExist) && !filepath.IsAbs(mpath) {
		mpath = filepath.Join(filepath.Dir(path), filepath.Base(mpath))
	}
	n, err := caffemodel.Read(mpath)
	if err != nil {
		return fmt.Errorf("train: %s %s: learned_net: %w", t.resumeFlag(), path, err)
	}
	for _, r := range t.ranks {
		rep, err := caffemodel.CopyTrained(n, mpath, r.net.Blocks(), r.net.Params())
		if err != nil {
			return fmt.Errorf("train: %s %s: %w", t.resumeFlag(), path, err)
		}
		if len(rep.Kept) > 0 {
			return fmt.Errorf("train: %s %s: %s lacks layers %s of this net: a snapshot of another net?", t.resumeFlag(), path, mpath, strings.Join(rep.Kept, ", "))
		}
		if err := caffemodel.SetHistory(path, st.History, r.solver.History(), r.net.Blocks()); err != nil {
			return fmt.Errorf("train: %s: %w", t.resumeFlag(), err)
		}
	}
	t.start = st.Iter
	return nil
}

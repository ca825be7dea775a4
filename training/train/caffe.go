package train

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"dsgd/caffe/caffemodel"
)

// Snapshot formats (Config.SnapshotFormat).
const (
	// FormatDsgd writes PREFIX_iter_N.dsgdsnap (the default).
	FormatDsgd = "dsgd"
	// FormatCaffe writes PREFIX_iter_N.caffemodel and
	// PREFIX_iter_N.solverstate, which Caffe reads (snapshot_format:
	// BINARYPROTO).
	FormatCaffe = "caffe"
	// FormatHDF5 writes PREFIX_iter_N.caffemodel.h5 and
	// PREFIX_iter_N.solverstate.h5, Caffe's HDF5 snapshot format
	// (snapshot_format: HDF5), which Caffe reads.
	FormatHDF5 = "hdf5"
)

// loadWeights copies each .caffemodel into the parameters of ranks in
// turn (rank 0's first), by layer name, as `caffe train --weights a,b`
// does, and says what it copied.
func (o *origin) loadWeights(ranks []*rankState, files []string) error {
	for _, r := range ranks {
		for _, f := range files {
			n, err := caffemodel.ReadModel(f)
			if err != nil {
				return fmt.Errorf("train: Config.Weights: %w", err)
			}
			layers, err := o.caffeLayers(r)
			if err != nil {
				return fmt.Errorf("train: Config.Weights %s: %w", f, err)
			}
			rep, err := caffemodel.CopyTrainedNet(n, f, layers, r.net.Params())
			if err != nil {
				return fmt.Errorf("train: Config.Weights: %w", err)
			}
			if r == ranks[0] {
				fmt.Fprintf(o.out, "weights %s: copied %s", f, strings.Join(rep.Copied, ", "))
				if len(rep.Ignored) > 0 {
					fmt.Fprintf(o.out, "; ignored %s (not in this net)", strings.Join(rep.Ignored, ", "))
				}
				if len(rep.Kept) > 0 {
					fmt.Fprintf(o.out, "; %s keep their fillers (not in the file)", strings.Join(rep.Kept, ", "))
				}
				fmt.Fprintln(o.out)
			}
		}
	}
	return nil
}

// caffeLayers is rank r's TRAIN net as Caffe's Net holds it: every
// layer with its param blobs, shared ones included.
func (o *origin) caffeLayers(r *rankState) ([]caffemodel.NetLayer, error) {
	return caffemodel.Resolve(caffemodel.SpecLayers(o.cfg.Train), r.net.Blocks())
}

// CaffeSnapshotPaths are the files of a Caffe-format snapshot; with hdf5,
// of Caffe's HDF5 snapshot format.
func CaffeSnapshotPaths(prefix string, iter int, hdf5 bool) (model, state string) {
	base := fmt.Sprintf("%s_iter_%d", prefix, iter)
	if hdf5 {
		return base + ".caffemodel.h5", base + ".solverstate.h5"
	}
	return base + ".caffemodel", base + ".solverstate"
}

// snapshotCaffe writes the updating rank's weights as a .caffemodel and
// its solver history as a .solverstate naming it (with hdf5, as
// .caffemodel.h5 and .solverstate.h5); it returns the state's path, which
// --resume takes.
func (t *Trainer) snapshotCaffe(iter int, hdf5 bool) (string, error) {
	u := t.rank(t.updater)
	mpath, spath := CaffeSnapshotPaths(t.cfg.SnapshotPrefix, iter, hdf5)
	layers, err := t.caffeLayers(u)
	if err != nil {
		return "", fmt.Errorf("train: snapshot: %w", err)
	}
	n := caffemodel.FromNet(t.cfg.Train.Name, "TRAIN", layers, u.net.Params())
	writeModel, writeState := caffemodel.Write, caffemodel.WriteState
	if hdf5 {
		writeModel, writeState = caffemodel.WriteHDF5, caffemodel.WriteStateHDF5
	}
	if err := writeModel(mpath, n); err != nil {
		return "", fmt.Errorf("train: snapshot: %w", err)
	}
	st := &caffemodel.State{
		Iter:        iter,
		LearnedNet:  mpath,
		History:     caffemodel.HistoryBlobs(u.solver.History(), u.net.Blocks()),
		CurrentStep: t.currentStep(iter),
	}
	if err := writeState(spath, st); err != nil {
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

// resumeCaffe continues from a Caffe .solverstate (or .solverstate.h5)
// and the model it names (as written, else beside the state file), as
// `caffe train --snapshot` does. Every param blob of the net must be in
// the model.
func (o *origin) resumeCaffe(ranks []*rankState, path string) error {
	st, err := caffemodel.ReadAnyState(path)
	if err != nil {
		return fmt.Errorf("train: Config.Resume: %w", err)
	}
	mpath := st.LearnedNet
	if _, err := os.Stat(mpath); errors.Is(err, fs.ErrNotExist) && !filepath.IsAbs(mpath) {
		mpath = filepath.Join(filepath.Dir(path), filepath.Base(mpath))
	}
	n, err := caffemodel.ReadModel(mpath)
	if err != nil {
		return fmt.Errorf("train: Config.Resume %s: learned_net: %w", path, err)
	}
	for _, r := range ranks {
		layers, err := o.caffeLayers(r)
		if err != nil {
			return fmt.Errorf("train: Config.Resume %s: %w", path, err)
		}
		rep, err := caffemodel.CopyTrainedNet(n, mpath, layers, r.net.Params())
		if err != nil {
			return fmt.Errorf("train: Config.Resume %s: %w", path, err)
		}
		if len(rep.Kept) > 0 {
			return fmt.Errorf("train: Config.Resume %s: %s lacks layers %s of this net: a snapshot of another net?", path, mpath, strings.Join(rep.Kept, ", "))
		}
		if err := caffemodel.SetHistory(path, st.History, r.solver.History(), r.net.Blocks()); err != nil {
			return fmt.Errorf("train: Config.Resume: %w", err)
		}
	}
	o.start = st.Iter
	return nil
}

package caffemodel

import (
	"fmt"
	"os"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
	"dsgd/engine/model"
)

// State is a Caffe SolverState: what a .solverstate holds.
type State struct {
	// Iter is the iteration the snapshot was taken at.
	Iter int
	// LearnedNet is the .caffemodel holding the weights, as written.
	LearnedNet string
	// History holds the solver's history blobs in Caffe's order: one per
	// learnable blob (SGD, Nesterov, AdaGrad, RMSProp), or all the first
	// moments then all the second (Adam).
	History []Blob
	// CurrentStep is the multistep policy's current step.
	CurrentStep int
}

// EncodeState encodes st as a binary SolverState.
func EncodeState(st *State) ([]byte, error) {
	sp := &caffepb.SolverState{
		Iter:        proto.Int32(int32(st.Iter)),
		LearnedNet:  proto.String(st.LearnedNet),
		CurrentStep: proto.Int32(int32(st.CurrentStep)),
	}
	for _, b := range st.History {
		sp.History = append(sp.History, blobToProto(b))
	}
	return proto.Marshal(sp)
}

// DecodeState decodes a binary SolverState; name prefixes errors.
func DecodeState(name string, b []byte) (*State, error) {
	var sp caffepb.SolverState
	if err := proto.Unmarshal(b, &sp); err != nil {
		return nil, fmt.Errorf("%s is not a Caffe solver state: %v", name, err)
	}
	if sp.GetIter() < 0 {
		return nil, fmt.Errorf("%s: negative iteration %d", name, sp.GetIter())
	}
	st := &State{Iter: int(sp.GetIter()), LearnedNet: sp.GetLearnedNet(), CurrentStep: int(sp.GetCurrentStep())}
	for i, bp := range sp.History {
		bl, err := blobFromProto(bp)
		if err != nil {
			return nil, fmt.Errorf("%s: history blob %d: %v", name, i, err)
		}
		st.History = append(st.History, bl)
	}
	return st, nil
}

// WriteState writes st to path as a .solverstate, atomically.
func WriteState(path string, st *State) error {
	b, err := EncodeState(st)
	if err != nil {
		return fmt.Errorf("caffemodel: encoding %s: %w", path, err)
	}
	return writeAtomic(path, b)
}

// ReadState reads the .solverstate at path.
func ReadState(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("solverstate: %w", err)
	}
	return DecodeState(path, b)
}

// HistoryBlobs splits solver history buffers (each laid out as blocks)
// into Caffe's history blobs: every block of buffer 0, then of buffer 1.
func HistoryBlobs(hist [][]float32, blocks []model.Block) []Blob {
	var out []Blob
	for _, h := range hist {
		for _, b := range blocks {
			out = append(out, Blob{Shape: []int(b.Shape), Data: h[b.Off : b.Off+b.Len()]})
		}
	}
	return out
}

// SetHistory copies Caffe history blobs into solver history buffers laid
// out as blocks; the count and every shape must match. file names the
// state in errors.
func SetHistory(file string, blobs []Blob, hist [][]float32, blocks []model.Block) error {
	if len(blobs) != len(hist)*len(blocks) {
		return fmt.Errorf("%s holds %d history blobs; this solver keeps %d (%d per parameter blob for %d blobs): a state of another net or solver type?", file, len(blobs), len(hist)*len(blocks), len(hist), len(blocks))
	}
	for i, bl := range blobs {
		h, b := hist[i/len(blocks)], blocks[i%len(blocks)]
		if !shapeEquals(bl, b.Shape) {
			return fmt.Errorf("%s: history blob %d (for %s) has shape %s, the net's blob is %s", file, i, b.Name, shapeString(bl.Shape), shapeString(b.Shape))
		}
		copy(h[b.Off:b.Off+b.Len()], bl.Data)
	}
	return nil
}

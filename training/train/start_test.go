package train

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"dsgd/protocol/center"
)

// TestStartIsTrainersStart: a Start built from a Config holds what a
// Trainer built from it starts from (weights, iteration, join fields),
// from the fillers and from a snapshot, and its center serves those
// weights: what dsgd ps builds without a Trainer.
func TestStartIsTrainersStart(t *testing.T) {
	first := asyncConfig("async", 2, 4)
	first.SnapshotPrefix = filepath.Join(t.TempDir(), "snap")
	tr, err := New(first)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background(), Deps{}); err != nil {
		t.Fatal(err)
	}
	resumed := asyncConfig("async", 2, 8)
	resumed.Resume = SnapshotPath(first.SnapshotPrefix, 4)
	for _, tc := range []struct {
		name      string
		cfg       Config
		startIter int
	}{{"fillers", asyncConfig("async", 2, 8), 0}, {"resume", resumed, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			st, err := NewStart(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if st.StartIter() != tc.startIter || tr.StartIter() != tc.startIter {
				t.Fatalf("start iteration: Start %d, Trainer %d; want %d", st.StartIter(), tr.StartIter(), tc.startIter)
			}
			if !slices.Equal(st.Net().Params(), tr.Net().Params()) {
				t.Fatal("the Start's weights are not the Trainer's")
			}
			if st.JoinFields() != tr.JoinFields() || st.CenterWorkers() != tr.CenterWorkers() {
				t.Fatalf("join fields %q, %d workers; the Trainer's %q, %d", st.JoinFields(), st.CenterWorkers(), tr.JoinFields(), tr.CenterWorkers())
			}
			local, err := st.NewCenter()
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, len(st.Net().Params()))
			if err := local.Pull(context.Background(), center.Observer, got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tr.Net().Params()) {
				t.Fatal("the center does not serve the Trainer's initial weights")
			}
		})
	}
}

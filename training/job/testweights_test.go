package job

import (
	"testing"

	"dsgd/caffe/caffedef"
)

// TestTestWeightsNeedsTestPhase: a job without a TEST phase is refused
// before any data is opened.
func TestTestWeightsNeedsTestPhase(t *testing.T) {
	_, _, err := (&Job{Test: &caffedef.PhaseNet{}}).TestWeights(t.Context(), WeightsTest{Weights: "w.caffemodel"})
	if err == nil || err.Error() != "the net has no TEST phase to test with" {
		t.Fatalf("got %v", err)
	}
}

package metrics

import (
	"testing"
	"time"
)

// TestPeakStep: the first iteration's bytes (the broadcast) are not a
// step's; the peak is the most sent between two iterations' ends.
func TestPeakStep(t *testing.T) {
	var sent int64
	calls := 0
	s := NewPeakStep(func() int64 { return sent })
	hook := s.Wrap(func(int, float64, time.Duration) { calls++ })
	for i, b := range []int64{1000, 10, 50, 20} {
		sent += b
		hook(i, 0, 0)
	}
	if most, at := s.Peak(); most != 50 || at != 2 || calls != 4 {
		t.Errorf("Peak() = %d, %d after %d calls; want 50 bytes in iteration 2 after 4", most, at, calls)
	}
}

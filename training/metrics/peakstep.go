package metrics

import "time"

// PeakStep measures the most bytes a rank sent between the ends of two
// consecutive iterations: the peak bytes per step of an outer scheme,
// measured. It starts at the end of the first iteration, so the initial
// weight broadcast is not counted, and the synchronisations a run takes
// after its last iteration are not either.
type PeakStep struct {
	sent       func() int64
	last, most int64
	at         int
	seen       bool
}

// NewPeakStep returns a PeakStep that reads the bytes the rank has sent
// so far from sent (its endpoint's count).
func NewPeakStep(sent func() int64) *PeakStep { return &PeakStep{sent: sent} }

// Wrap returns an OnIter hook that measures, then calls next (if any).
func (s *PeakStep) Wrap(next func(int, float64, time.Duration)) func(int, float64, time.Duration) {
	return func(iter int, loss float64, d time.Duration) {
		b := s.sent()
		if s.seen && b-s.last > s.most {
			s.most, s.at = b-s.last, iter
		}
		s.last, s.seen = b, true
		if next != nil {
			next(iter, loss, d)
		}
	}
}

// Peak is the most bytes sent in one iteration after the first, and the
// iteration that sent them.
func (s *PeakStep) Peak() (bytes int64, iter int) { return s.most, s.at }

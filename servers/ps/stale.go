package ps

import (
	"fmt"
	"slices"
	"sync"
)

// Staleness describes how old the weights were that the pushed updates
// were computed from: a push's staleness is the number of updates the
// center applied between the worker's last read of it (a pull, or in blob
// store mode the version check before the read) and that push. Under
// async it is about the worker count less one; far more means workers
// compute on weights many updates old, which is what makes asynchronous
// SGD diverge.
type Staleness struct {
	// Pushes is the number of pushes measured; Sum their staleness.
	Pushes, Sum int64
	// Max is the largest staleness seen.
	Max int64
	// Hist counts pushes by staleness: Hist[k] those of staleness k, the
	// last bucket those of len(Hist)-1 or more.
	Hist [17]int64
}

// Mean is the mean staleness of the pushes, 0 without any.
func (s Staleness) Mean() float64 {
	if s.Pushes == 0 {
		return 0
	}
	return float64(s.Sum) / float64(s.Pushes)
}

// String is "staleness mean M, max X over N pushes".
func (s Staleness) String() string {
	return fmt.Sprintf("staleness mean %.2f, max %d over %d pushes", s.Mean(), s.Max, s.Pushes)
}

// staleTracker measures Staleness at a server.
type staleTracker struct {
	mu      sync.Mutex
	updates int64         // updates applied
	read    map[int]int64 // updates applied when each worker last read
	st      Staleness
}

// readBy records that worker w read the center (w < 0: an observer,
// which trains nothing).
func (t *staleTracker) readBy(w int) {
	if w < 0 {
		return
	}
	t.mu.Lock()
	if t.read == nil {
		t.read = map[int]int64{}
	}
	t.read[w] = t.updates
	t.mu.Unlock()
}

// pushedBy records worker w's push, applied to the center.
func (t *staleTracker) pushedBy(w int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if last, ok := t.read[w]; ok {
		k := t.updates - last
		t.st.Pushes++
		t.st.Sum += k
		t.st.Max = max(t.st.Max, k)
		t.st.Hist[min(k, int64(len(t.st.Hist)-1))]++
	}
	t.updates++
}

// updated records an update that is not a push (an elastic exchange, a
// round): it ages what the workers read.
func (t *staleTracker) updated() {
	t.mu.Lock()
	t.updates++
	t.mu.Unlock()
}

// Staleness returns what the server measured of its pushes' staleness.
func (s *Server) Staleness() Staleness {
	s.stale.mu.Lock()
	defer s.stale.mu.Unlock()
	return s.stale.st
}

// Connected returns the number of workers joined over a connection that
// is open and has not gone silent.
func (s *Server) Connected() int {
	s.ownMu.Lock()
	defer s.ownMu.Unlock()
	n := 0
	for _, w := range s.owners.Ranks() {
		if l := s.life[s.owners.Holder(w)]; l != nil && slices.Contains(l.silent, w) {
			continue
		}
		n++
	}
	return n
}

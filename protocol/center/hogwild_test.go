//go:build !race

// The test reads the center's weights while an exchange writes them with
// no lock, as Hogwild EASGD intends: not for the race detector.

package center

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestHogwildExchangeTakesNoLock: under the Hogwild policy the elastic
// exchange moves the center while another exchange holds the center's
// lock (SC17 5: no lock), where FCFS waits for it.
func TestHogwildExchangeTakesNoLock(t *testing.T) {
	for _, tc := range []struct {
		p     Policy
		moves bool
	}{{Hogwild, true}, {FCFS, false}} {
		l, err := NewLocal(Config{Workers: 2, Weights: []float32{0, 0}, Policy: tc.p})
		if err != nil {
			t.Fatal(err)
		}
		l.mu.Lock() // as a concurrent exchange holding the center would
		var done atomic.Bool
		go func() {
			l.Elastic(context.Background(), 1, []float32{1, 1}, 0.5)
			done.Store(true)
		}()
		deadline := time.Now().Add(200 * time.Millisecond)
		moved := false
		for time.Now().Before(deadline) && !moved {
			moved = l.w[1] == 0.5
			time.Sleep(time.Millisecond)
		}
		l.mu.Unlock()
		if moved != tc.moves {
			t.Errorf("%v: the center moved while another held its lock: %v, want %v", tc.p, moved, tc.moves)
		}
		for !done.Load() {
			time.Sleep(time.Millisecond)
		}
		if l.w[0] != 0.5 || l.w[1] != 0.5 {
			t.Errorf("%v: center %v after the exchange, want [0.5 0.5]", tc.p, l.w)
		}
	}
}

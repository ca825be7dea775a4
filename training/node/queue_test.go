package node

import (
	"context"
	"testing"
	"time"

	"dsgd/protocol/scheme"
)

// burst issues n broadcasts in one Step, waits for all their answers and
// finishes: a Step with more communication than any channel holds.
type burst struct {
	n, done int
}

func (b *burst) Step(ev scheme.Event) []scheme.Action {
	switch ev.Kind {
	case scheme.Start:
		acts := make([]scheme.Action, b.n)
		for i := range acts {
			acts[i] = scheme.Action{Op: scheme.Broadcast, ID: i + 1, R: scheme.Range{Buf: scheme.Params, Lo: 0, Hi: 1}}
		}
		return acts
	case scheme.Done:
		b.done++
		if b.done == b.n {
			return []scheme.Action{{Op: scheme.Finish}}
		}
	}
	return nil
}

// A Step may issue any number of communication actions: the rank queues
// them instead of blocking on a full channel while its communication
// goroutine blocks on the rank's full event channel (sync-ps with 41
// workers and --pack=false issued more than 320 and deadlocked).
func TestManyCommActionsInOneStep(t *testing.T) {
	for _, n := range []int{1, 64, 321, 2000} {
		b := &burst{n: n}
		r := &Rank{Scheme: b, Params: make([]float32, 1), Grads: make([]float32, 1)}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%d actions: %v", n, err)
			}
			if b.done != n {
				t.Fatalf("%d actions: %d answered", n, b.done)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("%d actions in one step: the rank hung (and ignored its context)", n)
		}
		cancel()
	}
}

package train

import (
	"errors"
	"fmt"
	"sync"

	"dsgd/protocol/scheme"
	"dsgd/training/metrics"
	"dsgd/training/node"
)

// isolation decides which in-process worker failures stay with their
// worker (node.RunAllIsolated) and reports each as it happens.
type isolation struct {
	mu     sync.Mutex
	failed []error
}

// isolator returns the isolate function for the ranks of this process
// under sc, or nil when every failure must end the run: only the workers
// of an asynchronous scheme that meet nowhere but at the center are
// independent, and only when the failing one is not the rank that
// displays, tests and snapshots (rank 0) and its failure is its own (not
// the time budget).
func (iso *isolation) isolator(sc scheme.Config, nodes []*node.Rank, ranks []int, prog *metrics.Progress) func(int, error) bool {
	if !sc.CenterOnly() || len(nodes) < 2 {
		return nil
	}
	return func(i int, err error) bool {
		if ranks[i] == 0 || errors.Is(err, errBudget) {
			return false
		}
		err = fmt.Errorf("worker %d: %w", ranks[i], err)
		iso.mu.Lock()
		iso.failed = append(iso.failed, err)
		iso.mu.Unlock()
		prog.Printf("%v\n  (it left the center; the other workers train on)\n", err)
		return true
	}
}

// errs returns the isolated failures, each naming its worker.
func (iso *isolation) errs() []error {
	iso.mu.Lock()
	defer iso.mu.Unlock()
	return append([]error(nil), iso.failed...)
}

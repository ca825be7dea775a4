package main

import (
	"fmt"
)

// validate checks the model flags' values before any work is done.
func (m *modelFlags) validate() error {
	switch {
	case m.threads < 1:
		return fmt.Errorf("--threads must be at least 1, got %d", m.threads)
	case m.batch < 0:
		return fmt.Errorf("--batch must not be negative, got %d", m.batch)
	case m.batch > maxBatch:
		return fmt.Errorf("--batch %d is beyond %d images a batch", m.batch, maxBatch)
	}
	return nil
}

// maxBatch bounds --batch: beyond it a batch's input alone would not fit
// in any machine's memory for the smallest images.
const maxBatch = 1 << 24

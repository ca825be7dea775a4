package mpi

import (
	"context"
	"strings"
	"sync"
	"testing"

	"dsgd/comm/transport"
)

// TestAgreeLayout: ranks of one layout agree; a rank of another refuses,
// naming both hashes.
func TestAgreeLayout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hashes []uint64
		want   string // rank 2's error; "" for none
	}{
		{"same", []uint64{7, 7, 7}, ""},
		{"differs", []uint64{7, 7, 9}, "rank 2 of 3 (MPI): this rank's model (parameter layout hash 0000000000000009) differs from rank 0's (0000000000000007)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := transport.NewInproc(len(tc.hashes))
			errs := make([]error, len(eps))
			var wg sync.WaitGroup
			for r, ep := range eps {
				wg.Go(func() { errs[r] = AgreeLayout(context.Background(), ep, tc.hashes[r]) })
			}
			wg.Wait()
			for r, err := range errs[:2] {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
			if got := errs[2]; (tc.want == "") != (got == nil) || (got != nil && !strings.HasPrefix(got.Error(), tc.want)) {
				t.Errorf("rank 2: got %v, want %q", got, tc.want)
			}
		})
	}
}

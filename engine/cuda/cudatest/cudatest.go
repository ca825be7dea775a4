// Package cudatest opens a GPU for a test, or skips the test saying why
// there is none; with DSGD_REQUIRE_GPU set (the GPU machine's run,
// scripts/gpu-check.sh) a missing GPU fails the test instead.
package cudatest

import (
	"os"
	"testing"

	"dsgd/engine/cuda"
)

// Open opens GPU 0 in fp32 for t and closes it when t ends.
func Open(t testing.TB) *cuda.GPU {
	t.Helper()
	if _, err := cuda.Probe(); err != nil {
		if os.Getenv("DSGD_REQUIRE_GPU") != "" {
			t.Fatalf("DSGD_REQUIRE_GPU is set but: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	g, err := cuda.Open(0, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	})
	return g
}
